"""A PyTorch training step captured whole into a CUDA graph (torch.cuda.graph) and replayed:
the graph-based hot loop of torch.cuda.graphs users. Prints each replay's loss exactly
(float.hex), so that runs with and without kreplay can be compared bit for bit."""
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
device = "cuda"
model = torch.nn.Sequential(
    torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1)
).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
data = [(torch.randn(256, 64, device=device), torch.randn(256, 1, device=device)) for _ in range(4)]
static_x, static_y = torch.zeros_like(data[0][0]), torch.zeros_like(data[0][1])


def step():
    loss = torch.nn.functional.mse_loss(model(static_x), static_y)
    loss.backward()
    optimizer.step()
    return loss


# Warm-up on a side stream (as torch.cuda.graphs asks), then the capture.
side = torch.cuda.Stream()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    static_x.copy_(data[0][0])
    static_y.copy_(data[0][1])
    for _ in range(2):
        optimizer.zero_grad(set_to_none=True)
        step()
torch.cuda.current_stream().wait_stream(side)
optimizer.zero_grad(set_to_none=True)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    static_loss = step()
for i, (x, y) in enumerate(data):
    static_x.copy_(x)
    static_y.copy_(y)
    graph.replay()
    print(f"replay {i} loss {static_loss.item().hex()}")

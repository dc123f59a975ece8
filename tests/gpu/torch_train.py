"""A small deterministic PyTorch training loop. Prints each step's loss exactly (float.hex), so
that runs with and without kreplay can be compared bit for bit. `torch_train.py [STEPS]`: 3 steps
unless told (the Ctrl-C check runs it long and interrupts it)."""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
device = "cuda"
model = torch.nn.Sequential(
    torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1)
).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x = torch.randn(256, 64, device=device)
y = torch.randn(256, 1, device=device)
for step in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item().hex()}", flush=True)

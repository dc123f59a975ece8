"""A small PyTorch training loop marked with NVTX (torch.cuda.nvtx): a push/pop range per step
holding `forward` and `backward`, a mark after the loop, a start/end range around the loop. Prints
each step's loss exactly (float.hex). `--profile-step N` calls torch.cuda.profiler.start() (i.e.
cudaProfilerStart) before step N and stop() after it, for --selected-regions. `--emit-nvtx` runs the
loop under torch.autograd.profiler.emit_nvtx() (a range per operator, "aten::...") with a range per
layer ("layer 0" ... around each module's forward, pushed by forward hooks)."""
import contextlib
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
emit = "--emit-nvtx" in sys.argv
if emit:
    def enter(name):
        def hook(_module, _inputs):
            torch.cuda.nvtx.range_push(f"layer {name}")  # returns None: the inputs stay as they are
        return hook

    def leave(_module, _inputs, _output):
        torch.cuda.nvtx.range_pop()  # returns None: the output stays as it is

    for name, layer in model.named_children():
        layer.register_forward_pre_hook(enter(name))
        layer.register_forward_hook(leave)
profile_step = int(sys.argv[sys.argv.index("--profile-step") + 1]) if "--profile-step" in sys.argv else None
loop = torch.cuda.nvtx.range_start("loop")
scope = torch.autograd.profiler.emit_nvtx() if emit else contextlib.nullcontext()
scope.__enter__()
for step in range(3):
    if step == profile_step:
        torch.cuda.profiler.start()
    torch.cuda.nvtx.range_push(f"step {step}")
    optimizer.zero_grad(set_to_none=True)
    torch.cuda.nvtx.range_push("forward")
    loss = torch.nn.functional.mse_loss(model(x), y)
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("backward")
    loss.backward()
    optimizer.step()
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()
    if step == profile_step:
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    print(f"step {step} loss {loss.item().hex()}")
scope.__exit__(None, None, None)
torch.cuda.nvtx.mark("loop done")
torch.cuda.nvtx.range_end(loop)

"""Bench workload: a small PyTorch MLP training loop. Prints the loss of every step, bit for bit.
Usage: python3 mlp.py [steps=5]"""
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.use_deterministic_algorithms(True)
dev = "cuda"
# From the first CUDA call (CUDA and any profiler start here) to the end of the loop: the
# process's wall time also holds Python's and PyTorch's start-up, which varies by seconds.
t_cuda = time.perf_counter()
model = torch.nn.Sequential(
    torch.nn.Linear(512, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 10),
).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(256, 512, device=dev)
y = torch.randint(0, 10, (256,), device=dev)
torch.cuda.synchronize()
t0 = time.perf_counter()
losses = []
for _ in range(steps):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
torch.cuda.synchronize()
ms = (time.perf_counter() - t0) * 1e3
app_s = time.perf_counter() - t_cuda
print("mlp: steps=%d dispatch_ms=%.3f app_s=%.3f losses=%s" % (steps, ms, app_s, " ".join(v.hex() for v in losses)))

"""Bench workload: torchvision ResNet-18 (random init, cuDNN) training steps on random images.
Deterministic algorithms, so every step's loss prints bit for bit (float.hex) and runs with and
without a profiler compare exactly. Usage: python3 resnet.py [steps=1] [batch=16]"""
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torchvision  # noqa: E402

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 16
torch.manual_seed(0)
torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = True
torch.use_deterministic_algorithms(True)
t_cuda = time.perf_counter()
model = torchvision.models.resnet18(weights=None, num_classes=100).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(batch, 3, 224, 224, device="cuda")
y = torch.randint(0, 100, (batch,), device="cuda")
losses = []
for _ in range(steps):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())
torch.cuda.synchronize()
print("resnet18: steps=%d batch=%d app_s=%.3f losses=%s" % (
    steps, batch, time.perf_counter() - t_cuda, " ".join(v.hex() for v in losses)))

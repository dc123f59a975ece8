"""A small deterministic DDP training loop for 2 GPUs (NCCL), started with torchrun. Each rank
prints its step losses exactly (float.hex) with its rank, so that runs with and without kreplay
can be compared bit for bit. NVLink multicast stays off (NCCL_NVLS_ENABLE=0 and friends)."""
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(rank)
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
device = f"cuda:{rank}"
model = torch.nn.Sequential(
    torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1)
).to(device)
ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
generator = torch.Generator(device="cpu").manual_seed(1 + rank)
x = torch.randn(256, 64, generator=generator).to(device)
y = torch.randn(256, 1, generator=generator).to(device)
for step in range(3):
    optimizer.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(ddp(x), y)
    loss.backward()
    optimizer.step()
    print(f"rank {rank} step {step} loss {loss.item().hex()}", flush=True)
dist.destroy_process_group()

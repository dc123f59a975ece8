"""Bench workload: a 2-layer GPT-2 (transformers, random init) training steps with AdamW on
random tokens. Deterministic algorithms, so every step's loss prints bit for bit (float.hex).
Usage: python3 gpt2.py [steps=1] [batch=8] [sequence=128]"""
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 8
seq = int(sys.argv[3]) if len(sys.argv) > 3 else 128
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
t_cuda = time.perf_counter()
config = GPT2Config(n_layer=2, n_head=8, n_embd=512, vocab_size=8192, n_positions=seq,
                    attn_implementation="eager")
model = GPT2LMHeadModel(config).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
tokens = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")
losses = []
for _ in range(steps):
    opt.zero_grad(set_to_none=True)
    loss = model(tokens, labels=tokens).loss
    loss.backward()
    opt.step()
    losses.append(loss.item())
torch.cuda.synchronize()
print("gpt2: steps=%d batch=%d app_s=%.3f losses=%s" % (
    steps, batch, time.perf_counter() - t_cuda, " ".join(v.hex() for v in losses)))

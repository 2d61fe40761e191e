# SPDX-License-Identifier: MIT
"""Hugging Face transformers: a small GPT-2 built from its config (no download:
the GPU machine has no network), trained a few steps with batches of varying
length, then generate() with its key/value cache.  Everything is freed: under
gpuleak no definite or possible leak, no API error, and with PyTorch's cache on
the cached total equals torch.cuda.memory_reserved() read at exit."""
import atexit
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402


def report():
    torch.cuda.synchronize()
    print(f"hf_train: reserved {torch.cuda.memory_reserved()} "
          f"allocated {torch.cuda.memory_allocated()}", flush=True)


torch.manual_seed(0)
cfg = GPT2Config(vocab_size=1000, n_positions=128, n_embd=128, n_layer=2, n_head=4)
model = GPT2LMHeadModel(cfg).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(6):
    ids = torch.randint(0, cfg.vocab_size, (4, 16 + 8 * step), device="cuda")
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
model.eval()
with torch.no_grad():
    prompt = torch.randint(0, cfg.vocab_size, (2, 8), device="cuda")
    out = model.generate(prompt, max_new_tokens=16, do_sample=False, pad_token_id=0)
assert tuple(out.shape) == (2, 24), out.shape
del model, opt, ids, loss, prompt, out
torch.cuda.synchronize()
atexit.register(report)
print("hf_train: done", flush=True)

# SPDX-License-Identifier: MIT
"""An inference loop with a checkpoint at every step, PyTorch's cache on: what a
checkpoint costs when growth detection reads PyTorch's own record.

    python3 bench/torch_checkpoints.py [STEPS] [LIVE] [mlp|gpt2]
LIVE tensors (1,000 by default) stay alive the whole run, made after the first
checkpoint (so PyTorch's record has their stacks); each step runs the model
(mlp: a small MLP on a batch, some 20 temporaries; gpt2: a forward pass of
GPT-2 small built from its config with random weights, no download, some 400
temporaries) and takes gpuleak.checkpoint("step").
Prints "ms_per_step X" (the whole step, checkpoint included) and, under gpuleak,
"ms_per_checkpoint X" (the checkpoint call alone, median) and
"ms_frameworks X" (of which reading the frameworks' accounts, median)."""
import os
import statistics
import sys
import time

import torch

try:
    import gpuleak
except ImportError:  # run bare: checkpoints cost nothing
    gpuleak = None

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 60
live = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
kind = sys.argv[3] if len(sys.argv) > 3 else "mlp"

fw_times = []
if gpuleak is not None and hasattr(gpuleak, "_tell_frameworks"):
    tell = gpuleak._tell_frameworks

    def timed(api):
        t = time.perf_counter()
        try:
            return tell(api)
        finally:
            fw_times.append(time.perf_counter() - t)

    gpuleak._tell_frameworks = timed


def checkpoint():
    if gpuleak is not None:
        gpuleak.checkpoint("step")


torch.manual_seed(0)
if kind == "gpt2":
    from transformers import GPT2Config, GPT2LMHeadModel
    model = GPT2LMHeadModel(GPT2Config()).cuda().eval()
    x = torch.randint(0, 50257, (8, 256), device="cuda")
else:
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 2048), torch.nn.GELU(),
        torch.nn.Linear(2048, 2048), torch.nn.GELU(),
        torch.nn.Linear(2048, 512),
    ).cuda().eval()
    x = torch.randn(256, 512, device="cuda")

checkpoint()  # starts PyTorch's record under gpuleak
kept = [torch.empty(4096 + i, device="cuda") for i in range(live)]


@torch.no_grad()
def step():
    if kind == "gpt2":
        return model(x).logits[:, -1].argmax(-1)
    h = x
    for _ in range(4):
        h = model(h) + h
    return h.sum()


for _ in range(5):
    step()
torch.cuda.synchronize()
cp_times = []
prof = None
if os.environ.get("BENCH_PROFILE"):  # where the loop's time goes, callers of the top entries
    import cProfile
    prof = cProfile.Profile()
    prof.enable()
t0 = time.perf_counter()
for _ in range(steps):
    step()
    t = time.perf_counter()
    checkpoint()
    cp_times.append(time.perf_counter() - t)
torch.cuda.synchronize()
print(f"ms_per_step {(time.perf_counter() - t0) * 1e3 / steps:.4f}")
if prof is not None:
    import pstats
    prof.disable()
    st = pstats.Stats(prof).sort_stats("cumulative")
    st.print_stats(25)
    st.sort_stats("tottime").print_callers(6)
if gpuleak is not None and gpuleak.running():
    print(f"ms_per_checkpoint {statistics.median(cp_times) * 1e3:.4f}")
    print(f"ms_checkpoint_max {max(cp_times) * 1e3:.4f} (the first: {cp_times[0] * 1e3:.4f})")
    if fw_times:
        print(f"ms_frameworks {statistics.median(fw_times) * 1e3:.4f}")
del kept

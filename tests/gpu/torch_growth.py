# SPDX-License-Identifier: MIT
"""A small PyTorch training loop with a checkpoint per step, for gpuleak's
Python frames and --growth-checkpoints.

    torch_growth.py leak    each step keeps one 256 KiB tensor in a global list,
                            made on the line whose comment is the site marker
                            "leak" (run_suite.py finds it by that marker)
    torch_growth.py clean   nothing is kept

One warm-up step (allocator, cuBLAS, the gradients), then 30 steps, each
followed by gpuleak.checkpoint("step").  65,536 floats: with caching off each
kept tensor is a cudaMalloc of its own.

The list is given an extra reference that is never dropped, so that it outlives
the interpreter's finalization: a list held only by a module global is freed
when the modules are torn down, before gpuleak's exit report, which would then
not list the kept tensors (doc/manual.md, section 6).  Exits with status 0."""
import ctypes
import sys

import torch

import gpuleak

STEPS = 30
history = []
ctypes.pythonapi.Py_IncRef(ctypes.py_object(history))  # kept to the exit report


def train_step(model, opt, x, y, keep):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    if keep:
        history.append(torch.ones(65536, device="cuda"))  # SITE:leak
    return loss.item()


def main(mode):
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 8).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64, device="cuda")
    y = torch.randn(32, 8, device="cuda")
    train_step(model, opt, x, y, False)  # warm-up, before the first checkpoint
    for _ in range(STEPS):
        last = train_step(model, opt, x, y, mode == "leak")
        gpuleak.checkpoint("step")
    torch.cuda.synchronize()
    print(f"torch_growth: done {mode}, {len(history)} kept, loss {last:.4f}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("leak", "clean"):
        sys.exit("usage: torch_growth.py leak|clean")
    main(sys.argv[1])

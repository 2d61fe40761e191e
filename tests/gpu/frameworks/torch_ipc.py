# SPDX-License-Identifier: MIT
"""torch.multiprocessing with the spawn start method: the producer sends CUDA
tensors through a Queue, the consumer maps them (PyTorch opens the producer's
segment with cudaIpcOpenMemHandle, inside its caching allocator) and lets them
go; the producer frees its tensors once the consumer is done, as PyTorch's
documentation asks.  Nothing leaks in either process."""
import atexit
import sys

import torch
import torch.multiprocessing as mp

N = 4


def consumer(q, done):
    total = 0.0
    for _ in range(N):
        t = q.get()
        total += float(t.sum())
        del t
    torch.cuda.synchronize()
    print(f"torch_ipc: consumer total {total:.0f}", flush=True)
    done.set()


def report():
    torch.cuda.synchronize()
    print(f"torch_ipc: reserved {torch.cuda.memory_reserved()} "
          f"allocated {torch.cuda.memory_allocated()}", flush=True)


if __name__ == "__main__":
    mp.set_start_method("spawn")
    q, done = mp.Queue(), mp.Event()
    p = mp.Process(target=consumer, args=(q, done))
    p.start()
    sent = [torch.full((1 << 20,), float(i), device="cuda") for i in range(N)]
    for i in range(N):
        q.put(sent[i])
    # A consumer that died fails the run now, not at the suite's timeout.
    if not done.wait(timeout=120):
        p.kill()
        sys.exit("torch_ipc: the consumer did not finish")
    p.join(timeout=150)  # its exit report comes first
    del sent
    atexit.register(report)
    print(f"torch_ipc: done, consumer exit {p.exitcode}", flush=True)

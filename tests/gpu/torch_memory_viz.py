# SPDX-License-Identifier: MIT
"""A small model trained with PyTorch's caching allocator on, PyTorch
recording its own allocation history; one 4 MiB tensor kept per step.  At the
end PyTorch's snapshot goes to argv[1], for gpuleak.memory_viz to merge with
gpuleak's --memory-viz file.  Prints PyTorch's peaks."""
import sys

import torch


def main(out):
    torch.cuda.memory._record_memory_history(max_entries=100000)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).cuda()
    opt = torch.optim.Adam(model.parameters())
    keep = []
    for _ in range(20):
        x = torch.randn(64, 256, device="cuda")
        y = torch.randint(0, 10, (64,), device="cuda")
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        keep.append(torch.empty(1 << 20, device="cuda"))
    torch.cuda.synchronize()
    torch.cuda.memory._dump_snapshot(out)
    print(f"torch_memory_viz: done, allocated peak {torch.cuda.max_memory_allocated()}, "
          f"reserved peak {torch.cuda.max_memory_reserved()}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])

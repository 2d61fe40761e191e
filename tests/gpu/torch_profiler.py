# SPDX-License-Identifier: MIT
"""torch.profiler inside a program: under gpuleak --intercept=driver it must
record the CUDA kernels it records without gpuleak (CUPTI stays the
profiler's)."""
import torch
from torch.profiler import ProfilerActivity, profile

x = torch.randn(512, 512, device="cuda")
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    for _ in range(8):
        y = torch.relu(x @ x)
    torch.cuda.synchronize()
n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
kept = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")  # noqa: F841 (alive at exit)
print(f"torch_profiler: {n} CUDA events")

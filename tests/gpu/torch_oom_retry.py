# SPDX-License-Identifier: MIT
"""PyTorch's caching allocator meets an out-of-memory and recovers: a request no
cached segment fits makes cudaMalloc fail, the allocator frees its cache and
retries, and the program never sees an error.  Then a request no device could
serve raises torch.OutOfMemoryError, which the program catches.
Expected under gpuleak: both failed cudaMallocs matched by frameworks.supp (0
errors, 2 suppressed), no leak, exit 0."""
import torch

free, total = torch.cuda.mem_get_info()
chunk = 1 << 30
cached = [torch.empty(chunk, dtype=torch.uint8, device="cuda") for _ in range(int(free * 0.9) // chunk)]
del cached  # freed by the program, kept by the allocator (memory_reserved)
reserved = torch.cuda.memory_reserved()
# Larger than any cached segment, and more than the device has left.
big = torch.empty(int(free * 0.5), dtype=torch.uint8, device="cuda")
print(f"torch_oom_retry: retried (reserved {reserved >> 30} GiB before, "
      f"{torch.cuda.memory_reserved() >> 30} GiB after)")
del big
try:
    torch.empty(total * 2, dtype=torch.uint8, device="cuda")
    print("torch_oom_retry: no OOM?")
except torch.OutOfMemoryError:
    print("torch_oom_retry: caught OutOfMemoryError")

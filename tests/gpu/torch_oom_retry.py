# SPDX-License-Identifier: MIT
"""PyTorch's allocator meets an out-of-memory and recovers.  With its caching
allocator (natively or with expandable_segments:True) a request no cached
segment fits makes cudaMalloc (cuMemCreate) fail, the allocator frees its
cache and retries, and the program never sees an error.  With
backend:cudaMallocAsync, which has no retry, cuDNN's benchmark asks the
backend for its largest workspace (cacheInfo: cudaMallocAsync halving the
size until one fits) instead.  Then, in every backend, a request no device
could serve raises torch.OutOfMemoryError, which the program catches.
Expected under gpuleak: every failed allocation matched by frameworks.supp (0
errors, the failures suppressed), no leak, exit 0."""
import os

import torch

backend_async = "cudaMallocAsync" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
free, total = torch.cuda.mem_get_info()
if backend_async:
    torch.backends.cudnn.benchmark = True
    conv = torch.nn.Conv2d(16, 32, 3).cuda()
    y = conv(torch.randn(8, 16, 64, 64, device="cuda"))
    torch.cuda.synchronize()
    del conv, y
    print("torch_oom_retry: cuDNN benchmarked (no retry in this backend)")
else:
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

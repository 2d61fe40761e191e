# SPDX-License-Identifier: MIT
"""PyTorch with its caching allocator off, through cuBLAS, cuDNN and NCCL, each
released as the program can: what remains is library noise (lib_noise.cu)."""
import torch
import torch.distributed as dist

x = torch.randn(512, 512, device="cuda")
y = x @ x
conv = torch.nn.Conv2d(3, 8, 3).cuda()
out = conv(torch.randn(2, 3, 32, 32, device="cuda"))
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29511", rank=0, world_size=1)
t = torch.ones(16, device="cuda")
dist.all_reduce(t)
torch.cuda.synchronize()
dist.destroy_process_group()
del x, y, conv, out, t
torch.cuda.synchronize()
print("torch_noise: done")

# SPDX-License-Identifier: MIT
"""A CUDA graph whose capture forks to a side stream and joins back, as
PyTorch programs overlap work inside torch.cuda.graph: fork.wait_stream
records an event in the capture and makes the side stream wait for it, and
the side stream's tensors are allocated there (in the graph's private pool).
Replayed, then everything dropped.  Under gpuleak: no definite or possible
leak, no API error.  (With backend:cudaMallocAsync, PyTorch 2.11 aborts on
this program without gpuleak.)"""
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 256)).cuda()
x = torch.randn(64, 256, device="cuda")
# Warm up on a side stream, as torch.cuda.graph's documentation asks.
warm = torch.cuda.Stream()
warm.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(warm), torch.no_grad():
    for _ in range(3):
        model(x)
torch.cuda.current_stream().wait_stream(warm)

graph = torch.cuda.CUDAGraph()
fork = torch.cuda.Stream()
with torch.cuda.graph(graph), torch.no_grad():
    y = model(x)
    fork.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(fork):
        z = torch.relu(y) * 2
        w = z.sum(dim=1, keepdim=True)
    torch.cuda.current_stream().wait_stream(fork)
    out = y + z + w
    del z, w
total = 0.0
for i in range(5):
    x.copy_(torch.randn(64, 256, device="cuda"))
    graph.replay()
    total += float(out.sum())
torch.cuda.synchronize()
print(f"torch_graphs_fork: replayed, {total:.3f}", flush=True)
del graph, out, y, x, model
torch.cuda.synchronize()
torch.cuda.empty_cache()
print("torch_graphs_fork: done", flush=True)

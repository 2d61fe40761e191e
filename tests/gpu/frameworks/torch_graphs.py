# SPDX-License-Identifier: MIT
"""PyTorch as inference servers and fast training loops use it: a DataLoader
with worker processes and pinned memory feeding a model whose step is
captured in a CUDA graph (its own memory pool in the caching allocator) and
replayed, then torch.cuda.make_graphed_callables on a second model.  Under
gpuleak: no definite or possible leak, no API error, and the cached device
total equals torch.cuda.memory_reserved() read at exit (the graphs' private
pools included)."""
import atexit

import torch


def report():
    torch.cuda.synchronize()
    print(f"torch_graphs: reserved {torch.cuda.memory_reserved()} "
          f"allocated {torch.cuda.memory_allocated()}", flush=True)


class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.randn(256, generator=g), i % 10


def main():
    torch.manual_seed(0)
    loader = torch.utils.data.DataLoader(Data(), batch_size=16, num_workers=2,
                                         pin_memory=True)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
    static_x = torch.zeros(16, 256, device="cuda")
    # Warm up on a side stream, as torch.cuda.graph's documentation asks.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            model(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        static_y = model(static_x)
    total = 0
    for epoch in range(2):
        for x, _ in loader:
            static_x.copy_(x.cuda(non_blocking=True))
            graph.replay()
            total += int(static_y.argmax(1).sum())
    # A training step made graphed, forward and backward.
    model2 = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                 torch.nn.Linear(128, 64)).cuda()
    sample = torch.randn(32, 64, device="cuda", requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(model2, (sample,))
    opt = torch.optim.SGD(model2.parameters(), lr=0.1)
    for _ in range(5):
        opt.zero_grad(set_to_none=True)
        graphed(torch.randn(32, 64, device="cuda", requires_grad=True)).sum().backward()
        opt.step()
    torch.cuda.synchronize()
    del graph, graphed, static_x, static_y, sample, model, model2, opt, loader
    torch.cuda.synchronize()
    print(f"torch_graphs: replayed, {total}", flush=True)


main()
atexit.register(report)
print("torch_graphs: done", flush=True)

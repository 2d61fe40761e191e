# SPDX-License-Identifier: MIT
"""gpuleak.profile around PyTorch code, checked to the byte.

    torch_profile.py uncached   (run with PYTORCH_NO_CUDA_MEMORY_CACHING=1)
    torch_profile.py cached     (PyTorch's caching allocator on)

The region makes tensors of 10, 30 and 50 MiB, drops the first, and computes
a 30 MiB product: 110 MiB above the start at the peak, every byte freed by
its end.  The test resets PyTorch's peak counters before the region (the
profiler itself never does) and compares:

- uncached: each tensor is a cudaMalloc of its own, so gpuleak's peak above
  the start is the hand-computed 110 MiB, and equals what
  torch.cuda.max_memory_allocated() says when this PyTorch counts uncached
  tensors at all (most versions count none of them: then 0, and said so);
  the site at the peak is the 50 MiB tensor's line.
- cached: both views are there; the tensor view's peak is exact and the
  hand-computed 110 MiB above the start (every size is a multiple of the
  caching allocator's 512-byte rounding, so its blocks are the sizes asked
  for), with 120 MiB allocated and freed in 4 tensors each, and equals
  torch.cuda.max_memory_allocated(); the driver view's rise is that of
  torch.cuda.max_memory_reserved(), and its net change that of
  memory_reserved() (new segments only: the cache is emptied first).

Prints one line per view, then "torch_profile: done, N failures"; exit
status 1 if a check failed."""
import json
import os
import sys

import torch

import gpuleak

MIB = 1 << 20
HERE = os.path.abspath(__file__)
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print(f"torch_profile: FAILED: {what}", flush=True)


def site_line(name):
    with open(HERE) as f:
        for i, line in enumerate(f, 1):
            if line.rstrip().endswith(f"# SITE:{name}"):
                return i
    raise LookupError(name)


def mib_tensor(n):
    return torch.empty(n * MIB // 4, dtype=torch.float32, device="cuda")


def step():
    a = mib_tensor(10)
    b = mib_tensor(30)
    del a
    c = mib_tensor(50)  # SITE:c
    d = b * 2  # 30 MiB more: the peak, 110 MiB above the start
    torch.cuda.synchronize()
    del b, c, d


def view_line(name, v):
    return (f"torch_profile: {name} {v.source}: open {v.at_open} peak {v.peak} "
            f"(+{v.peak_increase}) close {v.at_close} allocated {v.allocated} in {v.allocs} "
            f"freed {v.freed} in {v.frees} exact {v.peak_exact}")


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "cached"
    uncached = os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1"
    expect(uncached == (mode == "uncached"),
           f"mode {mode} with PYTORCH_NO_CUDA_MEMORY_CACHING={uncached}")
    expect(gpuleak.running(), "not running under gpuleak")
    keep = torch.ones(256, device="cuda")  # live before the region
    step()  # warm: kernels loaded, nothing lazy left for the region
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    allocated0 = torch.cuda.memory_allocated()
    reserved0 = torch.cuda.memory_reserved()

    with gpuleak.profile("step") as p:
        step()

    torch_peak = torch.cuda.max_memory_allocated() - allocated0
    reserved_peak = torch.cuda.max_memory_reserved() - reserved0
    r = p.result
    print(r, flush=True)
    expect(r.source == "gpuleak", f"source {r.source!r}: {r.note}")
    d = r.device(torch.cuda.current_device())
    expect(d is not None and d.driver is not None, "no driver view")
    if d is None or d.driver is None:
        return
    drv = d.driver
    print(view_line("driver", drv), flush=True)
    if d.tensors is not None:
        print(view_line("tensors", d.tensors), flush=True)
    print("torch_profile: torch " + json.dumps({
        "version": torch.__version__, "max_memory_allocated_rise": torch_peak,
        "max_memory_reserved_rise": reserved_peak}), flush=True)
    expect(drv.source == "gpuleak" and drv.peak_exact, f"driver view {drv.source}")
    if mode == "uncached":
        expect(drv.net == 0, f"driver net {drv.net}")
        expect(drv.peak_increase == 110 * MIB, f"peak above the start {drv.peak_increase:,}, "
               f"expected 110 MiB = {110 * MIB:,}")
        expect((drv.allocated, drv.freed, drv.allocs, drv.frees) == (120 * MIB, 120 * MIB, 4, 4),
               f"allocated {drv.allocated:,} in {drv.allocs}, freed {drv.freed:,} in "
               f"{drv.frees}, expected 120 MiB in 4 each")
        if torch_peak:
            expect(drv.peak_increase == torch_peak,
                   f"max_memory_allocated rose {torch_peak:,}, gpuleak {drv.peak_increase:,}")
        else:
            print("torch_profile: this PyTorch counts no uncached tensor "
                  "(max_memory_allocated 0): compared with the hand-computed peak", flush=True)
        expect(d.tensors is None, "a tensor view though PyTorch counts nothing uncached")
        # The 50 MiB tensor's stack: through mib_tensor, from step's line.
        top = drv.top_sites[0] if drv.top_sites else None
        line = site_line("c")
        expect(top is not None and top.bytes == 50 * MIB and
               any("torch_profile.py:" in f and f.endswith(f":{line}:step") for f in top.frames),
               f"top site {top}, expected 50 MiB from step at line {line}: "
               f"{top.frames if top else ()}")
        expect(drv.sites_exact, "sites not exact")
    else:
        t = d.tensors
        expect(t is not None, "no tensor view with the cache on")
        if t is not None:
            expect(t.peak_exact, "tensor peak not exact after a reset of PyTorch's peaks")
            # By hand: 10 + 30 MiB, 10 dropped, + 50, + 30: 110 MiB above the
            # start; 120 MiB allocated and freed, in 4 tensors each.
            expect(t.at_open == allocated0, f"tensors at open {t.at_open:,}, memory_allocated "
                   f"before the region {allocated0:,}")
            expect(t.peak_increase == 110 * MIB,
                   f"tensor peak above the start {t.peak_increase:,}, expected 110 MiB = "
                   f"{110 * MIB:,}")
            expect((t.allocated, t.freed) == (120 * MIB, 120 * MIB),
                   f"tensors allocated {t.allocated} freed {t.freed}, expected 120 MiB = "
                   f"{120 * MIB:,} each")
            expect(t.peak == torch.cuda.max_memory_allocated(),
                   f"tensor peak {t.peak:,}, max_memory_allocated "
                   f"{torch.cuda.max_memory_allocated():,}")
            expect(t.peak_increase == torch_peak,
                   f"tensor peak above the start {t.peak_increase:,}, PyTorch's {torch_peak:,}")
            expect(t.net == 0 and t.allocs == 4 and t.frees == 4,
                   f"tensors net {t.net} allocs {t.allocs} frees {t.frees}")
        # The cache keeps the segments: what the driver gave stays given.
        expect(drv.net == torch.cuda.memory_reserved() - reserved0,
               f"driver net {drv.net:,}, memory_reserved rose "
               f"{torch.cuda.memory_reserved() - reserved0:,}")
        expect(drv.peak_increase == reserved_peak,
               f"driver peak above the start {drv.peak_increase:,}, max_memory_reserved rose "
               f"{reserved_peak:,}")
        expect(drv.peak_increase >= 110 * MIB, f"driver peak above the start {drv.peak_increase:,}")
        expect(d.view is drv and d.peak == drv.peak, "the shortcuts do not read the driver view")
    s = gpuleak.profile.summary().get("step", torch.cuda.current_device())
    expect(s is not None and s.calls == 1 and s.peak_max == d.peak, f"summary {s}")
    del keep


if __name__ == "__main__":
    main()
    print(f"torch_profile: done, {len(failures)} failures", flush=True)
    sys.exit(1 if failures else 0)

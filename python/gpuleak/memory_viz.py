# SPDX-License-Identifier: MIT
"""gpuleak's --memory-viz file and PyTorch's own snapshot, merged into one.

gpuleak sees the CUDA driver: with PyTorch's caching allocator on, its
--memory-viz file shows the allocator's segments (what it reserved), not the
tensors cut from them.  PyTorch records its tensors itself when asked
(torch.cuda.memory._record_memory_history()), and dumps them with
torch.cuda.memory._dump_snapshot(path).  merge() takes both and gives one
snapshot for PyTorch's viewer: PyTorch's segments, tensors and history, and
beside them every driver allocation PyTorch's allocator did not make (cuBLAS's
own memory, NCCL's, another library's), from gpuleak's file, each with its
stack.  The two files' times are both microseconds since the Unix epoch, so
their events interleave in the order they happened.

    gpuleak --memory-viz=driver.pickle python train.py   # train.py records and
                                                         # dumps torch.pickle
    python -m gpuleak.memory_viz merge driver.pickle torch.pickle -o both.pickle
    python -m torch.cuda._memory_viz trace_plot both.pickle -o both.html

Standard library only; no torch needed.
"""
import argparse
import pickle
import sys

__all__ = ["ALLOCATOR_FRAMES", "made_by_allocator", "merge", "main"]

#: A driver allocation whose stack has one of these made by PyTorch's caching
#: allocator (its segments, or the physical memory of an expandable segment):
#: PyTorch's own snapshot describes it, with its tensors.
ALLOCATOR_FRAMES = ("c10::cuda::CUDACachingAllocator::",)


def made_by_allocator(frames):
    """Whether a stack (a snapshot's frames list) passes through PyTorch's
    caching allocator."""
    return any(a in f.get("name", "") for f in frames for a in ALLOCATOR_FRAMES)


def _groups(trace):
    """gpuleak's trace entries in their groups (segment_alloc + alloc,
    free_requested + free_completed + segment_free, oom): a group is kept or
    left whole."""
    group = []
    for e in trace:
        group.append(e)
        if e["action"] in ("alloc", "segment_free", "oom"):
            yield group
            group = []
    if group:
        yield group


def merge(driver, tensors):
    """One snapshot from gpuleak's (driver) and PyTorch's (tensors), both as
    unpickled dicts.  Neither is changed."""
    ndev = max(len(driver.get("device_traces", [])), len(tensors.get("device_traces", [])))
    traces = []
    kept_driver = 0
    for d in range(ndev):
        mine = driver["device_traces"][d] if d < len(driver.get("device_traces", [])) else []
        theirs = tensors["device_traces"][d] if d < len(tensors.get("device_traces", [])) else []
        entries = []  # (time_us, source, index, entry)
        for i, e in enumerate(theirs):
            entries.append((e.get("time_us", 0), 1, i, e))
        n = 0
        for g in _groups(mine):
            if g[-1]["action"] == "oom" or not made_by_allocator(g[0].get("frames", [])):
                for e in g:
                    # A group shares its first entry's time, so that it stays whole.
                    entries.append((g[0].get("time_us", 0), 0, n, e))
                    n += 1
                kept_driver += 1
        entries.sort(key=lambda x: x[:3])
        traces.append([x[3] for x in entries])
    segments = list(tensors.get("segments", []))
    segments += [s for s in driver.get("segments", [])
                 if not made_by_allocator(s.get("frames", []))]
    segments.sort(key=lambda s: (s["device"], s["address"]))
    out = {k: v for k, v in tensors.items() if k not in ("segments", "device_traces")}
    out["segments"] = segments
    out["device_traces"] = traces
    about = dict(driver.get("gpuleak", {}))
    # The timeline is now the tensors' and the driver's other allocations: the
    # driver's peaks no longer bound it.
    about["merged"] = "torch"
    about["driver_peak_bytes"] = about.pop("peak_bytes", [])
    about["driver_groups_kept"] = kept_driver
    out["gpuleak"] = about
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python -m gpuleak.memory_viz",
        description="Merge gpuleak's --memory-viz file with PyTorch's own snapshot.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("merge", help="gpuleak's file and torch.cuda.memory._dump_snapshot's, "
                                     "as one snapshot for PyTorch's viewer")
    m.add_argument("driver", help="the file gpuleak's --memory-viz wrote")
    m.add_argument("tensors", help="the file torch.cuda.memory._dump_snapshot wrote")
    m.add_argument("-o", "--output", required=True, help="the merged snapshot")
    a = ap.parse_args(argv)
    loaded = []
    for what, path in (("gpuleak's file", a.driver), ("PyTorch's snapshot", a.tensors)):
        try:
            with open(path, "rb") as f:
                data = pickle.load(f)
        except Exception as e:  # one line naming the file
            print(f"gpuleak.memory_viz: {path}: cannot read {what}: {e}", file=sys.stderr)
            return 1
        if not isinstance(data, dict) or "device_traces" not in data or "segments" not in data:
            print(f"gpuleak.memory_viz: {path}: not a memory snapshot (no segments and "
                  f"device_traces)", file=sys.stderr)
            return 1
        loaded.append(data)
    untimed = sum(1 for t in loaded[1]["device_traces"] for e in t if "time_us" not in e)
    if untimed:
        print(f"gpuleak.memory_viz: {a.tensors}: {untimed} trace entries have no time_us "
              f"(PyTorch before 2.2): they cannot be put in order with gpuleak's",
              file=sys.stderr)
        return 1
    if "gpuleak" not in loaded[0]:
        print(f"gpuleak.memory_viz: {a.driver}: not written by gpuleak --memory-viz",
              file=sys.stderr)
        return 1
    merged = merge(*loaded)
    try:
        with open(a.output, "wb") as f:
            pickle.dump(merged, f, protocol=2)  # PyTorch's viewer reads 2 to 4
    except OSError as e:
        print(f"gpuleak.memory_viz: {a.output}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

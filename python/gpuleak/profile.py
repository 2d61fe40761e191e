# SPDX-License-Identifier: MIT
"""gpuleak.profile: what GPU memory did in a region of code, exactly.

    import gpuleak

    with gpuleak.profile("step") as p:        # a context manager
        loss = train_step(model, batch)
    print(p.result)                           # a table; p.result.device(0).peak ...

    @gpuleak.profile                          # a decorator (named after the function)
    def forward(x): ...

    @gpuleak.profile("fwd")                   # or named
    def forward(x): ...

    print(gpuleak.profile.summary())          # per region name: calls, mean and max

Like GPUMemoryProfiler's profile_context / profile_function, but from
gpuleak's own record of every allocation and free the process makes (the
runtime's, through the client API's gpuleak_profile_begin/_end), not from
polling, and without resetting PyTorch's peak counters: per device, the bytes
live when the region began and ended, the bytes allocated and freed and how
many times, the peak of the live bytes while it ran (and when it was reached),
and the allocation sites that held the most at that peak.

With PyTorch's caching allocator on, two views per device: what CUDA gave the
process (the driver view: gpuleak's, which counts the allocator's segments,
that is PyTorch's reserved memory, and every other library's memory), and what
PyTorch's tensors used (the tensor view: its allocated bytes, from its own
counters).  With the cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1), every
tensor is a cudaMalloc of its own and the driver view is the tensors'
(PyTorch's counters see nothing then).

Exactness:

- The driver view under gpuleak is exact to the byte for a region begun and
  ended while no other thread allocates or frees.  GPU memory is the
  process's: a region counts every thread's allocations and frees while it
  is open ("thread-aware": it records which thread opened it, how many of its
  events came from other threads, and its nesting on its own thread).
  Regions nest and overlap freely, on one thread or several.
- The tensor view: bytes and counts allocated and freed, net, and the bytes
  at both ends are exact (PyTorch's cumulative counters, read at both ends).
  Its peak: when PyTorch records its allocation history with a trace
  (torch.cuda.memory._record_memory_history()), the region's entries are
  replayed first (from a snapshot of PyTorch's allocator read at the end),
  and the result is exact if they account for every byte PyTorch's counters
  say was allocated and freed.  Otherwise it is exact when PyTorch's own
  peak counter rose during the region (the region reached a new high since
  the last reset_peak_memory_stats: its peak is then that counter).  That
  rule holds only if the program did not reset PyTorch's peaks inside the
  region: a reset there defeats it.  A reset is seen when a
  peak counter ends lower than it began (the allocated bytes', or any other
  PyTorch keeps): the peak is then at least what PyTorch saw since the reset
  and the bytes live at both ends, with no upper bound (peak_bound None),
  and the note says so; a reset followed by a new high can go unseen, and
  only the trace replay is exact then.  Otherwise peak_exact is False and
  the peak lies between `peak` and `peak_bound`.
- With PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, PyTorch hands each
  tensor a stream-ordered allocation of CUDA's memory pool: the driver view
  under gpuleak counts those allocations, not PyTorch's reserved memory, and
  PyTorch's counters keep only the bytes in use and their peak (no bytes or
  counts allocated and freed, no trace); the note says so.

Without gpuleak: a warning (once), and the views PyTorch's counters give (the
tensors', and its reserved memory as the driver view), with the same rules of
exactness, and no sites.  Without PyTorch either: an empty result that says
why.  Never raises for the program's sake: a failure to read a view leaves it
out, with a note.

Threads: a profile object may be entered on several threads at once, and again
on one thread while open there (recursion): each entry is a region of its
own, ended by the same thread's next exit (innermost first).  Its `result` is
the last result of a region the calling thread began or ended (of any
thread's, where it has none).  An exit on a thread with none of the object's
regions open ends the one another thread began last (a region handed over).

As a decorator, on a plain function each call is a region; on a coroutine
function (async def) each call's awaiting is; on a generator function or an
async generator function the whole iteration is, from the first next() to
its exhaustion or close().
"""
import ctypes
import dataclasses
import functools
import inspect
import os
import sys
import threading
import time
import warnings
from typing import Optional, Tuple

# The package itself (this module is imported at the end of its __init__).
_gl = sys.modules[__name__.rpartition(".")[0]]

__all__ = ["profile", "profile_summary", "ProfileResult", "DeviceProfile", "MemoryView", "Site",
           "ProfileSummary", "RegionStats"]

_MAX_DEVICES = 34        # gpuleak's device slots: 32 ordinals, host memory, the rest
_NAME_MAX = 63


# ---- the results: plain, frozen objects ----

def _where(frame):
    """'FILE:LINE:FUNCTION' as a report shows it: 'FUNCTION (file:line)'."""
    file, line, func = _split_frame(frame)
    if line:
        return f"{func} ({os.path.basename(file)}:{line})"
    return f"{func} (in {file})" if file and file != "???" else func


def _split_frame(frame):
    # FILE may hold ':' itself: split at the first ':' followed by digits and ':'.
    i = frame.find(":")
    while i >= 0:
        j = i + 1
        while j < len(frame) and frame[j].isdigit():
            j += 1
        if j > i + 1 and j < len(frame) and frame[j] == ":":
            return frame[:i], int(frame[i + 1:j]), frame[j + 1:]
        i = frame.find(":", i + 1)
    return "", 0, frame


def _library_file(file):
    return any(part in file for part in ("/site-packages/", "/dist-packages/", "/lib/python"))


@dataclasses.dataclass(frozen=True)
class Site:
    """An allocation site at a peak: the bytes and blocks it had live then,
    and its stack, "FILE:LINE:FUNCTION" strings, innermost first (empty when
    the runtime could not name them)."""
    bytes: int
    blocks: int
    frames: Tuple[str, ...] = ()

    @property
    def where(self):
        """The frame most likely the program's own: the innermost Python
        frame outside installed packages, else the innermost Python frame,
        else the innermost frame."""
        py = [f for f in self.frames if _split_frame(f)[0].endswith(".py")]
        own = [f for f in py if not _library_file(_split_frame(f)[0])]
        pick = (own or py or list(self.frames) or [""])[0]
        return _where(pick) if pick else "(no stack)"

    def __str__(self):
        return f"{self.bytes:,} bytes in {self.blocks:,} blocks at {self.where}"


@dataclasses.dataclass(frozen=True)
class MemoryView:
    """One view of one device over a region.

    source: "gpuleak" (every block CUDA gave the process), "PyTorch
    (allocated)" (its tensors) or "PyTorch (reserved)" (its segments, the
    driver view without gpuleak).  Bytes live at_open and at_close, the peak
    while it ran, bytes allocated and freed and how many allocations and frees
    (None where PyTorch does not count them).  peak_exact False: the peak lies
    between peak and peak_bound, or is at least peak when peak_bound is None
    (no upper bound known: PyTorch's peak counter was reset inside the
    region).  peak_time_s: seconds after the region began
    (None when not known); peak_seq: gpuleak's number of the allocation that
    reached it (0: the peak was at_open).  top_sites: the sites that held the
    most at the peak (gpuleak only), exact when sites_exact."""
    source: str
    at_open: int
    at_close: int
    peak: int
    allocated: Optional[int] = None
    freed: Optional[int] = None
    allocs: Optional[int] = None
    frees: Optional[int] = None
    peak_exact: bool = True
    peak_bound: Optional[int] = None
    peak_time_s: Optional[float] = None
    peak_seq: Optional[int] = None
    top_sites: Tuple[Site, ...] = ()
    sites_exact: bool = False

    def __post_init__(self):
        # An exact peak is its own bound; an inexact one without a bound has
        # none known.
        if self.peak_bound is None and self.peak_exact:
            object.__setattr__(self, "peak_bound", self.peak)

    @property
    def net(self):
        """Bytes live at the end less at the start."""
        return self.at_close - self.at_open

    @property
    def peak_increase(self):
        """How far the peak rose above the bytes live at the start."""
        return self.peak - self.at_open


@dataclasses.dataclass(frozen=True)
class DeviceProfile:
    """One device over a region (device -1: host memory, pinned or
    registered; -2: an ordinal above 31).  driver: what CUDA gave the process
    (gpuleak's view; without gpuleak, PyTorch's reserved memory); tensors: what
    PyTorch's tensors used, with its caching allocator on.  The shortcuts
    (allocated, peak, ...) read the driver view under gpuleak, else the
    tensors'."""
    device: int
    driver: Optional[MemoryView] = None
    tensors: Optional[MemoryView] = None

    @property
    def view(self):
        """The view the shortcuts read."""
        if self.driver is not None and self.driver.source == "gpuleak":
            return self.driver
        return self.tensors if self.tensors is not None else self.driver

    @property
    def allocated(self):
        return self.view.allocated

    @property
    def freed(self):
        return self.view.freed

    @property
    def net(self):
        return self.view.net

    @property
    def peak(self):
        return self.view.peak

    @property
    def peak_increase(self):
        return self.view.peak_increase

    @property
    def peak_time_s(self):
        return self.view.peak_time_s

    @property
    def allocs(self):
        return self.view.allocs

    @property
    def frees(self):
        return self.view.frees

    @property
    def top_sites(self):
        return self.view.top_sites


# Column heads of the table, per view's source.
_HEADS = {"gpuleak": "driver (gpuleak)", "PyTorch (reserved)": "driver (PyTorch reserved)",
          "PyTorch (allocated)": "tensors (PyTorch)"}


def _device_name(d):
    return {-1: "host memory", -2: "devices 32 and above"}.get(d, f"device {d}")


def _num(v, signed=False):
    if v is None:
        return "?"
    return f"{v:+,}" if signed else f"{v:,}"


@dataclasses.dataclass(frozen=True)
class ProfileResult:
    """A region, once it ended.  source: "gpuleak", "PyTorch" (not under
    gpuleak: PyTorch's counters), or "" (nothing could be measured); note:
    what is missing or a bound, and why ("" when nothing is).  devices: those
    with memory live or activity, CUDA ordinals first, then host memory.
    thread_id: the native id of the thread that began it (gpuleak's thread
    ids), thread_name; depth: regions open on that thread around it, parent:
    the innermost one's name.  other_thread_events: of the allocations and
    frees it counted, those made by other threads (gpuleak only)."""
    name: str
    source: str
    devices: Tuple[DeviceProfile, ...] = ()
    note: str = ""
    duration_s: float = 0.0
    thread_id: int = 0
    thread_name: str = ""
    depth: int = 0
    parent: Optional[str] = None
    other_thread_events: Optional[int] = None

    def device(self, d=0):
        """The DeviceProfile of CUDA device d (-1: host memory), or None."""
        for dev in self.devices:
            if dev.device == d:
                return dev
        return None

    def __str__(self):
        head = (f'gpuleak.profile "{self.name}": {self.duration_s * 1e3:,.3f} ms on thread '
                f"{self.thread_name or self.thread_id}")
        if self.parent is not None:
            head += f', inside "{self.parent}"'
        head += f" ({self.source or 'nothing measured'})"
        lines = [head]
        if self.other_thread_events:
            lines.append(f"  {self.other_thread_events:,} allocations and frees came from other "
                         f"threads")
        if self.note:
            lines.append(f"  note: {self.note}")
        for dev in self.devices:
            views = [(n, v) for n, v in (("driver", dev.driver), ("tensors", dev.tensors))
                     if v is not None]
            heads = [_HEADS.get(v.source, f"{n} ({v.source})") for n, v in views]
            w = max([20] + [len(h) for h in heads]) + 2
            lines.append(f"  {_device_name(dev.device):<16}" + "".join(f"{h:>{w}}" for h in heads))
            rows = [("at open", lambda v: _num(v.at_open)),
                    ("peak", lambda v: _num(v.peak) + ("" if v.peak_exact else "?")),
                    ("  above open", lambda v: _num(v.peak_increase, True)),
                    ("  reached at", lambda v: "?" if v.peak_time_s is None
                     else f"{v.peak_time_s * 1e3:,.3f} ms"),
                    ("at close", lambda v: _num(v.at_close)),
                    ("net", lambda v: _num(v.net, True)),
                    ("allocated", lambda v: f"{_num(v.allocated)} in {_num(v.allocs)}"),
                    ("freed", lambda v: f"{_num(v.freed)} in {_num(v.frees)}")]
            for label, cell in rows:
                lines.append(f"    {label:<14}" + "".join(f"{cell(v):>{w}}" for _, v in views))
            for _, v in views:
                if v.peak_exact:
                    continue
                if v.peak_bound is None:
                    lines.append(f"    {v.source}: the peak is at least {v.peak:,} bytes "
                                 f"(no upper bound known)")
                else:
                    lines.append(f"    {v.source}: the peak lies between {v.peak:,} and "
                                 f"{v.peak_bound:,} bytes")
            for n, v in views:
                if v.top_sites:
                    exact = "" if v.sites_exact else ", not exact"
                    lines.append(f"    sites at the peak ({n}{exact}):")
                    lines.extend(f"      {site}" for site in v.top_sites)
        return "\n".join(lines)


# ---- the summary across regions ----

@dataclasses.dataclass(frozen=True)
class RegionStats:
    """The regions of one name on one device: how many ended, the mean and
    the largest of their peaks, of how far each peak rose above the bytes live
    at its start, and of their net change, and the mean and longest
    duration.  Figures of each region's DeviceProfile.view."""
    name: str
    device: int
    calls: int
    peak_mean: float
    peak_max: int
    peak_increase_mean: float
    peak_increase_max: int
    net_mean: float
    net_max: int
    duration_mean_s: float
    duration_max_s: float


class ProfileSummary(tuple):
    """RegionStats per (name, device), in the order names first ended; a
    readable table as str()."""

    def __str__(self):
        if not self:
            return "gpuleak.profile: no region ended yet"
        w = max(len("region"), *(len(r.name) for r in self))
        lines = [f"{'region':<{w}}  {'device':>6}  {'calls':>7}  {'peak mean':>15}  "
                 f"{'peak max':>15}  {'rise max':>15}  {'net mean':>15}  {'net max':>15}  "
                 f"{'ms mean':>9}"]
        for r in self:
            lines.append(f"{r.name:<{w}}  {r.device:>6}  {r.calls:>7,}  {r.peak_mean:>15,.0f}  "
                         f"{r.peak_max:>15,}  {r.peak_increase_max:>15,}  {r.net_mean:>+15,.0f}  "
                         f"{r.net_max:>+15,}  {r.duration_mean_s * 1e3:>9,.3f}")
        return "\n".join(lines)

    def get(self, name, device=0):
        """The RegionStats of that name and device, or None."""
        for r in self:
            if r.name == name and r.device == device:
                return r
        return None


class _Summary:
    """Running sums per (name, device): bounded by the names, not the calls."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rows = {}

    def add(self, result):
        with self.lock:
            for dev in result.devices:
                v = dev.view
                if v is None:
                    continue
                key = (result.name, dev.device)
                r = self.rows.get(key)
                if r is None:
                    r = self.rows[key] = [0, 0, 0, 0, 0, 0, None, 0.0, 0.0]
                r[0] += 1
                r[1] += v.peak
                r[2] = max(r[2], v.peak)
                r[3] += v.peak_increase
                r[4] = max(r[4], v.peak_increase)
                r[5] += v.net
                r[6] = v.net if r[6] is None else max(r[6], v.net)
                r[7] += result.duration_s
                r[8] = max(r[8], result.duration_s)

    def read(self, reset=False):
        with self.lock:
            rows = [RegionStats(name, device, r[0], r[1] / r[0], r[2], r[3] / r[0], r[4],
                                r[5] / r[0], r[6], r[7] / r[0], r[8])
                    for (name, device), r in self.rows.items()]
            if reset:
                self.rows = {}
        return ProfileSummary(rows)


_summary = _Summary()


def profile_summary(reset=False):
    """Every region ended so far, by name and device (ProfileSummary; print
    it for a table).  reset: start counting afresh."""
    return _summary.read(reset)


# ---- PyTorch's counters ----

_STATS = ("allocated_bytes.all.current", "allocated_bytes.all.peak",
          "allocated_bytes.all.allocated", "allocated_bytes.all.freed",
          "allocation.all.allocated", "allocation.all.freed",
          "reserved_bytes.all.current", "reserved_bytes.all.peak",
          "reserved_bytes.all.allocated", "reserved_bytes.all.freed",
          "segment.all.allocated", "segment.all.freed",
          # Peaks read only to see a reset_peak_memory_stats() inside a region.
          "active_bytes.all.peak", "requested_bytes.all.peak", "allocation.all.peak",
          "active.all.peak", "segment.all.peak", "inactive_split_bytes.all.peak")

# PyTorch's peak counters: each only rises, until reset_peak_memory_stats()
# sets them all to the current values.
_PEAKS = tuple(k for k in _STATS if k.endswith(".peak"))


def _torch_module():
    """PyTorch with CUDA in use now, or None."""
    return _gl._torch()


def _torch_read(torch):
    """{device: {counter: value}} of every device PyTorch counts on, or None."""
    try:
        out = {}
        for d in range(torch.cuda.device_count()):
            stats = torch.cuda.memory_stats(d)
            out[d] = {k: stats[k] for k in _STATS if k in stats}
        return out
    except Exception:  # never break the program for a profile
        return None


def _torch_uncached(torch):
    """PyTorch hands every tensor its own cudaMalloc, and counts nothing."""
    return os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "") in ("1", "true", "True")


def _torch_backend(torch):
    """PyTorch's CUDA allocator backend: "native" (its caching allocator) or
    "cudaMallocAsync" (PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync); a
    PyTorch too old to say has only the native one."""
    try:
        get = getattr(torch.cuda.memory, "get_allocator_backend", None)
        return str(get()) if get is not None else "native"
    except Exception:  # never break the program for a profile
        return "native"


def _peak_reset(before, after):
    """PyTorch's peaks were reset between the two readings: one ended lower
    than it began.  (A reset after which every peak rose again is not seen.)"""
    return any(after[k] < before[k] for k in _PEAKS if k in before and k in after)


def _history_peak(torch, device, before, after):
    """The tensor peak from PyTorch's allocation history, or None.

    The region's entries are the last ones of the device's trace: as many
    allocations and frees as PyTorch's counters say it made.  A trace entry
    holds the size asked for, never more than the block's, so when they add
    up to the counters' bytes, every one is its block's size, and replaying
    them from the bytes live at the start gives the peak exactly."""
    if not getattr(torch._C, "_cuda_isHistoryEnabled", lambda: False)():
        return None
    try:
        traces = torch.cuda.memory._snapshot().get("device_traces") or []
    except Exception:
        return None
    if device >= len(traces):
        return None
    n_alloc = after.get("allocation.all.allocated", 0) - before.get("allocation.all.allocated", 0)
    n_free = after.get("allocation.all.freed", 0) - before.get("allocation.all.freed", 0)
    if n_alloc < 0 or n_free < 0:
        return None
    mine, a, f = [], 0, 0
    for e in reversed(traces[device]):
        if a == n_alloc and f == n_free:
            break
        action = e.get("action")
        if action == "alloc":
            a += 1
        elif action == "free_requested":
            f += 1
        else:
            continue
        if a > n_alloc or f > n_free:
            return None  # the trace and the counters disagree
        mine.append(e)
    if a != n_alloc or f != n_free:
        return None  # the trace kept fewer entries than the region made
    mine.reverse()
    alloc_sum = sum(e.get("size", 0) for e in mine if e.get("action") == "alloc")
    free_sum = sum(e.get("size", 0) for e in mine if e.get("action") == "free_requested")
    if (alloc_sum != after.get("allocated_bytes.all.allocated", 0) -
            before.get("allocated_bytes.all.allocated", 0) or
            free_sum != after.get("allocated_bytes.all.freed", 0) -
            before.get("allocated_bytes.all.freed", 0)):
        return None
    cur = peak = before.get("allocated_bytes.all.current", 0)
    for e in mine:
        cur += e.get("size", 0) if e.get("action") == "alloc" else -e.get("size", 0)
        peak = max(peak, cur)
    return peak if cur == after.get("allocated_bytes.all.current", 0) else None


def _torch_view(torch, device, before, after, kind, backend="native"):
    """A view from PyTorch's counters, kind "allocated" (tensors) or
    "reserved" (segments), and whether its peak was left without an upper
    bound by a reset of PyTorch's peaks inside the region.

    The tensors' peak: from the region's allocation history first, when
    PyTorch records one (the replay checks itself against the counters);
    else PyTorch's own peak counter when it rose during the region and no
    reset was seen (a new high since the last reset: reached inside); else a
    bound.  Under a backend other than the native one, PyTorch counts no
    bytes or blocks allocated and freed: those are None."""
    pre = "allocated_bytes" if kind == "allocated" else "reserved_bytes"
    count = "allocation" if kind == "allocated" else "segment"
    native = backend == "native"
    g0, g1 = before.get, after.get
    cur0, cur1 = g0(f"{pre}.all.current", 0), g1(f"{pre}.all.current", 0)
    peak0, peak1 = g0(f"{pre}.all.peak", 0), g1(f"{pre}.all.peak", 0)
    reset = _peak_reset(before, after)

    def delta(key):
        if not native or key not in after:
            return None
        d = after[key] - before.get(key, 0)
        return d if d >= 0 else None  # reset_accumulated_memory_stats in between

    exact, bound, unbounded = True, None, False
    peak = _history_peak(torch, device, before, after) if kind == "allocated" and native \
        else None
    if peak is not None:
        pass  # replayed from the trace: exact
    elif reset:
        # What PyTorch saw since the reset is the region's, and so are the
        # bytes live at both ends; before the reset, anything.
        peak, exact, unbounded = max(cur0, cur1, peak1), False, True
    elif peak1 > peak0:
        peak = peak1  # a new high since the last reset: reached inside
    else:
        # No new high: the old peak bounds the region's, which reached at
        # least the bytes live at either end.
        peak = max(cur0, cur1)
        bound = max(peak, peak0)
        exact = bound == peak  # the old peak was live at one end
    view = MemoryView(source=f"PyTorch ({kind})", at_open=cur0, at_close=cur1, peak=peak,
                      allocated=delta(f"{pre}.all.allocated"), freed=delta(f"{pre}.all.freed"),
                      allocs=delta(f"{count}.all.allocated"), frees=delta(f"{count}.all.freed"),
                      peak_exact=exact, peak_bound=bound)
    return view, unbounded


def _torch_active(before, after):
    keys = ("allocated_bytes.all.allocated", "reserved_bytes.all.current",
            "allocated_bytes.all.current")
    return any(after.get(k, 0) or before.get(k, 0) for k in keys)


# ---- gpuleak's ----

_frames_cache = {}
_frames_lock = threading.Lock()


def _frames(api, stack):
    """A stack's frames from the runtime, cached by id (ids never change)."""
    if not stack:
        return ()
    with _frames_lock:
        got = _frames_cache.get(stack)
    if got is not None:
        return got
    buf = ctypes.create_string_buffer(8192)
    n = api.profile_frames(stack, buf, len(buf))
    if n >= len(buf):
        buf = ctypes.create_string_buffer(n + 1)
        n = api.profile_frames(stack, buf, len(buf))
    frames = tuple(buf.value.decode(errors="replace").splitlines()) if n > 0 else ()
    with _frames_lock:
        if len(_frames_cache) > 10000:
            _frames_cache.clear()
        _frames_cache[stack] = frames
    return frames


def _gpuleak_view(api, d, sites):
    return MemoryView(
        source="gpuleak", at_open=d.live_at_open, at_close=d.live_at_close, peak=d.peak,
        allocated=d.allocated, freed=d.freed, allocs=d.allocs, frees=d.frees,
        peak_time_s=d.peak_ns / 1e9, peak_seq=d.peak_seq,
        top_sites=tuple(Site(d.sites[i].bytes, d.sites[i].blocks,
                             _frames(api, d.sites[i].stack) if sites else ())
                        for i in range(min(d.nsites, _gl._PROFILE_SITES))),
        sites_exact=not (d.flags & 1) and bool(sites))


# ---- the region ----

_local = threading.local()
# The lists of regions open per thread (_open_regions): a region may end on
# another thread than its own, which takes it out of its own thread's list.
_nest_lock = threading.Lock()
_warned = False
_warn_lock = threading.Lock()


class _Sentinel:
    def __init__(self, what):
        self.what = what

    def __repr__(self):
        return f"<{self.what}>"


# What a region holds of PyTorch's counters at its start, besides a reading:
# PyTorch's CUDA was not in use yet (its counters were 0), or reading failed.
_NOT_STARTED = _Sentinel("PyTorch's CUDA not in use")
_READ_FAILED = _Sentinel("PyTorch's counters not read")


class _Region:
    """One entry into a profile object: what its end needs.  The name is
    kept here, so that the regions nested in it name their parent whatever
    becomes of it."""
    __slots__ = ("name", "depth", "parent", "region", "api", "torch0", "t0", "thread", "tid",
                 "nest", "slot", "error")

    def __init__(self, name):
        self.name = name
        self.depth, self.parent = 0, None
        self.region, self.api, self.torch0 = -1, None, _NOT_STARTED
        self.t0 = time.perf_counter()
        self.thread, self.tid = "", 0
        self.nest = None   # its thread's list of open regions (_open_regions)
        self.slot = None   # its profile object's part for its thread (_Slot)
        self.error = None  # why it could not begin, if something failed


class _Slot:
    """A profile object's part for one thread: its regions open on the thread
    (innermost last) and the thread's last result."""
    __slots__ = ("open", "result")

    def __init__(self):
        self.open, self.result = [], None


def _remove(items, item):
    """Take item out of a list, by identity (the innermost such entry)."""
    for i in range(len(items) - 1, -1, -1):
        if items[i] is item:
            del items[i]
            return True
    return False


def _open_regions():
    """This thread's open regions (_Region), outermost first: every profile
    object's."""
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def _end_region(api, region, prof, devs, sites=True):
    """The runtime's gpuleak_profile_end: the devices filled in devs
    (prof.ndevices: all that had activity), -1 when it failed.  Without
    sites the runtime walks no block: ending costs little."""
    return api.profile_end(region, ctypes.byref(prof), devs, _MAX_DEVICES,
                           sites=_gl._PROFILE_SITES if sites else 0)


def _warn_once(message):
    global _warned
    with _warn_lock:
        if _warned:
            return
        _warned = True
    warnings.warn(message, RuntimeWarning, stacklevel=4)


def _caller_name(depth=2):
    try:
        f = sys._getframe(depth)
        return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"
    except Exception:
        return "region"


def _devices_text(devices):
    return (f"device {devices[0]}" if len(devices) == 1
            else "devices " + ", ".join(str(d) for d in devices))


class profile:
    """Profile the GPU memory of a region: a context manager and a decorator.

        with gpuleak.profile("step") as p:
            ...
        p.result                      # a ProfileResult (print it for a table)

        @gpuleak.profile              # each call a region named after the function;
        def f(): ...                  # f.last_profile: the last call's ProfileResult

        @gpuleak.profile("fwd", sites=False)
        def forward(x): ...

    name: the region's name (1 to 63 bytes kept for gpuleak's messages; the
    summary groups by it); default: the file and line that opened it, or the
    decorated function's qualified name.  sites: name the sites at the peak
    (symbolizing their stacks at the end; the stacks are cached by id).

    Regions nest and overlap, on one thread or several (each measures the
    whole process while it is open; see the module's documentation).  One
    object may be entered on several threads at once, and again on one
    thread while it is open there (recursion): each entry is a region of its
    own, and an exit ends the innermost one its thread entered.  An exit on a
    thread that entered none ends the one another thread entered last (a
    region handed over to another thread to end).  result: the last
    ProfileResult of a region the calling thread began or ended; where it has
    none, the last of any thread; None before any ended.  Every region that
    ends is added to profile.summary().  Entering and leaving never raise for
    the profile's sake: what failed is in the result's note.

    As a decorator: a plain function's call is a region; a coroutine
    function's (async def: the wrapper is one too) is the call's awaiting;
    a generator function's or an async generator function's is the whole
    iteration, from the first next() to its exhaustion or close().  The
    wrapper's last_profile is the last call's result, set also when the call
    raised."""

    def __new__(cls, name=None, **kwargs):
        if callable(name) and not isinstance(name, str):  # @gpuleak.profile
            return cls(None, **kwargs)(name)
        return super().__new__(cls)

    def __init__(self, name=None, *, sites=True):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"gpuleak.profile: a name is a string, not {type(name).__name__}")
        self.name = name
        self.sites = sites
        self._lock = threading.Lock()
        self._tls = threading.local()   # its _Slot on each thread
        self._open = []                 # every thread's open regions, in the order begun
        self._last = None               # the last result of any thread

    @property
    def result(self):
        """The last ProfileResult of a region the calling thread began or
        ended; where it has none, the last of any thread (None before any)."""
        slot = getattr(self._tls, "slot", None)
        mine = slot.result if slot is not None else None
        return mine if mine is not None else self._last

    def _slot(self):
        slot = getattr(self._tls, "slot", None)
        if slot is None:
            slot = self._tls.slot = _Slot()
        return slot

    # -- as a context manager --

    def __enter__(self):
        st = _Region(self.name or _caller_name())
        try:
            self._begin(st)
        except Exception as e:  # never break the program for a profile
            st.error = f"{type(e).__name__}: {e}"
        with self._lock:
            st.slot = self._slot()
            st.slot.open.append(st)
            self._open.append(st)
        return self

    def _begin(self, st):
        nest = _open_regions()
        with _nest_lock:
            st.depth = len(nest)
            st.parent = nest[-1].name if nest else None
        st.nest = nest
        st.thread, st.tid = threading.current_thread().name, threading.get_native_id()
        api = _gl._runtime()
        if api.profile_begin is not None and api.running is not None and api.running():
            st.api = api
        torch = _torch_module()
        if torch is not None:
            got = _torch_read(torch)
            st.torch0 = _READ_FAILED if got is None else got
        st.t0 = time.perf_counter()
        if st.api is not None:
            st.region = st.api.profile_begin(st.name.encode(errors="replace")[:_NAME_MAX])
        with _nest_lock:
            nest.append(st)

    def _claim(self):
        """The region this exit ends, taken out of every list, so that no
        other exit ends it too: the calling thread's innermost, else the one
        another thread began last; None when none is open."""
        with self._lock:
            slot = getattr(self._tls, "slot", None)
            if slot is not None and slot.open:
                st = slot.open.pop()
            elif self._open:
                st = self._open[-1]  # handed over: begun on another thread
                _remove(st.slot.open, st)
            else:
                return None
            _remove(self._open, st)
        if st.nest is not None:
            with _nest_lock:
                _remove(st.nest, st)
        return st

    def __exit__(self, exc_type, exc, tb):
        st = self._claim()
        if st is None:
            return False
        try:
            result = self._finish(st)
        except Exception as e:  # never break the program for a profile
            result = ProfileResult(name=st.name, source="",
                                   note=f"gpuleak.profile failed: {type(e).__name__}: {e}",
                                   thread_id=st.tid, thread_name=st.thread, depth=st.depth,
                                   parent=st.parent)
        with self._lock:
            st.slot.result = result       # the thread that began it
            self._slot().result = result  # and this one, if another
            self._last = result
        try:
            _summary.add(result)
        except Exception:  # never break the program for a profile
            pass
        return False  # the body's exception, if any, goes on

    def _finish(self, st):
        api, region = st.api, st.region
        prof, devs, n = _gl._Profile(), (_gl._ProfileDevice * _MAX_DEVICES)(), -1
        if region >= 0:
            n = _end_region(api, region, prof, devs, self.sites)
        duration = time.perf_counter() - st.t0
        notes = []
        if st.error is not None:
            notes.append(f"gpuleak.profile could not begin the region: {st.error}")
        torch = _torch_module()
        before = after = None
        torch_note = None
        if torch is not None:
            after = _torch_read(torch)
            if st.torch0 is _NOT_STARTED:
                before = {}  # PyTorch's CUDA started inside the region: its counters were 0
            elif st.torch0 is not _READ_FAILED:
                before = st.torch0
            failed = [w for w, v in (("began", before), ("ended", after)) if v is None]
            if failed:
                torch_note = (f"PyTorch's counters could not be read when the region "
                              f"{' or '.join(failed)}: no tensor view")
        by_device = {}
        if n >= 0:
            if prof.ndevices > n:
                notes.append(f"{prof.ndevices - n} devices left out")
            for i in range(n):
                by_device[devs[i].device] = {"driver": _gpuleak_view(api, devs[i], self.sites)}
        elif region >= 0:
            notes.append("the runtime could not end the region (see its log)")
        elif api is not None:
            notes.append("gpuleak could not begin the region (see its log)")
        elif st.error is None:
            runtime = _gl._runtime()
            if runtime.running is not None and runtime.running() and \
                    runtime.profile_begin is None:
                why = "this gpuleak's runtime has no profiling (client API before version 3)"
            else:
                why = "not running under gpuleak"
            if torch is not None and after != {}:
                notes.append(f"{why}: PyTorch's own counters, no sites")
                _warn_once(f"gpuleak.profile: {why}; the profiles are PyTorch's own "
                           f"counters (its tensors, and its reserved memory as the driver's "
                           f"view), without sites")
            else:
                notes.append(f"{why}, and PyTorch's CUDA is not in use: nothing to measure")
                _warn_once(f"gpuleak.profile: {why}, and PyTorch's CUDA is not in use: "
                           f"nothing is measured")
        if torch is not None:
            if _torch_uncached(torch):
                notes.append("PyTorch's caching allocator is off: each tensor is a block of "
                             "its own, and PyTorch counts none of them" +
                             ("" if n >= 0 else " (run under gpuleak to measure them)"))
            elif torch_note is not None:
                notes.append(torch_note)
            elif after:
                backend = _torch_backend(torch)
                if backend != "native":
                    notes.append(
                        f"PyTorch's allocator backend is {backend}, not its caching allocator: "
                        + ("the driver view counts what that backend asks CUDA for (with "
                           "cudaMallocAsync, each tensor's stream-ordered allocation from "
                           "CUDA's memory pool), not PyTorch's reserved memory" if n >= 0 else
                           "the driver view is what that backend reports as reserved (with "
                           "cudaMallocAsync, CUDA's memory pool's), not segments of PyTorch's "
                           "cache") +
                        "; PyTorch counts no bytes or blocks allocated and freed there")
                reset = []
                for d, c in after.items():
                    b = before.get(d, {})
                    if not _torch_active(b, c):
                        continue
                    views = by_device.setdefault(d, {})
                    views["tensors"], unbounded = _torch_view(torch, d, b, c, "allocated",
                                                              backend)
                    if n < 0:
                        views["driver"], unbounded_r = _torch_view(torch, d, b, c, "reserved",
                                                                   backend)
                        unbounded = unbounded or unbounded_r
                    if unbounded:
                        reset.append(d)
                if reset:
                    notes.append(f"PyTorch's peak was reset inside the region "
                                 f"(reset_peak_memory_stats) on {_devices_text(reset)}: a peak "
                                 f"from its counters there that is not exact has no upper bound")
        source = "gpuleak" if n >= 0 else "PyTorch" if by_device else ""
        order = sorted(by_device, key=lambda d: (d < 0, -d if d < 0 else d))
        devices = tuple(DeviceProfile(d, by_device[d].get("driver"), by_device[d].get("tensors"))
                        for d in order)
        return ProfileResult(
            name=st.name, source=source, devices=devices, note="; ".join(notes),
            duration_s=prof.duration_ns / 1e9 if n >= 0 else duration,
            thread_id=prof.tid if n >= 0 else st.tid,
            thread_name=st.thread, depth=st.depth, parent=st.parent,
            other_thread_events=prof.other_thread_events if n >= 0 else None)

    # -- as a decorator --

    def __call__(self, func):
        if not callable(func):
            raise TypeError("gpuleak.profile(...) decorates a function")
        name = self.name or getattr(func, "__qualname__", None) or repr(func)
        if inspect.isasyncgenfunction(func):
            wrapper = _async_generator_wrapper(func, name, self.sites)
        elif inspect.iscoroutinefunction(func):
            wrapper = _coroutine_wrapper(func, name, self.sites)
        elif inspect.isgeneratorfunction(func):
            wrapper = _generator_wrapper(func, name, self.sites)
        else:
            wrapper = _function_wrapper(func, name, self.sites)
        wrapper.last_profile = None
        return wrapper

    summary = staticmethod(profile_summary)


# The decorator's wrappers: each call a profile object of its own, its result
# the wrapper's last_profile, even when the call raised.

def _function_wrapper(func, name, sites):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        region = profile(name, sites=sites)
        try:
            with region:
                return func(*args, **kwargs)
        finally:
            wrapper.last_profile = region.result
    return wrapper


def _coroutine_wrapper(func, name, sites):
    @functools.wraps(func)
    async def wrapper(*args, **kwargs):
        region = profile(name, sites=sites)
        try:
            with region:
                return await func(*args, **kwargs)
        finally:
            wrapper.last_profile = region.result
    return wrapper


def _generator_wrapper(func, name, sites):
    # A generator function itself: nothing runs, and no region begins, before
    # the first next().
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        region = profile(name, sites=sites)
        try:
            with region:
                return (yield from func(*args, **kwargs))
        finally:
            wrapper.last_profile = region.result
    return wrapper


def _async_generator_wrapper(func, name, sites):
    # An async generator function itself, forwarding asend, athrow and aclose
    # (there is no "yield from" for them).
    @functools.wraps(func)
    async def wrapper(*args, **kwargs):
        region = profile(name, sites=sites)
        try:
            with region:
                agen = func(*args, **kwargs)
                try:
                    value = await agen.__anext__()
                    while True:
                        try:
                            sent = yield value
                        except GeneratorExit:
                            raise
                        except BaseException as e:
                            value = await agen.athrow(e)
                        else:
                            value = await agen.asend(sent)
                except StopAsyncIteration:
                    pass
                finally:
                    await agen.aclose()
        finally:
            wrapper.last_profile = region.result
    return wrapper

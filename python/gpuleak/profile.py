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
  Its peak is exact when PyTorch's own peak counter rose during the region
  (the region reached a new high since the last reset_peak_memory_stats: its
  peak is then that counter); otherwise, when PyTorch records its allocation
  history with a trace (torch.cuda.memory._record_memory_history()), the
  region's entries are replayed and the result is exact if they account for
  every byte PyTorch's counters say was allocated and freed; otherwise
  peak_exact is False and the peak lies between `peak` and `peak_bound`.

Without gpuleak: a warning (once), and the views PyTorch's counters give (the
tensors', and its reserved memory as the driver view), with the same rules of
exactness, and no sites.  Without PyTorch either: an empty result that says
why.  Never raises for the program's sake: a failure to read a view leaves it
out, with a note.
"""
import ctypes
import dataclasses
import functools
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
    between peak and peak_bound.  peak_time_s: seconds after the region began
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
        if self.peak_bound is None:
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
                if not v.peak_exact:
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
          "segment.all.allocated", "segment.all.freed")


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


def _torch_view(torch, device, before, after, kind):
    """A view from PyTorch's counters: kind "allocated" (tensors) or
    "reserved" (segments).  The peak is exact when PyTorch's own peak rose
    during the region; else from its history (tensors), else a bound."""
    pre = "allocated_bytes" if kind == "allocated" else "reserved_bytes"
    count = "allocation" if kind == "allocated" else "segment"
    g0, g1 = before.get, after.get
    cur0, cur1 = g0(f"{pre}.all.current", 0), g1(f"{pre}.all.current", 0)
    peak0, peak1 = g0(f"{pre}.all.peak", 0), g1(f"{pre}.all.peak", 0)

    def delta(key):
        if key not in after:
            return None
        d = after[key] - before.get(key, 0)
        return d if d >= 0 else None  # reset_accumulated_memory_stats in between

    exact, bound = True, None
    if peak1 > peak0:
        peak = peak1  # a new high since the last reset: reached inside
    else:
        peak = _history_peak(torch, device, before, after) if kind == "allocated" else None
        if peak is None:
            exact = False
            # A peak lower than before means it was reset inside: what it
            # saw since is the region's too.
            peak = max(cur0, cur1, peak1 if peak1 < peak0 else 0)
            bound = max(peak, peak0)
            exact = bound == peak  # the old peak was live at one end
    return MemoryView(source=f"PyTorch ({kind})", at_open=cur0, at_close=cur1, peak=peak,
                      allocated=delta(f"{pre}.all.allocated"), freed=delta(f"{pre}.all.freed"),
                      allocs=delta(f"{count}.all.allocated"), frees=delta(f"{count}.all.freed"),
                      peak_exact=exact, peak_bound=bound)


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
_warned = False
_warn_lock = threading.Lock()


def _open_regions():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


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
    whole process while it is open; see the module's documentation).  An
    object may be entered again once it ended, not while it is open.  Every
    region that ends is added to profile.summary()."""

    def __new__(cls, name=None, **kwargs):
        if callable(name) and not isinstance(name, str):  # @gpuleak.profile
            return cls(None, **kwargs)(name)
        return super().__new__(cls)

    def __init__(self, name=None, *, sites=True):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"gpuleak.profile: a name is a string, not {type(name).__name__}")
        self.name = name
        self.sites = sites
        self.result = None
        self._state = None

    # -- as a context manager --

    def __enter__(self):
        if self._state is not None:
            raise RuntimeError("gpuleak.profile: this region is open already (nest another "
                               "gpuleak.profile(...), not the same one)")
        name = self.name or _caller_name()
        stack = _open_regions()
        st = {"name": name, "depth": len(stack), "parent": stack[-1]._state["name"] if stack
              else None, "region": -1, "api": None, "torch0": None, "stack": stack,
              "thread": threading.current_thread().name, "tid": threading.get_native_id()}
        api = _gl._runtime()
        if api.profile_begin is not None and api.running():
            st["api"] = api
        torch = _torch_module()
        if torch is not None:
            st["torch0"] = _torch_read(torch)
        st["t0"] = time.perf_counter()
        if st["api"] is not None:
            st["region"] = st["api"].profile_begin(name.encode()[:_NAME_MAX])
        self._state = st
        stack.append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        st = self._state
        if st is None:
            return False
        try:
            self.result = self._finish(st)
        except Exception as e:  # never break the program for a profile
            self.result = ProfileResult(name=st["name"], source="",
                                        note=f"gpuleak.profile failed: {type(e).__name__}: {e}")
        finally:
            self._state = None
            # The opener's stack: a region may end on another thread.
            if self in st["stack"]:
                st["stack"].remove(self)
        _summary.add(self.result)
        return False  # the body's exception, if any, goes on

    def _finish(self, st):
        api, region = st["api"], st["region"]
        prof, devs, n = _gl._Profile(), (_gl._ProfileDevice * _MAX_DEVICES)(), -1
        if region >= 0:
            n = api.profile_end(region, ctypes.byref(prof), devs, _MAX_DEVICES)
        duration = time.perf_counter() - st["t0"]
        notes = []
        torch = _torch_module()
        before = after = None
        if torch is not None:
            after = _torch_read(torch)
            # PyTorch's CUDA started inside the region: its counters were 0.
            before = st["torch0"] if st["torch0"] is not None else {}
        by_device = {}
        if n >= 0:
            if prof.ndevices > n:
                notes.append(f"{prof.ndevices - n} devices left out")
            for i in range(n):
                by_device[devs[i].device] = {"driver": _gpuleak_view(api, devs[i], self.sites)}
        else:
            if region < 0 and api is not None:
                notes.append("gpuleak could not begin the region (see its log)")
            elif api is None:
                runtime = _gl._runtime()
                if runtime.running is not None and runtime.running() and \
                        runtime.profile_begin is None:
                    why = "this gpuleak's runtime has no profiling (client API before version 3)"
                else:
                    why = "not running under gpuleak"
                if after:
                    notes.append(f"{why}: PyTorch's own counters, no sites")
                    _warn_once(f"gpuleak.profile: {why}; the profiles are PyTorch's own "
                               f"counters (its tensors, and its reserved memory as the driver's "
                               f"view), without sites")
                else:
                    notes.append(f"{why}, and PyTorch's CUDA is not in use: nothing to measure")
                    _warn_once(f"gpuleak.profile: {why}, and PyTorch's CUDA is not in use: "
                               f"nothing is measured")
        if torch is not None and after:
            if _torch_uncached(torch):
                notes.append("PyTorch's caching allocator is off: each tensor is a block of "
                             "its own, and PyTorch counts none of them" +
                             ("" if n >= 0 else " (run under gpuleak to measure them)"))
            else:
                for d, c in after.items():
                    b = before.get(d, {})
                    if not _torch_active(b, c):
                        continue
                    views = by_device.setdefault(d, {})
                    views["tensors"] = _torch_view(torch, d, b, c, "allocated")
                    if n < 0:
                        views["driver"] = _torch_view(torch, d, b, c, "reserved")
        source = "gpuleak" if n >= 0 else "PyTorch" if by_device else ""
        order = sorted(by_device, key=lambda d: (d < 0, -d if d < 0 else d))
        devices = tuple(DeviceProfile(d, by_device[d].get("driver"), by_device[d].get("tensors"))
                        for d in order)
        return ProfileResult(
            name=st["name"], source=source, devices=devices, note="; ".join(notes),
            duration_s=prof.duration_ns / 1e9 if n >= 0 else duration,
            thread_id=prof.tid if n >= 0 else st["tid"],
            thread_name=st["thread"], depth=st["depth"], parent=st["parent"],
            other_thread_events=prof.other_thread_events if n >= 0 else None)

    # -- as a decorator --

    def __call__(self, func):
        if not callable(func):
            raise TypeError("gpuleak.profile(...) decorates a function")
        name = self.name or getattr(func, "__qualname__", None) or repr(func)
        sites = self.sites

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            region = profile(name, sites=sites)
            with region:
                value = func(*args, **kwargs)
            wrapper.last_profile = region.result
            return value

        wrapper.last_profile = None
        return wrapper

    summary = staticmethod(profile_summary)

"""GPU memory leak checks from Python: the client API of gpuleak (gpuleak.h).

Under gpuleak (``gpuleak python script.py``) these calls reach the runtime
injected into the process; without it every call is a cheap no-op: running()
is False, checks find nothing, no_leaks() never fails.

    import gpuleak

    with gpuleak.no_leaks():          # AssertionError listing the loss records
        train_one_step(model)         # if this block leaked GPU memory

    gpuleak.checkpoint("warm")
    ...
    counts = gpuleak.count_leaks(since="warm")
    assert counts.definite.blocks == 0, gpuleak.leak_report(since="warm")

    with gpuleak.profile("step") as p:  # what the block did to GPU memory
        train_one_step(model)         # (gpuleak/profile.py; without gpuleak,
    print(p.result)                   # PyTorch's own counters)

Pure Python (ctypes), no compiled extension.  See doc/manual.md, section 5,
"Checks from the program: checkpoints, test suites, pools".
"""
import contextlib
import ctypes
import dataclasses
import gc
import os
import sys
import threading

__all__ = [
    "KINDS", "MODES", "Amount", "LeakCounts", "GpuLeakError", "running", "checkpoint",
    "leak_check", "leak_report", "count_leaks", "ignore", "disable", "enable", "disabled",
    "empty_caches", "no_leaks", "profile", "profile_summary", "ProfileResult", "DeviceProfile",
    "MemoryView", "Site", "ProfileSummary", "RegionStats",
]

#: Leak kinds, in the order of gpuleak.h's enum gpuleak_kind.
KINDS = ("definite", "indirect", "possible", "reachable", "cached", "suppressed")
#: Check modes, in the order of gpuleak.h's enum gpuleak_check_mode (Valgrind's
#: DO_LEAK_CHECK, DO_NEW_LEAK_CHECK, DO_ADDED_LEAK_CHECK, DO_CHANGED_LEAK_CHECK).
MODES = ("full", "new", "added", "changed")
_NAME_MAX = 63
_API_ENV = "GPULEAK_CLIENT_API"
_API_MAGIC = 0x47504C4B


class _Counts(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_ulonglong * len(KINDS)),
                ("blocks", ctypes.c_ulonglong * len(KINDS))]


_RUNNING = ctypes.CFUNCTYPE(ctypes.c_int)
_CHECKPOINT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p)
_LEAK_CHECK = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p,
                               ctypes.c_size_t)
_COUNT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_Counts))
_IGNORE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_TRACKING = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
_POOL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_size_t, ctypes.c_char_p)
_FW_USAGE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_ulonglong,
                             ctypes.c_ulonglong)
_FW_SITE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulonglong,
                            ctypes.c_ulonglong)
_GROWTH = ctypes.CFUNCTYPE(ctypes.c_int)

#: gpuleak.h's GPULEAK_PROFILE_SITES: sites at the peak, per device.
_PROFILE_SITES = 10


class _ProfileSite(ctypes.Structure):
    """struct gpuleak_profile_site."""
    _fields_ = [("bytes", ctypes.c_ulonglong), ("blocks", ctypes.c_ulonglong),
                ("stack", ctypes.c_uint), ("reserved_", ctypes.c_uint)]


class _ProfileDevice(ctypes.Structure):
    """struct gpuleak_profile_device."""
    _fields_ = [("device", ctypes.c_int), ("flags", ctypes.c_uint),
                ("live_at_open", ctypes.c_ulonglong), ("live_at_close", ctypes.c_ulonglong),
                ("peak", ctypes.c_ulonglong), ("peak_seq", ctypes.c_ulonglong),
                ("peak_ns", ctypes.c_ulonglong), ("allocated", ctypes.c_ulonglong),
                ("freed", ctypes.c_ulonglong), ("allocs", ctypes.c_ulonglong),
                ("frees", ctypes.c_ulonglong), ("nsites", ctypes.c_uint),
                ("reserved_", ctypes.c_uint), ("sites", _ProfileSite * _PROFILE_SITES)]


class _Profile(ctypes.Structure):
    """struct gpuleak_profile."""
    _fields_ = [("duration_ns", ctypes.c_ulonglong), ("other_thread_events", ctypes.c_ulonglong),
                ("tid", ctypes.c_uint), ("ndevices", ctypes.c_int)]


_PROFILE_BEGIN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p)
# profile_end(region, out, out_size, devices, device_size, max_devices, max_sites):
# the sizes are the caller's structs' (gpuleak.h: the runtime writes at most them).
_PROFILE_END = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Profile),
                                ctypes.c_size_t, ctypes.POINTER(_ProfileDevice), ctypes.c_size_t,
                                ctypes.c_int, ctypes.c_int)
_PROFILE_FRAMES = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t)


def _profile_end_call(raw):
    """api.profile_end(region, out, devices, max_devices, sites=_PROFILE_SITES), as
    gpuleak.h's gpuleak_profile_end_sites(): out (byref(_Profile()) or None) and
    devices (a _ProfileDevice array or None) sized by this module's structs; sites
    per device up to _PROFILE_SITES, 0 for none (the runtime then walks no block).
    Returns the devices filled, or -1."""
    def profile_end(region, out, devices, max_devices, sites=_PROFILE_SITES):
        return raw(region, out, ctypes.sizeof(_Profile), devices, ctypes.sizeof(_ProfileDevice),
                   max_devices, sites)
    return profile_end


class _Table(ctypes.Structure):
    """struct gpuleak_api, version 3 (framework_usage to growth_checkpoints are
    version 2's, the profile_* members version 3's)."""
    _fields_ = [("magic", ctypes.c_uint), ("version", ctypes.c_uint), ("running", _RUNNING),
                ("checkpoint", _CHECKPOINT), ("leak_check", _LEAK_CHECK), ("count_leaks", _COUNT),
                ("ignore", _IGNORE), ("tracking", _TRACKING), ("pool", _POOL),
                ("framework_usage", _FW_USAGE), ("framework_site", _FW_SITE),
                ("growth_checkpoints", _GROWTH), ("profile_begin", _PROFILE_BEGIN),
                ("profile_end", _PROFILE_END), ("profile_frames", _PROFILE_FRAMES)]


class _Api:
    """The runtime's entry points, or None for each when not under gpuleak."""

    def __init__(self):
        self.running = self.checkpoint = self.leak_check = self.count_leaks = None
        self.ignore = self.tracking = self.pool = None
        # Version 2 (a runtime without them: None, and frameworks go unreported).
        self.framework_usage = self.framework_site = self.growth_checkpoints = None
        # Version 3 (without them, gpuleak.profile falls back to PyTorch's counters).
        self.profile_begin = self.profile_end = self.profile_frames = None
        try:
            process = ctypes.CDLL(None)
        except OSError:
            return
        # The launcher preloads the runtime: its exported names are in the
        # process's global scope.
        try:
            self.running = _RUNNING(("gpuleak_runtime_running", process))
            self.checkpoint = _CHECKPOINT(("gpuleak_runtime_checkpoint", process))
            self.leak_check = _LEAK_CHECK(("gpuleak_runtime_leak_check", process))
            self.count_leaks = _COUNT(("gpuleak_runtime_count_leaks", process))
            self.ignore = _IGNORE(("gpuleak_runtime_ignore", process))
            self.tracking = _TRACKING(("gpuleak_runtime_tracking", process))
            self.pool = _POOL(("gpuleak_runtime_pool", process))
        except AttributeError:
            self.running = None
        if self.running is not None:
            try:
                self.framework_usage = _FW_USAGE(("gpuleak_runtime_framework_usage", process))
                self.framework_site = _FW_SITE(("gpuleak_runtime_framework_site", process))
                self.growth_checkpoints = _GROWTH(("gpuleak_runtime_growth_checkpoints", process))
            except AttributeError:
                self.framework_usage = self.framework_site = self.growth_checkpoints = None
            try:
                self.profile_begin = _PROFILE_BEGIN(("gpuleak_runtime_profile_begin", process))
                self.profile_end = _profile_end_call(
                    _PROFILE_END(("gpuleak_runtime_profile_end", process)))
                self.profile_frames = _PROFILE_FRAMES(("gpuleak_runtime_profile_frames", process))
            except AttributeError:
                self.profile_begin = self.profile_end = self.profile_frames = None
            return
        # Injected by hand without LD_PRELOAD: the table the runtime publishes
        # in its environment (read through libc: os.environ is a copy made at
        # start-up, perhaps before CUDA loaded the runtime), for this program
        # image only (gpuleak.h, gpuleak_image_id).
        try:
            process.getenv.restype = ctypes.c_char_p
            value = process.getenv(_API_ENV.encode())
            if not value:
                return
            image, addr = value.decode().split(":0x")
            if len(image) != 8 or int(image, 16) != _image_id(process):
                return
            table = _Table.from_address(int(addr, 16))
        except (AttributeError, ValueError):
            return
        if table.magic != _API_MAGIC or table.version < 1:
            return
        for name in ("running", "checkpoint", "leak_check", "count_leaks", "ignore", "tracking",
                     "pool"):
            setattr(self, name, getattr(table, name))
        if table.version >= 2:
            for name in ("framework_usage", "framework_site", "growth_checkpoints"):
                setattr(self, name, getattr(table, name))
        if table.version >= 3:
            self.profile_begin = table.profile_begin
            self.profile_end = _profile_end_call(table.profile_end)
            self.profile_frames = table.profile_frames

    def found(self):
        return self.running is not None


def _image_id(process):
    """gpuleak.h's gpuleak_image_id(): 32 bits mixed from this program image's
    AT_RANDOM bytes."""
    process.getauxval.restype = ctypes.c_ulong
    process.getauxval.argtypes = [ctypes.c_ulong]
    address = process.getauxval(25)  # AT_RANDOM
    if not address:
        return 0
    r = ctypes.string_at(address, 16)
    m = (1 << 64) - 1
    a, b = int.from_bytes(r[:8], "little"), int.from_bytes(r[8:], "little")
    x = a ^ ((b * 0x9E3779B97F4A7C15) & m)
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & m
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & m
    x ^= x >> 33
    return x >> 32


_api = None
_api_lock = threading.Lock()


def _runtime():
    """The runtime's entry points.  Not finding them is not remembered: the
    runtime may arrive later (loaded by CUDA at cuInit, without LD_PRELOAD)."""
    global _api
    if _api is None:
        with _api_lock:
            if _api is None:
                api = _Api()
                if not api.found():
                    return api
                _api = api
    return _api


@dataclasses.dataclass(frozen=True)
class Amount:
    """Bytes and blocks of one leak kind."""
    bytes: int = 0
    blocks: int = 0

    def __add__(self, other):
        return Amount(self.bytes + other.bytes, self.blocks + other.blocks)

    def __bool__(self):
        return self.blocks > 0


@dataclasses.dataclass(frozen=True)
class LeakCounts:
    """What count_leaks() found, per leak kind."""
    definite: Amount = Amount()
    indirect: Amount = Amount()
    possible: Amount = Amount()
    reachable: Amount = Amount()
    cached: Amount = Amount()
    suppressed: Amount = Amount()

    def total(self, kinds=("definite", "indirect", "possible")):
        """The sum over kinds (names from KINDS)."""
        return sum((getattr(self, _kind(k)) for k in kinds), Amount())


class GpuLeakError(AssertionError):
    """Raised by no_leaks() when the code it wraps leaked GPU memory.  The
    message holds gpuleak's loss records."""

    def __init__(self, message, counts=None):
        super().__init__(message)
        self.counts = counts


def _kind(name):
    if name not in KINDS:
        raise ValueError(f"gpuleak: unknown leak kind {name!r} (expected one of {', '.join(KINDS)})")
    return name


def _mode(mode):
    if mode not in MODES:
        raise ValueError(f"gpuleak: unknown check mode {mode!r} (expected one of {', '.join(MODES)})")
    return MODES.index(mode)


def _kinds_flag(kinds):
    """gpuleak.h's GPULEAK_KINDS(bits), or 0 for the options' kinds."""
    if kinds is None:
        return 0
    bits = 0
    for k in kinds:
        if _kind(k) != "suppressed":
            bits |= 1 << KINDS.index(k)
    return (bits << 8) | 0x4000


def _name(name, what="checkpoint"):
    if name is None:
        return None
    if not isinstance(name, str) or not name or len(name.encode()) > _NAME_MAX:
        raise ValueError(f"gpuleak: a {what} name must be a string of 1 to {_NAME_MAX} bytes, "
                         f"not {name!r}")
    return name.encode()


def running():
    """True if this process runs under gpuleak: its GPU memory is tracked, or
    will be once it initializes CUDA."""
    api = _runtime()
    return bool(api.running and api.running())


def checkpoint(name):
    """Remember this moment as `name` (1 to 63 bytes; setting it again moves
    it).  Returns True, or False when not running under gpuleak.

    Every checkpoint also tells gpuleak what PyTorch and CuPy say of the memory
    they cache (shown under the LEAK SUMMARY's cached line), and, with
    --growth-checkpoints=K, is where growth is looked for: take one per
    iteration of a training loop, and sites whose memory grew at K
    checkpoints in a row are reported (with caching on, PyTorch's own record
    of its tensors is read for it; see doc/manual.md, "Growth")."""
    encoded = _name(name)
    api = _runtime()
    if not api.checkpoint:
        return False
    _tell_frameworks(api)
    return api.checkpoint(encoded) == 0


def _failed(call, since, api):
    """A call the runtime refused.  Not running any more (the exit report was
    written): a no-op, as without gpuleak.  Else the checkpoint is unknown, or
    the runtime ran out of memory; its log says which."""
    if not api.running():
        return
    if since is not None:
        raise ValueError(f"gpuleak: no checkpoint named {since!r} (set one with "
                         f"gpuleak.checkpoint), or {call} failed: see gpuleak's log")
    raise RuntimeError(f"gpuleak: {call} failed: see gpuleak's log")


def leak_check(mode="full", since=None, kinds=None):
    """Leak check now, printed to gpuleak's log (stderr or --log-file) in the
    style of the exit report; see leak_report() for the arguments.  Returns the
    number of errors among the loss records printed, or None when not running
    under gpuleak."""
    m, encoded = _mode(mode) | _kinds_flag(kinds), _name(since)
    api = _runtime()
    if not api.leak_check or not api.running():
        return None
    errors = api.leak_check(m, encoded, None, 0)
    if errors < 0:
        _failed("leak_check", since, api)
        return None
    return errors


def leak_report(mode="full", since=None, kinds=None, limit=1 << 20):
    """The same check, its report returned as (errors, text) instead of printed.

    mode "full": every outstanding block, or with `since` only those allocated
    after that checkpoint.  "new" / "added" / "changed": the loss records that
    are new / grew / changed compared with the last check (or checkpoint
    `since`), with Valgrind's deltas ("10 (+10) bytes in 1 (+1) blocks").
    kinds: the leak kinds printed and counted as errors (names from KINDS);
    None for gpuleak's --show-leak-kinds and --errors-for-leak-kinds.
    Returns (None, "") when not running under gpuleak."""
    m, encoded = _mode(mode) | _kinds_flag(kinds), _name(since)
    api = _runtime()
    if not api.leak_check or not api.running():
        return None, ""
    buf = ctypes.create_string_buffer(limit)
    errors = api.leak_check(m, encoded, buf, limit)
    if errors < 0:
        _failed("leak_report", since, api)
        return None, ""
    return errors, buf.value.decode(errors="replace")


def count_leaks(since=None):
    """Bytes and blocks per leak kind of the outstanding blocks (those
    allocated after checkpoint `since`, or all), without printing.  All zeros
    when not running under gpuleak."""
    encoded = _name(since)
    api = _runtime()
    if not api.count_leaks or not api.running():
        return LeakCounts()
    c = _Counts()
    if api.count_leaks(encoded, ctypes.byref(c)) < 0:
        _failed("count_leaks", since, api)
        return LeakCounts()
    return LeakCounts(*(Amount(c.bytes[i], c.blocks[i]) for i in range(len(KINDS))))


def _address(obj):
    """An address: an int, a PyTorch tensor (data_ptr()), a CuPy array (.data.ptr)
    or anything with __cuda_array_interface__."""
    if isinstance(obj, int):
        return obj
    if hasattr(obj, "data_ptr"):
        return obj.data_ptr()
    data = getattr(obj, "data", None)
    if data is not None and hasattr(data, "ptr"):
        return data.ptr
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai:
        return cai["data"][0]
    raise TypeError(f"gpuleak: cannot tell the device address of {type(obj).__name__}")


def ignore(obj):
    """Never report the block allocated at obj's address (an int, a tensor, an
    array).  Returns True, or False if gpuleak tracks no block starting there
    (a framework's cached tensor is inside a block, not at its start) or it is
    not running."""
    address = _address(obj)
    api = _runtime()
    return bool(api.ignore and api.ignore(address) == 0)


def disable():
    """Allocations this thread makes from now until enable() are never
    reported.  Nests; returns the depth, or None when not running."""
    api = _runtime()
    if not api.tracking:
        return None
    depth = api.tracking(1)
    return depth if depth >= 0 else None


def enable():
    """Undo one disable().  Returns the depth left, None when not running."""
    api = _runtime()
    if not api.tracking:
        return None
    depth = api.tracking(-1)
    if depth < 0 and api.running():
        raise RuntimeError("gpuleak: enable() without a matching disable()")
    return depth if depth >= 0 else None


@contextlib.contextmanager
def disabled():
    """with gpuleak.disabled(): allocations made inside are never reported."""
    disable()
    try:
        yield
    finally:
        enable()


# ---- frameworks' caches ----

def _torch():
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            return torch
    except Exception:  # a half-imported or broken torch: leave it alone
        pass
    return None


_torch_recording = False
# The last record read: PyTorch's live tensors (count and bytes per device)
# when it was read, and its sites ready to hand over, [(frames text, bytes,
# tensors)].  Stack texts are kept by frames, so that a site seen again is not
# formatted again.
_torch_last_state = None
_torch_last_sites = []
_torch_texts = {}


def _torch_caching(torch):
    """PyTorch's caching allocator is in use (not PYTORCH_NO_CUDA_MEMORY_CACHING)."""
    try:
        return torch.cuda.memory.get_allocator_backend() == "native" and \
            os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "") not in ("1",)
    except Exception:
        return False


def _torch_sites(torch, state):
    """PyTorch's record of its live tensors, summed by Python stack: [(frames
    text, bytes, tensors)].  Recording starts at the first call: tensors made
    before have no stack and are left out.

    Reading the record costs about a millisecond per thousand live tensors, so
    it is read again only when the live tensors' count or bytes (state, from
    PyTorch's counters) changed since the last read: between two such
    checkpoints, memory can only have moved from one site to another without
    growing, which is no growth."""
    global _torch_recording, _torch_last_state, _torch_last_sites
    if not _torch_recording:
        _torch_recording = True
        try:
            torch.cuda.memory._record_memory_history(enabled="state", context="alloc",
                                                     stacks="python")
        except Exception:
            pass
        return []
    if state == _torch_last_state:
        return _torch_last_sites
    try:
        snapshot = torch.cuda.memory._snapshot()
    except Exception:
        return []
    sums = {}
    for segment in snapshot.get("segments", ()):
        for block in segment.get("blocks", ()):
            if block.get("state") != "active_allocated":
                continue
            frames = block.get("frames")
            if not frames:
                continue
            key = tuple((f.get("filename", "?"), f.get("line", 0), f.get("name", "?"))
                        for f in frames)
            site = sums.get(key)
            if site is None:
                sums[key] = site = [0, 0]
            site[0] += block.get("requested_size") or block.get("size", 0)
            site[1] += 1
    if len(_torch_texts) > 100000:  # a program whose stacks never repeat
        _torch_texts.clear()
    sites = []
    for key, (nbytes, tensors) in sums.items():
        text = _torch_texts.get(key)
        if text is None:
            text = _torch_texts[key] = "\n".join("%s:%d:%s" % f for f in key).encode(
                errors="replace")
        sites.append((text, nbytes, tensors))
    _torch_last_state, _torch_last_sites = state, sites
    return sites


def _tell_frameworks(api):
    """Before a checkpoint: each framework's own account of what it caches."""
    if api.framework_usage is None:
        return
    torch = _torch()
    if torch is not None:
        try:
            state = []
            for d in range(torch.cuda.device_count()):
                # One read of PyTorch's counters per device (memory_reserved and
                # memory_allocated would each read them all).
                stats = torch.cuda.memory_stats(d)
                reserved = stats.get("reserved_bytes.all.current", 0)
                allocated = stats.get("allocated_bytes.all.current", 0)
                state.append((allocated, stats.get("allocation.all.current", 0)))
                if reserved:
                    api.framework_usage(b"PyTorch", d, allocated, reserved)
            if api.growth_checkpoints() > 0 and _torch_caching(torch):
                for text, nbytes, tensors in _torch_sites(torch, tuple(state)):
                    api.framework_site(b"PyTorch", text, nbytes, tensors)
        except Exception:  # never break the program for a report
            pass
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            pool = cupy.get_default_memory_pool()
            if pool.total_bytes():
                api.framework_usage(b"CuPy", cupy.cuda.Device().id, pool.used_bytes(),
                                    pool.total_bytes())
        except Exception:
            pass


def empty_caches():
    """Give the memory that frameworks keep cached back to CUDA, so that what
    is left is memory in use: garbage-collects, then for PyTorch frees the
    cuBLAS workspaces and empties the caching allocators of device and pinned
    host memory (as PyTorch's own leak check does), for CuPy frees its pools'
    unused blocks.  Frameworks not
    imported, or whose CUDA is not initialized, are left alone."""
    gc.collect()
    torch = _torch()
    if torch is not None:
        torch.cuda.synchronize()
        clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear:
            clear()
        torch.cuda.empty_cache()
        # Pinned host memory too: .item() and copies to the host go through
        # PyTorch's caching host allocator, which keeps what they used.
        host_empty = getattr(torch._C, "_host_emptyCache", None)
        if host_empty:
            host_empty()
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            cupy.get_default_memory_pool().free_all_blocks()
            cupy.get_default_pinned_memory_pool().free_all_blocks()
        except Exception:
            pass


def _framework_in_use():
    """Bytes each framework counts as in use (its own view, past its cache)."""
    views = {}
    torch = _torch()
    if torch is not None:
        views["PyTorch (torch.cuda.memory_allocated)"] = sum(
            torch.cuda.memory_allocated(d) for d in range(torch.cuda.device_count()))
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            views["CuPy (memory pool used_bytes)"] = cupy.get_default_memory_pool().used_bytes()
        except Exception:
            pass
    return views


_nesting = threading.local()


class no_leaks:
    """with gpuleak.no_leaks(): fail (GpuLeakError, an AssertionError) if the
    code inside leaves GPU memory behind, listing gpuleak's loss records.

    kinds: the leak kinds that count (names from KINDS).  By default every kind
    but suppressed: memory the code allocated and left allocated is what it
    leaked, whether something still points to it (reachable: a tensor kept in a
    global list) or not.  Cached counts only when `empty` is true: after the
    frameworks' caches are emptied (empty_caches()), cached memory allocated
    inside is held by live tensors or arrays.  A framework's own count of
    memory in use (torch.cuda.memory_allocated, CuPy's pool) must not grow
    either, which catches tensors kept alive inside cache segments made before.
    With caching off (PYTORCH_NO_CUDA_MEMORY_CACHING=1) every tensor is a block
    of its own, reported with the stack that made it.

    Does nothing when not running under gpuleak, and checks nothing when the
    body raises.  Blocks nest; each checks its own part."""

    def __init__(self, kinds=None, empty=True):
        if kinds is None:
            kinds = ("definite", "indirect", "possible", "reachable") + (("cached",) if empty else ())
        self.kinds = tuple(_kind(k) for k in kinds)
        self.empty = empty
        self.name = None

    def __enter__(self):
        if not running():
            return self
        if self.empty:
            empty_caches()
        self.before = _framework_in_use()
        # One checkpoint per thread and nesting depth, reused: the runtime
        # keeps every checkpoint it was given.
        depth = getattr(_nesting, "depth", 0)
        name = f"gpuleak.no_leaks.{threading.get_ident() % 10**12}.{depth}"
        if checkpoint(name):
            self.name = name
            _nesting.depth = depth + 1
        return self

    def __exit__(self, exc_type, exc, tb):
        __tracebackhide__ = True
        if self.name is None:
            return False
        _nesting.depth -= 1
        if exc_type is not None or not running():
            return False
        if self.empty:
            empty_caches()
        counts = count_leaks(since=self.name)
        leaked = counts.total(self.kinds)
        grew = {view: now - self.before.get(view, 0)
                for view, now in _framework_in_use().items() if now > self.before.get(view, 0)}
        if not leaked and not grew:
            return False
        lines = []
        if leaked:
            lines.append(f"gpuleak: {leaked.bytes:,} bytes in {leaked.blocks:,} blocks leaked "
                         f"({', '.join(self.kinds)}):")
            _, text = leak_report("full", since=self.name, kinds=self.kinds)
            lines.append(text.rstrip())
        for view, delta in grew.items():
            lines.append(f"gpuleak: {view} grew by {delta:,} bytes: tensors or arrays made here "
                         f"are still alive")
        raise GpuLeakError("\n".join(lines), counts)


# Imported last: it builds on the entry points and framework helpers above.
from .profile import (  # noqa: E402
    DeviceProfile, MemoryView, ProfileResult, ProfileSummary, RegionStats, Site, profile,
    profile_summary)

# SPDX-License-Identifier: MIT
"""The Python package (python/gpuleak) and its pytest plugin, without a GPU.

Each scenario runs in a fresh interpreter: without gpuleak, over a stand-in
runtime (tests/python/fake_runtime.c, whose "blocks" the test makes through
ctypes), and over the real runtime preloaded in a process that never starts
CUDA.  Run by tests/python.test, which sets GPULEAK_BUILDDIR and GPULEAK_SRCDIR.
"""
import os
import subprocess
import sys
import textwrap

import pytest

BUILD = os.environ.get("GPULEAK_BUILDDIR", ".")
SRC = os.environ.get("GPULEAK_SRCDIR", ".")
FAKE = os.path.join(BUILD, "tests", "python", ".libs", "libfake_gpuleak.so")
REAL = os.path.join(BUILD, "lib", ".libs", "libgpuleak.so")


def run(args, preload=None, cwd=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPULEAK_") and k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH")}
    env["PYTHONPATH"] = os.path.join(SRC, "python")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if preload:
        env["LD_PRELOAD"] = preload
    return subprocess.run([sys.executable] + args, env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def run_code(code, preload=None, prelude=""):
    r = run(["-c", textwrap.dedent(prelude) + textwrap.dedent(code)], preload=preload)
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return r


def test_noop_without_gpuleak():
    run_code("""
        import gpuleak
        assert gpuleak.running() is False
        assert gpuleak.checkpoint("a") is False
        assert gpuleak.leak_check() is None
        assert gpuleak.leak_report("added", since="a") == (None, "")
        c = gpuleak.count_leaks(since="a")
        assert c == gpuleak.LeakCounts() and not c.total(gpuleak.KINDS)
        assert gpuleak.ignore(0x1000) is False
        assert gpuleak.disable() is None and gpuleak.enable() is None
        with gpuleak.disabled():
            pass
        with gpuleak.no_leaks():
            pass
    """)


def test_arguments_checked_even_without_gpuleak():
    run_code("""
        import gpuleak
        def raises(f, *a, **k):
            try:
                f(*a, **k)
            except ValueError as e:
                return str(e)
            raise AssertionError(f"{f.__name__}{a}{k} did not raise")
        assert "1 to 63 bytes" in raises(gpuleak.checkpoint, "")
        assert "1 to 63 bytes" in raises(gpuleak.checkpoint, "x" * 64)
        assert "1 to 63 bytes" in raises(gpuleak.count_leaks, since=5)
        assert "unknown check mode 'everything'" in raises(gpuleak.leak_report, "everything")
        assert "unknown leak kind 'lost'" in raises(gpuleak.leak_report, kinds=["lost"])
        with_kinds = raises(lambda: gpuleak.no_leaks(kinds=["lost"]).__enter__())
        assert "unknown leak kind" in with_kinds
        try:
            gpuleak.ignore(object())
        except TypeError as e:
            assert "cannot tell the device address of object" in str(e)
        else:
            raise AssertionError("ignore(object()) did not raise")
    """)


FAKE_PRELUDE = """
    import ctypes, gpuleak
    lib = ctypes.CDLL(None)
    alloc, free = lib.gpuleak_fake_alloc, lib.gpuleak_fake_free
"""


def test_no_leaks_catches_a_leak():
    run_code(prelude=FAKE_PRELUDE, code="""
        alloc(1000)  # before: not the block's business
        try:
            with gpuleak.no_leaks():
                alloc(4096)
        except gpuleak.GpuLeakError as e:
            text = str(e)
            assert isinstance(e, AssertionError)
            assert e.counts.definite == gpuleak.Amount(4096, 1), e.counts
            assert text.startswith("gpuleak: 4,096 bytes in 1 blocks leaked (definite, indirect, "
                                   "possible, reachable, cached):\\n"), text
            # The report asked for: full, since the block's checkpoint, with its kinds.
            mode = 0 | 0x4000 | (0x1F << 8)
            assert f"Leak check (fake, mode {mode}): 4096 bytes in 1 blocks" in text, text
        else:
            raise AssertionError("no GpuLeakError")
    """, preload=FAKE)


def test_no_leaks_passes_clean_code_and_keeps_exceptions():
    run_code(prelude=FAKE_PRELUDE, code="""
        with gpuleak.no_leaks(kinds=["definite"]):
            free(alloc(64))
        try:
            with gpuleak.no_leaks():
                alloc(64)
                raise KeyError("the body's own error")
        except KeyError:
            pass
        # Nested blocks each check their own part.
        try:
            with gpuleak.no_leaks():
                with gpuleak.no_leaks():
                    free(alloc(8))
                alloc(16)
        except gpuleak.GpuLeakError as e:
            assert "16 bytes in 1 blocks" in str(e)
        else:
            raise AssertionError("outer block did not fail")
    """, preload=FAKE)


def test_no_leaks_reuses_its_checkpoints():
    """The runtime keeps every checkpoint it is given: a test suite's thousands
    of checks must not make thousands."""
    run_code(prelude=FAKE_PRELUDE, code="""
        for _ in range(50):
            with gpuleak.no_leaks():
                with gpuleak.no_leaks():
                    free(alloc(8))
        assert lib.gpuleak_fake_checkpoints() == 2, lib.gpuleak_fake_checkpoints()
    """, preload=FAKE)


def test_torch_record_read_when_its_tensors_change():
    """With growth detection and PyTorch's cache on, each checkpoint hands the
    runtime PyTorch's record summed by Python stack; the record (a snapshot of
    every block, about a millisecond per thousand tensors) is read again only
    when PyTorch's live tensors changed in count or bytes."""
    run_code("""
        import sys, types
        import gpuleak

        class Cuda:
            live = [(1000, 1)]
            snapshots = 0
            recording = None
            def is_available(self): return True
            def is_initialized(self): return True
            def device_count(self): return 1
            def memory_stats(self, d):
                b, n = self.live[-1]
                return {"reserved_bytes.all.current": 1 << 21,
                        "allocated_bytes.all.current": b, "allocation.all.current": n}

        cuda = Cuda()
        def frames(line):
            return [{"filename": "train.py", "line": line, "name": "step"},
                    {"filename": "train.py", "line": 90, "name": "<module>"}]
        def snapshot():
            cuda.snapshots += 1
            blocks = [{"state": "active_allocated", "size": 512, "requested_size": 500,
                       "frames": frames(10)} for _ in range(cuda.live[-1][1])]
            blocks.append({"state": "inactive", "size": 512, "frames": frames(11)})
            blocks.append({"state": "active_allocated", "size": 512, "frames": []})
            return {"segments": [{"blocks": blocks}]}
        def record(**kw):
            cuda.recording = kw
        cuda.memory = types.SimpleNamespace(get_allocator_backend=lambda: "native",
                                            _snapshot=snapshot, _record_memory_history=record)
        sys.modules["torch"] = types.SimpleNamespace(cuda=cuda)

        class Api:
            def __init__(self): self.usage, self.sites = [], []
            def framework_usage(self, fw, d, used, reserved):
                self.usage.append((fw, d, used, reserved))
            def growth_checkpoints(self): return 5
            def framework_site(self, fw, text, nbytes, n):
                self.sites.append((fw, text, nbytes, n))

        def checkpoint(live=None):
            if live:
                cuda.live.append(live)
            api = Api()
            gpuleak._tell_frameworks(api)
            return api

        a = checkpoint()  # starts PyTorch's record: nothing to read yet
        assert cuda.recording == {"enabled": "state", "context": "alloc", "stacks": "python"}
        assert a.usage == [(b"PyTorch", 0, 1000, 1 << 21)] and a.sites == [], a.sites
        a = checkpoint()
        assert cuda.snapshots == 1
        site = (b"PyTorch", b"train.py:10:step\\ntrain.py:90:<module>", 500, 1)
        assert a.sites == [site], a.sites
        a = checkpoint()  # nothing changed: the same sites, no new read
        assert cuda.snapshots == 1 and a.sites == [site], (cuda.snapshots, a.sites)
        a = checkpoint((3000, 3))
        assert cuda.snapshots == 2
        assert a.sites == [(b"PyTorch", site[1], 1500, 3)], a.sites
        a = checkpoint((3000, 2))  # same bytes, fewer tensors: read again
        assert cuda.snapshots == 3 and a.sites == [(b"PyTorch", site[1], 1000, 2)], a.sites
    """)


def test_counts_reports_and_modes():
    run_code(prelude=FAKE_PRELUDE, code="""
        assert gpuleak.running() is True
        assert gpuleak.checkpoint("t") is True
        alloc(64)
        c = gpuleak.count_leaks(since="t")
        assert c.definite == gpuleak.Amount(64, 1) and c.total() == gpuleak.Amount(64, 1)
        assert c.total(["cached"]) == gpuleak.Amount()
        errors, text = gpuleak.leak_report("added", since="t")
        assert errors == 1 and text == "Leak check (fake, mode 2): 64 bytes in 1 blocks are " \\
            "definitely lost\\n", text
        errors, text = gpuleak.leak_report("changed", kinds=["cached", "suppressed"])
        assert "mode 20483" in text, text  # 3 | GPULEAK_KINDS(1 << 4)
        try:
            gpuleak.count_leaks(since="nope")
        except ValueError as e:
            assert "no checkpoint named 'nope'" in str(e)
        else:
            raise AssertionError("unknown checkpoint accepted")
        assert gpuleak.leak_check("full") == 1
        assert gpuleak.disable() == 1 and gpuleak.disable() == 2
        assert gpuleak.enable() == 1 and gpuleak.enable() == 0
        try:
            gpuleak.enable()
        except RuntimeError as e:
            assert "without a matching disable" in str(e)
        else:
            raise AssertionError("unmatched enable accepted")
    """, preload=FAKE)


def test_real_runtime_before_cuda_starts():
    r = run_code("""
        import gpuleak
        assert gpuleak.running() is True
        assert gpuleak.checkpoint("start") is True
        assert gpuleak.count_leaks(since="start") == gpuleak.LeakCounts()
        errors, text = gpuleak.leak_report()
        assert errors == 0, errors
        assert text == ("Leak check 1 (full): 0 bytes in 0 blocks in use\\n\\n"
                        "All GPU memory was freed -- no leaks are possible\\n\\n"), repr(text)
        errors, text = gpuleak.leak_report("added", since="start")
        assert text.startswith("Leak check 2 (added, allocated since checkpoint \\"start\\")"), text
        try:
            gpuleak.leak_report(since="nope")
        except ValueError as e:
            assert "no checkpoint named 'nope'" in str(e)
        else:
            raise AssertionError("unknown checkpoint accepted")
        assert gpuleak.ignore(0x1000) is False      # nothing tracked yet
        assert gpuleak.disable() == 1 and gpuleak.enable() == 0
        with gpuleak.no_leaks():
            pass
    """, preload=REAL)
    # The runtime says why the unknown checkpoint failed, in its log (stderr).
    assert 'gpuleak: gpuleak_leak_check: no checkpoint named "nope"' in r.stderr, r.stderr


def test_runtime_found_without_preload():
    """Loaded privately (as CUDA loads an injection), the runtime's names are
    not global: the package finds the table it publishes instead."""
    run_code(f"""
        import ctypes, os
        ctypes.CDLL({REAL!r}, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        import gpuleak
        assert gpuleak.running() is True
        assert gpuleak.checkpoint("x") is True
        assert gpuleak.leak_report()[1].startswith("Leak check 1 (full)")
    """)


def test_inherited_table_not_followed_after_exec():
    """A program exec'ed from a process under gpuleak, without the runtime,
    inherits GPULEAK_CLIENT_API; it must say "not running", not crash."""
    r = run_code(f"""
        import os, sys
        assert os.environ.get("GPULEAK_CLIENT_API")
        env = dict(os.environ)
        del env["LD_PRELOAD"]
        os.execve(sys.executable, [sys.executable, "-c",
                  "import gpuleak; print('running', gpuleak.running())"], env)
    """, preload=REAL)
    assert r.stdout == "running False\n", r.stdout + r.stderr


# ---- gpuleak.profile ----

# A stand-in for torch.cuda: memory_stats() per device from a list of
# readings the test moves through (one per call of memory_stats(0)).
FAKE_TORCH = """
    import sys, types

    class Cuda:
        def __init__(self):
            self.readings = [{}]
            self.at = 0
            self.history = None
        def is_available(self): return True
        def is_initialized(self): return True
        def device_count(self): return 1
        def memory_stats(self, d):
            r = self.readings[min(self.at, len(self.readings) - 1)]
            self.at += 1
            return dict(r)

    def stats(cur, peak, alloc_bytes, freed_bytes, allocs, frees, reserved=0, rpeak=0):
        return {"allocated_bytes.all.current": cur, "allocated_bytes.all.peak": peak,
                "allocated_bytes.all.allocated": alloc_bytes,
                "allocated_bytes.all.freed": freed_bytes,
                "allocation.all.allocated": allocs, "allocation.all.freed": frees,
                "reserved_bytes.all.current": reserved, "reserved_bytes.all.peak": rpeak,
                "reserved_bytes.all.allocated": rpeak, "reserved_bytes.all.freed": rpeak - reserved,
                "segment.all.allocated": 1 if rpeak else 0, "segment.all.freed": 0}

    cuda = Cuda()
    def snapshot():
        return {"segments": [], "device_traces": [cuda.history or []]}
    cuda.memory = types.SimpleNamespace(get_allocator_backend=lambda: "native", _snapshot=snapshot)
    torch = types.SimpleNamespace(cuda=cuda, _C=types.SimpleNamespace(
        _cuda_isHistoryEnabled=lambda: cuda.history is not None))
    sys.modules["torch"] = torch
"""


def test_profile_without_gpuleak_or_torch():
    run_code("""
        import warnings, gpuleak
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with gpuleak.profile("empty") as p:
                pass
            with gpuleak.profile("empty"):
                pass
        r = p.result
        assert isinstance(r, gpuleak.ProfileResult)
        assert r.name == "empty" and r.source == "" and r.devices == ()
        assert "not running under gpuleak, and PyTorch's CUDA is not in use" in r.note, r.note
        assert r.device(0) is None and r.other_thread_events is None
        assert len(w) == 1 and issubclass(w[0].category, RuntimeWarning), [str(x.message) for x in w]
        assert "nothing is measured" in str(w[0].message)
        assert "(nothing measured)" in str(r) and "note:" in str(r)
        assert gpuleak.profile.summary() == gpuleak.profile_summary() == ()
        assert str(gpuleak.profile_summary()) == "gpuleak.profile: no region ended yet"
        try:
            gpuleak.profile(5)
        except TypeError as e:
            assert "a name is a string" in str(e)
        else:
            raise AssertionError("a number taken for a name")
    """)


def test_profile_pytorch_counters_without_gpuleak():
    """Not under gpuleak: PyTorch's own counters, its tensors and its reserved
    memory, with the peak exact only when PyTorch's peak rose inside."""
    run_code(prelude=FAKE_TORCH, code="""
        import warnings, gpuleak
        MIB = 1 << 20
        # Open: 4 MiB live, peak 4 MiB (reset before).  Close: the region went
        # up to 24 MiB and ended at 8 MiB; 24 MiB allocated, 20 freed.
        cuda.readings = [stats(4 * MIB, 4 * MIB, 100 * MIB, 96 * MIB, 10, 9, 20 * MIB, 20 * MIB),
                         stats(8 * MIB, 24 * MIB, 124 * MIB, 116 * MIB, 13, 11, 40 * MIB, 40 * MIB)]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with gpuleak.profile("step") as p:
                pass
        assert len(w) == 1 and "PyTorch's own counters" in str(w[0].message), w
        r = p.result
        assert r.source == "PyTorch" and "not running under gpuleak" in r.note, r
        d = r.device(0)
        t = d.tensors
        assert t.source == "PyTorch (allocated)"
        assert (t.at_open, t.at_close, t.peak, t.peak_exact) == (4 * MIB, 8 * MIB, 24 * MIB, True)
        assert (t.allocated, t.freed, t.allocs, t.frees) == (24 * MIB, 20 * MIB, 3, 2)
        assert t.net == 4 * MIB and t.peak_increase == 20 * MIB and t.peak_bound == 24 * MIB
        assert t.top_sites == () and t.peak_time_s is None
        # The shortcuts read the tensors' view without gpuleak.
        assert d.view is t and d.peak == 24 * MIB and d.net == 4 * MIB and d.allocs == 3
        v = d.driver
        assert v.source == "PyTorch (reserved)"
        assert (v.at_open, v.at_close, v.peak, v.peak_exact) == (20 * MIB, 40 * MIB, 40 * MIB, True)
        text = str(r)
        assert "tensors (PyTorch)" in text and "driver (PyTorch reserved)" in text, text
        assert "25,165,824" in text, text

        # No new high: a bound, between the bytes live at the ends and the old peak.
        cuda.at = 0
        cuda.readings = [stats(4 * MIB, 30 * MIB, 0, 0, 0, 0), stats(6 * MIB, 30 * MIB, 2 * MIB, 0, 1, 0)]
        with gpuleak.profile("step") as p:
            pass
        t = p.result.device(0).tensors
        assert (t.peak, t.peak_exact, t.peak_bound) == (6 * MIB, False, 30 * MIB), t
        assert "the peak lies between 6,291,456 and 31,457,280 bytes" in str(p.result)
        # PyTorch's peak reset inside (lower than at the start): what it saw
        # since is a lower bound, and nothing bounds the peak from above (the
        # region may have gone past the old 30 MiB before the reset).
        cuda.at = 0
        cuda.readings = [stats(4 * MIB, 30 * MIB, 0, 0, 0, 0), stats(5 * MIB, 9 * MIB, 0, 0, 0, 0)]
        with gpuleak.profile("reset inside") as p:
            pass
        t = p.result.device(0).tensors
        assert (t.peak, t.peak_exact, t.peak_bound) == (9 * MIB, False, None), t
        assert "PyTorch's peak was reset inside the region" in p.result.note, p.result.note
        assert "the peak is at least 9,437,184 bytes (no upper bound known)" in str(p.result)

        s = gpuleak.profile.summary()
        st = s.get("step")
        assert st.calls == 2 and st.peak_max == 24 * MIB and st.peak_mean == 15 * MIB, st
        assert st.net_max == 4 * MIB and st.net_mean == 3 * MIB, st
        assert s.get("reset inside").calls == 1 and s.get("nope") is None
        assert "step" in str(s) and "calls" in str(s)
        assert gpuleak.profile_summary(reset=True) and gpuleak.profile_summary() == ()
    """)


def test_profile_pytorch_history_makes_the_peak_exact():
    """With PyTorch's allocation history on, a peak PyTorch's counter cannot
    give is replayed from the region's trace entries, which must account for
    every byte the counters say was allocated and freed."""
    run_code(prelude=FAKE_TORCH, code="""
        import warnings, gpuleak
        warnings.simplefilter("ignore")
        K = 1024
        old = [{"action": "alloc", "size": 512 * K}, {"action": "segment_alloc", "size": 2048 * K}]
        mine = [{"action": "alloc", "size": 8 * K}, {"action": "free_completed", "size": 0},
                {"action": "alloc", "size": 4 * K}, {"action": "free_requested", "size": 8 * K},
                {"action": "alloc", "size": 2 * K}]
        cuda.history = old + mine
        cuda.readings = [stats(100 * K, 900 * K, 0, 0, 0, 0),
                         stats(106 * K, 900 * K, 14 * K, 8 * K, 3, 1)]
        with gpuleak.profile("h") as p:
            pass
        t = p.result.device(0).tensors
        assert (t.peak, t.peak_exact) == (112 * K, True), t
        # Sizes that do not add up (a request smaller than its block): a bound.
        cuda.at = 0
        cuda.history = old + mine[:-1] + [{"action": "alloc", "size": 1 * K}]
        with gpuleak.profile("h") as p:
            pass
        assert p.result.device(0).tensors.peak_exact is False
        # A trace shorter than the region: a bound.
        cuda.at = 0
        cuda.history = mine[2:]
        with gpuleak.profile("h") as p:
            pass
        assert p.result.device(0).tensors.peak_exact is False
    """)


def test_profile_pytorch_uncached_counts_nothing():
    run_code(prelude=FAKE_TORCH, code="""
        import os, warnings, gpuleak
        warnings.simplefilter("ignore")
        os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
        cuda.readings = [stats(0, 0, 0, 0, 0, 0)]
        with gpuleak.profile("raw") as p:
            pass
        assert p.result.devices == () and p.result.source == "", p.result
        assert "caching allocator is off" in p.result.note and "run under gpuleak" in p.result.note
    """)


FAKE_PROFILE = FAKE_PRELUDE + """
    at, advance = lib.gpuleak_fake_alloc_at, lib.gpuleak_fake_advance_ns
    at.restype = ctypes.c_int
    MIB = 1 << 20
"""


def test_profile_regions_over_the_runtime():
    """Nested regions, their figures and sites, from the runtime's view."""
    run_code(prelude=FAKE_PROFILE, code="""
        import warnings
        warnings.simplefilter("error")  # under gpuleak: no warning
        keep = at(1000, 1)
        with gpuleak.profile("outer") as outer:
            a = at(10 * MIB, 2)
            advance(2_000_000)
            with gpuleak.profile() as inner:
                b = at(30 * MIB, 3)
                free(a)
                c = at(50 * MIB, 4)
            free(b)
            free(c)
        r = inner.result
        assert r.source == "gpuleak" and r.note == "", r
        assert r.name.startswith("<string>:") and r.parent == "outer" and r.depth == 1, r
        assert r.thread_id == 7 and r.other_thread_events == 0 and r.thread_name == "MainThread"
        d = r.device(0)
        assert d.driver.source == "gpuleak" and d.tensors is None and d.view is d.driver
        assert (d.driver.at_open, d.peak, d.driver.at_close) == (1000 + 10 * MIB,
                                                              1000 + 80 * MIB, 1000 + 80 * MIB)
        assert d.peak_increase == 70 * MIB and d.net == 70 * MIB
        assert (d.allocated, d.freed, d.allocs, d.frees) == (80 * MIB, 10 * MIB, 2, 1)
        assert d.driver.peak_exact and d.driver.peak_seq > 0 and d.peak_time_s == 0.0
        sites = d.top_sites
        assert [(s.bytes, s.blocks) for s in sites] == [(50 * MIB, 1), (30 * MIB, 1), (1000, 1)]
        assert sites[0].frames[0].endswith("torch/nn/module.py:4:Module._call"), sites[0].frames
        assert sites[0].where == "step (train.py:14)", sites[0].where  # the program's own frame
        assert str(sites[0]) == "52,428,800 bytes in 1 blocks at step (train.py:14)"
        assert d.driver.sites_exact

        o = outer.result
        assert o.parent is None and o.depth == 0 and o.device(0).peak == 1000 + 80 * MIB
        assert o.duration_s == 0.002 and o.device(0).peak_time_s == 0.002, o
        assert o.device(0).net == 0 and o.device(0).freed == 90 * MIB
        text = str(o)
        for want in ('gpuleak.profile "outer": 2.000 ms on thread MainThread (gpuleak)',
                     "driver (gpuleak)", "83,887,080", "+83,886,080", "2.000 ms",
                     "94,371,840 in 3", "sites at the peak (driver):",
                     "52,428,800 bytes in 1 blocks at step (train.py:14)"):
            assert want in text, (want, text)
        # The same object again, once it ended: a new region.
        with outer:
            free(keep)
        assert outer.result.device(0).freed == 1000
        s = gpuleak.profile.summary().get("outer")
        assert s.calls == 2 and s.peak_max == 1000 + 80 * MIB and s.net_max == 0, s
    """, preload=FAKE)


def test_profile_decorator_and_errors():
    run_code(prelude=FAKE_PROFILE, code="""
        @gpuleak.profile
        def bare(n):
            return at(n, 5)

        @gpuleak.profile("named", sites=False)
        def named(n):
            \"\"\"named's doc\"\"\"
            free(at(n, 6))
            return n

        class Net:
            @gpuleak.profile
            def forward(self, n):
                return at(n, 7)

        assert bare.last_profile is None
        bare(MIB)
        assert bare.last_profile.name == "test_profile_decorator_and_errors.<locals>.bare" or \\
            bare.last_profile.name.endswith("bare"), bare.last_profile.name
        bare(3 * MIB)
        assert named(2 * MIB) == 2 * MIB and named.__doc__ == "named's doc"
        assert named.last_profile.name == "named"
        d = named.last_profile.device(0)
        assert d.peak_increase == 2 * MIB and d.top_sites == ()  # none asked for: the runtime walked no block
        assert not d.driver.sites_exact  # not asked for
        Net().forward(MIB)
        s = gpuleak.profile.summary()
        b = s.get(bare.last_profile.name)
        assert b.calls == 2 and b.peak_increase_max == 3 * MIB and b.peak_increase_mean == 2 * MIB
        assert s.get("Net.forward").calls == 1
        # The body's exception goes on; the region still ends and counts.
        p = gpuleak.profile("fails")
        try:
            with p:
                at(MIB, 8)
                raise KeyError("the body's own")
        except KeyError:
            pass
        else:
            raise AssertionError("exception swallowed")
        assert p.result.device(0).allocs == 1 and s.get("fails") is None
        assert gpuleak.profile.summary().get("fails").calls == 1
        # Entered again while open (recursion): a region of its own, inside.
        with p:
            at(MIB, 8)
            with p:
                at(2 * MIB, 8)
            inner = p.result
            assert (inner.depth, inner.parent, inner.device(0).allocs) == (1, "fails", 1), inner
        outer = p.result
        assert outer is not inner and (outer.depth, outer.device(0).allocs) == (0, 2), outer
        assert outer.device(0).allocated == 3 * MIB
    """, preload=FAKE)


def test_profile_with_gpuleak_and_pytorch_cache():
    """Under gpuleak with PyTorch's cache on: both views, the shortcuts the
    driver's."""
    run_code(prelude=FAKE_PROFILE + FAKE_TORCH, code="""
        cuda.readings = [stats(0, 0, 0, 0, 0, 0), stats(1 * MIB, 3 * MIB, 3 * MIB, 2 * MIB, 2, 1)]
        with gpuleak.profile("both") as p:
            free(at(20 * MIB, 3))
        d = p.result.device(0)
        assert d.driver.source == "gpuleak" and d.tensors.source == "PyTorch (allocated)"
        assert d.peak == 20 * MIB and d.tensors.peak == 3 * MIB and d.tensors.peak_exact
        assert "tensors (PyTorch)" in str(p.result) and "driver (gpuleak)" in str(p.result)
    """, preload=FAKE)


def test_profile_real_runtime_threads_and_limit():
    """The real runtime, CUDA never started: regions per thread, each with
    its thread's id; 64 open at most, the 65th says so."""
    r = run_code("""
        import threading, gpuleak
        results = {}
        def work(name):
            with gpuleak.profile(name) as outer:
                with gpuleak.profile(name + ".inner") as inner:
                    pass
            results[name] = (outer.result, inner.result, threading.get_native_id())
        threads = [threading.Thread(target=work, args=(f"t{i}",), name=f"worker{i}")
                   for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for name, (outer, inner, tid) in results.items():
            assert outer.source == "gpuleak" and outer.devices == () and outer.note == "", outer
            assert outer.thread_id == tid == inner.thread_id, (outer.thread_id, tid)
            assert inner.parent == name and inner.depth == 1 and outer.depth == 0
            assert outer.thread_name == "worker" + name[1:]
        # Begun here, ended on another thread: this thread's nesting forgets it.
        handed = gpuleak.profile("handed over").__enter__()
        t = threading.Thread(target=handed.__exit__, args=(None, None, None))
        t.start()
        t.join()
        r = handed.result  # the opener's thread, wherever it ended
        assert r.source == "gpuleak" and r.thread_name == "MainThread", r
        assert r.thread_id == threading.get_native_id(), r
        with gpuleak.profile("after") as after:
            pass
        assert after.result.depth == 0 and after.result.parent is None, after.result
        regions = [gpuleak.profile("many") for _ in range(65)]
        for p in regions:
            p.__enter__()
        for p in reversed(regions):
            p.__exit__(None, None, None)
        assert "gpuleak could not begin the region" in regions[-1].result.note
        assert all(p.result.note == "" for p in regions[:-1])
    """, preload=REAL)
    assert "gpuleak: gpuleak_profile_begin: 64 regions are open already" in r.stderr, r.stderr


def test_profile_pytorch_peak_reset_inside():
    """torch.cuda.reset_peak_memory_stats() inside the region defeats the
    counter rule: seen when a peak counter ends lower than it began, the peak
    then has no upper bound; the allocation history, when PyTorch records
    one, is replayed first and gives it exactly."""
    run_code(prelude=FAKE_TORCH, code="""
        import warnings, gpuleak
        warnings.simplefilter("ignore")
        MIB = 1 << 20
        # 10 MiB live, PyTorch's peak 10 MiB at the start.  Inside: 40 MiB
        # more (the true peak, 50 MiB), freed; 5 MiB of the first freed; reset
        # (peak 5 MiB); 1 MiB allocated and freed (peak 6 MiB).  The old peak,
        # 10 MiB, was live at the start, but bounds nothing.
        cuda.readings = [stats(10 * MIB, 10 * MIB, 0, 0, 0, 0),
                         stats(5 * MIB, 6 * MIB, 41 * MIB, 46 * MIB, 2, 3)]
        with gpuleak.profile("lower") as p:
            pass
        t = p.result.device(0).tensors
        assert (t.peak, t.peak_exact, t.peak_bound) == (10 * MIB, False, None), t
        assert "PyTorch's peak was reset inside the region" in p.result.note, p.result.note
        assert "on device 0" in p.result.note, p.result.note
        assert "the peak is at least 10,485,760 bytes (no upper bound known)" in str(p.result)
        # Without gpuleak the reserved view is PyTorch's too, with the same rule.
        assert p.result.device(0).driver.source == "PyTorch (reserved)"

        # The same with 1 MiB more live at the reset: the bytes' peak ends at
        # 11 MiB, above the 10 it began with, but the tensor count's peak
        # fell (6 at the start, 4 at the end): a reset, not a new high.
        def with_count(reading, count_peak):
            return dict(reading, **{"allocation.all.peak": count_peak})
        cuda.at = 0
        cuda.readings = [with_count(stats(10 * MIB, 10 * MIB, 0, 0, 0, 0), 6),
                         with_count(stats(10 * MIB, 11 * MIB, 41 * MIB, 41 * MIB, 2, 2), 4)]
        with gpuleak.profile("higher") as p:
            pass
        t = p.result.device(0).tensors
        assert (t.peak, t.peak_exact, t.peak_bound) == (11 * MIB, False, None), t
        assert "PyTorch's peak was reset inside the region" in p.result.note, p.result.note

        # With the history recorded, its replay comes first: the true 50 MiB,
        # though every counter looks like a new high of 11 MiB.
        cuda.at = 0
        cuda.readings = [stats(10 * MIB, 10 * MIB, 0, 0, 0, 0),
                         stats(10 * MIB, 11 * MIB, 41 * MIB, 41 * MIB, 2, 2)]
        cuda.history = [{"action": "alloc", "size": 40 * MIB},
                        {"action": "free_requested", "size": 40 * MIB},
                        {"action": "alloc", "size": 1 * MIB},
                        {"action": "free_requested", "size": 1 * MIB}]
        with gpuleak.profile("history") as p:
            pass
        t = p.result.device(0).tensors
        assert (t.peak, t.peak_exact, t.peak_increase) == (50 * MIB, True, 40 * MIB), t
        assert "reset" not in p.result.note, p.result.note
        # A reset seen, and a replay that holds: the tensors' peak exact; the
        # reserved memory's (no trace) without an upper bound.
        cuda.at = 0
        cuda.readings = [stats(10 * MIB, 10 * MIB, 0, 0, 0, 0),
                         stats(5 * MIB, 6 * MIB, 41 * MIB, 46 * MIB, 2, 3)]
        cuda.history = [{"action": "alloc", "size": 40 * MIB},
                        {"action": "free_requested", "size": 40 * MIB},
                        {"action": "free_requested", "size": 5 * MIB},
                        {"action": "alloc", "size": 1 * MIB},
                        {"action": "free_requested", "size": 1 * MIB}]
        with gpuleak.profile("history") as p:
            pass
        t = p.result.device(0).tensors
        assert (t.peak, t.peak_exact) == (50 * MIB, True), t
        v = p.result.device(0).driver
        assert (v.peak_exact, v.peak_bound) == (False, None), v
        assert "PyTorch's peak was reset inside the region" in p.result.note, p.result.note
    """)


def test_profile_pytorch_counters_unreadable():
    """A failed read of PyTorch's counters is not PyTorch starting inside the
    region: no tensor view, and a note."""
    code = """
        import warnings, gpuleak
        warnings.simplefilter("ignore")
        MIB = 1 << 20
        real = cuda.memory_stats
        calls = []
        def flaky(d, fail_at):
            calls.append(d)
            if len(calls) == fail_at:
                raise RuntimeError("CUDA error: an illegal memory access was encountered")
            return real(d)
        opened = stats(4 * MIB, 4 * MIB, 100 * MIB, 96 * MIB, 10, 9, 20 * MIB, 20 * MIB)
        closed = stats(8 * MIB, 24 * MIB, 124 * MIB, 116 * MIB, 13, 11, 40 * MIB, 40 * MIB)
        for fail_at, when in ((1, "began"), (2, "ended")):
            cuda.at, calls[:] = 0, []
            cuda.readings = [opened, closed] if fail_at == 2 else [closed]
            cuda.memory_stats = lambda d, fail_at=fail_at: flaky(d, fail_at)
            with gpuleak.profile("flaky") as p:
                FREE_AT(MIB)
            r = p.result
            assert f"PyTorch's counters could not be read when the region {when}: no tensor " \\
                   "view" in r.note, r.note
            assert all(d.tensors is None for d in r.devices), r
            CHECK(r)
    """
    # Not under gpuleak: nothing else to show.
    run_code(prelude=FAKE_TORCH, code=code.replace("FREE_AT(MIB)", "pass").replace(
        "CHECK(r)", "assert r.devices == () and r.source == '' and "
                    "'PyTorch\\'s CUDA is not in use' not in r.note, r"))
    # Under gpuleak: the driver view, without the tensors'.
    run_code(prelude=FAKE_PROFILE + FAKE_TORCH, preload=FAKE, code=code.replace(
        "FREE_AT(MIB)", "free(at(MIB, 2))").replace(
        "CHECK(r)", "assert r.source == 'gpuleak' and r.device(0).driver.allocated == MIB, r"))


def test_profile_pytorch_cuda_malloc_async_backend():
    """backend:cudaMallocAsync: the driver view is no reserved memory, and
    PyTorch's counters hold no bytes or counts allocated and freed."""
    code = """
        import warnings, gpuleak
        warnings.simplefilter("ignore")
        MIB = 1 << 20
        cuda.memory.get_allocator_backend = lambda: "cudaMallocAsync"
        cuda.history = []  # replaying a trace would take the counters' zeros for none
        cuda.readings = [stats(1 * MIB, 1 * MIB, 0, 0, 0, 0, 2 * MIB, 2 * MIB),
                         stats(1 * MIB, 4 * MIB, 0, 0, 0, 0, 2 * MIB, 8 * MIB)]
        with gpuleak.profile("async") as p:
            FREE_AT
        r = p.result
        assert "PyTorch's allocator backend is cudaMallocAsync" in r.note, r.note
        assert "PyTorch counts no bytes or blocks allocated and freed" in r.note, r.note
        t = r.device(0).tensors
        assert (t.allocated, t.freed, t.allocs, t.frees) == (None, None, None, None), t
        assert (t.at_open, t.peak, t.peak_exact) == (MIB, 4 * MIB, True), t
    """
    run_code(prelude=FAKE_PROFILE + FAKE_TORCH, preload=FAKE, code=code.replace(
        "FREE_AT", "free(at(3 * MIB, 2))") + """
        assert "not PyTorch's reserved memory" in r.note, r.note
        assert r.device(0).driver.source == "gpuleak" and r.device(0).driver.allocated == 3 * MIB
    """)
    run_code(prelude=FAKE_TORCH, code=code.replace("FREE_AT", "pass") + """
        assert "what that backend reports as reserved" in r.note, r.note
        v = r.device(0).driver
        assert v.source == "PyTorch (reserved)" and v.allocs is None and v.peak == 8 * MIB, v
    """)


def test_profile_end_or_begin_failing():
    """The runtime refusing to end a region, or a failure while one begins,
    says so in the note; neither raises into the program."""
    run_code(prelude=FAKE_PROFILE, code="""
        api = gpuleak._runtime()
        real_end = api.profile_end
        api.profile_end = lambda region, *rest, **kw: (real_end(region, *rest, **kw), -1)[1]
        with gpuleak.profile("unended") as p:
            at(MIB, 3)
        api.profile_end = real_end
        r = p.result
        assert "the runtime could not end the region (see its log)" in r.note, r.note
        assert r.devices == () and r.source == "", r

        real_runtime = gpuleak._runtime
        def broken():
            raise OSError("no runtime today")
        gpuleak._runtime = broken
        with gpuleak.profile("broken") as p:  # no exception here
            at(MIB, 3)
        gpuleak._runtime = real_runtime
        r = p.result
        assert "could not begin the region: OSError: no runtime today" in r.note, r.note
        assert "not running under gpuleak" not in r.note, r.note
        # Nothing was left open: a region works again.
        with gpuleak.profile("after") as p:
            at(MIB, 3)
        assert p.result.note == "" and p.result.device(0).allocs == 1, p.result
    """, preload=FAKE)


def test_profile_decorator_async_generators_and_raising():
    """Coroutine functions are awaited inside their region, generators'
    regions span their iteration, and last_profile is set when the call
    raised."""
    run_code(prelude=FAKE_PROFILE, code="""
        import asyncio, inspect

        @gpuleak.profile
        async def coro(n):
            await asyncio.sleep(0)
            return at(n, 5)

        assert inspect.iscoroutinefunction(coro) and coro.__name__ == "coro"
        assert coro.__wrapped__ is not None and coro.last_profile is None
        asyncio.run(coro(MIB))
        d = coro.last_profile.device(0)
        assert coro.last_profile.name.endswith("coro") and d.allocs == 1 and d.allocated == MIB

        @gpuleak.profile("acoro fails")
        async def coro_fails():
            await asyncio.sleep(0)
            at(2 * MIB, 5)
            raise KeyError("the coroutine's own")
        try:
            asyncio.run(coro_fails())
        except KeyError:
            pass
        else:
            raise AssertionError("exception swallowed")
        assert coro_fails.last_profile.device(0).allocated == 2 * MIB

        @gpuleak.profile("gen")
        def gen(n):
            for _ in range(n):
                yield at(MIB, 6)
            return "done"

        assert inspect.isgeneratorfunction(gen) and gen.__name__ == "gen"
        it = gen(3)
        at(7 * MIB, 6)  # before the first next(): not the region's
        assert gen.last_profile is None
        assert len(list(it)) == 3
        d = gen.last_profile.device(0)
        assert (d.allocs, d.allocated) == (3, 3 * MIB), d
        def drive(g):
            try:
                while True:
                    next(g)
            except StopIteration as stop:
                return stop.value
        assert drive(gen(1)) == "done"
        # Closed early: the region ends at close().
        it = gen(5)
        next(it), next(it)
        it.close()
        assert gen.last_profile.device(0).allocs == 2
        # An exception thrown in goes through, and the region still ends.
        it = gen(5)
        next(it)
        try:
            it.throw(ValueError("thrown in"))
        except ValueError:
            pass
        assert gen.last_profile.device(0).allocs == 1

        @gpuleak.profile("agen")
        async def agen(n):
            for _ in range(n):
                await asyncio.sleep(0)
                more = yield at(MIB, 7)
                if more:
                    at(more, 7)

        assert inspect.isasyncgenfunction(agen) and agen.__name__ == "agen"
        async def main():
            assert len([x async for x in agen(2)]) == 2
            d = agen.last_profile.device(0)
            assert (d.allocs, d.allocated) == (2, 2 * MIB), d
            g = agen(3)
            await g.__anext__()
            await g.asend(4 * MIB)   # 4 MiB, then the next 1 MiB
            await g.aclose()
            d = agen.last_profile.device(0)
            assert (d.allocs, d.allocated) == (3, 6 * MIB), d
            g = agen(3)
            await g.__anext__()
            try:
                await g.athrow(KeyError("thrown in"))
            except KeyError:
                pass
            else:
                raise AssertionError("athrow swallowed")
            assert agen.last_profile.device(0).allocs == 1
        asyncio.run(main())

        @gpuleak.profile("raises")
        def raises():
            at(MIB, 8)
            raise ValueError("the function's own")
        try:
            raises()
        except ValueError:
            pass
        else:
            raise AssertionError("exception swallowed")
        assert raises.last_profile is not None and raises.last_profile.device(0).allocs == 1
        assert gpuleak.profile.summary().get("raises").calls == 1
    """, preload=FAKE)


def test_profile_same_object_on_several_threads():
    """One profile object entered on several threads at once, and again on
    one thread: every entry a region of its own, ended by its own thread,
    none lost; result per thread.  And regions handed over to another thread
    to end, while their own thread opens more, never break it."""
    run_code("""
        import queue, sys, threading, time, gpuleak
        p = gpuleak.profile("shared")
        both_inside = threading.Barrier(2, timeout=10)
        results = {}
        def work(i):
            with p:
                both_inside.wait()  # the two threads' regions open at once
                with p:             # and again on this thread
                    pass
                results[i, "inner"] = p.result
                both_inside.wait()
            results[i] = (p.result, threading.get_native_id())
        threads = [threading.Thread(target=work, args=(i,), name=f"w{i}") for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i in range(2):
            r, tid = results[i]
            inner = results[i, "inner"]
            assert r.source == "gpuleak" and r.note == "" and r.depth == 0, r
            assert r.thread_id == tid and r.thread_name == f"w{i}", r
            assert inner.depth == 1 and inner.parent == "shared" and inner.thread_id == tid, inner
        # This thread ended none: the last of any thread's.
        assert p.result in (results[0][0], results[1][0])

        # Many threads, one object, many times.
        sys.setswitchinterval(1e-6)
        errors = []
        def many(i):
            try:
                for _ in range(200):
                    with p:
                        pass
                    r = p.result
                    if r.thread_name != f"m{i}" or r.note or r.depth:
                        errors.append(r)
            except BaseException as e:
                errors.append(e)
        threads = [threading.Thread(target=many, args=(i,), name=f"m{i}") for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[:3]

        # This thread's innermost region being ended by another thread while
        # this one opens a region: its parent is named whatever the other
        # thread has done with it.  (The __eq__ below holds the other thread
        # where a search of the open regions by equality would call it.)
        in_eq, entered = threading.Event(), threading.Event()
        class Held(gpuleak.profile):
            def __eq__(self, other):
                in_eq.set()
                entered.wait(10)
                return NotImplemented
            __hash__ = gpuleak.profile.__hash__
        outer = Held("outer").__enter__()
        h = gpuleak.profile("handed").__enter__()
        t = threading.Thread(target=h.__exit__, args=(None, None, None))
        t.start()
        while not in_eq.is_set() and t.is_alive():
            time.sleep(0.001)
        with gpuleak.profile("next") as nxt:  # never raises
            pass
        entered.set()
        t.join()
        outer.__exit__(None, None, None)
        assert nxt.result.parent in ("outer", "handed") and nxt.result.note == "", nxt.result
        assert h.result.note == "" and outer.result.note == "", (h.result, outer.result)

        # Handed over: begun here, ended by another thread, while this thread
        # opens regions inside them.
        handed = queue.Queue(maxsize=8)  # never 64 open at once
        def ender():
            while True:
                h = handed.get()
                if h is None:
                    return
                h.__exit__(None, None, None)
                if h.result.thread_name != "MainThread" or h.result.note:
                    errors.append(h.result)
        t = threading.Thread(target=ender)
        t.start()
        try:
            for _ in range(500):
                h = gpuleak.profile("handed").__enter__()
                handed.put(h)
                with gpuleak.profile("own") as own:
                    pass
                if own.result.parent not in (None, "handed") or own.result.note:
                    errors.append(own.result)
        finally:
            handed.put(None)
            t.join()
        assert not errors, errors[:3]
        sys.setswitchinterval(0.005)

        # None was lost: 64 regions can still be open at once.
        regions = [gpuleak.profile("many") for _ in range(64)]
        for q in regions:
            q.__enter__()
        for q in reversed(regions):
            q.__exit__(None, None, None)
        assert all(q.result.note == "" for q in regions), [q.result.note for q in regions]
    """, preload=REAL)


SAMPLE_TESTS = """
import ctypes
import pytest

lib = ctypes.CDLL(None)
alloc = getattr(lib, "gpuleak_fake_alloc", lambda n: 0)
free = getattr(lib, "gpuleak_fake_free", lambda i: None)
kept = []


def test_clean():
    free(alloc(100))


def test_leaky():
    kept.append(alloc(4096))


@pytest.mark.gpuleak_skip
def test_skipped_leaky():
    kept.append(alloc(8))


@pytest.fixture
def held():
    block = alloc(77)
    yield block
    free(block)


def test_fixture_memory_is_not_the_tests(held):
    assert held is not None


def test_own_failure():
    alloc(5)
    assert False, "the test's own failure"
"""


@pytest.fixture
def sample(tmp_path):
    path = tmp_path / "test_sample.py"
    path.write_text(SAMPLE_TESTS)
    return tmp_path


def pytest_run(sample, *options, preload=None):
    return run(["-m", "pytest", "-p", "no:cacheprovider", "-p", "gpuleak.pytest_plugin", "-rA",
                *options, "test_sample.py"], preload=preload, cwd=sample)


def outcome(result, test):
    for line in result.stdout.splitlines():
        for word in ("PASSED", "FAILED", "ERROR"):
            if line.startswith(f"{word} test_sample.py::{test}"):
                return word
    raise AssertionError(f"no outcome for {test}:\n{result.stdout}")


def test_plugin_fails_leaky_tests(sample):
    r = pytest_run(sample, "--gpuleak", preload=FAKE)
    assert r.returncode == 1, r.stdout + r.stderr
    assert ("gpuleak: each test fails if it leaks GPU memory (definite, indirect, possible, "
            "reachable, cached)") in r.stdout
    assert outcome(r, "test_clean") == "PASSED"
    assert outcome(r, "test_leaky") == "FAILED"
    assert outcome(r, "test_skipped_leaky") == "PASSED"
    assert outcome(r, "test_fixture_memory_is_not_the_tests") == "PASSED"
    assert outcome(r, "test_own_failure") == "FAILED"
    assert ("\ngpuleak: 4,096 bytes in 1 blocks leaked (definite, indirect, possible, reachable, "
            "cached):\n") in r.stdout, r.stdout
    assert "Leak check (fake" in r.stdout
    assert "the test's own failure" in r.stdout
    # The test's own failure is not reported as a leak.
    assert "FAILED test_sample.py::test_own_failure - AssertionError: the test's own failure" \
        in r.stdout, r.stdout
    # The failure shows the leak, not the plugin's machinery.
    assert "contextlib" not in r.stdout and "pytest_plugin.py" not in r.stdout, r.stdout


def test_plugin_kinds_option(sample):
    r = pytest_run(sample, "--gpuleak", "--gpuleak-kinds=cached", preload=FAKE)
    assert "(cached)" in r.stdout
    assert outcome(r, "test_leaky") == "PASSED"  # the fake's leaks are definite
    r = pytest_run(sample, "--gpuleak", "--gpuleak-kinds=definite,lost", preload=FAKE)
    assert r.returncode == 4, r.stdout + r.stderr
    assert "--gpuleak-kinds: unknown leak kind 'lost'" in r.stderr


def test_plugin_off_without_option_or_gpuleak(sample):
    r = pytest_run(sample, preload=FAKE)
    assert outcome(r, "test_leaky") == "PASSED"
    assert "gpuleak:" not in r.stdout
    r = pytest_run(sample, "--gpuleak")
    assert "gpuleak: not running under gpuleak; GPU leak checks are off" in r.stdout
    assert outcome(r, "test_leaky") == "PASSED"
    assert outcome(r, "test_own_failure") == "FAILED"


# ---- the package installed with pip (pyproject.toml), in a virtual environment ----

@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A virtual environment with the package pip-installed from a copy of the
    source (pip writes into the tree it builds from; the tree may be read-only,
    as in distcheck).  It sees the system's site-packages, for pytest and
    setuptools; nothing is downloaded."""
    import shutil
    base = tmp_path_factory.mktemp("pkg")
    src = base / "src"
    (src / "python").mkdir(parents=True)
    shutil.copytree(os.path.join(SRC, "python", "gpuleak"), src / "python" / "gpuleak",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(SRC, f), src / f)
    env_dir = base / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                        str(env_dir)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"python3 -m venv failed: {r.stderr.strip()[-200:]}")
    py = str(env_dir / "bin" / "python")
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                        "--no-index", str(src)], capture_output=True, text=True, cwd=base)
    if r.returncode != 0 and ("No module named pip" in r.stderr or "setuptools" in r.stderr):
        pytest.skip(f"pip or setuptools missing (python3-pip, python3-setuptools): "
                    f"{r.stderr.strip()[-200:]}")
    assert r.returncode == 0, r.stdout + r.stderr
    return py


def venv_pytest(py, sample, *options, preload=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("GPULEAK_") and k not in ("LD_PRELOAD", "PYTHONPATH")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if preload:
        env["LD_PRELOAD"] = preload
    return subprocess.run([py, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *options,
                           "test_sample.py"], env=env, cwd=sample, capture_output=True,
                          text=True, timeout=120)


def test_installed_package_is_the_one_used(venv, tmp_path):
    r = subprocess.run([venv, "-c", "import gpuleak, gpuleak.pytest_plugin; "
                        "print(gpuleak.__file__); print(gpuleak.running())"],
                       capture_output=True, text=True, cwd=tmp_path,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr
    path, running = r.stdout.split()
    assert "site-packages" in path and running == "False", r.stdout


def test_installed_plugin_registered_by_entry_point(venv, sample):
    # No -p: the entry point registers it; --gpuleak turns it on.
    r = venv_pytest(venv, sample, "--gpuleak", preload=FAKE)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "gpuleak: each test fails if it leaks GPU memory" in r.stdout
    assert outcome(r, "test_leaky") == "FAILED"
    assert outcome(r, "test_clean") == "PASSED"
    # Off without --gpuleak, even under gpuleak: a project may list it in its
    # requirements without every run checking.
    r = venv_pytest(venv, sample, preload=FAKE)
    assert outcome(r, "test_leaky") == "PASSED" and "gpuleak:" not in r.stdout, r.stdout
    # --gpuleak outside gpuleak: a note, the tests run as they are.
    r = venv_pytest(venv, sample, "--gpuleak")
    assert "gpuleak: not running under gpuleak; GPU leak checks are off" in r.stdout, r.stdout
    assert outcome(r, "test_leaky") == "PASSED"


def test_installed_plugin_and_explicit_p_option(venv, sample):
    # -p gpuleak.pytest_plugin (a project's pytest.ini, the launcher's habit)
    # beside the entry point: registered once, no error.
    r = venv_pytest(venv, sample, "-p", "gpuleak.pytest_plugin", "--gpuleak", preload=FAKE)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "already registered" not in r.stdout + r.stderr
    assert outcome(r, "test_leaky") == "FAILED"


# ---- gpuleak.memory_viz: gpuleak's --memory-viz file with PyTorch's snapshot ----

def _frames(*names):
    return [{"filename": "x.so", "line": 0, "name": n} for n in names]


def _driver_snapshot():
    ours = _frames("cudaMalloc", "c10::cuda::CUDACachingAllocator::Native::"
                   "DeviceCachingAllocator::malloc(unsigned long, CUstream_st*)")
    cublas = _frames("cuMemAlloc_v2", "cublasCreate_v2")

    def group(action_list, addr, size, t, frames):
        return [{"action": a, "addr": addr, "size": size, "stream": 0, "time_us": t,
                 "frames": frames} for a in action_list]
    trace = (group(["segment_alloc", "alloc"], 0x1000000, 2 << 20, 100, ours) +
             group(["segment_alloc", "alloc"], 0x9000000, 64 << 20, 150, cublas) +
             group(["segment_alloc", "alloc"], 0xa000000, 4096, 250, cublas) +
             group(["free_requested", "free_completed", "segment_free"], 0xa000000, 4096, 300,
                   cublas))
    seg = lambda addr, size, frames: {
        "device": 0, "address": addr, "total_size": size, "allocated_size": size,
        "active_size": size, "requested_size": size, "stream": 0, "segment_type": "large",
        "is_expandable": False, "frames": frames,
        "blocks": [{"size": size, "requested_size": size, "state": "active_allocated",
                    "frames": frames}]}
    return {"segments": [seg(0x1000000, 2 << 20, ours), seg(0x9000000, 64 << 20, cublas)],
            "device_traces": [trace],
            "gpuleak": {"version": 1, "peak_bytes": [(2 << 20) + (64 << 20) + 4096],
                        "dropped_events": 0, "max_entries": 1000}}


def _torch_snapshot():
    t = _frames("train_step")
    trace = [{"action": "segment_alloc", "addr": 0x1000000, "size": 2 << 20, "stream": 0,
              "time_us": 101, "frames": t},
             {"action": "alloc", "addr": 0x1000000, "size": 512, "stream": 0, "time_us": 102,
              "frames": t},
             {"action": "alloc", "addr": 0x1000200, "size": 1024, "stream": 0, "time_us": 200,
              "frames": t},
             {"action": "free_requested", "addr": 0x1000000, "size": 512, "stream": 0,
              "time_us": 260, "frames": t},
             {"action": "free_completed", "addr": 0x1000000, "size": 512, "stream": 0,
              "time_us": 261, "frames": t}]
    seg = {"device": 0, "address": 0x1000000, "total_size": 2 << 20, "allocated_size": 1024,
           "active_size": 1024, "requested_size": 1024, "stream": 0, "segment_type": "large",
           "is_expandable": False, "frames": t,
           "blocks": [{"size": 512, "requested_size": 0, "state": "inactive", "frames": []},
                      {"size": 1024, "requested_size": 1024, "state": "active_allocated",
                       "frames": t},
                      {"size": (2 << 20) - 1536, "requested_size": 0, "state": "inactive",
                       "frames": []}]}
    return {"segments": [seg], "device_traces": [trace], "allocator_settings": {}}


def test_memory_viz_merge(tmp_path):
    """PyTorch's tensors and history replace the caching allocator's driver
    allocations; every other driver allocation stays, in time order."""
    import pickle
    sys.path.insert(0, os.path.join(SRC, "python"))
    try:
        from gpuleak import memory_viz
    finally:
        sys.path.pop(0)
    d, t = _driver_snapshot(), _torch_snapshot()
    m = memory_viz.merge(d, t)
    acts = [(e["action"], e["time_us"]) for e in m["device_traces"][0]]
    assert acts == [("segment_alloc", 101), ("alloc", 102), ("segment_alloc", 150),
                    ("alloc", 150), ("alloc", 200), ("segment_alloc", 250), ("alloc", 250),
                    ("free_requested", 260), ("free_completed", 261),
                    ("free_requested", 300), ("free_completed", 300), ("segment_free", 300)]
    assert [s["address"] for s in m["segments"]] == [0x1000000, 0x9000000]
    assert m["segments"][0]["blocks"][1]["frames"] == _frames("train_step")
    assert m["allocator_settings"] == {}
    assert m["gpuleak"]["merged"] == "torch" and "peak_bytes" not in m["gpuleak"]
    assert m["gpuleak"]["driver_peak_bytes"] == d["gpuleak"]["peak_bytes"]
    assert d == _driver_snapshot() and t == _torch_snapshot()  # inputs untouched
    # The command: files in, one file out, that pickle reads back.
    for name, obj in (("d.pickle", d), ("t.pickle", t)):
        (tmp_path / name).write_bytes(pickle.dumps(obj, protocol=2))
    out = tmp_path / "m.pickle"
    r = run(["-m", "gpuleak.memory_viz", "merge", str(tmp_path / "d.pickle"),
             str(tmp_path / "t.pickle"), "-o", str(out)])
    assert r.returncode == 0, r.stderr
    assert pickle.loads(out.read_bytes()) == m
    # Wrong inputs: one line naming the file.
    r = run(["-m", "gpuleak.memory_viz", "merge", str(tmp_path / "t.pickle"),
             str(tmp_path / "d.pickle"), "-o", str(out)])
    assert r.returncode == 1 and "not written by gpuleak --memory-viz" in r.stderr
    old = _torch_snapshot()
    del old["device_traces"][0][0]["time_us"]
    (tmp_path / "old.pickle").write_bytes(pickle.dumps(old, protocol=2))
    r = run(["-m", "gpuleak.memory_viz", "merge", str(tmp_path / "d.pickle"),
             str(tmp_path / "old.pickle"), "-o", str(out)])
    assert r.returncode == 1 and "no time_us" in r.stderr and r.stderr.count("\n") == 1
    (tmp_path / "bad").write_bytes(b"not a pickle")
    r = run(["-m", "gpuleak.memory_viz", "merge", str(tmp_path / "bad"),
             str(tmp_path / "t.pickle"), "-o", str(out)])
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and str(tmp_path / "bad") in r.stderr

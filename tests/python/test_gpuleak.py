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

"""pytest plugin: fail the tests that leak GPU memory.

    gpuleak python3 -m pytest -p gpuleak.pytest_plugin --gpuleak tests/

Each test's body runs inside gpuleak.no_leaks(): a test that leaves GPU memory
behind fails with gpuleak's loss records in its failure message.  What the
test's fixtures allocate before the body runs is not the test's; what the body
leaves alive (a tensor stored in a global, in a module-scoped fixture, ...) is.
Without gpuleak (not run under the launcher) the plugin does nothing.

Options: --gpuleak-kinds=KINDS (comma-separated, default every kind but
suppressed), --gpuleak-no-empty (do not empty PyTorch's and CuPy's caches before
checking; then cached memory never counts).  Marker: @pytest.mark.gpuleak_skip
exempts a test.
"""
import pytest

import gpuleak


def pytest_addoption(parser):
    group = parser.getgroup("gpuleak", "GPU memory leak checks (gpuleak)")
    group.addoption("--gpuleak", action="store_true", default=False,
                    help="fail each test that leaks GPU memory (when run under gpuleak)")
    group.addoption("--gpuleak-kinds", default=None, metavar="KINDS",
                    help="leak kinds that fail a test, comma-separated, from "
                         + ",".join(gpuleak.KINDS)
                         + " (default: all but suppressed; cached only with caches emptied)")
    group.addoption("--gpuleak-no-empty", action="store_true", default=False,
                    help="do not empty the frameworks' GPU caches before each check")


def _kinds(config):
    text = config.getoption("gpuleak_kinds")
    if text is None:
        return None
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    for k in kinds:
        if k not in gpuleak.KINDS:
            raise pytest.UsageError(f"--gpuleak-kinds: unknown leak kind {k!r} "
                                    f"(expected some of {','.join(gpuleak.KINDS)})")
    return kinds


def pytest_configure(config):
    config.addinivalue_line("markers", "gpuleak_skip: do not check this test for GPU memory leaks")
    config._gpuleak_active = bool(config.getoption("gpuleak")) and gpuleak.running()
    config._gpuleak_kinds = _kinds(config)


def pytest_report_header(config):
    if not config.getoption("gpuleak"):
        return None
    if not config._gpuleak_active:
        return "gpuleak: not running under gpuleak; GPU leak checks are off"
    kinds = config._gpuleak_kinds or (
        ("definite", "indirect", "possible", "reachable")
        + (() if config.getoption("gpuleak_no_empty") else ("cached",)))
    return f"gpuleak: each test fails if it leaks GPU memory ({', '.join(kinds)})"


def pytest_runtest_setup(item):
    """Wrap the test's body (not its fixtures) in gpuleak.no_leaks(), so that a
    leak fails the test itself rather than erroring a later phase."""
    config = item.config
    if (not config._gpuleak_active or item.get_closest_marker("gpuleak_skip")
            or getattr(item, "_gpuleak_wrapped", False)):
        return  # wrapped once, even when the item runs again (reruns)
    item._gpuleak_wrapped = True
    body = item.runtest
    empty = not config.getoption("gpuleak_no_empty")
    kinds = config._gpuleak_kinds

    def runtest():
        __tracebackhide__ = True
        message = None
        try:
            with gpuleak.no_leaks(kinds=kinds, empty=empty):
                body()
        except gpuleak.GpuLeakError as leak:
            message = str(leak)
        if message:
            # The records say it all: no traceback into the plugin.
            pytest.fail(message, pytrace=False)

    item.runtest = runtest

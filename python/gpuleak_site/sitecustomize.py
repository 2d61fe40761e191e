"""gpuleak --framework-caching=off, for CuPy.

The launcher puts this directory first on PYTHONPATH, with gpuleak's
--framework-caching=off only.  CuPy has no environment variable to turn its
memory pools off; its documented way is cupy.cuda.set_allocator(None) and
cupy.cuda.set_pinned_memory_allocator(None), which this module calls as soon as
the cupy package has been imported.  Then every array is a cudaMalloc (or
cudaHostAlloc) of its own, which gpuleak tracks with its own stack.

This module hides whichever sitecustomize Python would have imported otherwise
(the user's, the distribution's): it finds that one on the rest of sys.path and
runs it as the module sitecustomize.

It is silent, and it never breaks the program: a failure to turn the pools off
leaves them on.
"""

import os
import sys


def _turn_off_pools(cupy):
    cuda = getattr(cupy, "cuda", None)
    for name in ("set_allocator", "set_pinned_memory_allocator"):
        try:
            getattr(cuda, name)(None)
        except Exception:
            pass


class _CupyHook(object):
    """A sys.meta_path finder that answers for "cupy" alone: it finds cupy's
    spec through the other finders and makes the loader call _turn_off_pools
    once the package has run.  It leaves sys.meta_path after cupy's import."""

    def __init__(self):
        self._busy = False
        self._module = sys.modules.get(__name__)  # keep this module's globals alive

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "cupy" or self._busy:
            return None
        self._busy = True
        try:
            for finder in list(sys.meta_path):
                if finder is self:
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    self._wrap(spec)
                    return spec
            return None
        except Exception:
            return None  # the import machinery looks on as if there were no hook
        finally:
            self._busy = False

    def _wrap(self, spec):
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return
        hook = self

        def exec_then_turn_off(module):
            try:
                exec_module(module)
            finally:
                # The loader is its class's again (a failed import, tried again,
                # is hooked again).
                try:
                    del loader.exec_module
                except Exception:
                    pass
            hook._unhook()  # once is enough
            _turn_off_pools(module)

        try:
            loader.exec_module = exec_then_turn_off
        except Exception:
            pass

    def _unhook(self):
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def _same_dir(entry, here):
    try:
        return os.path.realpath(entry or os.curdir) == here
    except Exception:
        return False


def _chain():
    """Run the sitecustomize that this one hides, as sitecustomize."""
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    entries = list(sys.path)
    rest = None
    for i, entry in enumerate(entries):
        if _same_dir(entry, here):
            rest = entries[i + 1:]
            break
    if rest is None:
        return
    rest = [e for e in rest if not _same_dir(e, here)]
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    from importlib.util import module_from_spec

    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    # An error in it is reported by site.py, as it would be without gpuleak.
    spec.loader.exec_module(module)


if os.environ.get("GPULEAK_FRAMEWORK_CACHING") == "off" and "cupy" not in sys.modules:
    sys.meta_path.insert(0, _CupyHook())
_chain()

# SPDX-License-Identifier: MIT
"""cupy.cuda of the stand-in: set_allocator and set_pinned_memory_allocator
append (name, argument, whether cupy had finished importing) to calls, then
raise if FAKE_CUPY_RAISE is set (the hook must carry on regardless)."""
import os
import sys

calls = []


def _record(name, arg):
    cupy = sys.modules.get("cupy")
    calls.append((name, arg, getattr(cupy, "imported", False)))
    if os.environ.get("FAKE_CUPY_RAISE"):
        raise RuntimeError("fake cupy: " + name + " failed")


def set_allocator(allocator=None):
    _record("set_allocator", allocator)


def set_pinned_memory_allocator(allocator=None):
    _record("set_pinned_memory_allocator", allocator)

# SPDX-License-Identifier: MIT
"""A stand-in for CuPy (tests/launcher.test): cupy.cuda records the calls made
to set_allocator and set_pinned_memory_allocator, and the state of the package
when each was made."""
from cupy import cuda  # noqa: F401  (as CuPy's own __init__ does)

# Set last: a hook that ran before the package finished importing would see it unset.
imported = True

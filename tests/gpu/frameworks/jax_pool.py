# SPDX-License-Identifier: MIT
"""JAX with XLA's default allocator (a BFC allocator over a region it takes
from CUDA at start): arrays made and freed.  A leak check finds no definite leak
and the region cached; so does the exit report."""
import jax.numpy as jnp

import gpuleak

x = jnp.arange(1 << 20, dtype=jnp.float32)
y = (x * 2).sum()
y.block_until_ready()
del x, y
errors, text = gpuleak.leak_report(kinds=["definite", "indirect", "possible", "reachable", "cached"])
print(text)
print("jax_pool: done", flush=True)

# SPDX-License-Identifier: MIT
"""JAX with the platform allocator (no BFC pool), through XLA's cuBLAS calls.
Run with XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false."""
import jax.numpy as jnp

a = jnp.ones((512, 512), jnp.float32)
b = (a @ a).block_until_ready()
del a, b
print("jax_noise: done")

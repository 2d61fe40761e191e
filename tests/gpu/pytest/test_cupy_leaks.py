# SPDX-License-Identifier: MIT
"""CuPy tests checked by gpuleak's pytest plugin: the one that keeps an array
alive must fail, the others must pass."""
import cupy

kept = []


def test_sum_clean():
    a = cupy.arange(1 << 20, dtype=cupy.float32)
    assert float(a.sum()) > 0


def test_keeps_array():
    kept.append(cupy.ones(1 << 20, dtype=cupy.float32))


def test_elementwise_clean():
    a = cupy.linspace(0, 1, 1 << 16)  # not cupy.random: its generator keeps state for good
    b = cupy.sqrt(a) * 2
    assert b.shape == a.shape

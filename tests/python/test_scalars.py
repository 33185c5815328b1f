"""Python scalars become the kernel's scalar arguments as Triton's launcher types them: a float
is fp32 (negative ones too), an int i32, or i64 past 32 bits."""

import numpy as np
import pytest

import bwsim.gluon as bg
from scalar_kernels import scale_kernel


@pytest.mark.parametrize("alpha,shift", [(-1.5, 2), (2.0, -3), (1e-5, 7), (0.5, 2**40), (-3.25, -(2**33))])
def test_scalars_reach_the_kernel(rng, alpha, shift):
    x = rng.standard_normal(256, dtype=np.float32)
    y = np.zeros_like(x)
    bg.run(scale_kernel, (2,), x, y, alpha, shift, N=128)
    want = x * np.float32(alpha) + np.float32(shift)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=0)


def test_numpy_scalars_are_python_scalars(rng):
    x = rng.standard_normal(128, dtype=np.float32)
    y = np.zeros_like(x)
    bg.run(scale_kernel, (1,), x, y, np.float32(0.5), np.int64(4), N=128)
    np.testing.assert_array_equal(y, x * np.float32(0.5) + np.float32(4))

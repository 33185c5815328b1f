"""Kernels written for tests/python/test_versions.py: the parameters Triton's launcher specializes
(pointers, ints, floats, bools, annotated and unspecialized parameters), and a copy whose pointer
and integer arguments may or may not be 16-byte multiples."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit(do_not_specialize=["n_plain"], do_not_specialize_on_alignment=["q_any"])
def signature_kernel(p, q_any, n, n_plain, n64: gl.int64, f, g: gl.float32, flag, none, N: gl.constexpr):
    pass


@gluon.jit
def offset_copy_kernel(x_ptr, y_ptr, offset, n, N: gl.constexpr):
    """y[i] = x[i] + offset for i < n, one block of N per program."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * N + gl.arange(0, N, layout)
    mask = offs < n
    x = gl.load(x_ptr + offs, mask=mask)
    gl.store(y_ptr + offs, x + offset, mask=mask)

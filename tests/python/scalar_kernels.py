"""A kernel with scalar arguments, written for the tests: y = x * alpha + shift."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def scale_kernel(x_ptr, y_ptr, alpha, shift, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * N + gl.arange(0, N, layout)
    x = gl.load(x_ptr + offs)
    gl.store(y_ptr + offs, x * alpha + shift)

"""Kernels written for the tests: y = x * alpha + shift, and a copy of unfilled shared memory."""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def scale_kernel(x_ptr, y_ptr, alpha, shift, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * N + gl.arange(0, N, layout)
    x = gl.load(x_ptr + offs)
    gl.store(y_ptr + offs, x * alpha + shift)


@gluon.jit
def unfilled_smem_kernel(y_ptr, N: gl.constexpr):
    """Copies a shared buffer nothing filled to `y`: an `uninit-read` whose undefined bytes
    reach the global store."""
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    smem = gl.allocate_shared_memory(gl.float32, [N], gl.SwizzledSharedLayout(1, 1, 1, [0]))
    v = smem.load(layout)
    gl.store(y_ptr + gl.arange(0, N, layout), v)

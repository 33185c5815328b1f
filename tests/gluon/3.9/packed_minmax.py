"""Packed two-lane half-precision minimum and maximum (`min.f16x2`, `max.bf16x2`) through Gluon's
`min2` and `max2`, written for bwsim's tests. In the TTGIR: `ttng.packed_arith min|max`.

A clamp of an f16 tile to [-0.5, 0.75] (`min2(max2(x, -0.5), 0.75)`), and the elementwise maximum of two
bf16 tiles, each thread holding two neighbouring elements.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import max2, min2


@gluon.jit
def packed_minmax_kernel(x_ptr, a_ptr, b_ptr, clamped_ptr, larger_ptr, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([2], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    x = gl.load(x_ptr + offs)
    gl.store(clamped_ptr + offs, min2(max2(x, -0.5), 0.75))
    a = gl.load(a_ptr + offs)
    b = gl.load(b_ptr + offs)
    gl.store(larger_ptr + offs, max2(a, b))

"""`gl.map_elementwise` (Triton's `tt.map_elementwise`), written for bwsim's tests: a scalar function
of two and of three elements applied to every element of its tile operands, in the style of the
causal mask helper of tutorial 01-attention-forward.

    out[0, i] = x[i] if x[i] > y[i] else y[i]
    out[1, i] = x[i] * y[i] + 0.5 if i is even else x[i] - y[i]  (the index tile as the third operand)
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def _larger(a, b):
    return gl.where(a > b, a, b)


@gluon.jit
def _even_fma(a, b, i):
    return gl.where(i % 2 == 0, a * b + 0.5, a - b)


@gluon.jit
def map_elementwise_kernel(x_ptr, y_ptr, out_ptr, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([2], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, N, layout)
    x = gl.load(x_ptr + offs)
    y = gl.load(y_ptr + offs)
    gl.store(out_ptr + offs, gl.map_elementwise(_larger, x, y))
    gl.store(out_ptr + N + offs, gl.map_elementwise(_even_fma, x, y, offs))

"""Scalar loads and stores, in the style of the first Gluon tutorial (01-intro), written for bwsim's
tests: a program reads two scalars from global memory (`gl.load(ptr)`, `gl.load(ptr + 1)`), a third
as the one element of a one-element tile (`.item()`, Triton's `tt.unsplat`), uses them on a tile,
and writes one scalar result (`gl.store(ptr, value)`).

    out[i]   = x[3 + i] * x[0] + x[1]        for i < n (masked lanes load 0.0: out[i] = x[1])
    out[N]   = x[0] + x[1] + x[2]
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def scalars_kernel(x_ptr, out_ptr, n, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    scale = gl.load(x_ptr)
    shift = gl.load(x_ptr + 1)
    third = gl.load(x_ptr + 2 + gl.arange(0, 1, layout)).item()
    offs = gl.arange(0, N, layout)
    v = gl.load(x_ptr + 3 + offs, mask=offs < n, other=0.0)
    gl.store(out_ptr + offs, v * scale + shift)
    gl.store(out_ptr + N, scale + shift + third)

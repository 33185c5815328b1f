"""Packed two-lane f32 arithmetic (Blackwell's `add.f32x2`, `mul.f32x2`, `fma.rn.f32x2`) through
Triton 3.8's `add2`, `mul2` and `fma2`, written for bwsim's tests.

The softmax of tutorial 01-attention-forward scales its scores, subtracts the row maximum and
rescales the running sum with these instructions (3.6 wrote them as inline PTX, 3.8 has builtins:
`ttng.packed_arith` in the TTGIR). Here, per element of a [ROWS, COLS] f32 tile laid out with two
neighbouring columns in each thread's registers:

    p   = fma2(x, scale, -m)      x * scale - m, m the row maximum of x * scale
    acc = add2(mul2(acc, alpha), p)
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import add2, fma2, mul2


@gluon.jit
def packed_arith_kernel(x_ptr, acc_ptr, out_ptr, scale, alpha, ROWS: gl.constexpr, COLS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 2], [1, 32], [gl.num_warps(), 1], [1, 0])
    rows = gl.program_id(0) * ROWS + gl.arange(0, ROWS, gl.SliceLayout(1, layout))
    cols = gl.arange(0, COLS, gl.SliceLayout(0, layout))
    offs = rows[:, None] * COLS + cols[None, :]
    x = gl.load(x_ptr + offs)
    acc = gl.load(acc_ptr + offs)
    m = gl.max(x * scale, axis=1)
    p = fma2(x, scale, gl.broadcast(-m[:, None], x)[0])
    acc = add2(mul2(acc, alpha), p)
    gl.store(out_ptr + offs, acc)

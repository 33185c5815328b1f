"""Reductions whose combiner is neither one fold per operand nor an argmax, written for bwsim's tests.

Each combiner takes two operands and mixes them: the result of one depends on both. Per row of a
[ROWS, COLS] i32 x and f32 y, in a layout that spreads a row over registers, lanes and warps:
  top, count  the maximum of x >> 29 (eight values, many ties) and how many times it occurs
  lo, hi      the 64-bit sum of x as two 32-bit words (low word, high word with the carries): the
              combiner adds the low words, detects the carry with an unsigned compare and selects
              the high word's increment
  m, denom    an online softmax's running pair over y: the maximum and sum(exp2(y - maximum))
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def max_count(m0, c0, m1, c1):
    m = gl.maximum(m0, m1)
    c = gl.where(m0 == m1, c0 + c1, gl.where(m0 > m1, c0, c1))
    return m, c


@gluon.jit
def add_wide(lo0, hi0, lo1, hi1):
    lo = lo0 + lo1
    carry = gl.where(lo.to(gl.uint32, bitcast=True) < lo0.to(gl.uint32, bitcast=True), 1, 0)
    return lo, hi0 + hi1 + carry


@gluon.jit
def online_softmax(m0, l0, m1, l1):
    m = gl.maximum(m0, m1)
    return m, l0 * gl.exp2(m0 - m) + l1 * gl.exp2(m1 - m)


@gluon.jit
def pair_reductions_kernel(x_ptr, y_ptr, top_ptr, count_ptr, lo_ptr, hi_ptr, m_ptr, denom_ptr,
                           ROWS: gl.constexpr, COLS: gl.constexpr):
    # A row of 128: 4 consecutive elements per thread, 8 lanes, 2 warps, and a second repetition.
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [2, 2], [1, 0])
    rows = gl.arange(0, ROWS, gl.SliceLayout(1, layout))
    cols = gl.arange(0, COLS, gl.SliceLayout(0, layout))
    offs = rows[:, None] * COLS + cols[None, :]
    x = gl.load(x_ptr + offs)
    y = gl.load(y_ptr + offs)
    top, count = gl.reduce((x >> 29, gl.full([ROWS, COLS], 1, gl.int32, layout)), 1, max_count)
    # x sign-extended to 64 bits: the low word is x, the high word its sign.
    lo, hi = gl.reduce((x, gl.where(x < 0, -1, 0)), 1, add_wide)
    m, denom = gl.reduce((y, gl.full([ROWS, COLS], 1.0, gl.float32, layout)), 1, online_softmax)
    gl.store(top_ptr + rows, top)
    gl.store(count_ptr + rows, count)
    gl.store(lo_ptr + rows, lo)
    gl.store(hi_ptr + rows, hi)
    gl.store(m_ptr + rows, m)
    gl.store(denom_ptr + rows, denom)

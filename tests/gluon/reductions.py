"""Reductions with combiner regions in Gluon, written for bwsim's tests: Gluon has no argmax, so
kernels reduce (value, index) pairs with a combiner that compares and selects (as tutorial
code does), and a reduction of several operands may fold each with its own operation
(`gl.reduce` of a tuple). Per row of a [ROWS, COLS] f32 x and i32 y:
  vmax, imax  the maximum of x and its first position
  vmin, imin  the minimum of y and its last position
  sums, maxes the sum of x and the maximum of y, from one two-operand reduction
  tails       the reverse running sum of y (`gl.associative_scan(..., reverse=True)`): element c
              is y[r, c] + ... + y[r, COLS - 1]
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def max_first(v0, i0, v1, i1):
    take = (v0 > v1) | ((v0 == v1) & (i0 < i1))
    return gl.where(take, v0, v1), gl.where(take, i0, i1)


@gluon.jit
def min_last(v0, i0, v1, i1):
    take = (v0 < v1) | ((v0 == v1) & (i0 > i1))
    return gl.where(take, v0, v1), gl.where(take, i0, i1)


@gluon.jit
def add_and_max(a0, b0, a1, b1):
    return a0 + a1, gl.maximum(b0, b1)


@gluon.jit
def add(a, b):
    return a + b


@gluon.jit
def reductions_kernel(x_ptr, y_ptr, vmax_ptr, imax_ptr, vmin_ptr, imin_ptr, sums_ptr, maxes_ptr, tails_ptr,
                      ROWS: gl.constexpr, COLS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, COLS // 32], [1, 32], [gl.num_warps(), 1], [1, 0])
    rows = gl.arange(0, ROWS, gl.SliceLayout(1, layout))
    cols = gl.arange(0, COLS, gl.SliceLayout(0, layout))
    offs = rows[:, None] * COLS + cols[None, :]
    x = gl.load(x_ptr + offs)
    y = gl.load(y_ptr + offs)
    pos = gl.zeros([ROWS, COLS], gl.int32, layout) + cols[None, :]
    vmax, imax = gl.reduce((x, pos), 1, max_first)
    vmin, imin = gl.reduce((y, pos), 1, min_last)
    sums, maxes = gl.reduce((x, y), 1, add_and_max)
    gl.store(vmax_ptr + rows, vmax)
    gl.store(imax_ptr + rows, imax)
    gl.store(vmin_ptr + rows, vmin)
    gl.store(imin_ptr + rows, imin)
    gl.store(sums_ptr + rows, sums)
    gl.store(maxes_ptr + rows, maxes)
    gl.store(tails_ptr + offs, gl.associative_scan(y, 1, add, reverse=True))

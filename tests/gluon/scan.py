"""Prefix scans in Gluon, written for bwsim's tests (TTGIR's `tt.scan` with one-op combiners):
per row, the running sum and the running maximum of a [ROWS, COLS] int32 matrix, the
columns spread over the registers and lanes of a warp, rows over warps.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def _add(a, b):
    return a + b


@gluon.jit
def _max(a, b):
    return gl.maximum(a, b)


@gluon.jit
def scan_kernel(x_ptr, sum_ptr, max_ptr, ROWS: gl.constexpr, COLS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, COLS // 32], [1, 32], [gl.num_warps(), 1], [1, 0])
    rows = gl.arange(0, ROWS, gl.SliceLayout(1, layout))
    cols = gl.arange(0, COLS, gl.SliceLayout(0, layout))
    offs = rows[:, None] * COLS + cols[None, :]
    x = gl.load(x_ptr + offs)
    gl.store(sum_ptr + offs, gl.associative_scan(x, 1, _add))
    gl.store(max_ptr + offs, gl.associative_scan(x, 1, _max))

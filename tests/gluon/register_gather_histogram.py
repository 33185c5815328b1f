"""A register-tile gather and a histogram in Gluon, written for bwsim's tests.

Per program, BLOCK values of x (int32) and a [ROWS, COLS] tile of y (f32):
  rotated     rotated[r, c] = y[r, (c + r + 1) % COLS] (`gl.gather` along the columns)
  hist        the number of x values in each of BINS bins (`gl.histogram`, masked to the first n),
              added into the global histogram by atomics
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def register_gather_histogram_kernel(x_ptr, y_ptr, rotated_ptr, hist_ptr, n, BLOCK: gl.constexpr,
                                     BINS: gl.constexpr, ROWS: gl.constexpr, COLS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 2], [4, 8], [gl.num_warps(), 1], [1, 0])
    flat: gl.constexpr = gl.BlockedLayout([2], [32], [gl.num_warps()], [0])
    pid = gl.program_id(0)
    rows = gl.arange(0, ROWS, gl.SliceLayout(1, layout))
    cols = gl.arange(0, COLS, gl.SliceLayout(0, layout))
    offs = pid * ROWS * COLS + rows[:, None] * COLS + cols[None, :]
    y = gl.load(y_ptr + offs)
    idx = (cols[None, :] + rows[:, None] + 1) % COLS
    gl.store(rotated_ptr + offs, gl.gather(y, idx, 1))

    xo = pid * BLOCK + gl.arange(0, BLOCK, flat)
    mask = xo < n
    x = gl.load(x_ptr + xo, mask=mask, other=0)
    hist = gl.histogram(x, BINS, mask=mask, layout=flat)
    gl.atomic_add(hist_ptr + gl.arange(0, BINS, flat), hist)

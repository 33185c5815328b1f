"""Row softmax in Gluon, written for bwsim's tests: the first kernel outside the seed tutorials'
operations (`gl.max`, `gl.exp2`, `gl.sum` and a division on register tiles, masked global
loads and stores). Each program normalises ROWS rows of a row-major [n_rows, COLS] matrix.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def softmax_kernel(x_ptr, out_ptr, n_rows, ROWS: gl.constexpr, COLS: gl.constexpr):
    # One row per warp slice: a row's COLS elements spread over the 32 lanes of a warp, so the
    # row reductions are in-thread adds followed by lane shuffles.
    layout: gl.constexpr = gl.BlockedLayout([1, COLS // 32], [1, 32], [gl.num_warps(), 1], [1, 0])
    rows = gl.program_id(0) * ROWS + gl.arange(0, ROWS, gl.SliceLayout(1, layout))
    cols = gl.arange(0, COLS, gl.SliceLayout(0, layout))
    offs = rows[:, None] * COLS + cols[None, :]
    mask = (rows[:, None] < n_rows) & (cols[None, :] < COLS)
    x = gl.load(x_ptr + offs, mask=mask, other=0.0)
    row_max = gl.max(x, axis=1)
    # exp(x - max) as exp2 of a scaled difference, as Triton's attention kernels write it.
    p = gl.exp2((x - row_max[:, None]) * 1.4426950408889634)
    denom = gl.sum(p, axis=1)
    gl.store(out_ptr + offs, p / denom[:, None], mask=mask)

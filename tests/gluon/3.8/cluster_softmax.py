"""Row softmax over a cluster of CTAs, in Triton 3.8's Gluon API, written for bwsim's tests.

One program (a cluster of `num_ctas` CTAs) owns BLOCK_M rows of N columns; the register layout's
`cga_layout` splits the columns over the cluster's CTAs (`[[0, 1]]` for two CTAs, `[[0, 1], [0, 2]]`
for four), so each row's maximum and sum are reductions across the CTAs: the compiler exchanges the
CTAs' partial results through distributed shared memory and a cluster barrier. The user writes a
single-CTA softmax.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def cluster_softmax_kernel(x_ptr, out_ptr, N: gl.constexpr, BLOCK_M: gl.constexpr, CGA: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0], cga_layout=CGA)
    rows = gl.program_id(0) * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, N, layout=gl.SliceLayout(0, layout))
    offs = rows[:, None] * N + cols[None, :]
    x = gl.load(x_ptr + offs)
    row_max = gl.max(x, axis=1)
    e = gl.exp(x - row_max[:, None])
    total = gl.sum(e, axis=1)
    gl.store(out_ptr + offs, e / total[:, None])


@gluon.jit
def cluster_row_softmax_kernel(x_ptr, out_ptr, N: gl.constexpr, CGA: gl.constexpr, BUG: gl.constexpr):
    # One row per program, the row's N columns split over the cluster's CTAs by a 1-D layout: the
    # row's maximum and sum are scalars, reduced across the CTAs.
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [gl.num_warps()], [0], cga_layout=CGA)
    row = gl.program_id(0)
    cols = gl.arange(0, N, layout)
    x = gl.load(x_ptr + row * N + cols)
    row_max = gl.max(x, axis=0)
    e = gl.exp(x - row_max)
    total = gl.sum(e, axis=0)
    if BUG == "half_stride":
        # Planted bug: the output rows are N // 2 apart, so each row's second half lands on the
        # next row's first half, written by another cluster.
        out_row = out_ptr + row * (N // 2)
    else:
        out_row = out_ptr + row * N
    gl.store(out_row + cols, e / total)

"""Layout conversions between the CTAs of a cluster, in Triton 3.8's Gluon API, written for bwsim's
tests.

One program (a cluster of `num_ctas` CTAs) owns BLOCK_M rows of N columns. The tile is loaded in
the layout `FROM` (its `cga_layout`, e.g. the rows split over the CTAs), scaled, converted to the
layout `TO` (e.g. the columns split over the CTAs, or every CTA holding the whole tile) and stored
from there: each CTA now stores values another CTA loaded, so `gl.convert_layout` moves them
between the CTAs (through distributed shared memory and cluster barriers, which the compiler
adds). out = 2 * x, exactly.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def cluster_convert_kernel(x_ptr, out_ptr, N: gl.constexpr, BLOCK_M: gl.constexpr, FROM: gl.constexpr,
                           TO: gl.constexpr):
    src: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0], cga_layout=FROM)
    dst: gl.constexpr = gl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0], cga_layout=TO)
    row0 = gl.program_id(0) * BLOCK_M
    rows = row0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, src))
    cols = gl.arange(0, N, layout=gl.SliceLayout(0, src))
    x = gl.load(x_ptr + rows[:, None] * N + cols[None, :])
    y = gl.convert_layout(x * 2.0, dst)
    rows_d = row0 + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, dst))
    cols_d = gl.arange(0, N, layout=gl.SliceLayout(0, dst))
    gl.store(out_ptr + rows_d[:, None] * N + cols_d[None, :], y)

"""Global atomics in Gluon, written for bwsim's tests (TTGIR's `tt.atomic_rmw`): a histogram
of N int32 values into BINS bins (atomic add of 1, many programs hitting the same bins), a
float sum per bin (atomic add of the value, integer-valued so that any order gives the same
bits), and a running maximum per bin (atomic max).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def atomics_kernel(x_ptr, hist_ptr, sums_ptr, maxes_ptr, n, BINS: gl.constexpr, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    mask = offs < n
    x = gl.load(x_ptr + offs, mask=mask, other=0)
    bins = x % BINS
    gl.atomic_add(hist_ptr + bins, gl.full([BLOCK], 1, gl.int32, layout), mask=mask)
    gl.atomic_add(sums_ptr + bins, x.to(gl.float32), mask=mask)
    gl.atomic_max(maxes_ptr + bins, x, mask=mask)

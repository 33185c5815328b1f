"""A data-dependent `while` loop in Gluon, written for bwsim's tests (TTGIR's `scf.while`, as
persistent kernels walking a work queue use it): each program sums n, 3n, 9n, ... below LIMIT,
starting from n = program_id + 1, and adds the sum to its slice of x.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def while_loop_kernel(x_ptr, out_ptr, limit, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * N + gl.arange(0, N, layout)
    x = gl.load(x_ptr + offs)
    n = gl.program_id(0) + 1
    total = 0
    while n < limit:
        total += n
        n = n * 3
    gl.store(out_ptr + offs, x + total)

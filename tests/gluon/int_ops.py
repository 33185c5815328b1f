"""Unsigned integer operations in Gluon, written for bwsim's tests: uint32 division, remainder,
logical shift, comparison, minimum and zero extension of a signed int32 input (TTGIR's
`arith.divui`, `remui`, `shrui`, `cmpi ult`, `minui`, `extui`), as hashing and index
arithmetic in real kernels use them. One program, N elements.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def int_ops_kernel(x_ptr, out_ptr, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, N, layout)
    x = gl.load(x_ptr + offs).to(gl.uint32)
    gl.store(out_ptr + offs, (x // 7).to(gl.int32))
    gl.store(out_ptr + N + offs, (x % 1000).to(gl.int32))
    gl.store(out_ptr + 2 * N + offs, (x >> 3).to(gl.int32))
    gl.store(out_ptr + 3 * N + offs, (x < 2000000000).to(gl.int32))
    gl.store(out_ptr + 4 * N + offs, gl.minimum(x, 3000000000).to(gl.int32))
    # Zero extension: the uint32 value as int64, then its high half (0) plus its bit 31.
    wide = x.to(gl.int64)
    gl.store(out_ptr + 5 * N + offs, ((wide >> 31) + (wide >> 32)).to(gl.int32))

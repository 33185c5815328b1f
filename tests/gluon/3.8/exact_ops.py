"""Operations whose meaning is one exactly specified instruction, in Triton 3.8's Gluon API
(`gl.clamp` is new in it), written for bwsim's tests: the high half of an unsigned product
(`gl.umulhi`), IEEE division rounded to nearest (`gl.div_rn`), bit casts between element types of
one width (`x.to(dtype, bitcast=True)`) and clamping (`gl.clamp`, with and without NaN
propagation). One program of N elements; each output row is one operation's result.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
import triton.language as tl


@gluon.jit
def exact_ops_kernel(x_ptr, y_ptr, u_ptr, f_ptr, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, N, layout)
    x = gl.load(x_ptr + offs)  # int32 across the whole range
    y = gl.load(y_ptr + offs)  # float32, some NaN
    # Rows of u (int32): umulhi of x and its reverse, the bits of y, the bits of y / 3 rounded to
    # nearest; rows of f (float32): x's bits read as a float then clamped to [-2, 2] (a NaN stays
    # NaN), y clamped to [-0.5, 0.5] without NaN propagation (a NaN becomes -0.5).
    xr = gl.load(x_ptr + (N - 1 - offs))
    gl.store(u_ptr + offs, gl.umulhi(x, xr))
    gl.store(u_ptr + N + offs, y.to(gl.int32, bitcast=True))
    gl.store(u_ptr + 2 * N + offs, gl.div_rn(y, 3.0).to(gl.int32, bitcast=True))
    gl.store(f_ptr + offs, gl.clamp(x.to(gl.float32, bitcast=True), -2.0, 2.0, propagate_nan=tl.PropagateNan.ALL))
    gl.store(f_ptr + N + offs, gl.clamp(y, -0.5, 0.5))

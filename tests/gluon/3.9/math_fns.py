"""Math functions of libdevice in Gluon, written for bwsim's tests: tanh (in the tanh form of
GELU), exp10, log10, log1p, expm1, tan and atan of f32 values, as activation functions and
log-space arithmetic use them. In the TTGIR: `tt.extern_elementwise` of `__nv_tanhf`,
`__nv_exp10f`, `__nv_log10f`, `__nv_log1pf`, `__nv_expm1f`, `__nv_tanf` and `__nv_atanf`. One
program of BLOCK elements each; the first prints its log1p results
(`gl.device_print`, TTGIR's `tt.print`).
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.extra import libdevice


@gluon.jit
def math_fns_kernel(x_ptr, out_ptr, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([2], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    n = gl.num_programs(0) * BLOCK
    x = gl.load(x_ptr + offs)
    # GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
    inner = 0.7978845608 * (x + 0.044715 * x * x * x)
    gl.store(out_ptr + offs, 0.5 * x * (1.0 + libdevice.tanh(inner)))
    gl.store(out_ptr + n + offs, libdevice.exp10(x))
    gl.store(out_ptr + 2 * n + offs, libdevice.log10(gl.abs(x) + 0.5))
    # log1p of small arguments, where log(1 + x) would lose the digits of x.
    small = libdevice.log1p(x * 1e-4)
    gl.store(out_ptr + 3 * n + offs, small)
    # expm1 of small arguments, where exp(x) - 1 would lose the digits of x; tan inside (-pi/2, pi/2).
    gl.store(out_ptr + 4 * n + offs, libdevice.expm1(x * 1e-3))
    gl.store(out_ptr + 5 * n + offs, libdevice.tan(x * 0.5))
    # atan over [-12, 12]: each of its reductions (|x| below tan(pi/8), up to tan(3pi/8), above).
    gl.store(out_ptr + 6 * n + offs, libdevice.atan(x * 4.0))
    if gl.program_id(0) == 0:
        gl.device_print("log1p", small)

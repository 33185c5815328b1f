"""Float conversions with an explicit rounding mode (`tt.fp_to_fp`), written for bwsim's tests.

Each program converts N f32 values, and the same values scaled by 2^-13 (an exact scaling that
reaches the subnormal ranges of f16 and of the fp8 formats), to narrower formats and back to
f32, one row of `out` per conversion:

| row | conversion | TTGIR |
|---|---|---|
| 0 | f32 -> f16 toward zero | `tt.fp_to_fp ..., rounding = rtz` |
| 1 | f32 -> bf16 toward zero | `tt.fp_to_fp ..., rounding = rtz` |
| 2 | f32 -> e5m2 toward zero (Triton: through f16 toward zero) | `tt.fp_to_fp ..., rounding = rtz` |
| 3 | f32 -> e5m2 to nearest even, saturating | `tt.fp_to_fp ..., rounding = rtne` |
| 4 | f32 -> e4m3 to nearest even, saturating (largest 448) | `tt.fp_to_fp ..., rounding = rtne` |
| 5 | row 0's f16 -> bf16 to nearest even | `tt.fp_to_fp ..., rounding = rtne` |
| 6 | row 0's f16 -> e4m3 to nearest even, saturating | `tt.fp_to_fp ..., rounding = rtne` |
| 7 | row 1's bf16 -> e5m2 to nearest even, saturating | `tt.fp_to_fp ..., rounding = rtne` |

The fp8 values come back to f32 through `tt.fp_to_fp` without a rounding (exact upcasts);
rows 8 to 15 are the same conversions of the scaled values.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def _convert_all(x, out_ptr, offs, ROW: gl.constexpr, N: gl.constexpr):
    h = x.to(gl.float16, fp_downcast_rounding="rtz")
    b = x.to(gl.bfloat16, fp_downcast_rounding="rtz")
    e5z = x.to(gl.float8e5, fp_downcast_rounding="rtz")
    e5n = x.to(gl.float8e5, fp_downcast_rounding="rtne")
    e4n = x.to(gl.float8e4nv)
    hb = h.to(gl.bfloat16)
    h4 = h.to(gl.float8e4nv)
    b5 = b.to(gl.float8e5)
    gl.store(out_ptr + (ROW + 0) * N + offs, h.to(gl.float32))
    gl.store(out_ptr + (ROW + 1) * N + offs, b.to(gl.float32))
    gl.store(out_ptr + (ROW + 2) * N + offs, e5z.to(gl.float32))
    gl.store(out_ptr + (ROW + 3) * N + offs, e5n.to(gl.float32))
    gl.store(out_ptr + (ROW + 4) * N + offs, e4n.to(gl.float32))
    gl.store(out_ptr + (ROW + 5) * N + offs, hb.to(gl.float32))
    gl.store(out_ptr + (ROW + 6) * N + offs, h4.to(gl.float32))
    gl.store(out_ptr + (ROW + 7) * N + offs, b5.to(gl.float32))


@gluon.jit
def fp_rounding_kernel(x_ptr, out_ptr, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([2], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, N, layout)
    x = gl.load(x_ptr + offs)
    _convert_all(x, out_ptr, offs, 0, N)
    _convert_all(x * 0.0001220703125, out_ptr, offs, 8, N)

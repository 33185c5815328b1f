"""8-bit bit casts in Gluon, written for bwsim's tests: bytes read as fp8 values and fp8 values
written as bytes, as a kernel that receives fp8 data in an int8 tensor (or hands it on as one)
does. In the TTGIR: `tt.bitcast` of `i8` to `f8E4M3FN` and `f8E5M2`, and of `f8E4M3FN` back to
`i8`. One program of BLOCK bytes.

| row of out | value |
|---|---|
| 0 | the byte read as e4m3, as f32 |
| 1 | the byte read as e5m2, as f32 |

`back` holds at every third position the e4m3 value of that byte and elsewhere that of the byte
at the mirrored position, selected in e4m3 and written as bytes.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def bitcast_fp8_kernel(x_ptr, out_ptr, back_ptr, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, BLOCK, layout)
    bits = gl.load(x_ptr + offs)
    e4 = bits.to(gl.float8e4nv, bitcast=True)
    e5 = bits.to(gl.float8e5, bitcast=True)
    gl.store(out_ptr + offs, e4.to(gl.float32))
    gl.store(out_ptr + BLOCK + offs, e5.to(gl.float32))
    # A select in e4m3, then the selected values viewed as bytes again.
    mirrored = gl.load(x_ptr + (BLOCK - 1 - offs)).to(gl.float8e4nv, bitcast=True)
    kept = gl.where(offs % 3 == 0, e4, mirrored)
    gl.store(back_ptr + offs, kept.to(gl.int8, bitcast=True))

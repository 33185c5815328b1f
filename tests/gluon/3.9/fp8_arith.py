"""Four-lane fp8 arithmetic through Gluon's `add2`, `mul2` and `fma2` on fp8 tensors, written for
bwsim's tests. Triton 3.9 lowers them (`ttng.packed_arith` with fp8 types in the TTGIR) to
sm_100a's `add.e4m3x4.e4m3x4`, `mul.e4m3x4.e4m3x4.e4m3x4` and `fma.e5m2x4.e4m3x4.e4m3x4`,
each lane rounded once to nearest even.

An elementwise kernel in the style of tutorial 01 over BLOCK elements per program, x and y e4m3,
z e5m2 (each thread holds four neighbouring elements, one 32-bit register of each):

    s   = x + y               e4m3
    p   = s * y               e4m3
    out = p * x + z           e5m2 (the addend's type), one rounding, stored as f32 (exactly)

BUG='overflow' scales s by 64 first (mul2 by a splat 64.0): products past e4m3's largest
finite value (448), whose result the PTX ISA does not state (bwsim: `unspecified-result` at the
mul2 line, naming the lane's operands).

fp4_fma_kernel takes fp4 weights: w holds two e2m1 values a byte (the low nibble first), which
`fma2` reads as `.e2m1x4` lanes (`fma.e4m3x4.e2m1x4.e4m3x4`): out = w * y + z in e4m3, rounded
once, stored as f32.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.blackwell import add2, fma2, mul2


@gluon.jit
def fp8_arith_kernel(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: gl.constexpr, BUG: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    x = gl.load(x_ptr + offs)
    y = gl.load(y_ptr + offs)
    z = gl.load(z_ptr + offs)
    s = add2(x, y)
    if BUG == "overflow":
        # BUG: overflow (|64 * s * y| passes 448)
        s = mul2(s, 64.0)
    p = mul2(s, y)
    gl.store(out_ptr + offs, fma2(p, x, z).to(gl.float32))


@gluon.jit
def fp4_fma_kernel(w_ptr, y_ptr, z_ptr, out_ptr, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [gl.num_warps()], [0])
    packed: gl.constexpr = gl.BlockedLayout([2], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    w = gl.load(w_ptr + gl.program_id(0) * (BLOCK // 2) + gl.arange(0, BLOCK // 2, packed))
    y = gl.load(y_ptr + offs)
    z = gl.load(z_ptr + offs)
    gl.store(out_ptr + offs, fma2(w, y, z).to(gl.float32))

"""Integer and bit tricks in inline PTX, written for bwsim's tests: the helpers that kernels hide
from the compiler in `gl.inline_asm_elementwise` (byte permutes, three-input logic, funnel
shifts, bit-field extract and insert, packing conversions, flush-to-zero exponentials,
predicates and selects, packed f16 arithmetic two elements to a register, a widening multiply).
One program of N elements; each output row is one helper's result.
"""
import triton_compat  # noqa: F401  (Triton 3.9 names on older Tritons)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def byte_swap(x):
    # Bytes 3, 2, 1, 0 of x in reverse order.
    return gl.inline_asm_elementwise("prmt.b32 $0, $1, 0, 0x0123;", "=r,r", [x], dtype=gl.int32, is_pure=True,
                                     pack=1)


@gluon.jit
def majority(a, b, c):
    # Each bit set where at least two of a, b, c have it (lookup table 0xE8).
    return gl.inline_asm_elementwise("lop3.b32 $0, $1, $2, $3, 0xE8;", "=r,r,r,r", [a, b, c], dtype=gl.int32,
                                     is_pure=True, pack=1)


@gluon.jit
def rotate13(x):
    # x rotated left by 13 bits: a funnel shift of {x, x}.
    return gl.inline_asm_elementwise("shf.l.wrap.b32 $0, $1, $1, 13;", "=r,r", [x], dtype=gl.int32,
                                     is_pure=True, pack=1)


@gluon.jit
def field(x):
    # Bits 5..11 of x sign-extended, inserted into bits 20..27 of x.
    return gl.inline_asm_elementwise(
        """
        {
        .reg .b32 f;
        bfe.s32 f, $1, 5, 7;
        bfi.b32 $0, f, $1, 20, 8;
        }
        """, "=r,r", [x], dtype=gl.int32, is_pure=True, pack=1)


@gluon.jit
def half_pair(hi, lo):
    # Two f32 values rounded to f16 and packed: hi in the high half.
    return gl.inline_asm_elementwise("cvt.rn.f16x2.f32 $0, $1, $2;", "=r,r,r", [hi, lo], dtype=gl.int32,
                                     is_pure=True, pack=1)


@gluon.jit
def exp2_ftz(x):
    return gl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [x], dtype=gl.float32, is_pure=True,
                                     pack=1)


@gluon.jit
def relu_or_minus_one(x, n):
    # x where x > 0; -1 where x <= 0 and n is odd; 0 otherwise (setp, predicate logic, selp).
    return gl.inline_asm_elementwise(
        """
        {
        .reg .pred pos, odd;
        .reg .b32 bit;
        setp.gt.f32 pos, $1, 0f00000000;
        and.b32 bit, $2, 1;
        setp.ne.and.b32 odd, bit, 0, !pos;
        selp.f32 $0, 0fBF800000, 0f00000000, odd;
        @pos mov.b32 $0, $1;
        }
        """, "=f,f,r", [x, n], dtype=gl.float32, is_pure=True, pack=1)


@gluon.jit
def add_halves(a, b):
    # Two f16 elements per register (pack=2): one add.f16x2 adds both.
    return gl.inline_asm_elementwise("add.rn.f16x2 $0, $1, $2;", "=r,r,r", [a, b], dtype=gl.float16,
                                     is_pure=True, pack=2)


@gluon.jit
def square_wide(x):
    return gl.inline_asm_elementwise("mul.wide.s32 $0, $1, $1;", "=l,r", [x], dtype=gl.int64, is_pure=True,
                                     pack=1)


@gluon.jit
def bit_tricks_kernel(x_ptr, y_ptr, out_ptr, f_ptr, h_ptr, w_ptr, N: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([2], [32], [gl.num_warps()], [0])
    offs = gl.arange(0, N, layout)
    x = gl.load(x_ptr + offs)
    y = gl.load(y_ptr + offs)
    gl.store(out_ptr + offs, byte_swap(x))
    gl.store(out_ptr + N + offs, majority(x, byte_swap(x), rotate13(x)))
    gl.store(out_ptr + 2 * N + offs, rotate13(x))
    gl.store(out_ptr + 3 * N + offs, field(x))
    gl.store(out_ptr + 4 * N + offs, half_pair(y, y * -0.5))
    gl.store(f_ptr + offs, exp2_ftz(y * 50.0))
    gl.store(f_ptr + N + offs, relu_or_minus_one(y, x))
    yh = y.to(gl.float16)
    gl.store(h_ptr + offs, add_halves(yh, yh * 3.0))
    gl.store(w_ptr + offs, square_wide(x))

//! Unit tests of the inline-PTX interpreter against hand-computed values.

use super::*;
use crate::types::DType::*;

fn run1(asm: &str, cons: &str, args: &[DType], res: &[DType], pack: usize, input: &[u64]) -> Vec<u64> {
    let p = compile(asm, cons, args, res, pack).unwrap_or_else(|e| panic!("{e}"));
    p.run(input).unwrap_or_else(|e| panic!("{e}"))
}

fn f(x: f32) -> u64 {
    x.to_bits() as u64
}

#[test]
fn paired_f32_through_64_bit_registers() {
    let pack = "mov.b64 $0, { $1, $2 };";
    assert_eq!(
        run1(pack, "=l,r,r", &[F32, F32], &[I64], 1, &[f(1.5), f(-2.0)]),
        vec![f(-2.0) << 32 | f(1.5)]
    );
    let unpack = "mov.b64 { $0, $1 }, $2;";
    assert_eq!(
        run1(
            unpack,
            "=r,=r,l",
            &[I64],
            &[F32, F32],
            1,
            &[f(-2.0) << 32 | f(1.5)]
        ),
        vec![f(1.5), f(-2.0)]
    );
    let add = "add.f32x2 $0, $1, $2;";
    let a = f(1.0) << 32 | f(0.1);
    let b = f(2.0) << 32 | f(0.2);
    assert_eq!(
        run1(add, "=l,l,l", &[I64, I64], &[I64], 1, &[a, b]),
        vec![f(3.0) << 32 | f(0.1 + 0.2)]
    );
    let fma = "fma.rn.f32x2 $0, $1, $2, $3;";
    let c = f(-1.0) << 32 | f(1e-8);
    let want = f(1.0f32.mul_add(2.0, -1.0)) << 32 | f(0.1f32.mul_add(0.2, 1e-8));
    assert_eq!(
        run1(fma, "=l,l,l,l", &[I64, I64, I64], &[I64], 1, &[a, b, c]),
        vec![want]
    );
}

#[test]
fn sub_word_elements_share_a_register_as_triton_packs_them() {
    // pack=2 f16: one 32-bit register per argument and result, element 0 in the low half.
    let p = compile("add.rn.f16x2 $0, $1, $2;", "=r,r,r", &[F16, F16], &[F16], 2).unwrap();
    assert_eq!(p.slots.len(), 3);
    let h = |x: f32| half::f16::from_f32(x).to_bits() as u64;
    assert_eq!(
        p.run(&[h(1.0), h(2.0), h(0.5), h(-4.0)]).unwrap(),
        vec![h(1.5), h(-2.0)]
    );
    // pack=1 f16 travels in a 16-bit `h` register; `r` is refused.
    assert!(compile("mov.b16 $0, $1;", "=h,h", &[F16], &[F16], 1).is_ok());
    let e = compile("mov.b32 $0, $1;", "=r,r", &[F16], &[F16], 1).unwrap_err();
    assert!(e.message.contains("16 bits"), "{e}");
    // pack=4 i8: four bytes in one register; prmt reverses them, which mixes elements.
    let e = compile("prmt.b32 $0, $1, 0, 0x0123;", "=r,r", &[I8], &[I8], 4).unwrap_err();
    assert!(e.message.contains("depend on other elements"), "{e}");
    // ... while a byte-wise xor keeps every element to itself.
    let p = compile("xor.b32 $0, $1, 0x80808080;", "=r,r", &[I8], &[I8], 4).unwrap();
    assert_eq!(p.run(&[1, 2, 0x80, 0xff]).unwrap(), vec![0x81, 0x82, 0, 0x7f]);
}

#[test]
fn bit_manipulation_matches_hand_computed_values() {
    let r = |asm: &str, n: usize, x: &[u64]| {
        let cons = std::iter::once("=r")
            .chain(std::iter::repeat_n("r", n))
            .collect::<Vec<_>>()
            .join(",");
        run1(asm, &cons, &vec![I32; n], &[I32], 1, x)[0]
    };
    // prmt: bytes of {b, a} = 0x77665544_33221100 picked by nibbles; 8+ replicates the sign.
    assert_eq!(
        r("prmt.b32 $0, $1, $2, 0x7531;", 2, &[0x3322_1100, 0x7766_5544]),
        0x7755_3311
    );
    // Selector 2 copies byte 2 (0x80); selector 0xa replicates its sign bit.
    assert_eq!(
        r("prmt.b32 $0, $1, $2, $3;", 3, &[0x0080_0000, 0, 0x0000_aaa2]),
        0xffff_ff80
    );
    // lop3 with the table of a & b | c (0xF0 & 0xCC | 0xAA = 0xEA).
    assert_eq!(
        r(
            "lop3.b32 $0, $1, $2, $3, 0xEA;",
            3,
            &[0xff00_ff00, 0x0ff0_0ff0, 0x0000_000f]
        ),
        0x0f00_0f0f
    );
    // shf: funnel shifts of {b, a}.
    for (asm, want) in [
        ("shf.l.wrap.b32 $0, $1, $2, 8;", 0x2233_44aa),
        ("shf.r.wrap.b32 $0, $1, $2, 8;", 0x44aa_bbcc),
        ("shf.l.clamp.b32 $0, $1, $2, 40;", 0xaabb_ccdd),
        ("shf.r.wrap.b32 $0, $1, $2, 40;", 0x44aa_bbcc),
    ] {
        assert_eq!(r(asm, 2, &[0xaabb_ccdd, 0x1122_3344]), want, "{asm}");
    }
    // bfe: bits 4..12 of 0xf0f0 = 0x0f; signed from a field whose top bit is set.
    assert_eq!(r("bfe.u32 $0, $1, 4, 8;", 1, &[0xf0f0]), 0x0f);
    assert_eq!(r("bfe.s32 $0, $1, 4, 4;", 1, &[0x00f0]), 0xffff_ffff);
    assert_eq!(r("bfe.s32 $0, $1, 28, 8;", 1, &[0x8000_0000]), 0xffff_fff8);
    // bfi: 0xab into bits 8..16 of 0x11223344.
    assert_eq!(
        r("bfi.b32 $0, $1, $2, 8, 8;", 2, &[0xab, 0x1122_3344]),
        0x1122_ab44
    );
    // Shifts past the width.
    assert_eq!(r("shl.b32 $0, $1, 33;", 1, &[1]), 0);
    assert_eq!(r("shr.s32 $0, $1, 40;", 1, &[0x8000_0000]), 0xffff_ffff);
    assert_eq!(r("shr.u32 $0, $1, 31;", 1, &[0x8000_0000]), 1);
    // Integer arithmetic: saturation, high and wide products, population and leading zeros.
    assert_eq!(r("add.sat.s32 $0, $1, $2;", 2, &[0x7fff_ffff, 5]), 0x7fff_ffff);
    assert_eq!(
        r("mul.hi.u32 $0, $1, $2;", 2, &[0xffff_ffff, 0xffff_ffff]),
        0xffff_fffe
    );
    assert_eq!(r("mul.hi.s32 $0, $1, $2;", 2, &[0xffff_ffff, 0xffff_ffff]), 0);
    assert_eq!(r("popc.b32 $0, $1;", 1, &[0xf0f0_0001]), 9);
    assert_eq!(r("clz.b32 $0, $1;", 1, &[0x0000_8000]), 16);
    assert_eq!(r("brev.b32 $0, $1;", 1, &[1]), 0x8000_0000);
    assert_eq!(
        run1(
            "mul.wide.s32 $0, $1, $2;",
            "=l,r,r",
            &[I32, I32],
            &[I64],
            1,
            &[0xffff_fffe, 3]
        )[0],
        (-6i64) as u64
    );
}

#[test]
fn predicates_guards_and_scopes() {
    // max(a, b) with setp/selp, and again with guarded moves in a scope.
    let a = "{ .reg .pred p; setp.lt.s32 p, $1, $2; selp.b32 $0, $2, $1, p; }";
    let c = "=r,r,r";
    assert_eq!(
        run1(a, c, &[I32, I32], &[I32], 1, &[(-3i32) as u32 as u64, 2]),
        vec![2]
    );
    let g = "{ .reg .pred p, q; setp.gt.u32 p|q, $1, $2; @p mov.b32 $0, $1; @q mov.b32 $0, $2; }";
    assert_eq!(
        run1(g, c, &[I32, I32], &[I32], 1, &[(-3i32) as u32 as u64, 2]),
        vec![(-3i32) as u32 as u64]
    );
    // Unordered float comparison: NaN compares true with `ltu`, false with `lt`.
    let nan = f(f32::NAN);
    let lt = "{ .reg .pred p; setp.lt.f32 p, $1, $2; selp.u32 $0, 1, 0, p; }";
    assert_eq!(
        run1(lt, "=r,r,r", &[F32, F32], &[I32], 1, &[nan, f(1.0)]),
        vec![0]
    );
    let ltu = "{ .reg .pred p; setp.ltu.f32 p, $1, $2; selp.u32 $0, 1, 0, p; }";
    assert_eq!(
        run1(ltu, "=r,r,r", &[F32, F32], &[I32], 1, &[nan, f(1.0)]),
        vec![1]
    );
    // Registers of one scope are not those of another: `x` is declared twice.
    let s = "{ .reg .b32 x; add.s32 x, $1, 1; mov.b32 $0, x; } { .reg .b32 x; mov.b32 x, 7; }";
    assert_eq!(run1(s, "=r,r", &[I32], &[I32], 1, &[41]), vec![42]);
    // A guarded write that is skipped leaves the output undefined: a run-time error.
    let p = compile(
        "{ .reg .pred p; setp.eq.s32 p, $1, 0; @p mov.b32 $0, 1; }",
        "=r,r",
        &[I32],
        &[I32],
        1,
    )
    .unwrap();
    assert_eq!(p.run(&[0]).unwrap(), vec![1]);
    assert!(matches!(p.run(&[5]), Err(RunError::Undefined { .. })));
}

#[test]
fn float_special_cases() {
    let r1 = |asm: &str, x: u64| run1(asm, "=r,r", &[F32], &[F32], 1, &[x])[0];
    let r2 = |asm: &str, x: u64, y: u64| run1(asm, "=r,r,r", &[F32, F32], &[F32], 1, &[x, y])[0];
    // ex2: exact powers, limits, and the flush of a subnormal result under .ftz.
    assert_eq!(r1("ex2.approx.f32 $0, $1;", f(3.0)), f(8.0));
    assert_eq!(r1("ex2.approx.f32 $0, $1;", f(f32::NEG_INFINITY)), 0);
    assert_eq!(r1("ex2.approx.f32 $0, $1;", f(-140.0)), f(2f32.powi(-140)));
    assert_eq!(r1("ex2.approx.ftz.f32 $0, $1;", f(-140.0)), 0);
    assert_eq!(r1("ex2.approx.f32 $0, $1;", f(f32::NAN)), 0x7fff_ffff);
    // rcp: approximate and IEEE forms give the correctly rounded 1/x; 1/-0 = -inf.
    assert_eq!(r1("rcp.approx.f32 $0, $1;", f(3.0)), f(1.0 / 3.0));
    assert_eq!(r1("rcp.rz.f32 $0, $1;", f(3.0)), f(1.0 / 3.0) - 1);
    assert_eq!(r1("rcp.rn.f32 $0, $1;", f(-0.0)), f(f32::NEG_INFINITY));
    // min/max: a NaN operand loses unless .NaN; -0 is below +0.
    assert_eq!(r2("max.f32 $0, $1, $2;", f(f32::NAN), f(2.0)), f(2.0));
    assert_eq!(r2("max.NaN.f32 $0, $1, $2;", f(f32::NAN), f(2.0)), 0x7fff_ffff);
    assert_eq!(r2("min.f32 $0, $1, $2;", f(0.0), f(-0.0)), f(-0.0));
    assert_eq!(r2("max.f32 $0, $1, $2;", f(-0.0), f(0.0)), f(0.0));
    // NaN results are canonical; inf - inf is NaN; .sat clamps and zeroes NaN.
    assert_eq!(r2("add.f32 $0, $1, $2;", 0x7fc0_0001, f(1.0)), 0x7fff_ffff);
    assert_eq!(
        r2("sub.f32 $0, $1, $2;", f(f32::INFINITY), f(f32::INFINITY)),
        0x7fff_ffff
    );
    assert_eq!(r2("add.sat.f32 $0, $1, $2;", f(0.75), f(0.5)), f(1.0));
    assert_eq!(r2("mul.sat.f32 $0, $1, $2;", f(f32::INFINITY), f(0.0)), 0);
    // Signed zeros of sums: x - x is +0, but -0 when rounding down.
    assert_eq!(r2("sub.rn.f32 $0, $1, $2;", f(1.5), f(1.5)), 0);
    assert_eq!(r2("sub.rm.f32 $0, $1, $2;", f(1.5), f(1.5)), f(-0.0));
    assert_eq!(r2("add.rn.f32 $0, $1, $2;", f(-0.0), f(-0.0)), f(-0.0));
    // .ftz flushes subnormal inputs: tiny * 2^100 is 0.
    let tiny = 1u64;
    assert_eq!(r2("mul.ftz.f32 $0, $1, $2;", tiny, f(2f32.powi(100))), 0);
    assert_eq!(
        r2("mul.f32 $0, $1, $2;", tiny, f(2f32.powi(100))),
        f(2f32.powi(-49))
    );
    // Directed rounding of a sum.
    assert_eq!(r2("add.rp.f32 $0, $1, $2;", f(1.0), f(1e-10)), f(1.0) + 1);
    assert_eq!(r2("add.rz.f32 $0, $1, $2;", f(-1.0), f(-1e-10)), f(-1.0));
    assert_eq!(r2("add.rm.f32 $0, $1, $2;", f(-1.0), f(-1e-10)), f(-1.0) + 1);
}

#[test]
fn min_max_xorsign_abs_take_magnitudes_and_xor_the_signs() {
    // The PTX ISA: `.xorsign.abs` gives the min (max) of |a| and |b| with the XOR of the
    // operands' sign bits; a NaN result ignores the qualifier (the canonical NaN).
    let r2 = |asm: &str, x: f32, y: f32| run1(asm, "=r,r,r", &[F32, F32], &[F32], 1, &[f(x), f(y)])[0];
    let min = "min.xorsign.abs.f32 $0, $1, $2;";
    assert_eq!(r2(min, -3.0, 2.0), f(-2.0));
    assert_eq!(r2(min, -3.0, -2.0), f(2.0));
    assert_eq!(r2(min, 0.25, -2.0), f(-0.25));
    assert_eq!(r2(min, -0.0, 0.0), f(-0.0));
    assert_eq!(r2("max.xorsign.abs.f32 $0, $1, $2;", -3.0, 2.0), f(-3.0));
    // Without `.NaN` the NaN operand is dropped from the min of magnitudes; with it, NaN.
    assert_eq!(r2(min, f32::NAN, 2.0), f(2.0));
    assert_eq!(
        r2("min.NaN.xorsign.abs.f32 $0, $1, $2;", f32::NAN, -2.0),
        0x7fff_ffff
    );
    assert_eq!(r2("min.NaN.xorsign.abs.f32 $0, $1, $2;", -5.0, 2.0), f(-2.0));
    // Per lane of a packed pair: lane 0 (low half) min(|1.5|, |-4|) = -1.5, lane 1
    // min(|-0.5|, |-8|) = +0.5.
    let h = |x: f32| half::f16::from_f32(x).to_bits() as u64;
    let p = compile(
        "min.xorsign.abs.f16x2 $0, $1, $2;",
        "=r,r,r",
        &[F16, F16],
        &[F16],
        2,
    )
    .unwrap();
    assert_eq!(
        p.run(&[h(1.5), h(-0.5), h(-4.0), h(-8.0)]).unwrap(),
        vec![h(-1.5), h(0.5)]
    );
    // `.xorsign` and `.abs` are one qualifier, of the two-operand form.
    let e = |asm: &str, c: &str| compile(asm, c, &[F32, F32], &[F32], 1).unwrap_err().message;
    assert!(e("min.xorsign.f32 $0, $1, $2;", "=r,r,r").contains("xorsign.abs"));
    assert!(e("min.abs.f32 $0, $1, $2;", "=r,r,r").contains("xorsign.abs"));
    let f64_form = compile(
        "min.xorsign.abs.f64 $0, $1, $2;",
        "=l,l,l",
        &[I64, I64],
        &[I64],
        1,
    );
    assert!(f64_form.unwrap_err().message.contains("xorsign"));
}

#[test]
fn bf16_pairs_to_e5m2_pairs_round_to_nearest_even_and_saturate() {
    // `cvt.rn.satfinite.e5m2x2.bf16x2 d, a`: each bf16 lane of a rounded to e5m2 (1 sign, 5
    // exponent bits of bias 15, 2 significand bits), the high lane into the high byte; .satfinite
    // takes what is beyond the largest finite value (57344 = 1.75 * 2^15, 0x7b) to it.
    let b = |x: f32| half::bf16::from_f32(x).to_bits() as u64;
    let cvt = |hi: f32, lo: f32| {
        let asm = "cvt.rn.satfinite.e5m2x2.bf16x2 $0, $1;";
        run1(asm, "=h,r", &[I32], &[I16], 1, &[b(hi) << 16 | b(lo)])[0]
    };
    // 1.0: exponent field 15, significand 0: 0x3c; -2.0: 0xc0.
    assert_eq!(cvt(1.0, -2.0), 0x3cc0);
    // 1.125 = 1.001b lies halfway between 1.00b and 1.01b: to the even 1.00b (0x3c); 1.375 =
    // 1.011b halfway between 1.01b and 1.10b: to 1.10b (0x3e).
    assert_eq!(cvt(1.125, 1.375), 0x3c3e);
    // Beyond the range: saturated, sign kept (0x7b, 0xfb); 1.25 exactly 0x3d.
    assert_eq!(cvt(1.0e6, -1.0e6), 0x7bfb);
    assert_eq!(cvt(f32::INFINITY, 1.25), 0x7b3d);
    // The f16x2 form is the same rounding from the other 16-bit format.
    let h = |x: f32| half::f16::from_f32(x).to_bits() as u64;
    let asm = "cvt.rn.satfinite.e5m2x2.f16x2 $0, $1;";
    assert_eq!(
        run1(asm, "=h,r", &[I32], &[I16], 1, &[h(1.125) << 16 | h(-2.0)])[0],
        0x3cc0
    );
}

#[test]
fn conversions() {
    let h = |x: f32| half::f16::from_f32(x).to_bits() as u64;
    let b = |x: f32| half::bf16::from_f32(x).to_bits() as u64;
    // Packing conversions: the first source goes to the high half.
    let p = "cvt.rn.f16x2.f32 $0, $1, $2;";
    assert_eq!(
        run1(p, "=r,r,r", &[F32, F32], &[I32], 1, &[f(1.0), f(-2.5)]),
        vec![h(1.0) << 16 | h(-2.5)]
    );
    let p = "cvt.rz.bf16x2.f32 $0, $1, $2;";
    // 1 + 2^-8 + 2^-9 truncates to 1 + 2^-8 in bf16 (8 significant bits... 7 stored).
    let x = 1.0 + 2f32.powi(-7) + 2f32.powi(-9);
    assert_eq!(
        run1(p, "=r,r,r", &[F32, F32], &[I32], 1, &[f(x), f(3.0)]),
        vec![b(1.0 + 2f32.powi(-7)) << 16 | b(3.0)]
    );
    // Scalar bf16 conversions (`cvt.rz.bf16.f32`, `cvt.f32.bf16`): the same rounding.
    let x = 1.0 + 2f32.powi(-7) + 2f32.powi(-8) + 2f32.powi(-9);
    assert_eq!(
        run1("cvt.rz.bf16.f32 $0, $1;", "=h,r", &[F32], &[I16], 1, &[f(x)])[0],
        b(1.0 + 2f32.powi(-7))
    );
    assert_eq!(
        run1("cvt.rn.bf16.f32 $0, $1;", "=h,r", &[F32], &[I16], 1, &[f(x)])[0],
        b(1.0 + 2f32.powi(-6))
    );
    assert_eq!(
        run1("cvt.f32.bf16 $0, $1;", "=r,h", &[I16], &[F32], 1, &[b(-3.5)])[0],
        f(-3.5)
    );
    // fp8 round trip: 0.3 to e4m3 and back to f16.
    let to8 = "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;";
    let v = run1(to8, "=h,r,r", &[F32, F32], &[I16], 1, &[f(1000.0), f(0.3)])[0];
    // 1000 saturates to 448 (0x7e); 0.3 rounds to 1.25 * 2^-2 = 0.3125 (nearer than 0.28125):
    // exponent field 5, significand field 2: 0x2a.
    assert_eq!(v, 0x7e2a);
    let back = "cvt.rn.f16x2.e4m3x2 $0, $1;";
    assert_eq!(
        run1(back, "=r,h", &[I16], &[I32], 1, &[v])[0],
        h(448.0) << 16 | h(0.3125)
    );
    // Float to integer: the four integer roundings, saturation and NaN.
    let i = |asm: &str, x: f32| run1(asm, "=r,r", &[F32], &[I32], 1, &[f(x)])[0] as u32 as i32;
    assert_eq!(i("cvt.rni.s32.f32 $0, $1;", 2.5), 2);
    assert_eq!(i("cvt.rni.s32.f32 $0, $1;", -3.5), -4);
    assert_eq!(i("cvt.rzi.s32.f32 $0, $1;", -3.7), -3);
    assert_eq!(i("cvt.rmi.s32.f32 $0, $1;", -3.2), -4);
    assert_eq!(i("cvt.rpi.s32.f32 $0, $1;", 3.2), 4);
    assert_eq!(i("cvt.rzi.s32.f32 $0, $1;", 1e20), i32::MAX);
    assert_eq!(i("cvt.rzi.u32.f32 $0, $1;", -5.0), 0);
    assert_eq!(i("cvt.rni.s32.f32 $0, $1;", f32::NAN), 0);
    // Integer to float with rounding: 2^24 + 1 is not an f32.
    let fl = |asm: &str, x: i32| {
        f32::from_bits(run1(asm, "=r,r", &[I32], &[F32], 1, &[x as u32 as u64])[0] as u32)
    };
    assert_eq!(fl("cvt.rn.f32.s32 $0, $1;", (1 << 24) + 1), 16777216.0);
    assert_eq!(fl("cvt.rp.f32.s32 $0, $1;", (1 << 24) + 1), 16777218.0);
    // Round to an integral float.
    assert_eq!(
        run1("cvt.rmi.f32.f32 $0, $1;", "=r,r", &[F32], &[F32], 1, &[f(-0.5)])[0],
        f(-1.0)
    );
    // Integer narrowing with saturation.
    assert_eq!(
        run1("cvt.sat.s8.s32 $0, $1;", "=r,r", &[I32], &[I32], 1, &[300])[0],
        127
    );
    assert_eq!(
        run1("cvt.s8.s32 $0, $1;", "=r,r", &[I32], &[I32], 1, &[0x1ff])[0],
        0xffff_ffff
    );
}

/// A `0f`/`0d` literal read as untyped bits of its width is its IEEE bit pattern (the PTX ISA's
/// hexadecimal float literals: `0f` followed by the 8 hex digits of an f32, `0d` by the 16 of an
/// f64); Triton writes `mov.b32 %r, 0fFF800000;` for -inf. An integer-typed or narrower read
/// still refuses it.
#[test]
fn float_literals_read_as_bits_are_their_bit_patterns() {
    // `$1` is an unused argument: a snippet reads at least one.
    let mov = |asm: &str, c: &str, r: DType| run1(asm, c, &[I32], &[r], 1, &[0]);
    assert_eq!(mov("mov.b32 $0, 0fFF800000;", "=r,r", F32), vec![0xff80_0000]);
    assert_eq!(mov("mov.b32 $0, 0f3F800000;", "=r,r", I32), vec![f(1.0)]);
    assert_eq!(
        mov("mov.b64 $0, 0dBFF0000000000000;", "=l,r", I64),
        vec![(-1.0f64).to_bits()]
    );
    // Arithmetic on the bits: -inf's sign bit cleared is +inf.
    assert_eq!(
        run1(
            "and.b32 $0, $1, 0f7FFFFFFF;",
            "=r,r",
            &[F32],
            &[F32],
            1,
            &[f(f32::NEG_INFINITY)]
        ),
        vec![f(f32::INFINITY)]
    );
    let e = |asm: &str| compile(asm, "=l,r", &[I32], &[I64], 1).unwrap_err().message;
    assert!(e("mov.b64 $0, 0f3F800000;").contains("float immediate"));
}

#[test]
fn refusals_name_the_instruction() {
    let e = |asm: &str, c: &str| compile(asm, c, &[F32], &[F32], 1).unwrap_err().message;
    let m = e("tanh.approx.f32 $0, $1;", "=r,r");
    assert!(
        m.contains("`tanh.approx.f32 $0, $1;`") && m.contains("outside"),
        "{m}"
    );
    assert!(e("mov.b32 $0, $0;", "=r,r").contains("before writing it"));
    assert!(e("ld.global.b32 $0, [$1];", "=r,l").contains("constraint"));
    assert!(e("prmt.b32.f4e $0, $1, $1, 0;", "=r,r").contains(".f4e"));
    assert!(e("fma.f32 $0, $1, $1, $1;", "=r,r").contains("rounding modifier"));
    assert!(e("add.f32 $0, $1;", "=r,r").contains("3 operands"));
    assert!(e("add.f32 $0, $1, $9;", "=r,r").contains("$9"));
    assert!(e("L: mov.b32 $0, $1;", "=r,r").contains("label"));
    assert!(e("{ mov.b32 $0, $1;", "=r,r").contains("never closed"));
    assert!(e("mov.b32 $0, $1;", "=r,r,r").contains("constraints"));
    assert!(e("mov.b64 $0, $1;", "=r,r").contains("32-bit register"));
}

/// Property tests of the arithmetic against independent references: the host's IEEE
/// arithmetic (round to nearest) and, for the directed modes, exact big-integer values.
mod props {
    use super::super::exec::float_op;
    use super::super::float::{Rnd, F16, F32, F64};
    use super::super::parse::{FMods, FOp};
    use num_bigint::BigInt;
    use proptest::prelude::*;

    /// f32 values: normal, subnormal and special, weighted to moderate exponents.
    fn f32s() -> impl Strategy<Value = f32> {
        prop_oneof![
            8 => (any::<bool>(), 90u32..165, any::<u32>()).prop_map(|(s, e, m)| f32::from_bits((s as u32) << 31 | e << 23 | m & 0x7f_ffff)),
            1 => (any::<bool>(), any::<u32>()).prop_map(|(s, m)| f32::from_bits((s as u32) << 31 | m & 0x7f_ffff)),
            1 => any::<u32>().prop_map(f32::from_bits),
        ]
    }

    fn same32(a: u32, b: f32) -> bool {
        a == b.to_bits() || (b.is_nan() && a == 0x7fff_ffff)
    }

    const SCALE: u32 = 400;

    /// `x * 2^SCALE` exactly (x finite).
    fn big(x: f64) -> BigInt {
        if x == 0.0 {
            return BigInt::from(0);
        }
        let b = x.to_bits();
        let e = ((b >> 52) & 0x7ff) as i64;
        let m = b & ((1 << 52) - 1);
        let (m, e) = if e == 0 {
            (m, -1074)
        } else {
            (m | 1 << 52, e - 1075)
        };
        let v = BigInt::from(m) << (e + SCALE as i64) as usize;
        if x < 0.0 {
            -v
        } else {
            v
        }
    }

    /// The f32 an exact value `t` (scaled by 2^SCALE) rounds to, found by comparing `t` with
    /// the f32s around an approximation (no overflow: callers keep `t` small).
    fn reference_round(t: &BigInt, r: Rnd) -> u32 {
        use num_bigint::Sign;
        let approx = {
            let (s, mag) = (t.sign(), t.magnitude());
            let bits = mag.bits() as i64;
            let shift = (bits - 60).max(0);
            let top = (mag >> shift as usize).iter_u64_digits().next().unwrap_or(0) as f64;
            let v = top * 2f64.powi((shift - SCALE as i64) as i32);
            if s == Sign::Minus {
                -v
            } else {
                v
            }
        };
        let c = approx as f32;
        // Candidates in value order.
        let ord = |x: f32| -> i64 {
            let b = x.to_bits() as i64;
            if b >> 31 != 0 {
                -(b & 0x7fff_ffff)
            } else {
                b
            }
        };
        let unord = |k: i64| -> f32 {
            if k < 0 {
                f32::from_bits((-k) as u32 | 0x8000_0000)
            } else {
                f32::from_bits(k as u32)
            }
        };
        let k0 = ord(c);
        let mut down = None;
        let mut up = None;
        for k in k0 - 4..=k0 + 4 {
            let v = unord(k);
            if !v.is_finite() {
                continue;
            }
            let bv = big(v as f64);
            if &bv <= t {
                down = Some(v);
            }
            if &bv >= t && up.is_none() {
                up = Some(v);
            }
        }
        let (down, up) = (down.expect("a lower neighbour"), up.expect("an upper neighbour"));
        let zero_neg = t.sign() == num_bigint::Sign::Minus;
        let fix = |v: f32| -> u32 {
            if v == 0.0 {
                if zero_neg {
                    0x8000_0000
                } else {
                    0
                }
            } else {
                v.to_bits()
            }
        };
        if down == up {
            return fix(down);
        }
        let pick = match r {
            Rnd::Rm => down,
            Rnd::Rp => up,
            Rnd::Rz => {
                if zero_neg {
                    up
                } else {
                    down
                }
            }
            Rnd::Rn => {
                let two_t = t * 2;
                let mid = big(down as f64) + big(up as f64);
                if two_t < mid {
                    down
                } else if two_t > mid {
                    up
                } else if down.to_bits() & 1 == 0 {
                    down
                } else {
                    up
                }
            }
        };
        fix(pick)
    }

    fn rnds() -> impl Strategy<Value = Rnd> {
        prop_oneof![Just(Rnd::Rn), Just(Rnd::Rz), Just(Rnd::Rm), Just(Rnd::Rp)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn f32_nearest_matches_the_host(a in f32s(), b in f32s(), c in f32s()) {
            let m = FMods::rounded(Rnd::Rn);
            let (x, y, z) = (a.to_bits() as u64, b.to_bits() as u64, c.to_bits() as u64);
            prop_assert!(same32(float_op(FOp::Add, F32, m, &[x, y]) as u32, a + b));
            prop_assert!(same32(float_op(FOp::Sub, F32, m, &[x, y]) as u32, a - b));
            prop_assert!(same32(float_op(FOp::Mul, F32, m, &[x, y]) as u32, a * b));
            prop_assert!(same32(float_op(FOp::Fma, F32, m, &[x, y, z]) as u32, a.mul_add(b, c)));
            prop_assert!(same32(float_op(FOp::Div, F32, m, &[x, y]) as u32, a / b));
            prop_assert!(same32(float_op(FOp::Sqrt, F32, m, &[x]) as u32, a.sqrt()));
        }

        #[test]
        fn f64_nearest_matches_the_host(a in any::<f64>(), b in any::<f64>(), c in any::<f64>()) {
            let m = FMods::rounded(Rnd::Rn);
            let (x, y, z) = (a.to_bits(), b.to_bits(), c.to_bits());
            let same = |r: u64, w: f64| r == w.to_bits() || (w.is_nan() && r == F64.canonical_nan());
            prop_assert!(same(float_op(FOp::Add, F64, m, &[x, y]), a + b));
            prop_assert!(same(float_op(FOp::Mul, F64, m, &[x, y]), a * b));
            prop_assert!(same(float_op(FOp::Fma, F64, m, &[x, y, z]), a.mul_add(b, c)));
            prop_assert!(same(float_op(FOp::Div, F64, m, &[x, y]), a / b));
            prop_assert!(same(float_op(FOp::Sqrt, F64, m, &[x]), a.sqrt()));
        }

        #[test]
        fn f16_nearest_matches_the_half_crate(a in any::<u16>(), b in any::<u16>()) {
            let (ha, hb) = (half::f16::from_bits(a), half::f16::from_bits(b));
            let m = FMods::rounded(Rnd::Rn);
            // Sums and products of f16 values are exact in f64: one rounding to f16.
            let want_add = half::f16::from_f64(ha.to_f64() + hb.to_f64());
            let want_mul = half::f16::from_f64(ha.to_f64() * hb.to_f64());
            let got_add = float_op(FOp::Add, F16, m, &[a as u64, b as u64]) as u16;
            let got_mul = float_op(FOp::Mul, F16, m, &[a as u64, b as u64]) as u16;
            prop_assert!(got_add == want_add.to_bits() || (want_add.is_nan() && got_add == 0x7fff));
            prop_assert!(got_mul == want_mul.to_bits() || (want_mul.is_nan() && got_mul == 0x7fff));
        }

        #[test]
        fn f32_directed_rounding_matches_exact_values(
            a in f32s().prop_filter("finite", |x| x.is_finite() && x.abs() < 1e30),
            b in f32s().prop_filter("finite", |x| x.is_finite() && x.abs() < 1e30),
            c in f32s().prop_filter("finite", |x| x.is_finite() && x.abs() < 1e30),
            r in rnds(),
        ) {
            let m = FMods::rounded(r);
            let (x, y, z) = (a.to_bits() as u64, b.to_bits() as u64, c.to_bits() as u64);
            let (ba, bb, bc) = (big(a as f64), big(b as f64), big(c as f64));
            let scale = BigInt::from(1) << SCALE as usize;
            // a + b and a * b + c, exactly (a product carries 2^SCALE twice).
            let sum = &ba + &bb;
            if sum != BigInt::from(0) {
                prop_assert_eq!(float_op(FOp::Add, F32, m, &[x, y]) as u32, reference_round(&sum, r));
            }
            let fma = (&ba * &bb + &bc * &scale) / &scale;
            let exact = (&ba * &bb + &bc * &scale) % &scale == BigInt::from(0);
            if exact && fma != BigInt::from(0) && (a * b).abs() < 1e30 {
                prop_assert_eq!(float_op(FOp::Fma, F32, m, &[x, y, z]) as u32, reference_round(&fma, r));
            }
            // a / b: the rounding brackets the exact quotient (q*b against a).
            if b != 0.0 && a != 0.0 && (a / b).is_normal() {
                let q = f32::from_bits(float_op(FOp::Div, F32, m, &[x, y]) as u32);
                let step = |v: f32, up: bool| f32::from_bits(if (v > 0.0) == up { v.to_bits() + 1 } else { v.to_bits() - 1 });
                // t = a / b; sign of (q - t) is sign of (q*b - a) * sign(b).
                let rel = |v: f32| (big(v as f64) * &bb - &ba * &scale) * if b < 0.0 { -1 } else { 1 };
                let zero = BigInt::from(0);
                let (lo, hi) = match r {
                    Rnd::Rm => (q, step(q, true)),
                    Rnd::Rp => (step(q, false), q),
                    Rnd::Rz if a / b > 0.0 => (q, step(q, true)),
                    Rnd::Rz => (step(q, false), q),
                    Rnd::Rn => (step(q, false), step(q, true)),
                };
                prop_assert!(rel(lo) <= zero && rel(hi) >= zero, "{a} / {b} {r:?} gave {q}");
            }
        }
    }
}

#[test]
fn four_lane_fp8_arithmetic_rounds_each_lane_once() {
    use crate::numeric::encode;
    let e4 = |v: f64| encode(F8E4M3, v);
    let e5 = |v: f64| encode(F8E5M2, v);
    let word = |l: [u64; 4]| l[0] | l[1] << 8 | l[2] << 16 | l[3] << 24;
    // Lanes: 1 + 1.125 = 2.125 ties to 2 (e4m3 steps of 0.25 above 2); 0.5 + 0.25; -3 + 3 = +0;
    // 2^-9 + 2^-9, the smallest subnormal twice: 2 * 2^-9.
    let a = word([e4(1.0), e4(0.5), e4(-3.0), e4(2f64.powi(-9))]);
    let b = word([e4(1.125), e4(0.25), e4(3.0), e4(2f64.powi(-9))]);
    for add in [
        "add.e4m3x4.e4m3x4 $0, $1, $2;",
        "add.rn.e4m3x4.e4m3x4 $0, $1, $2;",
    ] {
        assert_eq!(
            run1(add, "=r,r,r", &[I32, I32], &[I32], 1, &[a, b]),
            vec![word([e4(2.0), e4(0.75), 0, 0x02])],
            "{add}"
        );
    }
    // fma with an e5m2 result and addend: 1.125 * 1.125 + 1 = 2.265625, e5m2 steps of 0.5
    // above 2: 2.5 (nearer than 2).
    let p = word([e4(1.125), e4(2.0), e4(-1.0), e4(0.0)]);
    let c = word([e5(1.0), e5(-4.0), e5(0.0), e5(-0.0)]);
    assert_eq!(
        run1(
            "fma.rn.e5m2x4.e4m3x4.e4m3x4 $0, $1, $2, $3;",
            "=r,r,r,r",
            &[I32, I32, I32],
            &[I32],
            1,
            &[p, p, c]
        ),
        vec![word([e5(2.5), e5(0.0), e5(1.0), 0])]
    );
    // An e2m1x4 factor is 16 bits, four 4-bit lanes: 1.5 (0x3), -2 (0xc), 6 (0x7), 0.
    let f4 = 0x3 | 0xc << 4 | 0x7 << 8;
    assert_eq!(
        run1(
            "mul.rn.e4m3x4.e2m1x4.e4m3x4 $0, $1, $2;",
            "=r,h,r",
            &[I16, I32],
            &[I32],
            1,
            &[f4, word([e4(3.0), e4(3.0), e4(0.5), e4(1.0)])]
        ),
        vec![word([e4(4.5), e4(-6.0), e4(3.0), 0])]
    );
}

#[test]
fn four_lane_fp8_overflow_and_nan_are_unspecified() {
    let p = compile(
        "mul.rn.e4m3x4.e4m3x4.e4m3x4 $0, $1, $2;",
        "=r,r,r",
        &[I32, I32],
        &[I32],
        1,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Lane 1: 32 * 16 = 512 > 464, past e4m3's largest finite value.
    let a = 0x38 | 0x60 << 8; // 1.0, 32.0
    let b = 0x38 | 0x58 << 8; // 1.0, 16.0
    match p.run(&[a, b]) {
        Err(RunError::Unspecified { lane, why, .. }) => {
            assert_eq!(lane, 1);
            assert!(why.contains("512"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    // A NaN operand (0x7f) in lane 0.
    assert!(matches!(
        p.run(&[0x7f, 0x38]),
        Err(RunError::Unspecified { lane: 0, .. })
    ));
    // `.satfinite` and rounding other than `.rn` are refused.
    assert!(compile(
        "add.rn.satfinite.e4m3x4.e4m3x4 $0, $1, $2;",
        "=r,r,r",
        &[I32, I32],
        &[I32],
        1
    )
    .is_err());
    assert!(compile(
        "add.rz.e4m3x4.e4m3x4 $0, $1, $2;",
        "=r,r,r",
        &[I32, I32],
        &[I32],
        1
    )
    .is_err());
}

/// The extended-precision forms (PTX ISA, "Extended-Precision Integer Arithmetic
/// Instructions") chain a carry through `CC.CF`; the values are hand-computed.
mod carry_chain {
    use super::*;

    /// Runs `asm` over 32-bit registers: `outs` results, then `input`'s arguments.
    fn r32(asm: &str, outs: usize, input: &[u64]) -> Vec<u64> {
        let cons = std::iter::repeat_n("=r", outs)
            .chain(std::iter::repeat_n("r", input.len()))
            .collect::<Vec<_>>()
            .join(",");
        run1(asm, &cons, &vec![I32; input.len()], &vec![I32; outs], 1, input)
    }

    #[test]
    fn add_and_sub_carry_across_words() {
        // 0x1_ffffffff + 1 = 0x2_00000000: the low word carries into the high word.
        let add = "add.cc.u32 $0, $2, $4; addc.u32 $1, $3, $5;";
        assert_eq!(r32(add, 2, &[0xffff_ffff, 1, 1, 0]), vec![0, 2]);
        // No carry: 0x1_00000001 + 0x2_00000002.
        assert_eq!(r32(add, 2, &[1, 1, 2, 2]), vec![3, 3]);
        // 0x1_00000000 - 1 = 0x0_ffffffff: the low word borrows from the high word.
        let sub = "sub.cc.u32 $0, $2, $4; subc.u32 $1, $3, $5;";
        assert_eq!(r32(sub, 2, &[0, 1, 1, 0]), vec![0xffff_ffff, 0]);
        // 5 - 3 borrows nothing; 0 - (0 + borrow 0) = 0.
        assert_eq!(r32(sub, 2, &[5, 0, 3, 0]), vec![2, 0]);
        // A 96-bit sum through `addc.cc` in the middle word: 0xffffffff_ffffffff + 1.
        let add3 = "add.cc.u32 $0, $3, $6; addc.cc.u32 $1, $4, $7; addc.u32 $2, $5, $8;";
        assert_eq!(
            r32(add3, 3, &[0xffff_ffff, 0xffff_ffff, 0, 1, 0, 0]),
            vec![0, 0, 1]
        );
        // The signed types carry as the unsigned bits do: -1 + 1 carries out.
        let s = "add.cc.s32 $0, $2, $3; addc.s32 $1, 0, 0;";
        assert_eq!(r32(s, 2, &[0xffff_ffff, 1]), vec![0, 1]);
        // 64-bit words: u64::MAX + 1 carries into the next word.
        let w = "add.cc.u64 $0, $2, $3; addc.u64 $1, 7, 0;";
        let out = run1(w, "=l,=l,l,l", &[I64, I64], &[I64, I64], 1, &[u64::MAX, 1]);
        assert_eq!(out, vec![0, 8]);
    }

    #[test]
    fn mad_chains_a_wide_product_plus_a_wide_addend() {
        // (a * b) + c in 64 bits from 32-bit halves, as libdevice's range reduction does:
        // 0xffffffff^2 = 0xfffffffe_00000001; + 0xffffffff_ffffffff = 0x1_fffffffe_00000000.
        let mad = "mad.lo.cc.u32 $0, $2, $3, $4; madc.hi.u32 $1, $2, $3, $5;";
        let m = 0xffff_ffff;
        assert_eq!(r32(mad, 2, &[m, m, m, m]), vec![0, 0xffff_fffe]);
        // 3 * 5 + 0x1_00000000 (no carry out of the low word).
        assert_eq!(r32(mad, 2, &[3, 5, 0, 1]), vec![15, 1]);
        // `.hi` of a signed product: -2 * 3 = -6 has the high word 0xffffffff; unsigned,
        // 0xfffffffe * 3 = 0x2_fffffffa has the high word 2. With c = 1 and no carry-in.
        let hi_s = "mad.hi.cc.s32 $0, $2, $3, $4; addc.u32 $1, 0, 0;";
        assert_eq!(r32(hi_s, 2, &[0xffff_fffe, 3, 1]), vec![0, 1]);
        let hi_u = "mad.hi.cc.u32 $0, $2, $3, $4; addc.u32 $1, 0, 0;";
        assert_eq!(r32(hi_u, 2, &[0xffff_fffe, 3, 1]), vec![3, 0]);
        // `madc.lo.cc` takes the carry in and gives one out.
        let lo = "add.cc.u32 $0, $2, $2; madc.lo.cc.u32 $1, $3, $3, $4; addc.u32 $0, 0, 0;";
        // 0x80000000 * 2 carries 1; 0x10000 * 0x10000 = 0x1_00000000: lo 0, + 0xffffffff + 1
        // = 0x1_00000000: lo 0, carry 1.
        assert_eq!(r32(lo, 2, &[0x8000_0000, 0x1_0000, m]), vec![1, 0]);
    }

    #[test]
    fn a_carry_read_before_any_write_and_malformed_forms_are_refused() {
        let e = |asm: &str| {
            compile(asm, "=r,r,r", &[I32, I32], &[I32], 1)
                .unwrap_err()
                .message
        };
        // The bug: `addc` with no earlier `.cc` reads a carry flag nothing set.
        let m = e("addc.u32 $0, $1, $2;");
        assert!(m.contains("CC.CF") && m.contains("before writing it"), "{m}");
        assert!(e("add.cc.u16 $0, $1, $2;").contains("not a type"));
        assert!(e("add.cc.b32 $0, $1, $2;").contains("not a type"));
        assert!(e("mad.cc.u32 $0, $1, $2, $2;").contains("`.lo` or `.hi`"));
        assert!(e("addc.lo.u32 $0, $1, $2;").contains("modifier `.lo`"));
        assert!(e("add.cc.u32 $0, $1;").contains("3 operands"));
        // Without `.cc`, `add` and `mad` are the plain forms and set no flag.
        let m = e("add.u32 $0, $1, $2; addc.u32 $0, $1, $2;");
        assert!(m.contains("CC.CF"), "{m}");
    }

    #[test]
    fn the_carry_arithmetic_matches_u128_sums() {
        use crate::inline_ptx::parse::{carry_apply, CarryOp, ITy};
        let u64t = ITy {
            bits: 64,
            signed: false,
        };
        for (a, b, cin) in [(u64::MAX, u64::MAX, 1), (1 << 63, 1 << 63, 0), (5, 7, 1)] {
            let full = a as u128 + b as u128 + cin as u128;
            assert_eq!(
                carry_apply(CarryOp::Add, u64t, &[a, b], cin),
                (full as u64, (full >> 64) as u64)
            );
            let diff = (a as i128) - (b as i128) - cin as i128;
            assert_eq!(
                carry_apply(CarryOp::Sub, u64t, &[a, b], cin),
                (diff as u64, u64::from(diff < 0))
            );
        }
    }
}

//! Reductions with every combiner and the math functions of tile expressions, against values
//! computed by hand: max/min/prod/and/or/xor folds, argmax/argmin's first position on ties,
//! IEEE maxNum (a NaN loses to a number), float results rounded once, `log2` of an integer
//! constant versus of a float value, and the type checker's refusals.

mod common;
use common::*;

const FOLDS: &str = r#"
kernel folds {
  target sm_100a, sm_90a
  num_warps 4
  param f_ptr: ptr(f32)
  param i_ptr: ptr(i32)
  layout l2 = blocked([1, 1], [1, 32], [4, 1], [1, 0])
  layout l1 = blocked([1], [32], [4], [0])
  // x[i, j] = (j - 2)^2 - i: row i is [4, 1, 0, 1, 4, 9, 16, 25] - i, minimum -i at j = 2.
  let ii = expand_dims(arange(0, 4, slice(1, l2)), 1)
  let jj = expand_dims(arange(0, 8, slice(0, l2)), 0)
  let d = broadcast(jj, [4, 8]) - 2
  let xi = d * d - broadcast(ii, [4, 8])
  let x = cast(xi, f32)
  global.store f_ptr, arange(0, 4, slice(1, l2)), reduce_max(x, 1)
  global.store f_ptr, arange(4, 8, slice(1, l2)), reduce_min(x, 1)
  global.store f_ptr, arange(8, 16, slice(0, l2)), prod(x * 0.5 + 1.0, 0)
  global.store i_ptr, arange(0, 4, slice(1, l2)), argmin(x, 1)
  global.store i_ptr, arange(4, 8, slice(1, l2)), argmax(x, 1)
  global.store i_ptr, arange(8, 16, slice(0, l2)), reduce_and(xi + 16, 0)
  global.store i_ptr, arange(16, 24, slice(0, l2)), reduce_or(xi + 16, 0)
  global.store i_ptr, arange(24, 32, slice(0, l2)), reduce_xor(xi + 16, 0)
  // Ties: [3, 7, 7, 1] has its maximum at 1 and 2, and argmax says 1.
  let t = where(arange(0, 4, l1) == 0, 3, where(arange(0, 4, l1) == 3, 1, 7))
  global.store i_ptr, arange(32, 33, l1), full([1], argmax(t, 0), i32, l1)
  launch {
    grid = [1]
    tensor f: f32[16] = fill(-1)
    tensor i: i32[33] = fill(-1)
    f_ptr = f
    i_ptr = i
    outputs = [f, i]
  }
}
"#;

#[test]
fn every_combiner_folds_as_computed_by_hand() {
    let r = run(FOLDS, &[]);
    assert_ok(FOLDS, &r);
    let row = |i: i64| -> Vec<i64> { (0..8).map(|j| (j - 2) * (j - 2) - i).collect() };
    let f = values(tensor(&r, "f"));
    // Row maxima: 25 - i at j = 7; minima: -i at j = 2.
    assert_eq!(&f[0..4], &[25.0, 24.0, 23.0, 22.0]);
    assert_eq!(&f[4..8], &[0.0, -1.0, -2.0, -3.0]);
    // Column products of x / 2 + 1 over the four rows.
    for j in 0..8 {
        let p: f64 = (0..4).map(|i| row(i)[j] as f64 * 0.5 + 1.0).product();
        assert_eq!(f[8 + j], p, "column {j}");
    }
    let iv: Vec<i64> = values(tensor(&r, "i")).iter().map(|&v| v as i64).collect();
    assert_eq!(&iv[0..4], &[2, 2, 2, 2], "argmin");
    assert_eq!(&iv[4..8], &[7, 7, 7, 7], "argmax");
    for j in 0..8 {
        let col: Vec<i64> = (0..4).map(|i| row(i)[j] + 16).collect();
        assert_eq!(iv[8 + j], col.iter().fold(-1, |a, b| a & b), "and, column {j}");
        assert_eq!(iv[16 + j], col.iter().fold(0, |a, b| a | b), "or, column {j}");
        assert_eq!(iv[24 + j], col.iter().fold(0, |a, b| a ^ b), "xor, column {j}");
    }
    assert_eq!(iv[32], 1, "argmax takes the first of equal maxima");
}

const FUNCS: &str = r#"
kernel funcs {
  target sm_100a, sm_90a
  num_warps 4
  const N: int = 8
  param out_ptr: ptr(f32)
  layout l = blocked([1], [32], [4], [0])
  // x = [0.25, 1, 2, 4, 9, 16, -1.5, 0]
  let k = arange(0, 8, l)
  let x = where(k == 0, 0.25, where(k == 6, 0.0 - 1.5, where(k == 7, 0.0, where(k == 4, 9.0, where(k == 5, 16.0, cast(1 << (k - 1), f32))))))
  global.store out_ptr, k, exp2(x)
  global.store out_ptr, k + N, log2(x)
  global.store out_ptr, k + 2 * N, sqrt(x)
  global.store out_ptr, k + 3 * N, rsqrt(x)
  global.store out_ptr, k + 4 * N, floor(x)
  global.store out_ptr, k + 5 * N, ceil(x)
  global.store out_ptr, k + 6 * N, erf(x)
  global.store out_ptr, k + 7 * N, exp(log(x))
  // log2 of an integer constant is the constant floor(log2): 3.
  global.store out_ptr, arange(64, 65, l), full([1], log2(N), f32, l)
  // A NaN loses to a number in reduce_max (IEEE maxNum, as arith.maxnumf).
  global.store out_ptr, arange(65, 66, l), full([1], reduce_max(sqrt(x - 1.0), 0), f32, l)
  // inf and nan: exp2(-inf) = 0 (an online softmax's first correction), -inf - -inf = nan.
  global.store out_ptr, arange(66, 67, l), exp2(full([1], -inf, f32, l))
  global.store out_ptr, arange(67, 68, l), full([1], -inf, f32, l) - full([1], -inf, f32, l)
  global.store out_ptr, arange(68, 69, l), full([1], reduce_max(where(k < 8, -inf, 0.0), 0), f32, l)
  global.store out_ptr, arange(69, 70, l), full([1], nan, f32, l)
  launch {
    grid = [1]
    tensor out: f32[70] = zeros()
    out_ptr = out
    outputs = [out]
  }
}
"#;

#[test]
fn math_functions_give_correctly_rounded_textbook_values() {
    let r = run(FUNCS, &[]);
    assert_ok(FUNCS, &r);
    let o = values(tensor(&r, "out"));
    let x = [0.25f64, 1.0, 2.0, 4.0, 9.0, 16.0, -1.5, 0.0];
    let f32r = |v: f64| v as f32 as f64;
    for (k, &v) in x.iter().enumerate() {
        assert_eq!(o[k], f32r(v.exp2()), "exp2({v})");
        let l2 = o[8 + k];
        match v {
            v if v < 0.0 => assert!(l2.is_nan(), "log2 of a negative number is NaN"),
            0.0 => assert_eq!(l2, f64::NEG_INFINITY),
            v => assert_eq!(l2, f32r(v.log2())),
        }
        if v >= 0.0 {
            assert_eq!(o[16 + k], f32r(v.sqrt()), "sqrt({v})");
            assert_eq!(o[24 + k], f32r(1.0 / v.sqrt()), "rsqrt({v})");
        } else {
            assert!(o[16 + k].is_nan() && o[24 + k].is_nan());
        }
        assert_eq!(o[32 + k], v.floor());
        assert_eq!(o[40 + k], v.ceil());
    }
    // erf(0.25), erf(1), erf(2), erf(-1.5) to 9 digits (Abramowitz & Stegun table 7.1).
    for (k, e) in [
        (0, 0.276326390),
        (1, 0.842700793),
        (2, 0.995322265),
        (6, -0.966105146),
        (7, 0.0),
    ] {
        assert!((o[48 + k] - e).abs() < 1e-7, "erf({}) = {}", x[k], o[48 + k]);
    }
    // exp(log(x)) round-trips the positive values to within one f32 rounding each.
    for k in 0..6 {
        assert!((o[56 + k] - x[k]).abs() <= x[k] * 2.4e-7, "exp(log({}))", x[k]);
    }
    assert_eq!(o[64], 3.0);
    // sqrt(x - 1) is NaN for x = 0.25, -1.5, 0; the maximum of the rest is sqrt(15).
    assert_eq!(o[65], f32r(15f64.sqrt()));
    assert_eq!(o[66], 0.0);
    assert!(o[67].is_nan());
    assert_eq!(o[68], f64::NEG_INFINITY);
    assert!(o[69].is_nan());
}

fn type_errors(src: &str) -> Vec<String> {
    let file = bwsim_isa::SourceFile::new("t.tile", src);
    let k = bwsim_isa::parse(&file).expect("parses");
    let env = bwsim_isa::consts::ConstEnv::new(&k, bwsim_isa::Target::Sm100a, &[]).expect("constants");
    let (_, diags) = bwsim_isa::typeck::check(&k, env);
    diags.iter().map(|d| d.message.clone()).collect()
}

#[test]
fn math_and_reductions_refuse_what_they_cannot_mean() {
    let wrap = |body: &str| {
        format!(
            "kernel t {{\n  target sm_100a\n  num_warps 4\n  layout l = blocked([1], [32], [4], [0])\n  let k = arange(0, 8, l)\n  {body}\n}}\n"
        )
    };
    let e = type_errors(&wrap("let y = exp2(k)"));
    assert!(e.iter().any(|m| m.contains("`exp2` needs a float tile")), "{e:?}");
    let e = type_errors(&wrap("let y = reduce_and(cast(k, f32), 0)"));
    assert!(
        e.iter().any(|m| m.contains("`reduce_and` needs an integer tile")),
        "{e:?}"
    );
    let e = type_errors(&wrap("let y = reduce_max(k, 1)"));
    assert!(e.iter().any(|m| m.contains("axis out of range")), "{e:?}");
    let e = type_errors(&wrap("let y = sqrt(cast(k, f32), 2)"));
    assert!(e.iter().any(|m| m.contains("takes 1 argument")), "{e:?}");
    assert!(type_errors(&wrap("let y = argmax(cast(k, f32), 0) + 1")).is_empty());
}

const ATOMICS: &str = r#"
kernel atomics_semantics {
  target sm_100a, sm_90a
  num_warps 4
  param a_ptr: ptr(i32)
  param f_ptr: ptr(f32)
  param old_ptr: ptr(i32)
  layout l = blocked([1], [32], [4], [0])
  let k = arange(0, 8, l)
  // Every element hits a[0] or a[1] (k % 2); a starts at [100, 200].
  let o1 = global.atomic add, a_ptr, k % 2, k + 1
  global.store old_ptr, k, o1
  let o2 = global.atomic min, a_ptr, k % 2 + 2, 5 - k, mask=k < 6
  global.store old_ptr, k + 8, o2
  let o3 = global.atomic xchg, a_ptr, k * 0 + 4, k
  global.store old_ptr, k + 16, o3
  let o4 = global.atomic xor, a_ptr, k * 0 + 5, 1 << k
  global.store old_ptr, k + 24, o4
  let o5 = global.atomic max, f_ptr, k % 2, cast(k, f32) - 3.5
  global.store f_ptr, k + 2, o5
  launch {
    grid = [1]
    tensor a: i32[6] = iota()
    tensor f: f32[10] = fill(0 - 1)
    tensor old: i32[32] = fill(77)
    a_ptr = a
    f_ptr = f
    old_ptr = old
    outputs = [a, f, old]
  }
}
"#;

#[test]
fn atomics_apply_in_element_order_and_return_the_old_values() {
    let r = run(ATOMICS, &[]);
    assert_ok(ATOMICS, &r);
    let a: Vec<i64> = values(tensor(&r, "a")).iter().map(|&v| v as i64).collect();
    let old: Vec<i64> = values(tensor(&r, "old")).iter().map(|&v| v as i64).collect();
    // a = iota = [0, 1, 2, 3, 4, 5]. add: a[0] += 1 + 3 + 5 + 7, a[1] += 2 + 4 + 6 + 8.
    assert_eq!(a[0], 16);
    assert_eq!(a[1], 1 + 20);
    // Old values, element by element: a[0] sees 0, 1, 4, 9; a[1] sees 1, 3, 7, 13.
    assert_eq!(&old[0..8], &[0, 1, 1, 3, 4, 7, 9, 13]);
    // min over k < 6 of 5 - k into a[2] (k even: 5, 3, 1) and a[3] (k odd: 4, 2, 0);
    // masked elements return 0.
    assert_eq!((a[2], a[3]), (1, 0));
    assert_eq!(&old[8..16], &[2, 3, 2, 3, 2, 2, 0, 0]);
    // xchg: a[4] ends with the last element's value; each sees its predecessor's.
    assert_eq!(a[4], 7);
    assert_eq!(&old[16..24], &[4, 0, 1, 2, 3, 4, 5, 6]);
    // xor of 1 << k for k = 0..7 into 5: 5 ^ 255.
    assert_eq!(a[5], 5 ^ 255);
    assert_eq!(old[24], 5);
    // Float max of k - 3.5 into f[0] (even k: ends 2.5) and f[1] (odd k: ends 3.5).
    let f = values(tensor(&r, "f"));
    assert_eq!((f[0], f[1]), (2.5, 3.5));
    assert_eq!(&f[2..10], &[-1.0, -1.0, -1.0, -1.0, -1.0, -0.5, 0.5, 1.5]);
}

const SCANS: &str = r#"
kernel scans {
  target sm_100a, sm_90a
  num_warps 4
  param out_ptr: ptr(f32)
  layout l = blocked([1], [32], [4], [0])
  // x = [3, -1, 4, -1, 5, -9, 2, 6]
  let k = arange(0, 8, l)
  let x = where(k == 0, 3.0, where(k == 2, 4.0, where(k == 4, 5.0, where(k == 5, 0.0 - 9.0, where(k == 6, 2.0, where(k == 7, 6.0, 0.0 - 1.0))))))
  global.store out_ptr, k, cumsum(x, 0)
  global.store out_ptr, k + 8, cummin(x, 0)
  global.store out_ptr, k + 16, cummax(x, 0)
  global.store out_ptr, k + 24, cumprod(x, 0)
  launch {
    grid = [1]
    tensor out: f32[32] = zeros()
    out_ptr = out
    outputs = [out]
  }
}
"#;

#[test]
fn scans_are_inclusive_prefix_folds() {
    let r = run(SCANS, &[]);
    assert_ok(SCANS, &r);
    let o = values(tensor(&r, "out"));
    assert_eq!(&o[0..8], &[3.0, 2.0, 6.0, 5.0, 10.0, 1.0, 3.0, 9.0]);
    assert_eq!(&o[8..16], &[3.0, -1.0, -1.0, -1.0, -1.0, -9.0, -9.0, -9.0]);
    assert_eq!(&o[16..24], &[3.0, 3.0, 4.0, 4.0, 5.0, 5.0, 5.0, 6.0]);
    assert_eq!(
        &o[24..32],
        &[3.0, -3.0, -12.0, 12.0, 60.0, -540.0, -1080.0, -6480.0]
    );
}

const REVERSE_SCANS: &str = r#"
kernel reverse_scans {
  target sm_100a, sm_90a
  num_warps 4
  param out_ptr: ptr(f32)
  layout l = blocked([1], [32], [4], [0])
  // x = [3, -1, 4, -1, 5, -9, 2, 6]
  let k = arange(0, 8, l)
  let x = where(k == 0, 3.0, where(k == 2, 4.0, where(k == 4, 5.0, where(k == 5, 0.0 - 9.0, where(k == 6, 2.0, where(k == 7, 6.0, 0.0 - 1.0))))))
  global.store out_ptr, k, cumsum(x, 0, reverse=true)
  global.store out_ptr, k + 8, cummax(x, 0, reverse=true)
  global.store out_ptr, k + 16, cumsum(x, 0, reverse=false)
  launch {
    grid = [1]
    tensor out: f32[24] = zeros()
    out_ptr = out
    outputs = [out]
  }
}
"#;

/// `reverse=true`: element i folds elements i.. to the end (hand-computed suffixes of x);
/// `reverse=false` is the forward scan.
#[test]
fn reverse_scans_are_inclusive_suffix_folds() {
    let r = run(REVERSE_SCANS, &[]);
    assert_ok(REVERSE_SCANS, &r);
    let o = values(tensor(&r, "out"));
    assert_eq!(&o[0..8], &[9.0, 6.0, 7.0, 3.0, 4.0, -1.0, 8.0, 6.0]);
    assert_eq!(&o[8..16], &[6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0]);
    assert_eq!(&o[16..24], &[3.0, 2.0, 6.0, 5.0, 10.0, 1.0, 3.0, 9.0]);
}

/// A scan takes only `reverse=true|false`: another keyword is a type error naming it.
#[test]
fn scans_refuse_other_keywords() {
    let src = REVERSE_SCANS.replace("cumsum(x, 0, reverse=true)", "cumsum(x, 0, backwards=true)");
    let k = bwsim_isa::parser::parse(&src).expect("parses");
    let (c, d) = bwsim_isa::verify::verify(&k, &bwsim_isa::verify::VerifyOptions::default());
    assert!(c.is_none());
    assert!(d.iter().any(|d| d.message.contains("`backwards=`")), "{d:?}");
}

const CAS: &str = r#"
kernel cas_semantics {
  target sm_100a, sm_90a
  num_warps 4
  param a_ptr: ptr(i32)
  param old_ptr: ptr(i32)
  layout l = blocked([1], [32], [4], [0])
  let k = arange(0, 8, l)
  // a = [0, 10, 20, 30, 40, 50, 60, 70]: elements 0, 2, 4, 6 compare equal (k * 10) and are
  // swapped to 100 + k; elements 1, 3, 5, 7 compare with k * 10 + 1 and stay.
  let o = global.atomic cas, a_ptr, k, k + 100, compare=k * 10 + k % 2
  global.store old_ptr, k, o
  // A chain on a[0]: element j compares with 100 + j - 1 ... only element 1 matches (100 + 0
  // was written above), element 2 then sees 7 and fails.
  let c = global.atomic cas, a_ptr, k * 0, k * 0 + 7, compare=k + 99, mask=k < 3
  global.store old_ptr, k + 8, c
  launch {
    grid = [1]
    tensor a: i32[8] = linspace(0, 70)
    tensor old: i32[16] = fill(77)
    a_ptr = a
    old_ptr = old
    outputs = [a, old]
  }
}
"#;

/// `global.atomic cas`: the new value lands where the old one equals the compare value (hand
/// computed), every element returns the old value, masked-off elements read 0 and touch
/// nothing.
#[test]
fn compare_and_swap_stores_where_the_old_value_matches() {
    let r = run(CAS, &[]);
    assert_ok(CAS, &r);
    let a: Vec<i64> = values(tensor(&r, "a")).iter().map(|&v| v as i64).collect();
    let old: Vec<i64> = values(tensor(&r, "old")).iter().map(|&v| v as i64).collect();
    assert_eq!(a, vec![7, 10, 102, 30, 104, 50, 106, 70]);
    assert_eq!(&old[0..8], &[0, 10, 20, 30, 40, 50, 60, 70]);
    // a[0] is 100 after the first cas: element 0 compares with 99 (no), element 1 with 100
    // (swaps in 7), element 2 with 101 (no: it sees 7); elements 3.. are masked off.
    assert_eq!(&old[8..16], &[100, 100, 7, 0, 0, 0, 0, 0]);
}

/// `cas` needs `compare=`, and only `cas` takes it.
#[test]
fn compare_is_required_by_cas_and_refused_elsewhere() {
    for (from, to, msg) in [
        (", compare=k * 10 + k % 2", "", "needs `compare=C`"),
        (
            "global.atomic cas, a_ptr, k, k + 100",
            "global.atomic add, a_ptr, k, k + 100",
            "only `cas` takes",
        ),
    ] {
        let src = CAS.replacen(from, to, 1);
        let k = bwsim_isa::parser::parse(&src).expect("parses");
        let (c, d) = bwsim_isa::verify::verify(&k, &bwsim_isa::verify::VerifyOptions::default());
        assert!(c.is_none(), "{from}");
        assert!(d.iter().any(|d| d.message.contains(msg)), "{msg}: {d:?}");
    }
}

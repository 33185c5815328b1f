//! Reductions with every combiner and the math functions of tile expressions, against values
//! computed by hand: max/min/prod/and/or/xor folds, argmax/argmin's first position on ties,
//! IEEE maxNum (a NaN loses to a number), float results rounded once, `log2` of an integer
//! constant versus of a float value, and the type checker's refusals.

mod common;
use bwsim_sim::RunResult;
use common::*;

/// Tensor `name` of the run, as integers.
fn ints(r: &RunResult, name: &str) -> Vec<i64> {
    values(tensor(r, name)).iter().map(|&v| v as i64).collect()
}

const FOLDS: &str = include_str!("tiles/reductions/folds.tile");

#[test]
fn every_combiner_folds_as_computed_by_hand() {
    let r = run_ok(FOLDS, &[]);
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
    let iv = ints(&r, "i");
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

const FUNCS: &str = include_str!("tiles/reductions/funcs.tile");

#[test]
fn math_functions_give_correctly_rounded_textbook_values() {
    let r = run_ok(FUNCS, &[]);
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

const ATOMICS: &str = include_str!("tiles/reductions/atomics.tile");

#[test]
fn atomics_apply_in_element_order_and_return_the_old_values() {
    let r = run_ok(ATOMICS, &[]);
    let [a, old] = ["a", "old"].map(|t| ints(&r, t));
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

const SCANS: &str = include_str!("tiles/reductions/scans.tile");

#[test]
fn scans_are_inclusive_prefix_folds() {
    let r = run_ok(SCANS, &[]);
    let o = values(tensor(&r, "out"));
    assert_eq!(&o[0..8], &[3.0, 2.0, 6.0, 5.0, 10.0, 1.0, 3.0, 9.0]);
    assert_eq!(&o[8..16], &[3.0, -1.0, -1.0, -1.0, -1.0, -9.0, -9.0, -9.0]);
    assert_eq!(&o[16..24], &[3.0, 3.0, 4.0, 4.0, 5.0, 5.0, 5.0, 6.0]);
    assert_eq!(
        &o[24..32],
        &[3.0, -3.0, -12.0, 12.0, 60.0, -540.0, -1080.0, -6480.0]
    );
}

const REVERSE_SCANS: &str = include_str!("tiles/reductions/reverse_scans.tile");

/// `reverse=true`: element i folds elements i.. to the end (hand-computed suffixes of x);
/// `reverse=false` is the forward scan.
#[test]
fn reverse_scans_are_inclusive_suffix_folds() {
    let r = run_ok(REVERSE_SCANS, &[]);
    let o = values(tensor(&r, "out"));
    assert_eq!(&o[0..8], &[9.0, 6.0, 7.0, 3.0, 4.0, -1.0, 8.0, 6.0]);
    assert_eq!(&o[8..16], &[6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0]);
    assert_eq!(&o[16..24], &[3.0, 2.0, 6.0, 5.0, 10.0, 1.0, 3.0, 9.0]);
}

/// A scan takes only `reverse=true|false`: another keyword is a type error naming it.
#[test]
fn scans_refuse_other_keywords() {
    let src = REVERSE_SCANS.replace("cumsum(x, 0, reverse=true)", "cumsum(x, 0, backwards=true)");
    rejected(&src, "`backwards=`");
}

const CAS: &str = include_str!("tiles/reductions/cas.tile");

/// `global.atomic cas`: the new value lands where the old one equals the compare value (hand
/// computed), every element returns the old value, masked-off elements read 0 and touch
/// nothing.
#[test]
fn compare_and_swap_stores_where_the_old_value_matches() {
    let r = run_ok(CAS, &[]);
    let [a, old] = ["a", "old"].map(|t| ints(&r, t));
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
        rejected(&src, msg);
    }
}

//! The PTX backend's sequences for math functions that have no PTX instruction, run by the PTX
//! front end's executor (bwsim-ptxfront, which computes each f32 instruction as the PTX ISA
//! states: `.rn` arithmetic correctly rounded) against the function computed here in f64 and
//! rounded once to f32, the value the simulator gives.
//!
//! `atan`: within 2 ulp over arguments of every f32 exponent, both signs; -0 stays -0, +-inf
//! gives the f32 nearest +-pi/2, NaN stays NaN.

use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_ptxfront::{compile, run, Arg, Launch};

/// Elements per CTA of the test kernel (4 warps, 4 registers a thread).
const BLOCK: usize = 512;

/// PTX of a kernel that stores `f(x)` for each f32 of `x_ptr` into `y_ptr`, BLOCK per program.
fn ptx_of(f: &str) -> String {
    let src = format!(
        "kernel math_k {{\n  target sm_100a\n  num_warps 4\n  param x_ptr: ptr(f32)\n  param y_ptr: ptr(f32)\n  layout l = blocked([4], [32], [4], [0])\n  let offs = program_id(0) * {BLOCK} + arange(0, {BLOCK}, l)\n  let x = global.load x_ptr, offs\n  global.store y_ptr, offs, {f}(x)\n}}\n"
    );
    let k = bwsim_isa::parser::parse(&src).unwrap_or_else(|d| panic!("{d:?}"));
    let (c, d) = verify(&k, &VerifyOptions::default());
    let c = c.unwrap_or_else(|| panic!("{d:?}"));
    bwsim_backends::ptx::lower(&c)
        .unwrap_or_else(|e| panic!("{e}"))
        .text
}

/// Runs the kernel of [`ptx_of`]`(f)` on `x` (a multiple of BLOCK elements).
fn run_math(f: &str, x: &[f32]) -> Vec<f32> {
    assert_eq!(x.len() % BLOCK, 0);
    let ptx = ptx_of(f);
    let name = ptx
        .lines()
        .find_map(|l| l.trim().strip_prefix(".visible .entry "))
        .and_then(|l| l.split('(').next())
        .expect("an entry in the PTX")
        .trim()
        .to_string();
    // The executor does not read `elect.sync`'s `d|p` destination; with the full mask it
    // elects the lowest lane (PTX ISA, elect.sync), the same predicate as lane == 0. The math
    // does not read it.
    let ptx = ptx
        .lines()
        .map(|l| match l.trim().strip_prefix("elect.sync _|") {
            Some(rest) => {
                let p = rest.split(',').next().unwrap_or_default();
                format!("\tmov.u32 %lane_e, %laneid;\n\tsetp.eq.u32 {p}, %lane_e, 0;")
            }
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let ptx = ptx.replacen("{\n", "{\n\t.reg .b32 %lane_e;\n", 1);
    let p = compile(&ptx, &name).unwrap_or_else(|e| panic!("{e}\n{ptx}"));
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut bufs = vec![bytes, vec![0xFF; x.len() * 4]];
    let grid = (x.len() / BLOCK) as u32;
    let launch = Launch::new([grid, 1, 1], [128, 1, 1], vec![Arg::Buffer(0), Arg::Buffer(1)]);
    run(&p, &launch, &mut bufs).unwrap_or_else(|e| panic!("{e}"));
    bufs[1]
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// The distance in ulps between two finite f32 of one sign (or zeros).
fn ulps(a: f32, b: f32) -> u32 {
    (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
}

#[test]
fn atan_sequence_is_within_2_ulp_over_every_exponent() {
    // For every biased exponent 0..=254, 8 mantissas (spread by a multiplicative hash), both
    // signs; then the reduction boundaries and the special values.
    let mut x = Vec::new();
    for e in 0u32..=254 {
        for i in 0u32..8 {
            let m = i.wrapping_mul(0x9E37_79B9) >> 9;
            let b = (e << 23) | m;
            x.push(f32::from_bits(b));
            x.push(-f32::from_bits(b));
        }
    }
    let tan_pi_8 = f32::from_bits(0x3ED4_13CD);
    let tan_3pi_8 = f32::from_bits(0x401A_827A);
    for b in [tan_pi_8, tan_3pi_8, 1.0] {
        for d in -2i32..=2 {
            x.push(f32::from_bits((b.to_bits() as i32 + d) as u32));
        }
    }
    let specials = [0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
    x.extend(specials);
    x.resize(x.len().div_ceil(BLOCK) * BLOCK, 0.5);
    let y = run_math("atan", &x);
    let mut worst = 0;
    for (&xi, &yi) in x.iter().zip(&y) {
        let want = (xi as f64).atan() as f32;
        if xi.is_nan() {
            assert!(yi.is_nan(), "atan(NaN) = {yi}");
            continue;
        }
        if xi == 0.0 {
            assert_eq!(yi.to_bits(), xi.to_bits(), "atan({xi:?}) keeps the zero's sign");
            continue;
        }
        assert_eq!(yi.is_sign_negative(), xi < 0.0, "atan({xi:e}) = {yi:e}");
        let u = ulps(yi, want);
        assert!(u <= 2, "atan({xi:e}) = {yi:e}, want {want:e}: {u} ulp");
        worst = worst.max(u);
    }
    let at = |v: f32| {
        y[x.iter()
            .position(|&t| t.to_bits() == v.to_bits())
            .expect("present")]
    };
    assert_eq!(at(f32::INFINITY), std::f32::consts::FRAC_PI_2);
    assert_eq!(at(f32::NEG_INFINITY), -std::f32::consts::FRAC_PI_2);
    assert_eq!(at(1.0), std::f32::consts::FRAC_PI_4);
    eprintln!("atan: {} arguments, worst {worst} ulp", x.len());
}

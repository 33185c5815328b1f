//! The CuTe DSL dense GEMM fixture (`fixtures/cute-dsl-4.8.1`) and its launch, shared by
//! tests/cute_dsl_gemm.rs and the machine's benchmark (benches/check.rs); reading a fixture
//! and finding a line in it, shared with tests/tirx_gemm.rs.

#![allow(dead_code)]

use bwsim_isa::types::Swizzle;
use bwsim_ptxfront::machine::{self, Options};
use bwsim_ptxfront::{load, parse, Arg, Launch, Program, TensorMap};

/// The text of `tests/fixtures/NAME` (panics naming the file where it cannot be read).
pub fn read_fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The 1-based line of `src` that holds `text`, which must be on exactly one line.
pub fn line_of(src: &str, text: &str) -> u32 {
    let lines: Vec<usize> = (src.lines().enumerate())
        .filter(|(_, l)| l.contains(text))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(lines.len(), 1, "`{text}` is on one line");
    lines[0] as u32
}

pub fn fixture() -> String {
    read_fixture("cute-dsl-4.8.1/dense_gemm.sm_100a.ptx")
}

pub const M: usize = 128;
pub const N: usize = 128;
pub const K: usize = 64;

/// The f16 bits of `v`, a number f16 holds exactly (a normal number or zero).
pub fn f16_bits(v: f64) -> u16 {
    if v == 0.0 {
        return 0;
    }
    let sign = if v < 0.0 { 0x8000 } else { 0 };
    let e = v.abs().log2().floor() as i32;
    let mant = (v.abs() / 2f64.powi(e) - 1.0) * 1024.0;
    assert!(
        mant.fract() == 0.0 && (-14..=15).contains(&e),
        "{v} is not an f16"
    );
    sign | (((e + 15) as u16) << 10) | mant as u16
}

/// The value of f16 bits `b` (normal numbers and zeros).
pub fn f16_value(b: u16) -> f64 {
    let sign = if b & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (e, m) = ((b >> 10) & 0x1f, b & 0x3ff);
    if e == 0 {
        return sign * m as f64 * 2f64.powi(-24);
    }
    sign * (1.0 + m as f64 / 1024.0) * 2f64.powi(e as i32 - 15)
}

/// The operands: A (`M x K`) and B (`N x K`, K-major, as the kernel reads them), multiples of
/// 1/2 in [-2, 2] from a fixed sequence, so that every product, every partial sum and C
/// itself are exact in f32 and in f16.
pub fn operands() -> (Vec<f64>, Vec<f64>) {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 9) as f64 / 2.0 - 2.0
    };
    let a = (0..M * K).map(|_| next()).collect();
    let b = (0..N * K).map(|_| next()).collect();
    (a, b)
}

pub fn f16_buffer(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|&x| f16_bits(x).to_le_bytes()).collect()
}

/// The launch of the fixture over A (buffer 0), B (buffer 1) and C (buffer 2, zeros): the
/// tiled MMA's 32-byte struct (accumulate, negate A, negate B off; no disabled output lanes),
/// then the tensor maps as the example builds them (A and B K-major boxes of 64 x 128 with a
/// 128-byte swizzle, C's N-major epilogue subtiles of 32 x 128 with a 64-byte swizzle), one
/// CTA of 128 threads.
pub fn gemm_launch(src: &str) -> (Program, Launch, Vec<Vec<u8>>) {
    let m = parse(src).expect("parses");
    let name = m.kernels[0].name.clone();
    let p = load(src, &m, &name).expect("loads");
    let map = |buffer: usize, rows: u64, inner: u64, box_inner: u32, swizzle: Swizzle| {
        Arg::TensorMap(TensorMap {
            buffer,
            elem_bytes: 2,
            dtype: bwsim_isa::DType::F16,
            dims: vec![inner, rows],
            strides: vec![inner * 2],
            box_dims: vec![box_inner, 128],
            swizzle,
        })
    };
    let mut l = Launch::new(
        [1, 1, 1],
        [128, 1, 1],
        vec![
            Arg::Bytes(vec![0; 32]),
            map(0, M as u64, K as u64, 64, Swizzle::B128),
            map(1, N as u64, K as u64, 64, Swizzle::B128),
            map(2, M as u64, N as u64, 32, Swizzle::B64),
        ],
    );
    l.dynamic_shared = 232_448;
    let (a, b) = operands();
    (p, l, vec![f16_buffer(&a), f16_buffer(&b), vec![0; M * N * 2]])
}

/// Runs `p` over `l` (one schedule, checked) and asserts that the checker found nothing.
pub fn run_clean(p: &Program, l: &Launch, bufs: &mut [Vec<u8>]) {
    let o = machine::run(p, l, bufs, &Options { seed: 0, check: true }).expect("runs");
    assert!(
        o.findings.is_empty(),
        "findings: {:?}",
        o.findings.iter().map(|f| &f.diagnostic).collect::<Vec<_>>()
    );
}

/// Asserts that C is A · Bᵀ of [`operands`] exactly, `c(i, j)` reading element (i, j) of the
/// kernel's output (every product and partial sum is exact, so the comparison is exact).
pub fn assert_exact_product(c: impl Fn(usize, usize) -> f64) {
    let (a, b) = operands();
    let mut wrong = 0;
    for i in 0..M {
        for j in 0..N {
            let want: f64 = (0..K).map(|k| a[i * K + k] * b[j * K + k]).sum();
            let got = c(i, j);
            if got != want {
                wrong += 1;
                assert!(wrong < 5, "C[{i}][{j}] = {got}, want {want}");
            }
        }
    }
    assert_eq!(wrong, 0);
}

//! Helpers shared by the PTX front end's tests (and the workspace's tests/ptx_front.rs, which
//! includes this file): deterministic inputs, byte conversions, and the launches of Triton's
//! PTX for the Gluon softmax and reductions fixtures with their references.

#![allow(dead_code)]

use bwsim_ptxfront::machine::Finding;
use bwsim_ptxfront::{compile, run, Arg, Error, Launch, Program};

/// A finding in words: its code, the opcode (with its modifiers) of its instruction and of the
/// instruction it conflicts with.
pub type Found = (bwsim_isa::Code, String, String);

/// `findings` of a run of `p`, as [`Found`]s.
pub fn found(p: &Program, findings: &[Finding]) -> Vec<Found> {
    let text = |pc: usize| {
        let i = &p.ins[pc];
        p.src[i.span.range()]
            .split_whitespace()
            .find(|t| !t.starts_with('@'))
            .unwrap_or("")
            .to_string()
    };
    findings
        .iter()
        .map(|f| {
            (
                f.code,
                text(f.pc),
                f.with.first().map_or(String::new(), |&w| text(w)),
            )
        })
        .collect()
}

/// The rows and columns of the softmax fixture's launch (tests/gluon/softmax.launch).
pub const SOFTMAX_ROWS: usize = 60;
pub const SOFTMAX_COLS: usize = 128;
/// The rows and columns of the reductions fixture's launch (one CTA).
pub const REDUCTIONS_ROWS: usize = 8;
pub const REDUCTIONS_COLS: usize = 64;

/// The text of Triton 3.9's PTX of fixture `name` for `target`, under `ptxfront` (the PTX front
/// end crate's folder) in tests/fixtures/triton-3.9.
pub fn triton_ptx(ptxfront: &str, name: &str, target: &str) -> Result<String, Error> {
    let path = format!("{ptxfront}/tests/fixtures/triton-3.9/{name}.{target}.ptx");
    std::fs::read_to_string(&path).map_err(|e| Error::Launch(format!("{path}: {e}")))
}

/// A deterministic stream of f32 values in [-4, 4) (a 64-bit LCG's high bits).
pub fn randn(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f64 / (1u64 << 24) as f64 * 8.0 - 4.0) as f32
        })
        .collect()
}

/// Runs `softmax_kernel` of the PTX `src` on `x` (SOFTMAX_ROWS x SOFTMAX_COLS) at the fixture's
/// launch (8 CTAs of 128 threads); the output buffer, filled with 7.0 before the run.
pub fn run_softmax(src: &str, x: &[f32]) -> Result<Vec<f32>, Error> {
    let p = compile(src, "softmax_kernel")?;
    // x, out, n_rows, then Triton's global and profile scratch pointers (unused: null).
    let args = vec![
        Arg::Buffer(0),
        Arg::Buffer(1),
        Arg::U32(SOFTMAX_ROWS as u32),
        Arg::U64(0),
        Arg::U64(0),
    ];
    let mut bufs = vec![f32_bytes(x), f32_bytes(&[7.0; SOFTMAX_ROWS * SOFTMAX_COLS])];
    let stats = run(&p, &Launch::new([8, 1, 1], [128, 1, 1], args), &mut bufs)?;
    eprintln!("softmax: {stats:?}");
    Ok(bytes_f32(&bufs[1]))
}

/// Asserts that `out` is the row-wise softmax of `x` (SOFTMAX_COLS columns), computed here in
/// f64, within 2e-6 relative in every element; the worst relative error.
pub fn assert_softmax(what: &str, x: &[f32], out: &[f32]) -> f64 {
    let cols = SOFTMAX_COLS;
    let mut worst = 0f64;
    for (r, row) in x.chunks_exact(cols).enumerate() {
        let m = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
        let e: Vec<f64> = row.iter().map(|&v| (v as f64 - m).exp()).collect();
        let s: f64 = e.iter().sum();
        for c in 0..cols {
            let want = e[c] / s;
            let got = out[r * cols + c] as f64;
            let rel = (got - want).abs() / want;
            worst = worst.max(rel);
            assert!(rel < 2e-6, "{what}: row {r} col {c}: {got} against {want}");
        }
    }
    worst
}

/// The reductions fixture's inputs as its launch draws them: small integers with many ties,
/// x in [-3, 3) as f32 and y in [-4, 4), REDUCTIONS_ROWS x REDUCTIONS_COLS each.
pub fn reductions_inputs(seed: u64) -> (Vec<f32>, Vec<i32>) {
    let n = REDUCTIONS_ROWS * REDUCTIONS_COLS;
    let x = randn(n, seed)
        .iter()
        .map(|v| (v * 0.75).floor().clamp(-3.0, 2.0))
        .collect();
    let y = randn(n, seed + 1).iter().map(|v| v.floor() as i32).collect();
    (x, y)
}

/// The names of the reductions kernel's outputs, in argument order (after x and y).
pub const REDUCTIONS_OUTPUTS: [&str; 7] = ["vmax", "imax", "vmin", "imin", "sums", "maxes", "tails"];

/// Runs `reductions_kernel` of the PTX `src` on `x` and `y` in one CTA of 128 threads; its
/// output buffers in REDUCTIONS_OUTPUTS' order, each filled with 0x55 bytes before the run.
pub fn run_reductions(src: &str, x: &[f32], y: &[i32]) -> Result<Vec<Vec<u8>>, Error> {
    let p = compile(src, "reductions_kernel")?;
    let mut bufs = vec![f32_bytes(x), i32_bytes(y)];
    for n in REDUCTIONS_OUTPUTS {
        let rows = if n == "tails" {
            REDUCTIONS_ROWS * REDUCTIONS_COLS
        } else {
            REDUCTIONS_ROWS
        };
        bufs.push(vec![0x55; 4 * rows]);
    }
    let mut args: Vec<Arg> = (0..9).map(Arg::Buffer).collect();
    args.extend([Arg::U64(0), Arg::U64(0)]);
    let stats = run(&p, &Launch::new([1, 1, 1], [128, 1, 1], args), &mut bufs)?;
    eprintln!("reductions: {stats:?}");
    Ok(bufs.split_off(2))
}

/// The little-endian bytes of `v`.
pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The little-endian bytes of `v`.
pub fn i32_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The 4-byte words of `b` (a whole number of them).
pub fn words(b: &[u8]) -> impl Iterator<Item = [u8; 4]> + '_ {
    b.chunks_exact(4).map(|c| [c[0], c[1], c[2], c[3]])
}

/// The little-endian f32 values of `b`.
pub fn bytes_f32(b: &[u8]) -> Vec<f32> {
    words(b).map(f32::from_le_bytes).collect()
}

/// The little-endian i32 values of `b`.
pub fn bytes_i32(b: &[u8]) -> Vec<i32> {
    words(b).map(i32::from_le_bytes).collect()
}

/// A kernel `name` for `target` with one pointer parameter (`NAME_param_0`), its register
/// declarations `regs` and body `body` (PTX lines), as compilers lay out such a file.
pub fn pointer_kernel(name: &str, target: &str, regs: &str, body: &str) -> String {
    format!(
        ".version 8.7\n.target {target}\n.address_size 64\n\n.visible .entry {name}(\n\t.param .u64 {name}_param_0\n)\n{{\n{regs}\n{body}\n}}\n"
    )
}

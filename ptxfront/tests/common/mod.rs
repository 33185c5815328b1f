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

/// A launch of 2 CTAs of 32 threads in one cluster, 256 bytes of dynamic shared memory, whose
/// arguments are a tensor map of the 8 x 2 f32 tensor `0, 1, .., 15` (buffer 0, one-row boxes,
/// no swizzling) and an output of 16 f32 (buffer 1); with its buffers.
pub fn rows_launch() -> (Launch, Vec<Vec<u8>>) {
    let map = bwsim_ptxfront::TensorMap {
        buffer: 0,
        elem_bytes: 4,
        dims: vec![8, 2],
        strides: vec![32],
        box_dims: vec![8, 1],
        swizzle: bwsim_isa::types::Swizzle::None,
        dtype: bwsim_isa::DType::F32,
    };
    let mut l = Launch::new([2, 1, 1], [32, 1, 1], vec![Arg::TensorMap(map), Arg::Buffer(1)]);
    l.cluster = [2, 1, 1];
    l.dynamic_shared = 256;
    let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
    (l, vec![f32_bytes(&x), vec![0; 64]])
}

/// The message of the run-time error an unchecked run (seed 0) of `p` stops with; panics,
/// saying `what` should not run, where it ends otherwise.
pub fn runtime_error(p: &Program, l: &Launch, bufs: &mut [Vec<u8>], what: &str) -> String {
    let o = bwsim_ptxfront::machine::Options {
        seed: 0,
        check: false,
    };
    match bwsim_ptxfront::machine::run(p, l, bufs, &o) {
        Err(Error::Runtime { message, .. }) => message,
        r => panic!("{what} runs: {:?}", r.map(|o| o.findings)),
    }
}

/// A kernel `name` of 32 threads per CTA over [`rows_launch`]'s arguments, with the entry
/// directives `directives` and `.loc` file 1 `NAME.py`: `%rd1` is the output, `%rd2` the
/// tensor map's address, `%r1` the thread, `%r2` the CTA's cluster rank, `%r3` the dynamic
/// shared array `smem` and `%r4` `smem + 128`; then `copy`; then, at line `line`, lanes 0 to 7
/// write the f32 words from `%r4` on to `out[8 * rank + lane]`, and a cluster barrier ends
/// the kernel.
pub fn rows_kernel(name: &str, directives: &str, copy: &str, line: u32) -> String {
    format!(
        r#".version 8.7
.target sm_100a
.address_size 64
.extern .shared .align 128 .b8 smem[];

.visible .entry {name}(
	.param .align 64 .b8 {name}_param_0[128],
	.param .u64 {name}_param_1
)
.reqntid 32
{directives}
{{
	.reg .pred 	%p<8>;
	.reg .b32 	%r<24>;
	.reg .b64 	%rd<12>;
	.reg .b16 	%rs<2>;

	ld.param.u64 	%rd1, [{name}_param_1];
	mov.b32 	%r11, {name}_param_0;
	cvt.u64.u32 	%rd5, %r11;
	cvta.param.u64 	%rd2, %rd5;
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %cluster_ctarank;
	mov.u32 	%r3, smem;
	add.s32 	%r4, %r3, 128;
{copy}
	setp.lt.u32 	%p5, %r1, 8;
	@!%p5 bra 	$L__end;
	.loc	1 {line} 0
	shl.b32 	%r7, %r1, 2;
	add.s32 	%r8, %r4, %r7;
	ld.shared.f32 	%r9, [%r8];
	mad.lo.s32 	%r10, %r2, 8, %r1;
	mul.wide.u32 	%rd3, %r10, 4;
	add.s64 	%rd4, %rd1, %rd3;
	st.global.f32 	[%rd4], %r9;
$L__end:
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	ret;
}}
	.file	1 "{name}.py"
"#
    )
}

/// A kernel `name` for `target` with one pointer parameter (`NAME_param_0`), its register
/// declarations `regs` and body `body` (PTX lines), as compilers lay out such a file.
pub fn pointer_kernel(name: &str, target: &str, regs: &str, body: &str) -> String {
    format!(
        ".version 8.7\n.target {target}\n.address_size 64\n\n.visible .entry {name}(\n\t.param .u64 {name}_param_0\n)\n{{\n{regs}\n{body}\n}}\n"
    )
}

//! `wgmma` on the machine, on a hand-written warpgroup kernel whose results follow from the PTX
//! ISA's statements ("Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"):
//! the shared-memory matrix descriptor of unswizzled K-major operands (8 x 16-byte core
//! matrices, SBO between them along M/N, LBO along K), the register fragments of A and of the
//! f32 accumulator, `scale-d`, and what the checker reports when the operands' writes are not
//! fenced or the operands are overwritten before the wait.

mod common;

use bwsim_isa::Code;
use bwsim_ptxfront::machine::{self, Options};
use bwsim_ptxfront::{compile, Arg, Error, Launch};
use common::{found, Found};

/// M = 64, N = 8, K = 16: A at shared byte 0 (SBO 256, LBO 128), B at 2048 (LBO 128).
const N: usize = 8;
const K: usize = 16;
const A_DESC: u64 = (128 >> 4) << 16 | (256 >> 4) << 32;
const B_DESC: u64 = (2048 >> 4) | (128 >> 4) << 16 | (256 >> 4) << 32;

/// 128 threads copy the 2304-byte operand image from `src` into shared memory, fence, sync,
/// then `MMA` (which leaves its f32 accumulator in `%f1..%f4`); each thread writes its four
/// registers to `out + 16 tid`. `%rd5`/`%rd6` are the descriptors, `%p2` false and `%p3` true,
/// `%ra<4>` the thread's A fragment from `afrag + 16 tid`.
const KERNEL: &str = r#"
.version 8.0
.target sm_90a
.address_size 64
.shared .align 1024 .b8 smem[2304];
.visible .entry k(.param .u64 src, .param .u64 afrag, .param .u64 out) {
	.reg .b64 %rd<12>; .reg .b32 %r<12>; .reg .b32 %ra<4>; .reg .f32 %f<5>; .reg .pred %p<4>;
	mov.u32 %r1, %tid.x;
	ld.param.u64 %rd1, [src];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r5, smem;
	mov.u32 %r2, %r1;
$L__copy:
	setp.ge.u32 %p1, %r2, 576;
	@%p1 bra $L__copied;
	mul.wide.u32 %rd3, %r2, 4;
	add.s64 %rd4, %rd1, %rd3;
	ld.global.u32 %r3, [%rd4];
	shl.b32 %r4, %r2, 2;
	add.s32 %r4, %r4, %r5;
	st.shared.u32 [%r4], %r3;
	add.u32 %r2, %r2, 128;
	bra $L__copy;
$L__copied:
	FENCE
	bar.sync 0;
	ld.param.u64 %rd7, [afrag];
	cvta.to.global.u64 %rd7, %rd7;
	mul.wide.u32 %rd8, %r1, 16;
	add.s64 %rd7, %rd7, %rd8;
	ld.global.v4.u32 {%ra0, %ra1, %ra2, %ra3}, [%rd7];
	mov.b64 %rd5, ADESC;
	mov.b64 %rd6, BDESC;
	setp.eq.u32 %p2, %r1, 1000;
	setp.ne.u32 %p3, %r1, 1000;
	wgmma.fence.sync.aligned;
MMA
	ld.param.u64 %rd9, [out];
	cvta.to.global.u64 %rd9, %rd9;
	add.s64 %rd9, %rd9, %rd8;
	st.global.v4.f32 [%rd9], {%f1, %f2, %f3, %f4};
	ret;
}
"#;

/// A[r][k] and B[k][n]: small integers, so that every sum is exact.
fn a(r: usize, k: usize) -> f32 {
    ((r * 3 + k) % 7) as f32 - 3.0
}
fn b(k: usize, n: usize) -> f32 {
    ((k * 5 + n) % 5) as f32 - 2.0
}

/// The f16 bits of a small integer.
fn f16(v: f32) -> u16 {
    if v == 0.0 {
        return 0;
    }
    let (s, m) = (if v < 0.0 { 1u16 } else { 0 }, v.abs());
    let e = m.log2().floor() as i32;
    let frac = ((m / 2f32.powi(e) - 1.0) * 1024.0) as u16;
    s << 15 | ((e + 15) as u16) << 10 | frac
}

/// The shared image: element (mn, k) of a K-major operand of 2-byte elements at
/// `(mn / 8) * SBO + (2k / 16) * LBO + (mn % 8) * 16 + 2k % 16` from its start.
fn image() -> Vec<u8> {
    let mut s = vec![0u8; 2304];
    let at = |start: usize, mn: usize, k: usize| {
        start + (mn / 8) * 256 + (2 * k / 16) * 128 + (mn % 8) * 16 + (2 * k) % 16
    };
    for r in 0..64 {
        for k in 0..K {
            let x = at(0, r, k);
            s[x..x + 2].copy_from_slice(&f16(a(r, k)).to_le_bytes());
        }
    }
    for n in 0..N {
        for k in 0..K {
            let x = at(2048, n, k);
            s[x..x + 2].copy_from_slice(&f16(b(k, n)).to_le_bytes());
        }
    }
    s
}

/// Each thread's A fragment (PTX ISA, wgmma register fragments of A for `.f16`): thread `t`
/// (warp `w`, lane `l`) holds in register `i` the elements at row `16 w + l / 4 + 8 (i % 2)`,
/// columns `2 (l % 4) + 8 (i / 2)` (low half) and the next (high half).
fn fragments() -> Vec<u8> {
    let mut out = Vec::new();
    for t in 0..128 {
        let (w, l) = (t / 32, t % 32);
        for i in 0..4 {
            let row = 16 * w + l / 4 + 8 * (i % 2);
            let col = 2 * (l % 4) + 8 * (i / 2);
            out.extend(f16(a(row, col)).to_le_bytes());
            out.extend(f16(a(row, col + 1)).to_le_bytes());
        }
    }
    out
}

/// `times` A·B, as the accumulator fragments: thread `t` register `i` at row `16 w + l / 4 +
/// 8 (i / 2)`, column `2 (l % 4) + i % 2` (PTX ISA, wgmma accumulator fragments, N = 8).
fn expected(times: f32) -> Vec<f32> {
    let mut out = Vec::new();
    for t in 0..128 {
        let (w, l) = (t / 32, t % 32);
        for i in 0..4 {
            let (row, col) = (16 * w + l / 4 + 8 * (i / 2), 2 * (l % 4) + i % 2);
            out.push(times * (0..K).map(|k| a(row, k) * b(k, col)).sum::<f32>());
        }
    }
    out
}

/// Runs the kernel with `fence` and `mma` at `seed`, checked: `out` and the findings (code, the
/// opcode of the instruction and of the one it conflicts with).
fn run(fence: &str, mma: &str, seed: u64) -> Result<(Vec<f32>, Vec<Found>), Error> {
    let src = KERNEL
        .replace("FENCE", fence)
        .replace("MMA", mma)
        .replace("ADESC", &A_DESC.to_string())
        .replace("BDESC", &B_DESC.to_string());
    let p = compile(&src, "k")?;
    let l = Launch::new(
        [1, 1, 1],
        [128, 1, 1],
        vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2)],
    );
    let mut bufs = vec![image(), fragments(), vec![0u8; 128 * 16]];
    let o = machine::run(&p, &l, &mut bufs, &Options { seed, check: true })?;
    let found = found(&p, &o.findings);
    let out = bufs[2]
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((out, found))
}

const FENCE: &str = "fence.proxy.async.shared::cta;";
const SMEM_MMA: &str =
    "\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd5, %rd6, PRED, 1, 1, 0, 0;";
const COMMIT_WAIT: &str = "\twgmma.commit_group.sync.aligned;\n\twgmma.wait_group.sync.aligned 0;";

#[test]
fn descriptors_and_the_accumulator_fragments_give_the_product() -> Result<(), Error> {
    // scale-d false: D = A·B.
    let mma = format!("{}\n{COMMIT_WAIT}", SMEM_MMA.replace("PRED", "%p2"));
    for seed in 0..2 {
        let (out, found) = run(FENCE, &mma, seed)?;
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(out, expected(1.0));
    }
    // Then scale-d true: D = A·B + D, twice the product.
    let twice = format!(
        "{}\n{}\n{COMMIT_WAIT}",
        SMEM_MMA.replace("PRED", "%p2"),
        SMEM_MMA.replace("PRED", "%p3")
    );
    assert_eq!(run(FENCE, &twice, 0)?.0, expected(2.0));
    Ok(())
}

#[test]
fn an_a_operand_in_registers_is_read_in_its_fragment_layout() -> Result<(), Error> {
    let mma = format!(
        "\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {{%f1, %f2, %f3, %f4}}, {{%ra0, %ra1, %ra2, %ra3}}, %rd6, %p2, 1, 1, 0;\n{COMMIT_WAIT}"
    );
    let (out, found) = run(FENCE, &mma, 0)?;
    assert!(found.is_empty(), "{found:?}");
    assert_eq!(out, expected(1.0));
    Ok(())
}

#[test]
fn unfenced_operands_are_a_missing_fence_at_the_mma() -> Result<(), Error> {
    let mma = format!("{}\n{COMMIT_WAIT}", SMEM_MMA.replace("PRED", "%p2"));
    let (_, found) = run("", &mma, 0)?;
    assert!(
        found.iter().any(|f| f.0 == Code::MissingFence
            && f.1.starts_with("wgmma.mma_async")
            && f.2 == "st.shared.u32"),
        "{found:?}"
    );
    Ok(())
}

#[test]
fn overwriting_an_operand_before_the_wait_is_write_while_in_flight() -> Result<(), Error> {
    // Each thread stores to the start of A after the commit, before the wait.
    let mma = format!(
        "{}\n\twgmma.commit_group.sync.aligned;\n\tst.shared.u32 [%r5], 0;\n\twgmma.wait_group.sync.aligned 0;",
        SMEM_MMA.replace("PRED", "%p2")
    );
    let (_, found) = run(FENCE, &mma, 0)?;
    assert!(
        found.iter().any(|f| f.0 == Code::WriteWhileInFlight
            && f.1 == "st.shared.u32"
            && f.2.starts_with("wgmma.mma_async")),
        "{found:?}"
    );
    // After the wait, the same store is ordered.
    let mma = format!(
        "{}\n{COMMIT_WAIT}\n\tbar.sync 0;\n\tst.shared.u32 [%r5], 0;",
        SMEM_MMA.replace("PRED", "%p2")
    );
    let (_, found) = run(FENCE, &mma, 0)?;
    assert!(found.is_empty(), "{found:?}");
    Ok(())
}

#[test]
fn forms_that_do_not_fit_their_shape_are_refused() {
    // m64n8 with an f32 accumulator takes 4 registers per thread, not 2.
    let mma = "\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f2}, %rd5, %rd6, %p2, 1, 1, 0, 0;";
    let r = run(FENCE, mma, 0);
    assert!(matches!(r, Err(Error::Invalid { .. })), "{r:?}");
    // f16 operands step K by 16, not 32.
    let mma = "\twgmma.mma_async.sync.aligned.m64n8k32.f32.f16.f16 {%f1, %f2, %f3, %f4}, %rd5, %rd6, %p2, 1, 1, 0, 0;";
    let r = run(FENCE, mma, 0);
    assert!(matches!(r, Err(Error::Invalid { .. })), "{r:?}");
}

#[test]
fn wait_group_retires_all_but_the_newest_groups() -> Result<(), Error> {
    // Two groups of one MMA each, both reading A; `wait_group 1` retires the first only, so a
    // store to A after it (and a CTA barrier) still meets the second's read.
    let mma = SMEM_MMA.replace("PRED", "%p2");
    let two = |n: u32| {
        format!(
            "{mma}\n\twgmma.commit_group.sync.aligned;\n{mma}\n\twgmma.commit_group.sync.aligned;\n\
             \twgmma.wait_group.sync.aligned {n};\n\tbar.sync 0;\n\tst.shared.u32 [%r5], 0;"
        )
    };
    let (_, found) = run(FENCE, &two(1), 0)?;
    assert!(
        found
            .iter()
            .any(|f| f.0 == Code::WriteWhileInFlight && f.1 == "st.shared.u32"),
        "{found:?}"
    );
    let (out, found) = run(FENCE, &two(0), 0)?;
    assert!(found.is_empty(), "{found:?}");
    assert_eq!(out, expected(1.0));
    Ok(())
}

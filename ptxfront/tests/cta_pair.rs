//! CTA pairs (`.cta_group::2`) on the PTX front end's machine, with a hand-written kernel: the
//! pair's tensor-memory allocation, a pair MMA of M = 256 issued by the even CTA and its commit
//! multicast to both CTAs' barriers, each CTA loading its half of the accumulator. The values
//! are computed by hand from the PTX ISA's statement of the pair MMA (tcgen05 "Issue
//! Granularity": each CTA holds A's rows `[M/2, K]` and half of B `[N/2, K]`, and its
//! accumulator rows are `A_r · [B_0 | B_1]`); the planted bugs are a commit whose CTA mask
//! leaves the peer out and a pair MMA issued before the peer's operands were written.

mod common;

use bwsim_isa::Code;
use bwsim_ptxfront::machine::{self, Options};
use bwsim_ptxfront::{compile, Arg, Error, Launch};
use common::{bytes_f32, rows_kernel, rows_launch, runtime_error};

/// Shared bytes of each CTA's A (128 rows of 16 f16, no swizzling): 0 to 4096; B (16 rows):
/// 4096 to 4608; the allocation's address at 4608, the barrier at 4624.
const SHARED: u64 = 4736;

/// The pair kernel, 32 threads per CTA (warp 0 of each CTA), `.loc` lines of `pair.py`:
/// - line 10: each CTA fills its A and B with `rank + 1` (f16), all of them;
/// - the pair allocates 32 columns (`tcgen05.alloc.cta_group::2`), initialises its barrier,
///   and a relaxed cluster barrier publishes the inits; line 11: a releasing cluster barrier
///   (`//R`, the planted bug deletes it) publishes the operands to the leader;
/// - line 20: thread 0 of rank 0 issues `tcgen05.mma.cta_group::2.kind::f16` of M = 256,
///   N = 32, K = 16 (A and B K-major, no swizzling: LBO 128, SBO 256), not accumulating;
///   line 21: its commit, multicast to the CTAs of `mask`;
/// - line 22: every CTA waits for its barrier; line 23: warp 0 loads lanes 0 to 31, columns 0 to
///   31, and writes them to `out[((ctaid * 32) + lane) * 32 + column]` (f32);
/// - line 24: a cluster barrier, then `tcgen05.dealloc.cta_group::2`.
fn pair_kernel(mask: u32) -> String {
    let regs: Vec<String> = (0..32).map(|j| format!("%r{}", 100 + j)).collect();
    let stores: String = (0..8)
        .map(|q| {
            format!(
                "\tst.global.v4.b32 \t[%rd5+{}], {{{}}};\n",
                16 * q,
                regs[4 * q..4 * q + 4].join(", ")
            )
        })
        .collect();
    let body = format!(
        r#"
	.loc	1 10 0
	ld.param.u64 	%rd1, [out];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %cluster_ctarank;
	mov.u32 	%r3, smem;
	setp.eq.u32 	%p1, %r2, 0;
	setp.eq.u32 	%p3, %r1, 0;
	add.s32 	%r8, %r3, 4608;
	tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%r8], 32;
	bar.sync 	0;
	ld.shared.b32 	%r9, [%r8];
	tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;
	add.s32 	%r10, %r3, 4624;
	@%p3 mbarrier.init.shared::cta.b64 	[%r10], 1;
	fence.mbarrier_init.release.cluster;
	barrier.cluster.arrive.relaxed.aligned;
	barrier.cluster.wait.aligned;
	selp.b32 	%r4, 1006648320, 1073758208, %p1;
	mov.u32 	%r5, %r1;
$L__fill:
	shl.b32 	%r6, %r5, 2;
	add.s32 	%r7, %r3, %r6;
	st.shared.b32 	[%r7], %r4;
	add.s32 	%r5, %r5, 32;
	setp.lt.u32 	%p2, %r5, 1152;
	@%p2 bra 	$L__fill;
	fence.proxy.async.shared::cta;
	.loc	1 11 0
	barrier.cluster.arrive.aligned; //R
	barrier.cluster.wait.aligned; //R
	.loc	1 20 0
	and.pred 	%p4, %p3, %p1;
	bfe.u32 	%r11, %r3, 4, 14;
	or.b32 	%r12, %r11, 524288;
	add.s32 	%r13, %r12, 256;
	mov.b32 	%r14, 16;
	mov.b64 	%rd2, {{%r12, %r14}};
	mov.b64 	%rd3, {{%r13, %r14}};
	mov.b32 	%r15, 268959760;
	setp.ne.u32 	%p6, %r1, %r1;
	@%p4 tcgen05.mma.cta_group::2.kind::f16 [%r9], %rd2, %rd3, %r15, %p6;
	.loc	1 21 0
	mov.b16 	%rs1, {mask};
	@%p4 tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%r10], %rs1;
$L__wait:
	.loc	1 22 0
	mbarrier.try_wait.parity.shared::cta.b64 	%p7, [%r10], 0;
	@!%p7 bra 	$L__wait;
	.loc	1 23 0
	tcgen05.ld.sync.aligned.32x32b.x32.b32 {{{regs}}}, [%r9];
	tcgen05.wait::ld.sync.aligned;
	mov.u32 	%r16, %ctaid.x;
	shl.b32 	%r17, %r16, 5;
	add.s32 	%r17, %r17, %r1;
	mul.wide.u32 	%rd4, %r17, 128;
	add.s64 	%rd5, %rd1, %rd4;
{stores}	.loc	1 24 0
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	tcgen05.dealloc.cta_group::2.sync.aligned.b32 %r9, 32;
	ret;
"#,
        regs = regs.join(", ")
    );
    entry("pair", "\t.param .u64 out", &body)
}

/// The kernel `name` (an `.explicitcluster` entry of 32 threads, the dynamic shared array
/// `smem`, `.loc` file 1 `NAME.py`) of the parameters `params` around `body`.
fn entry(name: &str, params: &str, body: &str) -> String {
    format!(
        ".version 8.7\n.target sm_100a\n.address_size 64\n.extern .shared .align 128 .b8 smem[];\n\n\
         .visible .entry {name}(\n{params}\n)\n.reqntid 32\n.explicitcluster\n{{\n\
         \t.reg .pred \t%p<8>;\n\t.reg .b16 \t%rs<2>;\n\t.reg .b32 \t%r<140>;\n\t.reg .b64 \t%rd<12>;\n\
         {body}}}\n\t.file\t1 \"{name}.py\"\n"
    )
}

/// `src` without its lines marked `marker` (a planted bug).
fn without(src: String, marker: &str) -> String {
    src.lines()
        .filter(|l| !l.ends_with(marker))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Two clusters of two CTAs (clusters of `cluster` CTAs), and the output buffer.
fn launch(cluster: u32) -> (Launch, Vec<Vec<u8>>) {
    let mut l = Launch::new([4, 1, 1], [32, 1, 1], vec![Arg::Buffer(0)]);
    l.cluster = [cluster, 1, 1];
    l.dynamic_shared = SHARED;
    (l, vec![vec![0u8; 4 * 32 * 32 * 4]])
}

#[test]
fn a_pair_mma_multiplies_each_ctas_rows_of_a_by_both_halves_of_b() -> Result<(), Error> {
    let p = compile(&pair_kernel(3), "pair")?;
    let (l, bufs) = launch(2);
    for seed in 0..4 {
        let mut b = bufs.clone();
        let o = machine::run(&p, &l, &mut b, &Options { seed, check: true })?;
        assert!(o.findings.is_empty(), "seed {seed}: {:?}", o.findings);
        let out = bytes_f32(&b[0]);
        for cta in 0..4usize {
            // A of rank r holds r + 1; B's rows 0..16 come from rank 0 (1.0), 16..32 from
            // rank 1 (2.0): D_r[i][j] = 16 (K) * (r + 1) * (j / 16 + 1).
            let r = (cta % 2) as f32;
            for lane in 0..32 {
                for j in 0..32 {
                    let want = 16.0 * (r + 1.0) * ((j / 16) as f32 + 1.0);
                    let got = out[(cta * 32 + lane) * 32 + j];
                    assert_eq!(got, want, "seed {seed} CTA {cta} row {lane} column {j}");
                }
            }
        }
    }
    Ok(())
}

#[test]
fn a_pair_commit_that_leaves_the_peer_out_of_its_mask_deadlocks_the_peer() -> Result<(), Error> {
    // Mask 1: only the leader's barrier hears of the MMA; rank 1 waits for ever.
    let p = compile(&pair_kernel(1), "pair")?;
    let (l, mut b) = launch(2);
    match machine::run(&p, &l, &mut b, &Options { seed: 0, check: true }) {
        Err(Error::Stuck(f)) => {
            // The leader waits at the final cluster barrier (line 24) for rank 1, which never
            // passes its barrier wait (line 22); with the mask 3 the same launch completes
            // (the test above).
            assert_eq!(f.code, Code::Deadlock);
            assert_eq!(machine::source_line(&p, f.pc).map(|(_, l)| l), Some(24));
        }
        r => panic!("rank 1's wait never completes: {:?}", r.map(|o| o.findings)),
    }
    Ok(())
}

#[test]
fn a_pair_mma_before_the_peers_operands_are_published_races_in_the_peer() -> Result<(), Error> {
    // Without the releasing cluster barrier (`//R`), the leader's MMA reads rank 1's A and B
    // with nothing ordering rank 1's stores before it: a `race` in rank 1 at the MMA, naming
    // the store.
    let p = compile(&without(pair_kernel(3), "//R"), "pair")?;
    let (l, bufs) = launch(2);
    let line = |pc: usize| machine::source_line(&p, pc).map_or(0, |(_, l)| l);
    let found: Vec<(Code, u32, Option<u32>)> = machine::check(&p, &l, &bufs, 4)?
        .iter()
        .map(|f| (f.code, line(f.pc), f.with.first().map(|&w| line(w))))
        .collect();
    assert!(found.contains(&(Code::Race, 20, Some(10))), "{found:?}");
    Ok(())
}

#[test]
fn pair_instructions_need_clusters_of_an_even_size() -> Result<(), Error> {
    let p = compile(&pair_kernel(3), "pair")?;
    let (l, mut b) = launch(1);
    let message = runtime_error(&p, &l, &mut b, "a pair allocation in a cluster of one CTA");
    assert!(message.contains("cluster of 1 CTA"), "{message}");
    Ok(())
}

/// Each CTA of a pair copies row `rank` of an 8 x 2 f32 tensor into its shared memory with
/// `cp.async.bulk.tensor.2d.cta_group::2`, its bytes completing on the barrier of the pair's
/// even CTA (the barrier's address masked with `0xFEFFFFF0`, clearing the peer bit, as Triton
/// 3.9 writes it); each CTA expects its 32 bytes there. Line 31: rank 0 waits for both copies;
/// line 32 (`//H`, the planted bug deletes it): a cluster barrier hands what rank 0 learned to
/// rank 1; line 33: lanes 0 to 7 of each CTA write its row to `out[8 * rank + lane]`.
fn pair_copy() -> String {
    let copy = r#"	.loc	1 30 0
	and.b32 	%r12, %r3, -16777232;
	setp.eq.s32 	%p1, %r1, 0;
	setp.eq.s32 	%p2, %r2, 0;
	and.pred 	%p3, %p1, %p2;
	@%p3 mbarrier.init.shared::cta.b64 	[%r3], 2;
	fence.mbarrier_init.release.cluster;
	barrier.cluster.arrive.relaxed.aligned;
	barrier.cluster.wait.aligned;
	@%p1 mbarrier.arrive.expect_tx.shared::cluster.b64 	_, [%r12], 32;
	mov.u32 	%r5, 0;
	@%p1 cp.async.bulk.tensor.2d.cta_group::2.shared::cluster.global.mbarrier::complete_tx::bytes [%r4], [%rd2, {%r5, %r2}], [%r12];
	@!%p2 bra 	$L__handoff;
$L__wait:
	.loc	1 31 0
	mbarrier.try_wait.parity.shared::cta.b64 	%p4, [%r3], 0;
	@!%p4 bra 	$L__wait;
$L__handoff:
	.loc	1 32 0
	barrier.cluster.arrive.aligned; //H
	barrier.cluster.wait.aligned; //H"#;
    rows_kernel("pc", ".explicitcluster", copy, 33)
}

#[test]
fn pair_copies_land_in_their_cta_and_complete_on_the_leaders_barrier() -> Result<(), Error> {
    let p = compile(&pair_copy(), "pc")?;
    let (l, bufs) = rows_launch();
    for seed in 0..4 {
        let mut b = bufs.clone();
        let o = machine::run(&p, &l, &mut b, &Options { seed, check: true })?;
        assert!(o.findings.is_empty(), "seed {seed}: {:?}", o.findings);
        // Rank r holds row r (elements 8r .. 8r + 8).
        let out = bytes_f32(&b[1]);
        let want: Vec<f32> = (0..16).map(|i| i as f32).collect();
        assert_eq!(out, want, "seed {seed}");
    }
    // Without the hand-off, rank 1 reads its row with nothing ordering the copy's write before
    // it: rank 1 never waits, only the leader does.
    let p = compile(&without(pair_copy(), "//H"), "pc")?;
    let line = |pc: usize| machine::source_line(&p, pc).map_or(0, |(_, l)| l);
    let found: Vec<(Code, u32)> = machine::check(&p, &l, &bufs, 4)?
        .iter()
        .map(|f| (f.code, line(f.pc)))
        .collect();
    assert!(found.contains(&(Code::ReadBeforeComplete, 33)), "{found:?}");
    Ok(())
}

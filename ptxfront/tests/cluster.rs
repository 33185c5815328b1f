//! Clusters on the PTX front end's machine, with hand-written kernels: the cluster special
//! registers (values as the PTX ISA defines them, computed here from the launch), distributed
//! shared memory through `mapa` and `ld`/`st.shared::cluster`, the cluster barrier, remote
//! mbarrier arrivals; each with the checker's verdict on the correct kernel and on a planted
//! bug (a missing cluster barrier, an exit while a peer reads).

mod common;

use bwsim_isa::Code;
use bwsim_ptxfront::machine::{self, Options};
use bwsim_ptxfront::{compile, run, Arg, Error, Launch};
use common::{rows_kernel, rows_launch, runtime_error};

/// A kernel `name` of one parameter `out` (a pointer), 32 threads per CTA, with the entry
/// directives `directives`, the dynamic shared array `smem` and the `.loc` file 1 `NAME.py`,
/// around `body`, which starts with `%rd1` the output, `%r1` the thread's index, `%r2` the
/// CTA's rank in its cluster and `%r3` the address of `smem`.
fn kernel(name: &str, directives: &str, body: &str) -> String {
    format!(
        ".version 8.7\n.target sm_100a\n.address_size 64\n.extern .shared .align 16 .b8 smem[];\n\n\
         .visible .entry {name}(\n\t.param .u64 out\n)\n.reqntid 32\n{directives}\n{{\n\
         \t.reg .pred \t%p<8>;\n\t.reg .b32 \t%r<24>;\n\t.reg .b64 \t%rd<12>;\n\t.reg .b128 \t%rq<2>;\n\
         \tld.param.u64 \t%rd1, [out];\n\tmov.u32 \t%r1, %tid.x;\n\tmov.u32 \t%r2, %cluster_ctarank;\n\
         \tmov.u32 \t%r3, smem;\n{body}}}\n\t.file\t1 \"{name}.py\"\n"
    )
}

/// Thread 0 of each CTA writes, at word 12 * (linear CTA id) of the output: `%cluster_ctarank`,
/// `%cluster_nctarank`, `%cluster_ctaid.x/.y`, `%cluster_nctaid.x`, `%clusterid.x/.y`,
/// `%nclusterid.x` and `%is_explicit_cluster` (as 0 or 1).
fn sregs() -> String {
    kernel(
        "sregs",
        "",
        r#"
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__done;
	mov.u32 	%r3, %ctaid.y;
	mov.u32 	%r4, %nctaid.x;
	mul.lo.s32 	%r5, %r3, %r4;
	mov.u32 	%r2, %ctaid.x;
	add.s32 	%r5, %r5, %r2;
	cvt.u64.u32 	%rd2, %r5;
	mul.lo.s64 	%rd2, %rd2, 48;
	add.s64 	%rd3, %rd1, %rd2;
	mov.u32 	%r6, %cluster_ctarank;
	mov.u32 	%r7, %cluster_nctarank;
	mov.u32 	%r8, %cluster_ctaid.x;
	mov.u32 	%r9, %cluster_ctaid.y;
	mov.u32 	%r10, %cluster_nctaid.x;
	mov.u32 	%r11, %clusterid.x;
	mov.u32 	%r12, %clusterid.y;
	mov.u32 	%r13, %nclusterid.x;
	mov.pred 	%p2, %is_explicit_cluster;
	selp.u32 	%r14, 1, 0, %p2;
	st.global.v4.u32 	[%rd3], {%r6, %r7, %r8, %r9};
	st.global.v4.u32 	[%rd3+16], {%r10, %r11, %r12, %r13};
	st.global.u32 	[%rd3+32], %r14;
$L__done:
	ret;
"#,
    )
}

/// `src` without its lines marked `marker` (a planted bug).
fn without(src: String, marker: &str) -> String {
    src.lines()
        .filter(|l| !l.ends_with(marker))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Kernel `name` of `src` and its launch: `grid_x` CTAs in clusters of 2, of 32 threads, with
/// `shared` bytes of dynamic shared memory and one output buffer.
fn pair_kernel(
    src: &str,
    name: &str,
    grid_x: u32,
    shared: u64,
) -> Result<(bwsim_ptxfront::Program, Launch), Error> {
    let mut l = Launch::new([grid_x, 1, 1], [32, 1, 1], vec![Arg::Buffer(0)]);
    l.cluster = [2, 1, 1];
    l.dynamic_shared = shared;
    Ok((compile(src, name)?, l))
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn cluster_registers_are_the_ctas_place_in_its_cluster() -> Result<(), Error> {
    let p = compile(&sregs(), "sregs")?;
    // A grid of 4 x 2 CTAs in clusters of 2 x 2.
    let (grid, cluster) = ([4u32, 2, 1], [2u32, 2, 1]);
    let mut l = Launch::new(grid, [32, 1, 1], vec![Arg::Buffer(0)]);
    l.cluster = cluster;
    for machine_run in [false, true] {
        let mut bufs = vec![vec![0u8; 8 * 48]];
        if machine_run {
            machine::run(&p, &l, &mut bufs, &Options { seed: 3, check: true })?;
        } else {
            run(&p, &l, &mut bufs)?;
        }
        let w = words(&bufs[0]);
        for y in 0..2u32 {
            for x in 0..4u32 {
                let id = (y * 4 + x) as usize;
                let (cx, cy) = (x % 2, y % 2);
                let got = &w[12 * id..12 * id + 9];
                // rank (x fastest), size, position in the cluster, cluster shape, cluster
                // id, clusters of the grid, explicit.
                let want = [cx + 2 * cy, 4, cx, cy, 2, x / 2, y / 2, 2, 1];
                assert_eq!(got, want, "CTA ({x}, {y})");
            }
        }
    }
    Ok(())
}

#[test]
fn without_clusters_a_cta_is_its_own_cluster() -> Result<(), Error> {
    let p = compile(&sregs(), "sregs")?;
    let l = Launch::new([3, 1, 1], [32, 1, 1], vec![Arg::Buffer(0)]);
    let mut bufs = vec![vec![0u8; 3 * 48]];
    run(&p, &l, &mut bufs)?;
    let w = words(&bufs[0]);
    for x in 0..3usize {
        let got = &w[12 * x..12 * x + 9];
        assert_eq!(got, [0, 1, 0, 0, 1, x as u32, 0, 3, 0], "CTA {x}");
    }
    Ok(())
}

/// Each CTA of a cluster of 2 stores `10 * rank + lane` into its shared word `lane` (32
/// threads), then, after a cluster barrier, reads the word `lane` of the other CTA through
/// `mapa` and `ld.shared::cluster` and writes it to `out[64 * clusterid + 32 * rank + lane]`,
/// then ends with a second cluster barrier (the peer must not exit while it is read). The
/// markers `//A` and `//B` are the barriers a planted bug deletes.
fn exchange() -> String {
    kernel(
        "exchange",
        ".reqnctapercluster 2",
        r#"
	.loc	1 10 0
	shl.b32 	%r4, %r1, 2;
	add.s32 	%r5, %r3, %r4;
	mad.lo.s32 	%r6, %r2, 10, %r1;
	.loc	1 11 0
	st.shared.u32 	[%r5], %r6;
	.loc	1 12 0
	barrier.cluster.arrive.aligned; //A
	barrier.cluster.wait.aligned; //A
	xor.b32 	%r7, %r2, 1;
	.loc	1 13 0
	mapa.shared::cluster.u32 	%r8, %r5, %r7;
	ld.shared::cluster.u32 	%r9, [%r8];
	.loc	1 14 0
	mov.u32 	%r10, %clusterid.x;
	shl.b32 	%r11, %r10, 6;
	shl.b32 	%r12, %r2, 5;
	add.s32 	%r13, %r11, %r12;
	add.s32 	%r14, %r13, %r1;
	mul.wide.u32 	%rd2, %r14, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r9;
	.loc	1 15 0
	barrier.cluster.arrive.aligned; //B
	barrier.cluster.wait.aligned; //B
	ret;
"#,
    )
}

fn exchange_launch(src: &str) -> Result<(bwsim_ptxfront::Program, Launch), Error> {
    pair_kernel(src, "exchange", 4, 128)
}

fn findings(src: &str, schedules: u64) -> Result<Vec<(Code, u32, Option<u32>)>, Error> {
    let (p, l) = exchange_launch(src)?;
    let bufs = vec![vec![0u8; 4 * 128]];
    let line = |pc: usize| machine::source_line(&p, pc).map_or(0, |(_, l)| l);
    Ok(machine::check(&p, &l, &bufs, schedules)?
        .iter()
        .map(|f| (f.code, line(f.pc), f.with.first().map(|&w| line(w))))
        .collect())
}

#[test]
fn ctas_of_a_cluster_read_each_others_shared_memory() -> Result<(), Error> {
    let (p, l) = exchange_launch(&exchange())?;
    for seed in 0..4 {
        let mut bufs = vec![vec![0u8; 4 * 128]];
        let o = machine::run(&p, &l, &mut bufs, &Options { seed, check: true })?;
        assert!(o.findings.is_empty(), "seed {seed}: {:?}", o.findings);
        assert_eq!(o.stats.ctas, 4);
        let w = words(&bufs[0]);
        for c in 0..2u32 {
            for r in 0..2u32 {
                for lane in 0..32u32 {
                    // CTA r read its peer's (rank r ^ 1) word.
                    let want = 10 * (r ^ 1) + lane;
                    assert_eq!(
                        w[(64 * c + 32 * r + lane) as usize],
                        want,
                        "cluster {c} rank {r} lane {lane}"
                    );
                }
            }
        }
    }
    Ok(())
}

#[test]
fn a_peer_read_before_the_cluster_barrier_races_with_the_owners_store() -> Result<(), Error> {
    let planted = without(exchange(), "//A");
    let found = findings(&planted, 16)?;
    // The peer's load (line 13) against the owner's store (line 11).
    assert!(
        found.contains(&(Code::Race, 13, Some(11))) || found.contains(&(Code::Race, 11, Some(13))),
        "{found:?}"
    );
    assert!(findings(&exchange(), 16)?.is_empty());
    Ok(())
}

#[test]
fn a_cta_that_exits_while_its_peer_reads_it_is_a_cluster_exit() -> Result<(), Error> {
    let planted = without(exchange(), "//B");
    let found = findings(&planted, 4)?;
    assert!(
        found.iter().any(|f| f.0 == Code::ClusterExit && f.1 == 13),
        "{found:?}"
    );
    Ok(())
}

/// CTA rank 1 of a cluster of 2 arrives (one thread) on CTA 0's mbarrier, which CTA 0
/// initialised with count 1 and waits on; CTA 1 first stores a word into CTA 0's shared memory
/// (`st.shared::cluster`), which CTA 0 reads after its wait and writes to `out[clusterid]`. The
/// inits are released to the cluster by `fence.mbarrier_init` and a relaxed cluster barrier
/// (`//I`, which a planted bug deletes).
fn remote_arrive() -> String {
    kernel(
        "remote_arrive",
        ".reqnctapercluster 2",
        r#"
	.loc	1 20 0
	setp.eq.s32 	%p1, %r1, 0;
	setp.eq.s32 	%p2, %r2, 0;
	and.pred 	%p3, %p1, %p2;
	.loc	1 21 0
	@%p3 mbarrier.init.shared::cta.b64 	[%r3], 1;
	fence.mbarrier_init.release.cluster; //I
	barrier.cluster.arrive.relaxed.aligned; //I
	barrier.cluster.wait.aligned; //I
	@%p2 bra 	$L__wait;
	@!%p1 bra 	$L__end;
	.loc	1 22 0
	mapa.shared::cluster.u32 	%r4, %r3, 0;
	mov.u32 	%r5, 1234;
	st.shared::cluster.u32 	[%r4+8], %r5;
	.loc	1 23 0
	mbarrier.arrive.release.cluster.shared::cluster.b64 	_, [%r4];
	bra.uni 	$L__end;
$L__wait:
	.loc	1 24 0
	mbarrier.try_wait.parity.shared::cta.b64 	%p4, [%r3], 0;
	@!%p4 bra 	$L__wait;
	@!%p1 bra 	$L__end;
	.loc	1 25 0
	ld.shared.u32 	%r6, [%r3+8];
	mov.u32 	%r7, %clusterid.x;
	mul.wide.u32 	%rd2, %r7, 4;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.u32 	[%rd3], %r6;
$L__end:
	.loc	1 26 0
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	ret;
"#,
    )
}

#[test]
fn a_remote_arrival_orders_the_peers_store_before_the_waiters_load() -> Result<(), Error> {
    let (p, l) = pair_kernel(&remote_arrive(), "remote_arrive", 2, 64)?;
    for seed in 0..8 {
        let mut bufs = vec![vec![0u8; 8]];
        let o = machine::run(&p, &l, &mut bufs, &Options { seed, check: true })?;
        assert!(o.findings.is_empty(), "seed {seed}: {:?}", o.findings);
        assert_eq!(words(&bufs[0])[0], 1234);
    }
    let planted = without(remote_arrive(), "//I");
    let p = compile(&planted, "remote_arrive")?;
    let bufs = vec![vec![0u8; 8]];
    let line = |pc: usize| machine::source_line(&p, pc).map_or(0, |(_, l)| l);
    let mut misuse = false;
    for seed in 0..16 {
        let mut b = bufs.clone();
        match machine::run(&p, &l, &mut b, &Options { seed, check: true }) {
            Ok(o) => {
                misuse |= o
                    .findings
                    .iter()
                    .any(|f| f.code == Code::BarrierMisuse && line(f.pc) == 23)
            }
            // The arrival reached the barrier before its init: a run-time error there.
            Err(Error::Runtime { message, .. }) => {
                assert!(message.contains("without `mbarrier.init`"), "{message}")
            }
            Err(e) => return Err(e),
        }
    }
    assert!(
        misuse,
        "an arrival on a barrier whose init the arriving CTA cannot know of"
    );
    Ok(())
}

#[test]
fn a_rank_outside_the_cluster_is_an_error() -> Result<(), Error> {
    let src = exchange().replace("xor.b32 \t%r7, %r2, 1;", "add.s32 \t%r7, %r2, 2;");
    assert_ne!(src, exchange());
    let (p, l) = exchange_launch(&src)?;
    let mut bufs = vec![vec![0u8; 4 * 128]];
    let message = runtime_error(&p, &l, &mut bufs, "a read of CTA rank 2 or 3 of a cluster of 2");
    assert!(message.contains("of a cluster of 2"), "{message}");
    Ok(())
}

/// A persistent loop over the tiles of a grid of 4 CTAs with cluster launch control: thread 0
/// asks to cancel the next launch (`try_cancel` into a 16-byte response, 16 bytes expected on
/// the barrier), writes `out[tile] = 1 + (its own CTA id)`, waits for the response (`//W`, which
/// a planted bug deletes), and goes on with the cancelled launch's first CTA id while the
/// response says one was cancelled.
fn clc() -> String {
    kernel(
        "clc",
        "",
        r#"
	.loc	1 30 0
	setp.ne.s32 	%p1, %r1, 0;
	@%p1 bra 	$L__end;
	mov.u32 	%r2, smem;
	add.s32 	%r3, %r2, 16;
	mbarrier.init.shared::cta.b64 	[%r2], 1;
	mov.u32 	%r4, %ctaid.x;
	mov.u32 	%r5, %r4;
	mov.u32 	%r6, 0;
$L__loop:
	.loc	1 31 0
	mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r2], 16;
	clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%r3], [%r2];
	.loc	1 32 0
	mul.wide.u32 	%rd2, %r5, 4;
	add.s64 	%rd3, %rd1, %rd2;
	add.s32 	%r7, %r4, 1;
	st.global.u32 	[%rd3], %r7;
$L__wait:
	.loc	1 33 0
	mbarrier.try_wait.parity.shared::cta.b64 	%p2, [%r2], %r6; //W
	@!%p2 bra 	$L__wait; //W
	.loc	1 34 0
	ld.shared.v2.b64 	{%rd4, %rd5}, [%r3];
	mov.b128 	%rq1, {%rd4, %rd5};
	clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 %p3, %rq1;
	clusterlaunchcontrol.query_cancel.get_first_ctaid::x.b32.b128 %r5, %rq1;
	xor.b32 	%r6, %r6, 1;
	@%p3 bra 	$L__loop;
$L__end:
	ret;
"#,
    )
}

#[test]
fn cluster_launch_control_hands_the_launches_not_started_to_the_asking_cta() -> Result<(), Error> {
    let p = compile(&clc(), "clc")?;
    let mut l = Launch::new([4, 1, 1], [32, 1, 1], vec![Arg::Buffer(0)]);
    l.dynamic_shared = 64;
    for seed in 0..4 {
        let mut bufs = vec![vec![0u8; 16]];
        let o = machine::run(&p, &l, &mut bufs, &Options { seed, check: true })?;
        assert!(o.findings.is_empty(), "seed {seed}: {:?}", o.findings);
        // Clusters start in grid order, one at a time: CTA 0 cancels the launches of CTAs
        // 1, 2 and 3 and does their tiles; its fourth request cancels nothing.
        assert_eq!(words(&bufs[0]), [1, 1, 1, 1]);
        assert_eq!(o.stats.ctas, 1);
    }
    // Without clusters launch control the CTAs would each write their own id + 1: the
    // synchronous executor refuses the cancel instead of ignoring it.
    let mut bufs = vec![vec![0u8; 16]];
    assert!(matches!(run(&p, &l, &mut bufs), Err(Error::Runtime { .. })));
    Ok(())
}

#[test]
fn a_response_read_before_its_barrier_completes_is_read_before_complete() -> Result<(), Error> {
    let planted = without(clc(), "//W");
    let p = compile(&planted, "clc")?;
    let mut l = Launch::new([4, 1, 1], [32, 1, 1], vec![Arg::Buffer(0)]);
    l.dynamic_shared = 64;
    let bufs = vec![vec![0u8; 16]];
    let line = |pc: usize| machine::source_line(&p, pc).map_or(0, |(_, l)| l);
    let mut found = Vec::new();
    for seed in 0..8 {
        let mut b = bufs.clone();
        // A schedule may also stop the run: an arrival on a phase still waiting for bytes.
        if let Ok(o) = machine::run(&p, &l, &mut b, &Options { seed, check: true }) {
            found.extend(
                o.findings
                    .iter()
                    .map(|f| (f.code, line(f.pc), f.with.first().map(|&w| line(w)))),
            );
        }
    }
    assert!(
        found.contains(&(Code::ReadBeforeComplete, 34, Some(31))),
        "{found:?}"
    );
    Ok(())
}

/// Each CTA of a cluster of 2 stores `100 + rank` at its shared word 0, and after a cluster
/// barrier reads word 0 at its own `smem` address with bit 24 cleared (Triton's mask
/// `0xFEFFFFF0` for the even CTA of a pair) through `ld.shared::cluster`; it writes that
/// address and the value to `out[2 * rank..]`.
fn even_peer() -> String {
    kernel(
        "even_peer",
        ".reqnctapercluster 2",
        r#"
	mov.u32 	%r1, %cluster_ctarank;
	mov.u32 	%r2, smem;
	add.s32 	%r3, %r1, 100;
	st.shared.u32 	[%r2], %r3;
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	and.b32 	%r4, %r2, -16777232;
	ld.shared::cluster.u32 	%r5, [%r4];
	mul.wide.u32 	%rd2, %r1, 8;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.v2.u32 	[%rd3], {%r2, %r5};
	barrier.cluster.arrive.aligned;
	barrier.cluster.wait.aligned;
	ret;
"#,
    )
}

#[test]
fn shared_addresses_carry_the_rank_and_the_pair_mask_names_the_even_cta() -> Result<(), Error> {
    let (p, l) = pair_kernel(&even_peer(), "even_peer", 2, 16)?;
    let mut bufs = vec![vec![0u8; 16]];
    let o = machine::run(&p, &l, &mut bufs, &Options { seed: 1, check: true })?;
    assert!(o.findings.is_empty(), "{:?}", o.findings);
    // Rank 0's `smem` is shared byte 0, rank 1's the same byte with its rank at bit 24; both
    // read rank 0's word.
    assert_eq!(words(&bufs[0]), [0, 100, 1 << 24, 100]);
    Ok(())
}

/// A cluster of 2: each CTA initialises its barrier (thread 0; count 1) and expects the 32
/// bytes of a box, the inits released by `fence.mbarrier_init` and a relaxed cluster barrier;
/// (`//I`); rank 0 multicasts row 1 of an f32[2, 8] tensor into both CTAs' shared memory (mask 3,
/// or the one given), each CTA waits on its own barrier and writes the row to
/// `out[8 * rank..]`, then meets the other at a closing cluster barrier.
fn multicast(mask: u32) -> String {
    let copy = format!(
        r#"	.loc	1 40 0
	setp.eq.s32 	%p1, %r1, 0;
	@%p1 mbarrier.init.shared::cta.b64 	[%r3], 1;
	@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 	_, [%r3], 32;
	fence.mbarrier_init.release.cluster; //I
	barrier.cluster.arrive.relaxed.aligned; //I
	barrier.cluster.wait.aligned; //I
	setp.eq.s32 	%p2, %r2, 0;
	and.pred 	%p3, %p1, %p2;
	mov.u32 	%r5, 0;
	mov.u32 	%r6, 1;
	mov.u16 	%rs1, {mask};
	.loc	1 41 0
	@%p3 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r4], [%rd2, {{%r5, %r6}}], [%r3], %rs1;
$L__wait:
	.loc	1 42 0
	mbarrier.try_wait.parity.shared::cta.b64 	%p4, [%r3], 0;
	@!%p4 bra 	$L__wait;"#
    );
    rows_kernel("mc", ".reqnctapercluster 2", &copy, 43)
}

#[test]
fn a_multicast_copy_lands_in_every_cta_of_its_mask() -> Result<(), Error> {
    let p = compile(&multicast(3), "mc")?;
    let (l, bufs) = rows_launch();
    for seed in 0..4 {
        let mut b = bufs.clone();
        let o = machine::run(&p, &l, &mut b, &Options { seed, check: true })?;
        assert!(o.findings.is_empty(), "seed {seed}: {:?}", o.findings);
        // Both CTAs hold row 1 (elements 8..16) of the tensor.
        let out: Vec<f32> = b[1]
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let row: Vec<f32> = (8..16).map(|i| i as f32).collect();
        assert_eq!(out[..8], row[..]);
        assert_eq!(out[8..], row[..]);
    }
    // A mask naming rank 1 alone leaves rank 0's barrier waiting for its bytes.
    let p = compile(&multicast(2), "mc")?;
    let mut b = bufs.clone();
    match machine::run(&p, &l, &mut b, &Options { seed: 0, check: true }) {
        Err(Error::Stuck(f)) => assert!(
            matches!(f.code, Code::Deadlock | Code::TxMismatch),
            "{:?}",
            f.code
        ),
        r => panic!(
            "rank 0 waits for bytes that never come: {:?}",
            r.map(|o| o.findings)
        ),
    }
    // A mask naming a CTA outside the cluster stops the run.
    let p = compile(&multicast(4), "mc")?;
    let mut b = bufs;
    let message = runtime_error(&p, &l, &mut b, "a multicast to rank 2 of a cluster of 2");
    assert!(message.contains("outside the cluster of 2"), "{message}");
    Ok(())
}

#[test]
fn a_multicast_onto_a_barrier_whose_init_is_not_released_is_barrier_misuse() -> Result<(), Error> {
    // Without the init fence and the relaxed cluster barrier (`//I`), rank 0's copy may
    // complete on rank 1's barrier before rank 1 initialised it, and rank 0 cannot know.
    let p = compile(&without(multicast(3), "//I"), "mc")?;
    let (l, bufs) = rows_launch();
    let line = |pc: usize| machine::source_line(&p, pc).map_or(0, |(_, l)| l);
    let mut misuse = false;
    for seed in 0..8 {
        let mut b = bufs.clone();
        // A copy that lands before the init loses its bytes: rank 1 then waits forever.
        if let Ok(o) = machine::run(&p, &l, &mut b, &Options { seed, check: true }) {
            misuse |= o
                .findings
                .iter()
                .any(|f| f.code == Code::BarrierMisuse && line(f.pc) == 41);
        }
    }
    assert!(misuse);
    Ok(())
}

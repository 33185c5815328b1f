//! Global-memory forms of the PTX front end, in hand-written kernels: `atom` and `red` on global
//! and shared memory (their values computed here from the PTX ISA's rule for each operation),
//! the memory-ordering fences, and the bulk tensor forms `cp.reduce.async.bulk.tensor` and
//! `tile::gather4` / `tile::scatter4` on the machine, with the hazard checker's verdicts.

use bwsim_isa::types::{DType, Swizzle};
use bwsim_isa::Code;
use bwsim_ptxfront::machine::{self, Options};
use bwsim_ptxfront::{compile, run, Arg, Error, Launch, Program, TensorMap};

/// Kernel `name` with the parameters `params` (each `TYPE NAME`; the kernels name them `p0`,
/// `p1`, ...), the registers every kernel here uses, and `body`.
fn kernel(name: &str, params: &[&str], body: &str) -> String {
    let params: Vec<String> = params.iter().map(|p| format!(".param {p}")).collect();
    format!(
        ".version 8.7\n.target sm_100a\n.address_size 64\n.visible .entry {name}({})\n{{\n.reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .f32 %f<4>;\n.reg .f64 %fd<2>;\n.reg .b64 %rd<10>;\n{body}\n}}\n",
        params.join(", ")
    )
}

/// Runs kernel `name` of three pointer parameters (`body`) over `bufs` (buffers 0, 1, 2) in
/// `ctas` CTAs of `threads`; the buffers after the run.
fn run3(
    name: &str,
    body: &str,
    ctas: u32,
    threads: u32,
    mut bufs: Vec<Vec<u8>>,
) -> Result<Vec<Vec<u8>>, Error> {
    let p = compile(&kernel(name, &[".u64 p0", ".u64 p1", ".u64 p2"], body), name)?;
    let args = vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2)];
    run(&p, &Launch::new([ctas, 1, 1], [threads, 1, 1], args), &mut bufs)?;
    Ok(bufs)
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Every thread adds 1 to bin `gid % 8` and keeps the old value; thread 0 of each CTA adds
/// (0.5, 1.0) to a packed f16x2 accumulator; a fence of each kind runs between.
const GLOBAL_ATOMICS: &str = r#"
	mov.u32 %r3, %ntid.x;
	mov.u32 %r2, %ctaid.x;
	mul.lo.s32 %r4, %r2, %r3;
	mov.u32 %r1, %tid.x;
	add.s32 %r4, %r4, %r1;
	and.b32 %r5, %r4, 7;
	ld.param.u64 %rd1, [p0];
	ld.param.u64 %rd2, [p1];
	ld.param.u64 %rd7, [p2];
	mul.wide.u32 %rd3, %r5, 4;
	add.s64 %rd4, %rd1, %rd3;
	atom.global.gpu.acq_rel.add.u32 %r6, [%rd4], 1;
	fence.acq_rel.gpu;
	fence.sc.cta;
	fence.release.gpu;
	fence.acquire.gpu;
	membar.gl;
	mul.wide.u32 %rd5, %r4, 4;
	add.s64 %rd6, %rd2, %rd5;
	st.global.u32 [%rd6], %r6;
	setp.ne.s32 %p1, %r1, 0;
	@%p1 bra $L_end;
	red.global.add.noftz.f16x2 [%rd7], 0x3c003800;
$L_end:
	ret;
"#;

#[test]
fn global_atomics_count_and_return_distinct_old_values() -> Result<(), Error> {
    let n = 3 * 40;
    let bufs = vec![bytes(&[0; 8]), bytes(&vec![0xdead; n]), bytes(&[0])];
    let bufs = run3("hist", GLOBAL_ATOMICS, 3, 40, bufs)?;
    let (bins, olds) = (words(&bufs[0]), words(&bufs[1]));
    // 120 threads over 8 bins: 15 each.
    assert_eq!(bins, vec![15; 8]);
    // The old values each bin handed out are 0..15, each once (the adds are atomic).
    for b in 0..8 {
        let mut got: Vec<u32> = (0..n).filter(|g| g % 8 == b).map(|g| olds[g]).collect();
        got.sort_unstable();
        assert_eq!(got, (0..15).collect::<Vec<_>>(), "bin {b}");
    }
    // Three adds of (0.5, 1.0) to f16 halves: (1.5, 3.0) = 0x3e00 low, 0x4200 high.
    assert_eq!(words(&bufs[2]), vec![0x4200_3e00]);
    Ok(())
}

/// Each thread tries to claim slot `tid % 4` (compare 0, store `tid + 1`), then exchanges its
/// id into `last`.
const CLAIMS: &str = r#"
	ld.param.u64 %rd1, [p0];
	ld.param.u64 %rd2, [p1];
	ld.param.u64 %rd8, [p2];
	mov.u32 %r1, %tid.x;
	and.b32 %r2, %r1, 3;
	add.s32 %r3, %r1, 1;
	mul.wide.u32 %rd3, %r2, 4;
	add.s64 %rd4, %rd1, %rd3;
	atom.global.acq_rel.gpu.cas.b32 %r4, [%rd4], 0, %r3;
	mul.wide.u32 %rd5, %r1, 4;
	add.s64 %rd6, %rd2, %rd5;
	st.global.u32 [%rd6], %r4;
	atom.exch.b32 %r5, [%rd8], %r3;
	ret;
"#;

#[test]
fn compare_and_swap_lets_one_thread_claim_each_slot() -> Result<(), Error> {
    let n = 64;
    let bufs = vec![bytes(&[0; 4]), bytes(&vec![0; n]), bytes(&[0])];
    let bufs = run3("claims", CLAIMS, 1, n as u32, bufs)?;
    let (slots, got) = (words(&bufs[0]), words(&bufs[1]));
    assert_eq!(slots.len(), 4);
    for (s, &slot) in slots.iter().enumerate() {
        let winners: Vec<usize> = (0..n).filter(|t| t % 4 == s && got[*t] == 0).collect();
        assert_eq!(winners.len(), 1, "slot {s}: {winners:?}");
        // The slot holds the winner's id + 1, which every loser of the slot saw.
        assert_eq!(slot, winners[0] as u32 + 1);
        assert!((0..n)
            .filter(|t| t % 4 == s && *t != winners[0])
            .all(|t| got[t] == slot));
    }
    // `exch` stores its operand: some thread's id + 1.
    assert!((1..=n as u32).contains(&words(&bufs[2])[0]));
    Ok(())
}

/// Thread 0 zeroes a counter and sets a maximum to -5 (BARRIER: then the CTA barrier), every
/// thread increments the counter with `red.inc` bounded by 4 and takes the maximum of
/// `tid - 40`; after a barrier thread 0 copies both out.
const SHARED_ATOMICS: &str = r#"
	.shared .align 4 .b8 bins[8];
	mov.u32 %r1, %tid.x;
	setp.ne.s32 %p1, %r1, 0;
	@%p1 bra $L_skip;
	st.shared.u32 [bins], 0;
	st.shared.u32 [bins+4], 0xfffffffb;
$L_skip:
	BARRIER
	red.shared.cta.relaxed.inc.u32 [bins], 4;
	sub.s32 %r2, %r1, 40;
	atom.relaxed.sys.shared.max.s32 %r5, [bins+4], %r2;
	bar.sync 0;
	@%p1 bra $L_end;
	ld.param.u64 %rd1, [p0];
	ld.shared.u32 %r3, [bins];
	ld.shared.u32 %r4, [bins+4];
	st.global.u32 [%rd1], %r3;
	st.global.u32 [%rd1+4], %r4;
$L_end:
	ret;
"#;

fn shared_atomics(barrier: bool) -> Result<(Program, Launch), Error> {
    let body = SHARED_ATOMICS.replace("BARRIER", if barrier { "bar.sync 0;" } else { "" });
    let src = kernel("smem", &[".u64 p0"], &body);
    let p = compile(&src, "smem")?;
    let l = Launch::new([1, 1, 1], [64, 1, 1], vec![Arg::Buffer(0)]);
    Ok((p, l))
}

#[test]
fn shared_atomics_wrap_and_take_the_maximum_and_check_clean() -> Result<(), Error> {
    let (p, l) = shared_atomics(true)?;
    for seed in 0..4 {
        let mut bufs = vec![vec![0u8; 8]];
        let o = machine::run(&p, &l, &mut bufs, &Options { seed, check: true })?;
        // 64 increments bounded by 4 count 0, 1, 2, 3, 4, 0, ...: 64 mod 5 = 4. The maximum
        // of -5 and tid - 40 over tids 0..63 is 23.
        assert_eq!(words(&bufs[0]), vec![4, 23], "seed {seed}");
        // Atomics of the two warps on one element do not race.
        assert!(o.findings.is_empty(), "{:?}", o.findings);
    }
    Ok(())
}

#[test]
fn a_plain_store_unordered_with_shared_atomics_races() -> Result<(), Error> {
    let (p, l) = shared_atomics(false)?;
    let found = machine::check(&p, &l, &[vec![0u8; 8]], 8)?;
    let line = |pc: usize| p.ins[pc].ptx_line;
    let lines_of = |pat: &str| -> Vec<u32> {
        (p.src.lines().enumerate())
            .filter(|(_, l)| l.contains(pat))
            .map(|(i, _)| i as u32 + 1)
            .collect()
    };
    // Each race pairs an initialising store of warp 0 with an atomic of warp 1.
    let races: Vec<(u32, Vec<u32>)> = found
        .iter()
        .filter(|f| f.code == Code::Race)
        .map(|f| (line(f.pc), f.with.iter().map(|&w| line(w)).collect()))
        .collect();
    assert!(!races.is_empty(), "{found:?}");
    let store_lines = lines_of("st.shared.u32 [bins");
    let atomic_lines = [lines_of("red.shared"), lines_of("atom.relaxed")].concat();
    assert_eq!((store_lines.len(), atomic_lines.len()), (2, 2));
    for (a, b) in &races {
        let pair = [*a, b[0]];
        assert!(
            pair.iter().any(|x| store_lines.contains(x)) && pair.iter().any(|x| atomic_lines.contains(x)),
            "{races:?}"
        );
    }
    Ok(())
}

#[test]
fn atomic_forms_outside_the_subset_are_refused_or_invalid() {
    let k = |ins: &str| kernel("k", &[".u64 p0"], &format!("{ins}\nret;"));
    let unsupported = |ins: &str| matches!(compile(&k(ins), "k"), Err(Error::Unsupported { .. }));
    let invalid = |ins: &str| matches!(compile(&k(ins), "k"), Err(Error::Invalid { .. }));
    assert!(unsupported("atom.global.add.f64 %fd1, [%rd1], %fd1;"));
    assert!(unsupported(
        "atom.global.v2.f32.add {%r1, %r2}, [%rd1], {%r1, %r2};"
    ));
    assert!(invalid("atom.global.inc.s32 %r1, [%rd1], %r2;"));
    assert!(invalid("red.global.cas.b32 [%rd1], %r2, %r3;"));
    assert!(invalid("atom.global.cas.b32 %r1, [%rd1], %r2;"));
    assert!(compile(&k("atom.global.dec.u32 %r1, [%rd1], %r2;"), "k").is_ok());
}

/// A tensor map over launch buffer `buffer` of 4-byte elements of type `dtype`: `dims` and
/// `box_dims` innermost first, no swizzle.
fn map(buffer: usize, dtype: DType, dims: [u64; 2], box_dims: [u32; 2]) -> Arg {
    Arg::TensorMap(TensorMap {
        buffer,
        elem_bytes: 4,
        dtype,
        dims: dims.to_vec(),
        strides: vec![dims[0] * 4],
        box_dims: box_dims.to_vec(),
        swizzle: Swizzle::None,
    })
}

/// 32 threads write their id as f32 into shared memory; thread 0 adds the 8 x 4 box into rows
/// 2..6 of the tensor with `cp.reduce.async.bulk.tensor`; WAIT waits for its read before the
/// threads overwrite the shared box.
const TMA_REDUCE: &str = r#"
	.shared .align 128 .b8 buf[128];
	mov.b64 %rd1, p0;
	cvta.param.u64 %rd2, %rd1;
	mov.u32 %r1, %tid.x;
	cvt.rn.f32.u32 %f1, %r1;
	mov.u32 %r2, buf;
	shl.b32 %r3, %r1, 2;
	add.s32 %r4, %r2, %r3;
	st.shared.f32 [%r4], %f1;
	fence.proxy.async.shared::cta;
	bar.sync 0;
	setp.eq.s32 %p1, %r1, 0;
	mov.b32 %r5, 0;
	mov.b32 %r6, 2;
	@%p1 cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.bulk_group [%rd2, {%r5, %r6}], [%r2];
	@%p1 cp.async.bulk.commit_group;
	WAIT
	bar.sync 0;
	st.shared.f32 [%r4], 0f00000000;
	ret;
"#;

fn tma_reduce(wait: bool) -> Result<(Program, Launch, Vec<Vec<u8>>), Error> {
    let wait = if wait {
        "@%p1 cp.async.bulk.wait_group.read 0;"
    } else {
        ""
    };
    let src = kernel(
        "tr",
        &[".align 64 .b8 p0[128]"],
        &TMA_REDUCE.replace("WAIT", wait),
    );
    let p = compile(&src, "tr")?;
    let l = Launch::new([1, 1, 1], [32, 1, 1], vec![map(0, DType::F32, [8, 6], [8, 4])]);
    // The tensor holds 100 + its linear index.
    let init: Vec<u32> = (0..48).map(|i| (100.0 + i as f32).to_bits()).collect();
    Ok((p, l, vec![bytes(&init)]))
}

#[test]
fn a_tma_reduction_adds_the_box_into_global_memory() -> Result<(), Error> {
    let (p, l, bufs) = tma_reduce(true)?;
    let mut b = bufs.clone();
    let o = machine::run(&p, &l, &mut b, &Options { seed: 3, check: true })?;
    assert!(o.findings.is_empty(), "{:?}", o.findings);
    let got: Vec<f32> = words(&b[0]).into_iter().map(f32::from_bits).collect();
    for (i, g) in got.iter().enumerate() {
        // Rows 2..6 gain box element (row - 2) * 8 + column; rows 0 and 1 are untouched.
        let add = if i >= 16 { (i - 16) as f32 } else { 0.0 };
        assert_eq!(*g, 100.0 + i as f32 + add, "element {i}");
    }
    Ok(())
}

#[test]
fn overwriting_a_reductions_source_before_its_read_completes_is_reported() -> Result<(), Error> {
    let (p, l, bufs) = tma_reduce(false)?;
    let found = machine::check(&p, &l, &bufs, 8)?;
    let f = found
        .iter()
        .find(|f| f.code == Code::WriteWhileInFlight)
        .unwrap_or_else(|| panic!("{found:?}"));
    let text = |pc: usize| &p.src[p.ins[pc].span.range()];
    // The threads' overwrite of the box, against the reduction that reads it.
    assert!(text(f.pc).starts_with("st.shared.f32"), "{}", text(f.pc));
    assert_eq!(f.with.len(), 1);
    assert!(text(f.with[0]).contains("cp.reduce.async"), "{}", text(f.with[0]));
    Ok(())
}

/// Thread 0 gathers rows {ROW0, 1, 15, ROW3} (8 u32 each, from column COL) of a 16-row tensor
/// into shared memory, waits on the mbarrier, and scatters the four rows to rows {0, 2, 17, 4}
/// of a second 16-row tensor.
const GATHER_SCATTER: &str = r#"
	.shared .align 128 .b8 buf[128];
	.shared .align 8 .b8 bar[8];
	mov.b64 %rd1, p0;
	cvta.param.u64 %rd2, %rd1;
	mov.b64 %rd3, p1;
	cvta.param.u64 %rd4, %rd3;
	ld.param.u32 %r1, [p2];
	ld.param.u32 %r2, [p3];
	ld.param.u32 %r6, [p4];
	mov.u32 %r3, %tid.x;
	setp.eq.s32 %p1, %r3, 0;
	mov.u32 %r4, bar;
	mov.u32 %r5, buf;
	@%p1 mbarrier.init.shared::cta.b64 [%r4], 1;
	fence.mbarrier_init.release.cluster;
	bar.sync 0;
	mov.b32 %r7, 1;
	mov.b32 %r8, 15;
	@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 128;
	@%p1 cp.async.bulk.tensor.2d.tile::gather4.shared::cta.global.mbarrier::complete_tx::bytes [%r5], [%rd2, {%r6, %r1, %r7, %r8, %r2}], [%r4];
	mov.b32 %r9, 0;
$L_wait:
	mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r4], %r9;
	@!%p2 bra $L_wait;
	mov.b32 %r10, 0;
	mov.b32 %r11, 2;
	mov.b32 %r12, 17;
	mov.b32 %r13, 4;
	@%p1 cp.async.bulk.tensor.2d.tile::scatter4.global.shared::cta.bulk_group [%rd4, {%r6, %r10, %r11, %r12, %r13}], [%r5];
	@%p1 cp.async.bulk.commit_group;
	@%p1 cp.async.bulk.wait_group 0;
	ret;
"#;

/// The buffers after a run of `p` over `l` from `bufs` on the machine, unchecked.
fn unchecked(p: &Program, l: &Launch, bufs: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, Error> {
    let mut b = bufs.to_vec();
    machine::run(
        p,
        l,
        &mut b,
        &Options {
            seed: 1,
            check: false,
        },
    )?;
    Ok(b)
}

fn gather_scatter(row0: i32, row3: i32, col: i32) -> Result<(Program, Launch, Vec<Vec<u8>>), Error> {
    let params = [
        ".align 64 .b8 p0[128]",
        ".align 64 .b8 p1[128]",
        ".u32 p2",
        ".u32 p3",
        ".u32 p4",
    ];
    let src = kernel("g4", &params, GATHER_SCATTER);
    let p = compile(&src, "g4")?;
    let l = Launch::new(
        [1, 1, 1],
        [32, 1, 1],
        vec![
            map(0, DType::U32, [16, 16], [8, 1]),
            map(1, DType::U32, [16, 16], [8, 1]),
            Arg::U32(row0 as u32),
            Arg::U32(row3 as u32),
            Arg::U32(col as u32),
        ],
    );
    let src_t: Vec<u32> = (0..256).map(|i| 1000 + i).collect();
    Ok((p, l, vec![bytes(&src_t), bytes(&[0xabab_abab; 256])]))
}

#[test]
fn gather4_and_scatter4_move_rows_by_index() -> Result<(), Error> {
    // Row 16 is past the tensor's end: the gather reads zeros, which the scatter writes to row
    // 4; its row 17 (of gathered row 15) is past the end too, and dropped.
    let (p, l, bufs) = gather_scatter(5, 16, 8)?;
    let found = machine::check(&p, &l, &bufs, 4)?;
    assert!(found.is_empty(), "{found:?}");
    let out = words(&unchecked(&p, &l, &bufs)?[1]);
    for r in 0..16u32 {
        for c in 0..16u32 {
            let from = match (r, c) {
                (0 | 2 | 4, 8..16) => Some([5u32, 1, 16][r as usize / 2]),
                _ => None,
            };
            let want = match from {
                Some(16) => 0,
                Some(s) => 1000 + s * 16 + c,
                None => 0xabab_abab,
            };
            assert_eq!(out[(r * 16 + c) as usize], want, "row {r} column {c}");
        }
    }
    Ok(())
}

#[test]
fn gather4_and_scatter4_trap_where_the_isa_says() -> Result<(), Error> {
    // A column of 4 bytes: not a multiple of 16.
    let (p, l, bufs) = gather_scatter(5, 3, 1)?;
    let e = unchecked(&p, &l, &bufs);
    assert!(
        matches!(&e, Err(Error::Runtime { message, .. }) if message.contains("multiple of 16")),
        "{e:?}"
    );
    // A negative row: the gather reads zeros (into destination row 0); only a scatter's
    // negative rows trap.
    let (p, l, bufs) = gather_scatter(-1, 3, 0)?;
    assert_eq!(words(&unchecked(&p, &l, &bufs)?[1])[..8], [0; 8]);
    Ok(())
}

/// CTA 0 writes `data` (one u32 per thread) and thread 0 then publishes `flag` (PUBLISH); CTA
/// 1 polls the flag (POLL, into `%r4`) until it is set, then copies `data` to `out`.
const HANDOFF: &str = r#"
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r1, %tid.x;
	ld.param.u64 %rd1, [p0];
	mul.wide.u32 %rd4, %r1, 4;
	add.s64 %rd5, %rd1, %rd4;
	ld.param.u64 %rd2, [p1];
	ld.param.u64 %rd3, [p2];
	setp.ne.s32 %p1, %r2, 0;
	@%p1 bra $L_consumer;
	add.s32 %r3, %r1, 100;
	st.global.u32 [%rd5], %r3;
	bar.sync 0;
	setp.ne.s32 %p2, %r1, 0;
	@%p2 bra $L_end;
	PUBLISH
	bra $L_end;
$L_consumer:
	POLL
	setp.eq.s32 %p3, %r4, 0;
	@%p3 bra $L_consumer;
	ld.global.u32 %r5, [%rd5];
	add.s64 %rd6, %rd3, %rd4;
	st.global.u32 [%rd6], %r5;
$L_end:
	ret;
"#;

/// The `global-race` findings of the hand-off with `publish` and `poll`, as (the access's
/// instruction, the earlier one's), after checking that `out` got the data.
fn handoff(publish: &str, poll: &str) -> Result<Vec<(String, String)>, Error> {
    let body = HANDOFF.replace("PUBLISH", publish).replace("POLL", poll);
    let p = compile(
        &kernel("handoff", &[".u64 p0", ".u64 p1", ".u64 p2"], &body),
        "handoff",
    )?;
    let args = vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2)];
    let l = Launch::new([2, 1, 1], [32, 1, 1], args);
    let bufs = vec![vec![0; 128], vec![0; 4], vec![0; 128]];
    let out = words(&unchecked(&p, &l, &bufs)?[2]);
    assert_eq!(out, (100..132).collect::<Vec<u32>>());
    let found = machine::check(&p, &l, &bufs, 2)?;
    assert!(found.iter().all(|f| f.code == Code::GlobalRace), "{found:?}");
    let text = |pc: usize| p.src[p.ins[pc].span.range()].trim_end_matches(';').to_string();
    Ok(found.iter().map(|f| (text(f.pc), text(f.with[0]))).collect())
}

#[test]
fn a_global_handoff_between_ctas_races_unless_a_release_meets_an_acquire() -> Result<(), Error> {
    let relaxed = "st.relaxed.gpu.global.u32 [%rd2], 1;";
    let fenced = "fence.release.gpu;\n\tst.relaxed.gpu.global.u32 [%rd2], 1;";
    let cta_scope = "fence.release.cta;\n\tst.relaxed.gpu.global.u32 [%rd2], 1;";
    let release = "st.release.gpu.global.u32 [%rd2], 1;";
    let plain_poll = "ld.relaxed.gpu.global.u32 %r4, [%rd2];";
    let fenced_poll = "ld.relaxed.gpu.global.u32 %r4, [%rd2];\n\tfence.acquire.gpu;";
    let acquire_poll = "ld.acquire.gpu.global.u32 %r4, [%rd2];";
    // The consumer's load of the data against the producer's store of it.
    let race = vec![(
        "ld.global.u32 %r5, [%rd5]".to_string(),
        "st.global.u32 [%rd5], %r3".to_string(),
    )];
    for (publish, poll, races) in [
        (fenced, fenced_poll, false),
        (release, acquire_poll, false),
        (fenced, acquire_poll, false),
        // No release; a release at CTA scope; no acquire.
        (relaxed, fenced_poll, true),
        (cta_scope, fenced_poll, true),
        (release, plain_poll, true),
    ] {
        let want = if races { race.clone() } else { vec![] };
        assert_eq!(handoff(publish, poll)?, want, "{publish} / {poll}");
    }
    Ok(())
}

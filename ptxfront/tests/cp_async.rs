//! Non-bulk `cp.async` on the machine, on hand-written kernels whose results follow from the
//! PTX ISA's statement of each form ("Data Movement and Conversion Instructions: cp.async",
//! "cp.async.wait_group", "cp.async.mbarrier.arrive"): the bytes a copy moves and zero-fills,
//! the groups a wait waits for, the arrivals on an mbarrier once the copies land, and what the
//! checker reports when a read does not wait for them.

mod common;

use bwsim_isa::Code;
use bwsim_ptxfront::machine::{self, Options};
use bwsim_ptxfront::{compile, Arg, Error, Launch, Program};
use common::{found, Found};

/// 64 threads (two warps). Thread `t` fills its 16-byte shared slot `buf + 16 t` (and the one
/// at `buf + 1024 + 16 t`) with 0xaa, thread 0 initialises `bar` for `COUNT` arrivals, then
/// after a CTA barrier `BODY` runs; then the thread reads slot `%r12` (a shared address `BODY`
/// leaves there) and writes its 16 bytes to `out + 16 t`. `%rd4` is the thread's source
/// `in + 16 t`, `%r4` its slot, `%r11` the barrier.
const KERNEL: &str = r#"
.version 8.0
.target sm_90a
.address_size 64
.shared .align 16 .b8 buf[2048];
.shared .align 8 .b64 bar;
.visible .entry k(.param .u64 in, .param .u64 out) {
	.reg .b64 %rd<8>; .reg .b32 %r<20>; .reg .pred %p<4>;
	mov.u32 %r1, %tid.x;
	ld.param.u64 %rd1, [in];
	ld.param.u64 %rd2, [out];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd2, %rd2;
	mul.wide.u32 %rd3, %r1, 16;
	add.s64 %rd4, %rd1, %rd3;
	add.s64 %rd5, %rd2, %rd3;
	mov.u32 %r2, buf;
	shl.b32 %r3, %r1, 4;
	add.s32 %r4, %r2, %r3;
	mov.u32 %r5, -1431655766;
	st.shared.v4.u32 [%r4], {%r5, %r5, %r5, %r5};
	st.shared.v4.u32 [%r4+1024], {%r5, %r5, %r5, %r5};
	mov.u32 %r11, bar;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 mbarrier.init.shared.b64 [%r11], COUNT;
	bar.sync 0;
	mov.u32 %r12, %r4;
BODY
	ld.shared.v4.u32 {%r6, %r7, %r8, %r9}, [%r12];
	st.global.v4.u32 [%rd5], {%r6, %r7, %r8, %r9};
	ret;
}
"#;

/// The input: byte `i` of `in` is `i % 251 + 1` (never 0, never 0xaa).
fn input() -> Vec<u8> {
    (0..64 * 16 * 2).map(|i| (i % 251 + 1) as u8).collect()
}

fn program(body: &str, count: u32) -> Result<Program, Error> {
    let src = KERNEL.replace("BODY", body).replace("COUNT", &count.to_string());
    compile(&src, "k")
}

/// Runs `body` once with the checker at `seed`: `out` and the findings, each as its code, the
/// text of its instruction and of the one it conflicts with.
fn run(body: &str, count: u32, seed: u64) -> Result<(Vec<u8>, Vec<Found>), Error> {
    let p = program(body, count)?;
    let l = Launch::new([1, 1, 1], [64, 1, 1], vec![Arg::Buffer(0), Arg::Buffer(1)]);
    let mut bufs = vec![input(), vec![0u8; 64 * 16]];
    let o = machine::run(&p, &l, &mut bufs, &Options { seed, check: true })?;
    let found = found(&p, &o.findings);
    Ok((bufs.swap_remove(1), found))
}

/// The findings of `schedules` schedules.
fn check(body: &str, count: u32, schedules: u64) -> Result<Vec<Found>, Error> {
    let mut all = Vec::new();
    for seed in 0..schedules {
        for f in run(body, count, seed)?.1 {
            if !all.contains(&f) {
                all.push(f);
            }
        }
    }
    Ok(all)
}

/// Whether `found` has a finding of one of `codes` between the shared load and a copy, in
/// either order (the read found before the copy lands, or the copy landing after the read).
fn between_read_and_copy(found: &[Found], codes: &[Code]) -> bool {
    found.iter().any(|(c, a, b)| {
        let pair = [a.as_str(), b.as_str()];
        codes.contains(c)
            && pair.contains(&"ld.shared.v4.u32")
            && pair.iter().any(|x| x.starts_with("cp.async.c"))
    })
}

/// Asserts that `found` has a `read-before-complete` at the shared load with the copy `copy`.
fn assert_read_before_complete(found: &[Found], copy: &str) {
    let want = (
        Code::ReadBeforeComplete,
        "ld.shared.v4.u32".to_string(),
        copy.to_string(),
    );
    assert!(found.contains(&want), "{found:?}");
}

/// What thread `t`'s slot holds after a copy of `size` bytes with `src_size` bytes from the
/// source `in + 16 from`: those bytes, zeros to `size`, the fill after it.
fn slot(from: usize, size: usize, src_size: usize) -> Vec<u8> {
    let inp = input();
    (0..16)
        .map(|k| match k {
            k if k < src_size => inp[16 * from + k],
            k if k < size => 0,
            _ => 0xaa,
        })
        .collect()
}

#[test]
fn a_copy_moves_src_size_bytes_and_zero_fills_the_rest() -> Result<(), Error> {
    for size in [4usize, 8, 16] {
        let level = if size == 16 { "cg" } else { "ca" };
        // src-size = t % 16, at most the copy's size.
        let body = format!(
            "\tand.b32 %r10, %r1, 15;\n\tmin.u32 %r10, %r10, {size};\n\
             \tcp.async.{level}.shared.global [%r4], [%rd4], {size}, %r10;\n\
             \tcp.async.commit_group;\n\tcp.async.wait_group 0;"
        );
        let (out, found) = run(&body, 1, 0)?;
        assert!(found.is_empty(), "{size}: {found:?}");
        for t in 0..64 {
            assert_eq!(
                out[16 * t..16 * t + 16],
                slot(t, size, (t % 16).min(size))[..],
                "size {size}, thread {t}"
            );
        }
    }
    // Without src-size the whole copy comes from the source.
    let (out, _) = run(
        "\tcp.async.ca.shared.global [%r4], [%rd4], 8;\n\tcp.async.wait_all;",
        1,
        0,
    )?;
    assert_eq!(out[16 * 5..16 * 6], slot(5, 8, 8)[..]);
    Ok(())
}

#[test]
fn ignore_src_writes_zeros() -> Result<(), Error> {
    // Odd threads ignore the source.
    let body = "\tand.b32 %r10, %r1, 1;\n\tsetp.ne.u32 %p2, %r10, 0;\n\
                \tcp.async.cg.shared.global [%r4], [%rd4], 16, %p2;\n\tcp.async.wait_all;";
    let (out, found) = run(body, 1, 0)?;
    assert!(found.is_empty(), "{found:?}");
    for t in 0..64 {
        let n = if t % 2 == 1 { 0 } else { 16 };
        assert_eq!(out[16 * t..16 * t + 16], slot(t, 16, n)[..], "thread {t}");
    }
    Ok(())
}

/// Two groups: the slot, then the slot 1024 bytes up; `wait_group 1`, then a read of `READ`.
const TWO_GROUPS: &str = "\tcp.async.cg.shared.global [%r4], [%rd4], 16;\n\tcp.async.commit_group;\n\
    \tadd.s64 %rd6, %rd4, 1024;\n\tcp.async.cg.shared.global [%r4+1024], [%rd6], 16;\n\
    \tcp.async.commit_group;\n\tcp.async.wait_group 1;\n\tREAD";

#[test]
fn wait_group_waits_for_all_but_the_newest_groups() -> Result<(), Error> {
    // The first group is complete after `wait_group 1`, in every schedule.
    for seed in 0..8 {
        let (out, found) = run(&TWO_GROUPS.replace("READ", ""), 1, seed)?;
        assert!(found.is_empty(), "{found:?}");
        for t in 0..64 {
            assert_eq!(
                out[16 * t..16 * t + 16],
                slot(t, 16, 16)[..],
                "seed {seed}, thread {t}"
            );
        }
    }
    // Bug: the second group may still be in flight when its slot is read.
    let found = check(&TWO_GROUPS.replace("READ", "add.s32 %r12, %r4, 1024;"), 1, 4)?;
    assert_read_before_complete(&found, "cp.async.cg.shared.global");
    Ok(())
}

#[test]
fn a_read_without_the_wait_is_read_before_complete() -> Result<(), Error> {
    let body = "\tcp.async.ca.shared.global [%r4], [%rd4], 16, 16;\n\tcp.async.commit_group;";
    let found = check(body, 1, 4)?;
    assert_read_before_complete(&found, "cp.async.ca.shared.global");
    Ok(())
}

/// Each thread copies its slot, arrives on `bar` through `ARRIVE`, waits for phase 0, then
/// reads the slot of thread `t + 32` (mod 64): the other warp's copy.
const ARRIVALS: &str = "\tCOPY\n\tARRIVE\n$L__wait:\n\
    \tmbarrier.try_wait.parity.shared.b64 %p2, [%r11], 0;\n\t@!%p2 bra $L__wait;\n\
    \tadd.s32 %r13, %r1, 32;\n\tand.b32 %r13, %r13, 63;\n\tshl.b32 %r13, %r13, 4;\n\tadd.s32 %r12, %r2, %r13;";

fn arrivals(copy_first: bool, arrive: &str) -> String {
    let copy = "cp.async.cg.shared.global [%r4], [%rd4], 16;";
    let (a, b) = if copy_first {
        (copy, arrive)
    } else {
        (arrive, copy)
    };
    ARRIVALS.replace("COPY", a).replace("ARRIVE", b)
}

/// What the arrivals test reads: each thread the other warp's copied slot.
fn swapped() -> Vec<u8> {
    (0..64).flat_map(|t| slot((t + 32) % 64, 16, 16)).collect()
}

#[test]
fn noinc_arrivals_complete_the_phase_once_the_copies_land() -> Result<(), Error> {
    // 64 threads, 64 expected arrivals: one per thread, after its copy.
    let body = arrivals(true, "cp.async.mbarrier.arrive.noinc.shared.b64 [%r11];");
    for seed in 0..4 {
        let (out, found) = run(&body, 64, seed)?;
        assert!(found.is_empty(), "seed {seed}: {found:?}");
        assert_eq!(out, swapped(), "seed {seed}");
    }
    // Bug: the arrival before the copy releases nothing of it.
    let found = check(
        &arrivals(false, "cp.async.mbarrier.arrive.noinc.shared.b64 [%r11];"),
        64,
        4,
    )?;
    assert!(
        between_read_and_copy(&found, &[Code::ReadBeforeComplete, Code::Race]),
        "{found:?}"
    );
    Ok(())
}

#[test]
fn an_incrementing_arrival_holds_the_phase_until_the_copies_land() -> Result<(), Error> {
    // A barrier of one arrival (thread 0's `mbarrier.arrive`): each thread's
    // `cp.async.mbarrier.arrive` raises the pending count at once and arrives once its copy
    // has landed, so the phase completes only after every copy.
    let body = arrivals(
        true,
        "cp.async.mbarrier.arrive.shared.b64 [%r11];\n\t@%p1 mbarrier.arrive.shared.b64 _, [%r11];",
    );
    for seed in 0..4 {
        let (out, found) = run(&body, 1, seed)?;
        assert!(found.is_empty(), "seed {seed}: {found:?}");
        assert_eq!(out, swapped(), "seed {seed}");
    }
    // Bug: with `.noinc` on the same barrier, a warp's 32 arrivals meet a phase that expects
    // one: the barrier's arrival underflow, which stops the run with the `over-arrival` trap
    // (as the tile machine does).
    let body = arrivals(
        true,
        "cp.async.mbarrier.arrive.noinc.shared.b64 [%r11];\n\t@%p1 mbarrier.arrive.shared.b64 _, [%r11];",
    );
    let r = run(&body, 1, 0);
    let Err(Error::Trap(f)) = &r else {
        panic!("expected the underflow, got {r:?}");
    };
    assert_eq!(f.code, Code::OverArrival);
    assert!(
        f.diagnostic.message.contains("underflow"),
        "{}",
        f.diagnostic.message
    );
    Ok(())
}

#[test]
fn forms_outside_the_isa_are_refused() {
    // `.cg` copies 16 bytes only.
    let r = program("\tcp.async.cg.shared.global [%r4], [%rd4], 8;", 1);
    assert!(matches!(r, Err(Error::Invalid { .. })), "{r:?}");
    // src-size past cp-size is undefined: the run stops there.
    let r = run(
        "\tcp.async.ca.shared.global [%r4], [%rd4], 4, 8;\n\tcp.async.wait_all;",
        1,
        0,
    );
    let Err(Error::Runtime { message, .. }) = &r else {
        panic!("expected a runtime error, got {r:?}");
    };
    assert!(message.contains("src-size 8"), "{message}");
}

//! Every fault of docs/semantics.md#faults (and the simulator's own stop conditions) produces the
//! CUDA error the user would see, the reason, and the faulting op's span.

mod common;
use bwsim_sim::{CudaError, Outcome, RunResult};
use common::*;
use CudaError::{IllegalAddress, IllegalInstruction, LaunchFailure, MisalignedAddress};

/// Runs `src` with `consts` and asserts that it traps with `error`, a reason containing
/// `reason_part`, the span of the first `op_text` of the source, and the error's diagnostic; the
/// run.
fn traps(
    src: &str,
    consts: &[(&str, &str)],
    error: CudaError,
    op_text: &str,
    reason_part: &str,
) -> RunResult {
    let r = run(src, consts);
    let t = r
        .trap
        .as_ref()
        .unwrap_or_else(|| panic!("expected a trap, got {:?}:\n{}", r.outcome, rendered(src, &r)));
    assert_eq!(r.outcome, Outcome::Trapped);
    assert_eq!(t.error, error, "{}", t.reason);
    assert!(
        t.reason.contains(reason_part),
        "reason `{}` lacks `{reason_part}`",
        t.reason
    );
    let at = src
        .find(op_text)
        .unwrap_or_else(|| panic!("`{op_text}` not in source"));
    assert_eq!(
        t.span.start as usize,
        at,
        "trap points at `{op_text}`, got `{}`",
        &src[t.span.range()]
    );
    let d = r
        .diagnostics
        .iter()
        .find(|d| d.code == t.code)
        .expect("trap diagnostic");
    assert!(d.message.contains(error.message()));
    r
}

/// A TMA load at innermost coordinate C0 (f32).
const LOAD_AT: &str = include_str!("tiles/faults/load_at.tile");

#[test]
fn tma_load_innermost_coordinate_must_be_16_byte_aligned() {
    let op = "tma.load src[C1, C0], buf, bar[0]";
    for c0 in ["1", "2", "-1", "3", "6"] {
        traps(
            LOAD_AT,
            &[("C0", c0)],
            IllegalInstruction,
            op,
            "not a multiple of 16",
        );
    }
    for c0 in ["4", "-4", "0", "60", "-32"] {
        run_ok(LOAD_AT, &[("C0", c0), ("C1", "-3")]);
    }
}

/// Kernels with one fault on their default launch: the kernel, the CUDA error, the op the trap
/// points at and a part of its reason.
const SINGLE_FAULTS: &[(&str, CudaError, &str, &str)] = &[
    // The TMA box at buffer `bufs[1]` of 32-byte matrices: not 128-byte aligned.
    (
        include_str!("tiles/faults/misaligned_smem.tile"),
        MisalignedAddress,
        "tma.load src[0, 0], bufs[1], bar[0]",
        "not 128-byte aligned",
    ),
    // A barrier at offset 4 of its allocation.
    (
        include_str!("tiles/faults/misaligned_bar.tile"),
        MisalignedAddress,
        "mbar.init bar[0], 1",
        "not 8-byte aligned",
    ),
    // An unmasked global load past the end of its tensor.
    (
        include_str!("tiles/faults/global_oob.tile"),
        IllegalAddress,
        "global.load p, offs\n",
        "offset 128",
    ),
    // A scatter to a negative row.
    (
        include_str!("tiles/faults/scatter_neg.tile"),
        IllegalInstruction,
        "tma.scatter tensor_desc[offs, 0], smem_src",
        "negative row offset -1",
    ),
];

#[test]
fn misaligned_out_of_bounds_and_negative_accesses_trap_with_their_cuda_error() {
    for &(src, error, op, why) in SINGLE_FAULTS {
        traps(src, &[], error, op, why);
    }
}

/// A TMA store at (C1, C0).
const STORE_AT: &str = include_str!("tiles/faults/store_at.tile");

#[test]
fn tma_store_faults() {
    let store_traps = |consts: &[(&str, &str)], why: &str| {
        traps(
            STORE_AT,
            consts,
            IllegalInstruction,
            "tma.store dst[C1, C0], buf",
            why,
        );
    };
    store_traps(&[("C0", "2")], "not a multiple of 16");
    // Any negative coordinate, even aligned: c0 = -4, or c1 = -1.
    store_traps(&[("C0", "-4")], "negative coordinate -4");
    store_traps(&[("C1", "-1")], "negative coordinate -1 in dimension 0");
    // Past the end is fine (nothing written).
    run_ok(STORE_AT, &[("C0", "64"), ("C1", "100")]);
}

const TX_RANGE: &str = include_str!("tiles/faults/tx_range.tile");

#[test]
fn tx_count_beyond_2_pow_20_is_a_launch_failure() {
    let op = "mbar.expect_tx bar[0], E";
    traps(TX_RANGE, &[], LaunchFailure, op, "outside");
    let (op, consts) = ("mbar.complete_tx bar[0], C", [("E", "0"), ("C", "1048576")]);
    traps(TX_RANGE, &consts, LaunchFailure, op, "-1048576");
    run_ok(TX_RANGE, &[("E", "1048575"), ("C", "1048575")]);
}

const UNDERFLOW: &str = include_str!("tiles/faults/underflow.tile");

#[test]
fn arrival_underflow_is_a_launch_failure() {
    let op = "mbar.arrive bar[0], count=SECOND";
    let r = traps(UNDERFLOW, &[], LaunchFailure, op, "count 2 while only 1");
    assert_eq!(r.trap.as_ref().map(|t| t.code.name()), Some("over-arrival"));
    // count 3 on a fresh count-2 barrier.
    let (op, why) = ("mbar.arrive bar[0], count=FIRST", "count 3 while only 2");
    traps(UNDERFLOW, &[("FIRST", "3")], LaunchFailure, op, why);
    // Equal to pending completes the phase normally.
    run_ok(UNDERFLOW, &[("FIRST", "2"), ("SECOND", "1")]);
}

/// TMEM accesses: after dealloc, twice dealloc, and outside the warp's lane quarter.
const TMEM: &str = include_str!("tiles/faults/tmem.tile");

#[test]
fn tmem_faults() {
    let why = "outside any allocation";
    traps(TMEM, &[("CASE", "0")], IllegalInstruction, "tmem.load tm\n", why);
    let r = run(TMEM, &[("CASE", "1")]);
    let second =
        TMEM.find("tmem.dealloc tm\n    tmem.dealloc tm").expect("case 1") + "tmem.dealloc tm\n    ".len();
    let t = r.trap.as_ref().expect("double dealloc traps");
    assert_eq!(t.error, CudaError::IllegalInstruction);
    assert_eq!(t.span.start as usize, second);
    assert!(t.reason.contains("not an allocation"), "{}", t.reason);
    // A one-warp worker is warp 4 of the CTA: lane quarter 0 only.
    let op = "tmem.load tm[32:64, :]";
    let r = traps(TMEM, &[("CASE", "2")], IllegalInstruction, op, "lane 32");
    let t = r.trap.as_ref().expect("trap");
    assert_eq!(t.agent, "cta0.worker.reader");
    run_ok(TMEM, &[("CASE", "3")]);
}

const LEAK: &str = include_str!("tiles/faults/leak.tile");

#[test]
fn exit_with_tmem_allocated_is_a_leak() {
    let r = run(LEAK, &[]);
    assert_eq!(r.outcome, Outcome::Completed);
    let leaks: Vec<_> = r.diagnostics.iter().filter(|d| d.code == "tmem-leak").collect();
    assert_eq!(leaks.len(), 1, "one diagnostic per allocation site");
    assert_eq!(
        leaks[0].primary.span.start as usize,
        LEAK.find("tmem.alloc").expect("alloc")
    );
    assert!(!r.ok());
}

/// Seed 09's illegal-instruction case: a bf16 gather with y_offset = 2 (4 bytes).
const GATHER_Y2: &str = include_str!("tiles/faults/gather_y2.tile");

#[test]
fn gather_with_misaligned_y_offset_is_an_illegal_instruction() {
    let op = "tma.gather tensor_desc[offs, y_offset], smem_dest, bar[0]";
    let why = "column offset 2 is at byte offset 4";
    let r = traps(GATHER_Y2, &[], IllegalInstruction, op, why);
    let t = r.trap.as_ref().expect("trap");
    let rendered = rendered(GATHER_Y2, &r);
    let (line, col) = line_col_of(GATHER_Y2, op);
    assert!(
        rendered.contains(&format!("test.tile:{line}:{col}")),
        "rendered with its span:\n{rendered}"
    );
    assert!(
        rendered.contains("an illegal instruction was encountered"),
        "{rendered}"
    );
    assert_eq!(t.op, "tma.gather");
    // Aligned offsets (8 bf16 = 16 bytes) run.
    run_ok(GATHER_Y2, &[("Y_OFFSET", "8")]);
}

const MISUSE: &str = include_str!("tiles/faults/misuse.tile");

#[test]
fn barrier_use_before_init_or_after_invalidate_is_misuse() {
    // Each case: a `barrier-misuse` error saying `why`, pointing at `op`.
    for (case, why, op) in [
        ("0", "before mbar.init", "mbar.arrive bar[1]"),
        ("1", "after mbar.invalidate", "mbar.wait bar[1], 0"),
    ] {
        let r = run(MISUSE, &[("CASE", case)]);
        assert_eq!(r.outcome, Outcome::Error);
        let d = r
            .diagnostics
            .iter()
            .find(|d| d.code == "barrier-misuse")
            .expect("misuse");
        assert!(d.message.contains(why), "{}", d.message);
        assert_eq!(d.primary.span.start as usize, MISUSE.find(op).expect("op"));
    }
}

/// A consumer waiting on the wrong parity: phase 0 never completes.
const DEADLOCK: &str = include_str!("tiles/faults/deadlock.tile");

#[test]
fn deadlock_lists_every_waiter_and_its_barrier() {
    let r = run(DEADLOCK, &[]);
    assert_eq!(r.outcome, Outcome::Deadlock, "{}", rendered(DEADLOCK, &r));
    let d = r
        .diagnostics
        .iter()
        .find(|d| d.code == "deadlock")
        .expect("deadlock diagnostic");
    let all = d.notes.join("\n");
    assert!(all.contains("cta0.default waits for parity 0"), "{all}");
    assert!(
        all.contains("tx-count 64"),
        "expect 64 bytes more than delivered: {all}"
    );
    assert!(all.contains("cta0.worker.load waits for parity 0"), "{all}");
    assert!(all.contains("2 of 2 arrivals pending"), "{all}");
    assert_eq!(
        d.primary.span.start as usize,
        DEADLOCK.find("mbar.wait ready[0], 0").expect("wait")
    );
    assert_eq!(d.labels.len(), 1);
    assert!(r.counters.steps < 100, "stops at once");
}

//! Every fault of docs/semantics.md#faults (and the simulator's own stop conditions) produces the
//! CUDA error the user would see, the reason, and the faulting op's span.

mod common;
use bwsim_sim::{CudaError, Outcome, RunResult};
use common::*;

fn assert_trap(src: &str, r: &RunResult, error: CudaError, op_text: &str, reason_part: &str) {
    let t = r
        .trap
        .as_ref()
        .unwrap_or_else(|| panic!("expected a trap, got {:?}:\n{}", r.outcome, rendered(src, r)));
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
}

/// A TMA load at innermost coordinate C0 (f32).
const LOAD_AT: &str = include_str!("tiles/faults/load_at.tile");

#[test]
fn tma_load_innermost_coordinate_must_be_16_byte_aligned() {
    for c0 in ["1", "2", "-1", "3", "6"] {
        let r = run(LOAD_AT, &[("C0", c0)]);
        assert_trap(
            LOAD_AT,
            &r,
            CudaError::IllegalInstruction,
            "tma.load src[C1, C0], buf, bar[0]",
            "not a multiple of 16",
        );
    }
    for c0 in ["4", "-4", "0", "60", "-32"] {
        run_ok(LOAD_AT, &[("C0", c0), ("C1", "-3")]);
    }
}

/// A TMA store at (C1, C0).
const STORE_AT: &str = include_str!("tiles/faults/store_at.tile");

#[test]
fn tma_store_faults() {
    let op = "tma.store dst[C1, C0], buf";
    let r = run(STORE_AT, &[("C0", "2")]);
    assert_trap(
        STORE_AT,
        &r,
        CudaError::IllegalInstruction,
        op,
        "not a multiple of 16",
    );
    // Any negative coordinate, even aligned: c0 = -4, or c1 = -1.
    let r = run(STORE_AT, &[("C0", "-4")]);
    assert_trap(
        STORE_AT,
        &r,
        CudaError::IllegalInstruction,
        op,
        "negative coordinate -4",
    );
    let r = run(STORE_AT, &[("C1", "-1")]);
    assert_trap(
        STORE_AT,
        &r,
        CudaError::IllegalInstruction,
        op,
        "negative coordinate -1 in dimension 0",
    );
    // Past the end is fine (nothing written).
    run_ok(STORE_AT, &[("C0", "64"), ("C1", "100")]);
}

/// The TMA box at buffer `bufs[1]` of 32-byte matrices: not 128-byte aligned.
const MISALIGNED_SMEM: &str = include_str!("tiles/faults/misaligned_smem.tile");

#[test]
fn tma_smem_box_must_be_128_byte_aligned() {
    let r = run(MISALIGNED_SMEM, &[]);
    assert_trap(
        MISALIGNED_SMEM,
        &r,
        CudaError::MisalignedAddress,
        "tma.load src[0, 0], bufs[1], bar[0]",
        "not 128-byte aligned",
    );
}

/// A barrier at offset 4 of its allocation.
const MISALIGNED_BAR: &str = include_str!("tiles/faults/misaligned_bar.tile");

#[test]
fn mbarrier_must_be_8_byte_aligned() {
    let r = run(MISALIGNED_BAR, &[]);
    assert_trap(
        MISALIGNED_BAR,
        &r,
        CudaError::MisalignedAddress,
        "mbar.init bar[0], 1",
        "not 8-byte aligned",
    );
}

const TX_RANGE: &str = include_str!("tiles/faults/tx_range.tile");

#[test]
fn tx_count_beyond_2_pow_20_is_a_launch_failure() {
    let r = run(TX_RANGE, &[]);
    assert_trap(
        TX_RANGE,
        &r,
        CudaError::LaunchFailure,
        "mbar.expect_tx bar[0], E",
        "outside",
    );
    let r = run(TX_RANGE, &[("E", "0"), ("C", "1048576")]);
    assert_trap(
        TX_RANGE,
        &r,
        CudaError::LaunchFailure,
        "mbar.complete_tx bar[0], C",
        "-1048576",
    );
    run_ok(TX_RANGE, &[("E", "1048575"), ("C", "1048575")]);
}

const UNDERFLOW: &str = include_str!("tiles/faults/underflow.tile");

#[test]
fn arrival_underflow_is_a_launch_failure() {
    let r = run(UNDERFLOW, &[]);
    assert_eq!(r.trap.as_ref().map(|t| t.code.name()), Some("over-arrival"));
    assert_trap(
        UNDERFLOW,
        &r,
        CudaError::LaunchFailure,
        "mbar.arrive bar[0], count=SECOND",
        "count 2 while only 1",
    );
    // count 3 on a fresh count-2 barrier.
    let r = run(UNDERFLOW, &[("FIRST", "3")]);
    assert_trap(
        UNDERFLOW,
        &r,
        CudaError::LaunchFailure,
        "mbar.arrive bar[0], count=FIRST",
        "count 3 while only 2",
    );
    // Equal to pending completes the phase normally.
    run_ok(UNDERFLOW, &[("FIRST", "2"), ("SECOND", "1")]);
}

/// TMEM accesses: after dealloc, twice dealloc, and outside the warp's lane quarter.
const TMEM: &str = include_str!("tiles/faults/tmem.tile");

#[test]
fn tmem_faults() {
    let r = run(TMEM, &[("CASE", "0")]);
    assert_trap(
        TMEM,
        &r,
        CudaError::IllegalInstruction,
        "tmem.load tm\n",
        "outside any allocation",
    );
    let r = run(TMEM, &[("CASE", "1")]);
    let second =
        TMEM.find("tmem.dealloc tm\n    tmem.dealloc tm").expect("case 1") + "tmem.dealloc tm\n    ".len();
    let t = r.trap.as_ref().expect("double dealloc traps");
    assert_eq!(t.error, CudaError::IllegalInstruction);
    assert_eq!(t.span.start as usize, second);
    assert!(t.reason.contains("not an allocation"), "{}", t.reason);
    // A one-warp worker is warp 4 of the CTA: lane quarter 0 only.
    let r = run(TMEM, &[("CASE", "2")]);
    assert_trap(
        TMEM,
        &r,
        CudaError::IllegalInstruction,
        "tmem.load tm[32:64, :]",
        "lane 32",
    );
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

const GLOBAL_OOB: &str = include_str!("tiles/faults/global_oob.tile");

#[test]
fn unmasked_global_access_out_of_bounds_is_an_illegal_address() {
    let r = run(GLOBAL_OOB, &[]);
    assert_trap(
        GLOBAL_OOB,
        &r,
        CudaError::IllegalAddress,
        "global.load p, offs\n",
        "offset 128",
    );
}

/// Seed 09's illegal-instruction case: a bf16 gather with y_offset = 2 (4 bytes).
const GATHER_Y2: &str = include_str!("tiles/faults/gather_y2.tile");

#[test]
fn gather_with_misaligned_y_offset_is_an_illegal_instruction() {
    let r = run(GATHER_Y2, &[]);
    let op = "tma.gather tensor_desc[offs, y_offset], smem_dest, bar[0]";
    assert_trap(
        GATHER_Y2,
        &r,
        CudaError::IllegalInstruction,
        op,
        "column offset 2 is at byte offset 4",
    );
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

const SCATTER_NEG: &str = include_str!("tiles/faults/scatter_neg.tile");

#[test]
fn scatter_with_negative_row_is_an_illegal_instruction() {
    let r = run(SCATTER_NEG, &[]);
    assert_trap(
        SCATTER_NEG,
        &r,
        CudaError::IllegalInstruction,
        "tma.scatter tensor_desc[offs, 0], smem_src",
        "negative row offset -1",
    );
}

const MISUSE: &str = include_str!("tiles/faults/misuse.tile");

#[test]
fn barrier_use_before_init_or_after_invalidate_is_misuse() {
    let r = run(MISUSE, &[]);
    assert_eq!(r.outcome, Outcome::Error);
    let d = r
        .diagnostics
        .iter()
        .find(|d| d.code == "barrier-misuse")
        .expect("misuse");
    assert!(d.message.contains("before mbar.init"));
    assert_eq!(
        d.primary.span.start as usize,
        MISUSE.find("mbar.arrive bar[1]").expect("op")
    );
    let r = run(MISUSE, &[("CASE", "1")]);
    let d = r
        .diagnostics
        .iter()
        .find(|d| d.code == "barrier-misuse")
        .expect("misuse");
    assert!(d.message.contains("after mbar.invalidate"));
    assert_eq!(
        d.primary.span.start as usize,
        MISUSE.find("mbar.wait bar[1], 0").expect("op")
    );
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

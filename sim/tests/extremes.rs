//! Coordinates, offsets and counts at and beyond every boundary (`i32` and `i64` extremes,
//! negative values) run to a defined outcome: a trap with the CUDA error, OOB fill, or a
//! diagnostic; never a panic or a wrapped value.

mod common;
use bwsim_sim::{CudaError, Outcome};
use common::*;

const LOAD_AT: &str = include_str!("tiles/extremes/load_at.tile");

fn kernel(c0: &str, c1: &str) -> String {
    LOAD_AT
        .replace("c0 = C0", &format!("c0 = {c0}"))
        .replace("c1 = C1", &format!("c1 = {c1}"))
}

enum Want {
    Trap(CudaError),
    /// A diagnostic with this code stops the run.
    Error(&'static str),
    /// Every element outside the tensor: the load fills, the store writes nothing.
    Unchanged,
}

#[test]
fn extreme_tma_coordinates_trap_or_fill_never_wrap() {
    use Want::*;
    let i64_min = "(-9223372036854775807 - 1)";
    let cases: &[(&str, &str, Want)] = &[
        // Beyond the 32-bit operand: reported, not wrapped to the low 32 bits.
        ("9223372036854775807", "0", Error("operand-range")),
        (i64_min, "0", Error("operand-range")),
        ("0", i64_min, Error("operand-range")),
        ("2147483648", "0", Error("operand-range")),
        ("0", "-2147483649", Error("operand-range")),
        // 32-bit extremes: a misaligned inner coordinate traps on the load; an aligned
        // negative one loads the fill and then traps on the store.
        ("2147483647", "0", Trap(CudaError::IllegalInstruction)),
        ("-2147483648", "0", Trap(CudaError::IllegalInstruction)),
        ("0", "-2147483648", Trap(CudaError::IllegalInstruction)),
        // Aligned and far past the end in both dimensions.
        ("2147483520", "2147483647", Unchanged),
        ("64", "64", Unchanged),
    ];
    for (c0, c1, want) in cases {
        let src = kernel(c0, c1);
        let before = inputs(&src, &[], 1);
        let r = run(&src, &[]);
        match want {
            Trap(e) => {
                assert_eq!(
                    r.outcome,
                    Outcome::Trapped,
                    "[{c1}, {c0}]: {}",
                    rendered(&src, &r)
                );
                assert_eq!(r.trap.as_ref().map(|t| t.error), Some(*e), "[{c1}, {c0}]");
            }
            Error(code) => {
                assert_eq!(r.outcome, Outcome::Error, "[{c1}, {c0}]: {}", rendered(&src, &r));
                let d = r
                    .diagnostics
                    .iter()
                    .find(|d| d.code == *code)
                    .expect("diagnostic");
                assert!(&src[d.primary.span.range()].starts_with("tma.load"), "{d:?}");
                assert!(d.message.contains("32-bit signed operand"), "{}", d.message);
            }
            Unchanged => {
                assert_ok(&src, &r);
                assert_eq!(bits(tensor(&r, "t")), bits(&before[0]), "[{c1}, {c0}]");
            }
        }
    }
}

/// One arrival per iteration of a loop from `START` to `END` in steps of `STEP`.
const LOOP: &str = include_str!("tiles/extremes/loop.tile");

fn iterations(start: &str, end: &str, step: &str) -> usize {
    let src = LOOP
        .replace("START", start)
        .replace("END", end)
        .replace("STEP", step);
    let r = run(&src, &[]);
    assert_ok(&src, &r);
    r.trace
        .events
        .iter()
        .filter(|e| matches!(e.what, bwsim_sim::What::Arrive { .. }))
        .count()
}

#[test]
fn loop_counters_near_i64_limits_end_instead_of_wrapping() {
    // 0, 2^62, then 2^63 does not exist: two iterations (a wrapping counter would go negative
    // and loop until the step limit).
    assert_eq!(iterations("0", "9223372036854775807", "4611686018427387904"), 2);
    assert_eq!(iterations("9223372036854775806", "9223372036854775807", "5"), 1);
    assert_eq!(
        iterations("(-9223372036854775807 - 1)", "(-9223372036854775807)", "1"),
        1
    );
    assert_eq!(
        iterations("0", "(-9223372036854775807 - 1)", "(-4611686018427387904)"),
        2
    );
    assert_eq!(iterations("3", "0", "1"), 0);
}

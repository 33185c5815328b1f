//! The mbarrier state machine through the IR's operations: the measured 11-step sequence of
//! docs/semantics.md#the-measured-sequence (H100), step by step, observed as a kernel observes it
//! (`mbar.test_wait` on both parities after every step) and in the trace (pending arrivals,
//! tx-count, phase).

mod common;
use bwsim_sim::What;
use common::*;

const SEQ: &str = include_str!("tiles/mbarrier_ops/seq.tile");

/// (w0, w1) after steps 1..11, from the table of docs/semantics.md#the-measured-sequence.
const WAITS: [(u64, u64); 11] = [
    (0, 1),
    (0, 1),
    (0, 1),
    (0, 1),
    (1, 0),
    (1, 0),
    (1, 0),
    (0, 1),
    (1, 0),
    (0, 1),
    (1, 0),
];

#[test]
fn measured_sequence_as_test_wait_sees_it() {
    let r = run_ok(SEQ, &[]);
    let out = bits(tensor(&r, "out"));
    for (i, &(w0, w1)) in WAITS.iter().enumerate() {
        let step = i + 1;
        assert_eq!(
            (out[2 * step], out[2 * step + 1]),
            (w0, w1),
            "test_wait parity 0 / 1 after step {step}"
        );
    }
}

/// The barrier's state in the trace: every arrival's pending count, every tx change, every
/// phase flip, in order, as the table's phase / pending / tx columns require.
#[test]
fn measured_sequence_state_in_the_trace() {
    #[derive(Debug, PartialEq)]
    enum E {
        Arrive(u32),
        Tx(i64),
        Flip(u64),
    }
    use E::*;
    let r = run(SEQ, &[]);
    let got: Vec<E> = r
        .trace
        .events
        .iter()
        .filter_map(|e| match e.what {
            What::Arrive { pending, .. } => Some(Arrive(pending)),
            What::ExpectTx { tx, .. } | What::CompleteTx { tx, .. } => Some(Tx(tx)),
            What::PhaseFlip { phase, .. } => Some(Flip(phase)),
            _ => None,
        })
        .collect();
    let want = vec![
        Arrive(1), // 2: pending 1
        Tx(1024),  // 3: expect_tx 1024
        Arrive(0), // 4: pending 0, tx 1024: no completion
        Tx(0),     // 5: complete_tx 1024 ...
        Flip(1),   //    ... completes phase 0
        Tx(-512),  // 6: complete_tx before expect: negative
        Arrive(1), // 7
        Arrive(0), //    pending 0 but tx -512: no completion
        Tx(0),     // 8: expect_tx 512 brings tx to 0 ...
        Flip(2),   //    ... and completes phase 1
        Arrive(1), // 9
        Arrive(0),
        Flip(3),
        Arrive(1), // 10
        Arrive(0),
        Flip(4),
        Arrive(1), // 11: single arrivals never underflow
        Arrive(0),
        Flip(5),
        Arrive(1), //    the third counts toward phase 5: 1 pending
    ];
    assert_eq!(got, want);
}

/// A kernel that initialises `bar[0]`, then does what `STEPS` says (lines spliced in).
fn lifecycle(steps: &str) -> String {
    format!(
        "kernel lifecycle {{
  target sm_100a
  num_warps 4
  param out: ptr(f32)
  let bar = mbar.alloc 1
  mbar.init bar[0], 1
{steps}
  launch {{
    grid = [1]
    tensor o: f32[4] = zeros()
    out = o
    outputs = [o]
  }}
}}
"
    )
}

/// The 1-based line of the first line of `src` that contains `needle` after `skip` others do.
fn line_of(src: &str, needle: &str, skip: usize) -> usize {
    src.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(needle))
        .nth(skip)
        .map(|(i, _)| i + 1)
        .unwrap_or_else(|| panic!("`{needle}` not in the kernel"))
}

/// Runs `src`, whose report must hold a diagnostic of `code`: the run and that diagnostic.
fn run_expecting(src: &str, code: bwsim_isa::Code) -> (bwsim_sim::RunResult, bwsim_isa::Diagnostic) {
    let r = run(src, &[]);
    let d = r
        .diagnostics
        .iter()
        .find(|d| d.code == code)
        .cloned()
        .unwrap_or_else(|| panic!("{}", rendered(src, &r)));
    (r, d)
}

fn line_of_span(src: &str, s: bwsim_isa::Span) -> usize {
    src[..s.start as usize].lines().count() + usize::from(src[..s.start as usize].ends_with('\n'))
}

/// Asserts that the secondary labels of `d` (from the run `r` of `src`) stand at the lines `want`.
fn assert_label_lines(src: &str, r: &bwsim_sim::RunResult, d: &bwsim_isa::Diagnostic, want: &[usize]) {
    let at: Vec<usize> = d.labels.iter().map(|l| line_of_span(src, l.span)).collect();
    assert_eq!(at, want, "{}", rendered(src, r));
}

/// `mbar.init` of a live barrier: `barrier-reinit` at the second init, naming the first.
#[test]
fn init_of_a_live_barrier_is_reported_at_the_second_init_naming_the_first() {
    let src = lifecycle("  mbar.arrive bar[0], count=1\n  mbar.wait bar[0], 0\n  mbar.init bar[0], 1\n");
    let (r, d) = run_expecting(&src, bwsim_isa::Code::BarrierReinit);
    assert_eq!(line_of_span(&src, d.primary.span), line_of(&src, "mbar.init", 1));
    assert_label_lines(&src, &r, &d, &[line_of(&src, "mbar.init", 0)]);
    // Invalidated in between: nothing to report.
    let src = lifecycle(
        "  mbar.arrive bar[0], count=1\n  mbar.wait bar[0], 0\n  mbar.invalidate bar[0]\n  mbar.init bar[0], 1\n",
    );
    let r = run(&src, &[]);
    assert!(r.diagnostics.is_empty(), "{}", rendered(&src, &r));
}

/// A use after `mbar.invalidate`: `barrier-misuse` at the use, naming the invalidate.
#[test]
fn use_after_invalidate_names_the_invalidate() {
    let src = lifecycle("  mbar.invalidate bar[0]\n  mbar.arrive bar[0], count=1\n");
    let (r, d) = run_expecting(&src, bwsim_isa::Code::BarrierMisuse);
    assert!(d.message.contains("after mbar.invalidate"), "{}", d.message);
    assert_eq!(
        line_of_span(&src, d.primary.span),
        line_of(&src, "mbar.arrive", 0)
    );
    assert_label_lines(&src, &r, &d, &[line_of(&src, "mbar.invalidate", 0)]);
}

/// A use of a barrier never initialised: `barrier-misuse`.
#[test]
fn use_without_init_is_barrier_misuse() {
    let src = lifecycle("").replace("  mbar.init bar[0], 1\n", "  mbar.arrive bar[0], count=1\n");
    let (_, d) = run_expecting(&src, bwsim_isa::Code::BarrierMisuse);
    assert!(d.message.contains("before mbar.init"), "{}", d.message);
    assert_eq!(
        line_of_span(&src, d.primary.span),
        line_of(&src, "mbar.arrive", 0)
    );
}

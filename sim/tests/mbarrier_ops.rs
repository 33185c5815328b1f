//! The mbarrier state machine through the IR's operations: PTX.md section 5's measured
//! 11-step sequence (H100), step by step, observed as a kernel observes it (`mbar.test_wait`
//! on both parities after every step) and in the trace (pending arrivals, tx-count, phase).

mod common;
use bwsim_sim::What;
use common::*;

const SEQ: &str = r#"
kernel mbar_seq {
  target sm_100a, sm_90a
  num_warps 4
  param out_ptr: ptr(i32)
  layout l = blocked([1], [32], [4], [0])
  let bar = mbar.alloc 1
  // step 1
  mbar.init bar[0], 2
  let w2 = mbar.test_wait bar[0], 0
  global.store out_ptr, arange(2, 3, l), full([1], select(w2, 1, 0), i32, l)
  let w3 = mbar.test_wait bar[0], 1
  global.store out_ptr, arange(3, 4, l), full([1], select(w3, 1, 0), i32, l)
  // step 2
  mbar.arrive bar[0]
  let w4 = mbar.test_wait bar[0], 0
  global.store out_ptr, arange(4, 5, l), full([1], select(w4, 1, 0), i32, l)
  let w5 = mbar.test_wait bar[0], 1
  global.store out_ptr, arange(5, 6, l), full([1], select(w5, 1, 0), i32, l)
  // step 3
  mbar.expect_tx bar[0], 1024
  let w6 = mbar.test_wait bar[0], 0
  global.store out_ptr, arange(6, 7, l), full([1], select(w6, 1, 0), i32, l)
  let w7 = mbar.test_wait bar[0], 1
  global.store out_ptr, arange(7, 8, l), full([1], select(w7, 1, 0), i32, l)
  // step 4
  mbar.arrive bar[0]
  let w8 = mbar.test_wait bar[0], 0
  global.store out_ptr, arange(8, 9, l), full([1], select(w8, 1, 0), i32, l)
  let w9 = mbar.test_wait bar[0], 1
  global.store out_ptr, arange(9, 10, l), full([1], select(w9, 1, 0), i32, l)
  // step 5
  mbar.complete_tx bar[0], 1024
  let w10 = mbar.test_wait bar[0], 0
  global.store out_ptr, arange(10, 11, l), full([1], select(w10, 1, 0), i32, l)
  let w11 = mbar.test_wait bar[0], 1
  global.store out_ptr, arange(11, 12, l), full([1], select(w11, 1, 0), i32, l)
  // step 6
  mbar.complete_tx bar[0], 512
  let w12 = mbar.test_wait bar[0], 0
  global.store out_ptr, arange(12, 13, l), full([1], select(w12, 1, 0), i32, l)
  let w13 = mbar.test_wait bar[0], 1
  global.store out_ptr, arange(13, 14, l), full([1], select(w13, 1, 0), i32, l)
  // step 7
  mbar.arrive bar[0]
  mbar.arrive bar[0]
  let w14 = mbar.test_wait bar[0], 0
  global.store out_ptr, arange(14, 15, l), full([1], select(w14, 1, 0), i32, l)
  let w15 = mbar.test_wait bar[0], 1
  global.store out_ptr, arange(15, 16, l), full([1], select(w15, 1, 0), i32, l)
  // step 8
  mbar.expect_tx bar[0], 512
  let w16 = mbar.test_wait bar[0], 0
  global.store out_ptr, arange(16, 17, l), full([1], select(w16, 1, 0), i32, l)
  let w17 = mbar.test_wait bar[0], 1
  global.store out_ptr, arange(17, 18, l), full([1], select(w17, 1, 0), i32, l)
  // step 9
  mbar.arrive bar[0]
  mbar.arrive bar[0]
  let w18 = mbar.test_wait bar[0], 0
  global.store out_ptr, arange(18, 19, l), full([1], select(w18, 1, 0), i32, l)
  let w19 = mbar.test_wait bar[0], 1
  global.store out_ptr, arange(19, 20, l), full([1], select(w19, 1, 0), i32, l)
  // step 10
  mbar.arrive bar[0]
  mbar.arrive bar[0]
  let w20 = mbar.test_wait bar[0], 0
  global.store out_ptr, arange(20, 21, l), full([1], select(w20, 1, 0), i32, l)
  let w21 = mbar.test_wait bar[0], 1
  global.store out_ptr, arange(21, 22, l), full([1], select(w21, 1, 0), i32, l)
  // step 11
  mbar.arrive bar[0]
  mbar.arrive bar[0]
  mbar.arrive bar[0]
  let w22 = mbar.test_wait bar[0], 0
  global.store out_ptr, arange(22, 23, l), full([1], select(w22, 1, 0), i32, l)
  let w23 = mbar.test_wait bar[0], 1
  global.store out_ptr, arange(23, 24, l), full([1], select(w23, 1, 0), i32, l)
  launch {
    grid = [1]
    tensor out: i32[24] = fill(-1)
    out_ptr = out
    outputs = [out]
  }
}
"#;

/// (w0, w1) after steps 1..11, from PTX.md's table.
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
    let r = run(SEQ, &[]);
    assert_ok(SEQ, &r);
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

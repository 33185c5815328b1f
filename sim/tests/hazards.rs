//! Hazard rules beyond the bug catalogue of tests/fail: each small kernel has a `CASE` constant
//! that switches between a correct form and a buggy one, and the buggy one must report the
//! code the proxy rule (PTX.md section 6) or the completion rules give, over a few schedules.

mod common;

use common::explore;

/// The distinct codes found over `n` schedules of `src` with `CASE=case`.
fn codes(src: &str, case: i64, n: u64) -> Vec<String> {
    let mut v: Vec<String> = explore(src, &[("CASE", &case.to_string())], n)
        .iter()
        .map(|f| f.diagnostic.code.to_string())
        .collect();
    v.dedup();
    v
}

/// A TMA store's source overwritten: after `tma.store_wait` (CASE 0) or while the store may
/// still read it (CASE 1).
const STORE_REUSE: &str = r#"
kernel store_reuse {
  target sm_100a, sm_90a
  num_warps 4
  const CASE: int = 0
  param out_desc: tensor_desc(f32[32, 64], nvmma(128))
  layout row = blocked([1, 1], [1, 32], [1, 4], [1, 0])
  let buf = smem.alloc f32[32, 64], nvmma(128)
  smem.store buf, full([32, 64], 1.0, f32, row)
  fence.async_shared
  tma.store out_desc[0, 0], buf
  if CASE == 0 {
    tma.store_wait 0
  }
  smem.store buf, full([32, 64], 2.0, f32, row)
  fence.async_shared
  tma.store out_desc[0, 0], buf
  tma.store_wait 0
  launch {
    grid = [1]
    tensor out: f32[32, 64] = zeros()
    out_desc = out
  }
}
"#;

#[test]
fn a_tma_store_source_is_free_only_after_store_wait() {
    assert_eq!(codes(STORE_REUSE, 0, 8), Vec::<String>::new());
    assert_eq!(codes(STORE_REUSE, 1, 8), ["write-while-in-flight"]);
}

/// Generic read, then a TMA load into the same buffer issued by another partition. CASE 0: the
/// reader fences before it releases the buffer; CASE 1: the producer fences after acquiring it
/// (seed 08 allows either side); CASE 2: nobody fences.
const LOAD_AFTER_READ: &str = r#"
kernel load_after_read {
  target sm_100a, sm_90a
  num_warps 4
  const CASE: int = 0
  param a_desc: tensor_desc(f32[32, 64], nvmma(128))
  layout row = blocked([1, 1], [1, 32], [1, 4], [1, 0])
  let buf = smem.alloc f32[32, 64], nvmma(128)
  let ready = mbar.alloc 1
  let empty = mbar.alloc 1
  mbar.init ready[0], 1
  mbar.init empty[0], 1
  warp_specialize {
    default {
      mbar.wait ready[0], 0
      let v = smem.load buf, layout=row
      if CASE == 0 {
        fence.async_shared
      }
      mbar.arrive empty[0]
      mbar.wait ready[0], 1
      let w = smem.load buf, layout=row
    }
    worker load(warps=1, regs=24) {
      mbar.expect ready[0], a_desc.nbytes
      tma.load a_desc[0, 0], buf, ready[0]
      mbar.wait empty[0], 0
      if CASE == 1 {
        fence.async_shared
      }
      mbar.expect ready[0], a_desc.nbytes
      tma.load a_desc[0, 0], buf, ready[0]
    }
  }
  launch {
    grid = [1]
    tensor a: f32[32, 64] = randn()
    a_desc = a
  }
}
"#;

#[test]
fn a_generic_read_before_a_tma_load_needs_a_fence_on_either_side() {
    assert_eq!(codes(LOAD_AFTER_READ, 0, 16), Vec::<String>::new());
    assert_eq!(codes(LOAD_AFTER_READ, 1, 16), Vec::<String>::new());
    assert_eq!(codes(LOAD_AFTER_READ, 2, 16), ["missing-fence"]);
}

/// A TMA destination read before (CASE 1) or only after (CASE 0) the wait that observes it.
const EARLY_READ: &str = r#"
kernel early_read {
  target sm_100a, sm_90a
  num_warps 4
  const CASE: int = 0
  param a_desc: tensor_desc(f32[32, 64], nvmma(128))
  layout row = blocked([1, 1], [1, 32], [1, 4], [1, 0])
  let buf = smem.alloc f32[32, 64], nvmma(128)
  let bar = mbar.alloc 1
  mbar.init bar[0], 1
  mbar.expect bar[0], a_desc.nbytes
  tma.load a_desc[0, 0], buf, bar[0]
  if CASE == 1 {
    let early = smem.load buf, layout=row
  }
  mbar.wait bar[0], 0
  let v = smem.load buf, layout=row
  launch {
    grid = [1]
    tensor a: f32[32, 64] = randn()
    a_desc = a
  }
}
"#;

#[test]
fn a_tma_destination_is_readable_only_after_its_wait() {
    assert_eq!(codes(EARLY_READ, 0, 8), Vec::<String>::new());
    let c = codes(EARLY_READ, 1, 8);
    assert!(c.contains(&"read-before-complete".to_string()), "{c:?}");
}

/// wgmma reads its shared-memory operands through the async proxy until `wgmma.wait` retires
/// it: CASE 0 is correct; CASE 1 drops the fence after the generic stores of the operands;
/// CASE 2 overwrites an operand before the wait.
const WGMMA: &str = r#"
kernel wgmma_operands {
  target sm_90a
  num_warps 4
  const CASE: int = 0
  layout acc_l = wgmma(warps=[4, 1], n=64)
  layout row = blocked([1, 1], [1, 32], [4, 1], [1, 0])
  let a = smem.alloc f16[64, 16], nvmma(32)
  let b = smem.alloc f16[16, 64], nvmma(128)
  smem.store a, full([64, 16], 1.0, f16, row)
  smem.store b, full([16, 64], 1.0, f16, row)
  if CASE != 1 {
    fence.async_shared
  }
  let acc = wgmma a, b, full([64, 64], 0.0, f32, acc_l), use_acc=false
  if CASE == 2 {
    smem.store a, full([64, 16], 2.0, f16, row)
  }
  wgmma.wait 0
  launch {
    grid = [1]
  }
}
"#;

#[test]
fn wgmma_operands_need_the_fence_and_stay_busy_until_wgmma_wait() {
    assert_eq!(codes(WGMMA, 0, 4), Vec::<String>::new());
    assert_eq!(codes(WGMMA, 1, 4), ["missing-fence"]);
    assert_eq!(codes(WGMMA, 2, 4), ["write-while-in-flight"]);
}

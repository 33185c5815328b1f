//! Hazard rules beyond the bug catalogue of tests/fail: each small kernel has a `CASE` constant
//! that switches between a correct form and a buggy one, and the buggy one must report the
//! code the proxy rule (docs/semantics.md#the-proxy-rule) or the completion rules give, over a few
//! schedules.

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

/// Checks each CASE of `src` over `n` schedules: `expected[i]` are the codes CASE i reports.
fn assert_cases(src: &str, n: u64, expected: &[&[&str]]) {
    for (case, want) in expected.iter().enumerate() {
        assert_eq!(codes(src, case as i64, n), *want, "CASE {case}");
    }
}

/// A TMA store's source overwritten: after `tma.store_wait` (CASE 0) or while the store may
/// still read it (CASE 1).
const STORE_REUSE: &str = include_str!("tiles/hazards/store_reuse.tile");

#[test]
fn a_tma_store_source_is_free_only_after_store_wait() {
    assert_cases(STORE_REUSE, 8, &[&[], &["write-while-in-flight"]]);
}

/// Generic read, then a TMA load into the same buffer issued by another partition. CASE 0: the
/// reader fences before it releases the buffer; CASE 1: the producer fences after acquiring it
/// (seed 08 allows either side); CASE 2: nobody fences.
const LOAD_AFTER_READ: &str = include_str!("tiles/hazards/load_after_read.tile");

#[test]
fn a_generic_read_before_a_tma_load_needs_a_fence_on_either_side() {
    assert_cases(LOAD_AFTER_READ, 16, &[&[], &[], &["missing-fence"]]);
}

/// A TMA destination read before (CASE 1) or only after (CASE 0) the wait that observes it.
const EARLY_READ: &str = include_str!("tiles/hazards/early_read.tile");

#[test]
fn a_tma_destination_is_readable_only_after_its_wait() {
    assert_eq!(codes(EARLY_READ, 0, 8), Vec::<String>::new());
    let c = codes(EARLY_READ, 1, 8);
    assert!(c.contains(&"read-before-complete".to_string()), "{c:?}");
}

/// wgmma reads its shared-memory operands through the async proxy until `wgmma.wait` retires
/// it: CASE 0 is correct; CASE 1 drops the fence after the generic stores of the operands;
/// CASE 2 overwrites an operand before the wait.
const WGMMA: &str = include_str!("tiles/hazards/wgmma.tile");

#[test]
fn wgmma_operands_need_the_fence_and_stay_busy_until_wgmma_wait() {
    assert_cases(WGMMA, 4, &[&[], &["missing-fence"], &["write-while-in-flight"]]);
}

/// A flag hand-off between two CTAs through global memory, ordered by a release/acquire atomic
/// pair whose scopes include both CTAs (CASE 0: acq_rel at gpu scope, CASE 1: release and
/// acquire) and not by a relaxed pair (CASE 2), a CTA-scope release (CASE 3) or a CTA-scope
/// acquire (CASE 4).
const GLOBAL_FLAG: &str = include_str!("tiles/hazards/global_flag.tile");

#[test]
fn a_flag_orders_ctas_only_through_release_and_acquire_of_a_common_scope() {
    let race: &[&str] = &["global-race"];
    assert_cases(GLOBAL_FLAG, 8, &[&[], &[], race, race, race]);
}

/// Split-K into one output: plain read-modify-writes of two CTAs race (CASE 1), atomic adds
/// do not (CASE 0); CTAs storing disjoint tiles of one output never conflict (CASE 2).
const SPLIT_K: &str = include_str!("tiles/hazards/split_k.tile");

#[test]
fn ctas_conflict_on_shared_elements_unless_both_accesses_are_atomic() {
    assert_cases(SPLIT_K, 8, &[&[], &["global-race"], &[]]);
}

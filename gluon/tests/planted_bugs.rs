//! What the fixture directives (gluon_corpus.rs) cannot say about the checker catalogue's bugs
//! planted in Gluon source (tests/gluon/planted_bugs.py), in every Triton version's TTGIR:
//!
//! - the bugs only the checker sees are in the imported IR itself: the fence is gone (except where
//!   Triton's compiler puts it back, as 3.7 and later do for the pipelined matmul's), or the
//!   release moved before the reads, or the wait before reusing an operand buffer gone,
//!   compared with the correct kernel imported from the same version (a structural comparison
//!   of two imported kernels);
//! - the early release of the warp-specialized add reports the codes of its `.tile` twin, the
//!   catalogue's tests/fail/ws_add_no_load_fence.tile with its release moved before the reads
//!   (a twin made here by editing the catalogue kernel, so no file holds it).
//!
//! Every other expectation on the planted bugs (codes, Python lines, the snapshots in
//! traces/gluon/) is written in their launch sidecars, tests/gluon/bug_*.launch.

mod common;

use bwsim_gluon::version::Version;
use bwsim_isa::{diag, Kernel, SourceFile, Target};
use bwsim_sim::check;
use common::{error_codes, explore};

fn import(v: Version, stem: &str) -> (Kernel, SourceFile) {
    common::import_fixture(v, &format!("{stem}.ttgir"))
}

fn target_of(stem: &str) -> Target {
    if stem.ends_with("sm_90a") {
        Target::Sm90a
    } else {
        Target::Sm100a
    }
}

/// The hazards only the checker sees are in the imported IR: the fence is gone, or the release
/// moved (the checker's findings on them are the fixtures' directives).
#[test]
fn checker_only_bugs_are_in_the_imported_ir() {
    for v in Version::all() {
        for stem in [
            "bug_ws_add_no_fence.sm_100a",
            "bug_ws_add_no_fence.sm_90a",
            "bug_ws_add_early_release.sm_100a",
            "bug_ws_add_early_release.sm_90a",
            "bug_pipelined_matmul_no_fence.sm_100a",
            "bug_pipelined_matmul_early_release.sm_100a",
        ] {
            let (k, file) = import(v, stem);
            let (c, d) = bwsim_isa::verify::verify(
                &k,
                &bwsim_isa::verify::VerifyOptions {
                    target: Some(target_of(stem)),
                    overrides: Vec::new(),
                },
            );
            assert!(c.is_some(), "{v:?} {stem}:\n{}", diag::render(&d, &file));
            // The mistake is in the imported IR: the fence (or the arrive's position) differs
            // from the correct kernel's.
            let fixed = stem
                .replace("no_fence", "fixed")
                .replace("early_release", "fixed");
            let (kf, _) = import(v, &fixed);
            let count = |k: &Kernel, name: &str| {
                let mut n = 0;
                k.walk_stmts(&mut |s| {
                    if let bwsim_isa::ir::StmtKind::Op(op) = &s.kind {
                        if op.kind.name() == name {
                            n += 1;
                        }
                    }
                });
                n
            };
            let order = |k: &Kernel| {
                let mut v = Vec::new();
                k.walk_stmts(&mut |s| match &s.kind {
                    bwsim_isa::ir::StmtKind::Op(op)
                    | bwsim_isa::ir::StmtKind::Let {
                        value: bwsim_isa::ir::Rhs::Op(op),
                        ..
                    } => v.push(op.kind.name()),
                    _ => {}
                });
                v
            };
            let first = |v: &[&str], name: &str| v.iter().position(|n| *n == name).expect("present");
            if stem.contains("pipelined_matmul_no_fence") && v >= Version::V3_7 {
                // Triton 3.7 and later put the fence before the TMA store back when they lower
                // the TTGIR (the import adds it: crate::import::proxy_fences).
                assert_eq!(
                    count(&k, "fence.async_shared"),
                    count(&kf, "fence.async_shared"),
                    "{v:?} {stem}"
                );
            } else if stem.contains("no_fence") {
                assert_eq!(
                    count(&k, "fence.async_shared") + 1,
                    count(&kf, "fence.async_shared"),
                    "{v:?} {stem}"
                );
            } else if stem.contains("ws_add") {
                // The load buffers are released (arrive) before they are read (smem.load).
                let (b, f) = (order(&k), order(&kf));
                assert!(first(&b, "mbar.arrive") < first(&b, "smem.load"), "{v:?} {stem}");
                assert!(first(&f, "mbar.arrive") > first(&f, "smem.load"), "{v:?} {stem}");
            } else {
                // The wait for the previous MMA before reusing its operands is gone.
                assert!(count(&k, "mbar.wait") < count(&kf, "mbar.wait"), "{v:?} {stem}");
            }
        }
    }
}

/// Schedules per checker run: `BWSIM_GLUON_SCHEDULES`, else 8.
fn schedules() -> u64 {
    common::env_schedules().unwrap_or(8)
}

/// The catalogue's warp-specialized add (tests/fail/ws_add_no_load_fence.tile, whose only
/// mistake is the missing fence) with its release moved before the reads, as the Gluon bug has
/// it: the `.tile` twin of `early_release`.
fn ws_add_early_release_tile() -> String {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fail/ws_add_no_load_fence.tile"
    ))
    .expect("catalogue kernel");
    let arrive = "        mbar.arrive load_empty_bars[load_index], count=1\n";
    let wait = "        mbar.wait load_ready_bars[load_index], load_phase\n";
    assert_eq!((src.matches(arrive).count(), src.matches(wait).count()), (1, 1));
    src.replace(arrive, "").replace(wait, &format!("{wait}{arrive}"))
}

#[test]
fn ws_add_early_release_reports_the_codes_of_its_tile_twin() {
    let twin_src = ws_add_early_release_tile();
    for target in [Target::Sm100a, Target::Sm90a] {
        let p = check::prepare(&twin_src, &[], Some(target)).unwrap_or_else(|d| {
            panic!(
                "{}",
                diag::render(&d, &SourceFile::new("ws_add_early_release", twin_src.clone()))
            )
        });
        let twin = error_codes(&explore(&p, schedules()));
        assert!(twin.contains("race"), "{twin:?}");
        for v in Version::all() {
            let stem = format!("bug_ws_add_early_release.{}", target.name());
            let (k, file) = import(v, &stem);
            let p = check::prepare_kernel(&k, &[], Some(target), bwsim_isa::limits::Limits::default())
                .unwrap_or_else(|d| panic!("{stem}:\n{}", diag::render(&d, &file)));
            assert_eq!(error_codes(&explore(&p, schedules())), twin, "{v:?} {stem}");
        }
    }
}

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
//! - scratch_reuse's `no_store_wait` is found through Triton's allocation, which its TTGIR
//!   carries: the conversion's scratch traffic is in the imported IR at the conversion's line,
//!   and the same file without the allocation attributes imports without it and checks clean.
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

/// The ops of `k` named `name` (statements and `let`s), each with the `FILE:LINE` of its span
/// (the file's name without its folder).
fn op_lines(k: &Kernel, file: &SourceFile, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    k.walk_stmts(&mut |s| match &s.kind {
        bwsim_isa::ir::StmtKind::Op(op)
        | bwsim_isa::ir::StmtKind::Let {
            value: bwsim_isa::ir::Rhs::Op(op),
            ..
        } if op.kind.name() == name => {
            let name = file.file_name_of(op.span);
            let name = std::path::Path::new(name)
                .file_name()
                .map_or(name.into(), |n| n.to_string_lossy());
            out.push(format!("{name}:{}", file.line_col(op.span.start as usize).0));
        }
        _ => {}
    });
    out
}

/// `text` without the attributes Triton's allocation pass adds (`allocation.offset`,
/// `allocation.size` and the module's `ttg.shared`): the TTGIR stage's text.
fn without_allocation(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(" {allocation.") {
        let end = rest[i..].find('}').expect("closed attribute dictionary") + i + 1;
        out.push_str(&rest[..i]);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.replace(" ttg.shared = 8192 : i32,", "")
}

/// scratch_reuse's planted bug is in the imported IR only through the allocation its files
/// carry: with it, the scratch's write and read at the conversion and `write-while-in-flight`;
/// without it (the TTGIR stage), neither.
#[test]
fn scratch_reuse_is_found_through_the_allocation() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/gluon");
    for v in Version::all() {
        for target in [Target::Sm100a, Target::Sm90a] {
            let stem = format!("bug_scratch_reuse_no_store_wait.{}", target.name());
            let (k, file) = import(v, &stem);
            // One write of the scratch over `buf` and one read, at the conversion (line 37).
            let at = vec!["scratch_reuse.py:37".to_string()];
            assert_eq!(op_lines(&k, &file, "smem.scatter"), at, "{v:?} {stem}");
            assert_eq!(op_lines(&k, &file, "smem.gather"), at, "{v:?} {stem}");
            let p = check::prepare_kernel(&k, &[], Some(target), bwsim_isa::limits::Limits::default())
                .unwrap_or_else(|d| panic!("{stem}:\n{}", diag::render(&d, &file)));
            let codes = error_codes(&explore(&p, 2));
            assert!(codes.contains("write-while-in-flight"), "{v:?} {stem}: {codes:?}");

            // The TTGIR stage's text: no scratch, and the bug is invisible.
            let path = dir.join(v.minor()).join(format!("{stem}.ttgir"));
            let text = std::fs::read_to_string(&path).expect("fixture");
            let bare = without_allocation(&text);
            assert!(
                !bare.contains("allocation") && !bare.contains("ttg.shared ="),
                "{v:?} {stem}"
            );
            let launch =
                std::fs::read_to_string(dir.join("bug_scratch_reuse_no_store_wait.launch")).expect("sidecar");
            let l = bwsim_gluon::import_text(
                &format!("{stem}.ttgir"),
                &bare,
                Some(&dir.join(v.minor())),
                Some(("bug_scratch_reuse_no_store_wait.launch".into(), launch)),
            );
            let kb = l
                .kernel
                .unwrap_or_else(|d| panic!("{stem}:\n{}", diag::render(&d, &l.source)));
            assert!(
                op_lines(&kb, &l.source, "smem.scatter").is_empty(),
                "{v:?} {stem}"
            );
            assert!(
                op_lines(&kb, &l.source, "smem.reinterpret").is_empty(),
                "{v:?} {stem}"
            );
            let p = check::prepare_kernel(&kb, &[], Some(target), bwsim_isa::limits::Limits::default())
                .unwrap_or_else(|d| panic!("{stem}:\n{}", diag::render(&d, &l.source)));
            assert!(error_codes(&explore(&p, 2)).is_empty(), "{v:?} {stem}");
        }
    }
}

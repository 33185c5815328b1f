//! The proxy fences Triton's compiler adds after TTGIR (crate `import::proxy_fences`), per
//! release: the fences of each imported fixture, by Python line, against what each release's
//! own proxy-fence pass inserts into the same TTGIR (measured by running the pass through
//! Triton's Python bindings; docs/gluon.md, "Proxy fences the compiler adds"). A fence written
//! in the kernel is in the list too, at its own line; a fence the compiler adds is at the line
//! of the operation it precedes.

mod common;

use bwsim_gluon::version::Version;
use bwsim_isa::ir::StmtKind;

/// `(file, line)` of every `fence.async_shared` of the imported fixture, in program order.
fn fences(v: Version, stem: &str) -> Vec<(String, usize)> {
    let (k, file) = common::import_fixture(v, &format!("{stem}.sm_100a.ttgir"));
    let mut out = Vec::new();
    k.walk_stmts(&mut |s| {
        if let StmtKind::Op(op) = &s.kind {
            if op.kind.name() == "fence.async_shared" {
                let name = file.file_name_of(s.span);
                let name = name.rsplit('/').next().unwrap_or(name).to_string();
                out.push((name, file.line_col(s.span.start as usize).0));
            }
        }
    });
    out
}

fn at(places: &[(&str, usize)]) -> Vec<(String, usize)> {
    places.iter().map(|(f, l)| (f.to_string(), *l)).collect()
}

/// Per fixture, the fences of 3.6, 3.7, 3.8 and 3.9.
#[allow(clippy::type_complexity)]
const EXPECTED: &[(&str, [&[(&str, usize)]; 4])] = &[
    // One partition, no fence in the source: 3.6 fences the next TMA load into in_buf (after
    // the TMA store's read, which it counts as a generic one); 3.7+ fence the TMA store.
    (
        "proxy_fences",
        [
            &[("proxy_fences.py", 34)],
            &[("proxy_fences.py", 51)],
            &[("proxy_fences.py", 51)],
            &[("proxy_fences.py", 51)],
        ],
    ),
    // A worker's TMA store of a block written before `warp_specialize`: 3.7+.
    (
        "proxy_fences_ws",
        [
            &[],
            &[("proxy_fences.py", 60)],
            &[("proxy_fences.py", 60)],
            &[("proxy_fences.py", 60)],
        ],
    ),
    // A TMA store after `warp_specialize` of a block a worker wrote: 3.9 only.
    ("proxy_fences_join", [&[], &[], &[], &[("proxy_fences.py", 118)]]),
    // The same block handed over an mbarrier from another partition: no release.
    ("bug_proxy_fences_handoff", [&[], &[], &[], &[]]),
    // The planted matmul's epilogue without its fence: 3.7+ put it back.
    (
        "bug_pipelined_matmul_no_fence",
        [
            &[],
            &[("planted_bugs.py", 208)],
            &[("planted_bugs.py", 208)],
            &[("planted_bugs.py", 208)],
        ],
    ),
    // The packed-factor MMA without its fence after the factors' loads: every release fences
    // the next K step's factor load (3.6 and 3.7 place a multi-line call at its last line).
    (
        "bug_mma_scaled_packed_no_fence",
        [
            &[("mma_scaled.py", 222), ("tcgen05_steps.py", 52)],
            &[("mma_scaled.py", 222), ("tcgen05_steps.py", 52)],
            &[("mma_scaled.py", 220), ("tcgen05_steps.py", 52)],
            &[("mma_scaled.py", 220), ("tcgen05_steps.py", 52)],
        ],
    ),
    // A fence in the source before the TMA store; 3.6 adds one before the next iteration's TMA
    // load, after the TMA store's read.
    (
        "mbarrier_lifecycle",
        [
            &[("mbarrier_lifecycle.py", 23), ("mbarrier_lifecycle.py", 27)],
            &[("mbarrier_lifecycle.py", 27)],
            &[("mbarrier_lifecycle.py", 27)],
            &[("mbarrier_lifecycle.py", 27)],
        ],
    ),
];

#[test]
fn the_import_adds_the_fences_each_release_adds() {
    for (stem, per_release) in EXPECTED {
        for (v, want) in Version::all().zip(per_release) {
            assert_eq!(fences(v, stem), at(want), "{v:?} {stem}");
        }
    }
}

//! bwsim's operation names in Gluon's words: diagnostics about an imported kernel name bwsim
//! operations (`tma.load`, `fence.async_shared`, ...); for a Gluon author each one named in a
//! diagnostic's message or help gets a note with the Triton 3.6 Gluon call that is that
//! operation. Operations without a Gluon spelling (the tcgen05 thread-sync fences, which Triton
//! places itself) get no note.

use bwsim_isa::Diagnostic;

/// (bwsim operation, the Gluon call). Names are matched whole (a backquoted name), so
/// `tma.store_wait` is never read as `tma.store`.
const TERMS: &[(&str, &str)] = &[
    ("tma.store_wait", "tma.store_wait(pendings)"),
    (
        "tma.load",
        "tma.async_copy_global_to_shared(desc, coords, bar, smem)",
    ),
    ("tma.store", "tma.async_copy_shared_to_global(desc, coords, smem)"),
    ("tma.gather", "tma.async_gather(desc, x_offsets, y, bar, smem)"),
    ("tma.scatter", "tma.async_scatter(desc, x_offsets, y, smem)"),
    ("fence.async_shared", "fence_async_shared()"),
    ("mbar.expect", "mbarrier.expect(bar, nbytes)"),
    ("mbar.arrive", "mbarrier.arrive(bar)"),
    ("mbar.wait", "mbarrier.wait(bar, phase)"),
    ("mbar.init", "mbarrier.init(bar, count)"),
    ("mbar.invalidate", "mbarrier.invalidate(bar)"),
    ("tcgen05.mma_scaled", "tcgen05_mma_scaled(...)"),
    ("tcgen05.mma", "tcgen05_mma(a, b, acc)"),
    ("tcgen05.commit", "tcgen05_commit(bar)"),
    ("tcgen05.cp", "tcgen05_copy(smem, tmem)"),
    ("tmem.load", "the tensor-memory buffer's `.load(layout)`"),
    ("tmem.store", "the tensor-memory buffer's `.store(value)`"),
    ("smem.load", "the shared buffer's `.load(layout)`"),
    ("smem.store", "the shared buffer's `.store(value)`"),
    ("cp.async.commit", "async_copy.commit_group()"),
    ("cp.async.wait", "async_copy.wait_group(n)"),
    (
        "cp.async",
        "async_copy.async_copy_global_to_shared(smem, pointers)",
    ),
    ("wgmma.wait", "warpgroup_mma_wait(n)"),
    ("wgmma", "warpgroup_mma(a, b, acc)"),
    ("bar.sync", "gl.thread_barrier()"),
    ("global.load", "gl.load(pointers)"),
    ("global.store", "gl.store(pointers, value)"),
];

/// The Gluon calls of the bwsim operations a diagnostic names in backquotes (message and
/// help), in order of first mention.
pub fn gluon_calls(d: &Diagnostic) -> Vec<(&'static str, &'static str)> {
    let text = format!("{} {}", d.message, d.help.as_deref().unwrap_or(""));
    let mut found: Vec<(&'static str, &'static str)> = Vec::new();
    for quoted in text.split('`').skip(1).step_by(2) {
        if let Some(&term) = TERMS.iter().find(|(op, _)| *op == quoted) {
            if !found.contains(&term) {
                found.push(term);
            }
        }
    }
    found
}

/// The diagnostic with a note naming, in Gluon, the bwsim operations it mentions.
pub fn in_gluon_terms(d: &Diagnostic) -> Diagnostic {
    let calls = gluon_calls(d);
    if calls.is_empty() {
        return d.clone();
    }
    let list: Vec<String> = calls
        .iter()
        .map(|(op, call)| format!("`{op}` is {call}"))
        .collect();
    d.clone().with_note(format!("in Gluon: {}", list.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bwsim_isa::{Code, Span};

    #[test]
    fn the_operations_a_diagnostic_names_get_their_gluon_calls() {
        let d = Diagnostic::error(
            Code::MissingFence,
            "missing `fence.async_shared`: `tma.load` (async proxy) overwrites `a` that `smem.load` (generic proxy) read",
            Span::DUMMY,
            "",
        )
        .with_help("add `fence.async_shared` between the `smem.load` and the `tma.load`");
        assert_eq!(
            gluon_calls(&d).iter().map(|c| c.0).collect::<Vec<_>>(),
            ["fence.async_shared", "tma.load", "smem.load"]
        );
        let n = in_gluon_terms(&d);
        let note = n.notes.last().expect("a note");
        assert!(note.starts_with("in Gluon: `fence.async_shared` is fence_async_shared(); `tma.load` is tma.async_copy_global_to_shared("), "{note}");
    }

    #[test]
    fn names_that_are_not_operations_add_nothing() {
        let d = Diagnostic::error(
            Code::Race,
            "`x` written while `tma.store_waits` runs",
            Span::DUMMY,
            "",
        );
        assert_eq!(in_gluon_terms(&d), d);
        let w = Diagnostic::error(
            Code::Race,
            "wait on `tma.store_wait` before `tma.store`",
            Span::DUMMY,
            "",
        );
        assert_eq!(
            gluon_calls(&w).iter().map(|c| c.0).collect::<Vec<_>>(),
            ["tma.store_wait", "tma.store"]
        );
    }
}

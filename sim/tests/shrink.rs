//! Minimal counterexamples (`check::shrink`) against their definition: the shrunk schedule
//! shows the finding, and dropping any one of its preemptions or stalls loses it.

use bwsim_sim::check::shrink::{self, Replay, Script};
use bwsim_sim::check::{self, Prepared};
use bwsim_sim::explore::{ExploreOptions, Finding};

fn prepared(name: &str) -> Prepared {
    let path = format!("{}/../tests/fail/{name}.tile", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    check::prepare(&src, &[], None).unwrap_or_else(|d| panic!("{name}: {d:?}"))
}

fn first_error(p: &Prepared) -> Finding {
    let e = p.explore(
        &ExploreOptions {
            first_seed: 0,
            schedules: 24,
            jobs: 2,
            stop_on_first_error: false,
        },
        |_, _| {},
    );
    e.findings
        .into_iter()
        .find(|f| f.diagnostic.is_error())
        .expect("the buggy kernel reports an error")
}

/// Whether `script` replayed shows a diagnostic with the finding's code and spans.
fn shows(p: &Prepared, script: &Script, f: &Finding) -> bool {
    let mut r = Replay::new(script);
    let run = p.run_with(&mut r, false);
    let key = |d: &bwsim_isa::Diagnostic| {
        let mut v = vec![(d.primary.span.start, d.primary.span.end)];
        v.extend(d.labels.iter().map(|l| (l.span.start, l.span.end)));
        (d.code, v)
    };
    run.diagnostics.iter().any(|d| key(d) == key(&f.diagnostic))
}

#[test]
fn the_shrunk_schedule_shows_the_finding_and_each_kept_perturbation_is_needed() {
    // A kernel whose bug needs the partitions interleaved (its shrunk schedule keeps
    // preemptions and stalls) and one that needs none.
    for name in ["ws_matmul_acc_release_off_by_one", "ring_barrier_aliasing"] {
        let p = prepared(name);
        let f = first_error(&p);
        let cx = shrink::shrink(&p, &f).expect("the recorded schedule replays");
        assert!(!cx.truncated, "{name}: {}", cx.summary());
        assert!(
            shows(&p, &cx.script, &f),
            "{name}: the shrunk schedule lost the finding"
        );
        let kept = cx
            .script
            .preempt
            .clone()
            .expect("a shrunk script names its preemptions");
        assert_eq!(
            kept.len(),
            cx.preemptions.len(),
            "{name}: every kept preemption preempts"
        );
        for i in &kept {
            let mut s = cx.script.clone();
            s.preempt.as_mut().expect("set").remove(i);
            assert!(!shows(&p, &s, &f), "{name}: preemption at pick {i} is not needed");
        }
        for (i, _) in cx.script.stalls.iter().enumerate().filter(|(_, s)| **s) {
            let mut s = cx.script.clone();
            s.stalls[i] = false;
            assert!(!shows(&p, &s, &f), "{name}: stall {i} is not needed");
        }
    }
}

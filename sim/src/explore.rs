//! Schedule exploration: run many seeds of one kernel, in parallel, and report each distinct
//! diagnostic once with the first seed that shows it.
//!
//! The explorer knows nothing of kernels: it drives a closure `seed -> diagnostics` over seeds
//! `first..first + n` on `jobs` threads (crossbeam scoped threads pulling seeds from a shared
//! counter), so the result does not depend on the number of threads: for each distinct
//! diagnostic the *smallest* seed that produced it is kept.

use bwsim_isa::{Code, Diagnostic};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// One distinct finding.
#[derive(Clone, Debug)]
pub struct Finding {
    pub diagnostic: Diagnostic,
    /// The smallest seed that produced it.
    pub seed: u64,
    /// How many of the explored schedules produced it.
    pub count: u64,
}

/// The result of an exploration.
#[derive(Clone, Debug, Default)]
pub struct Exploration {
    pub schedules: u64,
    /// Findings ordered by (severity, first seed).
    pub findings: Vec<Finding>,
    /// Set when `stop_on_first_error` or a cancellation cut the run short.
    pub stopped_early: bool,
}

impl Exploration {
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.diagnostic.is_error())
    }
}

/// Options of [`explore`].
#[derive(Clone, Debug)]
pub struct ExploreOptions {
    pub first_seed: u64,
    pub schedules: u64,
    pub jobs: usize,
    /// Stop handing out seeds after the first error (the seeds already running finish).
    pub stop_on_first_error: bool,
}

/// Identity of a diagnostic for deduplication: its code and its spans. Phase aliasing is one
/// finding per wait and barrier (the spans of the completions it missed vary by schedule);
/// a deadlock is one per set of blocked waits.
pub(crate) fn key(d: &Diagnostic) -> (&'static str, Vec<(u32, u32)>, String) {
    let mut spans = vec![(d.primary.span.start, d.primary.span.end)];
    if d.code == Code::PhaseAliasing {
        return (d.code.name(), spans, d.message.clone());
    }
    spans.extend(d.labels.iter().map(|l| (l.span.start, l.span.end)));
    (d.code.name(), spans, String::new())
}

/// Run `run(seed)` for every seed and merge the findings. `progress(done, total)` is called
/// after each schedule (from worker threads).
pub fn explore<F, P>(opts: &ExploreOptions, run: F, progress: P) -> Exploration
where
    F: Fn(u64) -> Vec<Diagnostic> + Sync,
    P: Fn(u64, u64) + Sync,
{
    explore_until(opts, &AtomicBool::new(false), run, progress)
}

/// [`explore`], stopping early once `cancel` is set (by a signal handler, say): no seed is
/// handed out after that, the schedules already running finish, and the result holds the
/// findings of the seeds `first_seed..first_seed + schedules` that ran (seeds are handed out
/// in order and every one handed out completes, so they are contiguous). While `cancel` stays
/// clear the result is exactly [`explore`]'s.
pub fn explore_until<F, P>(opts: &ExploreOptions, cancel: &AtomicBool, run: F, progress: P) -> Exploration
where
    F: Fn(u64) -> Vec<Diagnostic> + Sync,
    P: Fn(u64, u64) + Sync,
{
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    type Found = BTreeMap<(&'static str, Vec<(u32, u32)>, String), Finding>;
    let found: Mutex<Found> = Mutex::new(BTreeMap::new());
    let jobs = opts.jobs.max(1);
    crossbeam::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|_| loop {
                if stop.load(Ordering::Relaxed) || cancel.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= opts.schedules {
                    break;
                }
                let seed = opts.first_seed.wrapping_add(i);
                let diags = run(seed);
                if opts.stop_on_first_error && diags.iter().any(|d| d.is_error()) {
                    stop.store(true, Ordering::Relaxed);
                }
                if !diags.is_empty() {
                    // A poisoned lock means another worker panicked; its panic is re-raised below.
                    if let Ok(mut f) = found.lock() {
                        // A schedule counts once per distinct diagnostic, however often it showed
                        // (once per warp or per CTA).
                        let mut seen = std::collections::HashSet::new();
                        for d in diags {
                            if !seen.insert(key(&d)) {
                                continue;
                            }
                            let e = f.entry(key(&d)).or_insert_with(|| Finding {
                                diagnostic: d.clone(),
                                seed,
                                count: 0,
                            });
                            e.count += 1;
                            if seed < e.seed {
                                e.seed = seed;
                                e.diagnostic = d;
                            }
                        }
                    }
                }
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(n, opts.schedules);
            });
        }
    })
    .unwrap_or_else(|e| std::panic::resume_unwind(e));
    let mut findings: Vec<Finding> = found.into_inner().unwrap_or_default().into_values().collect();
    findings.sort_by_key(|f| (f.diagnostic.severity, f.seed));
    let schedules = done.load(Ordering::Relaxed);
    Exploration {
        schedules,
        findings,
        stopped_early: schedules < opts.schedules,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bwsim_isa::Span;

    fn diag(code: Code, at: usize) -> Diagnostic {
        Diagnostic::error(code, code.name(), Span::new(at, at + 1), "here")
    }

    #[test]
    fn each_distinct_diagnostic_once_with_its_smallest_seed_whatever_the_thread_count() {
        let run = |seed: u64| -> Vec<Diagnostic> {
            let mut v = Vec::new();
            if seed % 7 == 3 {
                v.push(diag(Code::Race, 10));
            }
            if seed % 11 == 5 {
                v.push(diag(Code::Deadlock, 20));
            }
            v
        };
        for jobs in [1, 2, 4] {
            let e = explore(
                &ExploreOptions {
                    first_seed: 0,
                    schedules: 100,
                    jobs,
                    stop_on_first_error: false,
                },
                run,
                |_, _| {},
            );
            assert_eq!(e.schedules, 100);
            let got: Vec<(Code, u64, u64)> = e
                .findings
                .iter()
                .map(|f| (f.diagnostic.code, f.seed, f.count))
                .collect();
            assert_eq!(
                got,
                vec![(Code::Race, 3, 14), (Code::Deadlock, 5, 9)],
                "jobs={jobs}"
            );
        }
    }

    #[test]
    fn stop_on_first_error_stops() {
        let e = explore(
            &ExploreOptions {
                first_seed: 0,
                schedules: 10_000,
                jobs: 1,
                stop_on_first_error: true,
            },
            |s| if s == 4 { vec![diag(Code::Race, 1)] } else { vec![] },
            |_, _| {},
        );
        assert!(e.stopped_early && e.schedules == 5, "{}", e.schedules);
    }

    #[test]
    fn a_diagnostic_repeated_within_one_schedule_counts_that_schedule_once() {
        let e = explore(
            &ExploreOptions {
                first_seed: 0,
                schedules: 5,
                jobs: 2,
                stop_on_first_error: false,
            },
            // Every schedule reports the same race four times (one per warp), and seed 2 also
            // reports another.
            |s| {
                let mut v = vec![diag(Code::Race, 1); 4];
                if s == 2 {
                    v.push(diag(Code::Race, 7));
                }
                v
            },
            |_, _| {},
        );
        let counts: Vec<(u64, u64)> = e.findings.iter().map(|f| (f.seed, f.count)).collect();
        assert_eq!(counts, vec![(0, 5), (2, 1)]);
    }

    #[test]
    fn cancel_stops_handing_out_seeds_and_keeps_what_ran() {
        let cancel = AtomicBool::new(false);
        let e = explore_until(
            &ExploreOptions {
                first_seed: 100,
                schedules: 10_000,
                jobs: 1,
                stop_on_first_error: false,
            },
            &cancel,
            |s| {
                if s == 109 {
                    cancel.store(true, Ordering::Relaxed);
                }
                if s % 4 == 1 {
                    vec![diag(Code::Race, 1)]
                } else {
                    vec![]
                }
            },
            |_, _| {},
        );
        // Seeds 100..=109 ran; 101, 105 and 109 found the race, the first at 101.
        assert_eq!(e.schedules, 10);
        assert!(e.stopped_early);
        assert_eq!(e.findings.len(), 1);
        assert_eq!((e.findings[0].seed, e.findings[0].count), (101, 3));
    }
}

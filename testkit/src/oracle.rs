//! The oracle every fuzz driver checks: for any input bytes, the front ends (the `.tile` parser
//! and the TTGIR importer), the verifier, the launch resolution and the simulator must behave,
//! and the first property that fails panics with a message saying which.
//!
//! Properties, for a `.tile` text ([`check`]) and for a `.ttgir` text with or without a launch
//! sidecar ([`check_ttgir`]):
//! - `.tile`: parse accepts, or rejects with at least one diagnostic whose spans lie in the text;
//! - TTGIR: the import ends within [`Budget::import_time`] (inputs above [`Budget::max_input`]
//!   bytes are not tried) and accepts, or rejects with at least one diagnostic, every error
//!   pointing at text (no spanless error) and every span inside the composite source (the
//!   TTGIR, the sidecar, the Python files its locations name); the same text imports the same
//!   way twice; an accepted file has a settled Triton version;
//! - the printer is a fixed point: `print(parse(print(k))) == print(k)`; an imported kernel's
//!   `.tile` text parses back to the same kernel;
//! - the verifier never panics, on every target the kernel lists; its diagnostics' spans lie in
//!   the source, and a rejection carries an error;
//! - a verified kernel's launch (a `.tile` file's `launch` section, a TTGIR file's sidecar)
//!   resolves or is refused with diagnostics, and its global tensors are refused *before
//!   allocation* when they exceed the memory limit;
//! - a run ends in one of {completed, trap with a CUDA error, diagnostic, resource limit},
//!   with every error diagnostic carrying a span in the source or naming the limit;
//! - the same seed gives the same outcome, diagnostics, counters, outputs and trace.

use bwsim_isa::launch;
use bwsim_isa::limits::{Limit, Limits};
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{diag, Diagnostic, Kernel, SourceFile, Target};
use bwsim_sim::{Outcome, RunOptions, RunResult};
use std::time::Duration;

use crate::ttgir::TtgirCase;

/// Budgets for one case: small enough that a fuzz case takes milliseconds.
#[derive(Clone, Debug)]
pub struct Budget {
    pub steps: u64,
    /// Bytes of simulated global memory a launch may allocate.
    pub memory: u64,
    pub trace_events: u64,
    /// Wall time of one run (a case that reaches it is not compared for determinism).
    pub wall_time: Duration,
    /// Run each verified kernel twice and compare (determinism); import TTGIR twice.
    pub twice: bool,
    /// Wall time of one TTGIR import: an import still running then is a hang.
    pub import_time: Duration,
    /// The largest TTGIR case (text and sidecar) imported; larger ones are not tried.
    pub max_input: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            steps: 20_000,
            memory: 4 << 20,
            trace_events: 50_000,
            wall_time: Duration::from_secs(2),
            twice: true,
            import_time: Duration::from_secs(20),
            max_input: 1 << 20,
        }
    }
}

/// How far a case got (for statistics; every verdict is a pass).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    NotUtf8,
    ParseError,
    /// The TTGIR import refused the file.
    ImportError,
    /// A TTGIR case above [`Budget::max_input`] bytes (not tried).
    TooLarge,
    VerifyError,
    NoLaunch,
    LaunchError,
    MemoryRefused,
    Ran(Outcome),
}

fn check_spans(what: &str, diags: &[Diagnostic], len: usize) {
    for d in diags {
        for l in std::iter::once(&d.primary).chain(&d.labels) {
            assert!(
                l.span.start <= l.span.end && l.span.end as usize <= len,
                "{what}: span {:?} outside the text (len {len}): {d:?}",
                l.span
            );
        }
    }
}

/// Check every property on `bytes`, returning how far the case got.
pub fn check(bytes: &[u8], budget: &Budget) -> Verdict {
    match std::str::from_utf8(bytes) {
        Ok(text) => check_text(text, budget),
        Err(_) => {
            // The CLI refuses non-UTF-8 files before parsing; the lossy text must still be safe.
            let lossy = String::from_utf8_lossy(bytes);
            check_text(&lossy, budget);
            Verdict::NotUtf8
        }
    }
}

/// [`check`] on text.
pub fn check_text(text: &str, budget: &Budget) -> Verdict {
    let file = SourceFile::new("fuzz.tile", text);
    let len = text.len();
    let kernel = match bwsim_isa::parser::parse(text) {
        Err(diags) => {
            assert!(!diags.is_empty(), "parse rejected without a diagnostic");
            check_spans("parse", &diags, len);
            let _ = diag::render(&diags, &file);
            return Verdict::ParseError;
        }
        Ok(k) => k,
    };
    print_round_trip(&kernel, "the printer's output");
    check_kernel(&kernel, &file, budget)
}

/// `kernel` printed, and the printed text parsed again (`what` names the text when it does not
/// parse); printing the parsed kernel must give the same text (a fixed point).
fn print_round_trip(kernel: &Kernel, what: &str) -> (String, Kernel) {
    let printed = bwsim_isa::printer::print(kernel);
    let again = match bwsim_isa::parser::parse(&printed) {
        Ok(k) => k,
        Err(d) => panic!(
            "{what} does not parse:\n{}\n{printed}",
            diag::render(&d, &SourceFile::new("printed.tile", printed.as_str()))
        ),
    };
    assert_eq!(
        bwsim_isa::printer::print(&again),
        printed,
        "print is not a fixed point"
    );
    (printed, again)
}

/// Check every property on a TTGIR case (its text, and its launch sidecar when it has one),
/// returning how far it got. Text that is not UTF-8 is read lossily (the CLI refuses it before
/// importing).
pub fn check_ttgir(case: &TtgirCase, budget: &Budget) -> Verdict {
    if case.len() > budget.max_input {
        return Verdict::TooLarge;
    }
    let utf8 = std::str::from_utf8(&case.ttgir).is_ok()
        && case
            .launch
            .as_deref()
            .is_none_or(|l| std::str::from_utf8(l).is_ok());
    let text = String::from_utf8_lossy(&case.ttgir).into_owned();
    let launch = case
        .launch
        .as_deref()
        .map(|l| ("fuzz.launch".to_string(), String::from_utf8_lossy(l).into_owned()));
    let loaded = import_bounded(&text, &launch, budget.import_time);
    let len = loaded.source.text.len();
    if budget.twice {
        let again = import_bounded(&text, &launch, budget.import_time);
        assert_eq!(
            summary(&again),
            summary(&loaded),
            "the same TTGIR imports differently twice"
        );
    }
    let v = match &loaded.kernel {
        Err(diags) => {
            assert!(!diags.is_empty(), "the import refused without a diagnostic");
            check_spans("import", diags, len);
            for d in diags.iter().filter(|d| d.is_error()) {
                assert!(
                    !d.primary.span.is_dummy(),
                    "the import refused with a spanless error: {d:?}"
                );
            }
            let _ = diag::render(diags, &loaded.source);
            Verdict::ImportError
        }
        Ok(kernel) => {
            assert!(
                loaded.version.is_some(),
                "an imported kernel without a settled Triton version"
            );
            let (printed, again) = print_round_trip(kernel, "an imported kernel's text");
            assert!(
                again == *kernel,
                "an imported kernel's text parses back to another kernel:\n{printed}"
            );
            check_kernel(kernel, &loaded.source, budget)
        }
    };
    if utf8 {
        v
    } else {
        Verdict::NotUtf8
    }
}

/// What an import produced, for comparing two imports: the kernel's text, or the diagnostics
/// with their spans.
fn summary(l: &bwsim_gluon::Loaded) -> Result<String, Vec<(bwsim_isa::Code, String, u32, u32)>> {
    match &l.kernel {
        Ok(k) => Ok(bwsim_isa::printer::print(k)),
        Err(ds) => Err(ds
            .iter()
            .map(|d| {
                (
                    d.code,
                    d.message.clone(),
                    d.primary.span.start,
                    d.primary.span.end,
                )
            })
            .collect()),
    }
}

/// Import TTGIR text (no directory: its Python files resolve from the working directory) on a
/// worker thread, and panic if it has not finished within `limit`. A panic of the import is
/// raised again here.
fn import_bounded(text: &str, launch: &Option<(String, String)>, limit: Duration) -> bwsim_gluon::Loaded {
    let (tx, rx) = std::sync::mpsc::channel();
    let (text, launch) = (text.to_string(), launch.clone());
    let spawned = std::thread::Builder::new()
        .name("ttgir-import".into())
        .stack_size(8 << 20)
        .spawn(move || {
            let r =
                std::panic::catch_unwind(move || bwsim_gluon::import_text("fuzz.ttgir", &text, None, launch));
            let _ = tx.send(r);
        });
    if spawned.is_err() {
        panic!("cannot spawn the import's worker thread");
    }
    match rx.recv_timeout(limit) {
        Ok(Ok(l)) => l,
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => panic!("the TTGIR import did not finish within {limit:?} (a hang)"),
    }
}

/// Verify `kernel` (its spans point into `file`) on every target it lists, then resolve its
/// launch and run it, checking every property on the way.
fn check_kernel(kernel: &Kernel, file: &SourceFile, budget: &Budget) -> Verdict {
    let len = file.text.len();
    let mut verified = None;
    for t in [Target::Sm100a, Target::Sm90a] {
        if !kernel.targets.contains(&t) {
            continue;
        }
        let (checked, diags) = verify(
            kernel,
            &VerifyOptions {
                target: Some(t),
                overrides: vec![],
            },
        );
        check_spans("verify", &diags, len);
        let _ = diag::render(&diags, file);
        if checked.is_none() {
            assert!(
                diags.iter().any(|d| d.is_error()),
                "verification failed without an error diagnostic"
            );
        }
        if verified.is_none() {
            verified = Some(checked);
        }
    }
    // The default target (the first listed) is the one that runs.
    let Some(Some(checked)) = verified else {
        return Verdict::VerifyError;
    };
    let Some(l) = &kernel.launch else {
        return Verdict::NoLaunch;
    };
    let plan = match launch::resolve(&checked, l) {
        Ok(p) => p,
        Err(d) => {
            assert!(!d.is_empty());
            check_spans("launch", &d, len);
            return Verdict::LaunchError;
        }
    };
    let mut plan = plan;
    let cli = Limits {
        steps: Some(budget.steps),
        memory: Some(budget.memory),
        trace_events: Some(budget.trace_events),
        wall_time: Some(budget.wall_time),
    };
    plan.limits = cli.or(plan.limits);
    let inputs = match launch::materialize(&plan, 7) {
        Ok(t) => t,
        Err(d) => {
            assert_eq!(
                d.code,
                Limit::Memory.code(),
                "materialize refused for another reason: {d:?}"
            );
            check_spans("memory limit", std::slice::from_ref(&d), len);
            assert!(plan.total_bytes() > plan.limits.memory_or_default());
            return Verdict::MemoryRefused;
        }
    };
    let opts = RunOptions {
        seed: 7,
        trace: true,
        limits: plan.limits,
        ..RunOptions::default()
    };
    let r = bwsim_sim::run(&checked, &plan, inputs.clone(), &opts);
    check_run(&r, len);
    let timed_out = |r: &RunResult| r.outcome == Outcome::LimitReached(Limit::WallTime);
    if budget.twice && !timed_out(&r) {
        let r2 = bwsim_sim::run(&checked, &plan, inputs, &opts);
        if !timed_out(&r2) {
            same_run(&r, &r2);
        }
    }
    Verdict::Ran(r.outcome)
}

fn check_run(r: &RunResult, len: usize) {
    check_spans("run", &r.diagnostics, len);
    match r.outcome {
        Outcome::Completed => {}
        Outcome::Trapped => {
            let t = r.trap.as_ref().expect("a trapped run carries its trap");
            assert!(!t.error.message().is_empty());
        }
        Outcome::LimitReached(l) => {
            let d = r
                .diagnostics
                .iter()
                .find(|d| d.code == l.code())
                .unwrap_or_else(|| panic!("{l:?} limit without its `{}` diagnostic", l.code()));
            let help = d.help.as_deref().unwrap_or("");
            assert!(
                help.contains(l.flag()),
                "limit diagnostic without a way to raise it: {d:?}"
            );
        }
        Outcome::Deadlock | Outcome::Error => {
            assert!(
                r.diagnostics.iter().any(|d| d.is_error()),
                "{:?} without an error diagnostic",
                r.outcome
            );
        }
    }
}

fn same_run(a: &RunResult, b: &RunResult) {
    assert_eq!(a.outcome, b.outcome, "same seed, different outcome");
    assert_eq!(a.counters, b.counters, "same seed, different counters");
    let codes = |r: &RunResult| -> Vec<(bwsim_isa::Code, String)> {
        r.diagnostics
            .iter()
            .map(|d| (d.code, d.message.clone()))
            .collect()
    };
    assert_eq!(codes(a), codes(b), "same seed, different diagnostics");
    assert!(a.trace.events == b.trace.events, "same seed, different trace");
    assert!(a.tensors == b.tensors, "same seed, different outputs");
}

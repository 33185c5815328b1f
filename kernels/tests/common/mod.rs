//! The harness of the seed-kernel tests: run a bundled kernel with constant overrides on the
//! inputs its launch spec draws, compare every output with the CPU reference, and sweep a grid
//! of configurations on a pool of threads.
#![allow(dead_code)]

use bwsim_isa::consts::Override;
use bwsim_isa::launch;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{diag, SourceFile, Target};
use bwsim_kernels::reference;
use bwsim_sim::{CudaError, Outcome, RunOptions, RunResult};
use std::time::Instant;

/// Whether the heavy sweeps (the tutorials' full shapes) are requested.
pub fn full_grid() -> bool {
    std::env::var("BWSIM_FULL_GRID").is_ok_and(|v| v == "1")
}

/// One configuration of a bundled kernel.
#[derive(Clone, Debug)]
pub struct Case {
    pub kernel: &'static str,
    pub consts: Vec<(String, String)>,
    pub target: Option<Target>,
    pub seed: u64,
}

impl Case {
    pub fn new(kernel: &'static str) -> Case {
        Case {
            kernel,
            consts: Vec::new(),
            target: None,
            seed: 0,
        }
    }
    /// Override constant `name` (a later override of the same name wins).
    pub fn c(mut self, name: &str, value: impl ToString) -> Case {
        self.consts.retain(|(n, _)| n != name);
        self.consts.push((name.to_string(), value.to_string()));
        self
    }
    pub fn target(mut self, t: &str) -> Case {
        self.target = Some(Target::from_name(t).expect("known target"));
        self
    }
    pub fn seed(mut self, s: u64) -> Case {
        self.seed = s;
        self
    }
    /// `kernel --target T --const A=1 ...`, as `bwsim run` takes it.
    pub fn label(&self) -> String {
        let mut s = self.kernel.to_string();
        if let Some(t) = self.target {
            s += &format!(" --target {t}");
        }
        for (n, v) in &self.consts {
            s += &format!(" --const {n}={v}");
        }
        if self.seed != 0 {
            s += &format!(" --seed {}", self.seed);
        }
        s
    }
    fn overrides(&self) -> Vec<Override> {
        self.consts
            .iter()
            .map(|(n, v)| Override {
                name: n.clone(),
                value: v.clone(),
            })
            .collect()
    }
    fn source(&self) -> SourceFile {
        let k =
            bwsim_kernels::find(self.kernel).unwrap_or_else(|| panic!("no bundled kernel `{}`", self.kernel));
        SourceFile::new(format!("{}.tile", k.name), k.source)
    }

    /// Codes of the static (verify and launch) errors of this configuration.
    pub fn static_errors(&self) -> Vec<String> {
        let file = self.source();
        let k = match bwsim_isa::parse(&file) {
            Ok(k) => k,
            Err(d) => return d.into_iter().map(|d| d.code.to_string()).collect(),
        };
        let (checked, diags) = verify(
            &k,
            &VerifyOptions {
                target: self.target,
                overrides: self.overrides(),
            },
        );
        let mut codes: Vec<String> = diags
            .into_iter()
            .filter(|d| d.is_error())
            .map(|d| d.code.to_string())
            .collect();
        if let (Some(c), Some(l)) = (&checked, &k.launch) {
            if let Err(d) = launch::resolve(c, l) {
                codes.extend(d.into_iter().map(|d| d.code.to_string()));
            }
        }
        codes
    }

    /// Run the configuration. `Err` when it does not parse, verify or launch.
    pub fn run(&self) -> Result<Run, String> {
        let file = self.source();
        let k = bwsim_isa::parse(&file).map_err(|d| diag::render(&d, &file))?;
        let (checked, diags) = verify(
            &k,
            &VerifyOptions {
                target: self.target,
                overrides: self.overrides(),
            },
        );
        let checked = checked.ok_or_else(|| diag::render(&diags, &file))?;
        let l = k.launch.as_ref().ok_or("no launch section")?;
        let plan = launch::resolve(&checked, l).map_err(|d| diag::render(&d, &file))?;
        let inputs = launch::materialize(&plan, self.seed).expect("within the memory limit");
        let expected = reference::reference(&k.name.name, &plan, &inputs)
            .ok_or_else(|| format!("`{}` has no CPU reference", k.name.name))?;
        let expected = expected.map_err(|e| format!("reference: {e}"))?;
        let result = bwsim_sim::run(
            &checked,
            &plan,
            inputs,
            &RunOptions {
                seed: self.seed,
                trace: false,
                ..RunOptions::default()
            },
        );
        let rendered = diag::render(&result.diagnostics, &file);
        let mut mismatches = Vec::new();
        if result.outcome == Outcome::Completed {
            for e in &expected {
                match result.tensor(&e.tensor) {
                    Some(t) => {
                        let c = reference::compare(t, e);
                        if !c.passed() {
                            mismatches.push(format!(
                                "{}: {} of {} elements differ, max |err| {:.3e}, first (index, got, expected) {:?}",
                                c.tensor, c.mismatches, c.elements, c.max_abs_err, c.first_mismatch
                            ));
                        }
                    }
                    None => mismatches.push(format!("no output tensor `{}`", e.tensor)),
                }
            }
        }
        Ok(Run {
            result,
            rendered,
            mismatches,
        })
    }

    /// Run and require a clean completion with every output matching the reference.
    pub fn check(&self) -> Result<(), String> {
        let r = self.run()?;
        if !r.result.ok() {
            return Err(format!("{:?}\n{}", r.result.outcome, r.rendered));
        }
        if !r.mismatches.is_empty() {
            return Err(r.mismatches.join("\n"));
        }
        Ok(())
    }

    /// Run and require a trap with `error` raised by the operation `op`.
    pub fn check_trap(&self, error: CudaError, op: &str) -> Result<(), String> {
        let r = self.run()?;
        match &r.result.trap {
            Some(t) if t.error == error && t.op == op => Ok(()),
            other => Err(format!(
                "expected `{}` from `{op}`, got {:?} / {other:?}\n{}",
                error.message(),
                r.result.outcome,
                r.rendered
            )),
        }
    }
}

/// A finished run of a [`Case`].
pub struct Run {
    pub result: RunResult,
    /// Its diagnostics, rendered.
    pub rendered: String,
    /// One line per output that differs from the reference.
    pub mismatches: Vec<String>,
}

/// Check every case (on a pool of `available_parallelism` threads) and panic listing every
/// failing one with the `bwsim run` arguments that reproduce it.
pub fn sweep(name: &str, cases: Vec<Case>) {
    sweep_with(name, cases, |c| c.check());
}

/// [`sweep`] with a custom check.
pub fn sweep_with(name: &str, cases: Vec<Case>, f: impl Fn(&Case) -> Result<(), String> + Sync) {
    let t = Instant::now();
    let n = cases.len();
    let failures: Vec<String> = bwsim_isa::pool::map_ordered(&cases, bwsim_isa::pool::threads(n), |_, c| {
        f(c).map_err(|e| format!("bwsim run {}\n{e}", c.label()))
    })
    .into_iter()
    .filter_map(Result::err)
    .collect();
    eprintln!(
        "{name}: {n} configurations, {} failed, {:.1} s",
        failures.len(),
        t.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{name}: {} of {n} configurations failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Constant lists: (name, values).
pub type Axes<'a> = &'a [(&'a str, &'a [&'a str])];

/// The cartesian product of constant lists applied to `base`.
pub fn grid(base: Case, axes: Axes) -> Vec<Case> {
    grid_of(vec![base], axes)
}

/// The cartesian product of constant lists applied to each of `cases` (the first axis
/// outermost).
pub fn grid_of(cases: Vec<Case>, axes: Axes) -> Vec<Case> {
    let mut out = cases;
    for (name, values) in axes {
        out = each(out, values, |c, v| c.c(name, v));
    }
    out
}

/// Each of `cases` once per value of `values` (innermost), set by `set`.
pub fn each<V: Copy>(cases: Vec<Case>, values: &[V], set: impl Fn(Case, V) -> Case) -> Vec<Case> {
    let mut out = Vec::with_capacity(cases.len() * values.len());
    for c in cases {
        for &v in values {
            out.push(set(c.clone(), v));
        }
    }
    out
}

/// Each of `cases` on sm_100a and on sm_90a.
pub fn on_both_targets(cases: Vec<Case>) -> Vec<Case> {
    each(cases, &["sm_100a", "sm_90a"], Case::target)
}

/// Each of `cases` once per pair of `values`, as the constants `names`.
pub fn paired(cases: Vec<Case>, names: (&str, &str), values: &[(u32, u32)]) -> Vec<Case> {
    each(cases, values, |c, (a, b)| c.c(names.0, a).c(names.1, b))
}

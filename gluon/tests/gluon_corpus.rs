//! The Gluon fixture corpus, one test per (Triton version, fixture): every
//! `tests/gluon/VERSION/NAME.TARGET.ttgir` is a test named `VERSION/NAME.TARGET`
//! (`cargo test -p bwsim-gluon --test gluon_corpus -- 3.9/` runs one version's; the older
//! releases' are ignored unless `BWSIM_FULL=1`, the full tier), in the style of
//! Cranelift's filetests and rustc's ui tests: what a fixture expects is written in its launch
//! sidecar (`NAME.launch`, next to the TTGIR or in tests/gluon/) as header directives, read by
//! the one directive parser (`bwsim_testkit::directives`):
//!
//! ```text
//! // run: reference [NAME]            outputs equal the CPU reference (bwsim_kernels::reference)
//!                                     of NAME, by default the kernel's declared name
//! // run: twin NAME [CONST=V ...]     outputs equal, bit for bit, those of the bundled `.tile`
//!                                     kernel NAME (kernels/tiles) from the same inputs, its
//!                                     constants overridden at the small shapes; its launch
//!                                     equals the sidecar's by name
//! // run: error CODE [at F:L]         `bwsim run` reports CODE (a deadlock, a tx-mismatch), its
//!                                     primary label at Python file F, line L
//! // check: clean                     `bwsim check` finds nothing
//! // expect: CODE [at F:L] [with F:L ...]
//!                                     `bwsim check` reports CODE: some finding of it has its
//!                                     primary label at F:L (F: a Python file, by name) and a
//!                                     label at each `with` place; several allowed
//! // check: expected                  ... and reports no other error code
//! // allow: CODE ...                  with `check: expected`: codes that may also be reported
//! // catalogue: NAME                  every code the checker reports on the catalogue's
//!                                     tests/fail/NAME.tile is reported here too
//! // snapshot: NAME                   the rendered findings equal traces/gluon/NAME.snap
//! // refused: CODE TEXT               the import fails with an error CODE whose message
//!                                     contains TEXT (an operation the importer does not read
//!                                     yet); every import error must be listed. Nothing else
//!                                     runs
//! // versions: 3.8+                   the versions whose folder holds the fixture (checked)
//! // shapes: NAME=VALUE ...           smaller launch values by name (the grid, a scalar
//!                                     argument, a tensor's shape) for the default runs
//! // runs: N / schedules: N           the default number of runs / checker schedules
//! // gpu: atol=A rtol=R               read by `bwsim gpu` (its GPU comparison), not here
//! // ptx: CODE TEXT                   the PTX backend refuses it (tests/gluon_cli.rs), not here
//! ```
//!
//! Any directive may carry qualifiers, `// expect [3.8+ sm_90a]: ...`: Triton versions (`3.7`,
//! `3.8+`, `3.6-3.7`) and targets (`sm_100a`, `sm_90a`); it applies to the fixtures that match
//! one of its versions (if it names any) and one of its targets (if it names any).
//!
//! Defaults: 2 runs (seeds 0 and 1) and 4 checker schedules (8 with `expect:`), at the `shapes:`.
//! `BWSIM_GLUON_SCHEDULES=N` sets both to N and uses the sidecars' full launches (the full run:
//! `BWSIM_GLUON_SCHEDULES=200 cargo test --release -p bwsim-gluon --test gluon_corpus`);
//! snapshots are compared at the default count only. `BWSIM_BLESS=1` rewrites the snapshots
//! from what the checker reports; `BWSIM_GLUON_TIMES=1` prints each test's time.
//!
//! Besides the fixtures, the test `corpus_layout` checks the folders: one per supported
//! version, and each fixture present in exactly the versions its `versions:` names; and one
//! test per version, `VERSION/regenerate`, regenerates that version's TTGIR with its Triton
//! (tests/gluon/regenerate.sh) into a temporary directory and fails on any difference from the
//! checked-in folder (the set of files, each byte for byte). It needs Triton, so it runs only
//! with `BWSIM_GLUON_REGEN=1` (every version) or `BWSIM_GLUON_REGEN=3.9.0` (one, e.g. with
//! `BWSIM_TRITON_PYTHON`, the Python that has it); otherwise it says why it did not run.

mod common;

use bwsim_gluon::version::Version;
use bwsim_isa::consts::Override;
use bwsim_isa::launch::{self, ArgValue, HostTensor, LaunchPlan};
use bwsim_isa::limits::Limits;
use bwsim_isa::typeck::Checked;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{diag, Diagnostic, Kernel, SourceFile, Target};
use bwsim_sim::check;
use bwsim_sim::{Outcome, RunOptions};
use bwsim_testkit::directives::{self, Directive};
use common::{env_schedules, error_codes, explore};
use libtest_mimic::{Arguments, Failed, Trial};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The corpus, relative to the repository root (the tests run from there, so paths print as
/// `bwsim check tests/gluon/3.9/NAME.ttgir` prints them).
const CORPUS: &str = "tests/gluon";
/// Where the snapshots of rendered findings live.
const SNAPSHOTS: &str = "traces/gluon";

/// The sidecars' directive keys.
const KEYS: &[&str] = directives::GLUON_KEYS;

type Res = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// A Triton release line, `3.8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Minor(u32, u32);

impl Minor {
    fn parse(s: &str) -> Option<Minor> {
        directives::release(s).map(|(a, b)| Minor(a, b))
    }
}

impl std::fmt::Display for Minor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

/// `3.8`, `3.8+`, `3.6-3.7`.
#[derive(Clone, Copy, Debug)]
struct Versions(Minor, Option<Minor>);

impl Versions {
    fn parse(s: &str) -> Option<Versions> {
        let (lo, hi) = directives::versions(s)?;
        Some(Versions(Minor(lo.0, lo.1), hi.map(|h| Minor(h.0, h.1))))
    }

    fn contains(self, v: Minor) -> bool {
        v >= self.0 && self.1.is_none_or(|hi| v <= hi)
    }
}

/// Whether a directive applies to a fixture of `version` and `target` (the one qualifier rule,
/// `Directive::applies_to`: a qualifier that is neither a version selector nor a target is an
/// error).
fn applies(d: &Directive, version: Minor, target: Target) -> Result<bool, String> {
    d.applies_to((version.0, version.1), target.name())
}

/// A Python place, `planted_bugs.py:45`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Place {
    file: String,
    line: usize,
}

impl Place {
    fn parse(s: &str) -> Result<Place, String> {
        let (file, line) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("`{s}` is not FILE:LINE"))?;
        Ok(Place {
            file: file.to_string(),
            line: line.parse().map_err(|_| format!("`{s}` is not FILE:LINE"))?,
        })
    }

    /// Whether a diagnostic label in `file` (a path as the source map prints it) at `line` is
    /// this place: the same line, and the file's name (or, for a place with a `/`, its path's
    /// tail) equal.
    fn is(&self, file: &str, line: usize) -> bool {
        let tail = if self.file.contains('/') {
            file.ends_with(&format!("/{}", self.file)) || file == self.file
        } else {
            Path::new(file).file_name().is_some_and(|n| *n == *self.file)
        };
        tail && line == self.line
    }
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// `CODE [at F:L] [with F:L ...]`.
#[derive(Clone, Debug)]
struct Expect {
    code: String,
    at: Option<Place>,
    with: Vec<Place>,
}

impl Expect {
    fn parse(s: &str) -> Result<Expect, String> {
        let mut words = s.split_whitespace();
        let code = words.next().ok_or("`expect:` needs a code")?.to_string();
        let (mut at, mut with) = (None, Vec::new());
        while let Some(w) = words.next() {
            let place = Place::parse(words.next().ok_or_else(|| format!("`{w}` needs FILE:LINE"))?)?;
            match w {
                "at" if at.is_none() => at = Some(place),
                "with" => with.push(place),
                _ => return Err(format!("`expect: {s}`: expected `at F:L` then `with F:L`s")),
            }
        }
        Ok(Expect { code, at, with })
    }
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.code)?;
        if let Some(a) = &self.at {
            write!(f, " at {a}")?;
        }
        for w in &self.with {
            write!(f, " with {w}")?;
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
enum Run {
    Reference(Option<String>),
    Twin {
        name: String,
        consts: Vec<Override>,
    },
    /// `error CODE [at F:L]`: the code, and the Python line of the error's primary label.
    Error(String, Option<Place>),
}

/// What a fixture expects: its sidecar's directives that apply to its version and target.
#[derive(Clone, Debug, Default)]
struct Spec {
    runs: Vec<Run>,
    clean: bool,
    closed: bool,
    expects: Vec<Expect>,
    allow: BTreeSet<String>,
    catalogue: Vec<String>,
    snapshot: Option<String>,
    refused: Vec<(String, String)>,
    versions: Option<Versions>,
    shapes: Vec<(String, String)>,
    run_count: Option<u64>,
    schedules: Option<u64>,
}

impl Spec {
    fn parse(text: &str, version: Minor, target: Target) -> Result<Spec, String> {
        let ds = directives::parse(text, KEYS, true).map_err(|e| e.to_string())?;
        let mut s = Spec::default();
        for d in &ds {
            let v = d.value.as_str();
            let at = |e: String| format!("line {}: {e}", d.line);
            // `versions:` says where the file is, whatever the fixture's version.
            if d.key == "versions" {
                s.versions =
                    Some(Versions::parse(v).ok_or_else(|| at(format!("`{v}` is not a version range")))?);
                continue;
            }
            if !applies(d, version, target)? {
                continue;
            }
            match d.key.as_str() {
                "run" => {
                    let mut w = v.split_whitespace();
                    s.runs.push(match (w.next(), w.next()) {
                        (Some("reference"), name) => Run::Reference(name.map(String::from)),
                        (Some("twin"), Some(name)) => Run::Twin {
                            name: name.to_string(),
                            consts: w
                                .map(|c| Override::parse(c).map_err(|e| at(format!("`{c}`: {e:?}"))))
                                .collect::<Result<_, _>>()?,
                        },
                        (Some("error"), Some(_)) => {
                            let e = Expect::parse(&v["error".len()..]).map_err(at)?;
                            if !e.with.is_empty() {
                                return Err(at(format!("`run: {v}`: error CODE [at F:L]")));
                            }
                            Run::Error(e.code, e.at)
                        }
                        _ => {
                            return Err(at(format!(
                                "`run: {v}`: reference [NAME], twin NAME or error CODE"
                            )))
                        }
                    });
                }
                "check" if v == "clean" => s.clean = true,
                "check" if v == "expected" => s.closed = true,
                "check" => return Err(at(format!("`check: {v}`: `clean` or `expected`"))),
                "expect" => s.expects.push(Expect::parse(v).map_err(at)?),
                "allow" => s.allow.extend(v.split_whitespace().map(String::from)),
                "catalogue" => s.catalogue.push(v.to_string()),
                "snapshot" => s.snapshot = Some(v.to_string()),
                "refused" => {
                    let (code, text) = v
                        .split_once(' ')
                        .ok_or_else(|| at("`refused: CODE TEXT`".into()))?;
                    s.refused.push((code.to_string(), text.trim().to_string()));
                }
                "shapes" => s.shapes.extend(bwsim_testkit::shapes::shape_list(v).map_err(at)?),
                "runs" => s.run_count = Some(v.parse().map_err(|_| at(format!("`runs: {v}`")))?),
                "schedules" => s.schedules = Some(v.parse().map_err(|_| at(format!("`schedules: {v}`")))?),
                // The GPU comparison's tolerance (`bwsim gpu`) and the PTX backend's refusal
                // (tests/gluon_cli.rs), not this test's.
                "gpu" | "ptx" => {}
                _ => unreachable!("a known key"),
            }
        }
        if s.refused.is_empty() && s.runs.is_empty() && !s.clean && s.expects.is_empty() {
            return Err("no directive says what to test (run:, check:, expect: or refused:)".into());
        }
        if s.clean && !s.expects.is_empty() {
            return Err("`check: clean` and `expect:` both apply".into());
        }
        if s.closed && s.expects.is_empty() {
            return Err("`check: expected` without `expect:`".into());
        }
        Ok(s)
    }
}

/// One (version, fixture) test.
#[derive(Clone, Debug)]
struct Fixture {
    version: Minor,
    /// `bug_ws_add_fixed.sm_100a`.
    stem: String,
    target: Target,
    ttgir: PathBuf,
    sidecar: Option<PathBuf>,
}

impl Fixture {
    fn test_name(&self) -> String {
        format!("{}/{}", self.version, self.stem)
    }
}

fn render(d: &[Diagnostic], file: &SourceFile) -> String {
    diag::render(d, file)
}

fn run_fixture(f: &Fixture) -> Res {
    let sidecar = f
        .sidecar
        .as_ref()
        .ok_or("no launch sidecar (NAME.launch) with its directives")?;
    let side_text = std::fs::read_to_string(sidecar).map_err(|e| format!("{}: {e}", sidecar.display()))?;
    let spec =
        Spec::parse(&side_text, f.version, f.target).map_err(|e| format!("{}: {e}", sidecar.display()))?;
    if let Some(vs) = spec.versions {
        ensure!(
            vs.contains(f.version),
            "{}: `versions:` leaves out {}",
            sidecar.display(),
            f.version
        );
    }
    let full = env_schedules();
    let launch_text = if full.is_some() {
        side_text.clone()
    } else {
        bwsim_testkit::shapes::apply_shapes(&side_text, &spec.shapes)
            .map_err(|e| format!("{}: {e}", sidecar.display()))?
    };
    let text = std::fs::read_to_string(&f.ttgir).map_err(|e| e.to_string())?;
    let name = f.ttgir.display().to_string();
    let l = bwsim_gluon::import_text(
        &name,
        &text,
        f.ttgir.parent(),
        Some((sidecar.display().to_string(), launch_text)),
    );
    let file = l.source;
    // The file is read as the release whose folder it is in.
    let read_as = l.version.as_ref().map(|d| d.version.minor());
    ensure!(
        read_as == Some(&*f.version.to_string()),
        "read as Triton {read_as:?}, not {}",
        f.version
    );
    if !spec.refused.is_empty() {
        return refused(&spec, l.kernel, &file);
    }
    let k = l
        .kernel
        .map_err(|d| format!("does not import:\n{}", render(&d, &file)))?;
    round_trips(&k)?;
    let runs = full.or(spec.run_count).unwrap_or(2);
    for r in &spec.runs {
        match r {
            Run::Reference(name) => against_reference(&k, f.target, &file, name.as_deref(), runs)?,
            Run::Twin { name, consts } => {
                against_twin(&k, f.target, &file, name, consts, full.is_some(), runs)?
            }
            Run::Error(code, at) => run_reports(&k, f.target, &file, code, at.as_ref(), runs)?,
        }
    }
    if spec.clean || !spec.expects.is_empty() {
        let default = if spec.expects.is_empty() { 4 } else { 8 };
        let schedules = full.or(spec.schedules).unwrap_or(default);
        check_findings(&spec, &k, f.target, &file, schedules, full.is_none())?;
    }
    Ok(())
}

/// Every import error is a refusal the sidecar states, and every stated refusal is reported.
fn refused(spec: &Spec, kernel: Result<Kernel, Vec<Diagnostic>>, file: &SourceFile) -> Res {
    let d = match kernel {
        Ok(_) => {
            return Err(format!(
                "imports, but the sidecar says it is refused ({:?}): the importer has learnt it; replace `refused:` by what it should do",
                spec.refused
            ))
        }
        Err(d) => d,
    };
    let r = render(&d, file);
    let matches = |(code, text): &(String, String), e: &Diagnostic| {
        e.code == *code && e.message.contains(text.as_str())
    };
    for want in &spec.refused {
        ensure!(
            d.iter().any(|e| matches(want, e)),
            "no `{}` error naming `{}`:\n{r}",
            want.0,
            want.1
        );
    }
    for e in d.iter().filter(|e| e.is_error()) {
        ensure!(
            spec.refused.iter().any(|w| matches(w, e)),
            "an import error the sidecar does not state:\n{r}"
        );
    }
    Ok(())
}

/// The imported kernel prints as `.tile` text that parses back to the same kernel and verifies.
fn round_trips(k: &Kernel) -> Res {
    let text = bwsim_isa::print(k);
    let back = bwsim_isa::parser::parse(&text).map_err(|d| {
        format!(
            "prints unparsable text:\n{}",
            render(&d, &SourceFile::new("p.tile", text.clone()))
        )
    })?;
    ensure!(back == *k, "parse(print(import)) != import");
    // (tma_dtype_race has an error the simulation goes past: verify::CONTINUES.)
    let (c, d) = bwsim_isa::verify::verify_to_run(&back, &VerifyOptions::default());
    ensure!(
        c.is_some(),
        "the printed kernel does not verify:\n{}",
        render(&d, &SourceFile::new("p.tile", text))
    );
    Ok(())
}

fn checked<'k>(
    k: &'k Kernel,
    target: Target,
    file: &SourceFile,
    overrides: &[Override],
) -> Result<(Checked<'k>, LaunchPlan), String> {
    let (c, d) = verify(
        k,
        &VerifyOptions {
            target: Some(target),
            overrides: overrides.to_vec(),
        },
    );
    let c = c.ok_or_else(|| format!("{} does not verify:\n{}", k.name.name, render(&d, file)))?;
    let l = k.launch.as_ref().ok_or("no launch section")?;
    let plan = launch::resolve(&c, l).map_err(|d| format!("launch:\n{}", render(&d, file)))?;
    Ok((c, plan))
}

fn run_opts(seed: u64) -> RunOptions {
    RunOptions {
        seed,
        trace: false,
        ..RunOptions::default()
    }
}

/// A completed run without diagnostics.
fn clean_run(r: &bwsim_sim::RunResult, what: &str, file: &SourceFile) -> Res {
    ensure!(
        r.outcome == Outcome::Completed && r.diagnostics.is_empty(),
        "{what}: {:?}\n{}",
        r.outcome,
        render(&r.diagnostics, file)
    );
    Ok(())
}

/// `runs` runs of the sidecar launch, each equal to the CPU reference's result on its inputs.
fn against_reference(k: &Kernel, target: Target, file: &SourceFile, name: Option<&str>, runs: u64) -> Res {
    let name = name.unwrap_or(&k.name.name);
    let (c, plan) = checked(k, target, file, &[])?;
    for seed in 0..runs {
        let inputs = launch::materialize(&plan, 1000 + seed).map_err(|e| format!("{e:?}"))?;
        let expected = bwsim_kernels::reference::reference(name, &plan, &inputs)
            .ok_or_else(|| format!("no CPU reference named `{name}`"))?
            .map_err(|e| format!("reference `{name}`: {e}"))?;
        ensure!(!expected.is_empty(), "reference `{name}` checks no output");
        let r = bwsim_sim::run(&c, &plan, inputs, &run_opts(seed));
        clean_run(&r, &format!("seed {seed}"), file)?;
        for e in &expected {
            let got = r
                .tensor(&e.tensor)
                .ok_or_else(|| format!("no output `{}`", e.tensor))?;
            let cmp = bwsim_kernels::reference::compare(got, e);
            ensure!(
                cmp.passed(),
                "seed {seed}, against the CPU reference `{name}`: {cmp:?}"
            );
        }
    }
    Ok(())
}

/// A plan's arguments with tensors named, so plans with different tensor lists compare.
fn named_args(plan: &LaunchPlan) -> Vec<(String, String)> {
    plan.args
        .iter()
        .map(|(n, a)| {
            let v = match a {
                ArgValue::Tensor(i) => format!("tensor {}", plan.tensors[*i].name),
                other => format!("{other:?}"),
            };
            (n.clone(), v)
        })
        .collect()
}

/// The sidecar's launch is the twin's, by name: grid, cluster, every argument the sidecar gives,
/// every tensor (dtype, shape, initialiser), the outputs.
fn same_launch(i: &LaunchPlan, t: &LaunchPlan) -> Res {
    ensure!(i.grid == t.grid, "grid {:?}, the twin's {:?}", i.grid, t.grid);
    ensure!(
        i.cluster == t.cluster,
        "cluster {:?}, the twin's {:?}",
        i.cluster,
        t.cluster
    );
    let twin_args = named_args(t);
    for a in named_args(i) {
        ensure!(twin_args.contains(&a), "argument {a:?} is not the twin's");
    }
    for x in &i.tensors {
        let b = t
            .tensor(&x.name)
            .map(|j| &t.tensors[j])
            .ok_or_else(|| format!("the twin has no tensor `{}`", x.name))?;
        ensure!(
            (x.dtype, &x.shape, &x.init) == (b.dtype, &b.shape, &b.init),
            "tensor `{}`: {:?}, the twin's {:?}",
            x.name,
            (x.dtype, &x.shape, &x.init),
            (b.dtype, &b.shape, &b.init)
        );
    }
    let names =
        |p: &LaunchPlan| -> Vec<String> { p.outputs.iter().map(|&j| p.tensors[j].name.clone()).collect() };
    ensure!(
        names(i) == names(t),
        "outputs {:?}, the twin's {:?}",
        names(i),
        names(t)
    );
    Ok(())
}

/// The imported kernel and its bundled `.tile` twin from the same inputs: the same outputs, bit
/// for bit, over `runs` schedules; the first run's also equal to the CPU reference.
fn against_twin(
    k: &Kernel,
    target: Target,
    file: &SourceFile,
    twin: &str,
    consts: &[Override],
    full: bool,
    runs: u64,
) -> Res {
    let src = bwsim_kernels::find(twin)
        .ok_or_else(|| format!("no bundled kernel `{twin}`"))?
        .source;
    let tk = bwsim_isa::parser::parse(src).map_err(|_| format!("{twin}.tile does not parse"))?;
    let tfile = SourceFile::new(format!("{twin}.tile"), src);
    let consts = if full { &[][..] } else { consts };
    let (ct, tplan) = checked(&tk, target, &tfile, consts)?;
    let (ci, iplan) = checked(k, target, file, &[])?;
    same_launch(&iplan, &tplan).map_err(|e| format!("against the twin `{twin}`: {e}"))?;
    // The imported kernel's parameters bound to the twin's values of the same names.
    let rplan = LaunchPlan {
        args: iplan
            .args
            .iter()
            .map(|(n, _)| {
                tplan
                    .args
                    .iter()
                    .find(|(m, _)| m == n)
                    .cloned()
                    .ok_or_else(|| format!("the twin has no parameter `{n}`"))
            })
            .collect::<Result<_, _>>()?,
        ..tplan.clone()
    };
    let outputs = |r: &bwsim_sim::RunResult| -> Vec<HostTensor> {
        tplan.outputs.iter().map(|&i| r.tensors[i].clone()).collect()
    };
    for seed in 0..runs {
        let inputs = launch::materialize(&tplan, 1000 + seed).map_err(|e| format!("{e:?}"))?;
        let rt = bwsim_sim::run(&ct, &tplan, inputs.clone(), &run_opts(seed));
        let ri = bwsim_sim::run(&ci, &rplan, inputs.clone(), &run_opts(seed));
        clean_run(&rt, &format!("the twin, seed {seed}"), &tfile)?;
        clean_run(&ri, &format!("seed {seed}"), file)?;
        if seed == 0 {
            let expected = bwsim_kernels::reference::reference(twin, &tplan, &inputs)
                .ok_or_else(|| format!("no CPU reference named `{twin}`"))?
                .map_err(|e| format!("reference `{twin}`: {e}"))?;
            for e in &expected {
                let got = ri
                    .tensor(&e.tensor)
                    .ok_or_else(|| format!("no output `{}`", e.tensor))?;
                let cmp = bwsim_kernels::reference::compare(got, e);
                ensure!(cmp.passed(), "against the CPU reference: {cmp:?}");
            }
        }
        for (t, i) in outputs(&rt).iter().zip(&outputs(&ri)) {
            ensure!(
                (t.dtype, &t.shape) == (i.dtype, &i.shape),
                "`{}`: dtype or shape differ",
                t.name
            );
            let n = t.numel();
            let differ = (0..n).filter(|&j| t.get_bits(j) != i.get_bits(j)).count();
            ensure!(
                differ == 0,
                "seed {seed}: {differ} of {n} elements of `{}` differ from the twin's",
                t.name
            );
        }
    }
    Ok(())
}

/// `bwsim run` of the sidecar launch reports `code` in each of `runs` schedules.
fn run_reports(
    k: &Kernel,
    target: Target,
    file: &SourceFile,
    code: &str,
    at: Option<&Place>,
    runs: u64,
) -> Res {
    let (c, plan) = checked(k, target, file, &[])?;
    for seed in 0..runs {
        let inputs = launch::materialize(&plan, seed).map_err(|e| format!("{e:?}"))?;
        let r = bwsim_sim::run(&c, &plan, inputs, &run_opts(seed));
        ensure!(
            r.diagnostics.iter().any(|d| d.is_error() && d.code == code),
            "seed {seed}: the run reports no `{code}` ({:?}):\n{}",
            r.outcome,
            render(&r.diagnostics, file)
        );
        if let Some(at) = at {
            ensure!(
                r.diagnostics
                    .iter()
                    .filter(|d| d.is_error() && d.code == code)
                    .any(|d| places(d, file).first().is_some_and(|(f, l)| at.is(f, *l))),
                "seed {seed}: no `{code}` at {at}:\n{}",
                render(&r.diagnostics, file)
            );
        }
        if code == "deadlock" {
            ensure!(r.outcome == Outcome::Deadlock, "seed {seed}: {:?}", r.outcome);
        }
    }
    Ok(())
}

/// Every (file, line) a diagnostic's labels point at, the primary first.
fn places(d: &Diagnostic, file: &SourceFile) -> Vec<(String, usize)> {
    std::iter::once(&d.primary)
        .chain(&d.labels)
        .map(|l| {
            (
                file.file_name_of(l.span).to_string(),
                file.line_col(l.span.start as usize).0,
            )
        })
        .collect()
}

/// The checker, as `bwsim check FILE.ttgir` runs it, over `schedules` schedules.
fn check_findings(
    spec: &Spec,
    k: &Kernel,
    target: Target,
    file: &SourceFile,
    schedules: u64,
    default_count: bool,
) -> Res {
    let p = check::prepare_kernel(k, &[], Some(target), Limits::default())
        .map_err(|d| format!("the checker's setup:\n{}", render(&d, file)))?;
    let e = explore(&p, schedules);
    ensure!(
        e.schedules == schedules,
        "{} of {schedules} schedules explored",
        e.schedules
    );
    let rendered = {
        let d: Vec<_> = e
            .findings
            .iter()
            .map(|f| check::annotate(f, &file.name, None))
            .collect();
        render(&d, file)
    };
    if spec.clean {
        ensure!(e.findings.is_empty(), "over {schedules} schedules:\n{rendered}");
        return Ok(());
    }
    let found = error_codes(&e);
    for x in &spec.expects {
        let hit = e.findings.iter().any(|f| {
            let p = places(&f.diagnostic, file);
            f.diagnostic.code == x.code
                && x.at.as_ref().is_none_or(|a| a.is(&p[0].0, p[0].1))
                && x.with.iter().all(|w| p.iter().any(|(n, l)| w.is(n, *l)))
        });
        ensure!(hit, "no finding `{x}` over {schedules} schedules:\n{rendered}");
    }
    if spec.closed {
        let allowed: BTreeSet<&str> = spec
            .expects
            .iter()
            .map(|x| x.code.as_str())
            .chain(spec.allow.iter().map(String::as_str))
            .collect();
        let unexpected: Vec<_> = found.iter().filter(|c| !allowed.contains(c.as_str())).collect();
        ensure!(unexpected.is_empty(), "unexpected {unexpected:?}:\n{rendered}");
    }
    for name in &spec.catalogue {
        let path = format!("tests/fail/{name}.tile");
        let src = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        let tp = check::prepare(&src, &[], Some(target)).map_err(|d| {
            format!(
                "{path}:\n{}",
                render(&d, &SourceFile::new(path.clone(), src.clone()))
            )
        })?;
        let twin = error_codes(&explore(&tp, schedules));
        ensure!(
            twin.is_subset(&found),
            "the catalogue's {name} reports {twin:?}, this fixture {found:?}"
        );
    }
    if let (Some(name), true) = (&spec.snapshot, default_count) {
        snapshot(name, &file.name, &rendered)?;
    }
    Ok(())
}

/// Compare with (or, with `BWSIM_BLESS=1`, write) traces/gluon/NAME.snap, in insta's format.
fn snapshot(name: &str, fixture: &str, rendered: &str) -> Res {
    let path = PathBuf::from(SNAPSHOTS).join(format!("{name}.snap"));
    let old = std::fs::read_to_string(&path).ok();
    let body = |s: &str| -> String {
        // insta's header: `---`, metadata, `---`; then the snapshot.
        let mut parts = s.splitn(3, "---\n");
        let (_, _, rest) = (parts.next(), parts.next(), parts.next());
        rest.unwrap_or("").trim_end().to_string()
    };
    if old.as_deref().map(body).as_deref() == Some(rendered.trim_end()) {
        return Ok(());
    }
    if std::env::var_os("BWSIM_BLESS").is_some() {
        let text = format!(
            "---\nsource: gluon/tests/gluon_corpus.rs\nexpression: \"bwsim check {fixture}\"\n---\n{}\n",
            rendered.trim_end()
        );
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("blessed {}", path.display());
        return Ok(());
    }
    let old = old.map(|o| body(&o)).unwrap_or_default();
    let first = old
        .lines()
        .zip(rendered.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(old.lines().count().min(rendered.lines().count()));
    Err(format!(
        "{} differs from the findings (first at line {}; BWSIM_BLESS=1 rewrites it):\n--- snapshot\n{old}\n+++ now\n{rendered}",
        path.display(),
        first + 1
    ))
}

/// Every fixture of every version folder.
fn fixtures() -> Vec<Fixture> {
    let mut v = Vec::new();
    for version in Version::all() {
        let minor = Minor::parse(version.minor()).expect("a release line");
        let dir = Path::new(CORPUS).join(version.minor());
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".ttgir") else {
                continue;
            };
            let target = stem
                .rsplit_once('.')
                .and_then(|(_, t)| Target::from_name(t))
                .unwrap_or(Target::Sm100a);
            v.push(Fixture {
                version: minor,
                stem: stem.to_string(),
                target,
                sidecar: bwsim_gluon::launch_path_for(&path),
                ttgir: path,
            });
        }
    }
    v.sort_by(|a, b| (a.version, &a.stem).cmp(&(b.version, &b.stem)));
    v
}

/// The folders: one per supported version, each with fixtures, nothing else version-like;
/// every fixture named `NAME.TARGET`; each in exactly the versions its `versions:` names; no
/// sidecar without a fixture.
fn corpus_layout(all: &[Fixture]) -> Res {
    let supported: BTreeSet<String> = Version::all().map(|v| v.minor().to_string()).collect();
    let mut folders = BTreeSet::new();
    for e in std::fs::read_dir(CORPUS)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok())
    {
        let n = e.file_name().to_string_lossy().into_owned();
        if e.path().is_dir() && Minor::parse(&n).is_some() {
            folders.insert(n);
        }
    }
    ensure!(
        folders == supported,
        "version folders {folders:?}, supported {supported:?}"
    );
    for v in &supported {
        let n = all.iter().filter(|f| f.version.to_string() == *v).count();
        ensure!(n >= 30, "{CORPUS}/{v}: {n} fixtures");
    }
    ensure!(
        !std::fs::read_dir(CORPUS)
            .map_err(|e| e.to_string())?
            .filter_map(|e| e.ok())
            .any(|e| e.path().extension().is_some_and(|x| x == "ttgir")),
        "TTGIR at the top of {CORPUS}: it belongs in a version folder"
    );
    let mut seen: BTreeMap<String, (BTreeSet<Minor>, Option<PathBuf>)> = BTreeMap::new();
    for f in all {
        ensure!(
            f.stem
                .rsplit_once('.')
                .and_then(|(_, t)| Target::from_name(t))
                .is_some(),
            "{}: not NAME.TARGET.ttgir",
            f.ttgir.display()
        );
        let e = seen.entry(f.stem.clone()).or_default();
        e.0.insert(f.version);
        e.1.clone_from(&f.sidecar);
    }
    // Every sidecar of the corpus is some fixture's (a fixture renamed leaves none behind).
    let used: BTreeSet<PathBuf> = all.iter().filter_map(|f| f.sidecar.clone()).collect();
    for e in std::fs::read_dir(CORPUS)
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok())
    {
        let p = Path::new(CORPUS).join(e.file_name());
        ensure!(
            p.extension().is_none_or(|x| x != "launch") || used.contains(&p),
            "{}: no fixture of any version uses it",
            p.display()
        );
    }
    let minors: Vec<Minor> = supported.iter().filter_map(|v| Minor::parse(v)).collect();
    for (stem, (versions, sidecar)) in &seen {
        let Some(sidecar) = sidecar else { continue };
        let text = std::fs::read_to_string(sidecar).map_err(|e| e.to_string())?;
        let ds = directives::parse(&text, KEYS, true).map_err(|e| format!("{}: {e}", sidecar.display()))?;
        let range = match directives::last(&ds, "versions") {
            Some(d) => Versions::parse(&d.value)
                .ok_or_else(|| format!("{}: `versions: {}`", sidecar.display(), d.value))?,
            None => Versions(minors[0], None),
        };
        let want: BTreeSet<Minor> = minors.iter().copied().filter(|m| range.contains(*m)).collect();
        ensure!(
            *versions == want,
            "{stem}: in {:?}, its sidecar's `versions:` says {:?}",
            versions.iter().map(Minor::to_string).collect::<Vec<_>>(),
            want.iter().map(Minor::to_string).collect::<Vec<_>>()
        );
    }
    Ok(())
}

/// The `.ttgir` files of a folder, by name.
fn ttgir_files(dir: &Path) -> Result<BTreeSet<String>, String> {
    Ok(std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ttgir"))
        .collect())
}

/// The differences between the checked-in folder and the regenerated one.
fn differences(have_dir: &Path, made_dir: &Path) -> Result<Vec<String>, String> {
    let (have, made) = (ttgir_files(have_dir)?, ttgir_files(made_dir)?);
    let mut differ = Vec::new();
    for n in have.difference(&made) {
        differ.push(format!("{n}: checked in, not regenerated"));
    }
    for n in made.difference(&have) {
        differ.push(format!("{n}: regenerated, not checked in"));
    }
    for name in have.intersection(&made) {
        let read = |d: &Path| std::fs::read_to_string(d.join(name)).map_err(|e| format!("{name}: {e}"));
        let (a, b) = (read(have_dir)?, read(made_dir)?);
        if a != b {
            let line = a
                .lines()
                .zip(b.lines())
                .position(|(x, y)| x != y)
                .map_or(a.lines().count().min(b.lines().count()) + 1, |i| i + 1);
            differ.push(format!("{name}: first difference at line {line}"));
        }
    }
    Ok(differ)
}

/// `VERSION/regenerate`: the version's TTGIR regenerated by its Triton equals the checked-in
/// folder, when `BWSIM_GLUON_REGEN` asks for this version (`1`, `all`, or its release).
fn regenerate(v: Version) -> Res {
    let release = v.tested_release();
    let Some(wanted) = std::env::var_os("BWSIM_GLUON_REGEN") else {
        eprintln!(
            "{}/regenerate not run: regenerating the TTGIR needs Triton {release}; set \
             BWSIM_GLUON_REGEN=1 (every version) or ={release} to regenerate into a temporary \
             directory and compare",
            v.minor()
        );
        return Ok(());
    };
    let wanted = wanted.to_string_lossy();
    if wanted != "1" && wanted != "all" {
        let asked = Version::parse(&wanted).map_err(|e| format!("BWSIM_GLUON_REGEN={wanted}: {e}"))?;
        if asked != v {
            eprintln!("{}/regenerate not run: BWSIM_GLUON_REGEN={wanted}", v.minor());
            return Ok(());
        }
    }
    let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "bwsim-gluon-regen-{}-{}",
        v.minor(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&out);
    let status = Command::new("bash")
        .arg(Path::new(CORPUS).join("regenerate.sh"))
        .arg(release)
        .arg(&out)
        .status()
        .map_err(|e| format!("bash: {e}"))?;
    let differ = if status.success() {
        differences(&Path::new(CORPUS).join(v.minor()), &out)
    } else {
        Err(format!(
            "tests/gluon/regenerate.sh {release} failed (see its output above)"
        ))
    };
    let _ = std::fs::remove_dir_all(&out);
    let differ = differ?;
    ensure!(
        differ.is_empty(),
        "the TTGIR regenerated by Triton {release} differs from {CORPUS}/{}:\n  {}",
        v.minor(),
        differ.join("\n  ")
    );
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    // Paths relative to the repository root, as the CLI prints them when run from there.
    std::env::set_current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("..")).expect("the repository root");
    let all = fixtures();
    let mut trials = vec![{
        let all = all.clone();
        Trial::test("corpus_layout", move || corpus_layout(&all).map_err(Failed::from))
    }];
    for v in Version::all() {
        trials.push(Trial::test(format!("{}/regenerate", v.minor()), move || {
            regenerate(v).map_err(Failed::from)
        }));
    }
    // The default tier runs the newest release's fixtures; the older releases' run in the full
    // tier (`BWSIM_FULL=1`, `bash scripts/test --full`) and show as ignored otherwise
    // (`-- --include-ignored` runs them too).
    let newest = Minor::parse(Version::newest().minor()).expect("the newest release line");
    let every_release = bwsim_testkit::full_tier();
    if !every_release {
        eprintln!("gluon_corpus: Triton {newest} only in the default tier; BWSIM_FULL=1 runs every release");
    }
    for f in all {
        let name = f.test_name();
        let older = f.version != newest;
        trials.push(
            Trial::test(name, move || {
                let t = std::time::Instant::now();
                let r = run_fixture(&f).map_err(Failed::from);
                if std::env::var_os("BWSIM_GLUON_TIMES").is_some() {
                    eprintln!("{:8.2}s {}", t.elapsed().as_secs_f64(), f.test_name());
                }
                r
            })
            .with_ignored_flag(older && !every_release),
        );
    }
    libtest_mimic::run(&args, trials).exit();
}

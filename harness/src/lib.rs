//! The differential harness: the one place where the simulator (`bwsim_sim`) and the GPU path
//! (`bwsim_backends`: PTX, ptxas, the cudarc runner) meet.
//!
//! For one [`cases::Case`] and a seed: verify the kernel for the target, resolve its launch,
//! draw random inputs (no tensor starts as zeros: a `zeros()` initialiser is replaced by
//! random data so that unwritten elements show), lower to PTX, assemble with ptxas (or leave
//! the PTX to the driver's JIT when ptxas is absent), build the launch job (tensor maps from
//! the descriptors' ABI, dynamic shared memory, grid), check the tensor maps against the rules
//! `cuTensorMapEncodeTiled` enforces, then run the simulator and the GPU (in a child process
//! with a watchdog) on identical inputs and compare every output element ([`compare`]).
//!
//! Without a GPU everything up to the launch still runs (`--dry-run` stops there on purpose),
//! and each case reports why it did not run instead of passing.

pub mod cases;
pub mod compare;
pub mod gluon;
pub mod npy;
pub mod ptxfile;

use bwsim_backends::ptx::{self, ParamAbi, PtxModule};
use bwsim_backends::ptxas;
use bwsim_backends::runner::{self, GpuInfo, GpuJob, JobArg, Outcome, TensorMeta};
use bwsim_isa::consts::Override;
use bwsim_isa::launch::{self, ArgValue, HostTensor, Init, LaunchPlan};
use bwsim_isa::types::{OobFill, Swizzle};
use bwsim_isa::Target;
use bwsim_sim::session::{Session, SetupError, Verify};
use cases::{Case, Check, Source};
use std::path::PathBuf;
use std::time::Duration;

/// How `bwsim gpu` runs.
#[derive(Clone, Debug)]
pub struct Options {
    pub seed: u64,
    /// Stop after preparing the launch (no simulator, no GPU).
    pub dry_run: bool,
    /// Watchdog per launch.
    pub timeout: Duration,
    /// Timed repetitions after the checked launch.
    pub timing_reps: u32,
    /// Run the simulator and compare (`false`: `--no-check`, the GPU alone, for timing
    /// full-size problems the simulator would take too long on).
    pub check: bool,
    /// The `bwsim` executable (re-invoked as the child).
    pub exe: PathBuf,
    /// Launch tensors replaced by the caller's arrays (`--input NAME=FILE.npy`) instead of the
    /// random draw.
    pub inputs: Vec<crate::npy::InputArg>,
    /// Where the GPU's output tensors are written as `.npy` once it finished
    /// (`--save-outputs DIR`).
    pub save_outputs: Option<PathBuf>,
}

/// The hidden subcommand the child runs under.
pub const CHILD_ARG: &str = "__gpu-child";

/// What is known about the local GPU.
#[derive(Clone, Debug)]
pub enum Gpu {
    Present(GpuInfo),
    /// No driver or no device: the reason.
    Absent(String),
}

impl Gpu {
    /// Probe in a child process (never in this one: a broken driver must not take the CLI
    /// down).
    pub fn probe(exe: &std::path::Path) -> Gpu {
        match runner::probe(exe, CHILD_ARG) {
            Ok(desc) => match GpuInfo::parse(&desc) {
                Some(i) => Gpu::Present(i),
                None => Gpu::Absent(format!("unrecognised device description `{desc}`")),
            },
            Err(e) => Gpu::Absent(e.to_string()),
        }
    }
}

/// The result of one case.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Outputs agree (or both trapped with the expected error).
    Pass,
    /// Outputs or traps disagree.
    Fail(String),
    /// Prepared up to the launch (`--dry-run`).
    Prepared,
    /// Ran on the GPU without the simulator (`--no-check`): finished, not compared.
    Unchecked,
    /// Not run, and why (no GPU, wrong architecture).
    Skipped(String),
    /// The harness could not get as far as a launch (verifier, lowering, ptxas, ABI).
    Error(String),
}

impl Verdict {
    pub fn label(&self) -> String {
        match self {
            Verdict::Pass => "pass".into(),
            Verdict::Fail(m) => format!("FAIL: {m}"),
            Verdict::Prepared => "prepared".into(),
            Verdict::Unchecked => "ran (not checked)".into(),
            Verdict::Skipped(m) => format!("skipped: {m}"),
            Verdict::Error(m) => format!("ERROR: {m}"),
        }
    }
}

/// One row of the table.
#[derive(Clone, Debug)]
pub struct Report {
    pub case: String,
    pub target: Option<Target>,
    pub verdict: Verdict,
    /// Largest |gpu - sim| over the outputs (when both finished).
    pub max_err: Option<f64>,
    /// Median GPU time of the timed repetitions (ms).
    pub gpu_ms: Option<f32>,
    /// Every timed repetition (ms, CUDA events), in launch order.
    pub times_ms: Vec<f32>,
    /// Details: first mismatching elements, setup notes.
    pub notes: Vec<String>,
}

impl Report {
    /// The row of `case` before anything ran: prepared, nothing measured.
    pub fn new(case: &str, target: Option<Target>) -> Report {
        Report {
            case: case.to_string(),
            target,
            verdict: Verdict::Prepared,
            max_err: None,
            gpu_ms: None,
            times_ms: vec![],
            notes: vec![],
        }
    }
}

/// The message a case without a GPU reports.
pub const NO_GPU: &str = "no CUDA driver/GPU found";

/// The launch spec with every `zeros()` tensor drawn at random instead.
pub fn never_zeros(mut plan: LaunchPlan) -> LaunchPlan {
    for t in &mut plan.tensors {
        if t.init == Init::Zeros {
            t.init = if t.dtype.is_float() {
                Init::Randn
            } else if t.dtype.is_signed_int() {
                Init::Randint(-64, 64)
            } else {
                Init::Randint(0, 64)
            };
        }
    }
    plan
}

/// The kernel parameters of `module` bound to the tensors and values of `plan`.
pub fn job_args(module: &PtxModule, plan: &LaunchPlan) -> Result<Vec<JobArg>, String> {
    let arg = |name: &str| -> Result<&ArgValue, String> {
        plan.args
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| format!("the launch spec binds nothing to parameter `{name}`"))
    };
    let tensor = |name: &str| -> Result<usize, String> {
        match arg(name)? {
            ArgValue::Tensor(t) => Ok(*t),
            other => Err(format!(
                "parameter `{name}` needs a tensor, the launch gives {other:?}"
            )),
        }
    };
    let mut out = Vec::new();
    for p in &module.params {
        out.push(match p {
            ParamAbi::Scalar { ir_name, ty, .. } => {
                let v = arg(ir_name)?;
                match (*ty, v) {
                    ("u32", ArgValue::Int(i)) => JobArg::U32(*i as u32),
                    ("u64", ArgValue::Int(i)) => JobArg::U64(*i as u64),
                    ("f32", ArgValue::Float(f)) => JobArg::F32(*f as f32),
                    ("f32", ArgValue::Int(i)) => JobArg::F32(*i as f32),
                    (t, v) => return Err(format!("parameter `{ir_name}` is .{t}, the launch gives {v:?}")),
                }
            }
            ParamAbi::Pointer { ir_name, .. } => JobArg::Ptr {
                tensor: tensor(ir_name)?,
            },
            ParamAbi::TensorMap {
                ir_name,
                box_dims,
                swizzle_bytes,
                oob,
                elem_strides,
                ..
            } => {
                let t = tensor(ir_name)?;
                let sw = Swizzle::from_bytes(*swizzle_bytes as i64)
                    .ok_or_else(|| format!("swizzle {swizzle_bytes}"))?;
                let fill = if *oob == "nan" {
                    OobFill::Nan
                } else {
                    OobFill::Zero
                };
                JobArg::tensor_map(t, box_dims.clone(), sw, fill).with_elem_strides(elem_strides.clone())
            }
            ParamAbi::DescShape { ir_name, dim, .. } => {
                let t = tensor(ir_name)?;
                let d = plan.tensors[t]
                    .shape
                    .get(*dim)
                    .copied()
                    .ok_or_else(|| format!("`{ir_name}` has no dimension {dim}"))?;
                JobArg::U32(
                    u32::try_from(d).map_err(|_| format!("dimension {d} of `{ir_name}` exceeds 32 bits"))?,
                )
            }
        });
    }
    Ok(out)
}

/// The rules `cuTensorMapEncodeTiled` enforces (docs/semantics.md#tensor-map-limits), checked on
/// the host so that a bad descriptor is reported with its parameter name before any launch.
pub fn check_tensor_maps(args: &[JobArg], plan: &LaunchPlan) -> Result<(), String> {
    for a in args {
        let JobArg::TensorMap {
            tensor,
            box_dims,
            swizzle,
            elem_strides,
            ..
        } = a
        else {
            continue;
        };
        let t = &plan.tensors[*tensor];
        let rank = t.shape.len();
        let es = t.dtype.bits() as u64;
        let name = &t.name;
        if !(1..=5).contains(&rank) || box_dims.len() != rank {
            return Err(format!("tensor map over `{name}`: rank {rank}, box {box_dims:?}"));
        }
        if elem_strides.len() > rank || elem_strides.iter().any(|s| !(1..=8).contains(s)) {
            return Err(format!(
                "tensor map over `{name}`: element strides {elem_strides:?} (one per dimension, each 1..=8)"
            ));
        }
        // Global strides (bytes) of dimensions 1.. (IR order is outermost first).
        let mut stride = es;
        for d in (1..rank).rev() {
            stride *= t.shape[d];
            let bytes = stride / 8;
            if !bytes.is_multiple_of(16) || bytes >= 1 << 40 {
                return Err(format!("tensor map over `{name}`: global stride of {bytes} bytes is not a multiple of 16 below 2^40"));
            }
        }
        if box_dims.iter().any(|&b| b == 0 || b > 256) {
            return Err(format!(
                "tensor map over `{name}`: box {box_dims:?} has a dimension outside 1..=256"
            ));
        }
        let inner = box_dims[rank - 1] as u64 * es / 8;
        if !inner.is_multiple_of(16) {
            return Err(format!(
                "tensor map over `{name}`: inner box of {inner} bytes is not a multiple of 16"
            ));
        }
        let span = match swizzle {
            runner::SwizzleArg::None => u64::MAX,
            runner::SwizzleArg::B32 => 32,
            runner::SwizzleArg::B64 => 64,
            runner::SwizzleArg::B128 => 128,
        };
        if inner > span {
            return Err(format!(
                "tensor map over `{name}`: inner box of {inner} bytes exceeds the {span}-byte swizzle"
            ));
        }
    }
    Ok(())
}

/// The launch job of a lowered kernel for a launch plan: its arguments bound and their tensor
/// maps checked, the grid, and the cluster shape when the entry needs one (`.explicitcluster`)
/// or the launch section gives one.
pub fn build_job(
    module: &PtxModule,
    plan: &LaunchPlan,
    cubin: Option<Vec<u8>>,
    timing_reps: u32,
) -> Result<GpuJob, String> {
    let args = job_args(module, plan)?;
    check_tensor_maps(&args, plan)?;
    Ok(GpuJob {
        ptx: module.text.clone(),
        cubin,
        entry: module.entry.clone(),
        grid: plan.grid,
        block: module.block_dim,
        cluster: (module.explicit_cluster || plan.cluster != [1, 1, 1]).then_some(plan.cluster),
        dynamic_smem: module.dynamic_smem_bytes,
        args,
        tensors: tensor_metas(plan),
        timing_reps,
        pattern_inputs: false,
    })
}

/// The launch's tensors as the runner's job lists them (buffer `k` is tensor `k`).
pub fn tensor_metas(plan: &LaunchPlan) -> Vec<TensorMeta> {
    plan.tensors
        .iter()
        .map(|t| TensorMeta {
            name: t.name.clone(),
            dtype: t.dtype,
            shape: t.shape.clone(),
        })
        .collect()
}

/// The cubin of `module` for the GPU, or `None` to leave the PTX to the driver's JIT: when
/// there is no ptxas, or (on a real run) when ptxas refuses it, as an older ptxas (the
/// device's own toolkit) may not know the PTX version; the driver then reports any real
/// error at module load. Either way a note says so. A dry run fails on a refusal.
pub fn assemble(module: &PtxModule, dry_run: bool, report: &mut Report) -> Result<Option<Vec<u8>>, String> {
    match ptxas::assemble(module, false) {
        Ok(a) => Ok(Some(a.cubin)),
        Err(ptxas::PtxasError::NotFound) => {
            report
                .notes
                .push("ptxas not found: the driver JIT-compiles the PTX".into());
            Ok(None)
        }
        Err(e @ ptxas::PtxasError::Rejected { .. }) if !dry_run => {
            // A ptxas too old for the PTX's `.version` (a device's own toolkit under a
            // compiler's newer PTX): the driver may be too old as well, so say what fixes it.
            let help = e.help().map(|h| format!(" ({h})")).unwrap_or_default();
            report
                .notes
                .push(format!("{e}: the driver JIT-compiles the PTX{help}"));
            Ok(None)
        }
        Err(e) => Err(format!("ptxas: {e}")),
    }
}

/// Writes the GPU's output tensors (those `plan` lists) into `--save-outputs`'s folder once
/// the launch finished.
pub fn save_gpu_outputs(opts: &Options, plan: &LaunchPlan, outcome: &Outcome) -> Result<(), String> {
    if let (Some(dir), Outcome::Finished { tensors, .. }) = (&opts.save_outputs, outcome) {
        let outs: Vec<HostTensor> = plan
            .outputs
            .iter()
            .filter_map(|&o| tensors.get(o).cloned())
            .collect();
        crate::npy::save_all(dir, &outs)?;
    }
    Ok(())
}

/// Elements of the random block a `--no-check` run repeats over each input on the device.
pub const PATTERN_ELEMS: u64 = 1 << 20;

/// The inputs of a timing run that skips the simulator (`--no-check`): per tensor, the first
/// `min(numel, PATTERN_ELEMS)` elements drawn as the launch spec says, which the runner repeats
/// over the full tensor on the device ([`GpuJob::pattern_inputs`]): full-size problems need
/// neither host memory nor transfers of their size.
pub fn pattern_inputs(plan: &LaunchPlan, seed: u64) -> Result<Vec<HostTensor>, String> {
    let mut small = plan.clone();
    for t in &mut small.tensors {
        let n = t.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d));
        t.shape = vec![n.min(PATTERN_ELEMS)];
    }
    draw_inputs(&small, seed)
}

fn source_text(case: &Case) -> Result<String, String> {
    match &case.source {
        Source::Bundled(n) => bwsim_kernels::find(n)
            .map(|k| k.source.to_string())
            .ok_or_else(|| format!("no bundled kernel `{n}`")),
        Source::Inline(s) => Ok(s.clone()),
        Source::Gluon(p) | Source::PlantedBug(p) => {
            let loaded = bwsim_gluon::load(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
            match loaded.kernel {
                Ok(k) => Ok(bwsim_isa::print(&k)),
                Err(d) => Err(format!("import: {}", first_message(&d))),
            }
        }
        Source::Ptx { ptx, .. } => Err(format!("{} is PTX: it has no tile source", ptx.display())),
    }
}

/// Run one case for `target` (prepare, then simulate and launch unless `dry_run` or no GPU).
pub fn run_case(case: &Case, target: Target, gpu: &Gpu, opts: &Options) -> Report {
    let mut report = Report::new(&case.name, Some(target));
    match run_inner(case, target, gpu, opts, &mut report) {
        Ok(v) => report.verdict = v,
        Err(e) => report.verdict = Verdict::Error(e),
    }
    report
}

fn run_inner(
    case: &Case,
    target: Target,
    gpu: &Gpu,
    opts: &Options,
    report: &mut Report,
) -> Result<Verdict, String> {
    if let Source::Ptx { ptx, launch } = &case.source {
        return ptxfile::run(case, (ptx, launch.as_deref()), target, gpu, opts, report);
    }
    let text = match (source_text(case), &case.source) {
        (Err(e), Source::Gluon(p) | Source::PlantedBug(p)) if gluon::refusal_is_expected(p, &e) => {
            return Ok(Verdict::Skipped(format!(
                "not imported yet (as its sidecar states): {e}"
            )));
        }
        (r, _) => r?,
    };
    let kernel = bwsim_isa::parser::parse(&text).map_err(|d| format!("parse: {}", first_message(&d)))?;
    let overrides = case
        .consts
        .iter()
        .map(|c| Override::parse(c))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    // Verifier errors whose hardware behaviour is defined (verify::CONTINUES: a TMA copy of
    // another element type, say) do not stop the case: the GPU runs it as the simulator does.
    let Session { checked, plan, .. } = match Session::new(&kernel, Some(target), &overrides, Verify::ToRun) {
        Ok(s) => {
            for d in s.continuing_errors() {
                report.notes.push(format!("verifier: {} [{}]", d.message, d.code));
            }
            s
        }
        Err(SetupError::NoLaunch { .. }) => return Err("the kernel has no launch section".into()),
        Err(SetupError::Launch(d)) => return Err(format!("launch: {}", first_message(&d))),
        Err(e) => return Err(format!("verifier: {}", first_message(&e.into_diagnostics()))),
    };
    let plan = never_zeros(plan);
    let mut inputs = if opts.check {
        draw_inputs(&plan, opts.seed)?
    } else {
        pattern_inputs(&plan, opts.seed)?
    };
    crate::npy::apply_inputs(&mut inputs, &opts.inputs)?;
    let module = match (ptx::lower(&checked), &case.source) {
        (Ok(m), _) => m,
        (Err(e), Source::Gluon(p) | Source::PlantedBug(p))
            if gluon::ptx_refusal_is_expected(p, &e.to_string()) =>
        {
            return Ok(Verdict::Skipped(format!(
                "not lowered to PTX yet (as its sidecar states): {e}"
            )));
        }
        (Err(e), _) => return Err(format!("lowering: {e}")),
    };
    let cubin = assemble(&module, opts.dry_run, report)?;
    let mut job = build_job(&module, &plan, cubin, opts.timing_reps)?;
    job.pattern_inputs = !opts.check;
    let planted = matches!(case.source, Source::PlantedBug(_));
    if let Some(v) = stops_before_launch(planted, target, &target.to_string(), gpu, opts) {
        return Ok(v);
    }
    if !opts.check {
        let outcome = runner::run_isolated(&opts.exe, CHILD_ARG, &job, &inputs, opts.timeout)
            .map_err(|e| e.to_string())?;
        return Ok(unchecked(case, outcome, report));
    }
    let sim = bwsim_sim::run(
        &checked,
        &plan,
        inputs.clone(),
        &bwsim_sim::RunOptions {
            seed: opts.seed,
            trace: false,
            ..Default::default()
        },
    );
    let outcome =
        runner::run_isolated(&opts.exe, CHILD_ARG, &job, &inputs, opts.timeout).map_err(|e| e.to_string())?;
    save_gpu_outputs(opts, &plan, &outcome)?;
    Ok(judge(case, &plan, &sim, outcome, report))
}

/// Where a prepared case stops short of its launch: a dry run (prepared), a planted bug, no
/// GPU, or a GPU that does not run `target` (skipped; `needs` says what the case needs).
pub(crate) fn stops_before_launch(
    planted: bool,
    target: Target,
    needs: &str,
    gpu: &Gpu,
    opts: &Options,
) -> Option<Verdict> {
    if opts.dry_run {
        return Some(Verdict::Prepared);
    }
    if planted {
        return Some(Verdict::Skipped(
            "planted bug: `bwsim check` reports it; a racy kernel has no one right answer on hardware".into(),
        ));
    }
    match gpu {
        Gpu::Absent(_) => Some(Verdict::Skipped(NO_GPU.into())),
        Gpu::Present(i) if i.target() != Some(target) => Some(Verdict::Skipped(format!(
            "needs {needs}; the local GPU is {} (sm_{})",
            i.name, i.sm
        ))),
        Gpu::Present(_) => None,
    }
}

/// The GPU's outcome alone (`--no-check`): a finished launch is `Unchecked` with its times; a
/// planted fault must still trap with its error.
pub(crate) fn unchecked(case: &Case, gpu: Outcome, report: &mut Report) -> Verdict {
    match gpu {
        Outcome::Hang { after } => Verdict::Fail(format!("hang: no completion after {} s", after.as_secs())),
        Outcome::Crashed { stderr } => Verdict::Fail(format!("child crashed: {stderr}")),
        Outcome::Setup { stage, error } => Verdict::Error(format!("{stage}: {error}")),
        Outcome::Trap { error, code, .. } => match case.check {
            Check::Trap(want) if want == code => Verdict::Unchecked,
            _ => Verdict::Fail(format!("GPU trap: {error} ({code})")),
        },
        Outcome::Finished { times_ms, .. } => {
            report.gpu_ms = median(&times_ms);
            report.times_ms = times_ms;
            match case.check {
                Check::Trap(want) => Verdict::Fail(format!("expected {want}; the GPU finished")),
                _ => Verdict::Unchecked,
            }
        }
    }
}

pub(crate) fn first_message(d: &[bwsim_isa::Diagnostic]) -> String {
    d.iter()
        .find(|d| d.is_error())
        .or(d.first())
        .map(|d| format!("[{}] {}", d.code, d.message))
        .unwrap_or_default()
}

/// The CUresult name of a simulated trap.
fn sim_trap_code(t: &bwsim_sim::Trap) -> &'static str {
    use bwsim_sim::CudaError::*;
    match t.error {
        IllegalInstruction => "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        MisalignedAddress => "CUDA_ERROR_MISALIGNED_ADDRESS",
        IllegalAddress => "CUDA_ERROR_ILLEGAL_ADDRESS",
        LaunchFailure => "CUDA_ERROR_LAUNCH_FAILED",
        Assert => "CUDA_ERROR_ASSERT",
    }
}

/// Compare the simulator's run with the GPU's outcome.
fn judge(
    case: &Case,
    plan: &LaunchPlan,
    sim: &bwsim_sim::RunResult,
    gpu: Outcome,
    report: &mut Report,
) -> Verdict {
    use bwsim_sim::Outcome as S;
    let sim_desc = match (&sim.outcome, &sim.trap) {
        (S::Completed, _) => "completed".to_string(),
        (S::Trapped, Some(t)) => format!("trap {} ({})", sim_trap_code(t), t.reason),
        (o, _) => format!("{o:?}").to_lowercase(),
    };
    match gpu {
        Outcome::Hang { after } => Verdict::Fail(format!(
            "hang: no completion after {} s (simulator: {sim_desc})",
            after.as_secs()
        )),
        Outcome::Crashed { stderr } => Verdict::Fail(format!("child crashed: {stderr}")),
        Outcome::Setup { stage, error } => Verdict::Error(format!("{stage}: {error}")),
        Outcome::Trap { error, code, .. } => {
            let gpu_desc = format!("trap: {error} ({code})");
            match (&case.check, &sim.trap) {
                (Check::Trap(want), Some(t)) if sim_trap_code(t) == code && *want == code => {
                    report
                        .notes
                        .push(format!("GPU and simulator both trapped: {code} ({})", t.reason));
                    Verdict::Pass
                }
                (Check::Trap(want), _) => {
                    Verdict::Fail(format!("expected {want}; GPU {gpu_desc}; simulator {sim_desc}"))
                }
                _ => Verdict::Fail(format!("GPU {gpu_desc}; simulator {sim_desc}")),
            }
        }
        Outcome::Finished {
            tensors, times_ms, ..
        } => {
            report.gpu_ms = median(&times_ms);
            report.times_ms = times_ms;
            if let Check::Trap(want) = case.check {
                return Verdict::Fail(format!("expected {want}; the GPU finished; simulator {sim_desc}"));
            }
            if sim.outcome != S::Completed {
                return Verdict::Fail(format!("the GPU finished; simulator {sim_desc}"));
            }
            compare_outputs(plan, &sim.tensors, &tensors, case.check, report)
        }
    }
}

/// Every output of `plan`, the simulator's against the GPU's, by `check` on the report's
/// target: the largest error into the report, the first mismatching elements into its notes.
pub fn compare_outputs(
    plan: &LaunchPlan,
    sim: &[HostTensor],
    gpu: &[HostTensor],
    check: Check,
    report: &mut Report,
) -> Verdict {
    let mut worst = 0f64;
    let mut bad = Vec::new();
    for &o in &plan.outputs {
        let (Some(g), Some(s)) = (gpu.get(o), sim.get(o)) else {
            return Verdict::Error(format!("output {o} missing"));
        };
        let c = compare::compare(s, g, check.on(report.target));
        worst = worst.max(c.max_err);
        if c.mismatches > 0 {
            bad.push(format!(
                "`{}`: {} of {} elements differ",
                g.name,
                c.mismatches,
                g.numel()
            ));
            report
                .notes
                .extend(c.first.iter().map(|m| format!("`{}` {m}", g.name)));
        }
    }
    report.max_err = Some(worst);
    if bad.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Fail(bad.join("; "))
    }
}

/// The median (the mean of the middle two for an even count).
pub fn median(xs: &[f32]) -> Option<f32> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let h = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[h]
    } else {
        (v[h - 1] + v[h]) / 2.0
    })
}

/// Inputs of a case as the harness draws them (for tests and tools).
/// A launch over the memory limit is refused before anything is allocated.
pub fn draw_inputs(plan: &LaunchPlan, seed: u64) -> Result<Vec<HostTensor>, String> {
    launch::materialize(&never_zeros(plan.clone()), seed).map_err(|d| format!("launch: {}", d.message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bwsim_isa::DType;

    pub(crate) fn opts() -> Options {
        Options {
            seed: 1,
            dry_run: true,
            timeout: Duration::from_secs(1),
            timing_reps: 0,
            check: true,
            exe: PathBuf::from("bwsim"),
            inputs: Vec::new(),
            save_outputs: None,
        }
    }

    #[test]
    fn zeros_become_random_and_other_inits_stay() {
        let plan = with_session(&bundled("elementwise_add_tma"), Target::Sm90a, |s| s.plan);
        let out = plan.tensor("c").expect("c");
        assert_eq!(plan.tensors[out].init, Init::Zeros);
        let inputs = draw_inputs(&plan, 3).expect("within the memory limit");
        let t = &inputs[out];
        let nonzero = (0..t.numel()).filter(|&i| t.get(i) != 0.0).count() as u64;
        assert!(
            nonzero > t.numel() * 9 / 10,
            "{nonzero} of {} non-zero",
            t.numel()
        );
        // Deterministic for a seed.
        assert_eq!(draw_inputs(&plan, 3).expect("drawn")[out], inputs[out]);
        assert_ne!(draw_inputs(&plan, 4).expect("drawn")[out], inputs[out]);
    }

    #[test]
    fn job_arguments_follow_the_ptx_parameter_order() {
        let (m, plan) = with_session(&bundled("async_gather"), Target::Sm100a, |s| {
            (ptx::lower(&s.checked).expect("lowers"), s.plan)
        });
        let args = job_args(&m, &plan).expect("binds");
        let input = plan.tensor("input").expect("input");
        // tensor_desc (map + 2 extents), x_offsets_ptr, y_offset, out_ptr.
        assert_eq!(args.len(), 6);
        match &args[0] {
            JobArg::TensorMap {
                tensor,
                box_dims,
                swizzle,
                nan_fill,
                elem_strides,
            } => {
                assert_eq!(*tensor, input);
                assert_eq!(elem_strides, &vec![1, 1]);
                // bf16 rows of 128 elements are 256 bytes: boxes of one 128-byte span.
                assert_eq!(box_dims, &vec![1, 64]);
                assert_eq!(*swizzle, runner::SwizzleArg::B128);
                assert!(!nan_fill);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(args[1], JobArg::U32(1024));
        assert_eq!(args[2], JobArg::U32(1024));
        assert_eq!(args[4], JobArg::U32(48));
        check_tensor_maps(&args, &plan).expect("valid tensor maps");
    }

    #[test]
    fn tensor_map_rules_reject_what_the_driver_rejects() {
        let mut plan = LaunchPlan {
            grid: [1, 1, 1],
            cluster: [1, 1, 1],
            tensors: vec![],
            args: vec![],
            outputs: vec![],
            limits: Default::default(),
        };
        plan.tensors.push(launch::TensorSpec {
            name: "t".into(),
            dtype: DType::F32,
            shape: vec![8, 6],
            init: Init::Zeros,
            span: bwsim_isa::Span::default(),
        });
        let map = |b: Vec<u32>, s| {
            vec![JobArg::TensorMap {
                tensor: 0,
                box_dims: b,
                swizzle: s,
                nan_fill: false,
                elem_strides: vec![],
            }]
        };
        // 6 f32 = 24-byte rows: not a multiple of 16.
        assert!(
            check_tensor_maps(&map(vec![8, 4], runner::SwizzleArg::None), &plan)
                .unwrap_err()
                .contains("global stride")
        );
        plan.tensors[0].shape = vec![8, 64];
        assert!(check_tensor_maps(&map(vec![8, 4], runner::SwizzleArg::None), &plan).is_ok());
        assert!(
            check_tensor_maps(&map(vec![8, 2], runner::SwizzleArg::None), &plan)
                .unwrap_err()
                .contains("multiple of 16")
        );
        assert!(
            check_tensor_maps(&map(vec![8, 64], runner::SwizzleArg::B128), &plan)
                .unwrap_err()
                .contains("exceeds")
        );
        assert!(
            check_tensor_maps(&map(vec![300, 4], runner::SwizzleArg::None), &plan)
                .unwrap_err()
                .contains("1..=256")
        );
        // Element strides 1..=8 (cuTensorMapEncodeTiled).
        let strided = |st: Vec<u32>| {
            map(vec![8, 4], runner::SwizzleArg::None)
                .into_iter()
                .map(|a| a.with_elem_strides(st.clone()))
                .collect::<Vec<_>>()
        };
        assert!(check_tensor_maps(&strided(vec![8, 1]), &plan).is_ok());
        assert!(check_tensor_maps(&strided(vec![9, 1]), &plan)
            .unwrap_err()
            .contains("element strides"));
        assert!(check_tensor_maps(&strided(vec![0, 1]), &plan).is_err());
    }

    /// The job of a case, built as `run_case` builds it (no ptxas: PTX only).
    fn job_of(case: &Case, target: Target) -> GpuJob {
        with_session(case, target, |s| {
            let m = ptx::lower(&s.checked).expect("lowers");
            build_job(&m, &s.plan, None, 0).expect("job")
        })
    }

    /// `f` of the case's kernel verified strictly for `target` with its launch resolved (the
    /// prelude `run_case` goes through, every verifier error fatal).
    fn with_session<R>(case: &Case, target: Target, f: impl FnOnce(Session) -> R) -> R {
        let text = source_text(case).expect("source");
        let k = bwsim_isa::parser::parse(&text).expect("parses");
        let ov: Vec<Override> = (case.consts.iter())
            .map(|c| Override::parse(c).expect("override"))
            .collect();
        let s = Session::new(&k, Some(target), &ov, Verify::Strict).unwrap_or_else(|e| panic!("{e:?}"));
        f(s)
    }

    /// A strided round trip passes its elementStrides (innermost last, as the IR writes them)
    /// and the traversed box's shapes; the CTA-pair gemm launches with its cluster of two;
    /// a plain kernel launches without a cluster.
    #[test]
    fn jobs_carry_element_strides_and_cluster_shapes() {
        let cases = cases::all();
        let find = |n: &str| {
            cases
                .iter()
                .find(|c| c.name == n)
                .unwrap_or_else(|| panic!("no case {n}"))
        };
        let job = job_of(find("tma_roundtrip[stride3]"), Target::Sm90a);
        match &job.args[0] {
            JobArg::TensorMap {
                box_dims,
                elem_strides,
                ..
            } => {
                assert_eq!(box_dims, &vec![8, 32]);
                assert_eq!(elem_strides, &vec![3, 1]);
            }
            other => panic!("{other:?}"),
        }
        // dst: the 3 rows the strided load moved.
        let dst = job
            .args
            .iter()
            .filter_map(|a| match a {
                JobArg::TensorMap {
                    box_dims,
                    elem_strides,
                    ..
                } => Some((box_dims.clone(), elem_strides.clone())),
                _ => None,
            })
            .nth(1)
            .expect("two maps");
        assert_eq!(dst, (vec![3, 32], vec![1, 1]));
        assert_eq!(job.cluster, None);
        let pair = job_of(find("gemm_async[CTA_GROUP=2]"), Target::Sm100a);
        assert_eq!(pair.cluster, Some([2, 1, 1]));
        assert_eq!(pair.grid, [2, 1, 1]);
        assert_eq!(job_of(find("gemm_async"), Target::Sm100a).cluster, None);
    }

    /// Simulate a case as the harness would (same inputs), for the judging tests.
    fn simulate(case: &Case, target: Target, seed: u64) -> (LaunchPlan, bwsim_sim::RunResult) {
        with_session(case, target, |s| {
            let plan = never_zeros(s.plan);
            let inputs = draw_inputs(&plan, seed).expect("within the memory limit");
            let sim = bwsim_sim::run(
                &s.checked,
                &plan,
                inputs,
                &bwsim_sim::RunOptions {
                    seed,
                    trace: false,
                    ..Default::default()
                },
            );
            (plan, sim)
        })
    }

    /// The bundled kernel `name` with its default constants, as a case.
    fn bundled(name: &'static str) -> Case {
        Case {
            name: name.into(),
            source: Source::Bundled(name),
            consts: vec![],
            targets: vec![],
            check: Check::Exact,
        }
    }

    /// [`simulate`] on sm_90a, asserting that the run completed.
    fn simulate_completed(c: &Case, seed: u64) -> (LaunchPlan, bwsim_sim::RunResult) {
        let (plan, sim) = simulate(c, Target::Sm90a, seed);
        let ok = sim.outcome == bwsim_sim::Outcome::Completed;
        assert!(ok, "{}: {:?} {:?}", c.name, sim.outcome, sim.diagnostics);
        (plan, sim)
    }

    fn case(name: &str) -> Case {
        cases::all()
            .into_iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("no case {name}"))
    }

    fn blank() -> Report {
        Report::new("", None)
    }

    #[test]
    fn a_gpu_that_agrees_bit_for_bit_passes_and_one_flipped_bit_fails() {
        let c = case("tma_roundtrip[r2-sw64]");
        let (plan, sim) = simulate_completed(&c, 5);
        let finished = |tensors: Vec<HostTensor>| Outcome::Finished {
            tensors,
            times_ms: vec![0.5, 0.2, 0.3],
            device: "test".into(),
        };
        let mut r = blank();
        assert_eq!(
            judge(&c, &plan, &sim, finished(sim.tensors.clone()), &mut r),
            Verdict::Pass
        );
        assert_eq!(r.max_err, Some(0.0));
        assert_eq!(r.gpu_ms, Some(0.3), "the median of the timed repetitions");
        let mut bad = sim.tensors.clone();
        let out = plan.outputs[0];
        let b = bad[out].get_bits(7);
        bad[out].set_bits(7, b ^ 1);
        let mut r = blank();
        let v = judge(&c, &plan, &sim, finished(bad), &mut r);
        assert!(
            matches!(&v, Verdict::Fail(m) if m.contains("1 of 4096 elements differ")),
            "{v:?}"
        );
        assert!(r.notes[0].contains("[0, 7]"), "{:?}", r.notes);
    }

    /// The strided round trips in the simulator, against the element-stride rule of
    /// docs/semantics.md#tma written here: destination rows `16 + r` (columns 32..64) hold source
    /// rows `load + stride * r` (columns from the load's column), zeros past the end; every other
    /// element keeps its random input.
    #[test]
    fn strided_round_trips_move_every_stride_th_row() {
        for (name, row0, col0, stride, rows) in [
            ("tma_roundtrip[stride2]", 8u64, 32u64, 2u64, 4u64),
            ("tma_roundtrip[stride3]", 5, 0, 3, 3),
            ("tma_roundtrip[stride2-past-end]", 58, 0, 2, 4),
            ("tma_roundtrip[stride2-inner]", 8, 32, 1, 8),
        ] {
            let c = case(name);
            let (plan, sim) = simulate_completed(&c, 9);
            let inputs = draw_inputs(&plan, 9).expect("drawn");
            let (a, b) = (plan.tensor("a").expect("a"), plan.tensor("b").expect("b"));
            let out = &sim.tensors[b];
            for i in 0..64u64 {
                for j in 0..64u64 {
                    let got = out.get_bits(i * 64 + j);
                    let want = if (16..16 + rows).contains(&i) && (32..64).contains(&j) {
                        let src_row = row0 + stride * (i - 16);
                        if src_row < 64 {
                            inputs[a].get_bits(src_row * 64 + col0 + j - 32)
                        } else {
                            0
                        }
                    } else {
                        inputs[b].get_bits(i * 64 + j)
                    };
                    assert_eq!(got, want, "{name}: b[{i}, {j}]");
                }
            }
        }
    }

    /// `--no-check`: a finished launch is reported with its times (median of an even count is
    /// the mean of the middle two), a trap fails unless it is the planted one, a planted fault
    /// that finishes fails.
    #[test]
    fn unchecked_runs_report_times_and_gpu_faults() {
        let c = case("tma_roundtrip[r2-sw64]");
        let mut r = blank();
        let v = unchecked(
            &c,
            Outcome::Finished {
                tensors: vec![],
                times_ms: vec![0.4, 0.1, 0.3, 0.2],
                device: "test".into(),
            },
            &mut r,
        );
        assert_eq!(v, Verdict::Unchecked);
        assert_eq!(r.times_ms, vec![0.4, 0.1, 0.3, 0.2]);
        assert_eq!(r.gpu_ms, Some(0.25));
        assert_eq!(r.max_err, None, "nothing was compared");
        let trap = |code: &str| Outcome::Trap {
            error: runner::cuda_error_message(code).into(),
            code: code.into(),
            device: "test".into(),
        };
        let v = unchecked(&c, trap("CUDA_ERROR_ILLEGAL_INSTRUCTION"), &mut blank());
        assert!(
            matches!(&v, Verdict::Fail(m) if m.contains("ILLEGAL_INSTRUCTION")),
            "{v:?}"
        );
        let f = case("fault_store_negative_coordinate[C1=-1]");
        assert_eq!(
            unchecked(&f, trap("CUDA_ERROR_ILLEGAL_INSTRUCTION"), &mut blank()),
            Verdict::Unchecked
        );
        let done = Outcome::Finished {
            tensors: vec![],
            times_ms: vec![1.0],
            device: "test".into(),
        };
        assert!(matches!(unchecked(&f, done, &mut blank()), Verdict::Fail(_)));
        let hang = Outcome::Hang {
            after: Duration::from_secs(30),
        };
        assert!(matches!(unchecked(&c, hang, &mut blank()), Verdict::Fail(m) if m.contains("hang")));
    }

    /// Timing inputs: at most PATTERN_ELEMS elements per tensor, drawn exactly as the full
    /// inputs begin, whatever the tensor's size (a 2^24-element tensor costs 2^20).
    #[test]
    fn pattern_inputs_are_the_first_elements_of_the_draw() {
        let c = case("tma_roundtrip[r2-sw64]");
        let (plan, _) = simulate(&c, Target::Sm90a, 2);
        let full = draw_inputs(&plan, 2).expect("drawn");
        let pat = pattern_inputs(&plan, 2).expect("drawn");
        assert_eq!(pat.len(), full.len());
        for (p, f) in pat.iter().zip(&full) {
            assert_eq!(p.numel(), f.numel(), "4096 elements fit one pattern");
            assert_eq!(p.data, f.data);
        }
        let mut big = plan.clone();
        big.tensors[0].shape = vec![4096, 4096];
        let pat = pattern_inputs(&big, 2).expect("drawn");
        assert_eq!(pat[0].numel(), PATTERN_ELEMS);
        assert_eq!(pat[0].data.len() as u64, PATTERN_ELEMS * 4);
    }

    #[test]
    fn planted_faults_pass_only_when_both_sides_trap_alike() {
        let c = case("fault_store_negative_coordinate[C1=-1]");
        let (plan, sim) = simulate(&c, Target::Sm90a, 0);
        assert_eq!(sim.outcome, bwsim_sim::Outcome::Trapped, "{:?}", sim.diagnostics);
        let trap = |code: &str| Outcome::Trap {
            error: runner::cuda_error_message(code).into(),
            code: code.into(),
            device: "test".into(),
        };
        let mut r = blank();
        // The verdict on this GPU outcome against the simulated trap.
        let mut judge_gpu = |gpu: Outcome| judge(&c, &plan, &sim, gpu, &mut r);
        assert_eq!(judge_gpu(trap("CUDA_ERROR_ILLEGAL_INSTRUCTION")), Verdict::Pass);
        let v = judge_gpu(trap("CUDA_ERROR_MISALIGNED_ADDRESS"));
        assert!(
            matches!(&v, Verdict::Fail(m) if m.contains("expected CUDA_ERROR_ILLEGAL_INSTRUCTION")),
            "{v:?}"
        );
        let v = judge_gpu(Outcome::Finished {
            tensors: sim.tensors.clone(),
            times_ms: vec![],
            device: "t".into(),
        });
        assert!(
            matches!(&v, Verdict::Fail(m) if m.contains("the GPU finished")),
            "{v:?}"
        );
        let v = judge_gpu(Outcome::Hang {
            after: Duration::from_secs(30),
        });
        assert!(
            matches!(&v, Verdict::Fail(m) if m.starts_with("hang: no completion after 30 s")),
            "{v:?}"
        );
    }

    #[test]
    fn the_misaligned_smem_fault_is_predicted_by_the_simulator() {
        let c = case("fault_misaligned_smem_box");
        let (_, sim) = simulate(&c, Target::Sm90a, 0);
        let t = sim.trap.as_ref().expect("a trap");
        assert_eq!(sim_trap_code(t), "CUDA_ERROR_MISALIGNED_ADDRESS");
    }

    #[test]
    fn without_a_gpu_a_case_says_so_after_preparing_its_launch() {
        let c = case("elementwise_add_tma");
        let o = Options {
            dry_run: false,
            ..opts()
        };
        let r = run_case(&c, Target::Sm90a, &Gpu::Absent("test".into()), &o);
        assert_eq!(r.verdict, Verdict::Skipped(NO_GPU.into()), "{:?}", r.notes);
        let r = run_case(&c, Target::Sm90a, &Gpu::Absent("test".into()), &opts());
        assert_eq!(r.verdict, Verdict::Prepared);
        // A Blackwell kernel on a Hopper GPU says so instead of passing.
        let bw = case("tcgen05_copy");
        let h100 = Gpu::Present(GpuInfo {
            name: "NVIDIA H100".into(),
            sm: 90,
        });
        let r = run_case(&bw, Target::Sm100a, &h100, &o);
        assert!(
            matches!(&r.verdict, Verdict::Skipped(m) if m.contains("needs sm_100a")),
            "{:?}",
            r.verdict
        );
    }
}

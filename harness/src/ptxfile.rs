//! PTX files in the differential suite: a kernel as a compiler emitted it (Triton's PTX of the
//! Gluon fixtures, ptxfront/tests/fixtures/triton-3.9), assembled by ptxas for its own
//! `.target` and run on the GPU, against the same kernel on the PTX front end's machine
//! (`bwsim_ptxfront::machine`) from the same inputs.
//!
//! - The launch: the PTX's `// param:` and `// shared:` header lines with a launch sidecar in
//!   the TTGIR fixtures' format ([`bwsim_ptxfront::launch::prepare`]), found next to the file
//!   as for a `.ttgir` (`bwsim_gluon::launch_path_for`), else in the Gluon fixtures' folder by
//!   the file's stem (`softmax.sm_90a.ptx` takes `tests/gluon/softmax.launch`). The PTX
//!   arguments become the runner's: a launch buffer's address a device pointer, a tensor map
//!   a `CUtensorMap` over the same tensor with the same box and swizzle (zero fill), Triton's
//!   scratch pointers null.
//! - The inputs: the launch section's initialisers drawn from the seed, `zeros()` drawn at
//!   random (as for every case, so that unwritten elements show), or `--input` arrays.
//! - The target is the file's `.target`: an `sm_100a` file on a Hopper GPU is skipped with
//!   "needs a Blackwell GPU".
//! - The comparison: bit for bit, unless the PTX uses an approximate instruction (an opcode
//!   with `.approx`, or `div.full`, whose results the PTX ISA bounds but does not fix and the
//!   front end computes correctly rounded): then within [`crate::cases::APPROX`]. A sidecar's
//!   `// gpu: atol=A rtol=R` line overrides both.
//! - Planted bugs (`bug_*` but the `_fixed` twins) are prepared and assembled, never launched,
//!   as their TTGIR twins are.

use crate::cases::{Case, Check, Source, APPROX};
use crate::{gluon, Gpu, Options, Report, Verdict, CHILD_ARG};
use bwsim_backends::ptx::PtxModule;
use bwsim_backends::runner::{self, GpuJob, JobArg};
use bwsim_isa::launch::{HostTensor, LaunchPlan};
use bwsim_isa::Target;
use bwsim_ptxfront::launch::{self as plaunch, PrepareError, Prepared};
use bwsim_ptxfront::{machine, Arg};
use std::path::{Path, PathBuf};

/// Where `bwsim gpu --all` looks for PTX files when not told: the PTX front end's Triton
/// fixtures, relative to the current directory.
pub const DEFAULT_DIR: &str = "ptxfront/tests/fixtures/triton-3.9";

/// Every `.ptx` file directly in `dir`, in name order.
pub fn files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for e in entries {
        let p = e
            .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
            .path();
        if p.extension().is_some_and(|x| x == "ptx") {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// The `.target` of a PTX text (the first one bwsim knows).
pub fn target_of(text: &str) -> Option<Target> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix(".target"))
        .flat_map(|rest| rest.split(|c: char| c == ',' || c.is_whitespace()))
        .find_map(Target::from_name)
}

/// The launch sidecar of the PTX file `path`: next to it or in its parent (as for a
/// `.ttgir`), else `NAME.launch` in `gluon_dir` (`NAME` the file name before its first `.`).
pub fn sidecar_for(path: &Path, gluon_dir: Option<&Path>) -> Option<PathBuf> {
    bwsim_gluon::launch_path_for(path).or_else(|| {
        let stem = path.file_name()?.to_str()?.split('.').next()?;
        let p = gluon_dir?.join(format!("{stem}.launch"));
        p.is_file().then_some(p)
    })
}

/// Whether the kernel `p` of the PTX `text` uses an instruction whose result the PTX ISA
/// bounds but does not fix (`.approx` forms, `div.full`).
pub fn approximate(p: &bwsim_ptxfront::Program, text: &str) -> bool {
    p.ins.iter().any(|i| {
        let mnemonic = text
            .get(i.span.start as usize..)
            .and_then(|t| t.split_whitespace().next())
            .unwrap_or_default();
        mnemonic.split('.').any(|m| m == "approx") || mnemonic.starts_with("div.full")
    })
}

/// The PTX text ptxas is given: `text`, except that when the module has no `.debug_str`
/// section (the fixtures drop Triton's DWARF sections), the `function_name LABEL, inlined_at F
/// L C` attributes of its `.loc` lines are dropped too, as they name labels that section
/// defined; the file, line and column of each `.loc` stay.
pub fn assemblable(text: &str) -> String {
    if text.contains(".debug_str") {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let attrs = line
            .trim_start()
            .starts_with(".loc")
            .then(|| line.find(", function_name"))
            .flatten();
        match attrs {
            Some(i) => {
                out.push_str(&line[..i]);
                if let Some(c) = line[i..].find("//") {
                    out.push(' ');
                    out.push_str(&line[i + c..]);
                }
            }
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// The comparison of a PTX case: the sidecar's `// gpu:` tolerance, else [`APPROX`] for a
/// kernel with approximate instructions, else bit for bit.
fn check_for(sidecar: Option<&Path>, approx: bool) -> Check {
    let given = sidecar.and_then(|s| gluon::tolerance(&gluon::sidecar_directives(s)));
    match given {
        Some(c) => c,
        None if approx => APPROX,
        None => Check::Exact,
    }
}

/// The case of one PTX file (named `ptx/STEM`) with its launch sidecar, its comparison by the
/// module doc's rule, or `check` when given (`--atol`/`--rtol`).
pub fn case(path: &Path, launch: Option<PathBuf>, check: Option<Check>) -> Case {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let approx = bwsim_ptxfront::parse(&text)
        .ok()
        .and_then(|m| {
            let k = m.kernels.first()?.name.clone();
            bwsim_ptxfront::load(&text, &m, &k).ok()
        })
        .is_some_and(|p| approximate(&p, &text));
    let stem = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    Case {
        name: format!("ptx/{}", stem.strip_suffix(".ptx").unwrap_or(stem)),
        check: check.unwrap_or_else(|| check_for(launch.as_deref(), approx)),
        source: Source::Ptx {
            ptx: path.to_path_buf(),
            launch,
        },
        consts: Vec::new(),
        targets: vec![target_of(&text).unwrap_or(Target::Sm100a)],
    }
}

/// The cases of every PTX file in `dir`.
pub fn fixtures(dir: &Path, gluon_dir: Option<&Path>) -> Result<Vec<Case>, String> {
    Ok(files(dir)?
        .iter()
        .map(|p| case(p, sidecar_for(p, gluon_dir), None))
        .collect())
}

/// The runner's arguments for the PTX front end's (launch buffer `k` is the job's tensor
/// `k`).
fn job_args(args: &[Arg], plan: &LaunchPlan) -> Result<Vec<JobArg>, String> {
    args.iter()
        .map(|a| {
            Ok(match a {
                Arg::Buffer(k) => JobArg::Ptr { tensor: *k },
                Arg::U64(x) => JobArg::U64(*x),
                Arg::U32(x) => JobArg::U32(*x),
                Arg::F32(x) => JobArg::F32(*x),
                Arg::TensorMap(t) => {
                    let tensor = plan.tensors.get(t.buffer).ok_or_else(|| {
                        format!("a tensor map over launch buffer {}, which is not there", t.buffer)
                    })?;
                    if tensor.dtype.bits() != t.elem_bytes * 8 {
                        return Err(format!(
                            "the tensor map over `{}` has {}-byte elements; the tensor is {}",
                            tensor.name, t.elem_bytes, tensor.dtype
                        ));
                    }
                    let box_dims = t.box_dims.iter().rev().copied().collect();
                    JobArg::tensor_map(t.buffer, box_dims, t.swizzle, bwsim_isa::types::OobFill::Zero)
                }
                Arg::Bytes(_) => return Err("raw parameter bytes have no launch on the GPU".into()),
            })
        })
        .collect()
}

/// The architecture a target needs, in words.
fn needs(target: Target) -> &'static str {
    match target {
        Target::Sm100a => "a Blackwell GPU (sm_100a)",
        Target::Sm90a => "a Hopper GPU (sm_90a)",
    }
}

/// Runs the PTX case `ptx` with its `launch` sidecar for `target` (see [`crate::run_case`]).
pub(crate) fn run(
    case: &Case,
    (ptx, launch): (&Path, Option<&Path>),
    target: Target,
    gpu: &Gpu,
    opts: &Options,
    report: &mut Report,
) -> Result<Verdict, String> {
    let text = std::fs::read_to_string(ptx).map_err(|e| format!("cannot read {}: {e}", ptx.display()))?;
    let launch = launch.ok_or_else(|| {
        format!(
            "no launch sidecar for {} (NAME.launch next to it, in its parent or in the Gluon fixtures' folder)",
            ptx.display()
        )
    })?;
    let section_text =
        std::fs::read_to_string(launch).map_err(|e| format!("cannot read {}: {e}", launch.display()))?;
    let section = bwsim_isa::parser::parse_launch(&section_text)
        .map_err(|d| format!("{}: {}", launch.display(), crate::first_message(&d)))?;
    let Prepared {
        name,
        target: file_target,
        program,
        plan,
        launch: l,
    } = plaunch::prepare(&text, &section).map_err(|e| match e {
        PrepareError::Ptx(e) => format!("PTX front end: {e}"),
        PrepareError::Section(d) => format!("{}: {}", launch.display(), crate::first_message(&d)),
    })?;
    let file_target = file_target.ok_or("the PTX's `.target` is neither sm_90a nor sm_100a")?;
    if file_target != target {
        return Err(format!("the PTX is compiled for {file_target}, not {target}"));
    }
    let plan = crate::never_zeros(plan);
    let mut inputs = crate::draw_inputs(&plan, opts.seed)?;
    crate::npy::apply_inputs(&mut inputs, &opts.inputs)?;
    let text = assemblable(&text);
    let module = PtxModule {
        text: text.clone(),
        entry: name.clone(),
        target,
        block_dim: l.block,
        explicit_cluster: false,
        dynamic_smem_bytes: u32::try_from(l.dynamic_shared)
            .map_err(|_| "dynamic shared memory over 4 GiB")?,
        params: Vec::new(),
        line_origins: Vec::new(),
    };
    let cubin = crate::assemble(&module, opts.dry_run, report)?;
    let args = job_args(&l.args, &plan)?;
    crate::check_tensor_maps(&args, &plan)?;
    let job = GpuJob {
        ptx: text,
        cubin,
        entry: name,
        grid: plan.grid,
        block: l.block,
        cluster: (plan.cluster != [1, 1, 1]).then_some(plan.cluster),
        dynamic_smem: module.dynamic_smem_bytes,
        args,
        tensors: crate::tensor_metas(&plan),
        timing_reps: opts.timing_reps,
        pattern_inputs: false,
    };
    let planted = gluon::is_planted_bug(ptx);
    if let Some(v) = crate::stops_before_launch(planted, target, needs(target), gpu, opts) {
        return Ok(v);
    }
    if !opts.check {
        let outcome = runner::run_isolated(&opts.exe, CHILD_ARG, &job, &inputs, opts.timeout)
            .map_err(|e| e.to_string())?;
        return Ok(crate::unchecked(case, outcome, report));
    }
    let mut bufs: Vec<Vec<u8>> = inputs.iter().map(|t| t.data.clone()).collect();
    let sim = machine::run(
        &program,
        &l,
        &mut bufs,
        &machine::Options {
            seed: opts.seed,
            check: false,
        },
    )
    .map(|_| {
        inputs
            .iter()
            .zip(bufs)
            .map(|(t, data)| HostTensor { data, ..t.clone() })
            .collect::<Vec<_>>()
    });
    let outcome =
        runner::run_isolated(&opts.exe, CHILD_ARG, &job, &inputs, opts.timeout).map_err(|e| e.to_string())?;
    crate::save_gpu_outputs(opts, &plan, &outcome)?;
    Ok(judge(case, &plan, sim, outcome, report))
}

/// The GPU's outcome against the PTX front end's run.
fn judge(
    case: &Case,
    plan: &LaunchPlan,
    sim: Result<Vec<HostTensor>, bwsim_ptxfront::Error>,
    gpu: runner::Outcome,
    report: &mut Report,
) -> Verdict {
    use runner::Outcome as O;
    let sim_desc = match &sim {
        Ok(_) => "completed".to_string(),
        Err(e) => format!("stopped: {e}"),
    };
    match (gpu, sim) {
        (O::Hang { after }, _) => Verdict::Fail(format!(
            "hang: no completion after {} s (PTX front end: {sim_desc})",
            after.as_secs()
        )),
        (O::Crashed { stderr }, _) => Verdict::Fail(format!("child crashed: {stderr}")),
        (O::Setup { stage, error }, _) => Verdict::Error(format!("{stage}: {error}")),
        (O::Trap { error, code, .. }, _) => {
            Verdict::Fail(format!("GPU trap: {error} ({code}); PTX front end: {sim_desc}"))
        }
        (O::Finished { times_ms, .. }, Err(_)) => {
            report.gpu_ms = crate::median(&times_ms);
            Verdict::Fail(format!("the GPU finished; PTX front end: {sim_desc}"))
        }
        (
            O::Finished {
                tensors, times_ms, ..
            },
            Ok(sim),
        ) => {
            report.gpu_ms = crate::median(&times_ms);
            report.times_ms = times_ms;
            crate::compare_outputs(plan, &sim, &tensors, case.check, report)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bwsim_backends::runner::{GpuInfo, SwizzleArg};

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(DEFAULT_DIR)
            .join(format!("{name}.ptx"))
    }

    fn gluon_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(gluon::DEFAULT_DIR)
    }

    fn opts(dry_run: bool) -> Options {
        Options {
            dry_run,
            ..crate::tests::opts()
        }
    }

    fn blank(target: Target) -> Report {
        Report::new("", Some(target))
    }

    /// The fixtures' cases: named by file, their target the `.target`, their sidecar found in
    /// the Gluon folder by stem; softmax (`ex2.approx`, `div.full`) compared within APPROX,
    /// the reduction (integer and f32 folds in the PTX's own order) bit for bit.
    #[test]
    fn fixture_cases_take_their_target_sidecar_and_comparison() {
        let cases =
            fixtures(&fixture("softmax.sm_90a").with_file_name(""), Some(&gluon_dir())).expect("cases");
        let find = |n: &str| {
            cases
                .iter()
                .find(|c| c.name == n)
                .unwrap_or_else(|| panic!("no {n}"))
        };
        let s90 = find("ptx/softmax.sm_90a");
        assert_eq!(s90.targets, vec![Target::Sm90a]);
        assert_eq!(s90.check, APPROX);
        assert!(matches!(&s90.source, Source::Ptx { launch: Some(l), .. } if l.ends_with("softmax.launch")));
        assert_eq!(find("ptx/softmax.sm_100a").targets, vec![Target::Sm100a]);
        assert_eq!(find("ptx/reductions.sm_90a").check, Check::Exact);
        assert_eq!(find("ptx/bug_ws_add_fixed.sm_90a").check, Check::Exact);
    }

    /// `.loc` lines lose the attributes that name the dropped DWARF labels, and nothing else.
    #[test]
    fn assemblable_text_drops_only_the_loc_attributes() {
        let text =
            "\t.loc\t2 216 16, function_name $L__info_string0, inlined_at 1 19 15 // standard.py:216:16\n\
                    \tadd.s32 %r1, %r2, %r3;\n\t.loc\t1 19 15 // softmax.py:19:15\n";
        assert_eq!(
            assemblable(text),
            "\t.loc\t2 216 16 // standard.py:216:16\n\tadd.s32 %r1, %r2, %r3;\n\t.loc\t1 19 15 // softmax.py:19:15\n"
        );
        let with_dwarf = format!("{text}\t.section\t.debug_str\n{{\n$L__info_string0:\n}}\n");
        assert_eq!(assemblable(&with_dwarf), with_dwarf);
    }

    /// The warp-specialized add's tensor maps reach the runner with the box outermost first
    /// (the `// param:` line's `box=32,32`), the 128-byte swizzle and zero fill, each over its
    /// own tensor; its shapes and strides as scalars; Triton's scratch pointers null.
    #[test]
    fn tensor_maps_and_scalars_become_the_runners_arguments() {
        let path = fixture("bug_ws_add_fixed.sm_90a");
        let text = std::fs::read_to_string(&path).expect("fixture");
        let launch = std::fs::read_to_string(gluon_dir().join("bug_ws_add_fixed.launch")).expect("sidecar");
        let section = bwsim_isa::parser::parse_launch(&launch).expect("a launch section");
        let p = plaunch::prepare(&text, &section).expect("prepared");
        let args = job_args(&p.launch.args, &p.plan).expect("bound");
        let maps: Vec<_> = args
            .iter()
            .filter_map(|a| match a {
                JobArg::TensorMap {
                    tensor,
                    box_dims,
                    swizzle,
                    nan_fill,
                    ..
                } => Some((*tensor, box_dims.clone(), *swizzle, *nan_fill)),
                _ => None,
            })
            .collect();
        let t = |n: &str| p.plan.tensor(n).expect("tensor");
        assert_eq!(
            maps,
            ["a", "b", "c"]
                .map(|n| (t(n), vec![32, 32], SwizzleArg::B128, false))
                .to_vec()
        );
        // a's map, then its shape (32, 384) and strides (384, 1) in elements.
        assert_eq!(
            args[1..5],
            [
                JobArg::U32(32),
                JobArg::U32(384),
                JobArg::U64(384),
                JobArg::U64(1)
            ]
        );
        assert_eq!(args.last(), Some(&JobArg::U64(0)), "a null scratch pointer");
        crate::check_tensor_maps(&args, &p.plan).expect("valid maps");
    }

    /// An sm_100a file on a Hopper GPU is prepared and assembled, then skipped as needing a
    /// Blackwell GPU; without a GPU an sm_90a one says so; a dry run prepares.
    #[test]
    fn blackwell_ptx_on_a_hopper_gpu_is_skipped() {
        let h100 = Gpu::Present(GpuInfo {
            name: "NVIDIA H100".into(),
            sm: 90,
        });
        let c = case(
            &fixture("softmax.sm_100a"),
            Some(gluon_dir().join("softmax.launch")),
            None,
        );
        let r = crate::run_case(&c, Target::Sm100a, &h100, &opts(false));
        assert!(
            matches!(&r.verdict, Verdict::Skipped(m) if m.starts_with("needs a Blackwell GPU (sm_100a); the local GPU is NVIDIA H100")),
            "{:?}",
            r.verdict
        );
        let c = case(
            &fixture("softmax.sm_90a"),
            Some(gluon_dir().join("softmax.launch")),
            None,
        );
        let r = crate::run_case(&c, Target::Sm90a, &Gpu::Absent("test".into()), &opts(false));
        assert_eq!(r.verdict, Verdict::Skipped(crate::NO_GPU.into()));
        let r = crate::run_case(&c, Target::Sm90a, &Gpu::Absent("test".into()), &opts(true));
        assert_eq!(r.verdict, Verdict::Prepared);
        let r = crate::run_case(&c, Target::Sm100a, &h100, &opts(true));
        assert!(
            matches!(&r.verdict, Verdict::Error(m) if m.contains("compiled for sm_90a, not sm_100a")),
            "{:?}",
            r.verdict
        );
    }

    /// The judge: the GPU's outputs equal to the front end's pass; one flipped bit of an exact
    /// case fails naming the element; a GPU that finished while the front end stopped fails.
    #[test]
    fn gpu_outputs_are_judged_against_the_front_ends() {
        let c = case(
            &fixture("reductions.sm_90a"),
            Some(gluon_dir().join("reductions.launch")),
            None,
        );
        let text = std::fs::read_to_string(fixture("reductions.sm_90a")).expect("fixture");
        let launch = std::fs::read_to_string(gluon_dir().join("reductions.launch")).expect("sidecar");
        let p =
            plaunch::prepare(&text, &bwsim_isa::parser::parse_launch(&launch).expect("section")).expect("ok");
        let inputs = crate::draw_inputs(&p.plan, 4).expect("inputs");
        let mut bufs: Vec<Vec<u8>> = inputs.iter().map(|t| t.data.clone()).collect();
        let o = machine::Options {
            seed: 4,
            check: false,
        };
        machine::run(&p.program, &p.launch, &mut bufs, &o).expect("runs");
        let sim: Vec<HostTensor> = inputs
            .iter()
            .zip(bufs)
            .map(|(t, data)| HostTensor { data, ..t.clone() })
            .collect();
        let finished = |tensors: Vec<HostTensor>| runner::Outcome::Finished {
            tensors,
            times_ms: vec![0.1],
            device: "test".into(),
        };
        let mut r = blank(Target::Sm90a);
        assert_eq!(
            judge(&c, &p.plan, Ok(sim.clone()), finished(sim.clone()), &mut r),
            Verdict::Pass
        );
        assert_eq!(r.max_err, Some(0.0));
        let mut bad = sim.clone();
        let tails = p.plan.tensor("tails").expect("tails");
        let b = bad[tails].get_bits(65);
        bad[tails].set_bits(65, b ^ 1);
        let mut r = blank(Target::Sm90a);
        let v = judge(&c, &p.plan, Ok(sim.clone()), finished(bad), &mut r);
        assert!(
            matches!(&v, Verdict::Fail(m) if m.contains("`tails`: 1 of 512 elements differ")),
            "{v:?}"
        );
        assert!(r.notes.iter().any(|n| n.contains("[1, 1]")), "{:?}", r.notes);
        let stopped = Err(bwsim_ptxfront::Error::Launch("test".into()));
        let v = judge(&c, &p.plan, stopped, finished(sim), &mut blank(Target::Sm90a));
        assert!(
            matches!(&v, Verdict::Fail(m) if m.contains("PTX front end: stopped")),
            "{v:?}"
        );
    }
}

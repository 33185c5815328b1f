//! `bwsim run FILE.ptx`: a PTX kernel run once on the PTX front end's machine
//! ([`bwsim_ptxfront::machine`], the hazard checker watching, `--seed` the schedule), its
//! launch prepared as `bwsim check FILE.ptx` prepares it (the sidecar's launch section, the
//! PTX's `// param:` and `// shared:` lines, [`bwsim_ptxfront::launch::prepare`]).
//!
//! The inputs are the launch section's initialisers drawn from `--seed` (as for `.tile` and
//! `.ttgir` kernels) or `--input NAME=FILE.npy`; the outputs are compared with the CPU
//! reference that the sidecar's `// run: reference NAME` line for the file's release and
//! target names (`bwsim_harness::gluon::reference_for`), else the one of the kernel's own name
//! (`softmax_kernel`), and printed or saved (`--save-outputs DIR`) as for
//! the other kernels. Errors of the PTX (syntax, an instruction the front end does not run, a
//! fault of the run) are diagnostics rendered on the PTX text.

use super::{against_reference, outputs_json, print_outputs, Args};
use crate::commands::levels::Format;
use crate::commands::ptx_file::{self, Loaded};
use crate::commands::{diags_json, npy, print_diags, CliError, CliResult};
use bwsim_harness::cases::Check;
use bwsim_isa::directives;
use bwsim_isa::launch::HostTensor;
use bwsim_kernels::compare::Tolerance;
use bwsim_kernels::reference::Expected;
use bwsim_ptxfront::machine;
use serde_json::json;
use std::process::ExitCode;
use std::time::Instant;

/// The flags of `bwsim run` the PTX front end has no counterpart for.
fn refuse_unsupported(a: &Args) -> Result<(), CliError> {
    let given = [
        ("--const", !a.consts.is_empty()),
        ("--target", a.target.is_some()),
        ("--trace", a.trace.is_some()),
        ("--chrome", a.chrome.is_some()),
        ("--max-wall-time", a.limits.max_wall_time.is_some()),
        ("--max-trace-events", a.limits.max_trace_events.is_some()),
    ];
    match given.iter().find(|(_, g)| *g) {
        Some((flag, _)) => Err(CliError(format!(
            "{}: {flag} does not apply to a PTX file (its constants are compiled in, its target is its `.target`; \
             the PTX front end keeps no event trace)",
            a.source.kernel
        ))),
        None => Ok(()),
    }
}

/// The reference's outputs compared within the sidecar's `// gpu: atol=A rtol=R` tolerance
/// where it gives one and the reference asks for bits: the PTX is the program the GPU runs
/// (libdevice's polynomials and approximate instructions, the compiled order of a
/// reduction), so its outputs stand to the CPU reference, which rounds each function once,
/// as the GPU's do.
fn within_gpu_tolerance(ds: &[directives::Directive], mut exp: Vec<Expected>) -> Vec<Expected> {
    if let Some(Check::Tolerance { atol, rtol }) = bwsim_harness::gluon::tolerance(ds) {
        for e in exp.iter_mut().filter(|e| e.tol == Tolerance::Exact) {
            e.tol = Tolerance::Close { atol, rtol };
        }
    }
    exp
}

pub fn run(a: &Args) -> CliResult {
    refuse_unsupported(a)?;
    let format = a.levels.format(a.json)?;
    let levels = a.levels.levels()?;
    let Some(Loaded {
        file,
        sidecar,
        mut prepared,
    }) = a.source.load_ptx(format)?
    else {
        return Ok(ExitCode::from(1));
    };
    prepared.plan.limits = a.limits.limits().or(prepared.plan.limits);
    prepared.launch.max_steps = prepared.plan.limits.steps_or_default();
    let plan = &prepared.plan;
    let mut inputs = match bwsim_isa::launch::materialize(plan, a.seed) {
        Ok(t) => t,
        Err(d) => {
            crate::commands::levels::report_failure(&[d], &sidecar, format, json!({"result": "ERROR"}));
            return Ok(ExitCode::from(1));
        }
    };
    npy::apply_inputs(&mut inputs, &a.inputs).map_err(CliError)?;
    let mut bufs: Vec<Vec<u8>> = inputs.iter().map(|t| t.data.clone()).collect();
    let started = Instant::now();
    let opts = machine::Options {
        seed: a.seed,
        check: true,
    };
    // A stopped run reports the findings made before the stop, then the stop, as the tile
    // machine's run does.
    let (stats, findings) = machine::run_to_stop(&prepared.program, &prepared.launch, &mut bufs, &opts);
    let outcome = match stats {
        Ok(stats) => machine::Outcome { stats, findings },
        Err(e) => {
            let extra = json!({"kernel": prepared.name, "result": "ERROR"});
            let mut diags = levels.apply_all(findings.iter().map(|f| f.diagnostic.clone()));
            diags.push(ptx_file::diagnostic(&e));
            crate::commands::levels::report_failure(&diags, &file, format, extra);
            if format == Format::Text {
                outln!("result    ERROR");
            }
            return Ok(ExitCode::from(1));
        }
    };
    let wall = started.elapsed();
    let tensors: Vec<HostTensor> = inputs
        .iter()
        .zip(bufs)
        .map(|(t, data)| HostTensor { data, ..t.clone() })
        .collect();
    let outs: Vec<&HostTensor> = if plan.outputs.is_empty() {
        tensors.iter().collect()
    } else {
        plan.outputs.iter().filter_map(|&i| tensors.get(i)).collect()
    };
    let saved = match &a.save_outputs {
        Some(dir) => {
            let owned: Vec<HostTensor> = outs.iter().map(|t| (*t).clone()).collect();
            npy::save_all(dir, &owned).map_err(CliError)?
        }
        None => Vec::new(),
    };
    // The sidecar's directives, read once for the reference's name and its tolerance.
    let ds = directives::parse(&sidecar.text, directives::GLUON_KEYS, true).unwrap_or_default();
    // The sidecar's `run: reference NAME` line for the file's release and target (its
    // version folder, its `.sm_100a` name), else the kernel's own name.
    let reference = bwsim_harness::gluon::reference_for(&ds, std::path::Path::new(&a.source.kernel))
        .unwrap_or_else(|| prepared.name.clone());
    let expected = bwsim_kernels::reference::reference(&reference, plan, &inputs)
        .map(|r| r.map(|exp| within_gpu_tolerance(&ds, exp)));
    let (has_reference, cmp, ref_error) = against_reference(expected, Some(&tensors));
    let diags = levels.apply_all(outcome.findings.iter().map(|f| f.diagnostic.clone()));
    let failed = ref_error.is_some() || cmp.iter().any(|(_, c, _)| c.as_ref().is_none_or(|c| !c.passed()));
    let (word, ok) = if diags.iter().any(|d| d.is_error()) {
        ("ERROR", false)
    } else if failed {
        ("FAIL", false)
    } else if has_reference {
        ("PASS", true)
    } else {
        ("COMPLETED (no reference to check against)", true)
    };
    let target = prepared.target.map_or("unknown", |t| t.name());
    let st = &outcome.stats;
    if format == Format::Sarif {
        outln!("{}", crate::commands::levels::sarif_log(&diags, &file));
    } else if format == Format::Json {
        outln!(
            "{}",
            json!({
                "file": file.name,
                "kernel": prepared.name,
                "front_end": "ptx",
                "target": target,
                "seed": a.seed,
                "grid": plan.grid,
                "block": prepared.launch.block,
                "reference": has_reference.then_some(&reference),
                "result": word,
                "ok": ok,
                "outputs": outputs_json(&outs, &cmp),
                "reference_error": ref_error,
                "levels": a.levels.levels().map(|l| l.to_json()).unwrap_or_default(),
                "diagnostics": diags_json(&diags, &file),
                "counters": {
                    "ctas": st.ctas,
                    "threads": st.threads,
                    "instructions": st.instructions,
                    "barriers": st.barriers,
                    "collectives": st.collectives,
                },
                "saved": saved.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                "wall_seconds": wall.as_secs_f64(),
            })
        );
    } else {
        print_diags(&diags, &file);
        let (g, b) = (plan.grid, prepared.launch.block);
        outln!(
            "{}  `{}` on the PTX front end, target {target}, seed {}, grid [{}, {}, {}] ({} CTAs), CTA [{}, {}, {}]",
            file.name,
            prepared.name,
            a.seed,
            g[0],
            g[1],
            g[2],
            plan.num_ctas(),
            b[0],
            b[1],
            b[2]
        );
        outln!("outcome   completed");
        outln!(
            "summary   {} thread-instructions, {} threads, {} barriers, {} warp collectives, {:.2} s",
            st.instructions,
            st.threads,
            st.barriers,
            st.collectives,
            wall.as_secs_f64()
        );
        if let Some(e) = &ref_error {
            outln!("reference error: {e}");
        }
        print_outputs(&outs, &cmp);
        outln!("result    {word}");
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

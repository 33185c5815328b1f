//! `bwsim check FILE.ptx`: a PTX kernel on the PTX front end's machine
//! ([`bwsim_ptxfront::machine`]), its warps the hazard checker's agents, over `--schedules`
//! schedules.
//!
//! The launch comes from a sidecar in the format of the TTGIR ones (`launch { grid, tensors,
//! PARAM = VALUE }`, by the kernel's Python parameter names): `--launch FILE`, or the sidecar
//! found next to the file as for a `.ttgir` (`NAME.sm_100a.launch`, then `NAME.launch`, next
//! to it and in its parent). What the Python parameters are, and the dynamic shared memory,
//! come from the PTX's `// param:` and `// shared:` header lines
//! ([`bwsim_ptxfront::launch`]); the CTA shape from its `.reqntid`. Findings are rendered on
//! the PTX text; each names the source line (`.loc`) of both accesses.

use super::Args;
use crate::commands::{diags_json, print_diags, CliError, CliResult};
use bwsim_isa::consts::ConstEnv;
use bwsim_isa::launch::ArgValue;
use bwsim_isa::typeck::{ParamInfo, Ty};
use bwsim_isa::types::ScalarTy;
use bwsim_isa::{SourceFile, Span, Target};
use bwsim_ptxfront::launch::{self as plaunch, Kind, Value};
use bwsim_ptxfront::{machine, Launch};
use std::path::Path;
use std::process::ExitCode;

/// Whether `bwsim check` should take `spec` as PTX.
pub fn is_ptx(spec: &str) -> bool {
    Path::new(spec).extension().is_some_and(|e| e == "ptx")
}

pub fn run(a: &Args) -> CliResult {
    let path = Path::new(&a.kernel);
    let text = std::fs::read_to_string(path).map_err(|e| CliError(format!("{}: {e}", a.kernel)))?;
    let file = SourceFile::new(a.kernel.clone(), text.clone());
    let front = |e: bwsim_ptxfront::Error| {
        let line = match e.span() {
            s if s == Span::DUMMY => String::new(),
            s => format!(
                ":{}",
                text[..(s.start as usize).min(text.len())].lines().count().max(1)
            ),
        };
        CliError(format!("{}{line}: {e}", a.kernel))
    };
    let module = bwsim_ptxfront::parse(&text).map_err(front)?;
    let name = module
        .kernels
        .first()
        .map(|k| k.name.clone())
        .ok_or_else(|| CliError(format!("{}: the PTX has no `.entry` kernel", a.kernel)))?;
    let target = module
        .target
        .iter()
        .find_map(|t| Target::from_name(t))
        .unwrap_or(Target::Sm100a);
    let prog = bwsim_ptxfront::load(&text, &module, &name).map_err(front)?;
    let sidecar = match &a.launch {
        Some(p) => p.clone(),
        None => bwsim_gluon::launch_path_for(path).ok_or_else(|| {
            CliError(format!(
                "{}: no launch sidecar (NAME.launch next to the file or in its parent); give one with --launch FILE",
                a.kernel
            ))
        })?,
    };
    let stext =
        std::fs::read_to_string(&sidecar).map_err(|e| CliError(format!("{}: {e}", sidecar.display())))?;
    let sfile = SourceFile::new(sidecar.display().to_string(), stext.clone());
    let section = match bwsim_isa::parser::parse_launch(&stext) {
        Ok(l) => l,
        Err(d) => {
            print_diags(&d, &sfile);
            return Ok(ExitCode::from(1));
        }
    };
    let params = plaunch::params(&text).map_err(front)?;
    let mut infos = Vec::new();
    for p in &params {
        let dt = plaunch::dtype(&p.dtype);
        let ty = match (&p.kind, dt) {
            (Kind::Desc { .. } | Kind::Pointer, Some(d)) => Ty::Ptr(d),
            (Kind::Scalar(_), _) => Ty::Scalar(match p.dtype.as_str() {
                "i64" | "u64" => ScalarTy::I64,
                "fp32" => ScalarTy::F32,
                "i1" => ScalarTy::I1,
                _ => ScalarTy::I32,
            }),
            _ => {
                return Err(CliError(format!(
                    "{}: parameter `{}` has the element type `{}`, which bwsim does not read",
                    a.kernel, p.name, p.dtype
                )))
            }
        };
        infos.push(ParamInfo {
            name: p.name.clone(),
            ty,
            span: Span::DUMMY,
        });
    }
    let plan = match bwsim_isa::launch::resolve_for(&ConstEnv::empty(target), &infos, &section) {
        Ok(p) => p,
        Err(d) => {
            print_diags(&d, &sfile);
            return Ok(ExitCode::from(1));
        }
    };
    let tensors = match bwsim_isa::launch::materialize(&plan, 0) {
        Ok(t) => t,
        Err(d) => {
            print_diags(&[d], &sfile);
            return Ok(ExitCode::from(1));
        }
    };
    let values: Vec<(&str, Value)> = plan
        .args
        .iter()
        .map(|(n, v)| {
            let v = match v {
                ArgValue::Tensor(i) => Value::Tensor {
                    buffer: *i,
                    shape: plan.tensors[*i].shape.clone(),
                },
                ArgValue::Int(x) => Value::Int(*x),
                ArgValue::Float(x) => Value::F32(*x as f32),
            };
            (n.as_str(), v)
        })
        .collect();
    let args = plaunch::args(&prog, &params, &values).map_err(front)?;
    let mut l = Launch::new(plan.grid, plaunch::threads(&prog).map_err(front)?, args);
    l.dynamic_shared = plaunch::shared(&text).map_err(front)?;
    let bufs: Vec<Vec<u8>> = tensors.into_iter().map(|t| t.data).collect();
    let findings = match a.seed {
        Some(seed) => {
            let mut b = bufs.clone();
            let o = machine::run(&prog, &l, &mut b, &machine::Options { seed, check: true });
            o.map(|o| o.findings)
        }
        None => machine::check(&prog, &l, &bufs, a.schedules),
    };
    let findings = match findings {
        Ok(f) => f,
        // The kernel's fault (a deadlock, an mbarrier fault, an access outside memory), not
        // the command's: exit 1.
        Err(e @ bwsim_ptxfront::Error::Runtime { .. }) => {
            errln!("{}", front(e).0);
            return Ok(ExitCode::from(1));
        }
        Err(e) => return Err(front(e)),
    };
    let diags: Vec<_> = findings.iter().map(|f| f.diagnostic.clone()).collect();
    if a.json {
        let places: Vec<_> = findings
            .iter()
            .map(|f| {
                let at = |pc: usize| machine::source_line(&prog, pc).map(|(f, l)| format!("{f}:{l}"));
                serde_json::json!({
                    "code": f.code.name(),
                    "at": at(f.pc),
                    "with": f.with.iter().map(|&w| at(w)).collect::<Vec<_>>(),
                })
            })
            .collect();
        outln!(
            "{}",
            serde_json::json!({
                "file": a.kernel,
                "kernel": name,
                "ok": findings.is_empty(),
                "findings": places,
                "diagnostics": diags_json(&diags, &file),
            })
        );
    } else {
        print_diags(&diags, &file);
        let runs = match a.seed {
            Some(s) => format!("schedule seed {s}"),
            None => format!("{} schedules", a.schedules),
        };
        errln!(
            "{}: {runs} of `{name}` on the PTX front end: {}",
            a.kernel,
            match findings.len() {
                0 => "no hazards found".to_string(),
                1 => "1 error".to_string(),
                n => format!("{n} errors"),
            }
        );
    }
    Ok(if findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

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
use crate::commands::ptx_file::{self, Loaded};
use crate::commands::{diags_json, levels::Format, print_diags, CliResult};
use bwsim_ptxfront::machine;
use std::process::ExitCode;

pub fn run(a: &Args) -> CliResult {
    let format = if a.json { Format::Json } else { Format::Text };
    let Some(Loaded {
        file,
        prepared,
        sidecar,
    }) = a.source.load_ptx(format)?
    else {
        return Ok(ExitCode::from(1));
    };
    let (prog, l, name) = (&prepared.program, &prepared.launch, &prepared.name);
    let tensors = match bwsim_isa::launch::materialize(&prepared.plan, 0) {
        Ok(t) => t,
        Err(d) => {
            crate::commands::levels::report_failure(&[d], &sidecar, format, serde_json::json!({}));
            return Ok(ExitCode::from(1));
        }
    };
    let bufs: Vec<Vec<u8>> = tensors.into_iter().map(|t| t.data).collect();
    let findings = match a.seed {
        Some(seed) => machine::check_seed(prog, l, &bufs, seed),
        None => machine::check(prog, l, &bufs, a.schedules),
    };
    let findings = match findings {
        Ok(f) => f,
        Err(e) => {
            crate::commands::levels::report_failure(
                &[ptx_file::diagnostic(&e)],
                &file,
                format,
                serde_json::json!({"kernel": name}),
            );
            // The kernel's fault (a deadlock, an mbarrier fault, an access outside memory)
            // exits 1; what the front end does not run, 2 (as a failure of the command).
            let runtime = matches!(
                e,
                bwsim_ptxfront::Error::Runtime { .. }
                    | bwsim_ptxfront::Error::Unspecified { .. }
                    | bwsim_ptxfront::Error::Stuck(_)
                    | bwsim_ptxfront::Error::Trap(_)
            );
            return Ok(ExitCode::from(if runtime { 1 } else { 2 }));
        }
    };
    let diags: Vec<_> = findings.iter().map(|f| f.diagnostic.clone()).collect();
    if a.json {
        let places: Vec<_> = findings
            .iter()
            .map(|f| {
                let at = |pc: usize| machine::source_line(prog, pc).map(|(f, l)| format!("{f}:{l}"));
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
                "file": a.source.kernel,
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
            a.source.kernel,
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

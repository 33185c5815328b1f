//! `bwsim ptx`: lower a kernel to PTX, optionally assemble it with ptxas and disassemble the
//! cubin to SASS.

use super::{diags_json, load_source, parse_or_report, print_diags, CliError, CliResult, CompileArgs};
use bwsim_backends::ptx;
use bwsim_backends::ptxas;
use bwsim_isa::verify::verify;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// A .tile file, a .ttgir file (Gluon) or a bundled kernel name.
    #[arg(value_parser = super::kernel_spec())]
    kernel: String,
    #[command(flatten)]
    compile: CompileArgs,
    /// Write the PTX to this file instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// Assemble with ptxas and write the cubin here.
    #[arg(long, value_name = "FILE")]
    cubin: Option<PathBuf>,
    /// Assemble and print the SASS (cuobjdump -sass or nvdisasm) instead of the PTX on
    /// standard output.
    #[arg(long)]
    sass: bool,
    /// Print the module (PTX text, entry, launch shape, parameter ABI) as JSON.
    #[arg(long, conflicts_with = "sass")]
    json: bool,
}

pub fn run(a: Args) -> CliResult {
    let file = load_source(&a.kernel)?;
    let Some(k) = parse_or_report(&file, a.json) else {
        return Ok(ExitCode::from(1));
    };
    let report = |diags: &[bwsim_isa::Diagnostic]| {
        if a.json {
            outln!(
                "{}",
                serde_json::json!({ "file": file.name, "ok": false, "diagnostics": diags_json(diags, &file) })
            );
        } else {
            print_diags(diags, &file);
        }
    };
    let (checked, diags) = verify(&k, &a.compile.verify_options());
    let Some(checked) = checked else {
        report(&diags);
        return Ok(ExitCode::from(1));
    };
    let module = match ptx::lower(&checked) {
        Ok(m) => m,
        Err(e) => {
            report(&[e.to_diagnostic()]);
            return Ok(ExitCode::from(1));
        }
    };
    let mut assembled = None;
    if a.cubin.is_some() || a.sass {
        match ptxas::assemble(&module, false) {
            Ok(x) => {
                for m in &x.messages {
                    errln!("ptxas warning: {}", m.text);
                }
                assembled = Some(x)
            }
            Err(e @ ptxas::PtxasError::Rejected { .. }) => {
                report(&e.diagnostics(k.name.span));
                return Ok(ExitCode::from(1));
            }
            Err(e) => {
                return Err(CliError(match e.help() {
                    Some(h) => format!("{e}\n  help: {h}"),
                    None => e.to_string(),
                }))
            }
        }
    }
    if let (Some(path), Some(x)) = (&a.cubin, &assembled) {
        crate::output::write_file(path, &x.cubin)?;
    }
    if let Some(path) = &a.output {
        crate::output::write_file(path, module.text.as_bytes())?;
    }
    if a.sass {
        let x = assembled
            .as_ref()
            .ok_or_else(|| CliError("internal: no cubin to disassemble".into()))?;
        match ptxas::disassemble(&x.cubin).map_err(|e| CliError(e.to_string()))? {
            Some(s) => out!("{s}"),
            None => {
                return Err(CliError(format!(
                    "--sass needs cuobjdump or nvdisasm: set BWSIM_CUDA_BIN to the folder holding them \
                         (python3 -m pip install --target .tools/py nvidia-cuda-cuobjdump=={v} \
                         nvidia-cuda-nvdisasm=={v})",
                    v = ptxas::PIP_VERSION
                )))
            }
        }
    } else if a.json {
        let v = serde_json::json!({
            "file": file.name,
            "ok": true,
            "entry": module.entry,
            "target": module.target.name(),
            "block_dim": module.block_dim,
            "dynamic_smem_bytes": module.dynamic_smem_bytes,
            "params": module.params,
            "ptx": module.text,
        });
        outln!("{v}");
    } else if a.output.is_none() {
        out!("{}", module.text);
    }
    Ok(ExitCode::SUCCESS)
}

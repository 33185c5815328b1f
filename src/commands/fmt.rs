//! `bwsim fmt`: canonical printing.

use super::{load_source, parse_or_report, CliError, CliResult};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// A .tile file, a .ttgir file (Gluon) or a bundled kernel name.
    #[arg(value_parser = super::kernel_spec())]
    kernel: String,
    /// Rewrite the file in place.
    #[arg(long, conflicts_with_all = ["check", "json"])]
    write: bool,
    /// Exit 1 (and print nothing) if the file is not in canonical form.
    #[arg(long)]
    check: bool,
    /// Print the IR as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> CliResult {
    let file = load_source(&a.kernel)?;
    let Some(k) = parse_or_report(&file, a.json) else {
        return Ok(ExitCode::from(1));
    };
    if a.json {
        let v = serde_json::to_string_pretty(&k).map_err(|e| CliError(e.to_string()))?;
        outln!("{v}");
        return Ok(ExitCode::SUCCESS);
    }
    let out = bwsim_isa::print(&k);
    if a.check {
        return Ok(if out == file.text {
            ExitCode::SUCCESS
        } else {
            errln!(
                "{} is not in canonical form (run `bwsim fmt --write {}`)",
                file.name,
                file.name
            );
            ExitCode::from(1)
        });
    }
    if a.write {
        if bwsim_gluon::is_ttgir(std::path::Path::new(&a.kernel)) {
            return Err(CliError(format!(
                "`{}` is TTGIR: write its .tile form with `bwsim import {} -o FILE.tile`",
                a.kernel, a.kernel
            )));
        }
        if !std::path::Path::new(&a.kernel).exists() {
            return Err(CliError(format!(
                "`{}` is a bundled kernel, not a file: nothing to write",
                a.kernel
            )));
        }
        if out != file.text {
            // Whole or not at all: a failure never leaves a truncated kernel.
            crate::output::write_file(std::path::Path::new(&a.kernel), out.as_bytes())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    out!("{out}");
    Ok(ExitCode::SUCCESS)
}

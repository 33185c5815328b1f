//! `bwsim import`: a Gluon kernel's TTGIR as `.tile` source.

use super::{diags_json, print_diags, CliError, CliResult};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The .ttgir file (tools/gluon_to_ttgir.py writes one).
    file: PathBuf,
    /// Write the .tile source here instead of printing it.
    #[arg(short, long, value_name = "FILE.tile")]
    output: Option<PathBuf>,
    /// Print diagnostics as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> CliResult {
    super::read_text(&a.file)?;
    let loaded = super::load_ttgir(&a.file)
        .map_err(|e| CliError(format!("cannot read `{}`: {e}", a.file.display())))?;
    let kernel = match loaded.kernel {
        Ok(k) => k,
        Err(d) => {
            if a.json {
                outln!(
                    "{}",
                    serde_json::json!({ "file": loaded.source.name, "ok": false, "diagnostics": diags_json(&d, &loaded.source) })
                );
            } else {
                print_diags(&d, &loaded.source);
            }
            return Ok(ExitCode::from(1));
        }
    };
    let text = bwsim_isa::print(&kernel);
    match &a.output {
        Some(p) => crate::output::write_file(p, text.as_bytes())?,
        None => out!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

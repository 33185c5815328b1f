//! `bwsim list`: the bundled kernels.

use super::CliResult;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Print as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: Args) -> CliResult {
    let ks = bwsim_kernels::all();
    if a.json {
        let v: Vec<_> = ks
            .iter()
            .map(|k| serde_json::json!({"name": k.name, "description": k.description, "seed": k.seed, "targets": k.targets}))
            .collect();
        outln!("{}", serde_json::Value::Array(v));
        return Ok(ExitCode::SUCCESS);
    }
    let w = ks.iter().map(|k| k.name.len()).max().unwrap_or(4);
    for k in ks {
        outln!(
            "{:<w$}  {:<18} {}  [{}]",
            k.name,
            k.targets,
            k.description,
            k.seed
        );
    }
    Ok(ExitCode::SUCCESS)
}

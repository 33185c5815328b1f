//! `bwsim verify`: the static rules.

use super::{diags_json, load_source, parse_or_report, print_diags, CliResult, CompileArgs};
use bwsim_isa::verify::verify;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// A .tile file, a .ttgir file (Gluon) or a bundled kernel name.
    #[arg(required_unless_present = "rules", value_parser = super::kernel_spec())]
    kernel: Option<String>,
    #[command(flatten)]
    compile: CompileArgs,
    /// Print diagnostics as JSON.
    #[arg(long)]
    json: bool,
    /// List every diagnostic code of every stage: its name, the stages that emit it, its level
    /// (`error`: a hard error; `deny`, `warn`: a lint and its default level) and its meaning.
    #[arg(long)]
    rules: bool,
}

pub fn run(a: Args) -> CliResult {
    if a.rules {
        out!("{}", bwsim_isa::codes::rules_listing());
        return Ok(ExitCode::SUCCESS);
    }
    let Some(spec) = a.kernel else {
        return Ok(ExitCode::from(2));
    };
    let file = load_source(&spec)?;
    let Some(k) = parse_or_report(&file, a.json) else {
        return Ok(ExitCode::from(1));
    };
    let (checked, diags) = verify(&k, &a.compile.verify_options());
    let ok = checked.is_some();
    if a.json {
        outln!(
            "{}",
            serde_json::json!({ "file": file.name, "ok": ok, "diagnostics": diags_json(&diags, &file) })
        );
    } else {
        print_diags(&diags, &file);
        if let Some(c) = &checked {
            errln!(
                "{}: ok ({}, {} warps{}, {} B shared memory, {} TMEM columns)",
                file.name,
                c.target,
                c.total_warps(),
                if c.workers.is_empty() {
                    String::new()
                } else {
                    format!(" in {} partitions", c.workers.len() + 1)
                },
                c.smem_bytes,
                c.tmem_cols
            );
        }
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

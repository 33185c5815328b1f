//! Implementations of the `bwsim` subcommands: argument structs and the glue between the
//! library crates. Loading kernels and printing diagnostics is shared in this module.

pub mod fmt;
pub mod limits;
pub mod list;
pub mod verify;

use bwsim_isa::consts::Override;
use bwsim_isa::diag::{self, Diagnostic};
use bwsim_isa::{Kernel, SourceFile, Target};
use std::fmt::Display;

/// A failure of the command itself (not of the kernel): bad arguments, unreadable files.
#[derive(Debug)]
pub struct CliError(pub String);

impl Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub type CliResult = Result<std::process::ExitCode, CliError>;

/// Resolve `FILE|KERNEL` to source text: an existing path, or a bundled kernel name.
pub fn load_source(spec: &str) -> Result<SourceFile, CliError> {
    let path = std::path::Path::new(spec);
    if path.exists() {
        let bytes = std::fs::read(path).map_err(|e| CliError(format!("cannot read `{spec}`: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            CliError(format!(
                "`{spec}` is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ))
        })?;
        return Ok(SourceFile::new(spec, text));
    }
    if let Some(k) = bwsim_kernels::find(spec) {
        return Ok(SourceFile::new(format!("{}.tile", k.name), k.source));
    }
    if spec.ends_with(".tile") || spec.contains('/') {
        return Err(CliError(format!("no such file: `{spec}`")));
    }
    let names: Vec<&str> = bwsim_kernels::all().iter().map(|k| k.name).collect();
    Err(CliError(format!(
        "`{spec}` is neither a file nor a bundled kernel{}",
        if names.is_empty() {
            String::new()
        } else {
            format!(" (bundled: {})", names.join(", "))
        }
    )))
}

/// Print diagnostics to stderr, rustc style, with colour when stderr is a terminal.
pub fn print_diags(diags: &[Diagnostic], file: &SourceFile) {
    use codespan_reporting::term::termcolor::{ColorChoice, StandardStream};
    let choice = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        ColorChoice::Auto
    } else {
        ColorChoice::Never
    };
    let mut w = StandardStream::stderr(choice);
    diag::render_to(&mut w, diags, file);
}

/// Diagnostics as JSON, with line:column filled in.
pub fn diags_json(diags: &[Diagnostic], file: &SourceFile) -> serde_json::Value {
    serde_json::to_value(diags.iter().cloned().map(|d| d.locate(file)).collect::<Vec<_>>())
        .unwrap_or_default()
}

/// Parse, printing diagnostics (or JSON) on failure.
pub fn parse_or_report(file: &SourceFile, json: bool) -> Option<Kernel> {
    match bwsim_isa::parse(file) {
        Ok(k) => Some(k),
        Err(d) => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "file": file.name, "ok": false, "diagnostics": diags_json(&d, file) })
                );
            } else {
                print_diags(&d, file);
            }
            None
        }
    }
}

/// Parse `--target`.
pub fn parse_target(s: &str) -> Result<Target, String> {
    Target::from_name(s).ok_or_else(|| format!("unknown target `{s}` (use sm_100a or sm_90a)"))
}

/// Parse `--const NAME=VALUE`.
pub fn parse_override(s: &str) -> Result<Override, String> {
    Override::parse(s)
}

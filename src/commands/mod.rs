//! Implementations of the `bwsim` subcommands: argument structs and the glue between the
//! library crates. Loading kernels and printing diagnostics is shared in this module.

pub mod check;
pub mod fmt;
pub mod gpu;
pub mod import;
pub mod limits;
pub mod list;
pub mod npy;
pub mod ptx;
pub mod run;
pub mod time;
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
///
/// A `.ttgir` file (Triton's TTGIR of a Gluon kernel) is imported: the source is the
/// composite of the TTGIR, its launch sidecar and the Python files its locations name, so
/// that diagnostics quote the Python lines; [`parse_or_report`] then yields the imported
/// kernel. Every subcommand that loads kernels through these two functions accepts TTGIR.
pub fn load_source(spec: &str) -> Result<SourceFile, CliError> {
    let path = std::path::Path::new(spec);
    if bwsim_gluon::is_ttgir(path) {
        return bwsim_gluon::load(path)
            .map(|l| l.source)
            .map_err(|e| CliError(format!("cannot read `{spec}`: {e}")));
    }
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

/// Diagnostics as JSON, with line:column filled in and `rendered`, the rustc-style text.
/// In a composite source (an imported `.ttgir`: TTGIR, launch section, Python files), each
/// label also names the file its line and column are in.
pub fn diags_json(diags: &[Diagnostic], file: &SourceFile) -> serde_json::Value {
    let mut v = serde_json::to_value(diags.iter().cloned().map(|d| d.locate(file)).collect::<Vec<_>>())
        .unwrap_or_default();
    if let Some(list) = v.as_array_mut() {
        for (jd, d) in list.iter_mut().zip(diags) {
            jd["rendered"] = serde_json::Value::String(diag::render(std::slice::from_ref(d), file));
        }
    }
    if !file.parts().is_empty() {
        if let Some(list) = v.as_array_mut() {
            for (jd, d) in list.iter_mut().zip(diags) {
                let names: Vec<String> = std::iter::once(&d.primary)
                    .chain(&d.labels)
                    .map(|l| file.file_name_of(l.span).to_string())
                    .collect();
                if let Some(p) = jd.get_mut("primary") {
                    p["file"] = serde_json::Value::String(names[0].clone());
                }
                if let Some(ls) = jd.get_mut("labels").and_then(|l| l.as_array_mut()) {
                    for (l, n) in ls.iter_mut().zip(&names[1..]) {
                        l["file"] = serde_json::Value::String(n.clone());
                    }
                }
            }
        }
    }
    v
}

/// Parse (or, for a `.ttgir` file, import), printing diagnostics (or JSON) on failure.
pub fn parse_or_report(file: &SourceFile, json: bool) -> Option<Kernel> {
    let parsed = if bwsim_gluon::is_ttgir(std::path::Path::new(&file.name)) {
        match bwsim_gluon::load(std::path::Path::new(&file.name)) {
            Ok(l) => l.kernel,
            Err(e) => Err(vec![Diagnostic::error(
                "io",
                format!("cannot read `{}`: {e}", file.name),
                bwsim_isa::Span::DUMMY,
                "",
            )]),
        }
    } else {
        bwsim_isa::parse(file)
    };
    match parsed {
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

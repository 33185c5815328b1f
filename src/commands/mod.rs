//! Implementations of the `bwsim` subcommands: argument structs and the glue between the
//! library crates. Loading kernels and printing diagnostics is shared in this module.

pub mod check;
pub mod fmt;
pub mod gpu;
pub mod import;
pub mod levels;
pub mod limits;
pub mod list;
pub mod ptx;
pub mod ptx_file;
pub mod run;
pub mod time;
mod time_sweep;
pub mod verify;

pub use bwsim_harness::npy;

use bwsim_isa::consts::Override;
use bwsim_isa::diag::{self, Diagnostic};
use bwsim_isa::{Kernel, SourceFile, Target};
use std::fmt::Display;

/// `--target` and `--const`: what a command that compiles a kernel compiles it for.
#[derive(clap::Args, Clone, Debug)]
pub struct CompileArgs {
    /// Target (default: the kernel's first target).
    #[arg(long, value_parser = parse_target)]
    pub target: Option<Target>,
    /// Override a compile-time constant: --const BLOCK_M=64 (repeatable).
    #[arg(long = "const", value_name = "NAME=VALUE", value_parser = parse_override)]
    pub consts: Vec<Override>,
}

impl CompileArgs {
    /// The verifier's options for this target and these overrides.
    pub fn verify_options(&self) -> bwsim_isa::verify::VerifyOptions {
        bwsim_isa::verify::VerifyOptions {
            target: self.target,
            overrides: self.consts.clone(),
        }
    }
}

/// A failure of the command itself (not of the kernel): bad arguments, unreadable files.
#[derive(Debug)]
pub struct CliError(pub String);

impl Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub type CliResult = Result<std::process::ExitCode, CliError>;

static IMPORT_OPTIONS: std::sync::OnceLock<bwsim_gluon::ImportOptions> = std::sync::OnceLock::new();

/// Set once, from the global options, what every `.ttgir` import of this process is told
/// (`--triton-version`).
pub fn set_import_options(options: bwsim_gluon::ImportOptions) {
    let _ = IMPORT_OPTIONS.set(options);
}

/// Import a `.ttgir` file with the process's import options.
pub fn load_ttgir(path: &std::path::Path) -> std::io::Result<bwsim_gluon::Loaded> {
    bwsim_gluon::load_with(path, IMPORT_OPTIONS.get_or_init(Default::default))
}

/// Resolve `FILE|KERNEL` to source text: an existing path, or a bundled kernel name.
///
/// A `.ttgir` file (Triton's TTGIR of a Gluon kernel) is imported: the source is the
/// composite of the TTGIR, its launch sidecar and the Python files its locations name, so
/// that diagnostics quote the Python lines; [`parse_or_report`] then yields the imported
/// kernel. Every subcommand that loads kernels through these two functions accepts TTGIR.
pub fn load_source(spec: &str) -> Result<SourceFile, CliError> {
    let path = std::path::Path::new(spec);
    if path.extension().is_some_and(|e| e == "py") {
        return Err(CliError(format!(
            "`{spec}` is Python: compile the Gluon kernel to TTGIR first \
             (`python3 tools/gluon_to_ttgir.py {spec} KERNEL --target sm_100a ... -o k.ttgir`, see docs/gluon.md), \
             or run it from Python with the `bwsim` package (docs/python.md)"
        )));
    }
    if bwsim_gluon::is_ttgir(path) {
        read_text(path)?;
        return load_ttgir(path)
            .map(|l| l.source)
            .map_err(|e| CliError(format!("cannot read `{spec}`: {e}")));
    }
    if path.exists() {
        return Ok(SourceFile::new(spec, read_text(path)?));
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

/// The text of a kernel file, or an error that says what is wrong with it: a directory, an
/// unreadable file (with the OS's reason), an empty file, bytes that are not UTF-8 (with the
/// line, column and byte offset of the first one).
pub fn read_text(path: &std::path::Path) -> Result<String, CliError> {
    let shown = path.display();
    if path.is_dir() {
        return Err(CliError(format!("`{shown}` is a directory, not a kernel file")));
    }
    let bytes = std::fs::read(path).map_err(|e| CliError(format!("cannot read `{shown}`: {e}")))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(CliError(format!("`{shown}` is empty: there is no kernel in it")));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let before = &e.as_bytes()[..at];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        // The column counts characters, as the diagnostics do.
        let col = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
        CliError(format!(
            "`{shown}` is not UTF-8 text: byte 0x{:02x} at {shown}:{line}:{col} (offset {at}) starts no \
             UTF-8 character; save the file as UTF-8",
            e.as_bytes()[at]
        ))
    })
}

/// The `FILE|KERNEL` argument: any path that is valid UTF-8 (kernel names and diagnostics are
/// UTF-8 text), refused with the reason otherwise.
pub fn kernel_spec() -> impl clap::builder::TypedValueParser<Value = String> {
    use clap::builder::TypedValueParser as _;
    clap::builder::OsStringValueParser::new().try_map(|s| {
        s.into_string().map_err(|s| {
            format!(
                "the path `{}` is not valid UTF-8 (bwsim reads kernel paths as UTF-8 text); rename the file \
                 or give a link to it with a UTF-8 name",
                s.to_string_lossy()
            )
        })
    })
}

/// Diagnostics about an imported Gluon kernel (a composite TTGIR source) get a note naming
/// the bwsim operations they mention in Gluon's words; others are returned as they are.
pub fn for_source(diags: &[Diagnostic], file: &SourceFile) -> Vec<Diagnostic> {
    if file.parts().is_empty() {
        diags.to_vec()
    } else {
        diags.iter().map(bwsim_gluon::terms::in_gluon_terms).collect()
    }
}

/// Print diagnostics to stderr, rustc style, with colour when stderr is a terminal.
pub fn print_diags(diags: &[Diagnostic], file: &SourceFile) {
    let diags = &for_source(diags, file)[..];
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
    let diags = &for_source(diags, file)[..];
    let mut v = serde_json::to_value(diags.iter().cloned().map(|d| d.locate(file)).collect::<Vec<_>>())
        .unwrap_or_default();
    if let Some(list) = v.as_array_mut() {
        for (jd, d) in list.iter_mut().zip(diags) {
            jd["rendered"] = serde_json::Value::String(diag::render(std::slice::from_ref(d), file));
            // The level after `--deny`/`--warn`/`--allow`, and the code table's default.
            jd["level"] = serde_json::json!(d.severity.level().map_or("note", |l| l.name()));
            jd["default_level"] = serde_json::json!(d.code.default_level().name());
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
    let format = if json {
        levels::Format::Json
    } else {
        levels::Format::Text
    };
    parse_or_report_as(file, format)
}

/// [`parse_or_report`], printing a failure in `format` (text, JSON or SARIF).
pub fn parse_or_report_as(file: &SourceFile, format: levels::Format) -> Option<Kernel> {
    let parsed = if bwsim_gluon::is_ttgir(std::path::Path::new(&file.name)) {
        match load_ttgir(std::path::Path::new(&file.name)) {
            Ok(l) => l.kernel,
            Err(e) => Err(vec![Diagnostic::error(
                bwsim_isa::Code::Io,
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
            levels::report_failure(&d, file, format, serde_json::json!({}));
            None
        }
    }
}

/// Parse `--target`.
pub fn parse_target(s: &str) -> Result<Target, String> {
    Target::from_name(s).ok_or_else(|| format!("unknown target `{s}` (use sm_100a or sm_90a)"))
}

/// A finite number `>= 0` (`--lookahead`): NaN, infinities and negatives are refused.
pub fn non_negative_f64(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        Ok(_) => Err(format!("`{s}` is not a finite number >= 0")),
        Err(e) => Err(format!("`{s}` is not a number: {e}")),
    }
}

/// Parse `--const NAME=VALUE`.
pub fn parse_override(s: &str) -> Result<Override, bwsim_isa::consts::BadOverride> {
    Override::parse(s)
}

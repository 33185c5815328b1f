//! `--deny`, `--warn`, `--allow` and `--format`: the diagnostic levels and the output format of
//! the commands that report the checker's findings (`bwsim check`, `bwsim run`). A subcommand
//! adds them with `#[command(flatten)] levels: LevelArgs`.

use super::{diags_json, CliError};
use bwsim_isa::codes::Code;
use bwsim_isa::levels::{self, Levels};
use bwsim_isa::{sarif, Diagnostic, SourceFile};

/// Diagnostic levels, as rustc's `-D`, `-W`, `-A` (each repeatable; a code once).
///
/// Every code has a default level (`bwsim verify --rules`: `deny` lints are errors, `warn`
/// lints warnings, `error` codes stop their stage). Errors make the command exit 1; warnings
/// are printed and the command exits 0.
#[derive(clap::Args, Clone, Debug, Default)]
#[command(next_help_heading = "Diagnostic levels")]
pub struct LevelArgs {
    /// Make a code an error (exit 1 when it is found): `--deny uninit-read`. `--deny warnings`
    /// makes every warning an error, as in CI.
    #[arg(long, short = 'D', value_name = "CODE|warnings", value_parser = code_or_warnings)]
    pub deny: Vec<String>,
    /// Make a lint a warning (reported, exit status 0): `--warn race` while you fix others.
    #[arg(long, short = 'W', value_name = "CODE", value_parser = code_or_warnings)]
    pub warn: Vec<String>,
    /// Silence a lint: `--allow uninit-read` for a kernel that reads padding on purpose.
    #[arg(long, short = 'A', value_name = "CODE", value_parser = code_or_warnings)]
    pub allow: Vec<String>,
    /// Output: `text` (rustc-style on stderr), `json` (as `--json`) or `sarif` (SARIF 2.1.0
    /// on stdout, for CI code scanning; rules are the code table).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
}

/// How findings are printed.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// rustc-style diagnostics on stderr.
    Text,
    /// One JSON object on stdout.
    Json,
    /// A SARIF 2.1.0 log on stdout.
    Sarif,
}

/// A code of the table or `warnings`, checked when the flags are parsed.
fn code_or_warnings(s: &str) -> Result<String, String> {
    if s == levels::WARNINGS || Code::from_name(s).is_some() {
        Ok(s.to_string())
    } else {
        Err(format!(
            "`{s}` is not a diagnostic code (`bwsim verify --rules` lists them; `--deny warnings` denies every warning)"
        ))
    }
}

impl LevelArgs {
    /// The levels the flags set, or why they conflict.
    pub fn levels(&self) -> Result<Levels, CliError> {
        Levels::from_flags(&self.deny, &self.warn, &self.allow).map_err(|e| CliError(e.to_string()))
    }
    /// The output format: `--format`, else `json` with `--json`, else text.
    pub fn format(&self, json: bool) -> Result<Format, CliError> {
        match (self.format, json) {
            (Some(Format::Json) | None, true) => Ok(Format::Json),
            (Some(f), true) => Err(CliError(format!(
                "`--json` and `--format {}` ask for two outputs; give one",
                match f {
                    Format::Text => "text",
                    Format::Json => "json",
                    Format::Sarif => "sarif",
                }
            ))),
            (Some(f), false) => Ok(f),
            (None, false) => Ok(Format::Text),
        }
    }
}

/// A SARIF log of `diags` (about `file`).
pub fn sarif_log(diags: &[Diagnostic], file: &SourceFile) -> serde_json::Value {
    let diags = super::for_source(diags, file);
    sarif::log(
        diags.iter().map(|d| sarif::result(d, file)).collect(),
        env!("CARGO_PKG_VERSION"),
    )
}

/// Report diagnostics that stopped a command before it ran (parse, verify, setup) in `format`.
pub fn report_failure(diags: &[Diagnostic], file: &SourceFile, format: Format, extra: serde_json::Value) {
    match format {
        Format::Sarif => outln!("{}", sarif_log(diags, file)),
        Format::Json => {
            let mut v =
                serde_json::json!({ "file": file.name, "ok": false, "diagnostics": diags_json(diags, file) });
            if let (Some(o), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
                o.extend(e);
            }
            outln!("{v}")
        }
        Format::Text => super::print_diags(diags, file),
    }
}

//! A PTX file as `bwsim check FILE.ptx` and `bwsim run FILE.ptx` load it: the text, its launch
//! sidecar (`--launch FILE`, or the one found next to the file as for a `.ttgir`), the kernel
//! prepared by [`bwsim_ptxfront::launch::prepare`], and the front end's errors rendered as
//! diagnostics on the PTX text (or on the sidecar, for the launch section's).

use super::levels::{report_failure, Format};
use super::CliError;
use bwsim_isa::{Code, Diagnostic, SourceFile};
use bwsim_ptxfront::launch::{self as plaunch, PrepareError, Prepared};
use std::path::{Path, PathBuf};

/// Whether the command should take `spec` as PTX.
pub fn is_ptx(spec: &str) -> bool {
    Path::new(spec).extension().is_some_and(|e| e == "ptx")
}

/// The kernel argument of `bwsim check` and `bwsim run` (flattened into their arguments), with
/// the launch sidecar that a PTX file takes.
#[derive(clap::Args)]
pub struct KernelSource {
    /// A .tile file, a .ttgir file (Gluon), a .ptx file (Triton's PTX, run on the PTX front
    /// end) or a bundled kernel name (`bwsim list`).
    #[arg(value_parser = super::kernel_spec())]
    pub kernel: String,
    /// For a .ptx file: its launch sidecar (default: NAME.launch next to the file or in its
    /// parent folder, as for a .ttgir file).
    #[arg(long, value_name = "FILE")]
    pub launch: Option<PathBuf>,
}

impl KernelSource {
    /// Whether the kernel is a PTX file (see [`is_ptx`]).
    pub fn is_ptx(&self) -> bool {
        is_ptx(&self.kernel)
    }

    /// The PTX file with its launch sidecar (see [`load`]).
    pub fn load_ptx(&self, format: Format) -> Result<Option<Loaded>, CliError> {
        load(&self.kernel, self.launch.as_deref(), format)
    }
}

/// A PTX file loaded with its launch.
pub struct Loaded {
    /// The PTX text (what diagnostics point into).
    pub file: SourceFile,
    /// The launch sidecar, its text.
    pub sidecar: SourceFile,
    pub prepared: Prepared,
}

/// The diagnostic of a front-end error, its primary label at the PTX text the error is about
/// (no label for a launch error, which has no place in the PTX).
pub fn diagnostic(e: &bwsim_ptxfront::Error) -> Diagnostic {
    use bwsim_ptxfront::Error as E;
    let (code, label) = match e {
        // The machine's own finding, or the kernel's (a failed `device-assert`).
        E::Stuck(f) | E::Trap(f) => return f.diagnostic.clone(),
        E::Syntax { .. } | E::Invalid { .. } => (Code::Syntax, "here"),
        E::Unsupported { .. } => (Code::SimUnsupported, "not run by the PTX front end"),
        E::Launch(_) => (Code::Launch, ""),
        // The run stopped at an instruction whose behaviour is a fault or undefined (an access
        // outside shared memory, a read of an unwritten register, a divergent collective).
        E::Runtime { .. } => (Code::LaunchFailure, "the run stopped here"),
        E::Unspecified { .. } => (Code::UnspecifiedResult, "the run stopped here"),
    };
    Diagnostic::error(code, e.to_string(), e.span(), label)
}

/// Prints `e` in `format`: on the PTX text, or the launch section's diagnostics on the
/// sidecar's.
pub fn report(e: &PrepareError, file: &SourceFile, sidecar: &SourceFile, format: Format) {
    match e {
        PrepareError::Ptx(e) => report_failure(&[diagnostic(e)], file, format, serde_json::json!({})),
        PrepareError::Section(d) => report_failure(d, sidecar, format, serde_json::json!({})),
    }
}

/// The launch sidecar of `path`: `given`, or `NAME.TARGET.launch`/`NAME.launch` next to the file
/// or in its parent.
fn sidecar_path(path: &Path, given: Option<&Path>) -> Result<PathBuf, CliError> {
    match given {
        Some(p) => Ok(p.to_path_buf()),
        None => bwsim_gluon::launch_path_for(path).ok_or_else(|| {
            CliError(format!(
                "{}: no launch sidecar (NAME.launch next to the file or in its parent); give one with --launch FILE",
                path.display()
            ))
        }),
    }
}

/// Loads the PTX file `spec` with its launch; `Ok(None)` when it does not parse, resolve or
/// bind (the diagnostics printed in `format`).
pub fn load(spec: &str, launch: Option<&Path>, format: Format) -> Result<Option<Loaded>, CliError> {
    let path = Path::new(spec);
    let file = SourceFile::new(spec, super::read_text(path)?);
    let sidecar_path = sidecar_path(path, launch)?;
    let sidecar = SourceFile::new(
        sidecar_path.display().to_string(),
        super::read_text(&sidecar_path)?,
    );
    let section = match bwsim_isa::parser::parse_launch(&sidecar.text) {
        Ok(l) => l,
        Err(d) => {
            report_failure(&d, &sidecar, format, serde_json::json!({}));
            return Ok(None);
        }
    };
    match plaunch::prepare(&file.text, &section) {
        Ok(prepared) => Ok(Some(Loaded {
            file,
            sidecar,
            prepared,
        })),
        Err(e) => {
            report(&e, &file, &sidecar, format);
            Ok(None)
        }
    }
}

//! The ptxas driver: find NVIDIA's assembler, assemble a [`PtxModule`] to a cubin, and turn
//! its complaints into diagnostics that point at the `.tile` operation that produced the
//! offending PTX line (through [`PtxModule::line_origins`]). Also disassembles cubins to SASS
//! with `cuobjdump -sass` or `nvdisasm` when they are installed.
//!
//! Where the tools come from, first match wins: `BWSIM_PTXAS` (the ptxas binary),
//! `BWSIM_CUDA_BIN` (a folder holding ptxas, cuobjdump, nvdisasm), `PATH`, and the folder
//! `scripts/test` installs the PyPI packages into (`.tools/py/nvidia/cu13/bin`, looked up from
//! the current directory and the executable's directory upwards).

use crate::ptx::PtxModule;
use bwsim_isa::{Code, Diagnostic, Span, Target};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where `scripts/test` installs the CUDA tools (relative to the repository root).
pub const PIP_BIN_DIR: &str = ".tools/py/nvidia/cu13/bin";

/// The PyPI release of `nvidia-cuda-nvcc` (ptxas), `nvidia-cuda-cuobjdump` and
/// `nvidia-cuda-nvdisasm` the project is tested with; `scripts/test` installs this one
/// (`CUDA_PIP_VERSION` there, kept equal by a test).
pub const PIP_VERSION: &str = "13.5.37";

/// How to install the ptxas the project is tested with: one line for an error's help.
pub fn install_help() -> String {
    format!(
        "install the ptxas the project is tested with: \
         `python3 -m pip install --target .tools/py nvidia-cuda-nvcc=={PIP_VERSION}` \
         (what `bash scripts/test` does; bwsim then finds {PIP_BIN_DIR}/ptxas from the repository), \
         or point BWSIM_PTXAS at a ptxas that accepts PTX ISA {} for sm_100a and sm_90a",
        crate::ptx::PTX_VERSION
    )
}

/// True when a ptxas complaint means the ptxas is older than the PTX or the target.
fn too_old(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("unsupported .version")
        || t.contains("not defined for option 'gpu-name'")
        || t.contains("not defined for option 'arch'")
        || t.contains("unknown option")
        || t.contains("not supported on .target")
        || (t.contains("ptx isa") && t.contains("version"))
}

/// Errors of the driver.
#[derive(Debug, thiserror::Error)]
pub enum PtxasError {
    /// No ptxas anywhere we look.
    #[error(
        "ptxas not found (BWSIM_PTXAS, BWSIM_CUDA_BIN, PATH, {PIP_BIN_DIR}); {}",
        install_help()
    )]
    NotFound,
    /// `BWSIM_PTXAS` names something that is not a file (a typo is reported, not skipped).
    #[error("BWSIM_PTXAS is `{}`, which is not a file; {}", .0.display(), install_help())]
    BadOverride(PathBuf),
    /// A tool could not be run or its files could not be written.
    #[error("cannot run {tool}: {source}")]
    Io {
        tool: String,
        #[source]
        source: std::io::Error,
    },
    /// ptxas rejected the module (or warned, when warnings are errors).
    #[error(
        "ptxas failed on `{entry}` for {target}: {} error(s), {} warning(s)",
        count(messages, true),
        count(messages, false)
    )]
    Rejected {
        entry: String,
        target: Target,
        messages: Vec<PtxasMessage>,
    },
    /// The disassembler failed.
    #[error("{tool} failed: {stderr}")]
    Disassembler { tool: String, stderr: String },
}

fn count(m: &[PtxasMessage], errors: bool) -> usize {
    m.iter().filter(|x| x.error == errors).count()
}

/// One line of ptxas output.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PtxasMessage {
    /// True for `error`, false for `warning`/`info`.
    pub error: bool,
    /// The PTX line it refers to (1-based), when it names one.
    pub line: Option<usize>,
    pub text: String,
    /// The PTX text of that line.
    pub ptx_line: Option<String>,
    /// The IR operation that produced the line.
    pub op: Option<String>,
    pub span: Option<Span>,
}

impl PtxasError {
    /// What to do about it, when installing another ptxas is the fix: ptxas could not be run,
    /// crashed, or is too old for the PTX version or the target.
    pub fn help(&self) -> Option<String> {
        match self {
            PtxasError::Io { tool, .. } if tool.contains("ptxas") => Some(install_help()),
            PtxasError::Rejected { messages, .. }
                if messages
                    .iter()
                    .any(|m| too_old(&m.text) || m.text.contains("exit status signal")) =>
            {
                Some(format!(
                    "this ptxas cannot assemble the module: {}",
                    install_help()
                ))
            }
            _ => None,
        }
    }

    /// The error as diagnostics with spans where ptxas named a line (others on `kernel_span`).
    pub fn diagnostics(&self, kernel_span: Span) -> Vec<Diagnostic> {
        let mut diags = self.diagnostics_only(kernel_span);
        if let (Some(h), Some(first)) = (self.help(), diags.first_mut()) {
            *first = first.clone().with_help(h);
        }
        diags
    }

    fn diagnostics_only(&self, kernel_span: Span) -> Vec<Diagnostic> {
        match self {
            PtxasError::Rejected { messages, target, .. } => messages
                .iter()
                .map(|m| {
                    let span = m.span.unwrap_or(kernel_span);
                    let label = match &m.op {
                        Some(op) => format!("`{op}` lowered to the rejected PTX"),
                        None => "in this kernel".to_string(),
                    };
                    let title = format!("ptxas ({target}): {}", m.text);
                    let mut d = if m.error {
                        Diagnostic::error(Code::Ptxas, title, span, label)
                    } else {
                        Diagnostic::warning(Code::Ptxas, title, span, label)
                    };
                    if let (Some(l), Some(t)) = (m.line, &m.ptx_line) {
                        d = d.with_note(format!("PTX line {l}: {}", t.trim()));
                    }
                    d
                })
                .collect(),
            other => vec![Diagnostic::error(
                Code::Ptxas,
                other.to_string(),
                kernel_span,
                "while assembling this kernel",
            )],
        }
    }
}

fn exe_name(tool: &str) -> String {
    if cfg!(windows) {
        format!("{tool}.exe")
    } else {
        tool.to_string()
    }
}

fn is_file(p: &Path) -> bool {
    p.is_file()
}

/// Find a CUDA tool (`ptxas`, `cuobjdump`, `nvdisasm`).
pub fn locate(tool: &str) -> Option<PathBuf> {
    let name = exe_name(tool);
    if tool == "ptxas" {
        if let Some(p) = std::env::var_os("BWSIM_PTXAS") {
            let p = PathBuf::from(p);
            if is_file(&p) {
                return Some(p);
            }
        }
    }
    if let Some(dir) = std::env::var_os("BWSIM_CUDA_BIN") {
        let p = PathBuf::from(dir).join(&name);
        if is_file(&p) {
            return Some(p);
        }
    }
    // Next to BWSIM_PTXAS (the PyPI wheels put all three in one folder).
    if let Some(p) = std::env::var_os("BWSIM_PTXAS") {
        if let Some(dir) = Path::new(&p).parent() {
            let c = dir.join(&name);
            if is_file(&c) {
                return Some(c);
            }
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let c = dir.join(&name);
            if is_file(&c) {
                return Some(c);
            }
        }
    }
    let mut starts: Vec<PathBuf> = Vec::new();
    if let Ok(d) = std::env::current_dir() {
        starts.push(d);
    }
    if let Ok(e) = std::env::current_exe() {
        if let Some(d) = e.parent() {
            starts.push(d.to_path_buf());
        }
    }
    starts.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    for s in starts {
        for anc in s.ancestors() {
            let c = anc.join(PIP_BIN_DIR).join(&name);
            if is_file(&c) {
                return Some(c);
            }
        }
    }
    None
}

/// The ptxas binary, or [`PtxasError::NotFound`] ([`PtxasError::BadOverride`] when
/// `BWSIM_PTXAS` is set to something that is not a file).
pub fn ptxas_path() -> Result<PathBuf, PtxasError> {
    if let Some(p) = std::env::var_os("BWSIM_PTXAS").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        if !is_file(&p) {
            return Err(PtxasError::BadOverride(p));
        }
    }
    locate("ptxas").ok_or(PtxasError::NotFound)
}

/// A scratch directory for one tool run, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> std::io::Result<Scratch> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        loop {
            let k = N.fetch_add(1, Ordering::Relaxed);
            let p = base.join(format!("bwsim-{tag}-{}-{k}", std::process::id()));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(Scratch(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A successful assembly.
#[derive(Clone, Debug)]
pub struct Assembled {
    pub cubin: Vec<u8>,
    /// Warnings and infos ptxas printed (empty for a clean module).
    pub messages: Vec<PtxasMessage>,
    /// ptxas's `-v` resource line(s) (registers, shared memory, spills).
    pub info: String,
}

/// Parse one ptxas output line: `ptxas /path/x.ptx, line 12; error   : message`.
fn parse_line(l: &str, module: &PtxModule) -> Option<PtxasMessage> {
    let l = l.trim();
    if l.is_empty() {
        return None;
    }
    let (error, rest) = if let Some(i) = l.find("error").or_else(|| l.find("fatal")) {
        (true, &l[i..])
    } else if let Some(i) = l.find("warning") {
        (false, &l[i..])
    } else {
        return None;
    };
    let text = rest
        .split_once(':')
        .map(|x| x.1.trim())
        .unwrap_or(rest)
        .to_string();
    let line = l.find(", line ").and_then(|i| {
        let t = &l[i + 7..];
        let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        t[..end].parse::<usize>().ok()
    });
    let ptx_line = line
        .and_then(|n| module.text.lines().nth(n.checked_sub(1)?))
        .map(|s| s.to_string());
    let origin = line.and_then(|n| module.origin_of_line(n));
    Some(PtxasMessage {
        error,
        line,
        text,
        ptx_line,
        op: origin.map(|o| o.op.clone()),
        span: origin.map(|o| o.span),
    })
}

/// Assemble with ptxas for the module's target. Warnings are returned in
/// [`Assembled::messages`]; `warnings_as_errors` turns any of them into a rejection.
pub fn assemble(module: &PtxModule, warnings_as_errors: bool) -> Result<Assembled, PtxasError> {
    let ptxas = ptxas_path()?;
    let dir = Scratch::new("ptxas").map_err(|e| PtxasError::Io {
        tool: "ptxas".into(),
        source: e,
    })?;
    let input = dir.0.join(format!("{}.ptx", module.entry));
    let output = dir.0.join(format!("{}.cubin", module.entry));
    std::fs::write(&input, &module.text).map_err(|e| PtxasError::Io {
        tool: "ptxas".into(),
        source: e,
    })?;
    let out = Command::new(&ptxas)
        .arg(format!("-arch={}", module.target.name()))
        .arg("-v")
        .arg("-o")
        .arg(&output)
        .arg(&input)
        .output()
        .map_err(|e| PtxasError::Io {
            tool: format!("ptxas `{}`", ptxas.display()),
            source: e,
        })?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let all = format!("{stdout}\n{stderr}");
    let messages: Vec<PtxasMessage> = all.lines().filter_map(|l| parse_line(l, module)).collect();
    let info: String = all
        .lines()
        .filter(|l| l.contains("info"))
        .map(|l| format!("{}\n", l.trim()))
        .collect();
    if !out.status.success()
        || messages.iter().any(|m| m.error)
        || (warnings_as_errors && !messages.is_empty())
    {
        let mut messages = messages;
        if messages.is_empty() {
            messages.push(PtxasMessage {
                error: true,
                line: None,
                text: format!("exit status {}: {}", out.status, stderr.trim()),
                ptx_line: None,
                op: None,
                span: None,
            });
        }
        return Err(PtxasError::Rejected {
            entry: module.entry.clone(),
            target: module.target,
            messages,
        });
    }
    let cubin = std::fs::read(&output).map_err(|e| PtxasError::Io {
        tool: "ptxas".into(),
        source: e,
    })?;
    Ok(Assembled {
        cubin,
        messages,
        info,
    })
}

/// SASS of a cubin: `cuobjdump -sass`, else `nvdisasm`. `Ok(None)` when neither is installed.
pub fn disassemble(cubin: &[u8]) -> Result<Option<String>, PtxasError> {
    let tool = match (locate("cuobjdump"), locate("nvdisasm")) {
        (Some(c), _) => (c, vec!["-sass".to_string()]),
        (None, Some(n)) => (n, vec![]),
        (None, None) => return Ok(None),
    };
    let dir = Scratch::new("sass").map_err(|e| PtxasError::Io {
        tool: "disassembler".into(),
        source: e,
    })?;
    let input = dir.0.join("k.cubin");
    std::fs::write(&input, cubin).map_err(|e| PtxasError::Io {
        tool: "disassembler".into(),
        source: e,
    })?;
    let out = Command::new(&tool.0)
        .args(&tool.1)
        .arg(&input)
        .output()
        .map_err(|e| PtxasError::Io {
            tool: tool.0.display().to_string(),
            source: e,
        })?;
    if !out.status.success() {
        return Err(PtxasError::Disassembler {
            tool: tool.0.display().to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(Some(String::from_utf8_lossy(&out.stdout).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptx::Origin;

    fn module() -> PtxModule {
        PtxModule {
            text: "a\nb\n\tbad.instr %r1;\n".into(),
            entry: "k".into(),
            target: Target::Sm100a,
            block_dim: [128, 1, 1],
            explicit_cluster: false,
            dynamic_smem_bytes: 0,
            params: vec![],
            line_origins: vec![
                None,
                None,
                Some(Origin {
                    op: "tma.load".into(),
                    span: Span::new(10, 20),
                }),
            ],
        }
    }

    /// ptxas's error on line 3 of [`module`]: an unknown instruction.
    fn unknown_instruction(m: &PtxModule) -> PtxasMessage {
        parse_line(
            "ptxas /tmp/x/k.ptx, line 3; error   : Unknown instruction 'bad.instr'",
            m,
        )
        .unwrap()
    }

    #[test]
    fn parses_ptxas_error_lines_and_maps_them_to_ops() {
        let m = module();
        let msg = unknown_instruction(&m);
        assert!(msg.error);
        assert_eq!(msg.line, Some(3));
        assert_eq!(msg.text, "Unknown instruction 'bad.instr'");
        assert_eq!(msg.op.as_deref(), Some("tma.load"));
        assert_eq!(msg.span, Some(Span::new(10, 20)));
        assert_eq!(msg.ptx_line.as_deref(), Some("\tbad.instr %r1;"));
        let w = parse_line("ptxas warning : Registers are spilled", &m).unwrap();
        assert!(!w.error);
        assert_eq!(w.line, None);
        assert!(parse_line("ptxas info    : Used 10 registers", &m).is_none());
    }

    #[test]
    fn rejection_renders_as_spanned_diagnostics() {
        let m = module();
        let msg = unknown_instruction(&m);
        let e = PtxasError::Rejected {
            entry: "k".into(),
            target: Target::Sm100a,
            messages: vec![msg],
        };
        let d = e.diagnostics(Span::new(0, 1));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, "ptxas");
        assert_eq!(d[0].primary.span, Span::new(10, 20));
        assert!(d[0].notes[0].contains("bad.instr"));
    }

    #[test]
    fn the_pinned_version_is_the_one_scripts_test_installs() {
        let script = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/test"))
            .expect("scripts/test");
        assert!(
            script.contains(&format!("CUDA_PIP_VERSION={PIP_VERSION}\n")),
            "scripts/test pins another version than ptxas::PIP_VERSION"
        );
    }

    #[test]
    fn a_ptxas_too_old_for_the_module_gets_the_install_help() {
        let m = module();
        for line in [
            "ptxas fatal   : Value 'sm_100a' is not defined for option 'gpu-name'",
            "ptxas fatal   : Unsupported .version 8.8; current version is '8.4'",
        ] {
            let msg = parse_line(line, &m).expect("a complaint");
            let e = PtxasError::Rejected {
                entry: "k".into(),
                target: Target::Sm100a,
                messages: vec![msg],
            };
            let help = e.help().expect("help");
            assert!(
                help.contains(&format!("nvidia-cuda-nvcc=={PIP_VERSION}")),
                "{help}"
            );
            let d = e.diagnostics(Span::DUMMY);
            assert_eq!(d[0].help.as_deref(), Some(help.as_str()));
        }
        // A real error in the PTX is not a reason to reinstall.
        let msg = parse_line(
            "ptxas /t/k.ptx, line 3; error   : Unknown instruction 'bad.instr'",
            &m,
        )
        .expect("a complaint");
        let e = PtxasError::Rejected {
            entry: "k".into(),
            target: Target::Sm100a,
            messages: vec![msg],
        };
        assert_eq!(e.help(), None);
    }
}

//! The Gluon front end: import the TTGIR that Triton prints for a Gluon kernel into bwsim's IR.
//!
//! Triton compiles a Gluon kernel for sm_100a or sm_90a without a GPU
//! (`tools/gluon_to_ttgir.py` does it from the command line), and its TTGIR is a small closed
//! set of operations (`ttg.local_alloc`, `ttng.async_tma_copy_global_to_local`,
//! `ttng.wait_barrier`, `ttng.tc_gen5_mma`, `ttg.warp_specialize`, `scf.for`, `arith.*`, ...)
//! that map one to one onto bwsim's operations. Every operation carries the Python
//! `file:line:col` it came from; the imported kernel's spans point at those Python lines, so
//! the verifier's, the simulator's and the checker's diagnostics quote the user's source.
//!
//! Modules:
//! - [`lexer`], [`syntax`]: MLIR text to operations with regions, attributes and locations.
//! - [`types`]: types and layout attributes; [`loc`]: locations to Python frames.
//! - [`source`]: the composite source (TTGIR, launch section, Python files) spans point into.
//! - [`import`]: the operations, one to one, into a [`Kernel`].
//! - [`error`]: why an import fails, as [`Diagnostic`]s.
//!
//! A TTGIR file has no launch configuration. [`load`] attaches the `launch { ... }` section
//! of a sidecar file (`NAME.launch` next to `NAME.ttgir` or `NAME.sm_100a.ttgir`), written as
//! in a `.tile` file with literal values, so that `bwsim run` can launch the kernel.

#![allow(clippy::result_large_err)]

pub mod error;
pub mod import;
pub mod lexer;
pub mod loc;
pub mod source;
pub mod syntax;
pub mod terms;
pub mod types;
pub mod version;

pub use error::ImportError;
pub use version::{Detected, Version};

use bwsim_isa::ir::{Expr, ExprKind, IndexItem, Launch, LaunchItemKind};
use bwsim_isa::{Diagnostic, Kernel, SourceFile, Span};
use std::path::{Path, PathBuf};

/// The result of an import: the source diagnostics render against, and the kernel (or why
/// there is none).
#[derive(Debug)]
pub struct Loaded {
    /// The composite source: the TTGIR, the launch section, the Python files.
    pub source: SourceFile,
    pub kernel: Result<Kernel, Vec<Diagnostic>>,
    /// The Triton release the file was read as (None when the text did not lex or its version
    /// could not be settled: then `kernel` says why).
    pub version: Option<Detected>,
}

/// What a caller knows about a TTGIR file beyond its text.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// The Triton release that compiled the file (`3.9.0`), when the caller knows it: the
    /// `--triton-version` option, the Triton the Python package compiled with. A file that
    /// states its own version (a `// triton-version:` line, Triton's cache metadata next to it)
    /// must agree.
    pub triton_version: Option<String>,
}

/// Whether a path names a TTGIR file (by its extension).
pub fn is_ttgir(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "ttgir")
}

/// The launch sidecar of a `.ttgir` file, if one exists: `NAME.sm_100a.launch`, then
/// `NAME.launch` for `NAME.sm_100a.ttgir` (and `NAME.launch` for `NAME.ttgir`), next to the
/// file and then in its parent directory (a corpus compiled by several Triton releases into
/// `3.6/`, `3.9/`, ... shares one sidecar per kernel).
pub fn launch_path_for(path: &Path) -> Option<PathBuf> {
    let stem = path.file_stem()?.to_str()?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut names = vec![format!("{stem}.launch")];
    if let Some((base, target)) = stem.rsplit_once('.') {
        if target.starts_with("sm_") {
            names.push(format!("{base}.launch"));
        }
    }
    let mut candidates: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    if let Some(p) = dir.parent() {
        candidates.extend(names.iter().map(|n| p.join(n)));
    }
    candidates.into_iter().find(|p| p.is_file())
}

/// Read and import a `.ttgir` file (with its launch sidecar, if any). Python files named by
/// its locations are looked up next to it, then from the working directory.
pub fn load(path: &Path) -> std::io::Result<Loaded> {
    load_with(path, &ImportOptions::default())
}

/// [`load`] with what the caller knows about the file (its Triton version).
pub fn load_with(path: &Path, options: &ImportOptions) -> std::io::Result<Loaded> {
    let text = std::fs::read_to_string(path)?;
    let launch = match launch_path_for(path) {
        Some(p) => Some((p.display().to_string(), std::fs::read_to_string(&p)?)),
        None => None,
    };
    let stated = version::Stated {
        caller: options.triton_version.clone(),
        metadata: version::cache_metadata(path),
    };
    Ok(import_stated(
        &path.display().to_string(),
        &text,
        path.parent(),
        launch,
        &stated,
    ))
}

/// Import TTGIR text. `name` names it in diagnostics, `dir` is where relative Python paths
/// resolve first, `launch` is a launch section's file name and text.
pub fn import_text(name: &str, text: &str, dir: Option<&Path>, launch: Option<(String, String)>) -> Loaded {
    import_stated(name, text, dir, launch, &version::Stated::default())
}

/// [`import_text`] with what the caller knows about the file's Triton version.
pub fn import_text_with(
    name: &str,
    text: &str,
    dir: Option<&Path>,
    launch: Option<(String, String)>,
    options: &ImportOptions,
) -> Loaded {
    let stated = version::Stated {
        caller: options.triton_version.clone(),
        metadata: None,
    };
    import_stated(name, text, dir, launch, &stated)
}

fn import_stated(
    name: &str,
    text: &str,
    dir: Option<&Path>,
    launch: Option<(String, String)>,
    stated: &version::Stated,
) -> Loaded {
    let toks = match lexer::lex(text, 0) {
        Ok(t) => t,
        Err(e) => {
            return Loaded {
                source: SourceFile::composite(name, vec![(name.to_string(), text.to_string())]),
                kernel: Err(vec![e.to_diagnostic()]),
                version: None,
            }
        }
    };
    let map = source::SourceMap::new(name, text, &toks, dir, launch.clone());
    let detected = match version::detect(text, &toks, stated) {
        Ok(d) => d,
        Err(e) => {
            return Loaded {
                source: map.file,
                kernel: Err(vec![ImportError::Version {
                    message: e.message,
                    span: e.span,
                    notes: e.notes,
                }
                .to_diagnostic()]),
                version: None,
            }
        }
    };
    let with_version = |d: Diagnostic| -> Diagnostic {
        if matches!(
            d.code.as_str(),
            "ttgir-syntax" | "ttgir-unsupported-op" | "ttgir-unsupported-type"
        ) {
            d.with_note(format!(
                "the file was read as the TTGIR of {}",
                detected.describe()
            ))
        } else {
            d
        }
    };
    let kernel = syntax::parse(toks)
        .map_err(|e| vec![e.to_diagnostic()])
        .and_then(|m| {
            import::import(&m, &map, detected.version)
                .map_err(|es| es.iter().map(|e| e.to_diagnostic()).collect())
        })
        .map_err(|ds: Vec<Diagnostic>| ds.into_iter().map(with_version).collect())
        .and_then(|mut k| {
            k.comments = vec![format!(
                "// Imported from {} (the TTGIR of Gluon kernel `{}`, {}).",
                Path::new(name)
                    .file_name()
                    .map_or(name.into(), |f| f.to_string_lossy()),
                k.name.name,
                if detected.stated() {
                    format!("Triton {}", detected.release)
                } else {
                    format!("Triton {} syntax", detected.version)
                }
            )];
            if let Some((_, ltext)) = &launch {
                let base = map.launch_base();
                match bwsim_isa::parser::parse_launch(ltext) {
                    Ok(mut l) => {
                        shift_launch(&mut l, base);
                        k.launch = Some(l);
                        k.number_nodes();
                    }
                    Err(ds) => return Err(ds.into_iter().map(|d| shift_diag(d, base)).collect()),
                }
            }
            Ok(k)
        });
    Loaded {
        source: map.file,
        kernel,
        version: Some(detected),
    }
}

fn shift(s: Span, base: usize) -> Span {
    if s.is_dummy() {
        s
    } else {
        Span::new(s.start as usize + base, s.end as usize + base)
    }
}

fn shift_diag(mut d: Diagnostic, base: usize) -> Diagnostic {
    d.primary.span = shift(d.primary.span, base);
    for l in &mut d.labels {
        l.span = shift(l.span, base);
    }
    d
}

fn shift_expr(e: &mut Expr, base: usize) {
    e.span = shift(e.span, base);
    match &mut e.kind {
        ExprKind::Unary(_, a) | ExprKind::Field(a, _) => shift_expr(a, base),
        ExprKind::Binary(_, a, b) => {
            shift_expr(a, base);
            shift_expr(b, base);
        }
        ExprKind::Call(_, args) => {
            for a in args {
                if let Some(k) = &mut a.key {
                    k.span = shift(k.span, base);
                }
                shift_expr(&mut a.value, base);
            }
        }
        ExprKind::Index(b, items) => {
            shift_expr(b, base);
            for it in items {
                match it {
                    IndexItem::Expr(x) => shift_expr(x, base),
                    IndexItem::Slice(a, b) => {
                        for x in [a, b].into_iter().flatten() {
                            shift_expr(x, base);
                        }
                    }
                    IndexItem::NewAxis => {}
                }
            }
        }
        ExprKind::List(v) => v.iter_mut().for_each(|x| shift_expr(x, base)),
        _ => {}
    }
}

/// Move a launch section parsed on its own to where its text sits in the composite source.
fn shift_launch(l: &mut Launch, base: usize) {
    l.span = shift(l.span, base);
    for it in &mut l.items {
        it.span = shift(it.span, base);
        match &mut it.kind {
            LaunchItemKind::Tensor { name, ty, init } => {
                name.span = shift(name.span, base);
                shift_expr(ty, base);
                shift_expr(init, base);
            }
            LaunchItemKind::Set { name, value } | LaunchItemKind::Limit { name, value } => {
                name.span = shift(name.span, base);
                shift_expr(value, base);
            }
        }
    }
}

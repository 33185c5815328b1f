//! Why a TTGIR file does not import, as typed errors rendered as [`Diagnostic`]s.
//!
//! Spans point into the composite source of the import (see [`crate::source`]): the TTGIR
//! text for syntax errors, the user's Python line (with the TTGIR line as a second label) for
//! an operation that bwsim does not support.

use bwsim_isa::{Code, Diagnostic, Span};
use thiserror::Error;

/// One import error.
#[derive(Debug, Clone, Error)]
pub enum ImportError {
    /// The text is not the MLIR that Triton prints.
    #[error("{message}")]
    Syntax { span: Span, message: String },
    /// A well-formed operation outside the supported set.
    #[error("unsupported TTGIR operation `{op}`")]
    UnsupportedOp {
        op: String,
        /// The Python location when there is one, else the TTGIR line.
        span: Span,
        ttgir: Span,
        detail: Option<String>,
    },
    /// A supported operation used in a way bwsim's IR cannot express.
    #[error("`{op}`: {message}")]
    Unsupported {
        op: String,
        message: String,
        span: Span,
        ttgir: Span,
    },
    /// A type, layout or attribute bwsim does not know.
    #[error("{message}")]
    UnsupportedType { message: String, span: Span },
    /// An operand that names no value defined before it.
    #[error("`%{name}` is not defined")]
    Undefined { name: String, span: Span },
    /// No `tt.func` to import, or more than one public one.
    #[error("{message}")]
    Module { message: String, span: Span },
    /// The Triton release that compiled the file is unsupported, or cannot be settled.
    #[error("{message}")]
    Version {
        message: String,
        span: Span,
        notes: Vec<String>,
    },
    /// A use of a value whose definition failed to import: already reported there, so the
    /// importer drops this one.
    #[error("a value whose definition failed to import")]
    Cascade { span: Span },
}

impl ImportError {
    /// The diagnostic code.
    pub fn code(&self) -> Code {
        match self {
            ImportError::Syntax { .. } => Code::TtgirSyntax,
            ImportError::UnsupportedOp { .. } => Code::TtgirUnsupportedOp,
            ImportError::Unsupported { .. } => Code::TtgirUnsupported,
            ImportError::UnsupportedType { .. } => Code::TtgirUnsupportedType,
            ImportError::Undefined { .. } => Code::TtgirUndefined,
            ImportError::Module { .. } => Code::TtgirModule,
            ImportError::Cascade { .. } => Code::TtgirCascade,
            ImportError::Version { .. } => Code::TtgirVersion,
        }
    }

    /// Render as a diagnostic with its spans.
    pub fn to_diagnostic(&self) -> Diagnostic {
        let msg = self.to_string();
        match self {
            ImportError::Syntax { span, .. } => {
                Diagnostic::error(self.code(), msg, *span, "here").with_help(format!(
                    "bwsim reads the TTGIR of Triton {} (tools/gluon_to_ttgir.py writes it)",
                    crate::version::supported_list()
                ))
            }
            ImportError::Version { span, notes, .. } => {
                let mut d = Diagnostic::error(self.code(), msg, *span, "here");
                for n in notes {
                    d = d.with_note(n.clone());
                }
                d.with_help(format!(
                    "bwsim reads the TTGIR of Triton {}; a file without a `// triton-version: X.Y.Z` first line \
                     takes its version from `--triton-version X.Y.Z`",
                    crate::version::supported_list()
                ))
            }
            ImportError::UnsupportedOp {
                op,
                span,
                ttgir,
                detail,
            } => {
                let mut d = Diagnostic::error(self.code(), msg, *span, format!("`{op}` comes from here"));
                if ttgir.start != span.start {
                    d = d.with_label(*ttgir, "in the TTGIR");
                }
                if let Some(x) = detail {
                    d = d.with_note(x.clone());
                }
                d.with_help("docs/gluon.md lists the TTGIR operations bwsim imports")
            }
            ImportError::Unsupported { span, ttgir, .. } => {
                let mut d = Diagnostic::error(self.code(), msg, *span, "here");
                if ttgir.start != span.start {
                    d = d.with_label(*ttgir, "in the TTGIR");
                }
                d
            }
            ImportError::UnsupportedType { span, .. } => Diagnostic::error(self.code(), msg, *span, "here"),
            ImportError::Undefined { span, .. } => Diagnostic::error(self.code(), msg, *span, "used here"),
            ImportError::Module { span, .. } | ImportError::Cascade { span } => {
                Diagnostic::error(self.code(), msg, *span, "here")
            }
        }
    }
}

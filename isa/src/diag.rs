//! Diagnostics: the one error/warning type of bwsim, from the parser to the checker.
//!
//! A [`Diagnostic`] is data (serde) with a stable code (a [`Code`] of the one table in
//! [`crate::codes`]), a one-line title, a primary span, secondary labels, notes and a help line.
//! It renders like rustc through codespan-reporting ([`render`]) and serialises to JSON
//! unchanged (the code as its name).

pub use crate::codes::Code;
use crate::codes::Level;
use crate::span::{SourceFile, Span};
use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term;
use serde::{Deserialize, Serialize};

/// How bad it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Note,
}

impl Severity {
    /// The level of an error or warning (`None` for a note).
    pub fn level(self) -> Option<Level> {
        match self {
            Severity::Error => Some(Level::Error),
            Severity::Warning => Some(Level::Warning),
            Severity::Note => None,
        }
    }
}

/// A labelled span.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Label {
    pub span: Span,
    pub message: String,
    /// Line and column (1-based) once resolved against a source file; filled by [`Diagnostic::locate`].
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub line_col: Option<(usize, usize)>,
}

/// One diagnostic. `code` is stable (`syntax`, `E-type`, `race`, `missing-fence`, ...).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: Code,
    pub message: String,
    /// The primary span with its label; secondary labels follow in `labels`.
    pub primary: Label,
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic at its code's default level ([`Code::default_level`]).
    pub fn new(code: Code, message: impl Into<String>, span: Span, label: impl Into<String>) -> Diagnostic {
        let d = Diagnostic::error(code, message, span, label);
        match code.default_level() {
            Level::Warning => Diagnostic {
                severity: Severity::Warning,
                ..d
            },
            _ => d,
        }
    }
    /// An error, whatever the code's default level.
    pub fn error(code: Code, message: impl Into<String>, span: Span, label: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            primary: Label {
                span,
                message: label.into(),
                line_col: None,
            },
            labels: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }
    /// A warning, whatever the code's default level.
    pub fn warning(
        code: Code,
        message: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(code, message, span, label)
        }
    }
    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push(Label {
            span,
            message: message.into(),
            line_col: None,
        });
        self
    }
    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
    /// Fill in line:column of every label from the source (for JSON output).
    pub fn locate(mut self, file: &SourceFile) -> Diagnostic {
        let lc = |l: &mut Label| {
            if !l.span.is_dummy() || l.span.end > 0 {
                l.line_col = Some(file.line_col(l.span.start as usize));
            }
        };
        lc(&mut self.primary);
        for l in &mut self.labels {
            lc(l);
        }
        self
    }
}

/// Render diagnostics as rustc-style text (no colour), quoting `file`.
pub fn render(diags: &[Diagnostic], file: &SourceFile) -> String {
    let mut out = Vec::new();
    {
        let mut w = term::termcolor::NoColor::new(&mut out);
        render_to(&mut w, diags, file);
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Render with colour to a terminal writer. In a composite [`SourceFile`] every label is
/// shown in the part (file) its span falls in, with that file's line numbers.
pub fn render_to(w: &mut dyn term::termcolor::WriteColor, diags: &[Diagnostic], file: &SourceFile) {
    let config = term::Config::default();
    let mut files = SimpleFiles::new();
    // (file id, first byte, length) of each part, or the whole text for a plain file.
    let parts: Vec<(usize, usize, usize)> = if file.parts().is_empty() {
        vec![(
            files.add(file.name.clone(), file.text.clone()),
            0,
            file.text.len(),
        )]
    } else {
        file.parts()
            .iter()
            .enumerate()
            .map(|(i, p)| {
                (
                    files.add(p.name.clone(), file.part_text(i).to_string()),
                    p.start,
                    p.len,
                )
            })
            .collect()
    };
    let place = |s: Span| -> (usize, std::ops::Range<usize>) {
        let i = file.part_of(s.start as usize).unwrap_or(0);
        let (id, base, len) = parts[i.min(parts.len() - 1)];
        let a = (s.start as usize).saturating_sub(base).min(len);
        let b = (s.end as usize).saturating_sub(base).clamp(a, len);
        (id, a..b)
    };
    for d in diags {
        let sev = match d.severity {
            Severity::Error => cs::Severity::Error,
            Severity::Warning => cs::Severity::Warning,
            Severity::Note => cs::Severity::Note,
        };
        let (id, range) = place(d.primary.span);
        let mut labels = vec![cs::Label::primary(id, range).with_message(&d.primary.message)];
        for l in &d.labels {
            let (id, range) = place(l.span);
            labels.push(cs::Label::secondary(id, range).with_message(&l.message));
        }
        let mut notes: Vec<String> = d.notes.iter().map(|n| format!("note: {n}")).collect();
        if let Some(h) = &d.help {
            notes.push(format!("help: {h}"));
        }
        let diag = cs::Diagnostic::new(sev)
            .with_code(d.code.name())
            .with_message(&d.message)
            .with_labels(labels)
            .with_notes(notes);
        // Writing to an in-memory buffer or a terminal; a failed write has nowhere to be reported.
        let _ = term::emit(w, &config, &files, &diag);
    }
}

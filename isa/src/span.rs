//! Source spans and source files.
//!
//! A [`Span`] is a byte range into one `.tile` source. Spans never take part in IR
//! equality (two kernels that differ only in where their text sat are the same kernel),
//! which is what lets `parse(print(ir)) == ir` hold.

use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};

/// A byte range `start..end` in a source file. Compares equal to every other span.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// A span covering `start..end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: u32::try_from(start).unwrap_or(u32::MAX),
            end: u32::try_from(end).unwrap_or(u32::MAX),
        }
    }
    /// The span for IR built in code, with no text behind it.
    pub const DUMMY: Span = Span { start: 0, end: 0 };
    /// Whether this span points at real text.
    pub fn is_dummy(&self) -> bool {
        self.start == 0 && self.end == 0
    }
    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        if self.is_dummy() {
            return other;
        }
        if other.is_dummy() {
            return self;
        }
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
    /// Byte range for slicing the source.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

impl PartialEq for Span {
    fn eq(&self, _: &Span) -> bool {
        true
    }
}
impl Eq for Span {}
impl Hash for Span {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}

/// A named source text, used to render diagnostics and to turn spans into line:column.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        let mut line_starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i + 1);
            }
        }
        SourceFile {
            name: name.into(),
            text,
            line_starts,
        }
    }
    /// 1-based (line, column) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let line = match self.line_starts.binary_search(&offset) {
            Ok(l) => l,
            Err(l) => l - 1,
        };
        let col = offset - self.line_starts[line];
        (line + 1, col + 1)
    }
    /// The text of a 1-based line, without its newline.
    pub fn line_text(&self, line: usize) -> &str {
        if line == 0 || line > self.line_starts.len() {
            return "";
        }
        let start = self.line_starts[line - 1];
        let end = self.line_starts.get(line).copied().unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }
    /// The source text under a span (empty if it is out of range).
    pub fn snippet(&self, span: Span) -> &str {
        self.text.get(span.range()).unwrap_or("")
    }
}

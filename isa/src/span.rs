//! Source spans and source files.
//!
//! A [`Span`] is a byte range into one `.tile` source. Spans never take part in IR
//! equality (two kernels that differ only in where their text sat are the same kernel),
//! which is what lets `parse(print(ir)) == ir` hold.
//!
//! A [`SourceFile`] is usually one `.tile` text. Front ends that read other languages (the
//! TTGIR importer, whose spans point into the user's Python files) build a *composite* file
//! with [`SourceFile::composite`]: several named parts laid end to end in one text, so that a
//! `Span` still is one byte range, while line:column and rendering refer to the part it falls
//! in.

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
    /// The parts of a composite file (empty for a plain one).
    parts: Vec<SourcePart>,
}

/// One file inside a composite [`SourceFile`]: its name and where its text lies.
#[derive(Clone, Debug)]
pub struct SourcePart {
    pub name: String,
    /// Byte offset of the part's first byte in the composite text.
    pub start: usize,
    /// Byte length of the part's text (the separator after it excluded).
    pub len: usize,
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
            parts: Vec::new(),
        }
    }
    /// A composite file: `parts` (name, text) laid end to end, each followed by a newline.
    /// Spans into the result resolve to the part they fall in (see [`SourceFile::part_of`]);
    /// `name` names the whole (usually the first part).
    pub fn composite(name: impl Into<String>, parts: Vec<(String, String)>) -> SourceFile {
        let mut text = String::new();
        let mut ps = Vec::with_capacity(parts.len());
        for (pname, ptext) in parts {
            ps.push(SourcePart {
                name: pname,
                start: text.len(),
                len: ptext.len(),
            });
            text.push_str(&ptext);
            text.push('\n');
        }
        let mut f = SourceFile::new(name, text);
        f.parts = ps;
        f
    }
    /// The parts of a composite file (empty for a plain one).
    pub fn parts(&self) -> &[SourcePart] {
        &self.parts
    }
    /// The text of part `i` of a composite file.
    pub fn part_text(&self, i: usize) -> &str {
        self.parts
            .get(i)
            .and_then(|p| self.text.get(p.start..p.start + p.len))
            .unwrap_or("")
    }
    /// Index of the part a byte offset falls in (None for a plain file).
    pub fn part_of(&self, offset: usize) -> Option<usize> {
        if self.parts.is_empty() {
            return None;
        }
        let i = match self.parts.binary_search_by(|p| p.start.cmp(&offset)) {
            Ok(i) => i,
            Err(0) => 0,
            Err(i) => i - 1,
        };
        Some(i)
    }
    /// The name of the file a span points into: its part's name, or the file's name.
    pub fn file_name_of(&self, span: Span) -> &str {
        match self.part_of(span.start as usize) {
            Some(i) => &self.parts[i].name,
            None => &self.name,
        }
    }
    /// 1-based (line, column) of a byte offset; in a composite file, within the part the
    /// offset falls in.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let line = match self.line_starts.binary_search(&offset) {
            Ok(l) => l,
            Err(l) => l - 1,
        };
        let col = offset - self.line_starts[line];
        match self.part_of(offset) {
            Some(i) => {
                let start = self.parts[i].start;
                let first = match self.line_starts.binary_search(&start) {
                    Ok(l) => l,
                    Err(l) => l - 1,
                };
                (line - first + 1, col + 1)
            }
            None => (line + 1, col + 1),
        }
    }
    /// `file:line:column` of a byte offset (the part's name in a composite file).
    pub fn location(&self, offset: usize) -> String {
        let (l, c) = self.line_col(offset);
        let name = match self.part_of(offset) {
            Some(i) => &self.parts[i].name,
            None => &self.name,
        };
        format!("{name}:{l}:{c}")
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

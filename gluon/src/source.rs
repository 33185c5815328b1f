//! The source an imported kernel's spans point into: one composite [`SourceFile`] holding the
//! TTGIR text, the launch section (when there is one) and every Python file the TTGIR's
//! locations name.
//!
//! A Python file that can be read (next to the `.ttgir`, or at its path as written) is quoted
//! by diagnostics; one that cannot is stood in for by lines that only say so, so that a
//! diagnostic still prints `file.py:line:col`. A Python location becomes the span of its
//! whole source line (Triton's column is that of the innermost expression it visited, often
//! the call's last argument, so the line is what the user recognises).

use crate::lexer::{Tok, Token};
use crate::loc::{is_library, Frame};
use bwsim_isa::{SourceFile, Span};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// What a stand-in line for an unreadable Python file says.
pub const NOT_AVAILABLE: &str = "(source not available)";

/// The composite source of one import.
#[derive(Clone, Debug)]
pub struct SourceMap {
    pub file: SourceFile,
    /// Location file string → part index.
    parts: HashMap<String, usize>,
    /// Part index → whether its text is the real file.
    real: Vec<bool>,
    /// Index of the launch section's part, if any.
    pub launch_part: Option<usize>,
}

impl SourceMap {
    /// Build the source map of a TTGIR text. `dir` is the directory of the `.ttgir` file
    /// (relative Python paths resolve against it first, then against the working directory);
    /// `launch` is a launch section's file name and text.
    pub fn new(
        ttgir_name: &str,
        ttgir_text: &str,
        toks: &[Token],
        dir: Option<&Path>,
        launch: Option<(String, String)>,
    ) -> SourceMap {
        // Every `"file":line:col` in the text, in order of first appearance.
        let mut order: Vec<String> = Vec::new();
        let mut cols: HashMap<String, BTreeMap<u32, u32>> = HashMap::new();
        for w in toks.windows(5) {
            if let [Tok::Str(f), Tok::Punct(":"), Tok::Int(l), Tok::Punct(":"), Tok::Int(c)] =
                [&w[0].tok, &w[1].tok, &w[2].tok, &w[3].tok, &w[4].tok]
            {
                let lines = cols.entry(f.clone()).or_insert_with(|| {
                    order.push(f.clone());
                    BTreeMap::new()
                });
                let (l, c) = ((*l).clamp(1, 1 << 24) as u32, (*c).clamp(0, 1 << 12) as u32);
                let e = lines.entry(l).or_insert(c);
                *e = (*e).max(c);
            }
        }
        let mut parts_text = vec![(ttgir_name.to_string(), ttgir_text.to_string())];
        let mut real = vec![true];
        let mut launch_part = None;
        if let Some(l) = launch {
            launch_part = Some(parts_text.len());
            parts_text.push(l);
            real.push(true);
        }
        let mut parts = HashMap::new();
        for f in order {
            let lines = &cols[&f];
            let found = if is_library(&f) {
                None
            } else {
                read_python(&f, dir)
            };
            parts.insert(f.clone(), parts_text.len());
            match found {
                Some((path, text)) => {
                    parts_text.push((path.display().to_string(), text));
                    real.push(true);
                }
                None => {
                    let max = lines.keys().last().copied().unwrap_or(1);
                    let mut text = String::new();
                    for l in 1..=max {
                        if let Some(c) = lines.get(&l) {
                            text.push_str(&" ".repeat(*c as usize));
                            text.push_str(NOT_AVAILABLE);
                        }
                        text.push('\n');
                    }
                    parts_text.push((f.clone(), text));
                    real.push(false);
                }
            }
        }
        SourceMap {
            file: SourceFile::composite(ttgir_name, parts_text),
            parts,
            real,
            launch_part,
        }
    }

    /// The span of a Python frame: its whole line (leading and trailing blanks excluded) in a
    /// readable file, or from its column to the end of the stand-in line.
    pub fn span(&self, f: &Frame) -> Option<Span> {
        let &i = self.parts.get(&f.file)?;
        let part = &self.file.parts()[i];
        let text = self.file.part_text(i);
        let mut start = 0usize;
        for _ in 1..f.line {
            start = start + text.get(start..)?.find('\n')? + 1;
        }
        let line_len = text[start..].find('\n').unwrap_or(text.len() - start);
        let line = &text[start..start + line_len];
        let (a, b) = if self.real[i] {
            let a = line.len() - line.trim_start().len();
            let b = line.trim_end().len().max(a);
            (a, b)
        } else {
            ((f.col as usize).min(line_len), line_len)
        };
        Some(Span::new(part.start + start + a, part.start + start + b))
    }

    /// Whether the Python file of a frame was found and is quoted.
    pub fn is_real(&self, file: &str) -> bool {
        self.parts.get(file).is_some_and(|&i| self.real[i])
    }

    /// A span for what concerns the whole TTGIR file: its first non-blank line (the file's
    /// first byte when it has none), so that such a diagnostic still shows where it is.
    pub fn ttgir_span(&self) -> Span {
        // The TTGIR is the composite's first part, at offset 0, followed by a newline.
        let text = self.file.part_text(0);
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            let t = line.trim_end();
            let lead = t.len() - t.trim_start().len();
            if lead < t.len() {
                return Span::new(at + lead, at + t.len());
            }
            at += line.len();
        }
        Span::new(0, 1)
    }

    /// The offset of the launch section's part (its spans are shifted by this).
    pub fn launch_base(&self) -> usize {
        self.launch_part.map_or(0, |i| self.file.parts()[i].start)
    }
}

fn read_python(f: &str, dir: Option<&Path>) -> Option<(PathBuf, String)> {
    let p = Path::new(f);
    let mut candidates = Vec::new();
    if p.is_absolute() {
        candidates.push(p.to_path_buf());
    } else {
        if let Some(d) = dir {
            candidates.push(d.join(p));
        }
        candidates.push(p.to_path_buf());
    }
    candidates.into_iter().find_map(|c| {
        // Only a regular file of sensible size is read: a location may name anything
        // (`/dev/zero`, a FIFO), and reading that would never end.
        let meta = std::fs::metadata(&c).ok()?;
        if !meta.is_file() || meta.len() > MAX_PYTHON_BYTES {
            return None;
        }
        std::fs::read_to_string(&c).ok().map(|t| (clean(&c), t))
    })
}

/// The largest Python file a location may quote (larger ones are shown as not available).
const MAX_PYTHON_BYTES: u64 = 16 << 20;

/// `a/./b` → `a/b` and `a/3.9/../b` → `a/b`, for display: a release folder's TTGIR names its
/// shared sources `../NAME.py`, which reads better as the path of the file itself. A `..`
/// after another `..` or at the start stays.
fn clean(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out: Vec<Component> = Vec::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex;

    #[test]
    fn display_paths_fold_a_folder_and_its_parent() {
        let c = |p: &str| clean(Path::new(p)).display().to_string();
        assert_eq!(
            c("tests/gluon/3.9/../planted_bugs.py"),
            "tests/gluon/planted_bugs.py"
        );
        assert_eq!(c("./a/./b.py"), "a/b.py");
        assert_eq!(c("../k.py"), "../k.py");
        assert_eq!(c("../../a/../k.py"), "../../k.py");
    }

    #[test]
    fn missing_files_print_line_and_column() {
        let text = "#loc1 = loc(\"nowhere/k.py\":3:4)\n";
        let toks = lex(text, 0).unwrap();
        let m = SourceMap::new("k.ttgir", text, &toks, None, None);
        let f = Frame {
            file: "nowhere/k.py".into(),
            line: 3,
            col: 4,
        };
        let sp = m.span(&f).unwrap();
        assert_eq!(m.file.location(sp.start as usize), "nowhere/k.py:3:5");
        assert_eq!(m.file.snippet(sp), NOT_AVAILABLE);
        assert!(!m.is_real("nowhere/k.py"));
    }
}

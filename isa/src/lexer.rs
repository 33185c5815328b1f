//! The `.tile` lexer: bytes to tokens with spans.
//!
//! Newlines are tokens (they end statements) except inside `( )` and `[ ]`, where a statement
//! may continue. Comments are tokens too, so the parser can keep them. The lexer never panics:
//! a bad character or an overlong number is a diagnostic.

use crate::diag::Diagnostic;
use crate::span::Span;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    Int(i64),
    Float(f64),
    Str(String),
    /// Punctuation, one of [`PUNCT`].
    Punct(&'static str),
    /// `// ...` (the text including `//`, trailing space trimmed).
    Comment(String),
    Newline,
    Eof,
}

/// Punctuation, longest first (the lexer tries them in order).
pub const PUNCT: &[&str] = &[
    "..", "==", "!=", "<=", ">=", "<<", ">>", "&&", "||", "(", ")", "[", "]", "{", "}", ",", ":", "=", "<",
    ">", "+", "-", "*", "/", "%", "&", "|", "^", "!", ".",
];

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

impl Tok {
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Int(v) => format!("`{v}`"),
            Tok::Float(v) => format!("`{v:?}`"),
            Tok::Str(_) => "a string".into(),
            Tok::Punct(p) => format!("`{p}`"),
            Tok::Comment(_) => "a comment".into(),
            Tok::Newline => "end of line".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

/// Split source text into tokens.
pub fn lex(src: &str) -> Result<Vec<Token>, Diagnostic> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut depth: i32 = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c == b'\n' {
            i += 1;
            if depth <= 0 {
                out.push(Token {
                    tok: Tok::Newline,
                    span: Span::new(start, i),
                });
            }
            continue;
        }
        if c == b' ' || c == b'\t' || c == b'\r' {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            let text = src[start..i].trim_end().to_string();
            out.push(Token {
                tok: Tok::Comment(text),
                span: Span::new(start, i),
            });
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Ident(src[start..i].to_string()),
                span: Span::new(start, i),
            });
            continue;
        }
        if c.is_ascii_digit() {
            let (tok, end) = lex_number(src, i)?;
            i = end;
            out.push(Token {
                tok,
                span: Span::new(start, i),
            });
            continue;
        }
        if c == b'"' {
            i += 1;
            let mut s = String::new();
            loop {
                match b.get(i) {
                    None | Some(b'\n') => {
                        return Err(Diagnostic::error(
                            "syntax",
                            "unterminated string",
                            Span::new(start, i),
                            "string starts here",
                        )
                        .with_help("close it with `\"` on the same line"));
                    }
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        match b.get(i + 1) {
                            Some(b'"') => s.push('"'),
                            Some(b'\\') => s.push('\\'),
                            Some(b'n') => s.push('\n'),
                            _ => {
                                return Err(Diagnostic::error(
                                    "syntax",
                                    "unknown escape in string",
                                    Span::new(i, i + 2),
                                    "here",
                                )
                                .with_help("strings know `\\\"`, `\\\\` and `\\n`"))
                            }
                        }
                        i += 2;
                    }
                    Some(_) => {
                        let ch = src[i..].chars().next().unwrap_or('?');
                        s.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            out.push(Token {
                tok: Tok::Str(s),
                span: Span::new(start, i),
            });
            continue;
        }
        if let Some(p) = PUNCT.iter().find(|p| src[i..].starts_with(**p)) {
            i += p.len();
            match *p {
                "(" | "[" => depth += 1,
                ")" | "]" => depth -= 1,
                _ => {}
            }
            out.push(Token {
                tok: Tok::Punct(p),
                span: Span::new(start, i),
            });
            continue;
        }
        let ch = src[i..].chars().next().unwrap_or('?');
        return Err(Diagnostic::error(
            "syntax",
            format!("unexpected character {ch:?}"),
            Span::new(i, i + ch.len_utf8()),
            "not part of the .tile language",
        ));
    }
    out.push(Token {
        tok: Tok::Eof,
        span: Span::new(b.len(), b.len()),
    });
    Ok(out)
}

fn lex_number(src: &str, start: usize) -> Result<(Tok, usize), Diagnostic> {
    let b = src.as_bytes();
    let mut i = start;
    if b[i] == b'0' && matches!(b.get(i + 1), Some(b'x') | Some(b'X')) {
        i += 2;
        while i < b.len() && (b[i].is_ascii_hexdigit() || b[i] == b'_') {
            i += 1;
        }
        let digits: String = src[start + 2..i].chars().filter(|c| *c != '_').collect();
        return i64::from_str_radix(&digits, 16)
            .map(|v| (Tok::Int(v), i))
            .map_err(|_| {
                Diagnostic::error(
                    "syntax",
                    "hex integer does not fit in 64 bits",
                    Span::new(start, i),
                    "too large",
                )
            });
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut float = false;
    // `1.5` is a float; `0..n` is an integer followed by `..`.
    if i < b.len() && b[i] == b'.' && b.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
        float = true;
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            float = true;
            i = j;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
        }
    }
    let text: String = src[start..i].chars().filter(|c| *c != '_').collect();
    if float {
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok((Tok::Float(v), i)),
            _ => Err(Diagnostic::error(
                "syntax",
                "float literal out of range",
                Span::new(start, i),
                "here",
            )),
        }
    } else {
        text.parse::<i64>().map(|v| (Tok::Int(v), i)).map_err(|_| {
            Diagnostic::error(
                "syntax",
                "integer literal does not fit in 64 bits",
                Span::new(start, i),
                "too large",
            )
            .with_help("integers are signed 64-bit")
        })
    }
}

//! The `.tile` lexer: source text to tokens with byte spans.
//!
//! This module owns the lexical rules of docs/tile-format.md: identifiers, integer and float
//! literals, strings, punctuation, comments and significant newlines.
//!
//! - Newlines are tokens (they end statements) except inside `( )` and `[ ]`, where a statement
//!   may continue over several lines. A `}` closes every `(`/`[` left open before it, so an
//!   unbalanced parenthesis cannot swallow the rest of the file.
//! - A comment on a line of its own (at statement level) is a [`Tok::Comment`] token. A comment
//!   after code on the same line, or any comment inside `( )`/`[ ]`, goes to
//!   [`Lexed::trailing_comments`]: the parser moves it above the statement it sits in.
//! - The lexer never panics. Bad characters, unterminated strings and literals that do not fit
//!   are diagnostics (code `syntax`); lexing goes on after each so that several are reported.

use crate::diag::{Code, Diagnostic};
use crate::span::Span;

/// Most diagnostics reported for one input.
pub const MAX_ERRORS: usize = 20;

/// One token.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    /// A non-negative integer literal (`-3` is `-` then `3`).
    Int(i64),
    /// A finite, non-negative float literal.
    Float(f64),
    /// A string literal, escapes resolved.
    Str(String),
    /// Punctuation, one of [`PUNCT`].
    Punct(&'static str),
    /// A comment on a line of its own: its text from `//`, trailing whitespace trimmed.
    Comment(String),
    /// End of a line at statement level.
    Newline,
    Eof,
}

/// Punctuation, longest first (the lexer tries them in order).
pub const PUNCT: &[&str] = &[
    "..", "==", "!=", "<=", ">=", "<<", ">>", "&&", "||", "(", ")", "[", "]", "{", "}", ",", ":", "=", "<",
    ">", "+", "-", "*", "/", "%", "&", "|", "^", "!", ".",
];

/// A token and where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

impl Tok {
    /// How a diagnostic names this token: "`foo`", "end of line", ...
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

/// The output of [`lex`].
#[derive(Clone, Debug, Default)]
pub struct Lexed {
    /// Tokens, ending with [`Tok::Eof`].
    pub tokens: Vec<Token>,
    /// Comments that follow code on their line or sit inside `( )`/`[ ]`, in source order.
    pub trailing_comments: Vec<(Span, String)>,
    /// Lexical errors (at most [`MAX_ERRORS`]); the tokens are not meaningful if any.
    pub errors: Vec<Diagnostic>,
}

/// Split source text into tokens. Never panics.
pub fn lex(src: &str) -> Lexed {
    let mut lx = Lexer {
        src,
        b: src.as_bytes(),
        i: 0,
        out: Lexed::default(),
        stack: Vec::new(),
        line_has_code: false,
    };
    lx.run();
    lx.out
}

struct Lexer<'a> {
    src: &'a str,
    b: &'a [u8],
    i: usize,
    out: Lexed,
    /// Open brackets: `(`, `[` or `{`.
    stack: Vec<u8>,
    /// Whether a token has been produced on the current line.
    line_has_code: bool,
}

impl Lexer<'_> {
    fn newline_significant(&self) -> bool {
        matches!(self.stack.last(), None | Some(b'{'))
    }

    fn push(&mut self, tok: Tok, start: usize) {
        self.out.tokens.push(Token {
            tok,
            span: Span::new(start, self.i),
        });
        self.line_has_code = true;
    }

    fn error(&mut self, d: Diagnostic) {
        if self.out.errors.len() < MAX_ERRORS {
            self.out.errors.push(d);
        }
    }

    fn run(&mut self) {
        while self.i < self.b.len() {
            if self.out.errors.len() >= MAX_ERRORS {
                break;
            }
            let c = self.b[self.i];
            let start = self.i;
            match c {
                b'\n' => {
                    self.i += 1;
                    if self.newline_significant() {
                        self.out.tokens.push(Token {
                            tok: Tok::Newline,
                            span: Span::new(start, self.i),
                        });
                    }
                    self.line_has_code = false;
                }
                b' ' | b'\t' | b'\r' => self.i += 1,
                b'/' if self.b.get(self.i + 1) == Some(&b'/') => self.comment(),
                b'"' => self.string(),
                b'0'..=b'9' => self.number(),
                c if c.is_ascii_alphabetic() || c == b'_' => {
                    while self.i < self.b.len()
                        && (self.b[self.i].is_ascii_alphanumeric() || self.b[self.i] == b'_')
                    {
                        self.i += 1;
                    }
                    let text = self.src.get(start..self.i).unwrap_or_default().to_string();
                    self.push(Tok::Ident(text), start);
                }
                _ => self.punct_or_error(),
            }
        }
        let end = self.b.len();
        self.out.tokens.push(Token {
            tok: Tok::Eof,
            span: Span::new(end, end),
        });
    }

    fn comment(&mut self) {
        let start = self.i;
        while self.i < self.b.len() && self.b[self.i] != b'\n' {
            self.i += 1;
        }
        let text = self
            .src
            .get(start..self.i)
            .unwrap_or_default()
            .trim_end()
            .to_string();
        let span = Span::new(start, self.i);
        if !self.line_has_code && self.newline_significant() {
            self.out.tokens.push(Token {
                tok: Tok::Comment(text),
                span,
            });
        } else {
            self.out.trailing_comments.push((span, text));
        }
    }

    fn punct_or_error(&mut self) {
        let start = self.i;
        let rest = self.src.get(self.i..).unwrap_or_default();
        if let Some(p) = PUNCT.iter().copied().find(|p| rest.starts_with(p)) {
            self.i += p.len();
            match p {
                "(" => self.stack.push(b'('),
                "[" => self.stack.push(b'['),
                "{" => self.stack.push(b'{'),
                ")" | "]" => {
                    if matches!(self.stack.last(), Some(b'(') | Some(b'[')) {
                        self.stack.pop();
                    }
                }
                "}" => {
                    // Close the brace and anything left open inside it.
                    while let Some(top) = self.stack.pop() {
                        if top == b'{' {
                            break;
                        }
                    }
                }
                _ => {}
            }
            self.push(Tok::Punct(p), start);
            return;
        }
        let ch = rest.chars().next().unwrap_or('\u{fffd}');
        self.i += ch.len_utf8().max(1);
        self.error(Diagnostic::error(
            Code::Syntax,
            format!("unexpected character {ch:?}"),
            Span::new(start, self.i),
            "not part of the .tile language",
        ));
    }

    fn string(&mut self) {
        let start = self.i;
        self.i += 1;
        let mut s = String::new();
        loop {
            match self.b.get(self.i) {
                None | Some(b'\n') => {
                    self.error(
                        Diagnostic::error(
                            Code::Syntax,
                            "unterminated string",
                            Span::new(start, self.i),
                            "string starts here",
                        )
                        .with_help("close it with `\"` on the same line"),
                    );
                    return;
                }
                Some(b'"') => {
                    self.i += 1;
                    break;
                }
                Some(b'\\') => {
                    let esc = match self.b.get(self.i + 1) {
                        Some(b'"') => Some('"'),
                        Some(b'\\') => Some('\\'),
                        Some(b'n') => Some('\n'),
                        Some(b't') => Some('\t'),
                        Some(b'r') => Some('\r'),
                        _ => None,
                    };
                    match esc {
                        Some(ch) => {
                            s.push(ch);
                            self.i += 2;
                        }
                        None => {
                            let len = self
                                .src
                                .get(self.i + 1..)
                                .and_then(|r| r.chars().next())
                                .map_or(0, char::len_utf8);
                            self.error(
                                Diagnostic::error(
                                    Code::Syntax,
                                    "unknown escape in string",
                                    Span::new(self.i, self.i + 1 + len),
                                    "unknown escape",
                                )
                                .with_help("strings know `\\\"`, `\\\\`, `\\n`, `\\t` and `\\r`"),
                            );
                            self.i += 1;
                        }
                    }
                }
                Some(_) => {
                    let ch = self
                        .src
                        .get(self.i..)
                        .and_then(|r| r.chars().next())
                        .unwrap_or('\u{fffd}');
                    s.push(ch);
                    self.i += ch.len_utf8().max(1);
                }
            }
        }
        self.push(Tok::Str(s), start);
    }

    /// An integer token, or (`None`: it does not fit) the error, whose help names the largest
    /// integer as `max` spells it.
    fn int_literal(&mut self, v: Option<i64>, start: usize, span: Span, max: &str) {
        match v {
            Some(v) => self.push(Tok::Int(v), start),
            None => self.error(
                Diagnostic::error(
                    Code::Syntax,
                    "integer literal does not fit in 64 bits",
                    span,
                    "too large",
                )
                .with_help(format!("integers are signed 64-bit: at most {max}")),
            ),
        }
    }

    fn digits(&mut self, pred: fn(u8) -> bool) {
        while self.i < self.b.len() && (pred(self.b[self.i]) || self.b[self.i] == b'_') {
            self.i += 1;
        }
    }

    fn number(&mut self) {
        let start = self.i;
        let b = self.b;
        if b[self.i] == b'0' && matches!(b.get(self.i + 1), Some(b'x') | Some(b'X')) {
            self.i += 2;
            self.digits(|c| c.is_ascii_hexdigit());
            let digits: String = self
                .src
                .get(start + 2..self.i)
                .unwrap_or_default()
                .chars()
                .filter(|c| *c != '_')
                .collect();
            let span = Span::new(start, self.i);
            if digits.is_empty() {
                self.error(Diagnostic::error(
                    Code::Syntax,
                    "expected hex digits after `0x`",
                    span,
                    "no digits",
                ));
                return;
            }
            let v = i64::from_str_radix(&digits, 16);
            self.int_literal(v.ok(), start, span, "0x7fff_ffff_ffff_ffff");
            return;
        }
        self.digits(|c| c.is_ascii_digit());
        let mut float = false;
        // `1.5` is a float; `0..n` is an integer followed by `..`, `x.0` is not a thing.
        if b.get(self.i) == Some(&b'.') && b.get(self.i + 1).is_some_and(u8::is_ascii_digit) {
            float = true;
            self.i += 1;
            self.digits(|c| c.is_ascii_digit());
        }
        if matches!(b.get(self.i), Some(b'e') | Some(b'E')) {
            let mut j = self.i + 1;
            if matches!(b.get(j), Some(b'+') | Some(b'-')) {
                j += 1;
            }
            if b.get(j).is_some_and(u8::is_ascii_digit) {
                float = true;
                self.i = j;
                self.digits(|c| c.is_ascii_digit());
            }
        }
        let text: String = self
            .src
            .get(start..self.i)
            .unwrap_or_default()
            .chars()
            .filter(|c| *c != '_')
            .collect();
        let span = Span::new(start, self.i);
        if float {
            match text.parse::<f64>() {
                Ok(v) if v.is_finite() => self.push(Tok::Float(v), start),
                _ => self.error(Diagnostic::error(
                    Code::Syntax,
                    "float literal out of range",
                    span,
                    "not a finite f64",
                )),
            }
        } else {
            self.int_literal(text.parse::<i64>().ok(), start, span, &i64::MAX.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok> {
        let l = lex(src);
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        l.tokens.into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn numbers() {
        assert_eq!(
            toks("0x1_F 1_000 0..n"),
            vec![
                Tok::Int(31),
                Tok::Int(1000),
                Tok::Int(0),
                Tok::Punct(".."),
                Tok::Ident("n".into()),
                Tok::Eof
            ]
        );
        for v in [
            0.0,
            1.0,
            1e16,
            1.5e-7,
            5e-324,
            f64::MAX,
            0.1 + 0.2,
            1e15,
            123456789.125,
        ] {
            let s = format!("{v:?}");
            assert_eq!(toks(&s), vec![Tok::Float(v), Tok::Eof], "{s}");
        }
        assert_eq!(
            toks("2.0e5 1e-3 1E+2"),
            vec![Tok::Float(2.0e5), Tok::Float(1e-3), Tok::Float(100.0), Tok::Eof]
        );
    }

    #[test]
    fn too_large_integers_say_the_largest_in_their_own_base() {
        for (src, max) in [
            ("9223372036854775808", "at most 9223372036854775807"),
            ("0x8000000000000000", "at most 0x7fff_ffff_ffff_ffff"),
        ] {
            let l = lex(src);
            assert_eq!(l.errors.len(), 1, "{src}");
            assert_eq!(l.errors[0].message, "integer literal does not fit in 64 bits");
            assert!(
                l.errors[0].help.iter().any(|h| h.contains(max)),
                "{src}: {:?}",
                l.errors[0].help
            );
        }
        assert_eq!(toks("9223372036854775807"), vec![Tok::Int(i64::MAX), Tok::Eof]);
        assert_eq!(toks("0x7fffffffffffffff"), vec![Tok::Int(i64::MAX), Tok::Eof]);
    }

    #[test]
    fn errors_do_not_panic() {
        for src in [
            "99999999999999999999",
            "0x",
            "0xffffffffffffffffff",
            "1e999",
            "\"abc",
            "\"\\q\"",
            "@",
            "é",
            "\u{0}",
        ] {
            let l = lex(src);
            assert!(!l.errors.is_empty(), "{src:?}");
        }
    }

    #[test]
    fn newlines_and_comments() {
        let l = lex("a // t\n// own\nf(1,\n // inner\n 2)\n");
        let t: Vec<Tok> = l.tokens.into_iter().map(|t| t.tok).collect();
        assert_eq!(
            t,
            vec![
                Tok::Ident("a".into()),
                Tok::Newline,
                Tok::Comment("// own".into()),
                Tok::Newline,
                Tok::Ident("f".into()),
                Tok::Punct("("),
                Tok::Int(1),
                Tok::Punct(","),
                Tok::Int(2),
                Tok::Punct(")"),
                Tok::Newline,
                Tok::Eof
            ]
        );
        let c: Vec<&str> = l.trailing_comments.iter().map(|(_, s)| s.as_str()).collect();
        assert_eq!(c, vec!["// t", "// inner"]);
    }

    #[test]
    fn strings() {
        assert_eq!(toks(r#""a\"b\\c""#), vec![Tok::Str("a\"b\\c".into()), Tok::Eof]);
    }
}

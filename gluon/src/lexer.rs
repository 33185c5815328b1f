//! Tokens of MLIR's textual form, as Triton prints TTGIR.
//!
//! The lexer keeps line breaks as tokens: the printer writes one operation per line, and the
//! structure parser ([`crate::syntax`]) relies on that to find where an operation ends and
//! where a region opens (`{` at the end of a line). Shapes such as `128x64xf16` lex as one
//! [`Tok::Shape`] (`[128, 64]`) followed by the element type, so that types parse from
//! tokens like everything else.

use crate::error::ImportError;
use bwsim_isa::Span;

/// One token.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// `%name`, `%0`, `%name#1` (the text after `%`).
    Value(String),
    /// `^bb0`.
    Label(String),
    /// `@name`.
    Symbol(String),
    /// `#name`, `#ttg.blocked` (the text after `#`).
    Hash(String),
    /// `!tt.ptr`, `!ttg.memdesc` (the text after `!`).
    Bang(String),
    /// A bare identifier: `arith.addi`, `i32`, `tensor`, `to`, `loc`.
    Ident(String),
    Int(i64),
    Float(f64),
    /// `0x7FC00000`: the bits of a float constant.
    Hex(u64),
    Str(String),
    /// Dimensions before an element type: `128x64x` (or a trailing `128x256`).
    Shape(Vec<i64>),
    /// `( ) [ ] { } < > , : = -> * ?` and the like.
    Punct(&'static str),
    Newline,
    Eof,
    /// Where a region (`{ ... }` on lines of its own) sat in an operation; the index into
    /// [`crate::syntax::Op::regions`]. Never produced by [`lex`].
    Region(usize),
}

impl Tok {
    /// The character a named token starts with in the text (`%` of a value, `^`, `@`, `#`,
    /// `!`), which its string leaves out; "" for every other token.
    pub fn sigil(&self) -> &'static str {
        match self {
            Tok::Value(_) => "%",
            Tok::Label(_) => "^",
            Tok::Symbol(_) => "@",
            Tok::Hash(_) => "#",
            Tok::Bang(_) => "!",
            _ => "",
        }
    }
}

/// A token with its byte span in the source.
#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

const PUNCTS: &[&str] = &[
    "->", "(", ")", "[", "]", "{", "}", "<", ">", ",", ":", "=", "*", "?", "+", "-",
];

/// A character of MLIR's `bare-id` after the first: letters, digits, `_`, `$`, `.`.
fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'$'
}

/// A character of MLIR's `suffix-id` (the name after `%`, `^`, `@`): a `bare-id` character
/// or `-` (`%c-1_i32`, the name MLIR gives the constant -1).
fn suffix_char(c: u8) -> bool {
    ident_char(c) || c == b'-'
}

/// Split `text` into tokens; `base` is added to every span (the text's offset in its file).
pub fn lex(text: &str, base: usize) -> Result<Vec<Token>, ImportError> {
    let b = text.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    let sp = |a: usize, e: usize| Span::new(base + a, base + e);
    while i < b.len() {
        let c = b[i];
        let start = i;
        match c {
            b'\n' => {
                out.push(Token {
                    tok: Tok::Newline,
                    span: sp(i, i + 1),
                });
                i += 1;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                i += 1;
                let mut s = String::new();
                loop {
                    match b.get(i) {
                        None | Some(b'\n') => {
                            return Err(ImportError::Syntax {
                                span: sp(start, i),
                                message: "unterminated string".into(),
                            })
                        }
                        Some(b'"') => {
                            i += 1;
                            break;
                        }
                        Some(b'\\') => {
                            let e = b.get(i + 1).copied().unwrap_or(b'\\');
                            match e {
                                b'n' => s.push('\n'),
                                b't' => s.push('\t'),
                                b'"' => s.push('"'),
                                b'\\' => s.push('\\'),
                                _ => {
                                    // Two hex digits: MLIR's escape for other bytes.
                                    let h = text.get(i + 1..i + 3).unwrap_or("");
                                    if let Ok(v) = u8::from_str_radix(h, 16) {
                                        s.push(v as char);
                                        i += 1;
                                    }
                                }
                            }
                            i += 2;
                        }
                        Some(_) => {
                            let ch = text[i..].chars().next().unwrap_or(' ');
                            s.push(ch);
                            i += ch.len_utf8();
                        }
                    }
                }
                out.push(Token {
                    tok: Tok::Str(s),
                    span: sp(start, i),
                });
            }
            b'@' if b.get(i + 1) == Some(&b'"') => {
                // `@"name"`: a symbol written as a string literal.
                let mut j = i + 2;
                while j < b.len() && b[j] != b'"' && b[j] != b'\n' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                if b.get(j) != Some(&b'"') {
                    return Err(ImportError::Syntax {
                        span: sp(start, j.min(b.len())),
                        message: "unterminated symbol name".into(),
                    });
                }
                out.push(Token {
                    tok: Tok::Symbol(text[i + 2..j].to_string()),
                    span: sp(start, j + 1),
                });
                i = j + 1;
            }
            b'%' | b'^' | b'@' | b'#' | b'!' => {
                i += 1;
                // `%`, `^`, `@` take MLIR's suffix-id (with `-`); `#` and `!` its bare-id; a
                // value may end in `#N`, the Nth result of a multi-result operation.
                let suffix = matches!(c, b'%' | b'^' | b'@');
                while i < b.len()
                    && (if suffix {
                        suffix_char(b[i])
                    } else {
                        ident_char(b[i])
                    })
                {
                    i += 1;
                }
                if c == b'%' && b.get(i) == Some(&b'#') && b.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
                    i += 1;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                let name = text[start + 1..i].to_string();
                if name.is_empty() {
                    return Err(ImportError::Syntax {
                        span: sp(start, i),
                        message: format!("stray `{}`", c as char),
                    });
                }
                let tok = match c {
                    b'%' => Tok::Value(name),
                    b'^' => Tok::Label(name),
                    b'@' => Tok::Symbol(name),
                    b'#' => Tok::Hash(name),
                    _ => Tok::Bang(name),
                };
                out.push(Token {
                    tok,
                    span: sp(start, i),
                });
            }
            b'0'..=b'9' => {
                let (tok, end) = number(text, i);
                i = end;
                out.push(Token {
                    tok,
                    span: sp(start, i),
                });
            }
            b'-' if b.get(i + 1).is_some_and(|d| d.is_ascii_digit()) => {
                let (tok, end) = number(text, i + 1);
                i = end;
                let tok = match tok {
                    Tok::Int(v) => Tok::Int(-v),
                    Tok::Float(v) => Tok::Float(-v),
                    other => other,
                };
                out.push(Token {
                    tok,
                    span: sp(start, i),
                });
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < b.len() && ident_char(b[i]) {
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Ident(text[start..i].to_string()),
                    span: sp(start, i),
                });
            }
            _ => {
                let Some(p) = PUNCTS.iter().find(|p| text[i..].starts_with(**p)) else {
                    let ch = text[i..].chars().next().unwrap_or('?');
                    return Err(ImportError::Syntax {
                        span: sp(i, i + ch.len_utf8()),
                        message: format!("unexpected character `{ch}`"),
                    });
                };
                i += p.len();
                out.push(Token {
                    tok: Tok::Punct(p),
                    span: sp(start, i),
                });
            }
        }
    }
    out.push(Token {
        tok: Tok::Eof,
        span: sp(b.len(), b.len()),
    });
    Ok(out)
}

/// A number at `i`: an integer, a float, a `0x` hex value or a shape `2x32x64x`.
fn number(text: &str, i: usize) -> (Tok, usize) {
    let b = text.as_bytes();
    let digits = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    if b[i] == b'0' && b.get(i + 1) == Some(&b'x') && b.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit()) {
        let mut j = i + 2;
        while j < b.len() && b[j].is_ascii_hexdigit() {
            j += 1;
        }
        return (
            Tok::Hex(u64::from_str_radix(&text[i + 2..j], 16).unwrap_or(u64::MAX)),
            j,
        );
    }
    let mut j = digits(i);
    // A shape: `128x64xf16`, `2x1xi64`, `128x!tt.ptr<f32>`, or the alloc shape `128x256`.
    if b.get(j) == Some(&b'x') {
        let mut dims = vec![text[i..j].parse::<i64>().unwrap_or(i64::MAX)];
        let mut k = j;
        while b.get(k) == Some(&b'x') {
            let d0 = k + 1;
            let d1 = digits(d0);
            if d1 > d0 {
                dims.push(text[d0..d1].parse::<i64>().unwrap_or(i64::MAX));
                k = d1;
            } else {
                // `x` followed by the element type: consume the `x`.
                k += 1;
                break;
            }
        }
        return (Tok::Shape(dims), k);
    }
    let mut float = false;
    if b.get(j) == Some(&b'.') && b.get(j + 1).is_some_and(|c| c.is_ascii_digit()) {
        float = true;
        j = digits(j + 1);
    }
    if matches!(b.get(j), Some(b'e') | Some(b'E'))
        && (b.get(j + 1).is_some_and(|c| c.is_ascii_digit())
            || (matches!(b.get(j + 1), Some(b'+') | Some(b'-'))
                && b.get(j + 2).is_some_and(|c| c.is_ascii_digit())))
    {
        float = true;
        j = digits(j + 2);
    }
    let s = &text[i..j];
    if float {
        (Tok::Float(s.parse().unwrap_or(f64::NAN)), j)
    } else {
        match s.parse::<i64>() {
            Ok(v) => (Tok::Int(v), j),
            Err(_) => (Tok::Float(s.parse().unwrap_or(f64::NAN)), j),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s, 0).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn shapes_values_and_types() {
        assert_eq!(
            toks("%a_bufs = ttg.local_alloc : () -> !ttg.memdesc<2x32x64xf32, #shared, #smem, mutable>"),
            vec![
                Tok::Value("a_bufs".into()),
                Tok::Punct("="),
                Tok::Ident("ttg.local_alloc".into()),
                Tok::Punct(":"),
                Tok::Punct("("),
                Tok::Punct(")"),
                Tok::Punct("->"),
                Tok::Bang("ttg.memdesc".into()),
                Tok::Punct("<"),
                Tok::Shape(vec![2, 32, 64]),
                Tok::Ident("f32".into()),
                Tok::Punct(","),
                Tok::Hash("shared".into()),
                Tok::Punct(","),
                Tok::Hash("smem".into()),
                Tok::Punct(","),
                Tok::Ident("mutable".into()),
                Tok::Punct(">"),
                Tok::Eof,
            ]
        );
        assert_eq!(toks("%mma#1")[0], Tok::Value("mma#1".into()));
        assert_eq!(toks("128x256>")[0], Tok::Shape(vec![128, 256]));
        assert_eq!(
            toks("128x!tt.ptr")[..2],
            [Tok::Shape(vec![128]), Tok::Bang("tt.ptr".into())]
        );
    }

    #[test]
    fn numbers_and_strings() {
        assert_eq!(toks("-1")[0], Tok::Int(-1));
        assert_eq!(toks("2.000000e+00")[0], Tok::Float(2.0));
        assert_eq!(toks("5.000000e-01")[0], Tok::Float(0.5));
        assert_eq!(toks("0x7FC00000")[0], Tok::Hex(0x7FC0_0000));
        assert_eq!(toks(r#""a\"b""#)[0], Tok::Str("a\"b".into()));
        assert_eq!(
            toks("\"x.py\":13:0")[..5],
            [
                Tok::Str("x.py".into()),
                Tok::Punct(":"),
                Tok::Int(13),
                Tok::Punct(":"),
                Tok::Int(0)
            ]
        );
    }

    #[test]
    fn value_names_follow_mlir_suffix_ids() {
        assert_eq!(
            toks("%c-1_i32 = arith.constant -1 : i32")[..3],
            [
                Tok::Value("c-1_i32".into()),
                Tok::Punct("="),
                Tok::Ident("arith.constant".into())
            ]
        );
        assert_eq!(toks("%a_desc.shape.0")[0], Tok::Value("a_desc.shape.0".into()));
        assert_eq!(toks("%x$y")[0], Tok::Value("x$y".into()));
        assert_eq!(toks("%0#12")[0], Tok::Value("0#12".into()));
        assert_eq!(toks("^bb-1")[0], Tok::Label("bb-1".into()));
        assert_eq!(
            toks("@\"k e\"(")[..2],
            [Tok::Symbol("k e".into()), Tok::Punct("(")]
        );
        // `#` and `!` names are bare-ids: no `-`.
        assert_eq!(
            toks("#loc-1")[..3],
            [Tok::Hash("loc".into()), Tok::Int(-1), Tok::Eof]
        );
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert!(lex("\"open", 0).is_err());
        assert!(lex("a ` b", 0).is_err());
        assert!(lex("%", 0).is_err());
        assert!(lex("@\"open", 0).is_err());
    }
}

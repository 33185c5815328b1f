//! Tokens of a whole PTX file, each with its byte range: identifiers (registers `%r1`, labels
//! `$L__BB0_2`, symbols `_$_str`), `.directive`/`.modifier` words (with `::` parts, as in
//! `.shared::cta`), numbers (integers, `0f`/`0d` hexadecimal floats, decimals), strings and
//! punctuation. `//` and `/* */` comments are skipped.

use crate::Error;
use bwsim_isa::span::Span;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier: an opcode, a register, a label, a symbol.
    Ident(String),
    /// `.word`: a directive, modifier or type (without the dot).
    Dot(String),
    /// An integer literal: its 64-bit two's complement bits.
    Int(u64),
    /// `0fXXXXXXXX`: f32 bits.
    F32Bits(u32),
    /// `0dXXXXXXXXXXXXXXXX` or a decimal literal with a point or an exponent: f64 bits.
    F64Bits(u64),
    Str(String),
    Punct(char),
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'%' || c == b'$'
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

/// The tokens of `s`, or the first malformed token.
pub fn lex(s: &str) -> Result<Vec<Token>, Error> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let syntax = |start: usize, end: usize, m: String| Error::Syntax {
        message: m,
        span: Span::new(start, end),
    };
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            match s[i + 2..].find("*/") {
                Some(k) => i += k + 4,
                None => return Err(syntax(i, b.len(), "unterminated `/*` comment".into())),
            }
            continue;
        }
        let tok = if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                i += 1;
            }
            if b.get(i) != Some(&b'"') {
                return Err(syntax(start, i, "unterminated string".into()));
            }
            i += 1;
            Tok::Str(s[start + 1..i - 1].to_string())
        } else if c == b'.'
            && b.get(i + 1)
                .is_some_and(|&d| d.is_ascii_alphabetic() || d == b'_')
        {
            i += 1;
            while i < b.len() && (ident_char(b[i]) || (b[i] == b':' && b.get(i + 1) == Some(&b':'))) {
                i += if b[i] == b':' { 2 } else { 1 };
            }
            Tok::Dot(s[start + 1..i].to_string())
        } else if c == b'.'
            && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())
            && dim_suffix(&b[i + 1..]).is_some()
        {
            // `.1d` to `.5d`: the dimensionality of `cp.async.bulk.tensor`.
            i += 1 + dim_suffix(&b[i + 1..]).unwrap_or(0);
            Tok::Dot(s[start + 1..i].to_string())
        } else if ident_start(c) {
            i += 1;
            while i < b.len() && ident_char(b[i]) {
                i += 1;
            }
            Tok::Ident(s[start..i].to_string())
        } else if c.is_ascii_digit() {
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
                let so_far = &s[start..i];
                if matches!(b[i - 1], b'e' | b'E')
                    && !["0x", "0X", "0f", "0F", "0d", "0D"]
                        .iter()
                        .any(|p| so_far.starts_with(p))
                    && matches!(b.get(i), Some(b'-' | b'+'))
                {
                    i += 1;
                }
            }
            number(&s[start..i])
                .ok_or_else(|| syntax(start, i, format!("`{}` is not a PTX number", &s[start..i])))?
        } else if b"{};,@!|<>-:[]+=()".contains(&c) {
            i += 1;
            Tok::Punct(c as char)
        } else {
            let ch = s[i..].chars().next().unwrap_or('?');
            return Err(syntax(
                i,
                i + ch.len_utf8(),
                format!("unexpected character `{ch}`"),
            ));
        };
        out.push(Token {
            tok,
            span: Span::new(start, i),
        });
    }
    Ok(out)
}

/// A PTX numeric literal: integers (`12`, `0x1F`, `0b101`, `017` octal, an optional `U`),
/// `0f`/`0d` hexadecimal floats and decimal floats.
fn number(t: &str) -> Option<Tok> {
    let lower = t.to_ascii_lowercase();
    if let Some(h) = lower.strip_prefix("0f") {
        return (h.len() == 8).then(|| u32::from_str_radix(h, 16).ok().map(Tok::F32Bits))?;
    }
    if let Some(h) = lower.strip_prefix("0d") {
        return (h.len() == 16).then(|| u64::from_str_radix(h, 16).ok().map(Tok::F64Bits))?;
    }
    if !lower.starts_with("0x") && (lower.contains('.') || lower.contains('e')) {
        return lower.parse::<f64>().ok().map(|v| Tok::F64Bits(v.to_bits()));
    }
    let t = lower.strip_suffix('u').unwrap_or(&lower);
    let v = if let Some(h) = t.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()?
    } else if let Some(h) = t.strip_prefix("0b") {
        u64::from_str_radix(h, 2).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse::<u64>().ok()?
    };
    Some(Tok::Int(v))
}

/// The length of a `Nd` modifier (digits then `d`, not followed by an identifier character) at
/// the start of `b`.
fn dim_suffix(b: &[u8]) -> Option<usize> {
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    (digits > 0 && b.get(digits) == Some(&b'd') && !b.get(digits + 1).is_some_and(|&c| ident_char(c)))
        .then_some(digits + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s)
            .map(|v| v.into_iter().map(|t| t.tok).collect())
            .unwrap_or_default()
    }

    #[test]
    fn forms_compilers_emit() {
        assert_eq!(
            toks("ld.shared::cta.b32 %r1, [$L__x+16]; // c"),
            vec![
                Tok::Ident("ld".into()),
                Tok::Dot("shared::cta".into()),
                Tok::Dot("b32".into()),
                Tok::Ident("%r1".into()),
                Tok::Punct(','),
                Tok::Punct('['),
                Tok::Ident("$L__x".into()),
                Tok::Punct('+'),
                Tok::Int(16),
                Tok::Punct(']'),
                Tok::Punct(';'),
            ]
        );
        assert_eq!(toks("0f3F800000"), vec![Tok::F32Bits(0x3f80_0000)]);
        assert_eq!(toks("0d3FF0000000000000"), vec![Tok::F64Bits(1f64.to_bits())]);
        assert_eq!(
            toks("0x10 010 1.5e-1"),
            vec![Tok::Int(16), Tok::Int(8), Tok::F64Bits(0.15f64.to_bits())]
        );
        assert_eq!(
            toks(".file 1 \"a.py\""),
            vec![Tok::Dot("file".into()), Tok::Int(1), Tok::Str("a.py".into())]
        );
    }

    #[test]
    fn malformed_tokens_have_spans() {
        let Err(Error::Syntax { span, .. }) = lex("mov.b32 %r1, 0f12;") else {
            panic!("expected a syntax error");
        };
        assert_eq!((span.start, span.end), (13, 17));
        let Err(Error::Syntax { span, .. }) = lex("  \"abc") else {
            panic!("expected a syntax error");
        };
        assert_eq!((span.start, span.end), (2, 6));
        assert!(lex("a # b").is_err());
    }
}

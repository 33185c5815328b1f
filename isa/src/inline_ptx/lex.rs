//! Tokens of an inline PTX snippet, each with its byte range in the snippet.

use super::PtxError;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    /// An identifier: an opcode, a register name (`%r1`, `ra`), a predicate.
    Ident(String),
    /// `$N`: an operand of the snippet.
    Operand(usize),
    /// `.word`: a modifier, type or directive.
    Dot(String),
    /// An integer literal (decimal, `0x`, `0b`, octal; its 64-bit two's complement bits).
    Int(u64),
    /// `0fXXXXXXXX` (f32 bits).
    F32Bits(u32),
    /// `0dXXXXXXXXXXXXXXXX` (f64 bits) or a decimal literal with a point or an exponent.
    F64(f64),
    Punct(char),
}

#[derive(Clone, Debug)]
pub(super) struct Token {
    pub tok: Tok,
    pub at: (usize, usize),
}

fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'%'
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

pub(super) fn lex(s: &str) -> Result<Vec<Token>, PtxError> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |at: (usize, usize), m: String| PtxError::at(s, at, m);
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
                None => return Err(err((i, b.len()), "unterminated `/*` comment".into())),
            }
            continue;
        }
        let tok = if c == b'$' {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let n = s[start + 1..i].parse::<usize>().map_err(|_| {
                err(
                    (start, i.max(start + 1)),
                    "`$` must be followed by an operand number".into(),
                )
            })?;
            Tok::Operand(n)
        } else if c == b'.'
            && b.get(i + 1)
                .is_some_and(|&d| d.is_ascii_alphabetic() || d == b'_')
        {
            i += 1;
            while i < b.len() && (ident_char(b[i]) || b[i] == b':') {
                i += 1;
            }
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
                // An exponent sign: `1e-3`.
                i += 1;
                if matches!(b[i - 1], b'e' | b'E')
                    && !s[start..i].starts_with("0x")
                    && !s[start..i].starts_with("0f")
                    && !s[start..i].starts_with("0d")
                    && matches!(b.get(i), Some(b'-' | b'+'))
                {
                    i += 1;
                }
            }
            number(&s[start..i])
                .ok_or_else(|| err((start, i), format!("`{}` is not a PTX number", &s[start..i])))?
        } else if b"{};,@!|<>-:[]+".contains(&c) {
            i += 1;
            Tok::Punct(c as char)
        } else {
            let ch = s[i..].chars().next().unwrap_or('?');
            return Err(err(
                (i, i + ch.len_utf8()),
                format!("unexpected character `{ch}`"),
            ));
        };
        out.push(Token { tok, at: (start, i) });
    }
    Ok(out)
}

/// A PTX numeric literal: integers (`12`, `0x1F`, `0b101`, `017` octal, an optional `U`),
/// `0f` and `0d` hexadecimal floats, and decimal floats.
fn number(t: &str) -> Option<Tok> {
    let lower = t.to_ascii_lowercase();
    if let Some(h) = lower.strip_prefix("0f") {
        return (h.len() == 8).then(|| u32::from_str_radix(h, 16).ok().map(Tok::F32Bits))?;
    }
    if let Some(h) = lower.strip_prefix("0d") {
        return (h.len() == 16).then(|| {
            u64::from_str_radix(h, 16)
                .ok()
                .map(|b| Tok::F64(f64::from_bits(b)))
        })?;
    }
    if lower.contains('.') || (lower.contains('e') && !lower.starts_with("0x")) {
        return lower.parse::<f64>().ok().map(Tok::F64);
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

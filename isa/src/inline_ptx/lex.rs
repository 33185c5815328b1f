//! The one PTX lexer, and the token cursor both PTX parsers walk with: the inline-PTX snippet
//! parser here and the whole-file front end (`bwsim-ptxfront`). Tokens carry their byte span:
//! identifiers (registers `%r1`, labels `$L__BB0_2`, symbols), `.directive`/`.modifier` words
//! (with `::` parts, as in `.shared::cta`), numbers (integers, `0f`/`0d` hexadecimal floats,
//! decimals), `$N` snippet operands, strings and punctuation. `//` and `/* */` comments are
//! skipped.

use crate::span::Span;

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier: an opcode, a register (`%r1`, `ra`), a label, a symbol.
    Ident(String),
    /// `$N`: an operand of a snippet ([`Dialect::Snippet`] only).
    Operand(usize),
    /// `.word`: a directive, modifier or type (without the dot).
    Dot(String),
    /// An integer literal: its 64-bit two's complement bits.
    Int(u64),
    /// `0fXXXXXXXX`: f32 bits.
    F32Bits(u32),
    /// `0dXXXXXXXXXXXXXXXX` or a decimal literal with a point or an exponent: f64 bits.
    F64Bits(u64),
    /// A string literal, without its quotes ([`Dialect::File`] only).
    Str(String),
    Punct(char),
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

/// What text is lexed: the two differ only in what `$` starts and in the characters a whole
/// file has beyond an instruction's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// An inline-PTX snippet: `$N` names its `N`th operand.
    Snippet,
    /// A whole PTX file: `$` may start an identifier, and strings, `=` and parentheses occur.
    File,
}

/// A malformed token, or a token other than the one a parser expected.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntaxError {
    pub message: String,
    pub span: Span,
    /// For an unexpected token: what stood there (`None` inside: the end of the text).
    pub found: Option<Option<Tok>>,
}

impl SyntaxError {
    /// The message and what was found instead (`end` names the end of the text).
    pub fn with_found(&self, end: &str) -> String {
        match &self.found {
            Some(Some(t)) => format!("{}, found {}", self.message, describe(t)),
            Some(None) => format!("{}, found {end}", self.message),
            None => self.message.clone(),
        }
    }
}

fn ident_start(c: u8, dialect: Dialect) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'%' || (c == b'$' && dialect == Dialect::File)
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

/// The tokens of `s`, or the first malformed token.
pub fn lex(s: &str, dialect: Dialect) -> Result<Vec<Token>, SyntaxError> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |start: usize, end: usize, message: String| SyntaxError {
        message,
        span: Span::new(start, end),
        found: None,
    };
    let punct: &[u8] = match dialect {
        Dialect::Snippet => b"{};,@!|<>-:[]+",
        Dialect::File => b"{};,@!|<>-:[]+=()",
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
                None => return Err(err(i, b.len(), "unterminated `/*` comment".into())),
            }
            continue;
        }
        let tok = if c == b'$' && dialect == Dialect::Snippet {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let n = s[start + 1..i].parse::<usize>().map_err(|_| {
                err(
                    start,
                    i.max(start + 1),
                    "`$` must be followed by an operand number".into(),
                )
            })?;
            Tok::Operand(n)
        } else if c == b'"' && dialect == Dialect::File {
            i += 1;
            while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                i += 1;
            }
            if b.get(i) != Some(&b'"') {
                return Err(err(start, i, "unterminated string".into()));
            }
            i += 1;
            Tok::Str(s[start + 1..i - 1].to_string())
        } else if c == b'.'
            && (b
                .get(i + 1)
                .is_some_and(|&d| d.is_ascii_alphabetic() || d == b'_')
                || digit_modifier(&b[i + 1..]))
        {
            // `.rn`, `.shared::cta`, and modifiers that start with digits: `.2d`
            // (`cp.async.bulk.tensor`), `.32x32b` (`tcgen05.ld`).
            i += 1;
            while i < b.len() && (ident_char(b[i]) || (b[i] == b':' && b.get(i + 1) == Some(&b':'))) {
                i += if b[i] == b':' { 2 } else { 1 };
            }
            Tok::Dot(s[start + 1..i].to_string())
        } else if ident_start(c, dialect) {
            i += 1;
            while i < b.len() && ident_char(b[i]) {
                i += 1;
            }
            Tok::Ident(s[start..i].to_string())
        } else if c.is_ascii_digit() {
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
                // An exponent sign: `1e-3`.
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
                .ok_or_else(|| err(start, i, format!("`{}` is not a PTX number", &s[start..i])))?
        } else if punct.contains(&c) {
            i += 1;
            Tok::Punct(c as char)
        } else {
            let ch = s[i..].chars().next().unwrap_or('?');
            return Err(err(i, i + ch.len_utf8(), format!("unexpected character `{ch}`")));
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

/// A numeric literal operand: integer bits, f32 bits or f64 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Literal {
    Int(u64),
    F32(u32),
    F64(u64),
}

impl Literal {
    /// `-self`: two's complement negation of an integer, the sign bit flipped for a float.
    pub fn negated(self) -> Literal {
        match self {
            Literal::Int(v) => Literal::Int(v.wrapping_neg()),
            Literal::F32(b) => Literal::F32(b ^ 0x8000_0000),
            Literal::F64(b) => Literal::F64(b ^ (1 << 63)),
        }
    }
}

/// A parser's walk over its tokens: the reading of punctuation, modifiers, literals and
/// lists, the same in every PTX parser.
#[derive(Clone, Debug)]
pub struct Tokens {
    pub toks: Vec<Token>,
    /// The index of the current token.
    pub i: usize,
    /// The length of the text (the span of the end, past the last token).
    text_len: usize,
}

impl Tokens {
    pub fn new(toks: Vec<Token>, text_len: usize) -> Tokens {
        Tokens { toks, i: 0, text_len }
    }
    pub fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.tok)
    }
    /// The span of the current token (an empty one at the end of the text past the last).
    pub fn span(&self) -> Span {
        self.toks
            .get(self.i)
            .map(|t| t.span)
            .unwrap_or(Span::new(self.text_len, self.text_len))
    }
    /// The end of the token before the current one (0 before the first).
    pub fn prev_end(&self) -> usize {
        self.i
            .checked_sub(1)
            .and_then(|k| self.toks.get(k))
            .map_or(0, |t| t.span.end as usize)
    }
    /// Steps past the current token if `hit`; says `hit`.
    fn step_if(&mut self, hit: bool) -> bool {
        if hit {
            self.i += 1;
        }
        hit
    }
    /// Steps past the punctuation `c` if it is the current token.
    pub fn eat(&mut self, c: char) -> bool {
        self.step_if(self.peek() == Some(&Tok::Punct(c)))
    }
    /// Steps past `.d` if it is the current token.
    pub fn eat_dot(&mut self, d: &str) -> bool {
        self.step_if(matches!(self.peek(), Some(Tok::Dot(x)) if x == d))
    }
    /// Steps past `_` (a sink operand) if it is the current token.
    pub fn eat_sink(&mut self) -> bool {
        self.step_if(matches!(self.peek(), Some(Tok::Ident(n)) if n == "_"))
    }
    /// The error `message` about the current token.
    pub fn unexpected(&self, message: impl Into<String>) -> SyntaxError {
        SyntaxError {
            message: message.into(),
            span: self.span(),
            found: Some(self.peek().cloned()),
        }
    }
    pub fn expect(&mut self, c: char, what: &str) -> Result<(), SyntaxError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.unexpected(format!("expected `{c}` {what}")))
        }
    }
    /// The dotted modifiers after an opcode (`.rn.f32` gives `rn`, `f32`).
    pub fn modifiers(&mut self) -> Vec<String> {
        let mut mods = Vec::new();
        while let Some(Tok::Dot(m)) = self.peek().cloned() {
            self.i += 1;
            mods.push(m);
        }
        mods
    }
    /// The names a `.reg` declaration declares, each with its span, after its type up to its
    /// `;`: `a, b` and `%r<4>` (`%r0` to `%r3`, at most `max` of them).
    pub fn declared_names(&mut self, max: u64) -> Result<Vec<(String, Span)>, SyntaxError> {
        let mut names = Vec::new();
        loop {
            let (name, at) = match self.peek() {
                Some(Tok::Ident(n)) => (n.clone(), self.span()),
                _ => return Err(self.unexpected("expected a register name")),
            };
            self.i += 1;
            if self.eat('<') {
                let n = match self.peek() {
                    Some(Tok::Int(n)) if *n <= max => *n,
                    _ => return Err(self.unexpected(format!("expected a register count (at most {max})"))),
                };
                self.i += 1;
                self.expect('>', "after the register count")?;
                names.extend((0..n).map(|k| (format!("{name}{k}"), at)));
            } else {
                names.push((name, at));
            }
            if !self.eat(',') {
                self.expect(';', "after a `.reg` declaration")?;
                return Ok(names);
            }
        }
    }
    /// Steps past a numeric literal if the current token is one.
    pub fn literal(&mut self) -> Option<Literal> {
        let l = match self.peek()? {
            Tok::Int(v) => Literal::Int(*v),
            Tok::F32Bits(b) => Literal::F32(*b),
            Tok::F64Bits(b) => Literal::F64(*b),
            _ => return None,
        };
        self.i += 1;
        Some(l)
    }
}

/// One or more `item`s separated by commas, read by the parser `p`.
pub fn comma_list<P, T, E>(p: &mut P, mut item: impl FnMut(&mut P) -> Result<T, E>) -> Result<Vec<T>, E>
where
    P: AsMut<Tokens>,
{
    let mut v = vec![item(p)?];
    while p.as_mut().eat(',') {
        v.push(item(p)?);
    }
    Ok(v)
}

/// Whether `b` (what follows a `.`) is a modifier that starts with digits (`2d`, `32x32b`,
/// `16x256b`): digits then a letter. PTX writes no float literal with a leading `.`.
fn digit_modifier(b: &[u8]) -> bool {
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    digits > 0 && b.get(digits).is_some_and(|c| c.is_ascii_alphabetic())
}

/// How a token is named in a message.
pub fn describe(t: &Tok) -> String {
    let text = match t {
        Tok::Ident(n) => n.clone(),
        Tok::Operand(n) => format!("${n}"),
        Tok::Dot(d) => format!(".{d}"),
        Tok::Int(v) => v.to_string(),
        Tok::Punct(c) => c.to_string(),
        Tok::F32Bits(_) | Tok::F64Bits(_) => return "a float".into(),
        Tok::Str(s) => return format!("\"{s}\""),
    };
    format!("`{text}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str, d: Dialect) -> Vec<Tok> {
        lex(s, d)
            .map(|v| v.into_iter().map(|t| t.tok).collect())
            .unwrap_or_default()
    }

    /// The span of the error lexing `s` reports.
    fn error_span(s: &str, d: Dialect) -> Option<(u32, u32)> {
        lex(s, d).err().map(|e| (e.span.start, e.span.end))
    }

    #[test]
    fn forms_compilers_emit() {
        let f = Dialect::File;
        assert_eq!(
            toks("ld.shared::cta.b32 %r1, [$L__x+16]; // c", f),
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
        assert_eq!(toks("0f3F800000", f), vec![Tok::F32Bits(0x3f80_0000)]);
        assert_eq!(toks("0d3FF0000000000000", f), vec![Tok::F64Bits(1f64.to_bits())]);
        let n = [Tok::Int(16), Tok::Int(8), Tok::F64Bits(0.15f64.to_bits())];
        assert_eq!(toks("0x10 010 1.5e-1", f), n);
        let file = [Tok::Dot("file".into()), Tok::Int(1), Tok::Str("a.py".into())];
        assert_eq!(toks(".file 1 \"a.py\"", f), file);
        // Modifiers that start with digits.
        let dims = toks("cp.async.bulk.tensor.2d tcgen05.ld.sync.aligned.32x32b.x4", f);
        assert_eq!(dims[4], Tok::Dot("2d".into()));
        assert_eq!(dims[9], Tok::Dot("32x32b".into()));
        assert_eq!(toks("add.f32 1.5", f)[2], Tok::F64Bits(1.5f64.to_bits()));
    }

    #[test]
    fn snippet_operands_and_file_only_tokens() {
        let ops: Vec<Tok> = toks("add.f32 $0, $1, -1e+2;", Dialect::Snippet);
        assert_eq!(ops[2..5], [Tok::Operand(0), Tok::Punct(','), Tok::Operand(1)]);
        assert_eq!(ops[6..8], [Tok::Punct('-'), Tok::F64Bits(100f64.to_bits())]);
        assert_eq!(error_span("mov.b32 $x, 1;", Dialect::Snippet), Some((8, 9)));
        assert!(error_span("a = \"s\";", Dialect::Snippet).is_some());
        assert_eq!(error_span("a = \"s\";", Dialect::File), None);
    }

    #[test]
    fn malformed_tokens_have_spans() {
        assert_eq!(error_span("mov.b32 %r1, 0f12;", Dialect::File), Some((13, 17)));
        assert_eq!(error_span("  \"abc", Dialect::File), Some((2, 6)));
        assert!(error_span("a # b", Dialect::File).is_some());
    }
}

//! The structure of a TTGIR file: aliases, the module, operations and their regions.
//!
//! This module knows MLIR's layout, not what any operation means: an [`Op`] is its result
//! names, its name, its own tokens (with [`Tok::Region`] markers where regions sat), its
//! regions and the tokens of its trailing `loc(...)`. Operation-specific reading happens in
//! [`crate::import`] through the [`Cursor`] helpers.
//!
//! Triton's printer writes one operation per line and opens a region with `{` at the end of a
//! line; a region closes with `}` at the start of a line, after which the operation goes on
//! (`} else {`, `} loc(#loc3)`, `} : (types) -> ()`). `ttg.warp_specialize` continues on the
//! next line with `default {` and `partitionN(...) num_warps(N) {`.

use crate::error::ImportError;
use crate::lexer::{Tok, Token};
use bwsim_isa::Span;
use std::collections::HashMap;

/// A parsed TTGIR file.
#[derive(Debug, Default)]
pub struct Module {
    /// `#name = <attribute>`: the attribute's tokens.
    pub attr_aliases: HashMap<String, Vec<Token>>,
    /// `#locN = loc(...)`: the tokens inside `loc( )`.
    pub loc_aliases: HashMap<String, Vec<Token>>,
    /// Top-level operations (the `module`).
    pub ops: Vec<Op>,
}

/// One operation.
#[derive(Debug, Clone)]
pub struct Op {
    /// Result names (`mma#0`, `mma#1`, ... for `%mma:3`).
    pub results: Vec<String>,
    pub name: String,
    /// The operation's tokens after its name, regions replaced by [`Tok::Region`] and the
    /// trailing `loc(...)` removed.
    pub toks: Vec<Token>,
    pub regions: Vec<Region>,
    /// The operation's text from its first token to the end of its first line.
    pub span: Span,
    /// Tokens inside the trailing `loc(...)`.
    pub loc: Option<Vec<Token>>,
}

/// A region: an optional block label with arguments, and operations.
#[derive(Debug, Clone, Default)]
pub struct Region {
    /// Tokens inside the parentheses of `^bb0(...)`, if the block is labelled.
    pub label_args: Vec<Token>,
    pub ops: Vec<Op>,
}

/// Parse a whole file.
pub fn parse(toks: Vec<Token>) -> Result<Module, ImportError> {
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
    };
    let mut m = Module::default();
    loop {
        p.skip_newlines();
        match p.peek().clone() {
            Tok::Eof => break,
            Tok::Hash(name) if matches!(p.peek_at(1), Tok::Punct("=")) => {
                p.pos += 2;
                if matches!(p.peek(), Tok::Ident(s) if s == "loc") && matches!(p.peek_at(1), Tok::Punct("("))
                {
                    p.pos += 1;
                    let inner = p.balanced()?;
                    m.loc_aliases.insert(name, inner);
                } else {
                    let v = p.rest_of_line();
                    m.attr_aliases.insert(name, v);
                }
            }
            Tok::Bang(_) if matches!(p.peek_at(1), Tok::Punct("=")) => {
                // A type alias: Triton does not print them; keep going.
                p.rest_of_line();
            }
            _ => {
                let op = p.op()?;
                m.ops.push(op);
            }
        }
    }
    Ok(m)
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// Region nesting, bounded so that no input exhausts the stack.
    depth: usize,
}

const MAX_REGION_DEPTH: usize = 64;

impl Parser {
    fn peek(&self) -> &Tok {
        self.peek_at(0)
    }
    fn peek_at(&self, k: usize) -> &Tok {
        self.toks.get(self.pos + k).map_or(&Tok::Eof, |t| &t.tok)
    }
    fn span(&self) -> Span {
        self.toks.get(self.pos).map_or(Span::DUMMY, |t| t.span)
    }
    fn skip_newlines(&mut self) {
        while matches!(self.peek(), Tok::Newline) {
            self.pos += 1;
        }
    }
    fn rest_of_line(&mut self) -> Vec<Token> {
        let mut v = Vec::new();
        while !matches!(self.peek(), Tok::Newline | Tok::Eof) {
            v.push(self.toks[self.pos].clone());
            self.pos += 1;
        }
        v
    }
    fn err(&self, message: impl Into<String>) -> ImportError {
        ImportError::Syntax {
            span: self.span(),
            message: message.into(),
        }
    }
    /// The token at the position, or the error `at_end` past the last one.
    fn current(&self, at_end: &str) -> Result<Token, ImportError> {
        self.toks.get(self.pos).cloned().ok_or_else(|| self.err(at_end))
    }

    /// At `(`: the tokens up to the matching `)`, both consumed and not returned.
    fn balanced(&mut self) -> Result<Vec<Token>, ImportError> {
        if !matches!(self.peek(), Tok::Punct("(")) {
            return Err(self.err("expected `(`"));
        }
        self.pos += 1;
        let mut depth = 1usize;
        let mut v = Vec::new();
        loop {
            let t = self.current("unbalanced `(`")?;
            match t.tok {
                Tok::Punct("(") => depth += 1,
                Tok::Punct(")") => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos += 1;
                        return Ok(v);
                    }
                }
                Tok::Eof => return Err(self.err("unbalanced `(`")),
                _ => {}
            }
            v.push(t);
            self.pos += 1;
        }
    }

    fn op(&mut self) -> Result<Op, ImportError> {
        let start = self.span();
        let mut results = Vec::new();
        if matches!(self.peek(), Tok::Value(_)) {
            loop {
                let Tok::Value(name) = self.peek().clone() else {
                    return Err(self.err("expected a result name"));
                };
                self.pos += 1;
                if matches!(self.peek(), Tok::Punct(":")) {
                    let Tok::Int(n) = *self.peek_at(1) else {
                        return Err(self.err("expected a result count after `:`"));
                    };
                    self.pos += 2;
                    for i in 0..n.clamp(0, 4096) {
                        results.push(format!("{name}#{i}"));
                    }
                } else {
                    results.push(name);
                }
                match self.peek() {
                    Tok::Punct(",") => self.pos += 1,
                    Tok::Punct("=") => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.err("expected `,` or `=` after the result names")),
                }
            }
        }
        let name = match self.peek().clone() {
            Tok::Ident(s) | Tok::Str(s) => {
                self.pos += 1;
                s
            }
            other => return Err(self.err(format!("expected an operation name, found {other:?}"))),
        };
        let mut toks = Vec::new();
        let mut regions = Vec::new();
        let mut depth = 0i64;
        let mut line_end = start;
        let mut first_line = true;
        loop {
            let t = self.current("unexpected end of file")?;
            if first_line {
                line_end = line_end.to(t.span);
            }
            match &t.tok {
                Tok::Eof => {
                    if depth != 0 {
                        return Err(ImportError::Syntax {
                            span: start,
                            message: format!("`{name}` is not closed before the end of the file"),
                        });
                    }
                    break;
                }
                Tok::Newline => {
                    if depth > 0 {
                        self.pos += 1;
                        continue;
                    }
                    // `ttg.warp_specialize(...)` goes on with its partitions on the next lines.
                    let next = self.toks.get(self.pos + 1).map(|t| &t.tok);
                    let partition =
                        matches!(next, Some(Tok::Ident(s)) if s == "default" || s.starts_with("partition"));
                    if partition && name == "ttg.warp_specialize" {
                        self.pos += 1;
                        first_line = false;
                        continue;
                    }
                    break;
                }
                Tok::Punct("{") if matches!(self.peek_at(1), Tok::Newline) => {
                    first_line = false;
                    self.pos += 2;
                    if self.depth >= MAX_REGION_DEPTH {
                        return Err(self.err("regions nest too deeply"));
                    }
                    self.depth += 1;
                    let r = self.region()?;
                    self.depth -= 1;
                    if !matches!(self.peek(), Tok::Punct("}")) {
                        return Err(self.err("expected `}` closing the region"));
                    }
                    self.pos += 1;
                    toks.push(Token {
                        tok: Tok::Region(regions.len()),
                        span: t.span,
                    });
                    regions.push(r);
                    continue;
                }
                Tok::Punct("(") | Tok::Punct("[") | Tok::Punct("{") | Tok::Punct("<") => depth += 1,
                Tok::Punct(")") | Tok::Punct("]") | Tok::Punct("}") | Tok::Punct(">") => depth -= 1,
                _ => {}
            }
            if depth < 0 {
                return Err(ImportError::Syntax {
                    span: t.span,
                    message: "unbalanced closing bracket".into(),
                });
            }
            toks.push(t);
            self.pos += 1;
        }
        let loc = take_trailing_loc(&mut toks);
        Ok(Op {
            results,
            name,
            toks,
            regions,
            span: line_end,
            loc,
        })
    }

    fn region(&mut self) -> Result<Region, ImportError> {
        let mut r = Region::default();
        self.skip_newlines();
        if matches!(self.peek(), Tok::Label(_)) {
            self.pos += 1;
            if matches!(self.peek(), Tok::Punct("(")) {
                r.label_args = self.balanced()?;
            }
            if matches!(self.peek(), Tok::Punct(":")) {
                self.pos += 1;
            }
        }
        loop {
            self.skip_newlines();
            match self.peek() {
                Tok::Punct("}") => return Ok(r),
                Tok::Eof => return Err(self.err("region not closed before the end of the file")),
                _ => r.ops.push(self.op()?),
            }
        }
    }
}

/// Remove the last top-level `loc(...)` of an operation's tokens and return what is inside.
fn take_trailing_loc(toks: &mut Vec<Token>) -> Option<Vec<Token>> {
    let mut depth = 0i64;
    let mut found = None;
    for (i, t) in toks.iter().enumerate() {
        match t.tok {
            Tok::Punct("(") | Tok::Punct("[") | Tok::Punct("{") | Tok::Punct("<") => depth += 1,
            Tok::Punct(")") | Tok::Punct("]") | Tok::Punct("}") | Tok::Punct(">") => depth -= 1,
            Tok::Ident(ref s) if depth == 0 && s == "loc" => {
                if matches!(toks.get(i + 1).map(|t| &t.tok), Some(Tok::Punct("("))) {
                    found = Some(i);
                }
            }
            _ => {}
        }
    }
    let i = found?;
    let mut d = 0i64;
    let mut end = toks.len();
    for (j, t) in toks.iter().enumerate().skip(i + 1) {
        match t.tok {
            Tok::Punct("(") => d += 1,
            Tok::Punct(")") => {
                d -= 1;
                if d == 0 {
                    end = j;
                    break;
                }
            }
            _ => {}
        }
    }
    let inner: Vec<Token> = toks[i + 2..end.max(i + 2)].to_vec();
    toks.drain(i..(end + 1).min(toks.len()));
    Some(inner)
}

/// A read position in an operation's tokens, with the small parsers operations need.
#[derive(Clone)]
pub struct Cursor<'a> {
    pub toks: &'a [Token],
    pub pos: usize,
    /// Span to report when the tokens run out.
    pub end: Span,
}

impl<'a> Cursor<'a> {
    pub fn new(toks: &'a [Token], end: Span) -> Cursor<'a> {
        Cursor { toks, pos: 0, end }
    }
    pub fn peek(&self) -> &Tok {
        self.peek_at(0)
    }
    pub fn peek_at(&self, k: usize) -> &Tok {
        self.toks.get(self.pos + k).map_or(&Tok::Eof, |t| &t.tok)
    }
    pub fn span(&self) -> Span {
        self.toks.get(self.pos).map_or(self.end, |t| t.span)
    }
    pub fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }
    pub fn bump(&mut self) -> Option<&'a Token> {
        let t = self.toks.get(self.pos);
        if t.is_some() {
            self.pos += 1;
        }
        t
    }
    pub fn err(&self, message: impl Into<String>) -> ImportError {
        ImportError::Syntax {
            span: self.span(),
            message: message.into(),
        }
    }
    pub fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Tok::Punct(q) if *q == p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    pub fn expect(&mut self, p: &str) -> Result<(), ImportError> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.err(format!("expected `{p}`, found {}", describe(self.peek()))))
        }
    }
    pub fn eat_ident(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Tok::Ident(s) if s == w) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    pub fn ident(&mut self) -> Result<String, ImportError> {
        match self.peek().clone() {
            Tok::Ident(s) => {
                self.pos += 1;
                Ok(s)
            }
            other => Err(self.err(format!("expected a word, found {}", describe(&other)))),
        }
    }
    pub fn value(&mut self) -> Result<(String, Span), ImportError> {
        match self.peek().clone() {
            Tok::Value(s) => {
                let sp = self.span();
                self.pos += 1;
                Ok((s, sp))
            }
            other => Err(self.err(format!("expected an SSA value, found {}", describe(&other)))),
        }
    }
    pub fn int(&mut self) -> Result<i64, ImportError> {
        match *self.peek() {
            Tok::Int(v) => {
                self.pos += 1;
                Ok(v)
            }
            ref other => Err(self.err(format!("expected an integer, found {}", describe(other)))),
        }
    }
    /// Skip one balanced item (a token, or a bracketed group).
    pub fn skip_item(&mut self) {
        let mut depth = 0i64;
        while let Some(t) = self.toks.get(self.pos) {
            match t.tok {
                Tok::Punct("(") | Tok::Punct("[") | Tok::Punct("{") | Tok::Punct("<") => depth += 1,
                Tok::Punct(")") | Tok::Punct("]") | Tok::Punct("}") | Tok::Punct(">") => depth -= 1,
                _ => {}
            }
            self.pos += 1;
            if depth <= 0 {
                return;
            }
        }
    }
    /// The tokens from here to the matching closer of the bracket at the cursor (both excluded);
    /// the cursor moves past the closer.
    pub fn group(&mut self) -> Result<&'a [Token], ImportError> {
        let open = match self.peek() {
            Tok::Punct(p @ ("(" | "[" | "{" | "<")) => *p,
            other => return Err(self.err(format!("expected a bracket, found {}", describe(other)))),
        };
        let start = self.pos + 1;
        self.skip_item();
        let end = self.pos.saturating_sub(1);
        if end < start
            || !matches!(self.toks.get(end).map(|t| &t.tok), Some(Tok::Punct(c)) if closer(open) == *c)
        {
            return Err(ImportError::Syntax {
                span: self
                    .toks
                    .get(start.saturating_sub(1))
                    .map_or(self.end, |t| t.span),
                message: format!("unbalanced `{open}`"),
            });
        }
        Ok(&self.toks[start..end])
    }
    /// Index of the first top-level `:` from the cursor (the start of a type signature).
    pub fn find_top(&self, p: &str) -> Option<usize> {
        let mut depth = 0i64;
        for (i, t) in self.toks.iter().enumerate().skip(self.pos) {
            match t.tok {
                Tok::Punct("(") | Tok::Punct("[") | Tok::Punct("{") | Tok::Punct("<") => depth += 1,
                Tok::Punct(")") | Tok::Punct("]") | Tok::Punct("}") | Tok::Punct(">") => depth -= 1,
                Tok::Punct(q) if depth == 0 && q == p => return Some(i),
                _ => {}
            }
        }
        None
    }
}

fn closer(open: &str) -> &'static str {
    match open {
        "(" => ")",
        "[" => "]",
        "{" => "}",
        _ => ">",
    }
}

/// A token as a diagnostic names it.
pub fn describe(t: &Tok) -> String {
    match t {
        Tok::Value(s) | Tok::Label(s) | Tok::Symbol(s) | Tok::Hash(s) | Tok::Bang(s) | Tok::Ident(s) => {
            format!("`{}{s}`", t.sigil())
        }
        Tok::Int(v) => format!("`{v}`"),
        Tok::Float(v) => format!("`{v}`"),
        Tok::Hex(v) => format!("`0x{v:X}`"),
        Tok::Str(s) => format!("\"{s}\""),
        Tok::Shape(d) => format!("a shape {d:?}"),
        Tok::Punct(p) => format!("`{p}`"),
        Tok::Newline => "the end of the line".into(),
        Tok::Eof => "the end of the operation".into(),
        Tok::Region(_) => "a region".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex;

    #[test]
    fn regions_locs_and_results() {
        let src = "#loc1 = loc(\"k.py\":3:4)\nmodule {\n  %a:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %c0) -> (i32)  : i32 {\n    scf.yield %x : i32 loc(#loc1)\n  } loc(#loc1)\n  %b, %c = tt.split %d : tensor<4x2xf32> -> tensor<4xf32>\n} loc(#loc)\n";
        let m = parse(lex(src, 0).unwrap()).unwrap();
        assert!(m.loc_aliases.contains_key("loc1"));
        let module = &m.ops[0];
        assert_eq!(module.name, "module");
        let ops = &module.regions[0].ops;
        assert_eq!(ops[0].results, vec!["a#0", "a#1"]);
        assert_eq!(ops[0].name, "scf.for");
        assert_eq!(ops[0].regions[0].ops[0].name, "scf.yield");
        assert!(ops[0].loc.is_some());
        assert_eq!(ops[1].results, vec!["b", "c"]);
    }

    #[test]
    fn unclosed_region_is_an_error() {
        let src = "module {\n  scf.for %i = %a to %b step %c : i32 {\n";
        assert!(parse(lex(src, 0).unwrap()).is_err());
    }
}

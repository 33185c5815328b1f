//! The `.tile` parser: tokens to [`Kernel`], by hand-written recursive descent.
//!
//! This module owns the grammar of docs/tile-format.md and the placement of comments and blank
//! lines in the IR. It decides nothing about types: which operand of an operation must be a
//! buffer, a barrier or a descriptor is the type checker's business ([`crate::typeck`]).
//!
//! - Every [`Ident`], [`Expr`], [`Op`], [`Stmt`], declaration, launch item and the kernel get
//!   the span of the text they were parsed from.
//! - Errors are [`Diagnostic`]s: `syntax` (with a label on the offending token), `unknown-op`
//!   (with a "did you mean" from edit distance) and `op-operands` (with the operation's
//!   signature). The parser reports the first error of a statement, skips to the next line and
//!   goes on, so one run reports several errors (at most [`MAX_ERRORS`]). Nesting deeper than
//!   [`MAX_DEPTH`] is an error, so no input can exhaust the stack; nothing here panics.
//!
//! Comments: a comment line (or a run of blank lines, kept as one `""`) belongs to the next
//! item that has a `comments` vector, or to the enclosing block's `end_comments` when a `}`
//! comes first. A comment after code on the same line is moved above its statement.
//!
//! This module holds the token cursor, errors, comments and the kernel header; `stmt` parses
//! blocks and statements, `expr` operations and expressions.

mod expr;
mod stmt;

use crate::diag::{Code, Diagnostic, Label};
use crate::ir::*;
pub use crate::lexer::MAX_ERRORS;
use crate::lexer::{lex, Tok, Token};
use crate::span::Span;
use crate::types::Target;
use std::collections::BTreeMap;

/// Deepest nesting of blocks, and of expressions, the parser accepts.
pub const MAX_DEPTH: usize = 200;

/// Words with a meaning in the grammar: never names of values, constants, parameters,
/// layouts, loop variables or launch tensors.
pub const KEYWORDS: &[&str] = &[
    "kernel",
    "target",
    "num_warps",
    "const",
    "param",
    "layout",
    "let",
    "for",
    "static_for",
    "in",
    "step",
    "if",
    "else",
    "while",
    "warp_specialize",
    "default",
    "worker",
    "static_assert",
    "launch",
    "tensor",
    "true",
    "false",
    "None",
];

/// Words that begin a statement (for "did you mean" on a misspelled one).
const STATEMENT_KEYWORDS: &[&str] = &[
    "let",
    "for",
    "static_for",
    "if",
    "while",
    "else",
    "warp_specialize",
    "static_assert",
    "launch",
];

/// Parse the text of one `.tile` file.
pub fn parse(src: &str) -> Result<Kernel, Vec<Diagnostic>> {
    let mut p = Parser::new(src)?;
    match p.kernel() {
        Ok(mut k) if p.errors.is_empty() => {
            k.number_nodes();
            Ok(k)
        }
        _ => Err(p.into_errors()),
    }
}

/// Parse a file that holds only a `launch { ... }` section (comments allowed around it): the
/// launch spec a front end without one of its own (TTGIR import) attaches to a kernel.
pub fn parse_launch(src: &str) -> Result<Launch, Vec<Diagnostic>> {
    let mut p = Parser::new(src)?;
    let comments = p.gather(true);
    let l = p.launch(comments);
    if l.is_ok() {
        if matches!(p.peek(), Tok::Newline) {
            p.bump();
        }
        p.gather(false);
        if !matches!(p.peek(), Tok::Eof) {
            let _ = p.expected("end of file after the launch section");
        }
    }
    match l {
        Ok(l) if p.errors.is_empty() => Ok(l),
        _ => Err(p.into_errors()),
    }
}

/// `tma.load src, dst, bar[, pred=...]`: how an operation is written, for diagnostics.
pub fn signature_text(name: &str) -> Option<String> {
    let (pos, kw) = OpKind::signature(name)?;
    let mut s = name.to_string();
    if !pos.is_empty() {
        s.push(' ');
        s.push_str(&pos.join(", "));
    }
    for (i, k) in kw.iter().enumerate() {
        if pos.is_empty() && i == 0 {
            s.push_str(&format!(" [{k}=...]"));
        } else {
            s.push_str(&format!("[, {k}=...]"));
        }
    }
    Some(s)
}

/// The operation name closest to `name` by edit distance, if it is close enough to be a typo.
pub fn suggest_op(name: &str) -> Option<&'static str> {
    let (best, d) = OpKind::NAMES
        .iter()
        .map(|n| (*n, edit_distance(name, n)))
        .min_by_key(|(_, d)| *d)?;
    let limit = (name.len() / 3).max(2);
    (d <= limit).then_some(best)
}

/// Optimal-string-alignment distance (insertions, deletions, substitutions, transpositions).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The error has been recorded in `Parser::errors`.
struct Failed;
type PResult<T> = Result<T, Failed>;

/// What the tokens at the cursor start: an operation, an unknown dotted name, or neither.
enum OpStart {
    Op(&'static str, usize),
    Unknown(String, usize),
    None,
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// Comments after code on their line, by start offset; items take those on their lines.
    trailing: BTreeMap<u32, String>,
    errors: Vec<Diagnostic>,
    /// Stop parsing: too many errors or too deep.
    fatal: bool,
    /// Current recursion depth (blocks and expressions).
    nest: usize,
    /// End offset of the last token consumed (newlines aside).
    last_end: u32,
}

fn is_keyword(s: &str) -> bool {
    KEYWORDS.contains(&s)
}

fn binop_of(p: &str) -> Option<BinOp> {
    BinOp::ALL.iter().copied().find(|b| b.symbol() == p)
}

/// Append `b` to `a`, keeping runs of blank lines collapsed.
fn merge_comments(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    for c in b {
        if c.is_empty() && a.last().is_some_and(|l| l.is_empty()) {
            continue;
        }
        a.push(c);
    }
    a
}

/// End comments moved into a block: no blank line before its `}`, nor right after its `{`
/// when the block has nothing else (`empty`).
fn strip_blank_edges(v: Vec<String>, empty: bool) -> Vec<String> {
    let mut v = strip_trailing_blank(v);
    if empty {
        let n = v.iter().take_while(|c| c.is_empty()).count();
        v.drain(..n);
    }
    v
}

fn strip_trailing_blank(mut v: Vec<String>) -> Vec<String> {
    while v.last().is_some_and(|l| l.is_empty()) {
        v.pop();
    }
    v
}

impl Parser {
    /// A parser at the start of `src`'s tokens, or the lexer's errors.
    fn new(src: &str) -> Result<Parser, Vec<Diagnostic>> {
        let lexed = lex(src);
        if !lexed.errors.is_empty() {
            return Err(lexed.errors);
        }
        Ok(Parser {
            toks: lexed.tokens,
            pos: 0,
            trailing: lexed
                .trailing_comments
                .into_iter()
                .map(|(s, t)| (s.start, t))
                .collect(),
            errors: Vec::new(),
            fatal: false,
            nest: 0,
            last_end: 0,
        })
    }

    /// The diagnostics of a parse that failed: at least one (every failing path records one;
    /// should none have, "the text does not parse" here), at most [`MAX_ERRORS`].
    fn into_errors(mut self) -> Vec<Diagnostic> {
        if self.errors.is_empty() {
            let sp = self.span();
            self.errors.push(Diagnostic::error(
                Code::Syntax,
                "the text does not parse",
                sp,
                "here",
            ));
        }
        self.errors.truncate(MAX_ERRORS);
        self.errors
    }

    /// Comments before the next item of a list (the first when `*first`, which this clears;
    /// see [`Parser::gather`]), or `Failed` once parsing has been stopped.
    fn item_comments(&mut self, first: &mut bool) -> PResult<Vec<String>> {
        if self.fatal {
            return Err(Failed);
        }
        Ok(self.gather(std::mem::take(first)))
    }

    // ---- token cursor -------------------------------------------------------------------

    fn peek(&self) -> &Tok {
        self.peek_at(0)
    }

    fn peek_at(&self, n: usize) -> &Tok {
        let i = (self.pos + n).min(self.toks.len().saturating_sub(1));
        self.toks.get(i).map_or(&Tok::Eof, |t| &t.tok)
    }

    fn span(&self) -> Span {
        self.toks.get(self.pos).map_or(Span::DUMMY, |t| t.span)
    }

    fn bump(&mut self) -> Token {
        let t = match self.toks.get(self.pos) {
            Some(t) => t.clone(),
            None => {
                return Token {
                    tok: Tok::Eof,
                    span: Span::DUMMY,
                }
            }
        };
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        if !matches!(t.tok, Tok::Newline | Tok::Comment(_) | Tok::Eof) {
            self.last_end = t.span.end;
        }
        t
    }

    fn at_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    fn at_kw(&self, k: &str) -> bool {
        matches!(self.peek(), Tok::Ident(s) if s == k)
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        if self.at_punct(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    /// A span from `start` to the end of the last consumed token.
    fn since(&self, start: Span) -> Span {
        Span {
            start: start.start,
            end: self.last_end.max(start.end),
        }
    }

    fn at_eol(&self) -> bool {
        matches!(self.peek(), Tok::Newline | Tok::Eof) || self.at_punct("}")
    }

    // ---- errors -------------------------------------------------------------------------

    /// Reports a `syntax` error: `message`, `label` under `span`, and `help`.
    fn syntax_error(
        &mut self,
        message: impl Into<String>,
        span: Span,
        label: &str,
        help: impl Into<String>,
    ) -> Failed {
        self.report(Diagnostic::error(Code::Syntax, message, span, label).with_help(help))
    }

    /// Reports `id` as an unknown `what` (a `syntax` error) with `help`.
    fn unknown(&mut self, what: &str, id: &Ident, help: &str) -> Failed {
        self.syntax_error(
            format!("unknown {what} `{}`", id.name),
            id.span,
            &format!("unknown {what}"),
            help,
        )
    }

    fn report(&mut self, d: Diagnostic) -> Failed {
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(d);
        }
        if self.errors.len() >= MAX_ERRORS {
            self.fatal = true;
        }
        Failed
    }

    /// "expected X, found Y" at the current token.
    fn expected(&mut self, what: &str) -> Failed {
        let found = self.peek().describe();
        let mut sp = self.span();
        if matches!(self.peek(), Tok::Newline) {
            // Point at the end of the line, not at the line break itself.
            sp = Span {
                start: sp.start,
                end: sp.start,
            };
        }
        self.report(Diagnostic::error(
            Code::Syntax,
            format!("expected {what}, found {found}"),
            sp,
            format!("expected {what}"),
        ))
    }

    fn expect_punct(&mut self, p: &str) -> PResult<Span> {
        if self.at_punct(p) {
            Ok(self.bump().span)
        } else {
            Err(self.expected(&format!("`{p}`")))
        }
    }

    /// The `)` or `]` closing a group opened at `open`; `list`: after an item of a
    /// comma-separated list, where a `,` would do as well.
    fn expect_close(&mut self, close: &str, open: Span, list: bool) -> PResult<Span> {
        if self.at_punct(close) {
            return Ok(self.bump().span);
        }
        let what = if list {
            format!("`,` or `{close}`")
        } else {
            format!("`{close}`")
        };
        let f = self.expected(&what);
        if let Some(last) = self.errors.last_mut() {
            let opener = if close == ")" { "(" } else { "[" };
            last.labels.push(Label {
                span: open,
                message: format!("this `{opener}` is not closed"),
                line_col: None,
            });
        }
        Err(f)
    }

    fn expect_kw(&mut self, k: &str) -> PResult<Span> {
        if self.at_kw(k) {
            Ok(self.bump().span)
        } else {
            Err(self.expected(&format!("`{k}`")))
        }
    }

    /// Any identifier (a kernel, worker or field name, a keyword operand).
    fn ident(&mut self, what: &str) -> PResult<Ident> {
        if let Tok::Ident(s) = self.peek() {
            let name = s.clone();
            let span = self.bump().span;
            Ok(Ident::spanned(name, span))
        } else {
            Err(self.expected(what))
        }
    }

    /// A name being bound: not a keyword, not an operation name.
    fn binding(&mut self, what: &str) -> PResult<Ident> {
        if let Tok::Ident(s) = self.peek() {
            let sp = self.span();
            let reserved = if is_keyword(s) {
                Some("a keyword")
            } else if OpKind::NAMES.contains(&s.as_str()) {
                Some("an operation name")
            } else {
                None
            };
            if let Some(reserved) = reserved {
                let msg = format!("`{s}` is {reserved}, not a name");
                return Err(self.report(Diagnostic::error(
                    Code::Syntax,
                    msg,
                    sp,
                    format!("expected {what}"),
                )));
            }
            // An element-type name would read as that type in constant expressions
            // (`bufs[i1 % 2]` with a loop variable `i1`), so it cannot be bound.
            if crate::types::DType::from_name(s).is_some() {
                let msg = format!("`{s}` is an element type, not a name");
                return Err(self.report(
                    Diagnostic::error(Code::Syntax, msg, sp, format!("expected {what}")).with_help(
                        "pick another name: element-type names (`i1`, `i8`, `f32`, ...) are reserved",
                    ),
                ));
            }
        }
        self.ident(what)
    }

    /// End of a line: a newline (consumed), or a `}` or the end of the file (left for the caller).
    fn expect_eol(&mut self) -> PResult<()> {
        match self.peek() {
            Tok::Newline => {
                self.bump();
                Ok(())
            }
            Tok::Eof => Ok(()),
            _ if self.at_punct("}") => Ok(()),
            _ => Err(self.expected("end of line")),
        }
    }

    /// Skip the rest of a statement after an error: to the end of the line, or up to a `}`
    /// that closes the current block. Braces opened on the way are skipped whole.
    fn recover(&mut self) {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                Tok::Eof => return,
                Tok::Newline if depth == 0 => {
                    self.bump();
                    return;
                }
                Tok::Punct("{") => depth += 1,
                Tok::Punct("}") => {
                    if depth == 0 {
                        return;
                    }
                    depth -= 1;
                }
                _ => {}
            }
            self.bump();
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.nest += 1;
        if self.nest > MAX_DEPTH {
            let sp = self.span();
            let d = Diagnostic::error(
                Code::Syntax,
                "nesting too deep",
                sp,
                format!("more than {MAX_DEPTH} levels deep"),
            )
            .with_help("split the expression or the block into smaller pieces");
            self.report(d);
            self.fatal = true;
            return Err(Failed);
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.nest = self.nest.saturating_sub(1);
    }

    // ---- comments -----------------------------------------------------------------------

    /// Comment lines and blank lines before the next item. At the start of a block, blank
    /// lines before the first comment are dropped.
    fn gather(&mut self, at_start: bool) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        loop {
            match self.peek() {
                Tok::Newline => {
                    self.bump();
                    if (at_start && v.is_empty()) || v.last().is_some_and(|l| l.is_empty()) {
                        continue;
                    }
                    v.push(String::new());
                }
                Tok::Comment(c) => {
                    v.push(c.clone());
                    self.bump();
                    if matches!(self.peek(), Tok::Newline) {
                        self.bump();
                    }
                }
                _ => return v,
            }
        }
    }

    /// Comments after code on the lines from `start` up to the current token.
    fn take_trailing(&mut self, start: Span) -> Vec<String> {
        let end = self.span().start;
        self.take_trailing_between(start.start, end)
    }

    fn take_trailing_between(&mut self, start: u32, end: u32) -> Vec<String> {
        if end <= start {
            return Vec::new();
        }
        let keys: Vec<u32> = self.trailing.range(start..end).map(|(k, _)| *k).collect();
        keys.into_iter()
            .filter_map(|k| self.trailing.remove(&k))
            .collect()
    }

    // ---- kernel -------------------------------------------------------------------------

    fn kernel(&mut self) -> PResult<Kernel> {
        let comments = self.gather(true);
        let kw = self.expect_kw("kernel")?;
        let name = self.ident("a kernel name")?;
        let open = self.expect_punct("{")?;
        self.expect_eol()?;

        let mut targets: Option<(Vec<Target>, Span)> = None;
        let mut num_warps: Option<(Expr, Span)> = None;
        let mut consts = Vec::new();
        let mut params = Vec::new();
        let mut layouts = Vec::new();
        let mut carry: Vec<String> = Vec::new();
        let mut first = true;
        loop {
            let c = self.item_comments(&mut first)?;
            carry = merge_comments(carry, c);
            let start = self.span();
            let word = match self.peek() {
                Tok::Ident(s) => s.clone(),
                _ => break,
            };
            let item: PResult<()> = match word.as_str() {
                "target" => self
                    .targets_line()
                    .and_then(|t| self.header_once(&mut targets, t, "target", start)),
                "num_warps" => self
                    .num_warps_line()
                    .and_then(|e| self.header_once(&mut num_warps, e, "num_warps", start)),
                "const" => self
                    .const_decl(std::mem::take(&mut carry))
                    .map(|d| consts.push(d)),
                "param" => self
                    .param_decl(std::mem::take(&mut carry))
                    .map(|d| params.push(d)),
                "layout" if matches!(self.peek_at(1), Tok::Ident(_)) => self
                    .layout_decl(std::mem::take(&mut carry))
                    .map(|d| layouts.push(d)),
                _ => break,
            };
            match item {
                Ok(()) => {
                    if matches!(word.as_str(), "target" | "num_warps") {
                        let t = self.take_trailing(start);
                        carry = merge_comments(carry, t);
                    }
                }
                Err(Failed) => self.recover(),
            }
        }

        let mut body = self.block_body(open, carry, false, true)?;
        let mut launch = None;
        if self.at_kw("launch") {
            let comments = std::mem::take(&mut body.end_comments);
            launch = Some(self.launch(comments)?);
        }
        // After a launch section only comments may come before the kernel's `}`.
        if launch.is_some() {
            let c = strip_trailing_blank(self.gather(false));
            if let Some(l) = &mut launch {
                let merged = merge_comments(std::mem::take(&mut l.end_comments), c);
                l.end_comments = strip_blank_edges(merged, l.items.is_empty());
            }
            if !self.at_punct("}") && !matches!(self.peek(), Tok::Eof) {
                let sp = self.span();
                let found = self.peek().describe();
                let launch_span = launch.as_ref().map_or(Span::DUMMY, |l| l.span);
                let d = Diagnostic::error(
                    Code::Syntax,
                    format!("expected the kernel's `}}` after the launch section, found {found}"),
                    sp,
                    "after `launch { }`",
                )
                .with_label(launch_span, "the launch section")
                .with_help("`launch { ... }` must be the last thing in the kernel: move this above it");
                return Err(self.report(d));
            }
        }
        let close = self.expect_punct("}")?;
        let span = kw.to(close);
        let t = self.take_trailing_between(kw.start, close.start);
        let comments = merge_comments(comments, t);
        // Comments on the closing line and after the kernel.
        let mut trailing_comments: Vec<String> = std::mem::take(&mut self.trailing).into_values().collect();
        if matches!(self.peek(), Tok::Newline) {
            self.bump();
        }
        let after = self.gather(false);
        trailing_comments = strip_trailing_blank(merge_comments(trailing_comments, after));
        if !matches!(self.peek(), Tok::Eof) {
            return Err(self.expected("end of file after the kernel's `}`"));
        }
        for (missing, line, help) in [
            (
                targets.is_none(),
                "target",
                "add `target sm_100a` (or `target sm_100a, sm_90a`) after `kernel NAME {`",
            ),
            (
                num_warps.is_none(),
                "num_warps",
                "add `num_warps 4` after the `target` line",
            ),
        ] {
            if missing {
                let d = Diagnostic::error(
                    Code::Syntax,
                    format!("kernel has no `{line}` line"),
                    name.span,
                    "this kernel",
                )
                .with_help(help);
                self.report(d);
            }
        }
        let (Some((targets, _)), Some((num_warps, _))) = (targets, num_warps) else {
            return Err(Failed);
        };
        if !self.errors.is_empty() {
            return Err(Failed);
        }
        Ok(Kernel {
            comments,
            name,
            targets,
            num_warps,
            consts,
            params,
            layouts,
            body,
            launch,
            trailing_comments,
            span,
        })
    }

    /// Records the header line `kw` (its value and the span from `start`) in `slot`; a second
    /// one is an error pointing at the first.
    fn header_once<T>(
        &mut self,
        slot: &mut Option<(T, Span)>,
        value: T,
        kw: &str,
        start: Span,
    ) -> PResult<()> {
        if let Some((_, prev)) = slot {
            let d = Diagnostic::error(
                Code::Syntax,
                format!("`{kw}` given twice"),
                self.since(start),
                format!("second `{kw}`"),
            )
            .with_label(*prev, "first here");
            return Err(self.report(d));
        }
        *slot = Some((value, self.since(start)));
        Ok(())
    }

    fn targets_line(&mut self) -> PResult<Vec<Target>> {
        self.expect_kw("target")?;
        let mut v = Vec::new();
        loop {
            let id = self.ident("a target (`sm_100a` or `sm_90a`)")?;
            match Target::from_name(&id.name) {
                Some(t) => v.push(t),
                None => return Err(self.unknown("target", &id, "targets are `sm_100a` and `sm_90a`")),
            }
            if !self.eat_punct(",") {
                break;
            }
        }
        self.expect_eol()?;
        Ok(v)
    }

    fn num_warps_line(&mut self) -> PResult<Expr> {
        self.expect_kw("num_warps")?;
        let e = self.expr()?;
        self.expect_eol()?;
        Ok(e)
    }

    /// `KW NAME SEP`, the head of a one-line declaration: where it starts, and its name.
    fn decl_head(&mut self, kw: &str, what: &str, sep: &str) -> PResult<(Span, Ident)> {
        let start = self.expect_kw(kw)?;
        let name = self.binding(what)?;
        self.expect_punct(sep)?;
        Ok((start, name))
    }

    /// The end of a one-line declaration begun at `start`: its span, and its comments (those
    /// above it and a trailing one).
    fn decl_end(&mut self, start: Span, comments: Vec<String>) -> PResult<(Span, Vec<String>)> {
        let span = self.since(start);
        self.expect_eol()?;
        Ok((span, merge_comments(comments, self.take_trailing(start))))
    }

    fn const_decl(&mut self, comments: Vec<String>) -> PResult<ConstDecl> {
        let (start, name) = self.decl_head("const", "a constant name", ":")?;
        let kind = match self.peek() {
            Tok::Ident(s) if s == "int" => ConstKind::Int,
            Tok::Ident(s) if s == "bool" => ConstKind::Bool,
            Tok::Ident(s) if s == "dtype" => ConstKind::DType,
            _ => return Err(self.expected("`int`, `bool` or `dtype`")),
        };
        self.bump();
        self.expect_punct("=")?;
        let value = self.expr()?;
        let (span, comments) = self.decl_end(start, comments)?;
        Ok(ConstDecl {
            comments,
            name,
            kind,
            value,
            span,
        })
    }

    fn param_decl(&mut self, comments: Vec<String>) -> PResult<Param> {
        let (start, name) = self.decl_head("param", "a parameter name", ":")?;
        let ty = self.expr()?;
        let (span, comments) = self.decl_end(start, comments)?;
        Ok(Param {
            comments,
            name,
            ty,
            span,
        })
    }

    fn layout_decl(&mut self, comments: Vec<String>) -> PResult<LayoutDecl> {
        let (start, name) = self.decl_head("layout", "a layout name", "=")?;
        let value = self.expr()?;
        let (span, comments) = self.decl_end(start, comments)?;
        Ok(LayoutDecl {
            comments,
            name,
            value,
            span,
        })
    }
}

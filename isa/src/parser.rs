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

use crate::diag::{Diagnostic, Label};
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
    let lexed = lex(src);
    if !lexed.errors.is_empty() {
        return Err(lexed.errors);
    }
    let mut p = Parser {
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
    };
    let k = p.kernel();
    match k {
        Ok(k) if p.errors.is_empty() => Ok(k),
        _ => {
            if p.errors.is_empty() {
                // Every failing path records a diagnostic; this is a safety net.
                let sp = p.span();
                p.errors
                    .push(Diagnostic::error("syntax", "the text does not parse", sp, "here"));
            }
            p.errors.truncate(MAX_ERRORS);
            Err(p.errors)
        }
    }
}

/// Parse a file that holds only a `launch { ... }` section (comments allowed around it): the
/// launch spec a front end without one of its own (TTGIR import) attaches to a kernel.
pub fn parse_launch(src: &str) -> Result<Launch, Vec<Diagnostic>> {
    let lexed = lex(src);
    if !lexed.errors.is_empty() {
        return Err(lexed.errors);
    }
    let mut p = Parser {
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
    };
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
        _ => {
            if p.errors.is_empty() {
                let sp = p.span();
                p.errors
                    .push(Diagnostic::error("syntax", "the text does not parse", sp, "here"));
            }
            p.errors.truncate(MAX_ERRORS);
            Err(p.errors)
        }
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
            "syntax",
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
            if is_keyword(s) {
                let msg = format!("`{s}` is a keyword, not a name");
                return Err(self.report(Diagnostic::error("syntax", msg, sp, format!("expected {what}"))));
            }
            if OpKind::NAMES.contains(&s.as_str()) {
                let msg = format!("`{s}` is an operation name, not a name");
                return Err(self.report(Diagnostic::error("syntax", msg, sp, format!("expected {what}"))));
            }
            // An element-type name would read as that type in constant expressions
            // (`bufs[i1 % 2]` with a loop variable `i1`), so it cannot be bound.
            if crate::types::DType::from_name(s).is_some() {
                let msg = format!("`{s}` is an element type, not a name");
                return Err(self.report(
                    Diagnostic::error("syntax", msg, sp, format!("expected {what}")).with_help(
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
                "syntax",
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
            if self.fatal {
                return Err(Failed);
            }
            let c = self.gather(first);
            first = false;
            carry = merge_comments(carry, c);
            let start = self.span();
            let word = match self.peek() {
                Tok::Ident(s) => s.clone(),
                _ => break,
            };
            let item: PResult<()> = match word.as_str() {
                "target" => self.targets_line().and_then(|t| {
                    if let Some((_, prev)) = &targets {
                        let d = Diagnostic::error(
                            "syntax",
                            "`target` given twice",
                            self.since(start),
                            "second `target`",
                        )
                        .with_label(*prev, "first here");
                        return Err(self.report(d));
                    }
                    targets = Some((t, self.since(start)));
                    Ok(())
                }),
                "num_warps" => self.num_warps_line().and_then(|e| {
                    if let Some((_, prev)) = &num_warps {
                        let d = Diagnostic::error(
                            "syntax",
                            "`num_warps` given twice",
                            self.since(start),
                            "second `num_warps`",
                        )
                        .with_label(*prev, "first here");
                        return Err(self.report(d));
                    }
                    num_warps = Some((e, self.since(start)));
                    Ok(())
                }),
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
                    "syntax",
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
        if targets.is_none() {
            let d = Diagnostic::error("syntax", "kernel has no `target` line", name.span, "this kernel")
                .with_help("add `target sm_100a` (or `target sm_100a, sm_90a`) after `kernel NAME {`");
            self.report(d);
        }
        if num_warps.is_none() {
            let d = Diagnostic::error(
                "syntax",
                "kernel has no `num_warps` line",
                name.span,
                "this kernel",
            )
            .with_help("add `num_warps 4` after the `target` line");
            self.report(d);
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

    fn targets_line(&mut self) -> PResult<Vec<Target>> {
        self.expect_kw("target")?;
        let mut v = Vec::new();
        loop {
            let id = self.ident("a target (`sm_100a` or `sm_90a`)")?;
            match Target::from_name(&id.name) {
                Some(t) => v.push(t),
                None => {
                    let d = Diagnostic::error(
                        "syntax",
                        format!("unknown target `{}`", id.name),
                        id.span,
                        "unknown target",
                    )
                    .with_help("targets are `sm_100a` and `sm_90a`");
                    return Err(self.report(d));
                }
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

    fn const_decl(&mut self, comments: Vec<String>) -> PResult<ConstDecl> {
        let start = self.expect_kw("const")?;
        let name = self.binding("a constant name")?;
        self.expect_punct(":")?;
        let kind = match self.peek() {
            Tok::Ident(s) if s == "int" => ConstKind::Int,
            Tok::Ident(s) if s == "bool" => ConstKind::Bool,
            Tok::Ident(s) if s == "dtype" => ConstKind::DType,
            _ => return Err(self.expected("`int`, `bool` or `dtype`")),
        };
        self.bump();
        self.expect_punct("=")?;
        let value = self.expr()?;
        let span = self.since(start);
        self.expect_eol()?;
        let comments = merge_comments(comments, self.take_trailing(start));
        Ok(ConstDecl {
            comments,
            name,
            kind,
            value,
            span,
        })
    }

    fn param_decl(&mut self, comments: Vec<String>) -> PResult<Param> {
        let start = self.expect_kw("param")?;
        let name = self.binding("a parameter name")?;
        self.expect_punct(":")?;
        let ty = self.expr()?;
        let span = self.since(start);
        self.expect_eol()?;
        let comments = merge_comments(comments, self.take_trailing(start));
        Ok(Param {
            comments,
            name,
            ty,
            span,
        })
    }

    fn layout_decl(&mut self, comments: Vec<String>) -> PResult<LayoutDecl> {
        let start = self.expect_kw("layout")?;
        let name = self.binding("a layout name")?;
        self.expect_punct("=")?;
        let value = self.expr()?;
        let span = self.since(start);
        self.expect_eol()?;
        let comments = merge_comments(comments, self.take_trailing(start));
        Ok(LayoutDecl {
            comments,
            name,
            value,
            span,
        })
    }

    // ---- blocks and statements ----------------------------------------------------------

    /// `{ ... }` including both braces. The newline after `{` is consumed; the one after `}`
    /// is left to the caller.
    ///
    /// The functions on the recursive path (`block`, `block_body`, `stmt_into`, `stmt_kind`
    /// and the compound statements) keep their frames small, so that [`MAX_DEPTH`] nested
    /// blocks fit in a 2 MiB stack even in an unoptimised build: diagnostics are built in
    /// separate functions.
    fn block(&mut self) -> PResult<Block> {
        let open = self.expect_punct("{")?;
        if matches!(self.peek(), Tok::Newline) {
            self.bump();
        }
        self.enter()?;
        let r = self.block_body(open, Vec::new(), true, false);
        self.leave();
        let b = r?;
        self.expect_punct("}")?;
        Ok(b)
    }

    /// Statements up to a `}` (not consumed; the comments before it become `end_comments`)
    /// or, with `stop_at_launch`, up to `launch` (not consumed; the comments before it are
    /// left in `end_comments` for the launch section).
    fn block_body(
        &mut self,
        open: Span,
        initial: Vec<String>,
        at_start: bool,
        stop_at_launch: bool,
    ) -> PResult<Block> {
        let mut b = Block {
            stmts: Vec::new(),
            end_comments: initial,
        };
        let mut first = at_start;
        loop {
            if self.fatal {
                return Err(Failed);
            }
            let c = self.gather(first && b.end_comments.is_empty());
            first = false;
            b.end_comments = merge_comments(std::mem::take(&mut b.end_comments), c);
            if stop_at_launch && self.at_kw("launch") {
                return Ok(b);
            }
            if self.at_punct("}") {
                b.end_comments = strip_trailing_blank(std::mem::take(&mut b.end_comments));
                return Ok(b);
            }
            if matches!(self.peek(), Tok::Eof) {
                return Err(self.unclosed(open));
            }
            let comments = std::mem::take(&mut b.end_comments);
            self.stmt_into(comments, &mut b.stmts);
        }
    }

    /// Parse one statement into `out`, or report it and skip to the next line.
    fn stmt_into(&mut self, comments: Vec<String>, out: &mut Vec<Stmt>) {
        let start = self.span();
        let kind = match self.stmt_kind() {
            Ok(k) => k,
            Err(Failed) => return self.recover(),
        };
        let span = self.since(start);
        if self.expect_eol().is_err() {
            return self.recover();
        }
        let comments = merge_comments(comments, self.take_trailing(start));
        out.push(Stmt { comments, kind, span });
    }

    fn stmt_kind(&mut self) -> PResult<StmtKind> {
        let word = match self.peek() {
            Tok::Ident(s) => s.as_str(),
            Tok::Punct("(") => return self.tuple_assign(),
            _ => return Err(self.not_a_statement()),
        };
        match word {
            "let" => self.let_stmt(),
            "for" => self.for_stmt(false),
            "static_for" => self.for_stmt(true),
            "if" => self.if_stmt(),
            "while" => self.while_stmt(),
            "warp_specialize" => self.warp_specialize(),
            "static_assert" => self.static_assert(),
            "else" | "target" | "num_warps" | "const" | "param" | "layout" | "launch" | "default"
            | "worker" | "kernel" => Err(self.misplaced_keyword()),
            _ => self.assign_or_op(),
        }
    }

    #[inline(never)]
    fn tuple_assign(&mut self) -> PResult<StmtKind> {
        let names = self.tuple_names()?;
        self.expect_punct("=")?;
        let value = self.rhs()?;
        Ok(StmtKind::Assign { names, value })
    }

    #[inline(never)]
    fn let_stmt(&mut self) -> PResult<StmtKind> {
        self.bump();
        let names = if self.at_punct("(") {
            self.tuple_names()?
        } else {
            vec![self.binding("a name")?]
        };
        self.expect_punct("=")?;
        let value = self.rhs()?;
        Ok(StmtKind::Let { names, value })
    }

    #[inline(never)]
    fn static_assert(&mut self) -> PResult<StmtKind> {
        self.bump();
        let cond = self.expr()?;
        self.expect_punct(",")?;
        match self.peek() {
            Tok::Str(s) => {
                let message = s.clone();
                self.bump();
                Ok(StmtKind::StaticAssert { cond, message })
            }
            _ => Err(self.expected("a string message")),
        }
    }

    /// `NAME = RHS` or an operation statement.
    #[inline(never)]
    fn assign_or_op(&mut self) -> PResult<StmtKind> {
        if matches!(self.peek_at(1), Tok::Punct("=")) {
            let name = self.binding("a name")?;
            self.bump();
            let value = self.rhs()?;
            return Ok(StmtKind::Assign {
                names: vec![name],
                value,
            });
        }
        match self.op_start(true) {
            OpStart::Op(name, n) => Ok(StmtKind::Op(self.op(name, n)?)),
            OpStart::Unknown(path, n) => Err(self.unknown_op(&path, n)),
            OpStart::None => Err(self.not_a_statement()),
        }
    }

    #[cold]
    #[inline(never)]
    fn unclosed(&mut self, open: Span) -> Failed {
        let f = self.expected("`}`");
        if let Some(last) = self.errors.last_mut() {
            last.labels.push(Label {
                span: open,
                message: "this `{` is never closed".into(),
                line_col: None,
            });
        }
        f
    }

    #[cold]
    #[inline(never)]
    fn not_a_statement(&mut self) -> Failed {
        let f = self.expected("a statement");
        if let Some(last) = self.errors.last_mut() {
            last.help = Some(
                "a statement is `let`, an assignment `NAME = ...`, an operation, `for`, `static_for`, `if`, \
                 `warp_specialize` or `static_assert`"
                    .into(),
            );
        }
        f
    }

    /// A keyword that cannot start a statement here.
    #[cold]
    #[inline(never)]
    fn misplaced_keyword(&mut self) -> Failed {
        let sp = self.span();
        let word = match self.peek() {
            Tok::Ident(s) => s.clone(),
            _ => String::new(),
        };
        let d = match word.as_str() {
            "else" => Diagnostic::error("syntax", "`else` without `if`", sp, "not after an `if` block")
                .with_help("write `} else {` on the line that closes the `if` block"),
            "launch" => Diagnostic::error("syntax", "`launch` inside a block", sp, "misplaced `launch`")
                .with_help("`launch { ... }` goes at the end of the kernel body, outside every block"),
            "default" | "worker" => Diagnostic::error(
                "syntax",
                format!("`{word}` outside `warp_specialize`"),
                sp,
                "misplaced",
            )
            .with_help("partitions are written inside `warp_specialize { ... }`"),
            "kernel" => Diagnostic::error("syntax", "nested `kernel`", sp, "one kernel per file"),
            _ => Diagnostic::error(
                "syntax",
                format!("`{word}` declaration among statements"),
                sp,
                "declarations go in the kernel header",
            )
            .with_help("move it above the first statement of the kernel"),
        };
        self.report(d)
    }

    fn tuple_names(&mut self) -> PResult<Vec<Ident>> {
        self.expect_punct("(")?;
        let mut names = vec![self.binding("a name")?];
        while self.eat_punct(",") {
            if self.at_punct(")") {
                break;
            }
            names.push(self.binding("a name")?);
        }
        self.expect_punct(")")?;
        Ok(names)
    }

    fn for_stmt(&mut self, unrolled: bool) -> PResult<StmtKind> {
        self.bump();
        let var = self.binding("a loop variable")?;
        self.expect_kw("in")?;
        let start = self.expr()?;
        self.expect_punct("..")?;
        let end = self.expr()?;
        let step = if self.at_kw("step") {
            self.bump();
            Some(self.expr()?)
        } else {
            None
        };
        let body = self.block()?;
        Ok(StmtKind::For {
            var,
            start,
            end,
            step,
            body,
            unrolled,
        })
    }

    fn if_stmt(&mut self) -> PResult<StmtKind> {
        self.expect_kw("if")?;
        let cond = self.expr()?;
        let then_body = self.block()?;
        let else_body = if self.at_kw("else") {
            self.bump();
            if self.at_kw("if") {
                // `else if`: an else block holding one `if` statement. Comments on its lines
                // belong to the outer `if`.
                let start = self.span();
                self.enter()?;
                let kind = self.if_stmt();
                self.leave();
                let kind = kind?;
                let span = self.since(start);
                Some(Block {
                    stmts: vec![Stmt {
                        comments: Vec::new(),
                        kind,
                        span,
                    }],
                    end_comments: Vec::new(),
                })
            } else {
                Some(self.block()?)
            }
        } else {
            None
        };
        Ok(StmtKind::If {
            cond,
            then_body,
            else_body,
        })
    }

    fn while_stmt(&mut self) -> PResult<StmtKind> {
        self.expect_kw("while")?;
        let cond = self.expr()?;
        let body = self.block()?;
        Ok(StmtKind::While { cond, body })
    }

    fn warp_specialize(&mut self) -> PResult<StmtKind> {
        let kw = self.expect_kw("warp_specialize")?;
        let open = self.expect_punct("{")?;
        if matches!(self.peek(), Tok::Newline) {
            self.bump();
        }
        self.enter()?;
        let r = self.partitions(kw, open);
        self.leave();
        r
    }

    fn partitions(&mut self, kw: Span, open: Span) -> PResult<StmtKind> {
        let mut default: Option<DefaultPartition> = None;
        let mut workers: Vec<Worker> = Vec::new();
        let mut first = true;
        loop {
            if self.fatal {
                return Err(Failed);
            }
            let comments = self.gather(first);
            first = false;
            let start = self.span();
            match self.peek() {
                Tok::Punct("}") => {
                    self.bump();
                    // Comments before the closing brace go to the end of the last partition.
                    let leftover = strip_trailing_blank(comments);
                    let last = workers
                        .last_mut()
                        .map(|w| &mut w.body)
                        .or(default.as_mut().map(|d| &mut d.body));
                    if let Some(b) = last {
                        let merged = merge_comments(std::mem::take(&mut b.end_comments), leftover);
                        b.end_comments = strip_blank_edges(merged, b.stmts.is_empty());
                    }
                    break;
                }
                Tok::Eof => return Err(self.unclosed(open)),
                Tok::Ident(s) if s == "default" => {
                    let r = self.default_partition(comments, start);
                    match r {
                        Ok(d) => {
                            if let Some(prev) = &default {
                                let d = Diagnostic::error(
                                    "syntax",
                                    "two default partitions",
                                    d.span,
                                    "second `default`",
                                )
                                .with_label(prev.span, "first here");
                                self.report(d);
                                continue;
                            }
                            default = Some(d);
                        }
                        Err(Failed) => self.recover(),
                    }
                }
                Tok::Ident(s) if s == "worker" => match self.worker(comments, start) {
                    Ok(w) => workers.push(w),
                    Err(Failed) => self.recover(),
                },
                _ => {
                    self.expected("`default` or `worker`");
                    self.recover();
                }
            }
        }
        match default {
            Some(default) => Ok(StmtKind::WarpSpecialize { default, workers }),
            None => {
                let sp = self.since(kw);
                let d = Diagnostic::error(
                    "syntax",
                    "`warp_specialize` without a default partition",
                    sp,
                    "no `default { }`",
                )
                .with_help("add `default { ... }`: the warps of `num_warps` run it");
                Err(self.report(d))
            }
        }
    }

    fn default_partition(&mut self, comments: Vec<String>, start: Span) -> PResult<DefaultPartition> {
        self.bump();
        let mut regs = None;
        if self.eat_punct("(") {
            self.expect_kw("regs")?;
            self.expect_punct("=")?;
            regs = Some(self.expr()?);
            self.expect_punct(")")?;
        }
        let body = self.block()?;
        let span = self.since(start);
        self.expect_eol()?;
        let comments = merge_comments(comments, self.take_trailing(start));
        Ok(DefaultPartition {
            comments,
            regs,
            body,
            span,
        })
    }

    fn worker(&mut self, comments: Vec<String>, start: Span) -> PResult<Worker> {
        self.bump();
        let name = self.ident("a worker name")?;
        let open = self.expect_punct("(")?;
        let mut warps = None;
        let mut regs = None;
        loop {
            if self.at_punct(")") {
                break;
            }
            let key = self.ident("`warps` or `regs`")?;
            self.expect_punct("=")?;
            let v = self.expr()?;
            let slot = match key.name.as_str() {
                "warps" => &mut warps,
                "regs" => &mut regs,
                _ => {
                    let d = Diagnostic::error(
                        "syntax",
                        format!("unknown worker setting `{}`", key.name),
                        key.span,
                        "unknown",
                    )
                    .with_help("workers take `warps=W, regs=R`");
                    return Err(self.report(d));
                }
            };
            if slot.is_some() {
                let d = Diagnostic::error("syntax", format!("`{}` given twice", key.name), key.span, "again");
                return Err(self.report(d));
            }
            *slot = Some(v);
            if !self.eat_punct(",") {
                break;
            }
        }
        self.expect_punct(")")?;
        let (Some(warps), Some(regs)) = (warps, regs) else {
            let sp = self.since(open);
            let d = Diagnostic::error(
                "syntax",
                format!("worker `{}` needs `warps` and `regs`", name.name),
                sp,
                "here",
            )
            .with_help("write `worker NAME(warps=W, regs=R) { ... }`");
            return Err(self.report(d));
        };
        let body = self.block()?;
        let span = self.since(start);
        self.expect_eol()?;
        let comments = merge_comments(comments, self.take_trailing(start));
        Ok(Worker {
            comments,
            name,
            warps,
            regs,
            body,
            span,
        })
    }

    fn launch(&mut self, comments: Vec<String>) -> PResult<Launch> {
        let start = self.expect_kw("launch")?;
        let open = self.expect_punct("{")?;
        if matches!(self.peek(), Tok::Newline) {
            self.bump();
        }
        let mut items = Vec::new();
        let mut first = true;
        let end_comments = loop {
            if self.fatal {
                return Err(Failed);
            }
            let c = self.gather(first);
            first = false;
            match self.peek() {
                Tok::Punct("}") => break strip_trailing_blank(c),
                Tok::Eof => return Err(self.unclosed(open)),
                _ => {}
            }
            match self.launch_item(c) {
                Ok(i) => items.push(i),
                Err(Failed) => self.recover(),
            }
        };
        self.expect_punct("}")?;
        let span = self.since(start);
        self.expect_eol()?;
        let comments = merge_comments(comments, self.take_trailing(start));
        Ok(Launch {
            comments,
            items,
            end_comments,
            span,
        })
    }

    fn launch_item(&mut self, comments: Vec<String>) -> PResult<LaunchItem> {
        let start = self.span();
        let kind = if self.at_kw("tensor") && matches!(self.peek_at(1), Tok::Ident(_)) {
            self.bump();
            let name = self.binding("a tensor name")?;
            self.expect_punct(":")?;
            let ty = self.expr()?;
            self.expect_punct("=")?;
            let init = self.expr()?;
            LaunchItemKind::Tensor { name, ty, init }
        } else if self.at_kw("limit")
            && matches!(self.peek_at(1), Tok::Ident(_))
            && matches!(self.peek_at(2), Tok::Punct("="))
        {
            // `limit` is not a keyword: `limit = 3` still sets a parameter called `limit`.
            self.bump();
            let name = self.ident("a limit name")?;
            self.expect_punct("=")?;
            let value = self.expr()?;
            LaunchItemKind::Limit { name, value }
        } else {
            let name = self.ident("`grid`, `cluster`, `outputs`, `tensor` or a parameter name")?;
            self.expect_punct("=")?;
            let value = self.expr()?;
            LaunchItemKind::Set { name, value }
        };
        let span = self.since(start);
        self.expect_eol()?;
        let comments = merge_comments(comments, self.take_trailing(start));
        Ok(LaunchItem { comments, kind, span })
    }

    // ---- operations ---------------------------------------------------------------------

    /// Whether the tokens at the cursor name an operation. `stmt`: at the start of a
    /// statement (any dotted name is meant as an operation) rather than of a right-hand side
    /// (a dotted name is an operation only if an operand follows it without an operator).
    fn op_start(&self, stmt: bool) -> OpStart {
        let Tok::Ident(first) = self.peek() else {
            return OpStart::None;
        };
        let mut path = first.clone();
        let mut n = 1;
        while matches!(self.peek_at(n), Tok::Punct(".")) {
            match self.peek_at(n + 1) {
                Tok::Ident(s) => {
                    path.push('.');
                    path.push_str(s);
                    n += 2;
                }
                _ => break,
            }
        }
        if let Some(name) = OpKind::NAMES.iter().find(|o| **o == path) {
            return OpStart::Op(name, n);
        }
        let next = self.peek_at(n);
        let operand_follows = matches!(next, Tok::Ident(_) | Tok::Int(_) | Tok::Float(_) | Tok::Str(_));
        if stmt {
            // `foo a, b` or `tma.laod ...`: meant as an operation. `x[0] = 1` is not a statement.
            let ends = matches!(next, Tok::Newline | Tok::Eof | Tok::Punct("}"));
            if n > 1 || operand_follows || ends {
                return OpStart::Unknown(path, n);
            }
        } else {
            let family = OpKind::NAMES
                .iter()
                .any(|o| o.split('.').next() == Some(first.as_str()));
            if n > 1 && family && operand_follows {
                return OpStart::Unknown(path, n);
            }
        }
        if let Some(name) = OpKind::NAMES.iter().find(|o| **o == first.as_str()) {
            return OpStart::Op(name, 1);
        }
        OpStart::None
    }

    fn unknown_op(&mut self, path: &str, ntoks: usize) -> Failed {
        let start = self.span();
        for _ in 0..ntoks {
            self.bump();
        }
        let sp = self.since(start);
        if !path.contains('.') {
            let kw = STATEMENT_KEYWORDS
                .iter()
                .map(|k| (*k, edit_distance(path, k)))
                .min_by_key(|(_, d)| *d);
            if let Some((kw, dist)) = kw {
                if dist <= 1 || (dist == 2 && path.len() > 5) {
                    let d = Diagnostic::error(
                        "syntax",
                        format!("unknown statement `{path}`"),
                        sp,
                        "not a statement",
                    )
                    .with_help(format!("did you mean `{kw}`?"));
                    return self.report(d);
                }
            }
        }
        let mut d = Diagnostic::error(
            "unknown-op",
            format!("unknown operation `{path}`"),
            sp,
            "not an operation",
        );
        match suggest_op(path) {
            Some(s) => d = d.with_help(format!("did you mean `{s}`?")),
            None => {
                if !path.contains('.') {
                    d = d.with_note(
                        "a statement is `let`, an assignment `NAME = ...`, a control-flow statement \
                         or an operation",
                    );
                }
                d = d.with_note(format!("operations are: {}", OpKind::NAMES.join(", ")));
            }
        }
        self.report(d)
    }

    fn op(&mut self, name: &'static str, ntoks: usize) -> PResult<Op> {
        let start = self.span();
        for _ in 0..ntoks {
            self.bump();
        }
        let name_span = self.since(start);
        let mut pos: Vec<Expr> = Vec::new();
        let mut kw: Vec<(Ident, Expr)> = Vec::new();
        if !self.at_eol() {
            loop {
                if let (Tok::Ident(_), Tok::Punct("=")) = (self.peek(), self.peek_at(1)) {
                    let key = self.ident("an operand name")?;
                    self.bump();
                    let v = self.expr()?;
                    kw.push((key, v));
                } else {
                    let e = self.expr()?;
                    if let Some((k, _)) = kw.last() {
                        let d = Diagnostic::error(
                            "syntax",
                            "positional operand after a keyword operand",
                            e.span,
                            "positional operand",
                        )
                        .with_label(k.span, "keyword operand")
                        .with_help("write positional operands first, then `key=value` ones");
                        return Err(self.report(d));
                    }
                    pos.push(e);
                }
                if !self.eat_punct(",") {
                    break;
                }
            }
        }
        let span = self.since(start);
        let sig = signature_text(name).unwrap_or_else(|| name.to_string());
        if !self.at_eol() {
            let found = self.peek().describe();
            let sp = self.span();
            let d = Diagnostic::error(
                "syntax",
                format!("expected `,` or end of line, found {found}"),
                sp,
                "expected `,`",
            )
            .with_help(format!("operands are separated by commas: `{sig}`"));
            return Err(self.report(d));
        }
        match OpKind::from_parts(name, pos, kw) {
            Ok(kind) => Ok(Op { kind, span }),
            Err(e) => {
                let d = match e {
                    OpShapeError::Arity { op, expected, found } => {
                        let n = expected.len();
                        let plural = if n == 1 { "" } else { "s" };
                        let msg = format!("`{op}` takes {n} positional operand{plural}, found {found}");
                        Diagnostic::error("op-operands", msg, span, "wrong number of operands")
                    }
                    OpShapeError::DuplicateKeyword { op, key } => Diagnostic::error(
                        "op-operands",
                        format!("`{op}` given `{}` twice", key.name),
                        key.span,
                        "given again here",
                    ),
                    OpShapeError::UnknownKeyword { op, key, allowed } => {
                        let msg = format!("`{op}` has no operand `{}`", key.name);
                        let label = if allowed.is_empty() {
                            "this operation takes no keyword operands".to_string()
                        } else {
                            format!("expected one of: {}", allowed.join(", "))
                        };
                        Diagnostic::error("op-operands", msg, key.span, label)
                    }
                    OpShapeError::UnknownOp => Diagnostic::error(
                        "unknown-op",
                        format!("unknown operation `{name}`"),
                        name_span,
                        "here",
                    ),
                };
                Err(self.report(d.with_help(format!("the signature is `{sig}`"))))
            }
        }
    }

    fn rhs(&mut self) -> PResult<Rhs> {
        match self.op_start(false) {
            OpStart::Op(name, n) => Ok(Rhs::Op(self.op(name, n)?)),
            OpStart::Unknown(path, n) => Err(self.unknown_op(&path, n)),
            OpStart::None => Ok(Rhs::Expr(self.expr()?)),
        }
    }

    // ---- expressions --------------------------------------------------------------------

    fn expr(&mut self) -> PResult<Expr> {
        Ok(self.expr_d()?.0)
    }

    /// An expression and the depth of its tree.
    fn expr_d(&mut self) -> PResult<(Expr, usize)> {
        self.enter()?;
        let r = self.binary(1);
        self.leave();
        r
    }

    fn too_deep(&mut self, span: Span) -> Failed {
        let d = Diagnostic::error(
            "syntax",
            "expression nested too deep",
            span,
            format!("more than {MAX_DEPTH} levels"),
        )
        .with_help("split the expression with `let`");
        self.report(d);
        self.fatal = true;
        Failed
    }

    fn binary(&mut self, min_prec: u8) -> PResult<(Expr, usize)> {
        let (mut lhs, mut depth) = self.unary()?;
        while let Some(op) = self.peek_binop(min_prec) {
            self.bump();
            let (rhs, rd) = self.binary(op.precedence() + 1)?;
            depth = 1 + depth.max(rd);
            let span = lhs.span.to(rhs.span);
            if depth > MAX_DEPTH {
                return Err(self.too_deep(span));
            }
            lhs = Expr::new(ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)), span);
        }
        Ok((lhs, depth))
    }

    /// The binary operator at the cursor, if it binds at least as tightly as `min_prec`.
    fn peek_binop(&self, min_prec: u8) -> Option<BinOp> {
        match self.peek() {
            Tok::Punct(p) => binop_of(p).filter(|op| op.precedence() >= min_prec),
            _ => None,
        }
    }

    fn unary(&mut self) -> PResult<(Expr, usize)> {
        let op = match self.peek() {
            Tok::Punct("-") => UnOp::Neg,
            Tok::Punct("!") => UnOp::Not,
            _ => return self.postfix(),
        };
        let start = self.bump().span;
        self.enter()?;
        let r = self.unary();
        self.leave();
        let (e, d) = r?;
        let span = start.to(e.span);
        if d + 1 > MAX_DEPTH {
            return Err(self.too_deep(span));
        }
        Ok((Expr::new(ExprKind::Unary(op, Box::new(e)), span), d + 1))
    }

    fn postfix(&mut self) -> PResult<(Expr, usize)> {
        let start = self.span();
        let (mut e, mut depth) = self.primary()?;
        loop {
            if self.at_punct("[") {
                let open = self.bump().span;
                let mut items = Vec::new();
                let mut d = 0;
                while !self.at_punct("]") {
                    let (item, id) = self.index_item()?;
                    d = d.max(id);
                    items.push(item);
                    if !self.eat_punct(",") {
                        break;
                    }
                }
                self.expect_close("]", open, true)?;
                depth = 1 + depth.max(d);
                e = Expr::new(ExprKind::Index(Box::new(e), items), self.since(start));
            } else if self.at_punct(".") {
                self.bump();
                let f = self.ident("a field name")?;
                depth += 1;
                e = Expr::new(ExprKind::Field(Box::new(e), f.name), self.since(start));
            } else if self.at_punct("(") {
                let sp = self.span();
                let d = Diagnostic::error("syntax", "only names can be called", sp, "call of a non-name")
                    .with_help("built-in functions are called by name: `cdiv(a, b)`");
                return Err(self.report(d));
            } else {
                break;
            }
            if depth > MAX_DEPTH {
                let sp = self.since(start);
                return Err(self.too_deep(sp));
            }
        }
        Ok((e, depth))
    }

    fn index_item(&mut self) -> PResult<(IndexItem, usize)> {
        let closes = |t: &Tok| matches!(t, Tok::Punct(",") | Tok::Punct("]"));
        if self.eat_punct(":") {
            if closes(self.peek()) {
                return Ok((IndexItem::Slice(None, None), 0));
            }
            let (b, d) = self.expr_d()?;
            return Ok((IndexItem::Slice(None, Some(b)), d));
        }
        if self.at_kw("None") && closes(self.peek_at(1)) {
            self.bump();
            return Ok((IndexItem::NewAxis, 0));
        }
        let (a, ad) = self.expr_d()?;
        if self.eat_punct(":") {
            if closes(self.peek()) {
                return Ok((IndexItem::Slice(Some(a), None), ad));
            }
            let (b, bd) = self.expr_d()?;
            return Ok((IndexItem::Slice(Some(a), Some(b)), ad.max(bd)));
        }
        Ok((IndexItem::Expr(a), ad))
    }

    fn primary(&mut self) -> PResult<(Expr, usize)> {
        let sp = self.span();
        match self.peek().clone() {
            Tok::Int(v) => {
                self.bump();
                Ok((Expr::new(ExprKind::Int(v), sp), 1))
            }
            Tok::Float(v) => {
                self.bump();
                Ok((Expr::new(ExprKind::Float(v), sp), 1))
            }
            Tok::Str(s) => {
                self.bump();
                Ok((Expr::new(ExprKind::Str(s), sp), 1))
            }
            Tok::Ident(s) => {
                self.bump();
                match s.as_str() {
                    "true" => return Ok((Expr::new(ExprKind::Bool(true), sp), 1)),
                    "false" => return Ok((Expr::new(ExprKind::Bool(false), sp), 1)),
                    "None" => {
                        let d = Diagnostic::error("syntax", "`None` outside an index", sp, "not a value")
                            .with_help("`None` adds an axis inside `x[...]`, as in `x[:, None]`");
                        return Err(self.report(d));
                    }
                    _ => {}
                }
                if self.at_punct("(") {
                    let open = self.bump().span;
                    let mut args = Vec::new();
                    let mut depth = 0;
                    while !self.at_punct(")") {
                        let key = if let (Tok::Ident(_), Tok::Punct("=")) = (self.peek(), self.peek_at(1)) {
                            let k = self.ident("an argument name")?;
                            self.bump();
                            Some(k)
                        } else {
                            None
                        };
                        let (value, d) = self.expr_d()?;
                        depth = depth.max(d);
                        args.push(Arg { key, value });
                        if !self.eat_punct(",") {
                            break;
                        }
                    }
                    self.expect_close(")", open, true)?;
                    return Ok((Expr::new(ExprKind::Call(s, args), self.since(sp)), depth + 1));
                }
                Ok((Expr::new(ExprKind::Name(s), sp), 1))
            }
            Tok::Punct("(") => {
                let open = self.bump().span;
                let (e, d) = self.expr_d()?;
                self.expect_close(")", open, false)?;
                // Parentheses only group: the expression keeps its own span.
                Ok((e, d))
            }
            Tok::Punct("[") => {
                let open = self.bump().span;
                let mut items = Vec::new();
                let mut depth = 0;
                while !self.at_punct("]") {
                    let (e, d) = self.expr_d()?;
                    depth = depth.max(d);
                    items.push(e);
                    if !self.eat_punct(",") {
                        break;
                    }
                }
                self.expect_close("]", open, true)?;
                Ok((Expr::new(ExprKind::List(items), self.since(sp)), depth + 1))
            }
            _ => Err(self.expected("an expression")),
        }
    }
}

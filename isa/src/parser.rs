//! The `.tile` parser: tokens to IR (docs/tile-format.md), recursive descent.
//!
//! Every identifier, expression, operation, statement and declaration gets the span of its
//! text. Comments and blank lines are kept (as `"// ..."` and `""` entries of the next item's
//! `comments`) so `bwsim fmt` preserves them. Errors are diagnostics with code `syntax`,
//! `unknown-op` or `op-operands`; the parser never panics and nests at most [`MAX_DEPTH`] deep.

use crate::diag::Diagnostic;
use crate::ir::*;
use crate::lexer::{lex, Tok, Token};
use crate::span::Span;
use crate::types::Target;

/// Deepest nesting of blocks and expressions accepted.
pub const MAX_DEPTH: usize = 64;

/// Words that cannot name a value.
pub const KEYWORDS: &[&str] = &[
    "kernel",
    "target",
    "num_warps",
    "const",
    "param",
    "layout",
    "launch",
    "tensor",
    "let",
    "for",
    "static_for",
    "in",
    "step",
    "if",
    "else",
    "warp_specialize",
    "default",
    "worker",
    "static_assert",
    "true",
    "false",
    "None",
];

/// Parse one kernel.
pub fn parse(src: &str) -> Result<Kernel, Vec<Diagnostic>> {
    let toks = lex(src).map_err(|d| vec![d])?;
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
    };
    p.kernel().map_err(|d| vec![d])
}

type R<T> = Result<T, Diagnostic>;

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
}

fn syntax(span: Span, msg: impl Into<String>, label: impl Into<String>) -> Diagnostic {
    Diagnostic::error("syntax", msg, span, label)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The closest operation name, for "did you mean" help.
pub fn suggest_op(name: &str) -> Option<&'static str> {
    OpKind::NAMES
        .iter()
        .map(|n| (edit_distance(name, n), *n))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, n)| n)
}

fn signature_text(name: &str) -> String {
    match OpKind::signature(name) {
        Some((pos, kw)) => {
            let mut s = format!("{name} {}", pos.join(", "));
            for k in kw {
                s.push_str(&format!("[, {k}=...]"));
            }
            s
        }
        None => name.to_string(),
    }
}

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }
    fn peek_at(&self, k: usize) -> &Tok {
        &self.toks[(self.pos + k).min(self.toks.len() - 1)].tok
    }
    fn span(&self) -> Span {
        self.toks[self.pos.min(self.toks.len() - 1)].span
    }
    fn prev_span(&self) -> Span {
        self.toks[self.pos.saturating_sub(1).min(self.toks.len() - 1)].span
    }
    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos.min(self.toks.len() - 1)].clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }
    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }
    fn is_ident(&self, s: &str) -> bool {
        matches!(self.peek(), Tok::Ident(q) if q == s)
    }
    fn eat_punct(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.bump();
            true
        } else {
            false
        }
    }
    fn expect_punct(&mut self, p: &str) -> R<Span> {
        if self.is_punct(p) {
            Ok(self.bump().span)
        } else {
            Err(syntax(
                self.span(),
                format!("expected `{p}`, found {}", self.peek().describe()),
                format!("expected `{p}`"),
            ))
        }
    }
    fn expect_keyword(&mut self, k: &str) -> R<Span> {
        if self.is_ident(k) {
            Ok(self.bump().span)
        } else {
            Err(syntax(
                self.span(),
                format!("expected `{k}`, found {}", self.peek().describe()),
                format!("expected `{k}`"),
            ))
        }
    }
    fn ident(&mut self, what: &str) -> R<Ident> {
        match self.peek().clone() {
            Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()) => {
                let t = self.bump();
                Ok(Ident::spanned(s, t.span))
            }
            other => Err(syntax(
                self.span(),
                format!("expected {what}, found {}", other.describe()),
                format!("expected {what}"),
            )),
        }
    }
    /// The identifier at the cursor, keywords included (for `key=value`); the caller checked it is one.
    fn raw_ident(&mut self) -> Ident {
        let t = self.bump();
        match t.tok {
            Tok::Ident(s) => Ident::spanned(s, t.span),
            _ => Ident::spanned("", t.span),
        }
    }
    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(syntax(
                self.span(),
                format!("nesting deeper than {MAX_DEPTH} levels"),
                "too deep",
            )
            .with_help("split the expression or block"));
        }
        Ok(())
    }
    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// End of a statement: a newline, a comment, `}` or end of file (not consumed).
    fn at_stmt_end(&self) -> bool {
        matches!(self.peek(), Tok::Newline | Tok::Comment(_) | Tok::Eof) || self.is_punct("}")
    }
    fn expect_stmt_end(&mut self) -> R<()> {
        if self.at_stmt_end() {
            Ok(())
        } else {
            Err(syntax(
                self.span(),
                format!("expected end of line, found {}", self.peek().describe()),
                "unexpected token",
            ))
        }
    }

    /// Consume newlines and comment lines; return them as comment entries (`""` for a blank line).
    /// `fresh` says whether we are right after an opening brace or at the start of the file.
    fn comments(&mut self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut line_start = false;
        loop {
            match self.peek().clone() {
                Tok::Newline => {
                    self.bump();
                    if line_start && out.last().map(|s| !s.is_empty()).unwrap_or(true) {
                        out.push(String::new());
                    }
                    line_start = true;
                }
                Tok::Comment(c) => {
                    self.bump();
                    out.push(c);
                    line_start = false;
                }
                _ => break,
            }
        }
        out
    }

    /// After an item: a trailing `// comment` on the same line.
    fn trailing_comment(&mut self) -> Option<String> {
        if let Tok::Comment(c) = self.peek().clone() {
            self.bump();
            Some(c)
        } else {
            None
        }
    }

    fn kernel(&mut self) -> R<Kernel> {
        let mut comments = self.comments();
        trim_blank(&mut comments);
        let start = self.expect_keyword("kernel")?;
        let name = self.ident("a kernel name")?;
        self.expect_punct("{")?;
        let mut targets: Option<Vec<Target>> = None;
        let mut num_warps: Option<Expr> = None;
        let (mut consts, mut params, mut layouts) = (Vec::new(), Vec::new(), Vec::new());
        let mut body = Block::default();
        let mut launch = None;
        let mut carry: Vec<String> = Vec::new();
        let mut first = true;
        loop {
            let mut cm = self.comments();
            if first {
                trim_leading_blank(&mut cm);
                first = false;
            }
            let mut c = std::mem::take(&mut carry);
            c.append(&mut cm);
            if self.is_punct("}") {
                trim_trailing_blank(&mut c);
                if launch.is_some() {
                    carry = c;
                } else {
                    body.end_comments = c;
                }
                break;
            }
            if matches!(self.peek(), Tok::Eof) {
                return Err(syntax(
                    self.span(),
                    "unexpected end of file: the kernel is not closed",
                    "expected `}`",
                )
                .with_label(start, "kernel starts here"));
            }
            if launch.is_some() {
                return Err(syntax(
                    self.span(),
                    "the launch section must be the last thing in the kernel",
                    "after `launch { }`",
                )
                .with_help("move this above the launch section"));
            }
            let sp = self.span();
            if self.is_ident("target") {
                self.bump();
                let mut ts = Vec::new();
                loop {
                    let id = self.ident("a target name")?;
                    let t = Target::from_name(&id.name).ok_or_else(|| {
                        syntax(id.span, format!("unknown target `{}`", id.name), "unknown target")
                            .with_help("targets are sm_100a and sm_90a")
                    })?;
                    ts.push(t);
                    if !self.eat_punct(",") {
                        break;
                    }
                }
                if targets.is_some() {
                    return Err(syntax(sp, "`target` given twice", "second target line"));
                }
                targets = Some(ts);
                self.expect_stmt_end()?;
                carry = c;
                if let Some(t) = self.trailing_comment() {
                    carry.push(t);
                }
                continue;
            }
            if self.is_ident("num_warps") {
                self.bump();
                let e = self.expr()?;
                if num_warps.is_some() {
                    return Err(syntax(sp, "`num_warps` given twice", "second num_warps line"));
                }
                num_warps = Some(e);
                self.expect_stmt_end()?;
                carry = c;
                if let Some(t) = self.trailing_comment() {
                    carry.push(t);
                }
                continue;
            }
            if self.is_ident("const") {
                self.bump();
                let name = self.ident("a constant name")?;
                self.expect_punct(":")?;
                let kid = self.ident("a constant kind (int, bool or dtype)")?;
                let kind = match kid.name.as_str() {
                    "int" => ConstKind::Int,
                    "bool" => ConstKind::Bool,
                    "dtype" => ConstKind::DType,
                    _ => {
                        return Err(syntax(
                            kid.span,
                            format!("unknown constant kind `{}`", kid.name),
                            "expected int, bool or dtype",
                        ))
                    }
                };
                self.expect_punct("=")?;
                let value = self.expr()?;
                self.expect_stmt_end()?;
                let mut comments = c;
                if let Some(t) = self.trailing_comment() {
                    comments.push(t);
                }
                consts.push(ConstDecl {
                    comments,
                    name,
                    kind,
                    value,
                    span: sp.to(self.prev_span()),
                });
                continue;
            }
            if self.is_ident("param") {
                self.bump();
                let name = self.ident("a parameter name")?;
                self.expect_punct(":")?;
                let ty = self.expr()?;
                self.expect_stmt_end()?;
                let mut comments = c;
                if let Some(t) = self.trailing_comment() {
                    comments.push(t);
                }
                params.push(Param {
                    comments,
                    name,
                    ty,
                    span: sp.to(self.prev_span()),
                });
                continue;
            }
            if self.is_ident("layout") {
                self.bump();
                let name = self.ident("a layout name")?;
                self.expect_punct("=")?;
                let value = self.expr()?;
                self.expect_stmt_end()?;
                let mut comments = c;
                if let Some(t) = self.trailing_comment() {
                    comments.push(t);
                }
                layouts.push(LayoutDecl {
                    comments,
                    name,
                    value,
                    span: sp.to(self.prev_span()),
                });
                continue;
            }
            if self.is_ident("launch") {
                launch = Some(self.launch(c)?);
                continue;
            }
            let s = self.stmt(c)?;
            body.stmts.push(s);
        }
        let end = self.expect_punct("}")?;
        let mut trailing = carry;
        trailing.extend(self.comments());
        trim_blank(&mut trailing);
        if !matches!(self.peek(), Tok::Eof) {
            return Err(syntax(
                self.span(),
                "one kernel per file: unexpected text after the kernel",
                "here",
            ));
        }
        let targets = targets.ok_or_else(|| {
            syntax(
                name.span,
                format!("kernel `{}` has no `target` line", name.name),
                "in this kernel",
            )
            .with_help("add `target sm_100a` (or `target sm_100a, sm_90a`) at the top of the kernel")
        })?;
        let num_warps = num_warps.ok_or_else(|| {
            syntax(
                name.span,
                format!("kernel `{}` has no `num_warps` line", name.name),
                "in this kernel",
            )
            .with_help("add `num_warps 4`")
        })?;
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
            trailing_comments: trailing,
            span: start.to(end),
        })
    }

    fn launch(&mut self, comments: Vec<String>) -> R<Launch> {
        let start = self.expect_keyword("launch")?;
        self.expect_punct("{")?;
        let mut items = Vec::new();
        let mut first = true;
        let end_comments;
        loop {
            let mut c = self.comments();
            if first {
                trim_leading_blank(&mut c);
                first = false;
            }
            if self.is_punct("}") {
                trim_trailing_blank(&mut c);
                end_comments = c;
                break;
            }
            let sp = self.span();
            let kind = if self.is_ident("tensor") {
                self.bump();
                let name = self.ident("a tensor name")?;
                self.expect_punct(":")?;
                let ty = self.expr()?;
                self.expect_punct("=")?;
                let init = self.expr()?;
                LaunchItemKind::Tensor { name, ty, init }
            } else {
                let name = match self.peek().clone() {
                    Tok::Ident(s) => {
                        let t = self.bump();
                        Ident::spanned(s, t.span)
                    }
                    other => {
                        return Err(syntax(
                            self.span(),
                            format!("expected a launch item, found {}", other.describe()),
                            "expected `NAME = VALUE` or `tensor ...`",
                        ))
                    }
                };
                self.expect_punct("=")?;
                let value = self.expr()?;
                LaunchItemKind::Set { name, value }
            };
            self.expect_stmt_end()?;
            let mut comments = c;
            if let Some(t) = self.trailing_comment() {
                comments.push(t);
            }
            items.push(LaunchItem {
                comments,
                kind,
                span: sp.to(self.prev_span()),
            });
        }
        let end = self.expect_punct("}")?;
        Ok(Launch {
            comments,
            items,
            end_comments,
            span: start.to(end),
        })
    }

    fn block(&mut self) -> R<Block> {
        self.enter()?;
        let open = self.expect_punct("{")?;
        let mut b = Block::default();
        let mut first = true;
        loop {
            let mut c = self.comments();
            if first {
                trim_leading_blank(&mut c);
                first = false;
            }
            if self.is_punct("}") {
                trim_trailing_blank(&mut c);
                b.end_comments = c;
                self.bump();
                break;
            }
            if matches!(self.peek(), Tok::Eof) {
                return Err(syntax(
                    self.span(),
                    "unexpected end of file: block not closed",
                    "expected `}`",
                )
                .with_label(open, "block opened here"));
            }
            let s = self.stmt(c)?;
            b.stmts.push(s);
        }
        self.leave();
        Ok(b)
    }

    /// Try to read a (possibly dotted) operation name at the cursor without consuming it.
    /// Returns (name, number of tokens) if it names an operation.
    fn op_name_ahead(&self) -> Option<(String, usize)> {
        let Tok::Ident(first) = self.peek() else {
            return None;
        };
        let mut name = first.clone();
        let mut k = 1;
        let mut best = if OpKind::signature(&name).is_some() {
            Some((name.clone(), 1))
        } else {
            None
        };
        while matches!(self.peek_at(k), Tok::Punct(".")) {
            if let Tok::Ident(next) = self.peek_at(k + 1) {
                name = format!("{name}.{next}");
                k += 2;
                if OpKind::signature(&name).is_some() {
                    best = Some((name.clone(), k));
                }
            } else {
                break;
            }
        }
        best
    }

    /// A dotted name at the cursor that is not an operation but looks like one (`tma.laod`).
    fn bad_op_ahead(&self) -> Option<(String, Span)> {
        let Tok::Ident(first) = self.peek() else {
            return None;
        };
        if !matches!(self.peek_at(1), Tok::Punct(".")) {
            return None;
        }
        let Tok::Ident(second) = self.peek_at(2) else {
            return None;
        };
        // `a_desc.nbytes` style expressions are not statements; a dotted name followed by an
        // operand (not `=`) at the start of a statement is meant as an operation.
        let name = format!("{first}.{second}");
        let sp = self
            .span()
            .to(self.toks[(self.pos + 2).min(self.toks.len() - 1)].span);
        Some((name, sp))
    }

    fn op(&mut self) -> R<Op> {
        let start = self.span();
        let Some((name, k)) = self.op_name_ahead() else {
            return Err(syntax(start, "expected an operation", "here"));
        };
        for _ in 0..k {
            self.bump();
        }
        let mut pos = Vec::new();
        let mut kw: Vec<(Ident, Expr)> = Vec::new();
        if !self.at_stmt_end() {
            loop {
                let is_kw =
                    matches!(self.peek(), Tok::Ident(_)) && matches!(self.peek_at(1), Tok::Punct("="));
                if is_kw {
                    let key = self.raw_ident();
                    self.bump();
                    let v = self.expr()?;
                    kw.push((key, v));
                } else {
                    if !kw.is_empty() {
                        return Err(Diagnostic::error(
                            "op-operands",
                            format!("positional operand after keyword operands in `{name}`"),
                            self.span(),
                            "move this before the `key=value` operands",
                        )
                        .with_help(format!("the signature is `{}`", signature_text(&name))));
                    }
                    pos.push(self.expr()?);
                }
                if !self.eat_punct(",") {
                    break;
                }
            }
        }
        let span = start.to(self.prev_span());
        if !self.at_stmt_end() && !self.is_punct(")") {
            return Err(syntax(
                self.span(),
                format!("expected `,` or end of line, found {}", self.peek().describe()),
                "expected `,`",
            )
            .with_help(format!(
                "operands are separated by commas: `{}`",
                signature_text(&name)
            )));
        }
        let kind = OpKind::from_parts(&name, pos, kw).map_err(|e| match e {
            OpShapeError::UnknownOp => Diagnostic::error(
                "unknown-op",
                format!("unknown operation `{name}`"),
                span,
                "not an operation",
            ),
            OpShapeError::Arity { op, expected, found } => Diagnostic::error(
                "op-operands",
                format!(
                    "`{op}` takes {} positional operand{}, found {found}",
                    expected.len(),
                    if expected.len() == 1 { "" } else { "s" }
                ),
                span,
                "wrong number of operands",
            )
            .with_help(format!("the signature is `{}`", signature_text(op))),
            OpShapeError::DuplicateKeyword { op, key } => Diagnostic::error(
                "op-operands",
                format!("`{}` given twice to `{op}`", key.name),
                key.span,
                "duplicate keyword",
            ),
            OpShapeError::UnknownKeyword { op, key, allowed } => Diagnostic::error(
                "op-operands",
                format!("`{op}` has no operand `{}`", key.name),
                key.span,
                "unknown keyword",
            )
            .with_help(if allowed.is_empty() {
                format!("`{op}` takes no keyword operands")
            } else {
                format!("its keywords are: {}", allowed.join(", "))
            }),
        })?;
        Ok(Op { kind, span })
    }

    fn rhs(&mut self) -> R<Rhs> {
        if self.op_name_ahead().is_some() {
            Ok(Rhs::Op(self.op()?))
        } else {
            Ok(Rhs::Expr(self.expr()?))
        }
    }

    fn names(&mut self) -> R<Vec<Ident>> {
        if self.eat_punct("(") {
            let mut v = vec![self.ident("a name")?];
            while self.eat_punct(",") {
                v.push(self.ident("a name")?);
            }
            self.expect_punct(")")?;
            Ok(v)
        } else {
            Ok(vec![self.ident("a name")?])
        }
    }

    fn stmt(&mut self, mut comments: Vec<String>) -> R<Stmt> {
        let start = self.span();
        let kind = if self.is_ident("let") {
            self.bump();
            let names = self.names()?;
            self.expect_punct("=")?;
            let value = self.rhs()?;
            StmtKind::Let { names, value }
        } else if self.is_ident("for") || self.is_ident("static_for") {
            let unrolled = self.is_ident("static_for");
            self.bump();
            let var = self.ident("a loop variable")?;
            self.expect_keyword("in")?;
            let s = self.expr()?;
            self.expect_punct("..")?;
            let e = self.expr()?;
            let step = if self.is_ident("step") {
                self.bump();
                Some(self.expr()?)
            } else {
                None
            };
            let body = self.block()?;
            StmtKind::For {
                var,
                start: s,
                end: e,
                step,
                body,
                unrolled,
            }
        } else if self.is_ident("if") {
            return self.if_stmt(comments, start);
        } else if self.is_ident("warp_specialize") {
            self.bump();
            self.enter()?;
            self.expect_punct("{")?;
            let mut default = None;
            let mut workers = Vec::new();
            loop {
                let mut c = self.comments();
                trim_blank(&mut c);
                if self.is_punct("}") {
                    self.bump();
                    break;
                }
                let sp = self.span();
                if self.is_ident("default") {
                    self.bump();
                    let mut regs = None;
                    if self.eat_punct("(") {
                        let k = self.ident("`regs`")?;
                        if k.name != "regs" {
                            return Err(syntax(k.span, "the default partition takes only `regs=`", "here"));
                        }
                        self.expect_punct("=")?;
                        regs = Some(self.expr()?);
                        self.expect_punct(")")?;
                    }
                    let body = self.block()?;
                    if default.is_some() {
                        return Err(syntax(sp, "two default partitions", "second one"));
                    }
                    default = Some(DefaultPartition {
                        comments: c,
                        regs,
                        body,
                        span: sp.to(self.prev_span()),
                    });
                } else if self.is_ident("worker") {
                    self.bump();
                    let name = self.ident("a worker name")?;
                    self.expect_punct("(")?;
                    let (mut warps, mut regs) = (None, None);
                    loop {
                        let k = self.ident("`warps` or `regs`")?;
                        self.expect_punct("=")?;
                        let v = self.expr()?;
                        match k.name.as_str() {
                            "warps" => warps = Some(v),
                            "regs" => regs = Some(v),
                            _ => {
                                return Err(syntax(
                                    k.span,
                                    format!("unknown worker option `{}`", k.name),
                                    "expected warps= or regs=",
                                ))
                            }
                        }
                        if !self.eat_punct(",") {
                            break;
                        }
                    }
                    self.expect_punct(")")?;
                    let body = self.block()?;
                    let warps = warps.ok_or_else(|| syntax(name.span, "worker needs `warps=`", "here"))?;
                    let regs = regs.ok_or_else(|| {
                        syntax(
                            name.span,
                            "worker needs `regs=` (a multiple of 8 in [24, 256])",
                            "here",
                        )
                    })?;
                    workers.push(Worker {
                        comments: c,
                        name,
                        warps,
                        regs,
                        body,
                        span: sp.to(self.prev_span()),
                    });
                } else {
                    return Err(syntax(
                        sp,
                        format!("expected `default` or `worker`, found {}", self.peek().describe()),
                        "in warp_specialize",
                    ));
                }
            }
            self.leave();
            let default = default
                .ok_or_else(|| syntax(start, "warp_specialize needs a `default` partition", "here"))?;
            StmtKind::WarpSpecialize { default, workers }
        } else if self.is_ident("static_assert") {
            self.bump();
            let cond = self.expr()?;
            self.expect_punct(",")?;
            let message = match self.peek().clone() {
                Tok::Str(s) => {
                    self.bump();
                    s
                }
                other => {
                    return Err(syntax(
                        self.span(),
                        format!("expected a message string, found {}", other.describe()),
                        "expected `\"...\"`",
                    ))
                }
            };
            StmtKind::StaticAssert { cond, message }
        } else if self.is_punct("(") {
            let names = self.names()?;
            self.expect_punct("=")?;
            let value = self.rhs()?;
            StmtKind::Assign { names, value }
        } else if matches!(self.peek(), Tok::Ident(_)) && matches!(self.peek_at(1), Tok::Punct("=")) {
            let name = self.ident("a name")?;
            self.bump();
            let value = self.rhs()?;
            StmtKind::Assign {
                names: vec![name],
                value,
            }
        } else if self.op_name_ahead().is_some() {
            StmtKind::Op(self.op()?)
        } else if let Some((name, sp)) = self.bad_op_ahead() {
            let mut d = Diagnostic::error(
                "unknown-op",
                format!("unknown operation `{name}`"),
                sp,
                "not an operation",
            );
            if let Some(s) = suggest_op(&name) {
                d = d.with_help(format!("did you mean `{s}`?"));
            }
            return Err(d);
        } else {
            let mut d = syntax(
                self.span(),
                format!("expected a statement, found {}", self.peek().describe()),
                "here",
            );
            if let Tok::Ident(n) = self.peek() {
                if let Some(s) = suggest_op(n) {
                    d = d.with_help(format!("did you mean the operation `{s}`?"));
                }
            }
            return Err(d);
        };
        self.expect_stmt_end()?;
        if let Some(t) = self.trailing_comment() {
            comments.push(t);
        }
        Ok(Stmt {
            comments,
            kind,
            span: start.to(self.prev_span()),
        })
    }

    fn if_stmt(&mut self, mut comments: Vec<String>, start: Span) -> R<Stmt> {
        self.expect_keyword("if")?;
        let cond = self.expr()?;
        let then_body = self.block()?;
        let else_body = if self.is_ident("else") {
            self.bump();
            if self.is_ident("if") {
                self.enter()?;
                let sp = self.span();
                let inner = self.if_stmt(Vec::new(), sp)?;
                self.leave();
                Some(Block {
                    stmts: vec![inner],
                    end_comments: Vec::new(),
                })
            } else {
                Some(self.block()?)
            }
        } else {
            None
        };
        if matches!(
            else_body.as_ref().map(|b| b.stmts.last().map(|s| &s.kind)),
            Some(Some(StmtKind::If { .. }))
        ) {
            // trailing comment already taken by the nested if
        } else {
            self.expect_stmt_end()?;
            if let Some(t) = self.trailing_comment() {
                comments.push(t);
            }
        }
        Ok(Stmt {
            comments,
            kind: StmtKind::If {
                cond,
                then_body,
                else_body,
            },
            span: start.to(self.prev_span()),
        })
    }

    // ----- expressions -----

    fn expr(&mut self) -> R<Expr> {
        self.enter()?;
        let e = self.binary(1);
        self.leave();
        e
    }

    fn binop_here(&self) -> Option<BinOp> {
        let Tok::Punct(p) = self.peek() else { return None };
        BinOp::ALL.iter().copied().find(|b| b.symbol() == *p)
    }

    fn binary(&mut self, min_prec: u8) -> R<Expr> {
        let mut lhs = self.unary()?;
        while let Some(op) = self.binop_here() {
            let prec = op.precedence();
            if prec < min_prec {
                break;
            }
            self.bump();
            self.enter()?;
            let rhs = self.binary(prec + 1)?;
            self.leave();
            let span = lhs.span.to(rhs.span);
            lhs = Expr::new(ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)), span);
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> R<Expr> {
        let sp = self.span();
        let op = if self.is_punct("-") {
            Some(UnOp::Neg)
        } else if self.is_punct("!") {
            Some(UnOp::Not)
        } else {
            None
        };
        if let Some(op) = op {
            self.bump();
            self.enter()?;
            let inner = self.unary()?;
            self.leave();
            let span = sp.to(inner.span);
            return Ok(Expr::new(ExprKind::Unary(op, Box::new(inner)), span));
        }
        self.postfix()
    }

    fn args(&mut self) -> R<Vec<Arg>> {
        let mut args = Vec::new();
        if self.eat_punct(")") {
            return Ok(args);
        }
        loop {
            let is_kw = matches!(self.peek(), Tok::Ident(_)) && matches!(self.peek_at(1), Tok::Punct("="));
            if is_kw {
                let key = self.raw_ident();
                self.bump();
                let value = self.expr()?;
                args.push(Arg {
                    key: Some(key),
                    value,
                });
            } else {
                let value = self.expr()?;
                args.push(Arg { key: None, value });
            }
            if !self.eat_punct(",") {
                break;
            }
        }
        self.expect_punct(")")?;
        Ok(args)
    }

    fn postfix(&mut self) -> R<Expr> {
        let mut e = self.primary()?;
        loop {
            if self.is_punct("(") {
                let ExprKind::Name(f) = &e.kind else {
                    return Err(syntax(
                        self.span(),
                        "only built-in functions can be called",
                        "unexpected `(`",
                    ));
                };
                let f = f.clone();
                self.bump();
                let args = self.args()?;
                let span = e.span.to(self.prev_span());
                e = Expr::new(ExprKind::Call(f, args), span);
            } else if self.is_punct("[") {
                self.bump();
                let mut items = Vec::new();
                if !self.is_punct("]") {
                    loop {
                        items.push(self.index_item()?);
                        if !self.eat_punct(",") {
                            break;
                        }
                    }
                }
                self.expect_punct("]")?;
                let span = e.span.to(self.prev_span());
                e = Expr::new(ExprKind::Index(Box::new(e), items), span);
            } else if self.is_punct(".") {
                self.bump();
                let f = match self.peek().clone() {
                    Tok::Ident(s) => {
                        self.bump();
                        s
                    }
                    other => {
                        return Err(syntax(
                            self.span(),
                            format!("expected a field name, found {}", other.describe()),
                            "after `.`",
                        ))
                    }
                };
                let span = e.span.to(self.prev_span());
                e = Expr::new(ExprKind::Field(Box::new(e), f), span);
            } else {
                break;
            }
        }
        Ok(e)
    }

    fn index_item(&mut self) -> R<IndexItem> {
        if self.is_ident("None") {
            self.bump();
            return Ok(IndexItem::NewAxis);
        }
        let lo = if self.is_punct(":") {
            None
        } else {
            Some(self.expr()?)
        };
        if self.eat_punct(":") {
            let hi = if self.is_punct(",") || self.is_punct("]") {
                None
            } else {
                Some(self.expr()?)
            };
            return Ok(IndexItem::Slice(lo, hi));
        }
        match lo {
            Some(e) => Ok(IndexItem::Expr(e)),
            None => Err(syntax(self.span(), "expected an index", "here")),
        }
    }

    fn primary(&mut self) -> R<Expr> {
        let t = self.peek().clone();
        let sp = self.span();
        match t {
            Tok::Int(v) => {
                self.bump();
                Ok(Expr::new(ExprKind::Int(v), sp))
            }
            Tok::Float(v) => {
                self.bump();
                Ok(Expr::new(ExprKind::Float(v), sp))
            }
            Tok::Str(s) => {
                self.bump();
                Ok(Expr::new(ExprKind::Str(s), sp))
            }
            Tok::Ident(s) if s == "true" || s == "false" => {
                self.bump();
                Ok(Expr::new(ExprKind::Bool(s == "true"), sp))
            }
            Tok::Ident(s) if !KEYWORDS.contains(&s.as_str()) => {
                self.bump();
                Ok(Expr::new(ExprKind::Name(s), sp))
            }
            Tok::Punct("(") => {
                self.bump();
                let e = self.expr()?;
                self.expect_punct(")")?;
                Ok(e)
            }
            Tok::Punct("[") => {
                self.bump();
                let mut items = Vec::new();
                if !self.is_punct("]") {
                    loop {
                        items.push(self.expr()?);
                        if !self.eat_punct(",") {
                            break;
                        }
                    }
                }
                self.expect_punct("]")?;
                Ok(Expr::new(ExprKind::List(items), sp.to(self.prev_span())))
            }
            other => Err(syntax(
                sp,
                format!("expected an expression, found {}", other.describe()),
                "expected an expression",
            )),
        }
    }
}

fn trim_leading_blank(v: &mut Vec<String>) {
    while v.first().is_some_and(|s| s.is_empty()) {
        v.remove(0);
    }
}
fn trim_trailing_blank(v: &mut Vec<String>) {
    while v.last().is_some_and(|s| s.is_empty()) {
        v.pop();
    }
}
fn trim_blank(v: &mut Vec<String>) {
    trim_leading_blank(v);
    trim_trailing_blank(v);
}

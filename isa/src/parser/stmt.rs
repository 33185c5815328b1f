//! Blocks and statements: `let`, assignments, `for`/`static_for`, `if`, `while`,
//! `warp_specialize` and its partitions, `static_assert`, and the launch section.

use super::*;

impl Parser {
    // ---- blocks and statements ----------------------------------------------------------

    /// `{ ... }` including both braces. The newline after `{` is consumed; the one after `}`
    /// is left to the caller.
    ///
    /// The functions on the recursive path (`block`, `block_body`, `stmt_into`, `stmt_kind`
    /// and the compound statements) keep their frames small, so that [`MAX_DEPTH`] nested
    /// blocks fit in a 2 MiB stack even in an unoptimised build: diagnostics are built in
    /// separate functions.
    pub(super) fn block(&mut self) -> PResult<Block> {
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
    pub(super) fn block_body(
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
        // The comments already taken (`initial`) stand before the first statement.
        let mut first = at_start && b.end_comments.is_empty();
        loop {
            let c = self.item_comments(&mut first)?;
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
    pub(super) fn stmt_into(&mut self, comments: Vec<String>, out: &mut Vec<Stmt>) {
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
        out.push(Stmt::new(comments, kind, span));
    }

    pub(super) fn stmt_kind(&mut self) -> PResult<StmtKind> {
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
    pub(super) fn tuple_assign(&mut self) -> PResult<StmtKind> {
        let names = self.tuple_names()?;
        self.expect_punct("=")?;
        let value = self.rhs()?;
        Ok(StmtKind::Assign { names, value })
    }

    #[inline(never)]
    pub(super) fn let_stmt(&mut self) -> PResult<StmtKind> {
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
    pub(super) fn static_assert(&mut self) -> PResult<StmtKind> {
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
    pub(super) fn assign_or_op(&mut self) -> PResult<StmtKind> {
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
    pub(super) fn unclosed(&mut self, open: Span) -> Failed {
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
    pub(super) fn not_a_statement(&mut self) -> Failed {
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
    pub(super) fn misplaced_keyword(&mut self) -> Failed {
        let sp = self.span();
        let word = match self.peek() {
            Tok::Ident(s) => s.clone(),
            _ => String::new(),
        };
        let d = match word.as_str() {
            "else" => Diagnostic::error(Code::Syntax, "`else` without `if`", sp, "not after an `if` block")
                .with_help("write `} else {` on the line that closes the `if` block"),
            "launch" => Diagnostic::error(Code::Syntax, "`launch` inside a block", sp, "misplaced `launch`")
                .with_help("`launch { ... }` goes at the end of the kernel body, outside every block"),
            "default" | "worker" => Diagnostic::error(
                Code::Syntax,
                format!("`{word}` outside `warp_specialize`"),
                sp,
                "misplaced",
            )
            .with_help("partitions are written inside `warp_specialize { ... }`"),
            "kernel" => Diagnostic::error(Code::Syntax, "nested `kernel`", sp, "one kernel per file"),
            _ => Diagnostic::error(
                Code::Syntax,
                format!("`{word}` declaration among statements"),
                sp,
                "declarations go in the kernel header",
            )
            .with_help("move it above the first statement of the kernel"),
        };
        self.report(d)
    }

    pub(super) fn tuple_names(&mut self) -> PResult<Vec<Ident>> {
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

    pub(super) fn for_stmt(&mut self, unrolled: bool) -> PResult<StmtKind> {
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
        Ok(StmtKind::For(ForLoop {
            var,
            start,
            end,
            step,
            body,
            unrolled,
        }))
    }

    pub(super) fn if_stmt(&mut self) -> PResult<StmtKind> {
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
                    stmts: vec![Stmt::new(Vec::new(), kind, span)],
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

    pub(super) fn while_stmt(&mut self) -> PResult<StmtKind> {
        self.expect_kw("while")?;
        let cond = self.expr()?;
        let body = self.block()?;
        Ok(StmtKind::While { cond, body })
    }

    pub(super) fn warp_specialize(&mut self) -> PResult<StmtKind> {
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

    pub(super) fn partitions(&mut self, kw: Span, open: Span) -> PResult<StmtKind> {
        let mut default: Option<DefaultPartition> = None;
        let mut workers: Vec<Worker> = Vec::new();
        let mut first = true;
        loop {
            let comments = self.item_comments(&mut first)?;
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
                                    Code::Syntax,
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
                Err(self.syntax_error(
                    "`warp_specialize` without a default partition",
                    sp,
                    "no `default { }`",
                    "add `default { ... }`: the warps of `num_warps` run it",
                ))
            }
        }
    }

    pub(super) fn default_partition(
        &mut self,
        comments: Vec<String>,
        start: Span,
    ) -> PResult<DefaultPartition> {
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

    pub(super) fn worker(&mut self, comments: Vec<String>, start: Span) -> PResult<Worker> {
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
                _ => return Err(self.unknown("worker setting", &key, "workers take `warps=W, regs=R`")),
            };
            if slot.is_some() {
                let d = Diagnostic::error(
                    Code::Syntax,
                    format!("`{}` given twice", key.name),
                    key.span,
                    "again",
                );
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
            return Err(self.syntax_error(
                format!("worker `{}` needs `warps` and `regs`", name.name),
                sp,
                "here",
                "write `worker NAME(warps=W, regs=R) { ... }`",
            ));
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

    pub(super) fn launch(&mut self, comments: Vec<String>) -> PResult<Launch> {
        let start = self.expect_kw("launch")?;
        let open = self.expect_punct("{")?;
        if matches!(self.peek(), Tok::Newline) {
            self.bump();
        }
        let mut items = Vec::new();
        let mut first = true;
        let end_comments = loop {
            let c = self.item_comments(&mut first)?;
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

    pub(super) fn launch_item(&mut self, comments: Vec<String>) -> PResult<LaunchItem> {
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
}

//! Operations (`tma.load a, b, key=v`, with "did you mean" for unknown names) and expressions
//! (precedence climbing, postfix indexing, calls, lists).

use super::*;

impl Parser {
    // ---- operations ---------------------------------------------------------------------

    /// Whether the tokens at the cursor name an operation. `stmt`: at the start of a
    /// statement (any dotted name is meant as an operation) rather than of a right-hand side
    /// (a dotted name is an operation only if an operand follows it without an operator).
    pub(super) fn op_start(&self, stmt: bool) -> OpStart {
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

    pub(super) fn unknown_op(&mut self, path: &str, ntoks: usize) -> Failed {
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
                    return self.syntax_error(
                        format!("unknown statement `{path}`"),
                        sp,
                        "not a statement",
                        format!("did you mean `{kw}`?"),
                    );
                }
            }
        }
        let mut d = Diagnostic::error(
            Code::UnknownOp,
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

    pub(super) fn op(&mut self, name: &'static str, ntoks: usize) -> PResult<Op> {
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
                            Code::Syntax,
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
            return Err(self.syntax_error(
                format!("expected `,` or end of line, found {found}"),
                sp,
                "expected `,`",
                format!("operands are separated by commas: `{sig}`"),
            ));
        }
        match OpKind::from_parts(name, pos, kw) {
            Ok(kind) => Ok(Op::new(kind, span)),
            Err(e) => {
                let d = match e {
                    OpShapeError::Arity { op, expected, found } => {
                        let n = expected.len();
                        let plural = if n == 1 { "" } else { "s" };
                        let msg = format!("`{op}` takes {n} positional operand{plural}, found {found}");
                        Diagnostic::error(Code::OpOperands, msg, span, "wrong number of operands")
                    }
                    OpShapeError::DuplicateKeyword { op, key } => Diagnostic::error(
                        Code::OpOperands,
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
                        Diagnostic::error(Code::OpOperands, msg, key.span, label)
                    }
                    OpShapeError::UnknownOp => Diagnostic::error(
                        Code::UnknownOp,
                        format!("unknown operation `{name}`"),
                        name_span,
                        "here",
                    ),
                };
                Err(self.report(d.with_help(format!("the signature is `{sig}`"))))
            }
        }
    }

    pub(super) fn rhs(&mut self) -> PResult<Rhs> {
        match self.op_start(false) {
            OpStart::Op(name, n) => Ok(Rhs::Op(self.op(name, n)?)),
            OpStart::Unknown(path, n) => Err(self.unknown_op(&path, n)),
            OpStart::None => Ok(Rhs::Expr(self.expr()?)),
        }
    }

    // ---- expressions --------------------------------------------------------------------

    pub(super) fn expr(&mut self) -> PResult<Expr> {
        Ok(self.expr_d()?.0)
    }

    /// An expression and the depth of its tree.
    pub(super) fn expr_d(&mut self) -> PResult<(Expr, usize)> {
        self.enter()?;
        let r = self.binary(1);
        self.leave();
        r
    }

    pub(super) fn too_deep(&mut self, span: Span) -> Failed {
        let d = Diagnostic::error(
            Code::Syntax,
            "expression nested too deep",
            span,
            format!("more than {MAX_DEPTH} levels"),
        )
        .with_help("split the expression with `let`");
        self.report(d);
        self.fatal = true;
        Failed
    }

    pub(super) fn binary(&mut self, min_prec: u8) -> PResult<(Expr, usize)> {
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
    pub(super) fn peek_binop(&self, min_prec: u8) -> Option<BinOp> {
        match self.peek() {
            Tok::Punct(p) => binop_of(p).filter(|op| op.precedence() >= min_prec),
            _ => None,
        }
    }

    pub(super) fn unary(&mut self) -> PResult<(Expr, usize)> {
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

    /// At `[`: comma-separated items up to the matching `]` (a trailing comma allowed), each
    /// read with its nesting depth by `item`; the items and the greatest of their depths.
    fn bracketed<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> PResult<(T, usize)>,
    ) -> PResult<(Vec<T>, usize)> {
        let open = self.bump().span;
        let mut items = Vec::new();
        let mut depth = 0;
        while !self.at_punct("]") {
            let (x, d) = item(self)?;
            depth = depth.max(d);
            items.push(x);
            if !self.eat_punct(",") {
                break;
            }
        }
        self.expect_close("]", open, true)?;
        Ok((items, depth))
    }

    pub(super) fn postfix(&mut self) -> PResult<(Expr, usize)> {
        let start = self.span();
        let (mut e, mut depth) = self.primary()?;
        loop {
            if self.at_punct("[") {
                let (items, d) = self.bracketed(Self::index_item)?;
                depth = 1 + depth.max(d);
                e = Expr::new(ExprKind::Index(Box::new(e), items), self.since(start));
            } else if self.at_punct(".") {
                self.bump();
                let f = self.ident("a field name")?;
                depth += 1;
                e = Expr::new(ExprKind::Field(Box::new(e), f.name), self.since(start));
            } else if self.at_punct("(") {
                let sp = self.span();
                let d = Diagnostic::error(Code::Syntax, "only names can be called", sp, "call of a non-name")
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

    pub(super) fn index_item(&mut self) -> PResult<(IndexItem, usize)> {
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

    pub(super) fn primary(&mut self) -> PResult<(Expr, usize)> {
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
                        let d = Diagnostic::error(Code::Syntax, "`None` outside an index", sp, "not a value")
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
                let (items, depth) = self.bracketed(Self::expr_d)?;
                Ok((Expr::new(ExprKind::List(items), self.since(sp)), depth + 1))
            }
            _ => Err(self.expected("an expression")),
        }
    }
}

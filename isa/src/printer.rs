//! The `.tile` printer: IR to canonical text (docs/tile-format.md).
//!
//! Canonical form: two-space indentation; header lines in the order target, num_warps,
//! consts, params, layouts; operations as `name pos, pos, key=value`; the fewest parentheses
//! that keep the tree (all binary operators left-associative). `parse(print(k)) == k`.

use crate::ir::*;
use std::fmt::Write;

/// Print a kernel.
pub fn print(k: &Kernel) -> String {
    let mut p = Printer { out: String::new() };
    p.kernel(k);
    p.out
}

/// Print one expression.
pub fn print_expr(e: &Expr) -> String {
    let mut s = String::new();
    expr(&mut s, e, 0);
    s
}

/// Print one operation as it appears in a statement (without `let`).
pub fn print_op(op: &Op) -> String {
    let mut s = String::new();
    op_text(&mut s, op);
    s
}

struct Printer {
    out: String,
}

impl Printer {
    fn line(&mut self, indent: usize, text: &str) {
        for _ in 0..indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }
    fn comments(&mut self, indent: usize, c: &[String]) {
        for l in c {
            if l.is_empty() {
                self.out.push('\n');
            } else {
                self.line(indent, l);
            }
        }
    }
    fn kernel(&mut self, k: &Kernel) {
        self.comments(0, &k.comments);
        self.line(0, &format!("kernel {} {{", k.name.name));
        let targets: Vec<&str> = k.targets.iter().map(|t| t.name()).collect();
        self.line(1, &format!("target {}", targets.join(", ")));
        self.line(1, &format!("num_warps {}", print_expr(&k.num_warps)));
        for c in &k.consts {
            self.comments(1, &c.comments);
            self.line(
                1,
                &format!(
                    "const {}: {} = {}",
                    c.name.name,
                    c.kind.name(),
                    print_expr(&c.value)
                ),
            );
        }
        for p in &k.params {
            self.comments(1, &p.comments);
            self.line(1, &format!("param {}: {}", p.name.name, print_expr(&p.ty)));
        }
        for l in &k.layouts {
            self.comments(1, &l.comments);
            self.line(1, &format!("layout {} = {}", l.name.name, print_expr(&l.value)));
        }
        self.block_body(1, &k.body);
        if let Some(l) = &k.launch {
            self.comments(1, &l.comments);
            self.line(1, "launch {");
            for it in &l.items {
                self.comments(2, &it.comments);
                match &it.kind {
                    LaunchItemKind::Tensor { name, ty, init } => self.line(
                        2,
                        &format!("tensor {}: {} = {}", name.name, print_expr(ty), print_expr(init)),
                    ),
                    LaunchItemKind::Set { name, value } => {
                        self.line(2, &format!("{} = {}", name.name, print_expr(value)))
                    }
                }
            }
            self.comments(2, &l.end_comments);
            self.line(1, "}");
        }
        self.line(0, "}");
        self.comments(0, &k.trailing_comments);
    }
    fn block_body(&mut self, indent: usize, b: &Block) {
        for s in &b.stmts {
            self.stmt(indent, s);
        }
        self.comments(indent, &b.end_comments);
    }
    fn names(n: &[Ident]) -> String {
        if n.len() == 1 {
            n[0].name.clone()
        } else {
            format!(
                "({})",
                n.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ")
            )
        }
    }
    fn rhs(r: &Rhs) -> String {
        match r {
            Rhs::Expr(e) => print_expr(e),
            Rhs::Op(o) => print_op(o),
        }
    }
    fn stmt(&mut self, indent: usize, s: &Stmt) {
        self.comments(indent, &s.comments);
        match &s.kind {
            StmtKind::Let { names, value } => self.line(
                indent,
                &format!("let {} = {}", Self::names(names), Self::rhs(value)),
            ),
            StmtKind::Assign { names, value } => {
                self.line(indent, &format!("{} = {}", Self::names(names), Self::rhs(value)))
            }
            StmtKind::Op(op) => self.line(indent, &print_op(op)),
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
                unrolled,
            } => {
                let kw = if *unrolled { "static_for" } else { "for" };
                let step = step
                    .as_ref()
                    .map(|s| format!(" step {}", print_expr(s)))
                    .unwrap_or_default();
                self.line(
                    indent,
                    &format!(
                        "{kw} {} in {}..{}{step} {{",
                        var.name,
                        print_expr(start),
                        print_expr(end)
                    ),
                );
                self.block_body(indent + 1, body);
                self.line(indent, "}");
            }
            StmtKind::If { .. } => self.if_chain(indent, s, ""),
            StmtKind::WarpSpecialize { default, workers } => {
                self.line(indent, "warp_specialize {");
                self.comments(indent + 1, &default.comments);
                match &default.regs {
                    Some(r) => self.line(indent + 1, &format!("default(regs={}) {{", print_expr(r))),
                    None => self.line(indent + 1, "default {"),
                }
                self.block_body(indent + 2, &default.body);
                self.line(indent + 1, "}");
                for w in workers {
                    self.comments(indent + 1, &w.comments);
                    self.line(
                        indent + 1,
                        &format!(
                            "worker {}(warps={}, regs={}) {{",
                            w.name.name,
                            print_expr(&w.warps),
                            print_expr(&w.regs)
                        ),
                    );
                    self.block_body(indent + 2, &w.body);
                    self.line(indent + 1, "}");
                }
                self.line(indent, "}");
            }
            StmtKind::StaticAssert { cond, message } => self.line(
                indent,
                &format!("static_assert {}, {}", print_expr(cond), quote(message)),
            ),
        }
    }
    /// `if ... { } else if ... { } else { }`: an else block that is exactly one uncommented `if`
    /// prints as `else if`.
    fn if_chain(&mut self, indent: usize, s: &Stmt, prefix: &str) {
        let StmtKind::If {
            cond,
            then_body,
            else_body,
        } = &s.kind
        else {
            return;
        };
        self.line(indent, &format!("{prefix}if {} {{", print_expr(cond)));
        self.block_body(indent + 1, then_body);
        match else_body {
            None => self.line(indent, "}"),
            Some(b) => {
                if b.stmts.len() == 1
                    && b.end_comments.is_empty()
                    && b.stmts[0].comments.is_empty()
                    && matches!(b.stmts[0].kind, StmtKind::If { .. })
                {
                    self.if_chain(indent, &b.stmts[0], "} else ");
                } else {
                    self.line(indent, "} else {");
                    self.block_body(indent + 1, b);
                    self.line(indent, "}");
                }
            }
        }
    }
}

fn quote(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn op_text(s: &mut String, op: &Op) {
    s.push_str(op.kind.name());
    let (pos, kw) = op.kind.to_parts();
    let mut first = true;
    for e in pos {
        s.push_str(if first { " " } else { ", " });
        first = false;
        expr(s, e, 0);
    }
    for (k, e) in kw {
        s.push_str(if first { " " } else { ", " });
        first = false;
        s.push_str(k);
        s.push('=');
        expr(s, e, 0);
    }
}

/// Print `e`; `min` is the precedence the context requires (0: anything goes).
fn expr(s: &mut String, e: &Expr, min: u8) {
    match &e.kind {
        ExprKind::Int(v) => {
            let _ = write!(s, "{v}");
        }
        ExprKind::Float(v) => {
            let _ = write!(s, "{v:?}");
        }
        ExprKind::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
        ExprKind::Str(t) => s.push_str(&quote(t)),
        ExprKind::Name(n) => s.push_str(n),
        ExprKind::Unary(op, a) => {
            let paren = min > 10;
            if paren {
                s.push('(');
            }
            s.push(if *op == UnOp::Neg { '-' } else { '!' });
            let inner_paren = matches!(a.kind, ExprKind::Unary(..) | ExprKind::Binary(..));
            if inner_paren {
                s.push('(');
                expr(s, a, 0);
                s.push(')');
            } else {
                expr(s, a, 11);
            }
            if paren {
                s.push(')');
            }
        }
        ExprKind::Binary(op, a, b) => {
            let p = op.precedence();
            let paren = p < min;
            if paren {
                s.push('(');
            }
            expr(s, a, p);
            let _ = write!(s, " {} ", op.symbol());
            expr(s, b, p + 1);
            if paren {
                s.push(')');
            }
        }
        ExprKind::Call(f, args) => {
            s.push_str(f);
            s.push('(');
            for (i, a) in args.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                if let Some(k) = &a.key {
                    s.push_str(&k.name);
                    s.push('=');
                }
                expr(s, &a.value, 0);
            }
            s.push(')');
        }
        ExprKind::Index(base, items) => {
            postfix_base(s, base);
            s.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                match it {
                    IndexItem::Expr(e) => expr(s, e, 0),
                    IndexItem::NewAxis => s.push_str("None"),
                    IndexItem::Slice(a, b) => {
                        if let Some(a) = a {
                            expr(s, a, 0);
                        }
                        s.push(':');
                        if let Some(b) = b {
                            expr(s, b, 0);
                        }
                    }
                }
            }
            s.push(']');
        }
        ExprKind::Field(base, f) => {
            postfix_base(s, base);
            s.push('.');
            s.push_str(f);
        }
        ExprKind::List(items) => {
            s.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                expr(s, it, 0);
            }
            s.push(']');
        }
    }
}

fn postfix_base(s: &mut String, base: &Expr) {
    if matches!(base.kind, ExprKind::Unary(..) | ExprKind::Binary(..)) {
        s.push('(');
        expr(s, base, 0);
        s.push(')');
    } else {
        expr(s, base, 0);
    }
}

//! The `.tile` printer: [`Kernel`] to canonical text.
//!
//! This module owns the canonical layout of a `.tile` file: two-space indentation, the header
//! in the order `target`, `num_warps`, constants, parameters, layouts, comments verbatim on
//! their own lines (`""` as an empty line), operations as `name pos, pos, key=value`, floats
//! as Rust's `{:?}` prints them and the fewest parentheses that keep the tree: operators are
//! left-associative, so a right operand of the same precedence is parenthesised; the operand
//! of a unary operator and the base of `x[...]`/`x.f` are parenthesised when they are unary
//! or binary expressions. [`crate::parser::parse`] is its inverse: `parse(print(k)) == k` for
//! every kernel the parser can produce.
//!
//! [`print_expr`] and [`print_op`] quote single expressions and operations (diagnostics,
//! traces).

use crate::ir::*;

/// Print a kernel in canonical form.
pub fn print(k: &Kernel) -> String {
    let mut p = Printer {
        out: String::new(),
        indent: 0,
    };
    p.kernel(k);
    p.out
}

/// A loop's header as written, without its body: `for i in 0..n step 2`, `static_for j in 0..4`.
pub fn for_header(lp: &ForLoop) -> String {
    let kw = if lp.unrolled { "static_for" } else { "for" };
    let step = (lp.step.as_ref())
        .map(|e| format!(" step {}", print_expr(e)))
        .unwrap_or_default();
    format!(
        "{kw} {} in {}..{}{step}",
        lp.var.name,
        print_expr(&lp.start),
        print_expr(&lp.end)
    )
}

/// Print one expression.
pub fn print_expr(e: &Expr) -> String {
    let mut s = String::new();
    expr(&mut s, e);
    s
}

/// Print one operation, as it would appear as a statement.
pub fn print_op(op: &Op) -> String {
    print_op_kind(&op.kind)
}

/// Print one operation kind, as it would appear as a statement.
pub fn print_op_kind(kind: &OpKind) -> String {
    let mut s = String::new();
    op(&mut s, kind);
    s
}

struct Printer {
    out: String,
    indent: usize,
}

impl Printer {
    fn line(&mut self, text: &str) {
        if !text.is_empty() {
            for _ in 0..self.indent {
                self.out.push_str("  ");
            }
            self.out.push_str(text);
        }
        self.out.push('\n');
    }

    fn comments(&mut self, cs: &[String]) {
        for c in cs {
            self.line(c);
        }
    }

    fn kernel(&mut self, k: &Kernel) {
        self.comments(&k.comments);
        self.line(&format!("kernel {} {{", k.name.name));
        self.indent += 1;
        let targets: Vec<&str> = k.targets.iter().map(|t| t.name()).collect();
        self.line(&format!("target {}", targets.join(", ")));
        self.line(&format!("num_warps {}", print_expr(&k.num_warps)));
        for c in &k.consts {
            self.comments(&c.comments);
            self.line(&format!(
                "const {}: {} = {}",
                c.name.name,
                c.kind.name(),
                print_expr(&c.value)
            ));
        }
        for p in &k.params {
            self.comments(&p.comments);
            self.line(&format!("param {}: {}", p.name.name, print_expr(&p.ty)));
        }
        for l in &k.layouts {
            self.comments(&l.comments);
            self.line(&format!("layout {} = {}", l.name.name, print_expr(&l.value)));
        }
        self.block_contents(&k.body);
        if let Some(l) = &k.launch {
            self.comments(&l.comments);
            self.line("launch {");
            self.indent += 1;
            for item in &l.items {
                self.comments(&item.comments);
                match &item.kind {
                    LaunchItemKind::Tensor { name, ty, init } => self.line(&format!(
                        "tensor {}: {} = {}",
                        name.name,
                        print_expr(ty),
                        print_expr(init)
                    )),
                    LaunchItemKind::Set { name, value } => {
                        self.line(&format!("{} = {}", name.name, print_expr(value)))
                    }
                    LaunchItemKind::Limit { name, value } => {
                        self.line(&format!("limit {} = {}", name.name, print_expr(value)))
                    }
                }
            }
            self.comments(&l.end_comments);
            self.indent -= 1;
            self.line("}");
        }
        self.indent -= 1;
        self.line("}");
        self.comments(&k.trailing_comments);
    }

    /// The statements and end comments of a block, at the current indentation.
    fn block_contents(&mut self, b: &Block) {
        for s in &b.stmts {
            self.stmt(s);
        }
        self.comments(&b.end_comments);
    }

    /// `{`, already written by the caller, then the block indented and `}` with `tail`.
    fn block(&mut self, b: &Block, tail: &str) {
        self.indent += 1;
        self.block_contents(b);
        self.indent -= 1;
        self.line(&format!("}}{tail}"));
    }

    fn stmt(&mut self, s: &Stmt) {
        self.comments(&s.comments);
        match &s.kind {
            StmtKind::Let { names, value } => {
                self.line(&format!("let {} = {}", names_text(names), rhs(value)))
            }
            StmtKind::Assign { names, value } => {
                self.line(&format!("{} = {}", names_text(names), rhs(value)))
            }
            StmtKind::Op(o) => self.line(&print_op(o)),
            StmtKind::For(lp) => {
                self.line(&format!("{} {{", for_header(lp)));
                self.block(&lp.body, "");
            }
            StmtKind::While { cond, body } => {
                self.line(&format!("while {} {{", print_expr(cond)));
                self.block(body, "");
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                self.line(&format!("if {} {{", print_expr(cond)));
                self.if_tail(then_body, else_body.as_ref());
            }
            StmtKind::WarpSpecialize { default, workers } => {
                self.line("warp_specialize {");
                self.indent += 1;
                self.comments(&default.comments);
                match &default.regs {
                    Some(r) => self.line(&format!("default(regs={}) {{", print_expr(r))),
                    None => self.line("default {"),
                }
                self.block(&default.body, "");
                for w in workers {
                    self.comments(&w.comments);
                    self.line(&format!(
                        "worker {}(warps={}, regs={}) {{",
                        w.name.name,
                        print_expr(&w.warps),
                        print_expr(&w.regs)
                    ));
                    self.block(&w.body, "");
                }
                self.indent -= 1;
                self.line("}");
            }
            StmtKind::StaticAssert { cond, message } => {
                self.line(&format!("static_assert {}, {}", print_expr(cond), quote(message)))
            }
        }
    }

    /// The then-block of an `if` (its header already written) and its `else` chain.
    fn if_tail(&mut self, then_body: &Block, else_body: Option<&Block>) {
        self.indent += 1;
        self.block_contents(then_body);
        self.indent -= 1;
        let Some(e) = else_body else {
            self.line("}");
            return;
        };
        if let [Stmt {
            comments,
            kind:
                StmtKind::If {
                    cond,
                    then_body,
                    else_body,
                },
            ..
        }] = e.stmts.as_slice()
        {
            if comments.is_empty() && e.end_comments.is_empty() {
                self.line(&format!("}} else if {} {{", print_expr(cond)));
                self.if_tail(then_body, else_body.as_ref());
                return;
            }
        }
        self.line("} else {");
        self.block(e, "");
    }
}

fn names_text(names: &[Ident]) -> String {
    if names.len() == 1 {
        names[0].name.clone()
    } else {
        let v: Vec<&str> = names.iter().map(|n| n.name.as_str()).collect();
        format!("({})", v.join(", "))
    }
}

/// A right-hand side. An expression that would read as an operation (it starts with an
/// operation's name, as `smem.load + 1` would) is wrapped in parentheses.
fn rhs(r: &Rhs) -> String {
    match r {
        Rhs::Op(o) => print_op(o),
        Rhs::Expr(e) => {
            let s = print_expr(e);
            if starts_like_op(e) {
                format!("({s})")
            } else {
                s
            }
        }
    }
}

/// Whether the printed expression begins with a name or dotted name that the parser would
/// take for an operation at the start of a right-hand side.
fn starts_like_op(e: &Expr) -> bool {
    // Walk down the left spine to the first name, collecting `.field`s on the way up.
    let mut fields: Vec<&str> = Vec::new();
    let mut cur = e;
    let first = loop {
        match &cur.kind {
            ExprKind::Binary(_, a, _) => {
                fields.clear();
                cur = a;
            }
            ExprKind::Index(b, _) => {
                fields.clear();
                cur = b;
            }
            ExprKind::Field(b, f) => {
                fields.push(f);
                cur = b;
            }
            ExprKind::Name(n) | ExprKind::Call(n, _) => break n.as_str(),
            _ => return false,
        }
    };
    let mut path = first.to_string();
    if OpKind::NAMES.contains(&path.as_str()) {
        return true;
    }
    for f in fields.iter().rev() {
        path.push('.');
        path.push_str(f);
        if OpKind::NAMES.contains(&path.as_str()) {
            return true;
        }
    }
    false
}

fn op(s: &mut String, kind: &OpKind) {
    s.push_str(kind.name());
    let (pos, kw) = kind.to_parts();
    let mut first = true;
    for e in pos {
        s.push_str(if first { " " } else { ", " });
        first = false;
        expr(s, e);
    }
    for (k, e) in kw {
        s.push_str(if first { " " } else { ", " });
        first = false;
        s.push_str(k);
        s.push('=');
        expr(s, e);
    }
}

/// A string literal with `"`, `\` and control characters escaped.
pub fn quote(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('"');
    for c in text.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

fn is_operator(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Unary(..) | ExprKind::Binary(..))
}

fn paren(s: &mut String, e: &Expr, wrap: bool) {
    if wrap {
        s.push('(');
        expr(s, e);
        s.push(')');
    } else {
        expr(s, e);
    }
}

fn expr(s: &mut String, e: &Expr) {
    match &e.kind {
        ExprKind::Int(v) => s.push_str(&v.to_string()),
        ExprKind::Float(v) => s.push_str(&format!("{v:?}")),
        ExprKind::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
        ExprKind::Str(t) => s.push_str(&quote(t)),
        ExprKind::Name(n) => s.push_str(n),
        ExprKind::Unary(op, a) => {
            s.push(match op {
                UnOp::Neg => '-',
                UnOp::Not => '!',
            });
            paren(s, a, is_operator(a));
        }
        ExprKind::Binary(op, a, b) => {
            let p = op.precedence();
            let left_wrap = matches!(&a.kind, ExprKind::Binary(o, ..) if o.precedence() < p);
            let right_wrap = matches!(&b.kind, ExprKind::Binary(o, ..) if o.precedence() <= p);
            paren(s, a, left_wrap);
            s.push(' ');
            s.push_str(op.symbol());
            s.push(' ');
            paren(s, b, right_wrap);
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
                expr(s, &a.value);
            }
            s.push(')');
        }
        ExprKind::Index(b, items) => {
            paren(s, b, is_operator(b));
            s.push('[');
            for (i, it) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                match it {
                    IndexItem::Expr(x) => expr(s, x),
                    IndexItem::NewAxis => s.push_str("None"),
                    IndexItem::Slice(a, b) => {
                        if let Some(a) = a {
                            expr(s, a);
                        }
                        s.push(':');
                        if let Some(b) = b {
                            expr(s, b);
                        }
                    }
                }
            }
            s.push(']');
        }
        ExprKind::Field(b, f) => {
            paren(s, b, is_operator(b));
            s.push('.');
            s.push_str(f);
        }
        ExprKind::List(items) => {
            s.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                expr(s, x);
            }
            s.push(']');
        }
    }
}

//! `parse(print(k)) == k` and `print(parse(print(k))) == print(k)` for random kernels.
//!
//! The generator covers the whole IR: header declarations, nested blocks (depth 3) with every
//! statement kind, every operation (built with `OpKind::from_parts`, correct arity, random
//! keyword operands), every expression form (calls with keyword arguments, indexing with
//! slices and `None`, fields, lists, all binary and unary operators), launch sections,
//! comments and blank lines. Names come from a pool without keywords; operation names and
//! operation prefixes (`tma`, `bar`, `wgmma`) appear only as expression names, where the
//! printer must keep them from reading as operations. The comment rules of the format (no
//! blank line right after `{` or right before `}`, runs of blank lines kept as one) are
//! applied by `normalize` before printing.

use bwsim_isa::ir::*;
use bwsim_isa::span::Span;
use bwsim_isa::{diag, parser, printer, SourceFile, Target};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

/// Names that can be bound (no keywords, no operation names).
const BIND: &[&str] = &[
    "a",
    "b",
    "x",
    "acc",
    "buf",
    "bars",
    "i",
    "j",
    "k_total",
    "BLOCK",
    "NUM_WARPS",
    "a_desc",
    "tm",
    "row",
    "_t0",
    "phase",
    "idx2",
    "Store_IDX",
    "q9",
];
/// Names that only appear in expressions: prefixes of operation names and `wgmma` itself.
const EXPR_ONLY: &[&str] = &[
    "tma", "bar", "smem", "wgmma", "mbar", "fence", "tcgen05", "f16", "sm_100a",
];
const FIELDS: &[&str] = &[
    "nbytes",
    "shape",
    "block",
    "load",
    "sync",
    "wait",
    "store_wait",
    "x",
];
const CALLS: &[&str] = &[
    "cdiv",
    "min",
    "max",
    "program_id",
    "blocked",
    "nvmma",
    "tensor_desc",
    "full",
    "wgmma",
    "f",
];
const KEYS: &[&str] = &["layout", "transposed", "oob", "warps", "n", "regs", "x"];

fn mk(kind: ExprKind) -> Expr {
    Expr::new(kind, Span::DUMMY)
}

fn pick(pool: &'static [&'static str]) -> impl Strategy<Value = String> {
    proptest::sample::select(pool).prop_map(str::to_string)
}

fn bind_name() -> impl Strategy<Value = String> {
    pick(BIND)
}

fn ident() -> impl Strategy<Value = Ident> {
    bind_name().prop_map(Ident::new)
}

fn expr_name() -> impl Strategy<Value = String> {
    prop_oneof![4 => pick(BIND), 1 => pick(EXPR_ONLY)]
}

fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(1.0),
        Just(0.5),
        Just(1e16),
        Just(1.5e-7),
        Just(f64::MAX),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        any::<f64>().prop_filter_map("finite", |v| v.is_finite().then_some(v.abs())),
    ]
}

fn text() -> impl Strategy<Value = String> {
    // Printable text with the characters strings must escape, and some non-ASCII.
    vec(
        prop_oneof![8 => proptest::char::range(' ', '~'), 1 => Just('"'), 1 => Just('\\'),
        1 => Just('\n'), 1 => Just('\t'), 1 => Just('\r'), 1 => Just('é'), 1 => Just('→')],
        0..12,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        3 => (0i64..300).prop_map(|v| mk(ExprKind::Int(v))),
        1 => (0i64..=i64::MAX).prop_map(|v| mk(ExprKind::Int(v))),
        1 => float().prop_map(|v| mk(ExprKind::Float(v))),
        1 => any::<bool>().prop_map(|b| mk(ExprKind::Bool(b))),
        1 => text().prop_map(|s| mk(ExprKind::Str(s))),
        4 => expr_name().prop_map(|n| mk(ExprKind::Name(n))),
    ]
}

fn index_item(inner: impl Strategy<Value = Expr> + Clone) -> impl Strategy<Value = IndexItem> {
    prop_oneof![
        3 => inner.clone().prop_map(IndexItem::Expr),
        2 => (option::of(inner.clone()), option::of(inner)).prop_map(|(a, b)| IndexItem::Slice(a, b)),
        1 => Just(IndexItem::NewAxis),
    ]
}

fn expr_of_depth(depth: u32) -> impl Strategy<Value = Expr> + Clone {
    leaf().prop_recursive(depth, 24, 4, |inner| {
        prop_oneof![
            1 => (prop_oneof![Just(UnOp::Neg), Just(UnOp::Not)], inner.clone())
                .prop_map(|(op, e)| mk(ExprKind::Unary(op, Box::new(e)))),
            3 => (proptest::sample::select(&BinOp::ALL[..]), inner.clone(), inner.clone())
                .prop_map(|(op, a, b)| mk(ExprKind::Binary(op, Box::new(a), Box::new(b)))),
            1 => (pick(CALLS), vec((option::of(pick(KEYS)), inner.clone()), 0..4)).prop_map(|(f, args)| {
                let args = args.into_iter().map(|(k, value)| Arg { key: k.map(Ident::new), value }).collect();
                mk(ExprKind::Call(f, args))
            }),
            1 => (inner.clone(), vec(index_item(inner.clone()), 0..4))
                .prop_map(|(b, items)| mk(ExprKind::Index(Box::new(b), items))),
            1 => (inner.clone(), pick(FIELDS)).prop_map(|(b, f)| mk(ExprKind::Field(Box::new(b), f))),
            1 => vec(inner, 0..4).prop_map(|v| mk(ExprKind::List(v))),
        ]
    })
}

fn expr() -> impl Strategy<Value = Expr> + Clone {
    expr_of_depth(4)
}

fn small_expr() -> impl Strategy<Value = Expr> + Clone {
    expr_of_depth(2)
}

fn op_kind() -> impl Strategy<Value = OpKind> {
    (
        0..OpKind::NAMES.len(),
        vec(small_expr(), 5),
        vec(option::of(small_expr()), 4),
    )
        .prop_map(|(i, pos, kws)| {
            let name = OpKind::NAMES[i];
            let (p, k) = OpKind::signature(name).expect("every name has a signature");
            let pos: Vec<Expr> = pos.into_iter().take(p.len()).collect();
            let kw: Vec<(Ident, Expr)> = k
                .iter()
                .zip(kws)
                .filter_map(|(k, v)| v.map(|v| (Ident::new(*k), v)))
                .collect();
            OpKind::from_parts(name, pos, kw).expect("generated operands fit the signature")
        })
}

fn op() -> impl Strategy<Value = Op> {
    op_kind().prop_map(|kind| Op::new(kind, Span::DUMMY))
}

fn rhs() -> impl Strategy<Value = Rhs> {
    prop_oneof![expr().prop_map(Rhs::Expr), op().prop_map(Rhs::Op)]
}

fn comment_line() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[ -~]{0,24}".prop_map(|s| format!("//{s}").trim_end().to_string()),
        1 => "[a-z →é]{0,10}".prop_map(|s| format!("// {s}").trim_end().to_string()),
        2 => Just(String::new()),
    ]
}

fn comments() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![2 => Just(Vec::new()), 1 => vec(comment_line(), 0..4)]
}

fn stmt(depth: u32) -> BoxedStrategy<Stmt> {
    let simple = prop_oneof![
        3 => (vec(ident(), 1..3), rhs()).prop_map(|(names, value)| StmtKind::Let { names, value }),
        2 => (vec(ident(), 1..3), rhs()).prop_map(|(names, value)| StmtKind::Assign { names, value }),
        3 => op().prop_map(StmtKind::Op),
        1 => (expr(), text()).prop_map(|(cond, message)| StmtKind::StaticAssert { cond, message }),
    ];
    let kind: BoxedStrategy<StmtKind> = if depth == 0 {
        simple.boxed()
    } else {
        let b = || block(depth - 1);
        prop_oneof![
            4 => simple,
            1 => (ident(), small_expr(), small_expr(), option::of(small_expr()), b(), any::<bool>())
                .prop_map(|(var, start, end, step, body, unrolled)| {
                    StmtKind::For(ForLoop { var, start, end, step, body, unrolled })
                }),
            1 => (small_expr(), b(), option::of(b()))
                .prop_map(|(cond, then_body, else_body)| StmtKind::If { cond, then_body, else_body }),
            1 => (small_expr(), b()).prop_map(|(cond, body)| StmtKind::While { cond, body }),
            // `else if` chains: an else block holding exactly one `if`.
            1 => (small_expr(), b(), small_expr(), b(), option::of(b())).prop_map(|(c1, t1, c2, t2, e2)| {
                let inner = Stmt::new(
                    Vec::new(),
                    StmtKind::If { cond: c2, then_body: t2, else_body: e2 },
                    Span::DUMMY,
                );
                StmtKind::If {
                    cond: c1,
                    then_body: t1,
                    else_body: Some(Block { stmts: vec![inner], end_comments: Vec::new() }),
                }
            }),
            1 => (
                (comments(), option::of(small_expr()), b()),
                vec((comments(), bind_name(), small_expr(), small_expr(), b()), 0..3),
            )
                .prop_map(|((dc, regs, dbody), ws)| StmtKind::WarpSpecialize {
                    default: DefaultPartition { comments: dc, regs, body: dbody, span: Span::DUMMY },
                    workers: ws
                        .into_iter()
                        .map(|(comments, name, warps, regs, body)| Worker {
                            comments,
                            name: Ident::new(name),
                            warps,
                            regs,
                            body,
                            span: Span::DUMMY,
                        })
                        .collect(),
                }),
        ]
        .boxed()
    };
    (comments(), kind)
        .prop_map(|(comments, kind)| Stmt::new(comments, kind, Span::DUMMY))
        .boxed()
}

fn block(depth: u32) -> BoxedStrategy<Block> {
    (vec(stmt(depth), 0..4), comments())
        .prop_map(|(stmts, end_comments)| Block { stmts, end_comments })
        .boxed()
}

fn launch() -> impl Strategy<Value = Launch> {
    let item = prop_oneof![
        (ident(), expr(), expr()).prop_map(|(name, ty, init)| LaunchItemKind::Tensor { name, ty, init }),
        (ident(), expr()).prop_map(|(name, value)| LaunchItemKind::Set { name, value }),
        (ident(), expr()).prop_map(|(name, value)| LaunchItemKind::Limit { name, value }),
    ];
    (comments(), vec((comments(), item), 0..4), comments()).prop_map(|(comments, items, end_comments)| {
        Launch {
            comments,
            items: items
                .into_iter()
                .map(|(comments, kind)| LaunchItem {
                    comments,
                    kind,
                    span: Span::DUMMY,
                })
                .collect(),
            end_comments,
            span: Span::DUMMY,
        }
    })
}

fn const_kind() -> impl Strategy<Value = ConstKind> {
    prop_oneof![
        Just(ConstKind::Int),
        Just(ConstKind::Bool),
        Just(ConstKind::DType)
    ]
}

fn kernel() -> impl Strategy<Value = Kernel> {
    let header = (
        comments(),
        bind_name(),
        vec(prop_oneof![Just(Target::Sm100a), Just(Target::Sm90a)], 1..3),
        small_expr(),
        vec((comments(), ident(), const_kind(), expr()), 0..3),
        vec((comments(), ident(), expr()), 0..3),
        vec((comments(), ident(), expr()), 0..3),
    );
    (header, block(3), option::of(launch()), comments()).prop_map(
        |((comments, name, targets, num_warps, consts, params, layouts), body, launch, trailing_comments)| {
            let mut k = Kernel {
                comments,
                name: Ident::new(name),
                targets,
                num_warps,
                consts: consts
                    .into_iter()
                    .map(|(comments, name, kind, value)| ConstDecl {
                        comments,
                        name,
                        kind,
                        value,
                        span: Span::DUMMY,
                    })
                    .collect(),
                params: params
                    .into_iter()
                    .map(|(comments, name, ty)| Param {
                        comments,
                        name,
                        ty,
                        span: Span::DUMMY,
                    })
                    .collect(),
                layouts: layouts
                    .into_iter()
                    .map(|(comments, name, value)| LayoutDecl {
                        comments,
                        name,
                        value,
                        span: Span::DUMMY,
                    })
                    .collect(),
                body,
                launch,
                trailing_comments,
                span: Span::DUMMY,
            };
            normalize(&mut k);
            k
        },
    )
}

// ---- the comment rules of the format -----------------------------------------------------------

/// Collapse runs of blank lines; drop leading / trailing blank lines where the format does.
fn norm(v: &mut Vec<String>, strip_leading: bool, strip_trailing: bool) {
    let mut out: Vec<String> = Vec::new();
    for c in v.drain(..) {
        if c.is_empty() && (out.last().is_some_and(|l| l.is_empty()) || (strip_leading && out.is_empty())) {
            continue;
        }
        out.push(c);
    }
    if strip_trailing {
        while out.last().is_some_and(|l| l.is_empty()) {
            out.pop();
        }
    }
    *v = out;
}

/// `nested`: a `{ }` block whose first line follows its `{` (every block but the kernel body,
/// which follows the header lines).
fn normalize_block(b: &mut Block, nested: bool) {
    for (i, s) in b.stmts.iter_mut().enumerate() {
        norm(&mut s.comments, nested && i == 0, false);
        if let StmtKind::WarpSpecialize { default, workers } = &mut s.kind {
            norm(&mut default.comments, true, false);
            for w in workers {
                norm(&mut w.comments, false, false);
            }
        }
        for inner in s.blocks_mut() {
            normalize_block(inner, true);
        }
    }
    let empty = b.stmts.is_empty();
    norm(&mut b.end_comments, nested && empty, true);
}

fn normalize(k: &mut Kernel) {
    norm(&mut k.comments, true, false);
    for c in &mut k.consts {
        norm(&mut c.comments, false, false);
    }
    for p in &mut k.params {
        norm(&mut p.comments, false, false);
    }
    for l in &mut k.layouts {
        norm(&mut l.comments, false, false);
    }
    normalize_block(&mut k.body, false);
    if let Some(l) = &mut k.launch {
        // With a launch section, comments before it belong to it: the body has no end comments.
        k.body.end_comments.clear();
        norm(&mut l.comments, false, false);
        for (i, it) in l.items.iter_mut().enumerate() {
            norm(&mut it.comments, i == 0, false);
        }
        let empty = l.items.is_empty();
        norm(&mut l.end_comments, empty, true);
    }
    norm(&mut k.trailing_comments, false, true);
}

fn check(k: &Kernel) -> Result<(), TestCaseError> {
    let text = printer::print(k);
    let parsed = match parser::parse(&text) {
        Ok(p) => p,
        Err(d) => {
            let rendered = diag::render(&d, &SourceFile::new("printed.tile", text.clone()));
            return Err(TestCaseError::fail(format!(
                "printed kernel does not parse:\n{rendered}\n{text}"
            )));
        }
    };
    prop_assert_eq!(&parsed, k, "parse(print(k)) != k; printed:\n{}", text);
    prop_assert_eq!(printer::print(&parsed), text);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(256) })]

    #[test]
    fn round_trip_holds_for_256_generated_kernels(k in kernel()) {
        check(&k)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(512) })]

    /// Expressions alone, deeper, through a `let` and through an operation operand.
    #[test]
    fn round_trip_holds_for_512_generated_expressions(e in expr_of_depth(6)) {
        let kind = StmtKind::Let { names: vec![Ident::new("x")], value: Rhs::Expr(e.clone()) };
        let mut k = kernel_with(vec![Stmt::new(vec![], kind, Span::DUMMY)]);
        check(&k)?;
        let op = Op::new(OpKind::WgmmaWait { pendings: e }, Span::DUMMY);
        k.body.stmts[0].kind = StmtKind::Op(op);
        check(&k)?;
    }
}

fn kernel_with(stmts: Vec<Stmt>) -> Kernel {
    Kernel {
        comments: vec![],
        name: Ident::new("k"),
        targets: vec![Target::Sm100a],
        num_warps: Expr::int(4),
        consts: vec![],
        params: vec![],
        layouts: vec![],
        body: Block {
            stmts,
            end_comments: vec![],
        },
        launch: None,
        trailing_comments: vec![],
        span: Span::DUMMY,
    }
}

/// Expressions whose printed form starts like an operation are parenthesised on the right of
/// `let`, and nowhere else.
#[test]
fn expressions_that_read_as_operations_are_parenthesised() {
    let field = |b: Expr, f: &str| Expr::new(ExprKind::Field(Box::new(b), f.to_string()), Span::DUMMY);
    let cases = [
        (field(Expr::name("smem"), "load"), "let x = (smem.load)"),
        (
            Expr::binary(BinOp::Add, field(Expr::name("bar"), "sync"), Expr::int(1)),
            "let x = (bar.sync + 1)",
        ),
        (Expr::call("wgmma", vec![Expr::int(1)]), "let x = (wgmma(1))"),
        (field(Expr::name("bar"), "nbytes"), "let x = bar.nbytes"),
        (
            field(field(Expr::name("tma"), "store_wait"), "x"),
            "let x = (tma.store_wait.x)",
        ),
    ];
    for (e, line) in cases {
        let k = kernel_with(vec![Stmt::new(
            vec![],
            StmtKind::Let {
                names: vec![Ident::new("x")],
                value: Rhs::Expr(e),
            },
            Span::DUMMY,
        )]);
        let text = printer::print(&k);
        assert!(text.contains(&format!("  {line}\n")), "{text}");
        assert_eq!(parser::parse(&text).ok(), Some(k));
    }
}

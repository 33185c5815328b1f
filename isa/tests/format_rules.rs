//! The rules of docs/tile-format.md that the round-trip property cannot see: where comments
//! written anywhere end up, what the parser builds for a few tricky forms, the canonical
//! layout of the printer, spans, and error recovery.

use bwsim_isa::builder::*;
use bwsim_isa::ir::*;
use bwsim_isa::{parser, printer, SourceFile, Target};
use proptest::prelude::ProptestConfig;

const HEAD: &str = "kernel k {\n  target sm_100a\n  num_warps 4\n";

fn parse(src: &str) -> Kernel {
    parser::parse(src)
        .unwrap_or_else(|d| panic!("{}", bwsim_isa::diag::render(&d, &SourceFile::new("t.tile", src))))
}

fn body(stmts: &str) -> Kernel {
    parse(&format!("{HEAD}{stmts}}}\n"))
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// The operation statement `i` of `k`'s body binds with `let`.
fn let_op(k: &Kernel, i: usize) -> &Op {
    match &k.body.stmts[i].kind {
        StmtKind::Let {
            value: Rhs::Op(o), ..
        } => o,
        other => panic!("statement {i} is not `let NAME = OP`: {other:?}"),
    }
}

fn expr_of(src: &str) -> Expr {
    let k = body(&format!("  let x = {src}\n"));
    match &k.body.stmts[0].kind {
        StmtKind::Let {
            value: Rhs::Expr(e), ..
        } => e.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn comments_attach_to_the_next_item_and_blank_lines_collapse() {
    let k = body(
        "\n  // one\n\n\n  // two\n  let a = 1\n  for i in 0..2 {\n\n    // first\n    bar.sync\n\n    // end\n\n  }\n  // tail\n",
    );
    assert_eq!(k.body.stmts[0].comments, s(&["", "// one", "", "// two"]));
    let StmtKind::For(ForLoop { body: b, .. }) = &k.body.stmts[1].kind else {
        panic!()
    };
    assert_eq!(
        b.stmts[0].comments,
        s(&["// first"]),
        "blank line right after `{{` dropped"
    );
    assert_eq!(
        b.end_comments,
        s(&["", "// end"]),
        "blank line right before `}}` dropped"
    );
    assert_eq!(k.body.end_comments, s(&["// tail"]));
}

#[test]
fn comments_after_code_move_above_their_statement() {
    let src = format!(
        "{HEAD}  let a = f(1, // inside\n    2) // after\n  for i in 0..2 {{ // loop\n    bar.sync // sync\n  }} // done\n}}\n"
    );
    let k = parse(&src);
    assert_eq!(k.body.stmts[0].comments, s(&["// inside", "// after"]));
    assert_eq!(k.body.stmts[1].comments, s(&["// loop", "// done"]));
    let StmtKind::For(ForLoop { body: b, .. }) = &k.body.stmts[1].kind else {
        panic!()
    };
    assert_eq!(b.stmts[0].comments, s(&["// sync"]));
    let printed = printer::print(&k);
    assert!(
        printed.contains(
            "  // inside\n  // after\n  let a = f(1, 2)\n  // loop\n  // done\n  for i in 0..2 {\n"
        ),
        "{printed}"
    );
}

#[test]
fn header_comments_carry_forward_and_kernel_comments_stay_outside() {
    let src = "// above\n\nkernel k { // on kernel\n  // before target\n  target sm_100a // t\n  num_warps 4\n  param p: i32\n  // c\n  const C: int = 1\n}\n// after\n";
    let k = parse(src);
    assert_eq!(k.comments, s(&["// above", "", "// on kernel"]));
    assert_eq!(k.params[0].comments, s(&["// before target", "// t"]));
    assert_eq!(k.consts[0].comments, s(&["// c"]));
    assert_eq!(k.trailing_comments, s(&["// after"]));
    // Canonical order: consts before params; the comments travel with their declarations.
    let printed = printer::print(&k);
    assert_eq!(
        printed,
        "// above\n\n// on kernel\nkernel k {\n  target sm_100a\n  num_warps 4\n  // c\n  const C: int = 1\n  // before target\n  // t\n  param p: i32\n}\n// after\n"
    );
}

#[test]
fn comments_around_launch_and_partitions() {
    let src = format!(
        "{HEAD}  warp_specialize {{\n    default {{\n    }}\n    worker w(warps=1, regs=24) {{\n      bar.sync\n    }}\n    // orphan\n  }}\n  // before launch\n  launch {{\n    // grid\n    grid = [1]\n    // end of launch\n  }}\n  // after launch\n}} // closing\n"
    );
    let k = parse(&src);
    let StmtKind::WarpSpecialize { workers, .. } = &k.body.stmts[0].kind else {
        panic!()
    };
    assert_eq!(workers[0].body.end_comments, s(&["// orphan"]));
    let l = k.launch.as_ref().expect("launch");
    assert_eq!(l.comments, s(&["// before launch"]));
    assert_eq!(l.items[0].comments, s(&["// grid"]));
    assert_eq!(l.end_comments, s(&["// end of launch", "// after launch"]));
    assert!(k.body.end_comments.is_empty());
    assert_eq!(k.trailing_comments, s(&["// closing"]));
    let again = parse(&printer::print(&k));
    assert_eq!(again, k);
}

#[test]
fn else_if_nests_and_prints_back() {
    let src = format!("{HEAD}  if a {{\n    bar.sync\n  }} else if b {{\n    bar.sync\n  }} else {{\n    bar.sync\n  }}\n}}\n");
    let k = parse(&src);
    let StmtKind::If {
        else_body: Some(e), ..
    } = &k.body.stmts[0].kind
    else {
        panic!()
    };
    assert_eq!(e.stmts.len(), 1);
    assert!(matches!(
        &e.stmts[0].kind,
        StmtKind::If {
            else_body: Some(_),
            ..
        }
    ));
    assert_eq!(printer::print(&k), src);
    // An else block holding a commented `if` keeps its braces.
    let mut k2 = k.clone();
    if let StmtKind::If {
        else_body: Some(e), ..
    } = &mut k2.body.stmts[0].kind
    {
        e.stmts[0].comments.push("// c".into());
    }
    let p = printer::print(&k2);
    assert!(p.contains("} else {\n    // c\n    if b {\n"), "{p}");
    assert_eq!(parse(&p), k2);
}

#[test]
fn expressions_parse_as_documented() {
    let neg = expr_of("-3");
    assert!(matches!(&neg.kind, ExprKind::Unary(UnOp::Neg, e) if matches!(e.kind, ExprKind::Int(3))));
    // Comparisons bind looser than bit operations.
    let e = expr_of("i / n & 1 == 0");
    let want = bin(
        BinOp::Eq,
        bin(BinOp::BitAnd, bin(BinOp::Div, n("i"), n("n")), int(1)),
        int(0),
    );
    assert_eq!(e, want);
    let e = expr_of("x[:, None]");
    assert_eq!(e, idx_items(n("x"), vec![slice(None, None), IndexItem::NewAxis]));
    let e = expr_of("tm[0:128, 256:]");
    assert_eq!(
        e,
        idx_items(
            n("tm"),
            vec![slice(Some(int(0)), Some(int(128))), slice(Some(int(256)), None)]
        )
    );
    assert_eq!(expr_of("a_desc.nbytes"), field(n("a_desc"), "nbytes"));
    assert_eq!(
        expr_of("nvmma(128, transposed=true)"),
        call_kw("nvmma", vec![int(128)], vec![("transposed", boolean(true))])
    );
    // A call may continue over several lines inside its parentheses.
    assert_eq!(
        expr_of("min(\n    a,\n    b,\n  )"),
        call("min", [n("a"), n("b")])
    );
    assert_eq!(expr_of("0x1_0 + 2.0e5"), int(16) + float(2.0e5));
}

#[test]
fn printer_uses_the_fewest_parentheses() {
    let cases = [
        (n("a") - (n("b") - n("c")), "a - (b - c)"),
        ((n("a") - n("b")) - n("c"), "a - b - c"),
        (n("a") * (n("b") + n("c")), "a * (b + c)"),
        (n("a") + n("b") * n("c"), "a + b * c"),
        (-(n("a") + n("b")), "-(a + b)"),
        (-(-n("a")), "-(-a)"),
        (-int(3), "-3"),
        (idx(-n("a"), [int(0)]), "(-a)[0]"),
        (field(n("a") + n("b"), "x"), "(a + b).x"),
        (
            bin(BinOp::Eq, (n("i") / n("n")) & int(1), int(0)),
            "i / n & 1 == 0",
        ),
        (
            bin(BinOp::BitAnd, n("a"), bin(BinOp::Eq, n("b"), n("c"))),
            "a & (b == c)",
        ),
        (string("say \"hi\"\\"), "\"say \\\"hi\\\"\\\\\""),
        (float(1e-7), "1e-7"),
    ];
    for (e, want) in cases {
        assert_eq!(printer::print_expr(&e), want);
        assert_eq!(expr_of(want), e, "{want}");
    }
}

#[test]
fn operations_parse_and_print() {
    let k = body("  let t = smem.load buf, layout=row\n  fence.async_shared\n  let acc = wgmma a, b, acc, use_acc=true\n");
    assert_eq!(printer::print_op(let_op(&k, 0)), "smem.load buf, layout=row");
    assert!(matches!(
        &k.body.stmts[1].kind,
        StmtKind::Op(Op {
            kind: OpKind::FenceAsyncShared {},
            ..
        })
    ));
    assert_eq!(printer::print_op(let_op(&k, 2)), "wgmma a, b, acc, use_acc=true");
    assert_eq!(
        parser::signature_text("tma.load").as_deref(),
        Some("tma.load src, dst, bar[, pred=...][, multicast=...][, bar_cta=...]")
    );
    assert_eq!(parser::signature_text("bar.sync").as_deref(), Some("bar.sync"));
    assert_eq!(parser::suggest_op("tma.laod"), Some("tma.load"));
    assert_eq!(parser::suggest_op("tcgen05_commit"), Some("tcgen05.commit"));
    assert_eq!(parser::suggest_op("frobnicate"), None);
}

#[test]
fn spans_point_at_their_text() {
    let src = format!("{HEAD}  let x = cdiv(a, 2) + 1\n  mbar.wait bars[i % 2], i / 2 & 1\n}}\n");
    let k = parse(&src);
    let f = SourceFile::new("t.tile", src.clone());
    assert_eq!(f.snippet(k.span), src.trim_end());
    assert_eq!(f.snippet(k.name.span), "k");
    assert_eq!(f.snippet(k.body.stmts[0].span), "let x = cdiv(a, 2) + 1");
    let StmtKind::Let {
        names,
        value: Rhs::Expr(e),
    } = &k.body.stmts[0].kind
    else {
        panic!()
    };
    assert_eq!(f.snippet(names[0].span), "x");
    assert_eq!(f.snippet(e.span), "cdiv(a, 2) + 1");
    let StmtKind::Op(o) = &k.body.stmts[1].kind else {
        panic!()
    };
    assert_eq!(f.snippet(o.span), "mbar.wait bars[i % 2], i / 2 & 1");
    let OpKind::MbarWait { bar, phase } = &o.kind else {
        panic!()
    };
    assert_eq!(f.snippet(bar.span), "bars[i % 2]");
    assert_eq!(f.snippet(phase.span), "i / 2 & 1");
}

#[test]
fn several_errors_are_reported_and_capped() {
    let src = format!("{HEAD}  let = 1\n  bar.sync\n  tma.laod x, y, z\n  mbar.wait b\n  let y = (1 +\n}}\n");
    let d = parser::parse(&src).expect_err("bad input");
    let codes: Vec<&str> = d.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(
        codes,
        vec!["syntax", "unknown-op", "op-operands", "syntax"],
        "{d:#?}"
    );
    let many = format!("{HEAD}{}}}\n", "  let = 1\n".repeat(50));
    let d = parser::parse(&many).expect_err("bad input");
    assert_eq!(d.len(), parser::MAX_ERRORS);
}

#[test]
fn names_that_are_keywords_or_operations_are_refused() {
    for stmt in [
        "let for = 1",
        "let wgmma = 1",
        "wgmma = 1",
        "let (a, static_for) = f(x)",
        "for in in 0..2 {\n  }",
    ] {
        let src = format!("{HEAD}  {stmt}\n}}\n");
        let d = parser::parse(&src).expect_err(stmt);
        assert_eq!(d[0].code, "syntax", "{stmt}");
    }
}

#[test]
fn builder_and_parser_agree() {
    let built = KernelBuilder::new("add")
        .target(Target::Sm100a)
        .target(Target::Sm90a)
        .num_warps(n("NUM_WARPS"))
        .const_int("NUM_WARPS", 4)
        .param("ynumel", n("i32"))
        .layout(
            "row",
            call(
                "blocked",
                [
                    list([int(1)]),
                    list([int(32)]),
                    list([n("NUM_WARPS")]),
                    list([int(0)]),
                ],
            ),
        )
        .body(|b| {
            b.let_(
                "bars",
                OpKind::MbarAlloc {
                    count: int(2),
                    offset: None,
                },
            );
            b.static_for("i", 0, 2, |b| {
                b.op(OpKind::MbarInit {
                    bar: idx(n("bars"), [n("i")]),
                    count: int(1),
                });
            });
            b.comment("");
            b.comment("the loop");
            b.for_step("i", 0, call("cdiv", [n("ynumel"), int(64)]), 2, |b| {
                b.if_else(
                    bin(BinOp::Eq, n("i") % 2, int(0)),
                    |b| {
                        b.op(OpKind::BarSync {});
                    },
                    |b| {
                        b.comment("nothing");
                    },
                );
            });
            b.warp_specialize(|w| {
                w.default(|b| {
                    b.op(OpKind::MbarWait {
                        bar: idx(n("bars"), [int(0)]),
                        phase: int(0),
                    });
                });
                w.worker("load", 1, 24, |b| {
                    b.op(OpKind::MbarArrive {
                        bar: idx(n("bars"), [int(0)]),
                        count: None,
                        pred: None,
                        cta: None,
                    });
                });
            });
            b.static_assert(bin(BinOp::Gt, n("NUM_WARPS"), int(0)), "need warps");
        })
        .build();
    let text = printer::print(&built);
    let want = "kernel add {
  target sm_100a, sm_90a
  num_warps NUM_WARPS
  const NUM_WARPS: int = 4
  param ynumel: i32
  layout row = blocked([1], [32], [NUM_WARPS], [0])
  let bars = mbar.alloc 2
  static_for i in 0..2 {
    mbar.init bars[i], 1
  }

  // the loop
  for i in 0..cdiv(ynumel, 64) step 2 {
    if i % 2 == 0 {
      bar.sync
    } else {
      // nothing
    }
  }
  warp_specialize {
    default {
      mbar.wait bars[0], 0
    }
    worker load(warps=1, regs=24) {
      mbar.arrive bars[0]
    }
  }
  static_assert NUM_WARPS > 0, \"need warps\"
}
";
    assert_eq!(text, want);
    assert_eq!(parse(&text), built);
}

/// The `.tile` files of the repository that parse, for mutation.
fn corpus() -> &'static [String] {
    static CORPUS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    CORPUS.get_or_init(load_corpus)
}

fn load_corpus() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut v = Vec::new();
    for dir in ["kernels/tiles", "tests/pass"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .map(|r| r.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        paths.sort();
        for p in paths {
            if let Ok(t) = std::fs::read_to_string(&p) {
                if parser::parse(&t).is_ok() {
                    v.push(t);
                }
            }
        }
    }
    assert!(v.len() >= 10, "corpus missing");
    v
}

#[derive(Clone, Debug)]
enum Insert {
    /// A comment line (at some indentation) before line N.
    Own(usize, usize),
    /// A blank line before line N.
    Blank(usize),
    /// A comment after the code of line N.
    After(usize),
}

fn insert_strategy() -> impl proptest::strategy::Strategy<Value = Insert> {
    use proptest::prelude::*;
    prop_oneof![
        (any::<usize>(), 0usize..8).prop_map(|(n, i)| Insert::Own(n, i)),
        any::<usize>().prop_map(Insert::Blank),
        any::<usize>().prop_map(Insert::After),
    ]
}

proptest::proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(256) })]

    /// Comment lines, blank lines and end-of-line comments inserted anywhere in a real kernel:
    /// it still parses, no comment is lost, and one round of `fmt` reaches the fixed point.
    #[test]
    fn comments_inserted_anywhere_are_kept_by_256_mutated_kernels(
        seed in 0usize..1000,
        inserts in proptest::collection::vec(insert_strategy(), 1..8),
    ) {
        let corpus = corpus();
        let base = &corpus[seed % corpus.len()];
        let mut lines: Vec<String> = base.lines().map(str::to_string).collect();
        let mut tags = Vec::new();
        for (i, ins) in inserts.iter().enumerate() {
            let tag = format!("// note {i}");
            let n = lines.len();
            match *ins {
                Insert::Own(at, indent) => {
                    lines.insert(at % (n + 1), format!("{}{tag}", " ".repeat(indent)));
                    tags.push(tag);
                }
                Insert::Blank(at) => lines.insert(at % (n + 1), String::new()),
                Insert::After(at) => {
                    let l = &mut lines[at % n];
                    if !l.trim().is_empty() && !l.contains("//") && !l.contains('"') {
                        l.push_str(&format!(" {tag}"));
                        tags.push(tag);
                    }
                }
            }
        }
        let text = lines.join("\n") + "\n";
        let k = match parser::parse(&text) {
            Ok(k) => k,
            Err(d) => {
                let r = bwsim_isa::diag::render(&d, &SourceFile::new("mutated.tile", text.clone()));
                return Err(proptest::test_runner::TestCaseError::fail(format!("{r}\n{text}")));
            }
        };
        let printed = printer::print(&k);
        for t in &tags {
            proptest::prop_assert!(printed.contains(t.as_str()), "lost `{}`:\n{}", t, printed);
        }
        let again = parse(&printed);
        proptest::prop_assert_eq!(&again, &k, "{}", printed);
        proptest::prop_assert_eq!(printer::print(&again), printed);
    }
}

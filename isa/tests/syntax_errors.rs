//! Malformed `.tile` inputs and the diagnostics they render, snapshotted under
//! `traces/syntax/` (review a changed snapshot like code: `INSTA_UPDATE=always cargo test -p
//! bwsim-isa --test syntax_errors`, then read the `.snap` files).
//!
//! Each snapshot holds the input and `diag::render` of what the parser reports. Every case
//! must be rejected, without a panic, with at least one error whose span lies inside the text.

use bwsim_isa::{diag, parser, SourceFile};

const HEAD: &str = "kernel k {\n  target sm_100a\n  num_warps 4\n";

fn snapshot(name: &str, src: &str) {
    let diags = parser::parse(src).expect_err("malformed input must be rejected");
    assert!(!diags.is_empty());
    for d in &diags {
        assert!(d.is_error(), "{d:?}");
        assert!(
            d.primary.span.start <= d.primary.span.end && d.primary.span.end as usize <= src.len(),
            "{d:?}"
        );
    }
    let file = SourceFile::new(format!("{name}.tile"), src);
    let rendered = diag::render(&diags, &file);
    let shown = if src.len() > 400 {
        format!("{}... ({} bytes)", &src[..200], src.len())
    } else {
        src.to_string()
    };
    let text = format!("{shown}\n----- diagnostics -----\n{rendered}");
    insta::with_settings!({
        snapshot_path => "../../traces/syntax",
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, text);
    });
}

fn in_body(stmts: &str) -> String {
    format!("{HEAD}{stmts}}}\n")
}

#[test]
fn missing_closing_brace() {
    snapshot(
        "missing_brace",
        &format!("{HEAD}  for i in 0..4 {{\n    bar.sync\n}}\n"),
    );
}

#[test]
fn unknown_op_gets_a_suggestion() {
    snapshot(
        "unknown_op",
        &in_body("  let bars = mbar.alloc 1\n  tma.laod a_desc[0, 0], buf, bars[0]\n"),
    );
}

#[test]
fn unknown_op_on_the_right_of_let() {
    snapshot(
        "unknown_op_in_let",
        &in_body("  let t = smem.lod buf, layout=row\n"),
    );
}

#[test]
fn wrong_arity_shows_the_signature() {
    snapshot("wrong_arity", &in_body("  mbar.wait bars[0]\n"));
}

#[test]
fn unknown_keyword_operand() {
    snapshot(
        "unknown_keyword_operand",
        &in_body("  tma.load a_desc[0, 0], buf, bar[0], predicate=true\n"),
    );
}

#[test]
fn misspelled_statement_keyword() {
    snapshot(
        "bad_keyword",
        &in_body("  static_fro i in 0..2 {\n    bar.sync\n  }\n"),
    );
}

#[test]
fn unterminated_string() {
    snapshot(
        "unterminated_string",
        &in_body("  static_assert 1 == 1, \"never closed\n"),
    );
}

#[test]
fn huge_integer() {
    snapshot(
        "huge_integer",
        &in_body("  let x = 99999999999999999999\n  let y = 0x1_0000_0000_0000_0000\n"),
    );
}

#[test]
fn deep_nesting() {
    let e = format!("{}1{}", "(".repeat(300), ")".repeat(300));
    snapshot("deep_nesting", &in_body(&format!("  let x = {e}\n")));
}

#[test]
fn deep_block_nesting() {
    let blocks = format!("{}{}", "  if true {\n".repeat(250), "  }\n".repeat(250));
    snapshot("deep_block_nesting", &in_body(&blocks));
}

#[test]
fn garbage_bytes() {
    snapshot(
        "garbage_bytes",
        &in_body("  let x = 1 @ 2\n  let y = \u{0}\u{7f}é\n"),
    );
}

#[test]
fn statement_after_launch() {
    snapshot(
        "statement_after_launch",
        &in_body("  bar.sync\n  launch {\n    grid = [1]\n  }\n  bar.sync\n"),
    );
}

#[test]
fn missing_target() {
    snapshot("missing_target", "kernel k {\n  num_warps 4\n  bar.sync\n}\n");
}

#[test]
fn duplicate_num_warps() {
    snapshot(
        "duplicate_num_warps",
        &format!("{HEAD}  num_warps 8\n  bar.sync\n}}\n"),
    );
}

#[test]
fn declaration_among_statements() {
    snapshot(
        "declaration_after_statement",
        &in_body("  bar.sync\n  const N: int = 4\n"),
    );
}

#[test]
fn warp_specialize_without_default() {
    snapshot(
        "missing_default_partition",
        &in_body("  warp_specialize {\n    worker w(warps=1, regs=24) {\n      bar.sync\n    }\n  }\n"),
    );
}

#[test]
fn positional_after_keyword_operand() {
    snapshot(
        "positional_after_keyword",
        &in_body("  mbar.arrive count=1, bars[0]\n"),
    );
}

#[test]
fn missing_comma_between_operands() {
    snapshot("missing_comma", &in_body("  mbar.wait bars[0] 0\n"));
}

#[test]
fn several_errors_in_one_file() {
    snapshot(
        "several_errors",
        &in_body(
            "  let = 1\n  mbar.init bars[0]\n  tma.laod x, y, z\n  let y = 1 +\n  bar.sync\n  else {\n  }\n",
        ),
    );
}

#[test]
fn unclosed_parenthesis_continues_the_line() {
    snapshot("unclosed_paren", &in_body("  let x = min(1, 2\n  bar.sync\n"));
}

#[test]
fn empty_file() {
    snapshot("empty_file", "// nothing here\n");
}

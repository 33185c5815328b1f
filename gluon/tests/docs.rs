//! docs/gluon.md carries the tables generated from `bwsim_gluon::version::FEATURES`
//! (`cargo run -p bwsim-gluon --example version_table [coverage]`) between their markers, and
//! the table's rows say what the importer really does: every refused operation is refused with
//! the table's reason, every imported one reaches an import of its own.

fn between(doc: &str, begin: &str, end: &str) -> String {
    let a = doc
        .find(begin)
        .unwrap_or_else(|| panic!("`{begin}` in docs/gluon.md"))
        + begin.len();
    let b = doc[a..]
        .find(end)
        .unwrap_or_else(|| panic!("`{end}` after `{begin}`"))
        + a;
    doc[a..b].to_string()
}

fn doc() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/gluon.md")).expect("docs/gluon.md")
}

/// The table `name` of docs/gluon.md (between its markers) is `generated`, the output of the
/// example `version_table` run with `args`.
fn assert_table_is_generated(name: &str, args: &str, generated: String) {
    let command = format!("cargo run -p bwsim-gluon --example version_table{args}");
    let t = between(
        &doc(),
        &format!("<!-- {name}-table:begin ({command}) -->\n"),
        &format!("<!-- {name}-table:end -->"),
    );
    assert_eq!(
        t, generated,
        "docs/gluon.md's {name} table is out of date: regenerate it with `{command}`"
    );
}

#[test]
fn docs_version_table_is_the_generated_one() {
    assert_table_is_generated("version", "", bwsim_gluon::version::markdown_table());
}

#[test]
fn docs_coverage_table_is_the_generated_one() {
    assert_table_is_generated("coverage", " coverage", bwsim_gluon::version::coverage_table());
}

/// A module with one line `op` at `kern.py:3:4`, for the newest release that prints the op.
fn module_with(op: &str) -> String {
    format!(
        "// triton-version: 3.9.0\n#loc1 = loc(\"kern.py\":1:0)\n#loc2 = loc(\"kern.py\":3:4)\nmodule attributes {{\"ttg.num-warps\" = 4 : i32, ttg.target = \"cuda:100\"}} {{\n  tt.func public @k(%x: f32 loc(\"x\"(#loc1))) attributes {{noinline = false}} {{\n    {op} loc(#loc2)\n    tt.return loc(#loc1)\n  }} loc(#loc1)\n}} loc(#loc1)\n"
    )
}

#[test]
fn every_table_row_is_what_the_importer_does() {
    use bwsim_gluon::version::{Kind, Support, Version, FEATURES};
    let mut wrong = Vec::new();
    for f in FEATURES.iter().filter(|f| f.kind == Kind::Op) {
        let stamp = if f.in_release(Version::V3_9) {
            "3.9.0"
        } else {
            "3.6.0"
        };
        let text = module_with(&format!("%y = {} %x : f32", f.name)).replace("3.9.0", stamp);
        let l = bwsim_gluon::import_text("k.ttgir", &text, None, None);
        let diags = l.kernel.err().unwrap_or_default();
        let generic = diags.iter().any(|d| {
            d.code == "ttgir-unsupported-op"
                && d.notes
                    .iter()
                    .any(|n| n.contains("operations Triton's Gluon emits"))
        });
        match f.support {
            Support::Refused(why) => {
                if !diags
                    .iter()
                    .any(|d| d.code == "ttgir-unsupported-op" && d.notes.iter().any(|n| n.contains(why)))
                {
                    wrong.push(format!(
                        "{} is in the table as refused ({why}) but imports as: {diags:?}",
                        f.name
                    ));
                }
            }
            Support::Imported(_) => {
                if generic {
                    wrong.push(format!(
                        "{} is in the table as imported but the importer does not know it",
                        f.name
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

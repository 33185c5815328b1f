//! docs/gluon.md carries the version table generated from `bwsim_gluon::version::FEATURES`
//! (`cargo run -p bwsim-gluon --example version_table`), between its `version-table` markers.

#[test]
fn docs_version_table_is_the_generated_one() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/gluon.md");
    let doc = std::fs::read_to_string(path).expect("docs/gluon.md");
    let begin = "<!-- version-table:begin (cargo run -p bwsim-gluon --example version_table) -->\n";
    let end = "<!-- version-table:end -->";
    let a = doc.find(begin).expect("the begin marker") + begin.len();
    let b = doc[a..].find(end).expect("the end marker") + a;
    assert_eq!(
        &doc[a..b],
        bwsim_gluon::version::markdown_table(),
        "docs/gluon.md's version table is out of date: regenerate it with \
         `cargo run -p bwsim-gluon --example version_table`"
    );
}

//! Hand-written kernels are fixed points of the printer.
//!
//! The three front-end fixtures in `tests/pass/` (a TMA round trip, the warp-specialized add,
//! a tcgen05 MMA tile) are written in canonical form: `print(parse(x)) == x`, and every span of
//! their IR points at real text. Every other `.tile` file of the repository that parses is
//! checked for `print(parse(print(parse(x)))) == print(parse(x))` and
//! `parse(print(parse(x))) == parse(x)`.

use bwsim_isa::{diag, parser, printer, SourceFile};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(rel: &str) -> String {
    let p = repo().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

fn parse_or_panic(name: &str, text: &str) -> bwsim_isa::Kernel {
    parser::parse(text).unwrap_or_else(|d| panic!("{}", diag::render(&d, &SourceFile::new(name, text))))
}

/// Every `span` in the serialised IR covers real text inside the source.
fn check_spans(name: &str, text: &str, k: &bwsim_isa::Kernel) {
    fn walk(v: &serde_json::Value, len: u64, path: &str, bad: &mut Vec<String>, count: &mut usize) {
        match v {
            serde_json::Value::Object(m) => {
                for (key, x) in m {
                    if key == "span" {
                        *count += 1;
                        let s = x["start"].as_u64().unwrap_or(u64::MAX);
                        let e = x["end"].as_u64().unwrap_or(0);
                        if !(s < e && e <= len) {
                            bad.push(format!("{path}: span {s}..{e}"));
                        }
                    } else {
                        walk(x, len, &format!("{path}.{key}"), bad, count);
                    }
                }
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    walk(x, len, &format!("{path}[{i}]"), bad, count);
                }
            }
            _ => {}
        }
    }
    let v = serde_json::to_value(k).expect("the IR serialises");
    let mut bad = Vec::new();
    let mut count = 0;
    walk(&v, text.len() as u64, "kernel", &mut bad, &mut count);
    assert!(count > 50, "{name}: only {count} spans");
    assert!(bad.is_empty(), "{name}: spans without text:\n{}", bad.join("\n"));
}

fn check_fixture(rel: &str) {
    let text = read(rel);
    let k = parse_or_panic(rel, &text);
    let printed = printer::print(&k);
    assert_eq!(
        printed, text,
        "{rel} is not in canonical form (run `bwsim fmt --write {rel}`)"
    );
    let again = parse_or_panic("printed", &printed);
    assert_eq!(again, k, "{rel}: parse(print(parse(x))) != parse(x)");
    assert_eq!(printer::print(&again), printed);
    check_spans(rel, &text, &k);
}

#[test]
fn tma_roundtrip_is_a_fixed_point() {
    check_fixture("tests/pass/tma_roundtrip.tile");
}

#[test]
fn ws_elementwise_add_is_a_fixed_point() {
    check_fixture("tests/pass/ws_elementwise_add.tile");
}

#[test]
fn tcgen05_mma_tile_is_a_fixed_point() {
    check_fixture("tests/pass/tcgen05_mma_tile.tile");
}

/// The fixtures hold what their names promise.
#[test]
fn fixtures_contain_their_operations() {
    use bwsim_isa::ir::{OpKind, Rhs, StmtKind};
    let ops = |rel: &str| {
        let k = parse_or_panic(rel, &read(rel));
        let mut names = Vec::new();
        k.walk_stmts(&mut |s| match &s.kind {
            StmtKind::Op(o) => names.push(o.kind.name()),
            StmtKind::Let {
                value: Rhs::Op(o), ..
            }
            | StmtKind::Assign {
                value: Rhs::Op(o), ..
            } => names.push(o.kind.name()),
            _ => {}
        });
        (k, names)
    };
    // The fixture `rel`, which must contain every operation of `expected`.
    let with_ops = |rel: &str, expected: &[&str]| {
        let (k, names) = ops(rel);
        for n in expected {
            assert!(names.contains(n), "{rel} lacks {n}");
        }
        k
    };
    let k = with_ops(
        "tests/pass/tma_roundtrip.tile",
        &[
            "smem.alloc",
            "mbar.alloc",
            "mbar.init",
            "mbar.expect",
            "tma.load",
            "mbar.wait",
            "tma.store",
            "tma.store_wait",
        ],
    );
    assert_eq!(k.targets.len(), 2);
    let k = with_ops(
        "tests/pass/ws_elementwise_add.tile",
        &[
            "fence.async_shared",
            "mbar.arrive",
            "tma.store_wait",
            "smem.load",
            "smem.store",
        ],
    );
    let ws = k.body.stmts.iter().find_map(|s| match &s.kind {
        StmtKind::WarpSpecialize { workers, .. } => {
            Some(workers.iter().map(|w| w.name.name.clone()).collect::<Vec<_>>())
        }
        _ => None,
    });
    assert_eq!(ws, Some(vec!["load".to_string(), "store".to_string()]));
    with_ops(
        "tests/pass/tcgen05_mma_tile.tile",
        &[
            "tmem.alloc",
            "tcgen05.mma",
            "tcgen05.commit",
            "tmem.load",
            "global.store",
            "tmem.dealloc",
        ],
    );
    assert!(OpKind::NAMES.contains(&"tcgen05.mma"));
}

/// Every `.tile` file in the repository that parses round-trips through the printer.
#[test]
fn every_tile_file_in_the_repository_round_trips() {
    let mut files = Vec::new();
    for dir in ["kernels/tiles", "tests/pass", "tests/fail", "tests/verify"] {
        if let Ok(rd) = std::fs::read_dir(repo().join(dir)) {
            for e in rd.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "tile") {
                    files.push(p);
                }
            }
        }
    }
    files.sort();
    let mut parsed = 0;
    for p in &files {
        let name = p.display().to_string();
        let Ok(text) = std::fs::read_to_string(p) else {
            continue;
        };
        let Ok(k) = parser::parse(&text) else { continue };
        parsed += 1;
        let printed = printer::print(&k);
        let again = parse_or_panic(&format!("print({name})"), &printed);
        assert_eq!(again, k, "{name}: parse(print(parse(x))) != parse(x)");
        assert_eq!(
            printer::print(&again),
            printed,
            "{name}: print is not a fixed point"
        );
    }
    assert!(parsed >= 20, "only {parsed} of {} .tile files parse", files.len());
}

//! Helpers shared by the command-line tests (`tests/*_cli.rs`, `tests/cli.rs`): run the real
//! `bwsim` binary from the repository root, read its JSON, and give a test a scratch folder.
//! Each test file uses some of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `bwsim ARGS` from the repository root (where the tests' relative paths start): its exit
/// status (-1 when a signal ended it), its stdout and its stderr.
pub fn bwsim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_bwsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("bwsim runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The whitespace-separated words of `line`: a command line written as one string.
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// `s` as one JSON value; panics with the text when it is not JSON.
pub fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

/// The scratch folder `bwsim-TAG-PID` in Cargo's per-target temporary folder (`target/tmp`, so
/// nothing is left in the system's), created if missing
/// (what an earlier test of the same process wrote there stays).
pub fn scratch(tag: &str) -> PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bwsim-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// `scratch(tag)`, emptied first.
pub fn fresh_scratch(tag: &str) -> PathBuf {
    let _ = std::fs::remove_dir_all(
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("bwsim-{tag}-{}", std::process::id())),
    );
    scratch(tag)
}

/// Writes `text` to `NAME` in `scratch(tag)`; its path as text, for an argument.
pub fn scratch_file(tag: &str, name: &str, text: impl AsRef<[u8]>) -> String {
    let p = scratch(tag).join(name);
    std::fs::write(&p, text).expect("write temp file");
    p.to_string_lossy().into_owned()
}

/// Runs `bwsim ARGS` and asserts that it exits with `code` and that its stderr contains each
/// of `says`; its stdout and stderr.
pub fn bwsim_says(args: &[&str], code: i32, says: &[&str]) -> (String, String) {
    let (got, out, err) = bwsim(args);
    assert_eq!(got, code, "{err}");
    for s in says {
        assert!(err.contains(s), "{err}");
    }
    (out, err)
}

/// Runs `bwsim ARGS` and asserts that it exits with `code` and that its stdout contains each
/// of `says`; its stdout.
pub fn bwsim_prints(args: &[&str], code: i32, says: &[&str]) -> String {
    let (got, out, err) = bwsim(args);
    assert_eq!(got, code, "{out}\n{err}");
    for s in says {
        assert!(out.contains(s), "{out}");
    }
    out
}

/// Runs `bwsim ARGS` and asserts that it exits with `code`; its stdout read as one JSON value.
pub fn bwsim_json(code: i32, args: &[&str]) -> serde_json::Value {
    let (got, out, err) = bwsim(args);
    assert_eq!(got, code, "{err}");
    json(out.trim())
}

/// Writes `data` as a `.npy` array of `shape` to `path`.
pub fn save_npy<T: npyz::Serialize + npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], data: &[T]) {
    use npyz::WriterBuilder;
    let f = std::io::BufWriter::new(std::fs::File::create(path).expect("create .npy"));
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(f)
        .begin_nd()
        .expect("npy header");
    w.extend(data.iter().copied()).expect("npy data");
    w.finish().expect("npy end");
}

/// Asserts that `text` is the snapshot `name` under `traces/DIR` (insta: `cargo insta review`
/// or `INSTA_UPDATE=always` re-blesses).
pub fn assert_trace_snapshot(dir: &str, name: &str, text: &str) {
    insta::with_settings!({
        snapshot_path => format!("../../traces/{dir}"),
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name, text);
    });
}

/// Asserts that nothing failed; otherwise lists the failures under `what`.
pub fn assert_no_failures(what: &str, failures: &[String]) {
    assert!(failures.is_empty(), "{what}:\n{}", failures.join("\n"));
}

/// Sets, in `levels`, the level a corpus header's `deny:`, `warn:` or `allow:` directive (`key`)
/// gives the code `code` (tests/check_corpus.rs and tests/fix_corpus.rs read the same headers).
pub fn level_directive(
    levels: &mut bwsim_isa::levels::Levels,
    key: &str,
    code: &str,
) -> Result<(), bwsim_isa::levels::LevelError> {
    use bwsim_isa::Level;
    let level = match key {
        "deny" => Level::Error,
        "warn" => Level::Warning,
        "allow" => Level::Allow,
        other => panic!("`{other}` is not a level directive"),
    };
    levels.set(code, level)
}

/// For each element of the JSON array `v`, the strings at the JSON pointers `fields` (`""`
/// where one is absent or not a string); panics when `v` is not an array.
pub fn string_fields<const N: usize>(v: &serde_json::Value, fields: [&str; N]) -> Vec<[String; N]> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|e| fields.map(|f| e.pointer(f).and_then(|s| s.as_str()).unwrap_or("").to_string()))
        .collect()
}

/// `CODE [at F:L] [with F:L ...]` of an `expect:` directive.
pub fn expectation(value: &str) -> (String, Option<String>, Vec<String>) {
    let mut w = value.split_whitespace();
    let code = w.next().unwrap_or("").to_string();
    let (mut at, mut with) = (None, Vec::new());
    while let Some(k) = w.next() {
        let place = w.next().unwrap_or("").to_string();
        match k {
            "at" => at = Some(place),
            "with" => with.push(place),
            _ => panic!("`expect: {value}`: `{k}`"),
        }
    }
    (code, at, with)
}

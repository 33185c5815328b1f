//! The repository stands on its own: no text in it cites a document it does not hold, and
//! every anchor of docs/semantics.md it cites (`docs/semantics.md` + `#` + anchor) names one
//! of its headings.
//!
//! The files are the repository's (`git ls-files --cached --others --exclude-standard`: tracked
//! plus new files that are not ignored), or, without git, the tree minus build and tool folders.
//! The forbidden names are assembled at run time so that this file does not contain them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Folders never walked without git: build output, tools, local binaries, fuzz output.
const SKIP_DIRS: &[&str] = &[".git", "target", ".tools", ".devbin", "fuzz-findings"];

fn walk(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let path = e.path();
        let r = rel.join(name);
        match e.file_type() {
            Ok(t) if t.is_dir() && !SKIP_DIRS.contains(&name) => walk(&path, &r, out),
            Ok(t) if t.is_file() => out.push(r),
            _ => {}
        }
    }
}

/// The repository's files, relative to its root.
fn files() -> Vec<PathBuf> {
    let root = root();
    let git = Command::new("git")
        .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        .current_dir(&root)
        .output();
    if let Ok(o) = git {
        if o.status.success() && !o.stdout.is_empty() {
            return o
                .stdout
                .split(|&b| b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
                .collect();
        }
    }
    let mut out = Vec::new();
    walk(&root, Path::new(""), &mut out);
    out.sort();
    out
}

/// The text files among them with their contents (binary files, with a NUL byte, are skipped;
/// a file listed but deleted from the working tree is skipped too).
fn texts() -> Vec<(PathBuf, String)> {
    let root = root();
    files()
        .into_iter()
        .filter_map(|p| {
            let bytes = std::fs::read(root.join(&p)).ok()?;
            if bytes.contains(&0) {
                return None;
            }
            Some((p, String::from_utf8_lossy(&bytes).into_owned()))
        })
        .collect()
}

#[test]
fn no_reference_outside_the_repository() {
    let forbidden = [
        ["PTX", ".md"].concat(),
        ["DESIGN", ".md"].concat(),
        ["..", "/shared"].concat(),
    ];
    let texts = texts();
    assert!(
        texts.iter().any(|(p, _)| p == Path::new("Cargo.toml")),
        "the walk did not find the repository's files"
    );
    let mut hits = Vec::new();
    for (path, text) in &texts {
        for (i, line) in text.lines().enumerate() {
            for f in &forbidden {
                if line.contains(f.as_str()) {
                    hits.push(format!(
                        "{}:{}: cites `{f}`: {}",
                        path.display(),
                        i + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        hits.is_empty(),
        "{} reference(s) to documents outside the repository (cite an anchor of docs/semantics.md, \
         docs/ARCHITECTURE.md or the PTX ISA by section title instead):\n{}",
        hits.len(),
        hits.join("\n")
    );
}

/// GitHub's anchor of a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces turned into `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings (`#` to `######`, outside code fences), with
/// GitHub's `-1`, `-2` suffixes for repeated ones.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let a = anchor(&line[hashes..]);
            let mut unique = a.clone();
            let mut n = 0;
            while out.contains(&unique) {
                n += 1;
                unique = format!("{a}-{n}");
            }
            out.insert(unique);
        }
    }
    out
}

#[test]
fn semantics_anchor_rule() {
    assert_eq!(anchor(" Proxies and fences"), "proxies-and-fences");
    assert_eq!(anchor("gather4 and scatter4"), "gather4-and-scatter4");
    assert_eq!(anchor("Targets and PTX versions"), "targets-and-ptx-versions");
    assert_eq!(anchor("`tcgen05.mma`: shapes, kinds"), "tcgen05mma-shapes-kinds");
    let a = anchors("# A\n```\n# not a heading\n```\n## B c\n### A\n#nope\n");
    assert_eq!(a, ["a", "a-1", "b-c"].into_iter().map(String::from).collect());
}

/// Every anchor of docs/semantics.md cited anywhere (code, docs, snapshots; and the `(#...)`
/// links inside docs/semantics.md itself) names one of its headings.
#[test]
fn semantics_anchors_exist() {
    let semantics = Path::new("docs").join("semantics.md");
    let texts = texts();
    let (_, doc) = texts
        .iter()
        .find(|(p, _)| *p == semantics)
        .expect("docs/semantics.md is in the repository");
    let known = anchors(doc);
    let cite = ["semantics", ".md#"].concat();
    let is_anchor = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut cited = 0;
    let mut bad = Vec::new();
    for (path, text) in &texts {
        for (i, line) in text.lines().enumerate() {
            let mut refs: Vec<&str> = line
                .match_indices(cite.as_str())
                .map(|(at, _)| &line[at + cite.len()..])
                .collect();
            if *path == semantics {
                refs.extend(line.match_indices("](#").map(|(at, _)| &line[at + 3..]));
            }
            for rest in refs {
                let a: String = rest.chars().take_while(|&c| is_anchor(c)).collect();
                cited += 1;
                if !known.contains(&a) {
                    bad.push(format!(
                        "{}:{}: `#{a}` is no heading of docs/semantics.md",
                        path.display(),
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(cited > 0, "no citation of docs/semantics.md found");
    assert!(
        bad.is_empty(),
        "{} citation(s) of missing anchors:\n{}\nanchors of docs/semantics.md: {}",
        bad.len(),
        bad.join("\n"),
        known.iter().cloned().collect::<Vec<_>>().join(", ")
    );
}

//! The seed corpus: every `.tile` file the repository ships (bundled kernels, the checker's
//! pass/fail catalogue, the verifier rule twins). Mutators start from these.

use std::path::{Path, PathBuf};

/// One seed file.
#[derive(Clone, Debug)]
pub struct Seed {
    /// Path relative to the repository root.
    pub name: String,
    pub text: String,
}

/// The repository root (this crate sits one level below it).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Folders holding seed kernels, relative to the repository root.
pub const SEED_DIRS: &[&str] = &["kernels/tiles", "tests/pass", "tests/fail", "tests/verify"];

/// Every seed file, sorted by path (so an index into the corpus means the same file on every
/// machine). Unreadable files are skipped.
pub fn seeds() -> Vec<Seed> {
    let root = repo_root();
    let mut out = Vec::new();
    for dir in SEED_DIRS {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
            .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        paths.sort();
        for p in paths {
            if p.extension().is_some_and(|e| e == "tile") {
                if let Ok(text) = std::fs::read_to_string(&p) {
                    let name = p.strip_prefix(&root).unwrap_or(&p).to_string_lossy().into_owned();
                    out.push(Seed { name, text });
                }
            }
        }
    }
    out
}

//! The seed corpus: every `.tile` file the repository ships (bundled kernels, the checker's
//! pass/fail catalogue, the verifier rule twins), and the TTGIR of every supported Triton
//! release (`tests/gluon/3.*/*.ttgir`, each with its launch sidecar). Mutators start from these.

use std::path::{Path, PathBuf};

/// One seed file.
#[derive(Clone, Debug)]
pub struct Seed {
    /// Path relative to the repository root.
    pub name: String,
    pub text: String,
}

/// One TTGIR seed: a `.ttgir` file of a release folder and the launch section that goes with
/// it (its sidecar, found as `bwsim_gluon::load` finds it).
#[derive(Clone, Debug)]
pub struct TtgirSeed {
    /// Path relative to the repository root.
    pub name: String,
    /// The release folder it sits in (`3.9`).
    pub release: String,
    pub text: String,
    /// The launch sidecar's text, when the kernel has one.
    pub launch: Option<String>,
}

/// Every seed: the `.tile` files and the TTGIR files.
#[derive(Clone, Debug, Default)]
pub struct Corpus {
    pub tile: Vec<Seed>,
    pub ttgir: Vec<TtgirSeed>,
}

impl Corpus {
    /// Read the repository's seeds ([`seeds`] and [`ttgir_seeds`]).
    pub fn load() -> Corpus {
        Corpus {
            tile: seeds(),
            ttgir: ttgir_seeds(),
        }
    }

    /// The release folders the TTGIR seeds come from, sorted (`3.6`, `3.7`, ...).
    pub fn releases(&self) -> Vec<String> {
        let mut r: Vec<String> = self.ttgir.iter().map(|s| s.release.clone()).collect();
        r.dedup();
        r
    }
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

/// The folder holding one subfolder of TTGIR per Triton release, relative to the root.
pub const TTGIR_DIR: &str = "tests/gluon";

/// The files of `dir` with extension `ext`, sorted by path.
fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    paths.retain(|p| p.extension().is_some_and(|e| e == ext));
    paths.sort();
    paths
}

fn relative(p: &Path, root: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).to_string_lossy().into_owned()
}

/// Every seed file, sorted by path (so an index into the corpus means the same file on every
/// machine). Unreadable files are skipped.
pub fn seeds() -> Vec<Seed> {
    let root = repo_root();
    let mut out = Vec::new();
    for dir in SEED_DIRS {
        for p in files(&root.join(dir), "tile") {
            if let Ok(text) = std::fs::read_to_string(&p) {
                out.push(Seed {
                    name: relative(&p, &root),
                    text,
                });
            }
        }
    }
    out
}

/// Whether a folder name is a Triton release line (`3.6`, `3.10`).
fn is_release(name: &str) -> bool {
    let mut parts = name.split('.');
    let num = |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    num(parts.next()) && num(parts.next()) && parts.next().is_none()
}

/// Every TTGIR seed of every release folder under [`TTGIR_DIR`], sorted by release and path,
/// each with its launch sidecar's text. Unreadable files are skipped.
pub fn ttgir_seeds() -> Vec<TtgirSeed> {
    let root = repo_root();
    let base = root.join(TTGIR_DIR);
    let mut releases: Vec<(Vec<u32>, String)> = std::fs::read_dir(&base)
        .map(|r| {
            r.filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| is_release(n))
                .map(|n| (n.split('.').map(|p| p.parse().unwrap_or(0)).collect(), n))
                .collect()
        })
        .unwrap_or_default();
    releases.sort();
    let mut out = Vec::new();
    for (_, release) in releases {
        for p in files(&base.join(&release), "ttgir") {
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            let launch = bwsim_gluon::launch_path_for(&p).and_then(|l| std::fs::read_to_string(l).ok());
            out.push(TtgirSeed {
                name: relative(&p, &root),
                release: release.clone(),
                text,
                launch,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_folder_names() {
        assert!(is_release("3.6"));
        assert!(is_release("3.10"));
        assert!(!is_release("3"));
        assert!(!is_release("3.6.0"));
        assert!(!is_release("v3.6"));
        assert!(!is_release("3."));
    }
}

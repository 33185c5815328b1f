//! Imported Gluon kernels in the differential suite: every TTGIR fixture found under a
//! directory (`tests/gluon` by default), recursively, becomes a [`Case`] whose source is the
//! import of the file with its launch sidecar (`bwsim_gluon::load`), so that a user's kernel
//! runs on the GPU exactly as the simulator reads it.
//!
//! - The target is the one in the file name (`NAME.sm_90a.ttgir`), else the kernel's own.
//! - The comparison is that of the bundled kernel the fixture is the Gluon twin of (the stem
//!   before the first `.`, e.g. `softmax.sm_90a.ttgir` takes `softmax`'s tolerance), else bit
//!   for bit, unless the sidecar says otherwise in a comment line
//!   `// gpu: atol=A rtol=R` (float folds that the GPU orders differently).
//! - Planted bugs (`bug_*`, except the fixed twins `bug_*_fixed`) are listed and skipped: a racy
//!   kernel has no single right answer on hardware; `bwsim check` is what reports them.
//! - A fixture that does not import, lower or assemble reports why, as its own row.

use crate::cases::{Case, Check, Source};
use bwsim_isa::directives::{self, Directive};
use bwsim_isa::Target;
use std::path::{Path, PathBuf};

/// Where `bwsim gpu --all` looks for fixtures when not told: the repository's Gluon corpus,
/// relative to the current directory.
pub const DEFAULT_DIR: &str = "tests/gluon";

/// Every `.ttgir` file under `dir` (recursively), in path order.
pub fn ttgir_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| format!("cannot read {}: {e}", d.display()))?;
        for e in entries {
            let p = e.map_err(|e| format!("cannot read {}: {e}", d.display()))?.path();
            if p.is_dir() {
                stack.push(p);
            } else if bwsim_gluon::is_ttgir(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The target a fixture's file name gives (`NAME.sm_90a.ttgir`).
fn target_in_name(path: &Path) -> Option<Target> {
    let stem = path.file_stem()?.to_str()?;
    Target::from_name(stem.rsplit('.').next()?)
}

/// Whether a fixture is a planted bug (`bug_*`, not a fixed twin).
pub fn is_planted_bug(path: &Path) -> bool {
    let stem = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.split('.').next())
        .unwrap_or_default();
    stem.starts_with("bug_") && !stem.ends_with("_fixed")
}

/// The directives of the launch sidecar of `path` (its `// KEY: VALUE` header lines, read by
/// the one directive parser with the corpus's keys); none when there is no readable sidecar or
/// its header does not parse (the corpus test, gluon/tests/gluon_corpus.rs, rejects such a
/// sidecar).
fn sidecar(path: &Path) -> Vec<Directive> {
    bwsim_gluon::launch_path_for(path)
        .map(|p| sidecar_directives(&p))
        .unwrap_or_default()
}

/// The directives of the launch sidecar at `path` (none when it is unreadable or its header
/// does not parse).
pub fn sidecar_directives(path: &Path) -> Vec<Directive> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    directives::parse(&text, directives::GLUON_KEYS, true).unwrap_or_default()
}

/// The first unqualified `// gpu: atol=A rtol=R` line of the launch sidecar that gives both.
pub fn sidecar_tolerance(path: &Path) -> Option<Check> {
    tolerance(&sidecar(path))
}

/// The first unqualified `// gpu: atol=A rtol=R` line among a sidecar's `directives` that
/// gives both.
pub fn tolerance(directives: &[Directive]) -> Option<Check> {
    directives
        .iter()
        .filter(|d| d.key == "gpu" && d.qualifiers.is_empty())
        .find_map(|d| {
            let mut atol = None;
            let mut rtol = None;
            for kv in d.value.split_whitespace() {
                match kv.split_once('=') {
                    Some(("atol", v)) => atol = v.parse::<f64>().ok(),
                    Some(("rtol", v)) => rtol = v.parse::<f64>().ok(),
                    _ => {}
                }
            }
            Some(Check::Tolerance {
                atol: atol?,
                rtol: rtol?,
            })
        })
}

/// The Triton release line of a fixture: its version folder (`tests/gluon/3.8/`), else its
/// `// triton-version: X.Y.Z` first line.
fn release_of(path: &Path) -> Option<directives::Release> {
    let folder = path.parent()?.file_name()?.to_str()?;
    directives::release(folder).or_else(|| {
        let text = std::fs::read_to_string(path).ok()?;
        let v = text.lines().next()?.strip_prefix("// triton-version:")?.trim();
        let (line, _patch) = v.rsplit_once('.')?;
        directives::release(line)
    })
}

/// The values of the launch sidecar's `// KEY: VALUE` lines for `key` that apply to the
/// fixture `path` (an unqualified line, or a qualified `// KEY [3.8+ sm_90a]: VALUE` whose
/// qualifiers select the fixture's release and target by the one rule,
/// `Directive::applies_to`; a qualified line of a fixture whose release or target is unknown,
/// or with a qualifier the rule rejects, does not apply), in order.
fn sidecar_values(path: &Path, key: &str) -> Vec<String> {
    values_for(&sidecar(path), path, key)
}

/// The values of `directives` (a launch sidecar's) for `key` that apply to the file `path`,
/// by [`sidecar_values`]'s rule.
fn values_for(directives: &[Directive], path: &Path, key: &str) -> Vec<String> {
    let (release, target) = (release_of(path), target_in_name(path));
    let applies = |d: &Directive| match (release, target) {
        _ if d.qualifiers.is_empty() => true,
        (Some(r), Some(t)) => d.applies_to(r, t.name()).unwrap_or(false),
        _ => false,
    };
    directives
        .iter()
        .filter(|d| d.key == key && applies(d))
        .map(|d| d.value.clone())
        .collect()
}

/// The CPU reference that the launch sidecar of the fixture `path` names for it
/// ([`reference_for`]).
pub fn fixture_reference(path: &Path) -> Option<String> {
    reference_for(&sidecar(path), path)
}

/// The CPU reference that a launch sidecar's `directives` name for the file `path` (its
/// `.ttgir`, or the `.ptx` compiled from it): the first `// run: reference [NAME]` line that
/// applies to the file's release and target (`// run [3.6-3.7]: reference NAME_low_bits`).
/// `None` when that line names none, or no such line applies: the kernel's own name is the
/// reference then.
pub fn reference_for(directives: &[Directive], path: &Path) -> Option<String> {
    values_for(directives, path, "run").iter().find_map(|v| {
        let mut w = v.split_whitespace();
        (w.next() == Some("reference")).then(|| w.next().map(str::to_string))
    })?
}

/// Whether the launch sidecar of `path` says its import is refused with the error `message`
/// (a `// refused: CODE ...` line, optionally qualified `// refused [3.8+]: CODE ...`, whose
/// CODE is the error's `[CODE]`): an operation the importer does not read yet, stated and
/// tested by the corpus (gluon/tests), so `bwsim gpu` lists the fixture as skipped with the
/// importer's reason. A refusal the sidecar does not state stays an error.
pub fn refusal_is_expected(path: &Path, message: &str) -> bool {
    sidecar_values(path, "refused").iter().any(|v| {
        v.split_whitespace()
            .next()
            .is_some_and(|code| message.contains(&format!("[{code}]")))
    })
}

/// Whether the launch sidecar of `path` says the PTX backend refuses it with the lowering error
/// `message` (a `// ptx: CODE TEXT` line, optionally qualified, whose TEXT the message
/// contains): a form the backend does not lower yet, stated and tested by the corpus
/// (tests/gluon_cli.rs fails once it lowers). Any other lowering error stays an error.
pub fn ptx_refusal_is_expected(path: &Path, message: &str) -> bool {
    sidecar_values(path, "ptx").iter().any(|v| {
        v.split_once(' ')
            .is_some_and(|(_, text)| !text.trim().is_empty() && message.contains(text.trim()))
    })
}

/// The fixture cases under `dir`; `bundled` are the suite's other cases (for the twins'
/// comparisons).
pub fn fixtures(dir: &Path, bundled: &[Case]) -> Result<Vec<Case>, String> {
    let mut v = Vec::new();
    for path in ttgir_files(dir)? {
        let rel = path.strip_prefix(dir).unwrap_or(&path).with_extension("");
        let name = format!("gluon/{}", rel.to_string_lossy().replace('\\', "/"));
        let twin = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.split('.').next())
            .unwrap_or_default();
        let check = sidecar_tolerance(&path)
            .or_else(|| {
                bundled
                    .iter()
                    .find(|c| matches!(c.source, Source::Bundled(n) if n == twin))
                    .map(|c| c.check)
            })
            .unwrap_or(Check::Exact);
        let targets = match target_in_name(&path) {
            Some(t) => vec![t],
            None => bwsim_gluon::load(&path)
                .ok()
                .and_then(|l| l.kernel.ok())
                .map(|k| k.targets)
                .unwrap_or_else(|| vec![Target::Sm90a]),
        };
        let source = if is_planted_bug(&path) {
            Source::PlantedBug(path)
        } else {
            Source::Gluon(path)
        };
        v.push(Case {
            name,
            source,
            consts: Vec::new(),
            targets,
            check,
        });
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> PathBuf {
        // The corpus is the repository's (this crate sits one folder below its root).
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(DEFAULT_DIR)
    }

    #[test]
    fn every_fixture_of_the_corpus_becomes_one_case_with_its_target() {
        let files = ttgir_files(&corpus()).expect("tests/gluon is readable");
        let cases = fixtures(&corpus(), &crate::cases::all()).expect("fixtures");
        assert_eq!(cases.len(), files.len());
        assert!(cases.len() >= 20, "{} fixtures", cases.len());
        let find = |n: &str| {
            cases
                .iter()
                .find(|c| c.name == n)
                .unwrap_or_else(|| panic!("no case {n}"))
        };
        assert_eq!(find("gluon/3.9/wgmma_matmul.sm_90a").targets, [Target::Sm90a]);
        assert_eq!(find("gluon/3.6/attention.sm_100a").targets, [Target::Sm100a]);
        // Twins keep the bundled kernel's comparison; others are exact.
        assert_eq!(find("gluon/3.7/softmax.sm_90a").check, {
            let all = crate::cases::all();
            all.iter()
                .find(|c| c.name == "softmax")
                .map(|c| c.check)
                .expect("softmax case")
        });
        assert_eq!(find("gluon/3.8/copy_1d_scalar.sm_90a").check, Check::Exact);
        assert!(matches!(
            find("gluon/3.9/bug_ws_add_no_fence.sm_90a").source,
            Source::PlantedBug(_)
        ));
        assert!(matches!(
            find("gluon/3.9/bug_ws_add_fixed.sm_90a").source,
            Source::Gluon(_)
        ));
    }

    #[test]
    fn the_reference_is_the_first_run_line_for_the_files_release_and_target() {
        let text = "// run [3.8+]: reference\n// run [3.6-3.7 sm_100a]: reference hist_low_bits\n\
                    // run: reference other\nlaunch {\n  grid = [1]\n}\n";
        let ds = directives::parse(text, directives::GLUON_KEYS, true).expect("sidecar");
        let at = |p: &str| reference_for(&ds, Path::new(p));
        // 3.8 and later: the first line applies and names no reference (the kernel's own).
        assert_eq!(at("tests/gluon/3.9/hist.sm_100a.ttgir"), None);
        assert_eq!(at("corpus/3.8/hist.sm_90a.ptx"), None);
        // 3.6 and 3.7 on sm_100a: the second line; on sm_90a the third, unqualified one.
        assert_eq!(
            at("tests/gluon/3.7/hist.sm_100a.ttgir").as_deref(),
            Some("hist_low_bits")
        );
        assert_eq!(
            at("corpus/3.6/hist.sm_100a.ptx").as_deref(),
            Some("hist_low_bits")
        );
        assert_eq!(at("tests/gluon/3.6/hist.sm_90a.ttgir").as_deref(), Some("other"));
        // A file whose release is unknown takes only unqualified lines.
        assert_eq!(at("elsewhere/hist.sm_100a.ttgir").as_deref(), Some("other"));
    }

    #[test]
    fn fixtures_are_found_in_subdirectories_and_read_their_sidecar_tolerance() {
        let dir = tempfile::tempdir().expect("temp dir");
        let sub = dir.path().join("3.9");
        std::fs::create_dir_all(&sub).expect("mkdir");
        let src = std::fs::read_to_string(corpus().join("3.9/copy_1d_scalar.sm_90a.ttgir")).expect("fixture");
        std::fs::write(sub.join("copy.sm_90a.ttgir"), &src).expect("write");
        std::fs::write(sub.join("bug_copy.sm_100a.ttgir"), &src).expect("write");
        std::fs::write(
            sub.join("copy.launch"),
            "// gpu: atol=1e-5 rtol=2e-5\nlaunch {\n  grid = [1]\n}\n",
        )
        .expect("write");
        let cases = fixtures(dir.path(), &[]).expect("fixtures");
        let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["gluon/3.9/bug_copy.sm_100a", "gluon/3.9/copy.sm_90a"]);
        assert_eq!(cases[0].targets, [Target::Sm100a]);
        assert!(matches!(cases[0].source, Source::PlantedBug(_)));
        assert_eq!(
            cases[1].check,
            Check::Tolerance {
                atol: 1e-5,
                rtol: 2e-5
            }
        );
    }

    /// Writes the launch sidecar `k.launch` of the fixtures in `dir`.
    fn sidecar(dir: &std::path::Path, text: &str) {
        std::fs::write(dir.join("k.launch"), text).expect("write");
    }

    #[test]
    fn a_refusal_counts_as_expected_only_when_the_sidecar_states_its_code() {
        let dir = tempfile::tempdir().expect("temp dir");
        let sub = dir.path().join("3.9");
        std::fs::create_dir_all(&sub).expect("mkdir");
        let ttgir = sub.join("k.sm_100a.ttgir");
        std::fs::write(&ttgir, "module {}\n").expect("write");
        let message = "import: [ttgir-unsupported-op] unsupported TTGIR operation `tt.atomic_store`";
        // No sidecar: an error.
        assert!(!refusal_is_expected(&ttgir, message));
        // A sidecar stating another code: still an error.
        sidecar(dir.path(), "// refused: ttgir-module ttg.num-ctas\n");
        assert!(!refusal_is_expected(&ttgir, message));
        // Stated (with a version qualifier): expected.
        sidecar(
            dir.path(),
            "// versions: 3.9\n// refused [3.9]: ttgir-unsupported-op `tt.atomic_store`\nlaunch {\n}\n",
        );
        assert!(refusal_is_expected(&ttgir, message));
        // Stated for another release or target only: still an error.
        for q in ["3.8", "3.6-3.8", "sm_90a", "3.9 sm_90a", "3.9-"] {
            sidecar(
                dir.path(),
                &format!("// refused [{q}]: ttgir-unsupported-op `tt.atomic_store`\nlaunch {{\n}}\n"),
            );
            assert!(!refusal_is_expected(&ttgir, message), "[{q}]");
        }
        sidecar(
            dir.path(),
            "// refused [3.8+ sm_100a]: ttgir-unsupported-op `tt.atomic_store`\nlaunch {\n}\n",
        );
        assert!(refusal_is_expected(&ttgir, message));
    }

    #[test]
    fn a_lowering_refusal_counts_as_expected_only_when_the_sidecar_states_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ttgir = dir.path().join("k.sm_100a.ttgir");
        std::fs::write(&ttgir, "module {}\n").expect("write");
        let message = "`tmem.store` is not supported by the PTX backend yet: a tensor-memory access whose register layout is not tmem32x32b";
        assert!(!ptx_refusal_is_expected(&ttgir, message));
        sidecar(
            dir.path(),
            "// ptx: ptx-unsupported a tensor-memory access whose register layout is not tmem32x32b\nlaunch {\n}\n",
        );
        assert!(ptx_refusal_is_expected(&ttgir, message));
        assert!(!ptx_refusal_is_expected(
            &ttgir,
            "`tcgen05.cp` is not supported by the PTX backend yet"
        ));
    }
}

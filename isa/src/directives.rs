//! The header directives of the file-driven tests: what a test file says it expects, written
//! in its leading comment lines.
//!
//! A test file (a `.tile` kernel of tests/fail, tests/pass or tests/verify, a Gluon fixture's
//! `.launch` sidecar) starts with `//` comment lines. Among them, a line of the form
//!
//! ```text
//! // KEY: VALUE
//! // KEY [QUALIFIER ...]: VALUE
//! ```
//!
//! is a directive when KEY is one of the keys the test knows (lowercase letters, digits and
//! `-`); the optional bracketed qualifiers restrict it (the Gluon corpus uses them for Triton
//! versions and targets: `// expect [3.8+]: ...`; each test says which qualifiers it accepts).
//! Every other comment line is prose. A line that looks like a directive (a lowercase word,
//! then `:`) with a key the test does not know is an error, so a misspelt directive fails
//! loudly instead of being ignored. The header ends at the first line that is not a comment.
//!
//! This is the one parser of test directives: tests/check_corpus.rs, tests/verify_rules.rs and
//! gluon/tests/gluon_corpus.rs read their files through it (as `bwsim_testkit::directives`), and
//! `bwsim gpu` reads the sidecars' `refused:`, `ptx:` and `gpu:` lines through it. Beside the
//! qualifier rule ([`Directive::applies_to`]) it knows nothing of what a directive means.

use std::fmt;

/// The keys of the Gluon fixtures' launch sidecars (tests/gluon/*.launch; their meaning is
/// gluon/tests/gluon_corpus.rs's, except `gpu:`, the tolerance `bwsim gpu` compares a fixture's
/// GPU run with, and `ptx: CODE TEXT`, the error with which the PTX backend refuses the fixture
/// (tests/gluon_cli.rs), which the corpus test accepts and leaves to them).
pub const GLUON_KEYS: &[&str] = &[
    "run",
    "check",
    "expect",
    "allow",
    "catalogue",
    "snapshot",
    "refused",
    "versions",
    "shapes",
    "runs",
    "schedules",
    "gpu",
    "ptx",
];

/// The keys of the checker's corpus (tests/fail, tests/pass: tests/check_corpus.rs).
pub const CHECK_KEYS: &[&str] = &[
    "expect",
    "target",
    "const",
    "schedules",
    "deny",
    "warn",
    "allow",
    "level",
];

/// The keys of the verifier's corpus (tests/verify: tests/verify_rules.rs).
pub const VERIFY_KEYS: &[&str] = &["expect", "target", "const"];

/// One directive line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    /// The key (`expect`).
    pub key: String,
    /// The bracketed qualifiers (`["3.8+", "sm_100a"]`), empty when there are none.
    pub qualifiers: Vec<String>,
    /// The text after the colon, trimmed.
    pub value: String,
    /// The 1-based line of the file.
    pub line: usize,
}

/// A malformed header: the line and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirectiveError {
    /// The 1-based line of the file.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for DirectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for DirectiveError {}

/// The directives of `text`'s leading comment lines, in file order. `known` lists the keys the
/// caller reads; `qualified` says whether they may carry `[...]` qualifiers.
pub fn parse(text: &str, known: &[&str], qualified: bool) -> Result<Vec<Directive>, DirectiveError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let Some(body) = raw.trim_start().strip_prefix("//") else {
            break;
        };
        let body = body.trim();
        let Some((head, value)) = body.split_once(':') else {
            continue;
        };
        let (key, qualifiers) = match head.split_once('[') {
            Some((k, q)) => {
                let Some(q) = q.trim_end().strip_suffix(']') else {
                    continue;
                };
                (k.trim(), q.split_whitespace().map(String::from).collect())
            }
            None => (head.trim(), Vec::new()),
        };
        let looks_like_a_key = !key.is_empty()
            && key.starts_with(|c: char| c.is_ascii_lowercase())
            && key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !looks_like_a_key {
            continue;
        }
        if !known.contains(&key) {
            return Err(DirectiveError {
                line,
                message: format!("unknown directive `{key}:` (known: {})", known.join(", ")),
            });
        }
        if !qualified && !qualifiers.is_empty() {
            return Err(DirectiveError {
                line,
                message: format!("`{key}:` takes no `[...]` qualifiers here"),
            });
        }
        out.push(Directive {
            key: key.to_string(),
            qualifiers,
            value: value.trim().to_string(),
            line,
        });
    }
    Ok(out)
}

impl Directive {
    /// Whether the directive applies to a file of Triton release line `version` (`(3, 8)`) and
    /// target `target` (`sm_100a`). Its qualifiers are version selectors (`3.8`, `3.8+`,
    /// `3.6-3.7`) and targets (`sm_100a`, `sm_90a`); it applies when `version` matches one of
    /// its selectors (if it has any) and `target` is one of its targets (if it has any). A
    /// qualifier that is neither is an error (naming the directive's line), so a misspelt
    /// qualifier cannot silently restrict a directive to nothing. This is the one qualifier
    /// rule: the Gluon corpus, the PTX test of the fixtures and `bwsim gpu` all ask it.
    pub fn applies_to(&self, version: Release, target: &str) -> Result<bool, String> {
        let (mut selectors, mut targets) = (Vec::new(), Vec::new());
        for q in &self.qualifiers {
            match versions(q) {
                Some(r) => selectors.push(r),
                None if crate::types::Target::from_name(q).is_some() => targets.push(q.as_str()),
                None => {
                    return Err(format!(
                        "line {}: `{q}` is neither a Triton version (3.8, 3.8+, 3.6-3.7) nor a target",
                        self.line
                    ))
                }
            }
        }
        Ok((selectors.is_empty()
            || selectors
                .iter()
                .any(|(lo, hi)| version >= *lo && hi.is_none_or(|hi| version <= hi)))
            && (targets.is_empty() || targets.contains(&target)))
    }
}

/// A Triton release line as (major, minor): `3.8` is `(3, 8)`.
pub type Release = (u32, u32);

/// A version selector's first release and last (`None`: no last).
pub type Selector = (Release, Option<Release>);

/// A release line, `3.8`.
pub fn release(s: &str) -> Option<Release> {
    let (a, b) = s.split_once('.')?;
    // Digits only: `u32`'s parser would also take a sign (`+3.8`).
    let number = |t: &str| {
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())
            .flatten()
    };
    Some((number(a)?, number(b)?))
}

/// A version selector: `3.8` (that release), `3.8+` (it and later), `3.6-3.7` (a range), as
/// (first, last) with `None` for no last.
pub fn versions(s: &str) -> Option<Selector> {
    if let Some(v) = s.strip_suffix('+') {
        return Some((release(v)?, None));
    }
    if let Some((a, b)) = s.split_once('-') {
        return Some((release(a)?, Some(release(b)?)));
    }
    let v = release(s)?;
    Some((v, Some(v)))
}

/// The value of the last directive `key`, if any.
pub fn last<'d>(directives: &'d [Directive], key: &str) -> Option<&'d Directive> {
    directives.iter().rev().find(|d| d.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: &[&str] = &["expect", "target", "run"];

    #[test]
    fn reads_keys_values_qualifiers_and_lines() {
        let text = "// A kernel: prose with a colon.\n// expect: race\n//  run [3.8+ sm_90a]:  reference  x \nlaunch {\n// expect: not a header line\n";
        let d = parse(text, KEYS, true).expect("parses");
        assert_eq!(
            d,
            vec![
                Directive {
                    key: "expect".into(),
                    qualifiers: vec![],
                    value: "race".into(),
                    line: 2
                },
                Directive {
                    key: "run".into(),
                    qualifiers: vec!["3.8+".into(), "sm_90a".into()],
                    value: "reference  x".into(),
                    line: 3
                },
            ]
        );
        assert_eq!(last(&d, "run").map(|d| d.line), Some(3));
        assert_eq!(last(&d, "target"), None);
    }

    #[test]
    fn unknown_keys_and_unwanted_qualifiers_are_errors() {
        let e = parse("// expcet: race\n", KEYS, true).expect_err("a typo");
        assert_eq!(e.line, 1);
        assert!(e.message.contains("`expcet:`"), "{e}");
        let e = parse("// ok\n// target [3.9]: sm_90a\n", KEYS, false).expect_err("qualified");
        assert_eq!(e.line, 2);
    }

    #[test]
    fn qualifiers_select_versions_and_targets() {
        let d = |q: &[&str]| Directive {
            key: "run".into(),
            qualifiers: q.iter().map(|s| s.to_string()).collect(),
            value: String::new(),
            line: 7,
        };
        // (qualifiers, version, target, applies)
        let cases: &[(&[&str], Release, &str, bool)] = &[
            (&[], (3, 6), "sm_90a", true),
            (&["3.8+"], (3, 8), "sm_90a", true),
            (&["3.8+"], (3, 9), "sm_90a", true),
            (&["3.8+"], (3, 10), "sm_100a", true),
            (&["3.8+"], (3, 7), "sm_90a", false),
            (&["3.6-3.7"], (3, 6), "sm_100a", true),
            (&["3.6-3.7"], (3, 7), "sm_100a", true),
            (&["3.6-3.7"], (3, 8), "sm_100a", false),
            (&["3.9"], (3, 9), "sm_100a", true),
            (&["3.9"], (3, 8), "sm_100a", false),
            (&["3.7", "3.9"], (3, 9), "sm_100a", true),
            (&["3.7", "3.9"], (3, 8), "sm_100a", false),
            (&["sm_90a"], (3, 6), "sm_90a", true),
            (&["sm_90a"], (3, 6), "sm_100a", false),
            (&["3.8+", "sm_90a"], (3, 9), "sm_90a", true),
            (&["3.8+", "sm_90a"], (3, 7), "sm_90a", false),
            (&["3.8+", "sm_90a"], (3, 9), "sm_100a", false),
            (&["3.9", "sm_100a"], (3, 9), "sm_90a", false),
            (&["3.9", "sm_100a"], (3, 9), "sm_100a", true),
        ];
        for (q, version, target, want) in cases {
            assert_eq!(
                d(q).applies_to(*version, target),
                Ok(*want),
                "{q:?} at {version:?} {target}"
            );
        }
        for bad in [&["sm90a"][..], &["3.8+", "hopper"], &["3.x"], &["+3.8"]] {
            let e = d(bad).applies_to((3, 9), "sm_90a").expect_err("a bad qualifier");
            assert!(e.starts_with("line 7: `"), "{e}");
            assert!(e.contains("neither a Triton version"), "{e}");
        }
        assert_eq!(versions("3.10+"), Some(((3, 10), None)));
        assert_eq!(versions("3.6-3.7"), Some(((3, 6), Some((3, 7)))));
        assert_eq!(versions("3.9"), Some(((3, 9), Some((3, 9)))));
        assert_eq!(versions("sm_90a"), None);
        assert_eq!(release("+3.8"), None);
    }

    #[test]
    fn prose_is_not_a_directive() {
        for prose in [
            "// Launch of k (3.8/k.py): one program",
            "// See: the tutorial",
            "// a sentence, then: a colon",
            "//",
        ] {
            assert_eq!(parse(prose, KEYS, true), Ok(vec![]), "{prose}");
        }
    }
}

//! Which Triton releases bwsim reads, how an import learns which one compiled a file, and the
//! one table of what differs between them.
//!
//! Triton does not print its version into TTGIR, so an import learns it from, in order:
//! 1. the file itself: a `// triton-version: X.Y.Z` line (tools/gluon_to_ttgir.py and the Python
//!    package write it first);
//! 2. Triton's cache metadata next to the file (`NAME.json` beside `NAME.ttgir`, as Triton's
//!    cache directory holds them, with its `"triton_version"`);
//! 3. the caller (`bwsim --triton-version X`; the Python package passes the installed Triton);
//! 4. failing all three, the syntax only some releases print ([`FEATURES`] rows of kind
//!    [`Kind::Syntax`]): the import reads the file as the earliest release consistent with what
//!    it prints, and says so in any error it reports.
//!
//! A stated version outside [`SUPPORTED`] is refused with one error that names the supported
//! releases; a file whose syntax contradicts its stated version (a 3.9-only attribute in a file
//! that says 3.6) is refused too, since reading it as either would be a guess.
//!
//! Everything version-dependent lives in [`FEATURES`]: the syntax forms, attributes and
//! operations that appeared, changed meaning or were dropped between 3.6 and 3.9, each with the
//! first (and last) release that prints it and what bwsim does with it. The importer asks this
//! table (through [`Version::has`] and [`feature`]) rather than comparing versions itself, and
//! docs/gluon.md's version table is generated from it (`cargo run -p bwsim-gluon --example
//! version_table`; a test keeps the two equal). Adding a release is a new [`Version`] variant,
//! its row in [`SUPPORTED`], and the rows of what it changed.

mod features;

pub use features::FEATURES;

use crate::lexer::{Tok, Token};
use bwsim_isa::Span;
use std::fmt;
use std::path::Path;

/// A supported Triton release line (TTGIR does not change between patch releases).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    V3_6,
    V3_7,
    V3_8,
    V3_9,
}

/// The supported releases, oldest first, with the patch release the project tests with.
pub const SUPPORTED: &[(Version, &str)] = &[
    (Version::V3_6, "3.6.0"),
    (Version::V3_7, "3.7.1"),
    (Version::V3_8, "3.8.0"),
    (Version::V3_9, "3.9.0"),
];

impl Version {
    /// Every supported version, oldest first.
    pub fn all() -> impl Iterator<Item = Version> {
        SUPPORTED.iter().map(|(v, _)| *v)
    }

    /// The newest supported version.
    pub fn newest() -> Version {
        SUPPORTED[SUPPORTED.len() - 1].0
    }

    /// `3.9`, the release line.
    pub fn minor(self) -> &'static str {
        match self {
            Version::V3_6 => "3.6",
            Version::V3_7 => "3.7",
            Version::V3_8 => "3.8",
            Version::V3_9 => "3.9",
        }
    }

    /// The patch release the project's fixtures and CI use (`3.7.1`).
    pub fn tested_release(self) -> &'static str {
        SUPPORTED.iter().find(|(v, _)| *v == self).map_or("", |(_, r)| r)
    }

    /// Whether this release prints (or accepts) `name`, a row of [`FEATURES`]. A name that is
    /// not in the table is printed by every release.
    pub fn has(self, name: &str) -> bool {
        feature(name).is_none_or(|f| f.in_release(self))
    }

    /// Parse a release number as Triton writes it: `3.9.0`, `3.9`, `3.9.0+git1234`, `3.9.0rc1`.
    /// A well-formed number of an unsupported release is [`VersionError::Unsupported`].
    pub fn parse(text: &str) -> Result<Version, VersionError> {
        let t = text.trim();
        let mut parts = t.split(|c: char| !c.is_ascii_digit());
        let major = parts.next().and_then(|p| p.parse::<u32>().ok());
        let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
        match (major, minor) {
            (Some(3), Some(6)) => Ok(Version::V3_6),
            (Some(3), Some(7)) => Ok(Version::V3_7),
            (Some(3), Some(8)) => Ok(Version::V3_8),
            (Some(3), Some(9)) => Ok(Version::V3_9),
            (Some(_), Some(_)) => Err(VersionError::Unsupported {
                version: t.to_string(),
            }),
            _ => Err(VersionError::Malformed { text: t.to_string() }),
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.minor())
    }
}

/// The supported releases, for messages: `3.6.0, 3.7.1, 3.8.0 and 3.9.0`.
pub fn supported_list() -> String {
    let names: Vec<&str> = SUPPORTED.iter().map(|(_, r)| *r).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => names.join(""),
    }
}

/// A version that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error(
        "Triton {version} is not supported: bwsim reads the TTGIR of Triton {}",
        supported_list()
    )]
    Unsupported { version: String },
    #[error("`{text}` is not a Triton release number (such as 3.9.0)")]
    Malformed { text: String },
}

/// How the import learned the version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// The `// triton-version:` line at this byte offset of the TTGIR.
    Stamp { offset: usize },
    /// Triton's cache metadata file next to the TTGIR.
    CacheMetadata { path: String },
    /// The caller said so (`--triton-version`, the Python package).
    Caller,
    /// Nothing states it: the earliest release that prints everything the file prints, and the
    /// syntax that decided it (none: nothing but what every release prints).
    Syntax { feature: Option<&'static str> },
}

/// The version an import reads a file as, and how it knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detected {
    pub version: Version,
    /// The release as stated (`3.9.0`), or the line's tested release when inferred.
    pub release: String,
    pub how: Provenance,
}

impl Detected {
    /// Whether the version was stated rather than inferred from the syntax.
    pub fn stated(&self) -> bool {
        !matches!(self.how, Provenance::Syntax { .. })
    }

    /// A phrase for messages: `Triton 3.9.0 (from the file's triton-version line)`.
    pub fn describe(&self) -> String {
        match &self.how {
            Provenance::Stamp { .. } => format!("Triton {} (the file's `// triton-version` line)", self.release),
            Provenance::CacheMetadata { path } => format!("Triton {} (Triton's cache metadata `{path}`)", self.release),
            Provenance::Caller => format!("Triton {} (as the caller said)", self.release),
            Provenance::Syntax { feature: Some(f) } => format!(
                "Triton {} or later (the file does not say which Triton compiled it; it prints {f}, which Triton \
                 prints from {} on)",
                self.version, self.version
            ),
            Provenance::Syntax { feature: None } => format!(
                "Triton {}-{} (the file does not say which Triton compiled it, and prints nothing that tells them \
                 apart)",
                Version::V3_6,
                Version::V3_7
            ),
        }
    }
}

/// What the `// triton-version:` line is called.
pub const STAMP: &str = "// triton-version:";

/// The stated version of a TTGIR text, if its first lines carry a `// triton-version:` line:
/// `(release text, byte offset of the release text)`.
pub fn stamp(text: &str) -> Option<(String, usize)> {
    let mut offset = 0;
    for line in text.split_inclusive('\n').take(8) {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix(STAMP) {
            let lead = line.len() - trimmed.len() + STAMP.len();
            let value = rest.trim();
            let at = offset + lead + (rest.len() - rest.trim_start().len());
            return Some((value.to_string(), at));
        }
        offset += line.len();
    }
    None
}

/// Triton's cache metadata next to a TTGIR file (`kernel.json` beside `kernel.ttgir`): its
/// `triton_version`, and the metadata's path.
pub fn cache_metadata(ttgir: &Path) -> Option<(String, String)> {
    let json = ttgir.with_extension("json");
    let text = std::fs::read_to_string(&json).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let release = v.get("triton_version")?.as_str()?.to_string();
    Some((release, json.display().to_string()))
}

/// The version-dependent forms a token stream prints, each with the span of its first
/// occurrence: the evidence [`detect`] weighs.
pub fn markers(toks: &[Token]) -> Vec<(&'static Feature, Span)> {
    let mut found: Vec<(&'static Feature, Span)> = Vec::new();
    let note = |name: &str, span: Span, found: &mut Vec<(&'static Feature, Span)>| {
        if let Some(f) = feature(name) {
            if !found.iter().any(|(g, _)| g.name == f.name) {
                found.push((f, span));
            }
        }
    };
    for (i, t) in toks.iter().enumerate() {
        let next = |k: usize| toks.get(i + k).map(|t| &t.tok);
        match &t.tok {
            Tok::Bang(b) if b == "tt.tensordesc" && next(1) == Some(&Tok::Punct("<")) => match next(2) {
                Some(Tok::Ident(w)) if w == "tensor" => note("tensordesc-tensor-wrapped", t.span, &mut found),
                Some(Tok::Shape(_)) => note("tensordesc-bare", t.span, &mut found),
                _ => {}
            },
            Tok::Value(v) if v.contains('.') => note("dotted-value-names", t.span, &mut found),
            Tok::Str(s) => note(s, t.span, &mut found),
            Tok::Ident(w) if w == "read_only" => note("store-wait-read-only", t.span, &mut found),
            Tok::Ident(w) if w == "ttng.tmem_subslice" => {
                let attrs = toks[i..].iter().take(12).map(|t| &t.tok);
                for a in attrs {
                    match a {
                        Tok::Ident(k) if k == "N" => note("tmem-subslice-n", t.span, &mut found),
                        Tok::Ident(k) if k == "offset" => note("tmem-subslice-dim", t.span, &mut found),
                        _ => {}
                    }
                }
            }
            Tok::Ident(w) if feature(w).is_some_and(|f| f.kind == Kind::Op && f.restricted()) => {
                note(w, t.span, &mut found)
            }
            _ => {}
        }
    }
    found
}

/// Why the version of a file cannot be settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetectError {
    pub message: String,
    /// Where the evidence is (the stamp, a form that contradicts it).
    pub span: Span,
    pub notes: Vec<String>,
}

/// What a caller knows about the version, besides the file's text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stated {
    /// `--triton-version`, or the Triton the Python package compiled with.
    pub caller: Option<String>,
    /// Triton's cache metadata next to the file: (release, path).
    pub metadata: Option<(String, String)>,
}

/// Settle the version of a TTGIR text (module doc: stamp, cache metadata, caller, syntax).
pub fn detect(text: &str, toks: &[Token], stated: &Stated) -> Result<Detected, DetectError> {
    let found = markers(toks);
    // The releases consistent with every form the file prints.
    let consistent: Vec<Version> = Version::all()
        .filter(|v| found.iter().all(|(f, _)| f.in_release(*v)))
        .collect();
    let claim = if let Some((release, at)) = stamp(text) {
        let span = Span::new(at, at + release.len());
        Some((release, Provenance::Stamp { offset: at }, span))
    } else if let Some((release, path)) = &stated.metadata {
        Some((
            release.clone(),
            Provenance::CacheMetadata { path: path.clone() },
            Span::DUMMY,
        ))
    } else {
        stated
            .caller
            .as_ref()
            .map(|r| (r.clone(), Provenance::Caller, Span::DUMMY))
    };
    let why_not = |v: Version| -> Vec<String> {
        found
            .iter()
            .filter(|(f, _)| !f.in_release(v))
            .map(|(f, _)| {
                format!(
                    "it prints {} ({}), which Triton {} does not print: {}",
                    f.name,
                    f.example,
                    v,
                    release_range(f)
                )
            })
            .collect()
    };
    match claim {
        Some((release, how, span)) => {
            let version = Version::parse(&release).map_err(|e| DetectError {
                message: e.to_string(),
                span,
                notes: vec![format!("the version comes from {}", describe_source(&how))],
            })?;
            if let Some(caller) = &stated.caller {
                if !matches!(how, Provenance::Caller) {
                    if let Ok(cv) = Version::parse(caller) {
                        if cv != version {
                            return Err(DetectError {
                                message: format!(
                                    "the file was compiled by Triton {release} ({}), but Triton {caller} was named \
                                     for it",
                                    describe_source(&how)
                                ),
                                span,
                                notes: vec!["name the Triton that compiled the file, or recompile it".into()],
                            });
                        }
                    }
                }
            }
            if !consistent.contains(&version) {
                let first = found
                    .iter()
                    .find(|(f, _)| !f.in_release(version))
                    .map_or(span, |(_, s)| *s);
                return Err(DetectError {
                    message: format!(
                        "this TTGIR does not read as Triton {release}'s, which {} says compiled it",
                        describe_source(&how)
                    ),
                    span: first,
                    notes: why_not(version),
                });
            }
            Ok(Detected {
                version,
                release,
                how,
            })
        }
        None => match consistent.first() {
            Some(v) => {
                let decided = found
                    .iter()
                    .filter(|(f, _)| f.since == *v && *v != Version::V3_6)
                    .map(|(f, _)| f.name)
                    .next();
                Ok(Detected {
                    version: *v,
                    release: v.tested_release().to_string(),
                    how: Provenance::Syntax { feature: decided },
                })
            }
            None => Err(DetectError {
                message:
                    "this TTGIR mixes forms of different Triton releases: no supported Triton prints all of \
                          them"
                        .into(),
                span: found.first().map_or(Span::DUMMY, |(_, s)| *s),
                notes: found
                    .iter()
                    .map(|(f, _)| format!("{} ({}): {}", f.name, f.example, release_range(f)))
                    .collect(),
            }),
        },
    }
}

fn describe_source(how: &Provenance) -> String {
    match how {
        Provenance::Stamp { .. } => "the file's `// triton-version` line".into(),
        Provenance::CacheMetadata { path } => format!("Triton's cache metadata `{path}`"),
        Provenance::Caller => "the caller".into(),
        Provenance::Syntax { .. } => "its syntax".into(),
    }
}

/// `printed by Triton 3.8 and later`, `printed by Triton 3.6 to 3.7`.
pub fn release_range(f: &Feature) -> String {
    match f.until {
        None => format!("printed by Triton {} and later", f.since),
        Some(u) if u == f.since => format!("printed by Triton {} only", f.since),
        Some(u) => format!("printed by Triton {} to {}", f.since, u),
    }
}

/// What a row of [`FEATURES`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// How the printer writes something every release has (a type, a name, an attribute).
    Syntax,
    /// An operation.
    Op,
    /// A Gluon API change that shows in the TTGIR only through the operations it emits.
    Api,
}

/// What bwsim does with a row of [`FEATURES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// Imported; the text says as what.
    Imported(&'static str),
    /// Refused with a diagnostic that names it and the version; the text says why.
    Refused(&'static str),
}

/// One thing that differs between releases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feature {
    /// The operation's name (`ttng.clc_try_cancel`) or a short name of the form
    /// (`tensordesc-without-tensor`).
    pub name: &'static str,
    pub kind: Kind,
    /// What it looks like, for the docs (`!tt.tensordesc<32x64xf32, #shared>`).
    pub example: &'static str,
    /// The first release that prints it.
    pub since: Version,
    /// The last release that prints it (None: every later supported release).
    pub until: Option<Version>,
    pub support: Support,
}

impl Feature {
    /// Whether some supported release does not print it (what makes it evidence of a version).
    pub fn restricted(&self) -> bool {
        self.since > Version::V3_6 || self.until.is_some()
    }

    /// Whether `v` prints it.
    pub fn in_release(&self, v: Version) -> bool {
        v >= self.since && self.until.is_none_or(|u| v <= u)
    }
}

/// The row named `name`.
pub fn feature(name: &str) -> Option<&'static Feature> {
    FEATURES.iter().find(|f| f.name == name)
}

/// docs/gluon.md's version table: every form and operation that some supported release does
/// not print, one column per release (`yes` where it prints it), and what bwsim does with it.
pub fn markdown_table() -> String {
    table(
        FEATURES.iter().filter(|f| f.restricted() || f.kind != Kind::Op),
        true,
    )
}

/// docs/gluon.md's operation coverage: every TTGIR operation Gluon kernels for sm_90a and
/// sm_100a emit, with what bwsim imports it as or why it refuses it.
pub fn coverage_table() -> String {
    table(FEATURES.iter().filter(|f| f.kind == Kind::Op), false)
}

fn table<'a>(rows: impl Iterator<Item = &'a Feature>, versions: bool) -> String {
    let mut out = String::from(if versions {
        "| TTGIR | kind |"
    } else {
        "| operation | releases |"
    });
    if versions {
        for (v, _) in SUPPORTED {
            out.push_str(&format!(" {v} |"));
        }
    }
    out.push_str(" bwsim |\n|---|---|");
    if versions {
        for _ in SUPPORTED {
            out.push_str("---|");
        }
    }
    out.push_str("---|\n");
    for f in rows {
        let what = match f.support {
            Support::Imported(s) => s.to_string(),
            Support::Refused(s) => format!("refused: {s}"),
        };
        if versions {
            let kind = match f.kind {
                Kind::Syntax => "syntax",
                Kind::Op => "operation",
                Kind::Api => "Gluon API",
            };
            out.push_str(&format!("| `{}` | {kind} |", f.example.replace('|', "\\|")));
            for (v, _) in SUPPORTED {
                out.push_str(if f.in_release(*v) { " yes |" } else { " - |" });
            }
        } else {
            let releases = match (f.since, f.until) {
                (Version::V3_6, None) => "all".to_string(),
                (s, None) => format!("{s}+"),
                (s, Some(u)) if s == u => s.to_string(),
                (s, Some(u)) => format!("{s}-{u}"),
            };
            out.push_str(&format!("| `{}` | {releases} |", f.name));
        }
        out.push_str(&format!(" {} |\n", what.replace('|', "\\|")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_release_numbers() {
        assert_eq!(Version::parse("3.9.0"), Ok(Version::V3_9));
        assert_eq!(Version::parse("3.7.0"), Ok(Version::V3_7));
        assert_eq!(Version::parse("3.8"), Ok(Version::V3_8));
        assert_eq!(Version::parse(" 3.6.0+gitabc123 "), Ok(Version::V3_6));
        assert_eq!(Version::parse("3.9.0rc1"), Ok(Version::V3_9));
        for s in ["3.5.1", "3.10.0", "4.0"] {
            assert!(
                matches!(Version::parse(s), Err(VersionError::Unsupported { .. })),
                "{s}"
            );
        }
        for s in ["three", "3"] {
            assert!(
                matches!(Version::parse(s), Err(VersionError::Malformed { .. })),
                "{s}"
            );
        }
    }

    #[test]
    fn unsupported_message_names_every_supported_release() {
        let m = Version::parse("3.5.0").unwrap_err().to_string();
        assert_eq!(
            m,
            "Triton 3.5.0 is not supported: bwsim reads the TTGIR of Triton 3.6.0, 3.7.1, 3.8.0 and 3.9.0"
        );
    }

    #[test]
    fn finds_the_stamp_in_the_first_lines() {
        let t = "// triton-version: 3.9.0\n#blocked = #ttg.blocked<{}>\n";
        assert_eq!(stamp(t), Some(("3.9.0".to_string(), 19)));
        assert_eq!(&t[19..24], "3.9.0");
        assert_eq!(
            stamp("#a = 1\n  // triton-version:   3.6.0  \n").map(|s| s.0),
            Some("3.6.0".into())
        );
        assert_eq!(stamp("#a = 1\n"), None);
    }

    #[test]
    fn table_rows_are_consistent() {
        for f in FEATURES {
            assert!(f.until.is_none_or(|u| u >= f.since), "{}", f.name);
            assert_eq!(
                FEATURES.iter().filter(|g| g.name == f.name).count(),
                1,
                "{} twice",
                f.name
            );
        }
        assert!(Version::V3_9.has("tensordesc-bare"));
        assert!(!Version::V3_7.has("tensordesc-bare"));
        assert!(Version::V3_7.has("tensordesc-tensor-wrapped"));
        assert!(!Version::V3_8.has("tensordesc-tensor-wrapped"));
        assert!(Version::V3_6.has("arith.addi"));
    }
}

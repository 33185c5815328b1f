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

/// Every version-dependent form bwsim knows, oldest first.
pub const FEATURES: &[Feature] = &[
    Feature {
        name: "tensordesc-tensor-wrapped",
        kind: Kind::Syntax,
        example: "!tt.tensordesc<tensor<32x64xf32, #shared>>",
        since: Version::V3_6,
        until: Some(Version::V3_7),
        support: Support::Imported("a `tensor_desc` parameter"),
    },
    Feature {
        name: "tensordesc-bare",
        kind: Kind::Syntax,
        example: "!tt.tensordesc<32x64xf32, #shared>",
        since: Version::V3_8,
        until: None,
        support: Support::Imported("a `tensor_desc` parameter"),
    },
    Feature {
        name: "dotted-value-names",
        kind: Kind::Syntax,
        example: "%a_desc.shape.0, %acc_state.phase_2",
        since: Version::V3_8,
        until: None,
        support: Support::Imported("names with `_` for `.`"),
    },
    Feature {
        name: "ttng.two-ctas",
        kind: Kind::Syntax,
        example: "module attributes {..., \"ttng.two-ctas\" = false}",
        since: Version::V3_9,
        until: None,
        support: Support::Imported("false: read; true: the kernel's MMAs use CTA pairs"),
    },
    Feature {
        name: "store-wait-read-only",
        kind: Kind::Syntax,
        example: "ttng.async_tma_store_wait {pendings = 0 : i32, read_only}",
        since: Version::V3_8,
        until: None,
        support: Support::Imported(
            "`tma.store_wait N`; without `read_only` from 3.8 on, a wait for the stores' global writes too \
             (3.6 and 3.7 print no attribute and wait for the reads only)",
        ),
    },
    Feature {
        name: "tmem-subslice-n",
        kind: Kind::Syntax,
        example: "ttng.tmem_subslice %t {N = 256 : i32}",
        since: Version::V3_6,
        until: Some(Version::V3_8),
        support: Support::Imported("the column slice `t[:, N:N+w]`"),
    },
    Feature {
        name: "tmem-subslice-dim",
        kind: Kind::Syntax,
        example: "ttng.tmem_subslice %t {dim = 0 : i32, offset = 128 : i32}",
        since: Version::V3_9,
        until: None,
        support: Support::Imported("the row (`dim = 0`) or column slice `t[128:128+h, :]`"),
    },
    Feature {
        name: "num-ctas",
        kind: Kind::Api,
        example: "module attributes {\"ttg.num-ctas\" = 2 : i32, ...}",
        since: Version::V3_6,
        until: None,
        support: Support::Refused(
            "cluster-level TTGIR (CGA layouts that split tensors and barriers over the CTAs of a cluster, multicast \
             TMA loads and MMA commits, two-CTA MMAs) is not imported yet; bwsim's `.tile` kernels express clusters \
             per CTA (`cluster = [2]`, `cta_group=2`)",
        ),
    },
    Feature {
        name: "tt.addptr",
        kind: Kind::Op,
        example: "tt.addptr",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("pointer arithmetic: a `ptr` parameter and a tile (or scalar) of element offsets"),
    },
    Feature {
        name: "tt.load",
        kind: Kind::Op,
        example: "tt.load",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`global.load PTR, OFFSETS[, mask, other]`; a scalar pointer: a one-element load"),
    },
    Feature {
        name: "tt.store",
        kind: Kind::Op,
        example: "tt.store",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`global.store PTR, OFFSETS, VALUE[, mask]`; a scalar pointer: a one-element store"),
    },
    Feature {
        name: "tt.atomic_rmw",
        kind: Kind::Op,
        example: "tt.atomic_rmw",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`global.atomic add|max|min|and|or|xor|xchg` (any ordering and scope)"),
    },
    Feature {
        name: "tt.atomic_cas",
        kind: Kind::Op,
        example: "tt.atomic_cas",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`global.atomic cas, ..., compare=C`"),
    },
    Feature {
        name: "tt.atomic_load",
        kind: Kind::Op,
        example: "tt.atomic_load",
        since: Version::V3_9,
        until: None,
        support: Support::Refused("acquire loads of global memory (`gl.atomic_load`) are not modelled: bwsim does not check global memory for races"),
    },
    Feature {
        name: "tt.atomic_store",
        kind: Kind::Op,
        example: "tt.atomic_store",
        since: Version::V3_9,
        until: None,
        support: Support::Refused("release stores to global memory (`gl.atomic_store`) are not modelled: bwsim does not check global memory for races"),
    },
    Feature {
        name: "tt.atomic_poll",
        kind: Kind::Op,
        example: "tt.atomic_poll",
        since: Version::V3_9,
        until: None,
        support: Support::Refused("spin-waits on global memory (`gl.atomic_poll`) are not modelled: bwsim does not check global memory for races"),
    },
    Feature {
        name: "tt.bitcast",
        kind: Kind::Op,
        example: "tt.bitcast",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("bit casts between element types have no bwsim operation yet"),
    },
    Feature {
        name: "tt.broadcast",
        kind: Kind::Op,
        example: "tt.broadcast",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`broadcast(x, shape)`"),
    },
    Feature {
        name: "tt.call",
        kind: Kind::Op,
        example: "tt.call",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("calls to `noinline` functions are not supported (inline them)"),
    },
    Feature {
        name: "tt.cat",
        kind: Kind::Op,
        example: "tt.cat",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("concatenation (`gl.cat`) has no bwsim operation yet"),
    },
    Feature {
        name: "tt.clampf",
        kind: Kind::Op,
        example: "tt.clampf",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("`gl.clamp` has no bwsim operation yet"),
    },
    Feature {
        name: "tt.descriptor_load",
        kind: Kind::Op,
        example: "tt.descriptor_load",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("tensor-descriptor loads into registers (`desc.load`) are Triton's, not Gluon's TMA: use `tma.async_load`"),
    },
    Feature {
        name: "tt.descriptor_store",
        kind: Kind::Op,
        example: "tt.descriptor_store",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("tensor-descriptor stores from registers (`desc.store`) are Triton's, not Gluon's TMA: use `tma.async_store`"),
    },
    Feature {
        name: "tt.descriptor_gather",
        kind: Kind::Op,
        example: "tt.descriptor_gather",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("register-level descriptor gathers are Triton's, not Gluon's: use `tma.async_gather`"),
    },
    Feature {
        name: "tt.descriptor_scatter",
        kind: Kind::Op,
        example: "tt.descriptor_scatter",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("register-level descriptor scatters are Triton's, not Gluon's: use `tma.async_scatter`"),
    },
    Feature {
        name: "tt.descriptor_reduce",
        kind: Kind::Op,
        example: "tt.descriptor_reduce",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("register-level descriptor reductions are Triton's, not Gluon's: use `tma.async_atomic_*`"),
    },
    Feature {
        name: "tt.make_tensor_descriptor",
        kind: Kind::Op,
        example: "tt.make_tensor_descriptor",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("descriptors built on the device (`gl.make_tensor_descriptor`) are not supported: pass a `TensorDescriptor` argument"),
    },
    Feature {
        name: "tt.elementwise_inline_asm",
        kind: Kind::Op,
        example: "tt.elementwise_inline_asm",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the elementwise expression the PTX snippet computes (docs/gluon.md, inline assembly)"),
    },
    Feature {
        name: "tt.expand_dims",
        kind: Kind::Op,
        example: "tt.expand_dims",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`expand_dims(x, axis)`"),
    },
    Feature {
        name: "tt.extern_elementwise",
        kind: Kind::Op,
        example: "tt.extern_elementwise",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("libdevice's exp, exp2, log, log2, sqrt, rsqrt, erf, floor, ceil, sin, cos (and `__nv_fast_` forms) as bwsim's math functions; other symbols refused"),
    },
    Feature {
        name: "tt.fp_to_fp",
        kind: Kind::Op,
        example: "tt.fp_to_fp",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("fp8 conversions with an explicit rounding (`x.to(dtype, fp_downcast_rounding=...)`) have no bwsim operation yet"),
    },
    Feature {
        name: "tt.gather",
        kind: Kind::Op,
        example: "tt.gather",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("register-tile gathers (`gl.gather`) have no bwsim operation yet"),
    },
    Feature {
        name: "tt.get_num_programs",
        kind: Kind::Op,
        example: "tt.get_num_programs",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`num_programs(axis)`"),
    },
    Feature {
        name: "tt.get_program_id",
        kind: Kind::Op,
        example: "tt.get_program_id",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`program_id(axis)`"),
    },
    Feature {
        name: "tt.histogram",
        kind: Kind::Op,
        example: "tt.histogram",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("`gl.histogram` has no bwsim operation yet"),
    },
    Feature {
        name: "tt.int_to_ptr",
        kind: Kind::Op,
        example: "tt.int_to_ptr",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("pointers made from integers are not supported"),
    },
    Feature {
        name: "tt.ptr_to_int",
        kind: Kind::Op,
        example: "tt.ptr_to_int",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("pointers turned into integers are not supported"),
    },
    Feature {
        name: "tt.join",
        kind: Kind::Op,
        example: "tt.join",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`join(a, b)`"),
    },
    Feature {
        name: "tt.split",
        kind: Kind::Op,
        example: "tt.split",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`let (a, b) = split(x)`"),
    },
    Feature {
        name: "tt.make_range",
        kind: Kind::Op,
        example: "tt.make_range",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`arange(start, end, layout)`"),
    },
    Feature {
        name: "tt.map_elementwise",
        kind: Kind::Op,
        example: "tt.map_elementwise",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the body's scalar operations on whole tiles (`pack = 1`; larger packs refused)"),
    },
    Feature {
        name: "tt.mulhiui",
        kind: Kind::Op,
        example: "tt.mulhiui",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("the high half of an unsigned product (`gl.umulhi`) has no bwsim operation yet"),
    },
    Feature {
        name: "tt.precise_divf",
        kind: Kind::Op,
        example: "tt.precise_divf",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("`gl.div_rn` has no bwsim operation yet (`/` is IEEE division)"),
    },
    Feature {
        name: "tt.precise_sqrt",
        kind: Kind::Op,
        example: "tt.precise_sqrt",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`sqrt(x)`"),
    },
    Feature {
        name: "tt.print",
        kind: Kind::Op,
        example: "tt.print",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("device printing (`gl.device_print`) is not supported: remove it, or run the kernel with `bwsim run --trace`"),
    },
    Feature {
        name: "tt.assert",
        kind: Kind::Op,
        example: "tt.assert",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("device assertions (`gl.device_assert`) are not supported"),
    },
    Feature {
        name: "tt.reduce",
        kind: Kind::Op,
        example: "tt.reduce",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`sum`, `prod`, `reduce_max`, `reduce_min`, `reduce_and/or/xor`, argmax/argmin pairs (the combiner is interpreted)"),
    },
    Feature {
        name: "tt.scan",
        kind: Kind::Op,
        example: "tt.scan",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`cumsum`, `cumprod`, `cummax`, `cummin` (`reverse=true` too)"),
    },
    Feature {
        name: "tt.reshape",
        kind: Kind::Op,
        example: "tt.reshape",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`reshape(x, shape)`"),
    },
    Feature {
        name: "tt.trans",
        kind: Kind::Op,
        example: "tt.trans",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`permute(x, order)`"),
    },
    Feature {
        name: "tt.splat",
        kind: Kind::Op,
        example: "tt.splat",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("a scalar operand of tile math, or `full(...)`"),
    },
    Feature {
        name: "tt.unsplat",
        kind: Kind::Op,
        example: "tt.unsplat",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the element of a one-element tile as a scalar (i1, i32, i64, f32)"),
    },
    Feature {
        name: "tt.return",
        kind: Kind::Op,
        example: "tt.return",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the end of the kernel"),
    },
    Feature {
        name: "ttg.async_commit_group",
        kind: Kind::Op,
        example: "ttg.async_commit_group",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`cp.async.commit`"),
    },
    Feature {
        name: "ttg.async_copy_global_to_local",
        kind: Kind::Op,
        example: "ttg.async_copy_global_to_local",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`cp.async DST, PTR, OFFSETS[, mask]`"),
    },
    Feature {
        name: "ttg.async_wait",
        kind: Kind::Op,
        example: "ttg.async_wait",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`cp.async.wait N`"),
    },
    Feature {
        name: "ttg.barrier",
        kind: Kind::Op,
        example: "ttg.barrier",
        since: Version::V3_7,
        until: None,
        support: Support::Imported("`bar.sync` (Gluon's `barrier()`)"),
    },
    Feature {
        name: "ttg.convert_layout",
        kind: Kind::Op,
        example: "ttg.convert_layout",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`convert_layout(x, layout)` (identity for a layout bwsim cannot name)"),
    },
    Feature {
        name: "ttg.fp4_to_fp",
        kind: Kind::Op,
        example: "ttg.fp4_to_fp",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("fp4 unpacking in registers (`gl.fp4_to_fp`) has no bwsim operation yet"),
    },
    Feature {
        name: "ttg.inline_asm",
        kind: Kind::Op,
        example: "ttg.inline_asm",
        since: Version::V3_9,
        until: None,
        support: Support::Refused("per-thread inline assembly (`gl.inline_asm`) binds operands to each thread's registers of the layout; bwsim models elementwise snippets only"),
    },
    Feature {
        name: "ttg.local_alloc",
        kind: Kind::Op,
        example: "ttg.local_alloc",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`smem.alloc` (+ `smem.store` of an initial value); i64 `[N, 1]`/`[1]` buffers: `mbar.alloc N`"),
    },
    Feature {
        name: "ttg.local_dealloc",
        kind: Kind::Op,
        example: "ttg.local_dealloc",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the scope's end"),
    },
    Feature {
        name: "ttg.local_load",
        kind: Kind::Op,
        example: "ttg.local_load",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`smem.load`"),
    },
    Feature {
        name: "ttg.local_store",
        kind: Kind::Op,
        example: "ttg.local_store",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`smem.store`"),
    },
    Feature {
        name: "ttg.local_gather",
        kind: Kind::Op,
        example: "ttg.local_gather",
        since: Version::V3_7,
        until: None,
        support: Support::Refused("shared-memory gather (`shared_memory_descriptor.gather`) has no bwsim operation yet"),
    },
    Feature {
        name: "ttg.local_scatter",
        kind: Kind::Op,
        example: "ttg.local_scatter",
        since: Version::V3_7,
        until: None,
        support: Support::Refused("shared-memory scatter (`shared_memory_descriptor.scatter`) has no bwsim operation yet"),
    },
    Feature {
        name: "ttg.local_atomic_scatter_rmw",
        kind: Kind::Op,
        example: "ttg.local_atomic_scatter_rmw",
        since: Version::V3_8,
        until: None,
        support: Support::Refused("shared-memory atomic scatter (`shared_memory_descriptor.atomic_scatter_*`) has no bwsim operation yet"),
    },
    Feature {
        name: "ttg.memdesc_index",
        kind: Kind::Op,
        example: "ttg.memdesc_index",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`bufs[i]`"),
    },
    Feature {
        name: "ttg.memdesc_subslice",
        kind: Kind::Op,
        example: "ttg.memdesc_subslice",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`buf[a:b, c:d]`"),
    },
    Feature {
        name: "ttg.memdesc_reinterpret",
        kind: Kind::Op,
        example: "ttg.memdesc_reinterpret",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`smem.reinterpret` / `tmem.reinterpret`"),
    },
    Feature {
        name: "ttg.memdesc_reshape",
        kind: Kind::Op,
        example: "ttg.memdesc_reshape",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`smem.reinterpret` with the result's layout (dense buffers; docs/gluon.md, reshaped views)"),
    },
    Feature {
        name: "ttg.memdesc_trans",
        kind: Kind::Op,
        example: "ttg.memdesc_trans",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`smem.reinterpret` of the transposed NVMMA view, or a linear view"),
    },
    Feature {
        name: "ttg.warp_specialize",
        kind: Kind::Op,
        example: "ttg.warp_specialize",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`warp_specialize { default { } worker NAME(warps=W, regs=R) { } }`"),
    },
    Feature {
        name: "ttg.warp_yield",
        kind: Kind::Op,
        example: "ttg.warp_yield",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the end of the default partition"),
    },
    Feature {
        name: "ttg.warp_return",
        kind: Kind::Op,
        example: "ttg.warp_return",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the end of a worker partition"),
    },
    Feature {
        name: "ttg.warp_id",
        kind: Kind::Op,
        example: "ttg.warp_id",
        since: Version::V3_7,
        until: None,
        support: Support::Refused("the warp index (`gl.warp_id()`) has no bwsim operation yet: bwsim runs a partition's warps as one"),
    },
    Feature {
        name: "ttng.arrive_barrier",
        kind: Kind::Op,
        example: "ttng.arrive_barrier",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`mbar.arrive BAR, count=N[, pred]`"),
    },
    Feature {
        name: "ttng.async_copy_mbarrier_arrive",
        kind: Kind::Op,
        example: "ttng.async_copy_mbarrier_arrive",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("`cp.async.mbarrier.arrive` (`async_copy.mbarrier_arrive`) is not modelled yet"),
    },
    Feature {
        name: "ttng.async_shared_store",
        kind: Kind::Op,
        example: "ttng.async_shared_store",
        since: Version::V3_8,
        until: None,
        support: Support::Refused("register data stored into the shared memory of a cluster's CTAs (`hopper.async_store`) is not modelled yet"),
    },
    Feature {
        name: "ttng.async_tma_copy_global_to_local",
        kind: Kind::Op,
        example: "ttng.async_tma_copy_global_to_local",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tma.load DESC[coords], DST, BAR[, pred]` (`multicast` refused: cluster kernels are not imported yet)"),
    },
    Feature {
        name: "ttng.async_tma_copy_local_to_global",
        kind: Kind::Op,
        example: "ttng.async_tma_copy_local_to_global",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tma.store DESC[coords], SRC`"),
    },
    Feature {
        name: "ttng.async_tma_gather",
        kind: Kind::Op,
        example: "ttng.async_tma_gather",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tma.gather`"),
    },
    Feature {
        name: "ttng.async_tma_scatter",
        kind: Kind::Op,
        example: "ttng.async_tma_scatter",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tma.scatter`"),
    },
    Feature {
        name: "ttng.async_tma_reduce",
        kind: Kind::Op,
        example: "ttng.async_tma_reduce",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("TMA reductions into global memory (`tma.async_atomic_add` and friends) are not modelled yet"),
    },
    Feature {
        name: "ttng.async_tma_store_wait",
        kind: Kind::Op,
        example: "ttng.async_tma_store_wait",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tma.store_wait N` (`read_only`: see the syntax rows)"),
    },
    Feature {
        name: "ttng.barrier_expect",
        kind: Kind::Op,
        example: "ttng.barrier_expect",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`mbar.expect BAR, BYTES[, pred]`"),
    },
    Feature {
        name: "ttng.wait_barrier",
        kind: Kind::Op,
        example: "ttng.wait_barrier",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`mbar.wait BAR, PHASE` (in an `if` when predicated)"),
    },
    Feature {
        name: "ttng.init_barrier",
        kind: Kind::Op,
        example: "ttng.init_barrier",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`mbar.init BAR, COUNT`"),
    },
    Feature {
        name: "ttng.inval_barrier",
        kind: Kind::Op,
        example: "ttng.inval_barrier",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`mbar.invalidate BAR`"),
    },
    Feature {
        name: "ttng.clc_try_cancel",
        kind: Kind::Op,
        example: "ttng.clc_try_cancel",
        since: Version::V3_8,
        until: None,
        support: Support::Imported("`clc.try_cancel RESULT, BAR[, multicast=true]` (cancels the next launch not started; a response that cancels nothing once every CTA has started; 16 bytes complete on BAR, in every CTA of the cluster with multicast)"),
    },
    Feature {
        name: "ttng.clc_load_result",
        kind: Kind::Op,
        example: "ttng.clc_load_result",
        since: Version::V3_8,
        until: None,
        support: Support::Imported("`let (canceled, x, y, z) = clc.query RESULT` (a read of the response)"),
    },
    Feature {
        name: "ttng.clc_is_canceled",
        kind: Kind::Op,
        example: "ttng.clc_is_canceled",
        since: Version::V3_8,
        until: None,
        support: Support::Imported("`clc.query`'s `canceled`"),
    },
    Feature {
        name: "ttng.clc_get_program_id",
        kind: Kind::Op,
        example: "ttng.clc_get_program_id",
        since: Version::V3_8,
        until: None,
        support: Support::Imported("`clc.query`'s `x`, `y` or `z`"),
    },
    Feature {
        name: "ttng.cluster_arrive",
        kind: Kind::Op,
        example: "ttng.cluster_arrive",
        since: Version::V3_6,
        until: Some(Version::V3_8),
        support: Support::Refused("split cluster barriers of cluster kernels are not imported yet"),
    },
    Feature {
        name: "ttng.cluster_wait",
        kind: Kind::Op,
        example: "ttng.cluster_wait",
        since: Version::V3_6,
        until: Some(Version::V3_8),
        support: Support::Refused("split cluster barriers of cluster kernels are not imported yet"),
    },
    Feature {
        name: "ttng.cluster_barrier",
        kind: Kind::Op,
        example: "ttng.cluster_barrier",
        since: Version::V3_8,
        until: None,
        support: Support::Refused("cluster barriers of cluster kernels are not imported yet"),
    },
    Feature {
        name: "ttng.fence_async_shared",
        kind: Kind::Op,
        example: "ttng.fence_async_shared",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`fence.async_shared`"),
    },
    Feature {
        name: "ttng.fence_mbarrier_init_release_cluster",
        kind: Kind::Op,
        example: "ttng.fence_mbarrier_init_release_cluster",
        since: Version::V3_7,
        until: None,
        support: Support::Imported("`fence.mbarrier_init`"),
    },
    Feature {
        name: "ttng.packed_arith",
        kind: Kind::Op,
        example: "ttng.packed_arith",
        since: Version::V3_8,
        until: None,
        support: Support::Imported("add, sub, mul, fma of f32/f16/bf16 (Gluon's add2, sub2, mul2, fma2) as the elementwise `a + b`, `a - b`, `a * b`, `fma(a, b, c)`; fp8/fp4 forms and min2/max2 refused"),
    },
    Feature {
        name: "ttng.reinterpret_tensor_descriptor",
        kind: Kind::Op,
        example: "ttng.reinterpret_tensor_descriptor",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("descriptors passed as raw pointers are not supported: pass a `TensorDescriptor` argument"),
    },
    Feature {
        name: "ttng.tensormap_create",
        kind: Kind::Op,
        example: "ttng.tensormap_create",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("tensor maps built on the device are not supported: pass a `TensorDescriptor` argument"),
    },
    Feature {
        name: "ttng.tensormap_fenceproxy_acquire",
        kind: Kind::Op,
        example: "ttng.tensormap_fenceproxy_acquire",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("tensor maps built on the device are not supported"),
    },
    Feature {
        name: "ttng.tc_gen5_mma",
        kind: Kind::Op,
        example: "ttng.tc_gen5_mma",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tcgen05.mma A, B, ACC, use_acc=U` (then `tcgen05.commit` per barrier)"),
    },
    Feature {
        name: "ttng.tc_gen5_mma_scaled",
        kind: Kind::Op,
        example: "ttng.tc_gen5_mma_scaled",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tcgen05.mma_scaled A, B, ACC, A_SCALE, B_SCALE, use_acc=U`"),
    },
    Feature {
        name: "ttng.tc_gen5_commit",
        kind: Kind::Op,
        example: "ttng.tc_gen5_commit",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tcgen05.commit BAR[, pred]`"),
    },
    Feature {
        name: "ttng.tmem_alloc",
        kind: Kind::Op,
        example: "ttng.tmem_alloc",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tmem.alloc DTYPE[..], block=[M, N], col_stride=S` (`scales=true` for scale factors)"),
    },
    Feature {
        name: "ttng.tmem_copy",
        kind: Kind::Op,
        example: "ttng.tmem_copy",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tcgen05.cp SRC, DST`"),
    },
    Feature {
        name: "ttng.tmem_load",
        kind: Kind::Op,
        example: "ttng.tmem_load",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tmem.load` (any register layout a warp can load with tcgen05.ld)"),
    },
    Feature {
        name: "ttng.tmem_store",
        kind: Kind::Op,
        example: "ttng.tmem_store",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tmem.store`"),
    },
    Feature {
        name: "ttng.tmem_subslice",
        kind: Kind::Op,
        example: "ttng.tmem_subslice",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`tm[:, n:n+w]` or `tm[m:m+h, :]`"),
    },
    Feature {
        name: "ttng.warp_group_dot",
        kind: Kind::Op,
        example: "ttng.warp_group_dot",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`wgmma A, B, ACC` (+ `wgmma.wait 0` when synchronous)"),
    },
    Feature {
        name: "ttng.warp_group_dot_wait",
        kind: Kind::Op,
        example: "ttng.warp_group_dot_wait",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`wgmma.wait N`"),
    },
    Feature {
        name: "gpu.barrier",
        kind: Kind::Op,
        example: "gpu.barrier",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`bar.sync` (Gluon's `thread_barrier()`, which 3.7 renamed `barrier()`)"),
    },
    Feature {
        name: "scf.for",
        kind: Kind::Op,
        example: "scf.for",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`for` (iteration arguments as variables)"),
    },
    Feature {
        name: "scf.if",
        kind: Kind::Op,
        example: "scf.if",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`if` (results as variables)"),
    },
    Feature {
        name: "scf.while",
        kind: Kind::Op,
        example: "scf.while",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("`while cond { }`"),
    },
    Feature {
        name: "scf.yield",
        kind: Kind::Op,
        example: "scf.yield",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the end of a loop or `if` body"),
    },
    Feature {
        name: "scf.condition",
        kind: Kind::Op,
        example: "scf.condition",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("a `while` loop's condition"),
    },
    Feature {
        name: "arith.addi",
        kind: Kind::Op,
        example: "arith.addi",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.subi",
        kind: Kind::Op,
        example: "arith.subi",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.muli",
        kind: Kind::Op,
        example: "arith.muli",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.divsi",
        kind: Kind::Op,
        example: "arith.divsi",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.remsi",
        kind: Kind::Op,
        example: "arith.remsi",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.andi",
        kind: Kind::Op,
        example: "arith.andi",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.ori",
        kind: Kind::Op,
        example: "arith.ori",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.xori",
        kind: Kind::Op,
        example: "arith.xori",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.shli",
        kind: Kind::Op,
        example: "arith.shli",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.shrsi",
        kind: Kind::Op,
        example: "arith.shrsi",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.addf",
        kind: Kind::Op,
        example: "arith.addf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.subf",
        kind: Kind::Op,
        example: "arith.subf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.mulf",
        kind: Kind::Op,
        example: "arith.mulf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.divf",
        kind: Kind::Op,
        example: "arith.divf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.remf",
        kind: Kind::Op,
        example: "arith.remf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.minsi",
        kind: Kind::Op,
        example: "arith.minsi",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.maxsi",
        kind: Kind::Op,
        example: "arith.maxsi",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.minimumf",
        kind: Kind::Op,
        example: "arith.minimumf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.maximumf",
        kind: Kind::Op,
        example: "arith.maximumf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.minnumf",
        kind: Kind::Op,
        example: "arith.minnumf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.maxnumf",
        kind: Kind::Op,
        example: "arith.maxnumf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.cmpi",
        kind: Kind::Op,
        example: "arith.cmpi",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.cmpf",
        kind: Kind::Op,
        example: "arith.cmpf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.select",
        kind: Kind::Op,
        example: "arith.select",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.negf",
        kind: Kind::Op,
        example: "arith.negf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.extsi",
        kind: Kind::Op,
        example: "arith.extsi",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.trunci",
        kind: Kind::Op,
        example: "arith.trunci",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.sitofp",
        kind: Kind::Op,
        example: "arith.sitofp",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.fptosi",
        kind: Kind::Op,
        example: "arith.fptosi",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.extf",
        kind: Kind::Op,
        example: "arith.extf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.truncf",
        kind: Kind::Op,
        example: "arith.truncf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.index_cast",
        kind: Kind::Op,
        example: "arith.index_cast",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.divui",
        kind: Kind::Op,
        example: "arith.divui",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.remui",
        kind: Kind::Op,
        example: "arith.remui",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.shrui",
        kind: Kind::Op,
        example: "arith.shrui",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.minui",
        kind: Kind::Op,
        example: "arith.minui",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.maxui",
        kind: Kind::Op,
        example: "arith.maxui",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.extui",
        kind: Kind::Op,
        example: "arith.extui",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.uitofp",
        kind: Kind::Op,
        example: "arith.uitofp",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.constant",
        kind: Kind::Op,
        example: "arith.constant",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("the matching bwsim expression (unsigned forms on zero-extended operands, exactly)"),
    },
    Feature {
        name: "arith.ceildivsi",
        kind: Kind::Op,
        example: "arith.ceildivsi",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("rounding-mode divisions have no bwsim equivalent (write the rounding with `/`, `%` and `where`)"),
    },
    Feature {
        name: "arith.floordivsi",
        kind: Kind::Op,
        example: "arith.floordivsi",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("rounding-mode divisions have no bwsim equivalent (write the rounding with `/`, `%` and `where`)"),
    },
    Feature {
        name: "arith.ceildivui",
        kind: Kind::Op,
        example: "arith.ceildivui",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("rounding-mode divisions have no bwsim equivalent (write the rounding with `/`, `%` and `where`)"),
    },
    Feature {
        name: "math.exp",
        kind: Kind::Op,
        example: "math.exp",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.exp2",
        kind: Kind::Op,
        example: "math.exp2",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.log",
        kind: Kind::Op,
        example: "math.log",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.log2",
        kind: Kind::Op,
        example: "math.log2",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.sqrt",
        kind: Kind::Op,
        example: "math.sqrt",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.rsqrt",
        kind: Kind::Op,
        example: "math.rsqrt",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.erf",
        kind: Kind::Op,
        example: "math.erf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.floor",
        kind: Kind::Op,
        example: "math.floor",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.ceil",
        kind: Kind::Op,
        example: "math.ceil",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.sin",
        kind: Kind::Op,
        example: "math.sin",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.cos",
        kind: Kind::Op,
        example: "math.cos",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.absf",
        kind: Kind::Op,
        example: "math.absf",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.absi",
        kind: Kind::Op,
        example: "math.absi",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.fma",
        kind: Kind::Op,
        example: "math.fma",
        since: Version::V3_6,
        until: None,
        support: Support::Imported("bwsim's math function of the same name (exact in the simulator, Triton's `.approx` forms in PTX)"),
    },
    Feature {
        name: "math.tanh",
        kind: Kind::Op,
        example: "math.tanh",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("bwsim's math functions are exp, exp2, log, log2, sqrt, rsqrt, erf, floor, ceil, sin and cos"),
    },
    Feature {
        name: "math.exp10",
        kind: Kind::Op,
        example: "math.exp10",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("bwsim's math functions are exp, exp2, log, log2, sqrt, rsqrt, erf, floor, ceil, sin and cos"),
    },
    Feature {
        name: "math.log10",
        kind: Kind::Op,
        example: "math.log10",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("bwsim's math functions are exp, exp2, log, log2, sqrt, rsqrt, erf, floor, ceil, sin and cos"),
    },
    Feature {
        name: "math.log1p",
        kind: Kind::Op,
        example: "math.log1p",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("bwsim's math functions are exp, exp2, log, log2, sqrt, rsqrt, erf, floor, ceil, sin and cos"),
    },
    Feature {
        name: "math.expm1",
        kind: Kind::Op,
        example: "math.expm1",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("bwsim's math functions are exp, exp2, log, log2, sqrt, rsqrt, erf, floor, ceil, sin and cos"),
    },
    Feature {
        name: "math.tan",
        kind: Kind::Op,
        example: "math.tan",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("bwsim's math functions are exp, exp2, log, log2, sqrt, rsqrt, erf, floor, ceil, sin and cos"),
    },
    Feature {
        name: "math.atan",
        kind: Kind::Op,
        example: "math.atan",
        since: Version::V3_6,
        until: None,
        support: Support::Refused("bwsim's math functions are exp, exp2, log, log2, sqrt, rsqrt, erf, floor, ceil, sin and cos"),
    },
];

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
        assert!(matches!(
            Version::parse("3.5.1"),
            Err(VersionError::Unsupported { .. })
        ));
        assert!(matches!(
            Version::parse("3.10.0"),
            Err(VersionError::Unsupported { .. })
        ));
        assert!(matches!(
            Version::parse("4.0"),
            Err(VersionError::Unsupported { .. })
        ));
        assert!(matches!(
            Version::parse("three"),
            Err(VersionError::Malformed { .. })
        ));
        assert!(matches!(Version::parse("3"), Err(VersionError::Malformed { .. })));
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

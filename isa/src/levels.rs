//! Diagnostic levels as rustc and clippy have them: every code has a default level in the
//! code table ([`Code::default_level`]); `--warn CODE`, `--allow CODE`, `--deny CODE` and
//! `--deny warnings` change them for one command.
//!
//! Only *lints* (codes whose table level is `deny` or `warn`: findings that do not stop the
//! stage) can be made warnings or allowed. Any code can be denied: `--deny ptxas` makes
//! ptxas's warnings errors, `--deny warnings` every warning. [`Levels::apply`] gives one
//! diagnostic its level: it keeps it (as an error or a warning) or drops it (allowed).

use crate::codes::{Code, Level, UnknownCode};
use crate::diag::{Diagnostic, Severity};
use std::collections::BTreeMap;

/// The name `--deny` takes for every warning, as rustc's `-D warnings`.
pub const WARNINGS: &str = "warnings";

/// The levels the flags of one command set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Levels {
    /// The codes the flags name, with the level each sets.
    set: BTreeMap<Code, Level>,
    /// `--deny warnings`: every warning left is an error.
    deny_warnings: bool,
}

/// A level flag that names no code, or one that cannot take the level.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LevelError {
    #[error(transparent)]
    Unknown(#[from] UnknownCode),
    /// `--warn`/`--allow` of a code that stops its stage.
    #[error(
        "`--{flag} {code}`: `{code}` is a hard error (the stage cannot go on after it), not a lint; only the \
         codes whose level is `deny` or `warn` in `bwsim verify --rules` can be made warnings or allowed"
    )]
    Hard { code: Code, flag: &'static str },
    /// One code named by two flags that set different levels.
    #[error("`{code}` is named by both `--{first}` and `--{second}`; name each code once")]
    Conflict {
        code: Code,
        first: &'static str,
        second: &'static str,
    },
    /// `warnings` given to `--warn` or `--allow`.
    #[error("`--{flag} warnings`: only `--deny warnings` exists (it makes every warning an error)")]
    Warnings { flag: &'static str },
}

/// The flag that sets `level`.
pub fn flag_of(level: Level) -> &'static str {
    match level {
        Level::Allow => "allow",
        Level::Warning => "warn",
        Level::Error => "deny",
    }
}

impl Levels {
    /// Every code at its default level.
    pub fn new() -> Levels {
        Levels::default()
    }

    /// The levels of `--deny`, `--warn` and `--allow` (code names, or `warnings` for `--deny`).
    pub fn from_flags<S: AsRef<str>>(deny: &[S], warn: &[S], allow: &[S]) -> Result<Levels, LevelError> {
        let mut l = Levels::new();
        for (names, level) in [
            (deny, Level::Error),
            (warn, Level::Warning),
            (allow, Level::Allow),
        ] {
            for n in names {
                l.set(n.as_ref(), level)?;
            }
        }
        Ok(l)
    }

    /// Set the level of the code `name` (or, with [`Level::Error`], of every warning when
    /// `name` is `warnings`).
    pub fn set(&mut self, name: &str, level: Level) -> Result<(), LevelError> {
        let flag = flag_of(level);
        if name == WARNINGS {
            return match level {
                Level::Error => {
                    self.deny_warnings = true;
                    Ok(())
                }
                _ => Err(LevelError::Warnings { flag }),
            };
        }
        let code: Code = name.parse()?;
        if level != Level::Error && !code.is_lint() {
            return Err(LevelError::Hard { code, flag });
        }
        match self.set.insert(code, level) {
            Some(old) if old != level => Err(LevelError::Conflict {
                code,
                first: flag_of(old),
                second: flag,
            }),
            _ => Ok(()),
        }
    }

    /// Whether `--deny warnings` was given.
    pub fn denies_warnings(&self) -> bool {
        self.deny_warnings
    }

    /// The codes the flags set to `level`, in table order.
    pub fn named(&self, level: Level) -> Vec<Code> {
        self.set
            .iter()
            .filter(|(_, &l)| l == level)
            .map(|(&c, _)| c)
            .collect()
    }

    /// The level of a diagnostic of `code` that its emitter gave `emitted`.
    pub fn level(&self, code: Code, emitted: Level) -> Level {
        let l = match self.set.get(&code) {
            Some(&l) => l,
            None => emitted,
        };
        if l == Level::Warning && self.deny_warnings {
            Level::Error
        } else {
            l
        }
    }

    /// `d` at its level: `None` when allowed; notes are never changed.
    pub fn apply(&self, mut d: Diagnostic) -> Option<Diagnostic> {
        let Some(emitted) = d.severity.level() else {
            return Some(d);
        };
        match self.level(d.code, emitted) {
            Level::Allow => None,
            Level::Warning => {
                d.severity = Severity::Warning;
                Some(d)
            }
            Level::Error => {
                d.severity = Severity::Error;
                Some(d)
            }
        }
    }

    /// The diagnostics at their levels, the allowed ones dropped.
    pub fn apply_all(&self, diags: impl IntoIterator<Item = Diagnostic>) -> Vec<Diagnostic> {
        diags.into_iter().filter_map(|d| self.apply(d)).collect()
    }

    /// The flags as JSON output writes them: `{"deny": [...], "warn": [...], "allow": [...],
    /// "deny_warnings": bool}`.
    pub fn to_json(&self) -> serde_json::Value {
        let names = |l: Level| self.named(l).iter().map(|c| c.name()).collect::<Vec<_>>();
        serde_json::json!({
            "deny": names(Level::Error),
            "warn": names(Level::Warning),
            "allow": names(Level::Allow),
            "deny_warnings": self.deny_warnings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::Span;

    fn d(code: Code) -> Diagnostic {
        Diagnostic::new(code, "m", Span::DUMMY, "")
    }

    #[test]
    fn defaults_come_from_the_table() {
        let l = Levels::new();
        assert_eq!(
            l.apply(d(Code::UninitRead)).map(|d| d.severity),
            Some(Severity::Warning)
        );
        assert_eq!(l.apply(d(Code::Race)).map(|d| d.severity), Some(Severity::Error));
    }

    #[test]
    fn flags_change_lints() {
        let l = Levels::from_flags(&["uninit-read"], &["race"], &["tmem-leak"]).expect("valid flags");
        assert_eq!(
            l.apply(d(Code::UninitRead)).map(|d| d.severity),
            Some(Severity::Error)
        );
        assert_eq!(
            l.apply(d(Code::Race)).map(|d| d.severity),
            Some(Severity::Warning)
        );
        assert_eq!(l.apply(d(Code::TmemLeak)), None);
        let w = Levels::from_flags(&["warnings"], &[], &[]).expect("valid flags");
        assert_eq!(
            w.apply(d(Code::UninitRead)).map(|d| d.severity),
            Some(Severity::Error)
        );
        let ptxas = Diagnostic::warning(Code::Ptxas, "m", Span::DUMMY, "");
        assert_eq!(w.apply(ptxas).map(|d| d.severity), Some(Severity::Error));
    }

    #[test]
    fn bad_flags_say_why() {
        let e = |r: Result<Levels, LevelError>| r.expect_err("refused").to_string();
        assert!(e(Levels::from_flags(&[], &["deadlock"], &[])).contains("hard error"));
        assert!(e(Levels::from_flags(&[], &[], &["no-such"])).contains("not a diagnostic code"));
        assert!(e(Levels::from_flags(&["race"], &[], &["race"])).contains("both `--deny` and `--allow`"));
        assert!(e(Levels::from_flags(&[], &["warnings"], &[])).contains("only `--deny warnings`"));
        assert!(Levels::from_flags(&["deadlock"], &[], &[]).is_ok());
    }
}

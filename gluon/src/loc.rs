//! MLIR locations: `loc("file.py":12:5)`, names (`loc("x"(#loc3))`), call sites
//! (`loc(callsite(#callee at #caller))`), fused locations and `#locN` aliases, resolved to the
//! Python frame a diagnostic should point at.
//!
//! Gluon inlines every `@gluon.jit` function, so an operation's location is a call-site chain:
//! the line inside the helper, then the line that called it, and so on out to the kernel. The
//! frame bwsim reports is the innermost one in the user's code: frames inside the Triton
//! package (`gl.cdiv` lives in `triton/language/standard.py`) are skipped in favour of the
//! user's line that called them.

use crate::lexer::{Tok, Token};
use std::collections::HashMap;

/// A file position: 1-based line, 0-based column, as Triton writes them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub file: String,
    pub line: u32,
    pub col: u32,
}

/// Whether a file belongs to the Triton package rather than to the user.
pub fn is_library(file: &str) -> bool {
    file.starts_with("<triton>")
        || file.contains("/triton/language/")
        || file.contains("/triton/experimental/")
        || file.contains("/site-packages/triton/")
}

/// Resolves locations against a module's `#locN` aliases.
pub struct Locs<'m> {
    aliases: &'m HashMap<String, Vec<Token>>,
}

impl<'m> Locs<'m> {
    pub fn new(aliases: &'m HashMap<String, Vec<Token>>) -> Locs<'m> {
        Locs { aliases }
    }

    /// The frames of a location, innermost first (the tokens inside `loc( )`).
    pub fn frames(&self, toks: &[Token]) -> Vec<Frame> {
        let mut out = Vec::new();
        let mut pos = 0;
        self.walk(toks, &mut pos, &mut out, 0);
        out
    }

    /// The frame to report: the innermost outside the Triton package, else the innermost.
    pub fn user_frame(&self, toks: &[Token]) -> Option<Frame> {
        let frames = self.frames(toks);
        frames
            .iter()
            .find(|f| !is_library(&f.file))
            .or(frames.first())
            .cloned()
    }

    /// The name of a `loc("name"(...))` location (Triton names values after Python variables).
    pub fn name(&self, toks: &[Token]) -> Option<String> {
        match (toks.first().map(|t| &t.tok), toks.get(1).map(|t| &t.tok)) {
            (Some(Tok::Str(s)), Some(Tok::Punct("("))) => Some(s.clone()),
            (Some(Tok::Hash(a)), None) => {
                let inner = self.aliases.get(a)?;
                self.name(inner)
            }
            _ => None,
        }
    }

    fn walk(&self, toks: &[Token], pos: &mut usize, out: &mut Vec<Frame>, depth: usize) {
        if depth > 64 {
            return;
        }
        let tok = |i: usize| toks.get(i).map(|t| &t.tok);
        match tok(*pos) {
            Some(Tok::Hash(a)) => {
                *pos += 1;
                if let Some(inner) = self.aliases.get(a) {
                    let mut p = 0;
                    self.walk(inner, &mut p, out, depth + 1);
                }
            }
            Some(Tok::Str(s)) => {
                *pos += 1;
                match (tok(*pos), tok(*pos + 1), tok(*pos + 2), tok(*pos + 3)) {
                    // "file":line:col
                    (Some(Tok::Punct(":")), Some(Tok::Int(l)), Some(Tok::Punct(":")), Some(Tok::Int(c))) => {
                        out.push(Frame {
                            file: s.clone(),
                            line: (*l).clamp(0, u32::MAX as i64) as u32,
                            col: (*c).clamp(0, u32::MAX as i64) as u32,
                        });
                        *pos += 4;
                        // `to line:col` of a range.
                        if matches!(tok(*pos), Some(Tok::Ident(w)) if w == "to") {
                            *pos += 1;
                            while matches!(tok(*pos), Some(Tok::Int(_) | Tok::Punct(":"))) {
                                *pos += 1;
                            }
                        }
                    }
                    // "name"(loc)
                    (Some(Tok::Punct("(")), ..) => {
                        *pos += 1;
                        self.walk(toks, pos, out, depth + 1);
                        if matches!(tok(*pos), Some(Tok::Punct(")"))) {
                            *pos += 1;
                        }
                    }
                    _ => {}
                }
            }
            Some(Tok::Ident(w)) if w == "callsite" => {
                *pos += 1;
                if matches!(tok(*pos), Some(Tok::Punct("("))) {
                    *pos += 1;
                    self.walk(toks, pos, out, depth + 1);
                    if matches!(tok(*pos), Some(Tok::Ident(w)) if w == "at") {
                        *pos += 1;
                        self.walk(toks, pos, out, depth + 1);
                    }
                    if matches!(tok(*pos), Some(Tok::Punct(")"))) {
                        *pos += 1;
                    }
                }
            }
            Some(Tok::Ident(w)) if w == "fused" => {
                *pos += 1;
                if matches!(tok(*pos), Some(Tok::Punct("<"))) {
                    let mut d = 0;
                    while let Some(t) = tok(*pos) {
                        *pos += 1;
                        match t {
                            Tok::Punct("<") => d += 1,
                            Tok::Punct(">") => {
                                d -= 1;
                                if d == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                    }
                }
                if matches!(tok(*pos), Some(Tok::Punct("["))) {
                    *pos += 1;
                    loop {
                        match tok(*pos) {
                            Some(Tok::Punct("]")) | None => {
                                *pos += 1;
                                break;
                            }
                            Some(Tok::Punct(",")) => *pos += 1,
                            _ => {
                                let before = *pos;
                                self.walk(toks, pos, out, depth + 1);
                                if *pos == before {
                                    *pos += 1;
                                }
                            }
                        }
                    }
                }
            }
            Some(_) => *pos += 1,
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex;

    fn toks(s: &str) -> Vec<Token> {
        let mut t = lex(s, 0).unwrap();
        t.pop();
        t
    }

    #[test]
    fn callsites_resolve_to_the_user_line() {
        let mut aliases = HashMap::new();
        aliases.insert("loc1".to_string(), toks("\"k.py\":57:0"));
        aliases.insert(
            "loc17".to_string(),
            toks("\"<triton>/language/standard.py\":43:17"),
        );
        aliases.insert("loc18".to_string(), toks("\"k.py\":25:35"));
        aliases.insert("loc91".to_string(), toks("callsite(#loc17 at #loc18)"));
        aliases.insert("loc93".to_string(), toks("\"load_index\"(#loc18)"));
        let l = Locs::new(&aliases);
        let f = l.user_frame(&toks("#loc91")).unwrap();
        assert_eq!((f.file.as_str(), f.line, f.col), ("k.py", 25, 35));
        assert_eq!(l.frames(&toks("#loc91")).len(), 2);
        assert_eq!(l.name(&toks("#loc93")).as_deref(), Some("load_index"));
        let f = l.user_frame(&toks("callsite(#loc93 at #loc1)")).unwrap();
        assert_eq!(f.line, 25);
        assert!(l.user_frame(&toks("unknown")).is_none());
        let f = l.user_frame(&toks("fused[#loc1, #loc18]")).unwrap();
        assert_eq!(f.line, 57);
    }
}

//! A fix as a unified diff of the `.tile` source it was found in.
//!
//! The edit is made on the text's lines (the anchor statement's line, the target's line), not
//! by printing the edited kernel, so that the diff touches only the lines the fix changes.

use super::{Edit, Fix};
use bwsim_isa::SourceFile;

/// The lines of `file` with `fix` made on them, or `None` where the edit does not map onto
/// whole lines (a statement sharing its line with another).
fn edited_lines(fix: &Fix, file: &SourceFile) -> Option<Vec<String>> {
    let mut lines: Vec<String> = file.text.lines().map(String::from).collect();
    let line_of = |s: bwsim_isa::Span| file.line_col(s.start as usize).0;
    let indent = |l: &str| l[..l.len() - l.trim_start().len()].to_string();
    let anchor = line_of(fix.anchor);
    let text = lines.get(anchor - 1)?.clone();
    match &fix.edit {
        Edit::Insert { after, .. } => {
            let (tile, _) = fix.inserted();
            let at = if *after { anchor } else { anchor - 1 };
            for (i, t) in tile.iter().enumerate() {
                lines.insert(at + i, format!("{}{t}", indent(&text)));
            }
        }
        Edit::Replace { .. } => {
            let new = fix.replacement.as_deref()?;
            lines[anchor - 1] = format!("{}{new}", indent(&text));
        }
        Edit::Operand { .. } => {
            let old = file.snippet(fix.anchor);
            let new = fix.replacement.as_deref()?;
            if old.is_empty() || !text.contains(old) {
                return None;
            }
            lines[anchor - 1] = text.replacen(old, new, 1);
        }
        Edit::Move { before, .. } => {
            let target = line_of(fix.target?);
            if target == anchor {
                return None;
            }
            let dest_indent = indent(lines.get(target - 1)?);
            let moved = lines.remove(anchor - 1);
            let at = if target > anchor { target - 1 } else { target };
            let mut add: Vec<String> = before
                .iter()
                .map(|o| format!("{dest_indent}{}", super::spell::tile(o)))
                .collect();
            add.push(format!("{dest_indent}{}", moved.trim_start()));
            for (i, l) in add.into_iter().enumerate() {
                lines.insert(at + i, l);
            }
        }
    }
    Some(lines)
}

/// The fix as a unified diff of `file` (one hunk, three lines of context), or `None` where it
/// does not map onto whole lines.
pub fn unified(fix: &Fix, file: &SourceFile) -> Option<String> {
    let old: Vec<&str> = file.text.lines().collect();
    let new = edited_lines(fix, file)?;
    let prefix = old
        .iter()
        .zip(&new)
        .take_while(|(a, b)| **a == b.as_str())
        .count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| **a == b.as_str())
        .count();
    let start = prefix.saturating_sub(3);
    let (old_end, new_end) = (old.len() - suffix, new.len() - suffix);
    let (old_stop, new_stop) = ((old_end + 3).min(old.len()), (new_end + 3).min(new.len()));
    let mut out = format!(
        "--- a/{0}\n+++ b/{0}\n@@ -{1},{2} +{1},{3} @@\n",
        file.name,
        start + 1,
        old_stop - start,
        new_stop - start
    );
    for l in &old[start..prefix] {
        out += &format!(" {l}\n");
    }
    for l in &old[prefix..old_end] {
        out += &format!("-{l}\n");
    }
    for l in &new[prefix..new_end] {
        out += &format!("+{l}\n");
    }
    for l in &old[old_end..old_stop] {
        out += &format!(" {l}\n");
    }
    Some(out)
}

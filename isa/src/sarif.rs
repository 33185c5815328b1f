//! SARIF 2.1.0 output (`--format sarif`), the format CI systems read static-analysis results
//! in (GitHub code scanning, GitLab, Azure DevOps).
//!
//! One log with one run: `tool.driver.rules` is the code table (one rule per [`Code`], its
//! default level as `defaultConfiguration.level`), each diagnostic a `result` with its
//! `ruleId`, `ruleIndex`, `level`, `message` and the primary span as its location
//! (`physicalLocation`: `artifactLocation.uri` and `region` with 1-based `startLine`,
//! `startColumn`, `endLine`, `endColumn`); secondary labels are `relatedLocations`, notes and
//! the help line follow the message. Specification: OASIS SARIF 2.1.0,
//! <https://docs.oasis-open.org/sarif/sarif/v2.1.0/sarif-v2.1.0.html>.

use crate::codes::{Code, Level};
use crate::diag::{Diagnostic, Label, Severity};
use crate::span::SourceFile;
use serde_json::{json, Value};

/// The `$schema` of the log.
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
/// The SARIF version written.
pub const VERSION: &str = "2.1.0";

/// A SARIF level (`error`, `warning`, `note`, `none`).
fn level_name(l: Level) -> &'static str {
    match l {
        Level::Error => "error",
        Level::Warning => "warning",
        Level::Allow => "none",
    }
}

/// One rule per code of the table, in table order (so `ruleIndex` is the table index).
pub fn rules() -> Vec<Value> {
    Code::ALL
        .iter()
        .map(|&c| {
            json!({
                "id": c.name(),
                "name": c.name(),
                "shortDescription": { "text": c.description() },
                "fullDescription": {
                    "text": format!("{} (stages: {}; level: {})", c.description(), c.stage_names(), c.level_name())
                },
                "defaultConfiguration": { "level": level_name(c.default_level()) },
                "properties": { "stages": c.stages().iter().map(|s| s.name()).collect::<Vec<_>>(), "lint": c.is_lint() },
            })
        })
        .collect()
}

/// A URI reference for a file name: the path with characters outside RFC 3986's unreserved
/// and path sets percent-encoded (a relative name stays relative).
fn uri(name: &str) -> String {
    let mut s = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/:@!$&'()*+,;=".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// The physical location of a label, or `None` for a label with no place in the source.
fn location(l: &Label, file: &SourceFile) -> Option<Value> {
    if l.span.is_dummy() && l.span.end == 0 {
        return None;
    }
    let (sl, sc) = file.line_col(l.span.start as usize);
    let end = (l.span.end as usize)
        .max(l.span.start as usize)
        .min(file.text.len());
    let (el, ec) = file.line_col(end);
    let mut loc = json!({
        "physicalLocation": {
            "artifactLocation": { "uri": uri(file.file_name_of(l.span)) },
            "region": { "startLine": sl, "startColumn": sc, "endLine": el.max(sl), "endColumn": if el > sl { ec } else { ec.max(sc) } },
        }
    });
    if !l.message.is_empty() {
        loc["message"] = json!({ "text": l.message });
    }
    Some(loc)
}

/// One diagnostic as a SARIF `result`; `properties` carries bwsim's own fields (extra keys
/// the caller adds, such as the replay command).
pub fn result(d: &Diagnostic, file: &SourceFile) -> Value {
    let level = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    };
    let mut text = d.message.clone();
    for n in &d.notes {
        text.push_str(&format!("\nnote: {n}"));
    }
    if let Some(h) = &d.help {
        text.push_str(&format!("\nhelp: {h}"));
    }
    let index = Code::ALL.iter().position(|&c| c == d.code).unwrap_or(0);
    let mut r = json!({
        "ruleId": d.code.name(),
        "ruleIndex": index,
        "level": level,
        "message": { "text": text },
        "locations": location(&d.primary, file).into_iter().collect::<Vec<_>>(),
    });
    let related: Vec<Value> = d
        .labels
        .iter()
        .filter_map(|l| location(l, file))
        .enumerate()
        .map(|(i, mut l)| {
            l["id"] = json!(i);
            l
        })
        .collect();
    if !related.is_empty() {
        r["relatedLocations"] = Value::Array(related);
    }
    r
}

/// A SARIF log of `results` (built with [`result`]) from bwsim `version`.
pub fn log(results: Vec<Value>, version: &str) -> Value {
    json!({
        "$schema": SCHEMA,
        "version": VERSION,
        "runs": [{
            "tool": {
                "driver": {
                    "name": "bwsim",
                    "version": version,
                    "rules": rules(),
                }
            },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::Span;

    #[test]
    fn a_result_has_the_required_keys() {
        let file = SourceFile::new("dir/k 1.tile", "let a = 1\nlet b = a\n".to_string());
        let d = Diagnostic::new(Code::UninitRead, "reads", Span::new(14, 19), "here").with_note("n");
        let r = result(&d, &file);
        assert_eq!(r["ruleId"], "uninit-read");
        assert_eq!(r["level"], "warning");
        let pl = &r["locations"][0]["physicalLocation"];
        assert_eq!(pl["artifactLocation"]["uri"], "dir/k%201.tile");
        assert_eq!(pl["region"]["startLine"], 2);
        assert_eq!(pl["region"]["startColumn"], 5);
        assert_eq!(
            Code::ALL[r["ruleIndex"].as_u64().expect("index") as usize],
            Code::UninitRead
        );
        let l = log(vec![r], "0.1.0");
        assert_eq!(l["version"], "2.1.0");
        assert_eq!(
            l["runs"][0]["tool"]["driver"]["rules"].as_array().map(Vec::len),
            Some(Code::ALL.len())
        );
    }
}

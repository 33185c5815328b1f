//! Diagnostic levels on the command line (`--deny`, `--warn`, `--allow`, `--deny warnings`) as
//! `bwsim check` and `bwsim run` meet them, their exit statuses, levels in `--json`, and
//! `--format sarif` held to the SARIF 2.1.0 specification's required properties.

mod common;

use common::{bwsim, bwsim_says, json, scratch};

/// A clean kernel except that it reads shared memory nothing filled.
const UNINIT: &str = "tests/fail/uninit_read.tile";

/// `bwsim check UNINIT` on two schedules and one thread, then `extra`.
fn check_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["check", UNINIT, "--schedules", "2", "--jobs", "1"];
    args.extend_from_slice(extra);
    args
}

fn check(extra: &[&str]) -> (i32, String, String) {
    bwsim(&check_args(extra))
}

#[test]
fn an_uninitialised_read_is_a_warning_and_exits_0() {
    let (out, _) = bwsim_says(
        &check_args(&[]),
        0,
        &[
            "warning[uninit-read]",
            // Where the undefined bytes go, as memcheck would say it.
            "the undefined bytes reach a global store here",
            "1 warning (no errors)",
        ],
    );
    assert!(out.is_empty(), "{out}");
}

#[test]
fn deny_makes_it_an_error() {
    for flags in [
        &["--deny", "uninit-read"][..],
        &["-D", "uninit-read"],
        &["--deny", "warnings"],
    ] {
        let (code, _, err) = check(flags);
        assert_eq!(code, 1, "{flags:?}: {err}");
        assert!(err.contains("error[uninit-read]"), "{flags:?}: {err}");
    }
    let (code, _, err) = bwsim(&["run", UNINIT, "--deny", "uninit-read"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("error[uninit-read]"), "{err}");
    let (code, _, err) = bwsim(&["run", UNINIT]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("warning[uninit-read]"), "{err}");
}

#[test]
fn allow_silences_a_lint_and_warn_relaxes_one() {
    let (code, _, err) = check(&["--allow", "uninit-read"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("uninit-read"), "{err}");
    assert!(err.contains("no hazards found"), "{err}");
    let file = "tests/fail/missing_fence_store.tile";
    let args = ["check", file, "--schedules", "2", "--warn", "missing-fence"];
    bwsim_says(&args, 0, &["warning[missing-fence]"]);
}

#[test]
fn bad_level_flags_are_refused_with_the_reason() {
    // The flags, and what the refusal says ("": the status alone is checked).
    for (flags, why) in [
        (&["--warn", "deadlock"][..], "`deadlock` is a hard error"),
        (&["--deny", "no-such-code"], "not a diagnostic code"),
        (
            &["--deny", "race", "--allow", "race"],
            "both `--deny` and `--allow`",
        ),
        (&["--json", "--format", "sarif"], ""),
    ] {
        let (code, _, err) = check(flags);
        assert_eq!(code, 2, "{flags:?}: {err}");
        assert!(err.contains(why), "{flags:?}: {err}");
    }
    // --help teaches the flags.
    let (_, out, _) = bwsim(&["check", "--help"]);
    for s in [
        "--deny <CODE|warnings>",
        "--warn <CODE>",
        "--allow <CODE>",
        "--format <FORMAT>",
        "sarif",
    ] {
        assert!(out.contains(s), "`{s}` missing from:\n{out}");
    }
}

#[test]
fn json_carries_levels() {
    let (code, out, _) = check(&["--json"]);
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["ok"], true);
    let d = &v["findings"][0]["diagnostic"];
    assert_eq!(d["code"], "uninit-read");
    assert_eq!(d["level"], "warning");
    assert_eq!(d["default_level"], "warning");
    let (code, out, _) = check(&["--json", "--deny", "uninit-read"]);
    assert_eq!(code, 1);
    let v = json(&out);
    assert_eq!(v["ok"], false);
    assert_eq!(v["levels"]["deny"][0], "uninit-read");
    assert_eq!(v["findings"][0]["diagnostic"]["level"], "error");
    let (_, out, _) = bwsim(&["run", UNINIT, "--json", "--seed", "1"]);
    let v = json(&out);
    assert_eq!(v["ok"], true);
    assert_eq!(v["diagnostics"][0]["level"], "warning");
}

/// The properties SARIF 2.1.0 requires (section 3: sarifLog `version`, `runs`; run `tool`;
/// toolComponent `name`; reportingDescriptor `id`; result `message` with `text`; and the
/// location properties bwsim promises), and that each result names a rule of the log.
fn assert_valid_sarif(log: &serde_json::Value) -> Vec<serde_json::Value> {
    assert_eq!(log["version"], "2.1.0");
    assert!(log["$schema"].as_str().is_some_and(|s| s.contains("sarif-2.1.0")));
    let runs = log["runs"].as_array().expect("runs is an array");
    assert_eq!(runs.len(), 1);
    let driver = &runs[0]["tool"]["driver"];
    assert_eq!(driver["name"], "bwsim");
    let rules = driver["rules"].as_array().expect("rules is an array");
    let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().expect("rule id")).collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "rule ids are unique");
    for r in rules {
        assert!(r["shortDescription"]["text"].is_string(), "{r}");
        let l = r["defaultConfiguration"]["level"]
            .as_str()
            .expect("default level");
        assert!(["error", "warning", "note", "none"].contains(&l), "{r}");
    }
    assert!(ids.contains(&"uninit-read") && ids.contains(&"race") && ids.contains(&"syntax"));
    let results = runs[0]["results"]
        .as_array()
        .expect("results is an array")
        .clone();
    for r in &results {
        assert!(
            r["message"]["text"].as_str().is_some_and(|t| !t.is_empty()),
            "{r}"
        );
        let id = r["ruleId"].as_str().expect("ruleId");
        let i = r["ruleIndex"].as_u64().expect("ruleIndex") as usize;
        assert_eq!(ids.get(i), Some(&id), "ruleIndex points at the rule");
        assert!(["error", "warning", "note", "none"].contains(&r["level"].as_str().expect("level")));
        for loc in r["locations"].as_array().expect("locations") {
            let pl = &loc["physicalLocation"];
            assert!(
                pl["artifactLocation"]["uri"]
                    .as_str()
                    .is_some_and(|u| !u.is_empty()),
                "{loc}"
            );
            assert!(
                pl["region"]["startLine"].as_u64().is_some_and(|n| n >= 1),
                "{loc}"
            );
            assert!(
                pl["region"]["startColumn"].as_u64().is_some_and(|n| n >= 1),
                "{loc}"
            );
        }
    }
    results
}

#[test]
fn sarif_output_follows_the_specification() {
    let (code, out, _) = check(&["--format", "sarif"]);
    assert_eq!(code, 0);
    let results = assert_valid_sarif(&json(&out));
    assert_eq!(results.len(), 1);
    let r = &results[0];
    assert_eq!(r["ruleId"], "uninit-read");
    assert_eq!(r["level"], "warning");
    let pl = &r["locations"][0]["physicalLocation"];
    assert_eq!(pl["artifactLocation"]["uri"], UNINIT);
    assert_eq!(pl["region"]["startLine"], 11);
    assert_eq!(pl["region"]["startColumn"], 11);
    assert!(r["relatedLocations"][0]["message"]["text"]
        .as_str()
        .is_some_and(|t| t.contains("global store")));
    assert!(r["properties"]["replay"]
        .as_str()
        .is_some_and(|t| t.contains("--seed")));

    let (code, out, _) = check(&["--format", "sarif", "--deny", "warnings"]);
    assert_eq!(code, 1);
    assert_eq!(assert_valid_sarif(&json(&out))[0]["level"], "error");
    // A replay, a run and a kernel that does not parse write SARIF too.
    let (_, out, _) = check(&["--format", "sarif", "--seed", "0"]);
    assert_eq!(assert_valid_sarif(&json(&out)).len(), 1);
    let (code, out, _) = bwsim(&["run", UNINIT, "--format", "sarif"]);
    assert_eq!(code, 0);
    assert_eq!(assert_valid_sarif(&json(&out))[0]["ruleId"], "uninit-read");
    let dir = scratch("sarif");
    let bad = dir.join("bad.tile");
    std::fs::write(&bad, "kernel k {\n  num_warps four\n}\n").expect("write");
    let (code, out, _) = bwsim(&["check", bad.to_str().expect("utf-8 path"), "--format", "sarif"]);
    assert_eq!(code, 1);
    let results = assert_valid_sarif(&json(&out));
    assert!(results.iter().any(|r| r["level"] == "error"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Definedness as memcheck tracks it: undefined bytes reach a branch condition through a
/// reduction, and a global store through a copy in shared memory.
#[test]
fn undefined_bytes_are_followed_through_values_and_shared_memory() {
    for (path, want) in [
        (
            "tests/levels/uninit_branch.tile",
            "the undefined bytes reach a branch condition here",
        ),
        (
            "tests/levels/uninit_copy.tile",
            "the undefined bytes reach a global store here",
        ),
    ] {
        let (code, _, err) = bwsim(&["check", path, "--schedules", "1"]);
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("warning[uninit-read]") && err.contains(want),
            "{path}: {err}"
        );
    }
}

//! `bwsim check` as a user meets it: exit codes, the replay seed, JSON, determinism across
//! thread counts.

mod common;

use common::{bwsim, bwsim_json, bwsim_says, json, string_fields};

#[test]
fn a_buggy_kernel_exits_1_with_the_diagnostic_and_its_replay_seed() {
    let file = "tests/fail/missing_fence_store.tile";
    let (out, _) = bwsim_says(
        &["check", file, "--schedules", "4", "--jobs", "1"],
        1,
        &[
            "error[missing-fence]",
            "replay: bwsim check tests/fail/missing_fence_store.tile --seed 0",
            "4 schedules in",
        ],
    );
    assert!(out.is_empty(), "diagnostics go to stderr: {out}");
}

#[test]
fn a_correct_kernel_exits_0() {
    let file = "tests/pass/missing_fence_store_fixed.tile";
    bwsim_says(&["check", file, "--schedules", "4"], 0, &["no hazards found"]);
    // A bundled kernel by name.
    let (code, _, err) = bwsim(&["check", "tcgen05_copy", "--schedules", "2"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn replaying_a_seed_gives_that_run_and_its_trace() {
    let v = bwsim_json(
        1,
        &["check", "tests/fail/missing_expect.tile", "--seed", "3", "--json"],
    );
    assert_eq!(v["seed"], 3);
    assert_eq!(v["outcome"], "Deadlock");
    let codes: Vec<&str> = v["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert_eq!(codes, ["tx-mismatch", "deadlock"]);
    let (code, out, err) = bwsim(&[
        "check",
        "tests/pass/missing_expect_fixed.tile",
        "--seed",
        "3",
        "--trace",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tma.load") && out.contains("complete_tx"), "{out}");
}

#[test]
fn findings_do_not_depend_on_the_thread_count() {
    let run = |jobs: &str| {
        let file = "tests/fail/ring_barrier_aliasing.tile";
        let v = bwsim_json(1, &["check", file, "--schedules", "40", "--jobs", jobs, "--json"]);
        assert_eq!(v["schedules"], 40);
        v["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .map(|f| {
                (
                    f["diagnostic"]["code"].as_str().unwrap_or("").to_string(),
                    f["seed"].as_u64(),
                    f["count"].as_u64(),
                )
            })
            .collect::<Vec<_>>()
    };
    let one = run("1");
    assert!(one.iter().any(|(c, _, _)| c == "phase-aliasing"), "{one:?}");
    assert_eq!(one, run("2"));
}

#[test]
fn bad_input_is_reported() {
    bwsim_says(&["check", "no/such/file.tile"], 2, &["no such file"]);
    let file = "tests/verify/tmem-lanes.fail.tile";
    bwsim_says(&["check", file, "--schedules", "1"], 1, &["error["]);
}

/// `--fix` on a kernel missing its proxy fence: the two places a `fence.async_shared` goes (after
/// the generic store at line 10, before the TMA store at line 12), each verified; the source
/// with the first one inserted checks clean on its own.
#[test]
fn fix_suggests_the_fence_and_the_fixed_source_checks_clean() {
    let v = bwsim_json(
        1,
        &["check", "tests/fail/missing_fence_store.tile", "--fix", "--json"],
    );
    let fixes = v["findings"][0]["fixes"].as_array().expect("fixes");
    let places: Vec<(u64, &str, &str)> = fixes
        .iter()
        .map(|f| {
            (
                f["line"].as_u64().unwrap_or(0),
                f["position"].as_str().unwrap_or(""),
                f["insert"][0].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        places,
        [
            (10, "after", "fence.async_shared"),
            (12, "before", "fence.async_shared")
        ]
    );
    let src = std::fs::read_to_string("tests/fail/missing_fence_store.tile").expect("source");
    let mut lines: Vec<&str> = src.lines().collect();
    lines.insert(10, "  fence.async_shared");
    let fixed = common::scratch_file("check-fix", "fixed.tile", lines.join("\n"));
    bwsim_says(&["check", &fixed], 0, &["no hazards found"]);
}

/// `--fix` on a Gluon pipeline that lost its `wait_group`: the deepest wait that removes the
/// finding, `async_copy.wait_group(2)` (the kernel's NUM_BUFFERS - 1), in Gluon's terms.
#[test]
fn fix_names_the_deepest_sufficient_cp_async_wait_in_gluon_terms() {
    let file = "tests/gluon/3.9/bug_cp_async_no_wait.sm_90a.ttgir";
    let v = bwsim_json(1, &["check", file, "--fix", "--json", "--schedules", "16"]);
    let first = &v["findings"][0]["fixes"][0];
    assert_eq!(
        first["insert"],
        serde_json::json!(["async_copy.wait_group(2)"]),
        "{v}"
    );
    assert_eq!(first["position"], "before");
}

/// A finding no edit of bwsim's list addresses (a plain read-modify-write of several CTAs that
/// must become one atomic) gets no fix, and says so.
#[test]
fn fix_says_when_no_edit_is_verified() {
    let file = "tests/fail/split_k_plain_store.tile";
    bwsim_says(
        &["check", file, "--fix", "--schedules", "4"],
        1,
        &["no verified fix"],
    );
}

/// An assertion over a masked load's padding is fixed by asserting under the load's mask.
#[test]
fn fix_asserts_under_the_loads_mask() {
    let fixes = fixes_of("tests/fail/device_assert_tail.tile", "4", "device-assert");
    let top = fixes.first().unwrap_or_else(|| panic!("no fix"));
    assert_eq!(top["edit"], "change", "{top}");
    let d = top["description"].as_str().unwrap_or_default();
    assert!(d.contains("device.assert (x >= 0) & (x < 64) | !inside"), "{d}");
}

/// The fixes of the first finding of code `code` of `check FILE --fix --json`.
fn fixes_of(file: &str, schedules: &str, code: &str) -> Vec<serde_json::Value> {
    let args = [
        "check",
        file,
        "--fix",
        "--json",
        "--schedules",
        schedules,
        "--fix-schedules",
        "8",
    ];
    let (status, out, err) = bwsim(&args);
    assert_eq!(status, 1, "{err}");
    let v = json(&out);
    let found = v["findings"].as_array().cloned().unwrap_or_default();
    let f = found
        .iter()
        .find(|f| f["diagnostic"]["code"] == code)
        .unwrap_or_else(|| panic!("no {code} finding: {v}"));
    f["fixes"].as_array().cloned().unwrap_or_default()
}

/// `--fix` on the wrong-parity deadlock: among the verified fixes, the twin's edit (the load
/// partition's wait on `phase ^ 1`, line 67), as a change of that line with its diff.
#[test]
fn fix_flips_the_parity_of_a_blocked_wait() {
    let fixes = fixes_of("tests/fail/ws_add_wrong_parity.tile", "8", "deadlock");
    let flip = fixes
        .iter()
        .find(|f| f["line"] == 67)
        .unwrap_or_else(|| panic!("no fix at line 67: {fixes:?}"));
    assert_eq!(flip["edit"], "change");
    let diff = flip["diff"].as_str().unwrap_or("");
    assert!(
        diff.contains("-        mbar.wait load_empty_bars[index], phase\n")
            && diff.contains("+        mbar.wait load_empty_bars[index], phase ^ 1\n"),
        "{diff}"
    );
}

/// `--fix` on an expect short of the bytes the TMA load delivers: the expect set to
/// `a_desc.nbytes`; the source with that line changed checks clean (as its twin).
#[test]
fn fix_sets_the_expect_to_the_bytes_the_copy_delivers_and_the_fixed_source_checks_clean() {
    let fixes = fixes_of("tests/fail/short_expect_oob.tile", "8", "tx-mismatch");
    let top = &fixes[0];
    assert_eq!(
        (top["line"].as_u64(), top["edit"].as_str()),
        (Some(13), Some("change")),
        "{top}"
    );
    assert!(
        top["diff"]
            .as_str()
            .unwrap_or("")
            .contains("+  mbar.expect bar[0], a_desc.nbytes\n"),
        "{top}"
    );
    let src = std::fs::read_to_string("tests/fail/short_expect_oob.tile").expect("source");
    let fixed: Vec<String> = src
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("mbar.expect") {
                "  mbar.expect bar[0], a_desc.nbytes".to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    let fixed = common::scratch_file("check-fix", "expect.tile", fixed.join("\n"));
    let (code, _, err) = bwsim(&["check", &fixed, "--schedules", "16"]);
    assert_eq!(code, 0, "{err}");
}

/// `--fix` on the Gluon twin whose expect counts one of its two loads: the fix at the Python
/// line of `mbarrier.expect` (planted_bugs.py:42), as a Gluon call.
#[test]
fn fix_of_a_gluon_kernel_is_shown_at_the_python_line_as_a_gluon_call() {
    let fixes = fixes_of(
        "tests/gluon/3.9/bug_ws_add_short_expect.sm_100a.ttgir",
        "4",
        "tx-mismatch",
    );
    let top = &fixes[0];
    assert_eq!(top["line"], 42, "{top}");
    let says = top["description"].as_str().unwrap_or("");
    assert!(
        says.contains("`mbarrier.expect(load_ready_bars[index], a_desc.nbytes + b_desc.nbytes)`"),
        "{says}"
    );
    assert!(top["diff"].is_null(), "no .tile diff for a Gluon kernel: {top}");
}

#[test]
fn minimize_shrinks_each_error_schedule_and_shows_the_events_at_its_lines() {
    // The wrong-parity deadlock: the three partitions' waits, each at its line.
    let file = "tests/fail/ws_add_wrong_parity.tile";
    let v = bwsim_json(1, &["check", file, "--schedules", "8", "--minimize", "--json"]);
    let cx = &v["findings"][0]["counterexample"];
    let n = cx["preemptions"].as_u64().expect("preemptions");
    assert!(
        n <= cx["preemptions_before"].as_u64().expect("before") && n <= 2,
        "{cx}"
    );
    assert_eq!(cx["minimal"], true);
    let events = string_fields(&cx["events"], ["/unit", "/event"]);
    for (unit, line) in [
        ("cta0.default", 45),
        ("cta0.worker.load", 67),
        ("cta0.worker.store", 79),
    ] {
        assert!(
            events
                .iter()
                .any(|[u, e]| u == unit && e.contains(&format!("(line {line})"))),
            "{unit} at line {line}: {events:?}"
        );
    }
    // The text report puts the table after the diagnostic, one column per partition.
    let (_, text) = bwsim_says(
        &["check", file, "--schedules", "8", "--minimize"],
        1,
        &[
            "error[deadlock]: minimal counterexample of schedule seed 0",
            "cta0.worker.store",
        ],
    );
    let _ = text;
}

#[test]
fn minimize_writes_the_shrunk_schedule_as_a_chrome_trace_with_its_preemptions() {
    let file = "tests/fail/ws_matmul_acc_release_off_by_one.tile";
    let trace = common::scratch("check-minimize").join("cx.json");
    let trace_arg = trace.to_string_lossy().into_owned();
    let v = bwsim_json(
        1,
        &["check", file, "--minimize", "--json", "--chrome", &trace_arg],
    );
    let cx = &v["findings"][0]["counterexample"];
    let kept = cx["preemptions"].as_u64().expect("preemptions");
    let chrome = json(&std::fs::read_to_string(&trace).expect("the trace is written"));
    let marks = chrome["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .iter()
        .filter(|e| e["name"].as_str().is_some_and(|n| n.starts_with("preempted by ")))
        .count() as u64;
    assert_eq!(marks, kept, "one mark per preemption of the shrunk schedule");
    // --chrome needs --minimize.
    bwsim_says(&["check", file, "--chrome", &trace_arg], 2, &[]);
}

/// Independent CTAs run one after the other, each with its own plans: one run of a level
/// carries a plan for every CTA.
#[test]
fn exhaustive_runs_the_plans_of_independent_ctas_side_by_side() {
    // kernels/tiles/cp_async.tile: grid = cdiv(60, 8) = 8 CTAs, no atomics, no cluster.
    let (code, out, err) = bwsim(&[
        "check",
        "kernels/tiles/cp_async.tile",
        "--exhaustive",
        "--delays",
        "1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v = json(&out);
    let nums = |k: &str| -> Vec<u64> {
        v[k].as_array()
            .expect("levels")
            .iter()
            .filter_map(|x| x.as_u64())
            .collect()
    };
    let (runs, classes) = (nums("schedules_by_delays"), nums("cluster_schedules_by_delays"));
    assert_eq!(v["complete"], true);
    // Level 0: one run, the deterministic schedule of each of the 8 CTAs.
    assert_eq!((runs[0], classes[0]), (1, 8));
    // Level 1: every CTA's one-delay schedules, 8 to a run while every CTA has some left.
    assert!(
        runs[1] > 0 && classes[1] > runs[1] && classes[1] <= 8 * runs[1],
        "{runs:?} {classes:?}"
    );
}

/// Without `--delays`, the default bound: 2 delays where the level of 2 fits the step budget
/// (kernels/tiles/async_scatter.tile: 12 steps a run, a handful of runs), stated in the JSON
/// and on the verdict line.
#[test]
fn exhaustive_states_its_default_bound() {
    let file = "kernels/tiles/async_scatter.tile";
    let v = bwsim_json(0, &["check", file, "--exhaustive", "--json"]);
    assert_eq!(
        (v["delays"].as_u64(), v["complete"].as_bool()),
        (Some(2), Some(true))
    );
    assert!(v["left_out"].is_null(), "{v}");
    assert_eq!(v["schedules_by_delays"].as_array().map(Vec::len), Some(3));
    bwsim_says(
        &["check", file, "--exhaustive"],
        0,
        &[
            "every schedule of each cluster within 2 delays",
            "clean within this bound",
        ],
    );
}

#[test]
fn exhaustive_proves_a_fixed_twin_clean_within_its_bound_and_finds_the_bug_of_its_buggy_twin() {
    // The wrong-parity deadlock shows on the deterministic schedule itself.
    let (buggy, fixed) = (
        "tests/fail/ws_add_wrong_parity.tile",
        "tests/pass/ws_add_wrong_parity_fixed.tile",
    );
    let v = bwsim_json(1, &["check", buggy, "--exhaustive", "--delays", "1", "--json"]);
    assert_eq!(v["complete"], true);
    assert_eq!(v["findings"][0]["diagnostic"]["code"], "deadlock");
    assert_eq!(v["findings"][0]["plan"], serde_json::json!([]));
    // Its fixed twin: every schedule within 1 delay, none with a finding; the counts per
    // level add up to the total.
    let v = bwsim_json(0, &["check", fixed, "--exhaustive", "--delays", "1", "--json"]);
    assert_eq!(
        (v["complete"].as_bool(), v["delays"].as_u64()),
        (Some(true), Some(1))
    );
    let levels: Vec<u64> = serde_json::from_value(v["schedules_by_delays"].clone()).expect("levels");
    assert_eq!(levels.len(), 2);
    assert_eq!(levels[0], 1, "one deterministic schedule");
    assert_eq!(
        levels.iter().sum::<u64>(),
        v["schedules"].as_u64().expect("schedules")
    );
    assert!(v["findings"].as_array().expect("findings").is_empty());
    // A run limit below the bound's size: nothing found, nothing proved (exit 3).
    let args = ["check", fixed, "--exhaustive", "--max-schedules", "2"];
    bwsim_says(&args, 3, &["incomplete", "nothing proved"]);
}

//! `bwsim check FILE.ptx`: Triton 3.9's PTX of the Gluon fixtures with TMA copies and
//! mbarriers (ptxfront/tests/fixtures/triton-3.9), checked on the PTX front end's machine with
//! the fixtures' launch sidecars (tests/gluon/*.launch): the verdicts of their TTGIR, the
//! findings at the same Python lines. Bugs planted into the PTX (a deleted
//! `fence.proxy.async`, a deleted mbarrier wait) are reported at the line of the access they
//! leave unordered. `bwsim run FILE.ptx` and `bwsim gpu FILE.ptx` on the same fixtures:
//! [`run_gpu`].

mod common;
#[path = "ptx_check_cli/run_gpu.rs"]
mod run_gpu;

use common::{bwsim, expectation, json, scratch_file, string_fields};

const FIXTURES: &str = "ptxfront/tests/fixtures/triton-3.9";

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/{FIXTURES}/{name}.ptx", env!("CARGO_MANIFEST_DIR"))).expect("fixture")
}

/// `(code, at, with)` of each finding of `bwsim check --json`.
fn findings(stdout: &str) -> Vec<[String; 3]> {
    let mut out = string_fields(&json(stdout)["findings"], ["/code", "/at", "/with/0"]);
    out.sort();
    out.dedup();
    out
}

/// `bwsim check PATH --launch LAUNCH --schedules N --json`: its exit status, stdout and stderr.
fn check_json(path: &str, launch: &str, schedules: &str) -> (i32, String, String) {
    bwsim(&[
        "check",
        path,
        "--launch",
        launch,
        "--schedules",
        schedules,
        "--json",
    ])
}

fn f(code: &str, at: u32, with: u32) -> [String; 3] {
    [
        code.into(),
        format!("proxy_fences.py:{at}"),
        format!("proxy_fences.py:{with}"),
    ]
}

#[test]
fn the_scale_kernel_checks_clean_as_its_ttgir() {
    // tests/gluon/proxy_fences.launch: `check [3.7+]: clean`.
    let path = format!("{FIXTURES}/proxy_fences.sm_100a.ptx");
    let (code, out, err) = check_json(&path, "tests/gluon/proxy_fences.launch", "6");
    assert_eq!(code, 0, "{err}");
    assert_eq!(findings(&out), Vec::<[String; 3]>::new());
    assert_eq!(json(&out)["ok"], true);
}

#[test]
fn the_handoff_bug_is_found_at_its_ttgir_lines() {
    // tests/gluon/bug_proxy_fences_handoff.launch: `expect: missing-fence at
    // proxy_fences.py:60 with proxy_fences.py:37`, `check: expected`.
    let path = format!("{FIXTURES}/bug_proxy_fences_handoff.sm_100a.ptx");
    let launch = "tests/gluon/bug_proxy_fences_handoff.launch";
    let (code, out, err) = check_json(&path, launch, "6");
    assert_eq!(code, 1, "{err}");
    assert_eq!(findings(&out), vec![f("missing-fence", 60, 37)]);
    // Rendered: at the PTX's TMA store, naming the Python line.
    let (code, _, err) = bwsim(&["check", &path, "--launch", launch, "--schedules", "2"]);
    assert_eq!(code, 1);
    assert!(err.contains("error[missing-fence]"), "{err}");
    assert!(
        err.contains("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"),
        "{err}"
    );
    assert!(err.contains("proxy_fences.py:60"), "{err}");
}

#[test]
fn a_deleted_fence_and_a_deleted_wait_are_found_at_their_lines() {
    let src = fixture("proxy_fences.sm_100a");
    let tag = "ptx-check";
    let no_fence = scratch_file(
        tag,
        "no_fence.sm_100a.ptx",
        src.replacen("\tfence.proxy.async.shared::cta;\n", "", 1),
    );
    let (code, out, err) = check_json(&no_fence, "tests/gluon/proxy_fences.launch", "4");
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        findings(&out),
        vec![f("missing-fence", 34, 36), f("missing-fence", 51, 37)]
    );

    // The wait loop of `mbarrier.wait` deleted; one block (so that no second arrival finds the
    // barrier's phase still open). The sidecar is found next to the file.
    let start = src.find("{\n\t.reg .pred complete;").expect("a wait loop");
    let end = start + src[start..].find("}\n").expect("its end") + 2;
    let no_wait = scratch_file(
        tag,
        "no_wait.sm_100a.ptx",
        format!("{}{}", &src[..start], &src[end..]),
    );
    let sidecar = std::fs::read_to_string(format!(
        "{}/tests/gluon/proxy_fences.launch",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("sidecar")
    .replace("tensor x: f32[32, 256]", "tensor x: f32[32, 64]")
    .replace("tensor y: f32[32, 256]", "tensor y: f32[32, 64]")
    .replace("n_blocks = 4", "n_blocks = 1");
    scratch_file(tag, "no_wait.launch", sidecar);
    let (code, out, err) = bwsim(&["check", &no_wait, "--schedules", "8", "--json"]);
    assert_eq!(code, 1, "{err}");
    let found = findings(&out);
    assert!(found.contains(&f("read-before-complete", 36, 34)), "{found:?}");
}

#[test]
fn the_planted_bugs_of_the_warp_specialized_add_are_found_with_their_sidecars() {
    // The sidecars of the TTGIR fixtures, unchanged: tests/gluon/bug_ws_add_{fixed,no_fence}.launch.
    let run = |name: &str| {
        let path = format!("{FIXTURES}/{name}.sm_100a.ptx");
        let launch = format!("tests/gluon/{name}.launch");
        check_json(&path, &launch, "4")
    };
    let (code, out, err) = run("bug_ws_add_fixed");
    assert_eq!(code, 0, "{err}");
    assert_eq!(findings(&out), Vec::<[String; 3]>::new());
    let (code, out, err) = run("bug_ws_add_no_fence");
    assert_eq!(code, 1, "{err}");
    let pb = |a: u32, b: u32| {
        [
            "missing-fence".to_string(),
            format!("planted_bugs.py:{a}"),
            format!("planted_bugs.py:{b}"),
        ]
    };
    assert_eq!(findings(&out), vec![pb(45, 61), pb(46, 62)]);
}

/// Every PTX fixture whose kernel has a sidecar in tests/gluon is checked with it and gets
/// the verdicts the sidecar states for Triton 3.9's TTGIR (`check: clean`; each `expect:` as a
/// finding with that code at that line, naming one of the `with` lines; with `check:
/// expected`, no other code).
#[test]
fn every_fixture_gets_the_verdicts_of_its_ttgir() {
    use bwsim_isa::directives;
    let dir = format!("{}/{FIXTURES}", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".ptx"))
        .collect();
    names.sort();
    let mut checked = Vec::new();
    for name in names {
        let (stem, target) = name
            .trim_end_matches(".ptx")
            .rsplit_once('.')
            .expect("NAME.TARGET.ptx");
        let sidecar = format!("tests/gluon/{stem}.launch");
        let text = std::fs::read_to_string(format!("{}/{sidecar}", env!("CARGO_MANIFEST_DIR")))
            .unwrap_or_else(|e| panic!("{sidecar}: {e}"));
        let ds: Vec<_> = directives::parse(&text, directives::GLUON_KEYS, true)
            .expect("directives")
            .into_iter()
            .filter(|d| d.applies_to((3, 9), target).expect("qualifiers"))
            .collect();
        let says = |k: &str, v: &str| ds.iter().any(|d| d.key == k && d.value == v);
        let expects: Vec<_> = ds
            .iter()
            .filter(|d| d.key == "expect")
            .map(|d| expectation(&d.value))
            .collect();
        let path = format!("{FIXTURES}/{name}");
        // The tcgen05 matmuls take about 4 s each in a debug build: the full tier's.
        let ptx = std::fs::read_to_string(format!("{dir}/{name}")).expect("fixture");
        if ptx.contains("tcgen05.mma") && !bwsim_testkit::full_tier() {
            eprintln!("{name}: a tcgen05 matmul, checked in the full tier (BWSIM_FULL=1)");
            continue;
        }
        let (code, out, err) = check_json(&path, &sidecar, "6");
        let found = findings(&out);
        if says("check", "clean") {
            assert_eq!((code, &found), (0, &vec![]), "{name}: {err}");
        }
        for (c, at, with) in &expects {
            assert!(
                found.iter().any(|[fc, fa, fw]| fc == c
                    && at.as_ref().is_none_or(|a| fa == a)
                    && (with.is_empty() || with.contains(fw))),
                "{name}: expected {c} at {at:?} with {with:?}, found {found:?}"
            );
        }
        if says("check", "expected") {
            for [fc, ..] in &found {
                assert!(
                    expects.iter().any(|(c, ..)| c == fc),
                    "{name}: unexpected {fc}: {found:?}"
                );
            }
        }
        checked.push(name);
    }
    assert!(checked.len() >= 16, "{checked:?}");
}

#[test]
fn a_conversion_scratch_over_a_tma_store_in_flight_is_found_at_the_conversion() {
    // scratch_reuse.py: Triton puts the scratch of the cross-warp `convert_layout` (line 37) at
    // the shared offset of the TMA store's source buffer (line 32; docs/gluon.md, "Shared scratch
    // of layout conversions"). The fixture waits for the store first (`check: clean`, covered by
    // `every_fixture_gets_the_verdicts_of_its_ttgir`); its first `cp.async.bulk.wait_group.read`
    // deleted, as `BUG='no_store_wait'` compiles, the conversion's `st.shared` writes the bytes
    // the bulk copy may still read.
    let src = fixture("scratch_reuse.sm_100a");
    let wait = "\tcp.async.bulk.wait_group.read \t0;\n";
    assert_eq!(src.matches(wait).count(), 2, "the store's wait and the final one");
    let no_wait = scratch_file(
        "ptx-check-scratch",
        "no_store_wait.sm_100a.ptx",
        src.replacen(wait, "", 1),
    );
    let at = |code: &str, a: u32, b: u32| {
        [
            code.to_string(),
            format!("scratch_reuse.py:{a}"),
            format!("scratch_reuse.py:{b}"),
        ]
    };
    let launch = "tests/gluon/scratch_reuse.launch";
    let (code, out, err) = check_json(&no_wait, launch, "4");
    assert_eq!(code, 1, "{err}");
    // The overwrite at the conversion, naming the store; and the unordered pair the other way
    // round (the warps that write the scratch did not issue the copy).
    assert_eq!(
        findings(&out),
        vec![at("race", 32, 37), at("write-while-in-flight", 37, 32)]
    );
}

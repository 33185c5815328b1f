//! `bwsim time` as a user meets it: the report, its JSON, the Perfetto trace, and errors.

mod common;

use common::{bwsim, bwsim_json, bwsim_says, scratch, words};

#[test]
fn json_report_has_the_promised_fields() {
    // The default launch (208 x 416 x 304) runs the functional simulator first.
    let v = bwsim_json(0, &["time", "matmul_pipelined", "--chip", "h100", "--json"]);
    for f in [
        "cycles",
        "seconds",
        "tflops",
        "l2_hit_rate",
        "utilisation",
        "critical",
    ] {
        assert!(v.get(f).is_some(), "no `{f}` in {v}");
    }
    let cycles = v["cycles"].as_f64().expect("cycles");
    let seconds = v["seconds"].as_f64().expect("seconds");
    // H100 runs at 1830 MHz in the chip table.
    assert!((seconds * 1830e6 - cycles).abs() < 1e-6 * cycles);
    // TFLOP/s counts the tensor work done: 2 x 2 tiles of 128 x 256, each 5 K steps of 64
    // (304 rounded up), 2 x 128 x 256 x 64 FLOP per step.
    let flops = 4.0 * 5.0 * 2.0 * 128.0 * 256.0 * 64.0;
    assert_eq!(v["flops"].as_f64(), Some(flops));
    let tflops = v["tflops"].as_f64().expect("a matmul reports TFLOP/s");
    assert!((tflops - flops / seconds / 1e12).abs() < 1e-9 * tflops.max(1.0));
    assert!(v["tbps"].is_null());
}

#[test]
fn streaming_kernel_reports_bandwidth_and_human_text() {
    let (code, out, err) = bwsim(&words(
        "time elementwise_add_ws --chip b200 --timing-only --const XNUMEL=4096 --const YNUMEL=4096",
    ));
    assert_eq!(code, 0, "{err}");
    for s in [
        "cycles",
        "TB/s",
        "L2 hit rate",
        "utilisation",
        "critical",
        "trust ",
    ] {
        assert!(out.contains(s), "no `{s}` in:\n{out}");
    }
    // The B200's table is the GB200 calibration at its own clock: the trust line says so.
    assert!(out.contains("GB200 calibration"), "{out}");
}

#[test]
fn trust_lists_calibrated_and_estimated_fields_and_what_set_replaced() {
    let args = |set: &[&'static str]| {
        let mut a =
            words("time elementwise_add_ws --chip gb200 --timing-only --json --const XNUMEL=8192 --const YNUMEL=8192");
        a.extend(set);
        a
    };
    let v = bwsim_json(0, &args(&[]));
    let t = &v["trust"];
    let names = |k: &str| -> Vec<String> {
        t[k].as_array()
            .unwrap_or_else(|| panic!("no trust.{k} in {t}"))
            .iter()
            .map(|x| x.as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert!(names("calibrated").contains(&"clock_mhz".to_string()), "{t}");
    assert!(
        names("estimates").contains(&"tmem_bytes_per_cycle".to_string()),
        "{t}"
    );
    assert!(t["summary"].as_str().is_some_and(|s| s.contains("GB200")), "{t}");
    assert_eq!(t["set"].as_array().map(|a| a.len()), Some(0));
    let base = v["seconds"].as_f64().expect("seconds");
    // --set replaces one field for the run: half the HBM rate slows an HBM-bound stream (the
    // 8192 x 8192 add moves 805 MB; the launch's fixed 16.8 us does not scale) by close to
    // 2x, and the report says what was set.
    let v = bwsim_json(0, &args(&["--set", "hbm_bytes_per_s=3.15e12"]));
    let slow = v["seconds"].as_f64().expect("seconds");
    assert!(slow > 1.6 * base && slow < 2.1 * base, "{base} -> {slow}");
    assert_eq!(v["trust"]["set"][0]["field"], "hbm_bytes_per_s");
    // Unknown fields and bad numbers are refused with the reason.
    let (code, _, err) = bwsim(&args(&["--set", "sms=1"]));
    assert_ne!(code, 0);
    assert!(err.contains("not a numeric field"), "{err}");
    let (code, _, err) = bwsim(&args(&["--set", "clock_mhz=fast"]));
    assert_ne!(code, 0);
    assert!(err.contains("not a number"), "{err}");
}

#[test]
fn chrome_trace_is_written_and_loads() {
    let p = scratch("time-cli").join("trace.json");
    let ps = p.to_string_lossy().into_owned();
    let mut args = words("time matmul_warp_specialized --chip gb200 --timing-only --trace-sm 1");
    args.extend([
        "--const", "M=512", "--const", "N=1024", "--const", "K=512", "--chrome", &ps,
    ]);
    bwsim_says(&args, 0, &[]);
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&p).expect("trace written")).expect("JSON");
    let evs = v["traceEvents"].as_array().expect("traceEvents");
    assert!(!evs.is_empty());
    assert!(evs
        .iter()
        .all(|e| ["ph", "ts", "pid", "tid"].iter().all(|f| e.get(*f).is_some())));
    // Only SM 1's CTA appears (CTA 1 of a round-robin launch).
    let procs: Vec<&str> = evs
        .iter()
        .filter(|e| e["name"] == "process_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(procs.contains(&"SM 1 CTA 1"), "{procs:?}");
    assert!(!procs.iter().any(|p| p.starts_with("SM 0 ")), "{procs:?}");
}

#[test]
fn errors_are_explained() {
    // Unknown chip: clap lists the choices.
    bwsim_says(&["time", "matmul_pipelined", "--chip", "a100"], 2, &["gb200"]);
    // A Blackwell-only kernel on a Hopper chip: the verifier says why, with a span.
    let (code, _, err) = bwsim(&["time", "matmul_warp_specialized", "--chip", "h100"]);
    assert_eq!(code, 1);
    assert!(err.contains("sm_90a") || err.contains("target"), "{err}");
    // A full-size problem without --timing-only is refused, with the fix.
    let full = words("time matmul_pipelined --chip h100 --const M=8192 --const N=8192 --const K=8192");
    bwsim_says(&full, 2, &["--timing-only"]);
}

#[test]
fn a_two_cta_gluon_matmul_times() {
    // Gluon's cta_group::2 matmul (its launch sidecar tests/gluon/two_cta_matmul.launch: four
    // clusters of two CTAs over C = A @ B of 512 x 256 x 128) runs functionally, then times:
    // its FLOPs are the whole product's, 2 x 512 x 256 x 128, done by pair MMAs.
    let file = "tests/gluon/3.8/two_cta_matmul.sm_100a.ttgir";
    let v = bwsim_json(0, &["time", file, "--chip", "b200", "--json"]);
    assert_eq!(v["flops"].as_f64(), Some(2.0 * 512.0 * 256.0 * 128.0));
    assert_eq!(v["ctas"].as_u64(), Some(8));
    assert!(v["cycles"].as_f64().is_some_and(|c| c > 0.0), "{v}");
}

/// `--sweep`: every combination timed, ranked fastest first; each row's time is what a
/// single `bwsim time --timing-only --const ...` of that configuration predicts; a
/// configuration the chip cannot hold is listed with the reason, not ranked.
#[test]
fn sweep_ranks_every_combination_as_single_runs_time_them() {
    let v = bwsim_json(
        0,
        &words("time matmul_pipelined --chip b200 --sweep NUM_BUFFERS=2,3,9 --sweep BLOCK_N=128,256 --json"),
    );
    let rows = v["configs"].as_array().expect("configs");
    assert_eq!(rows.len(), 6);
    let timed: Vec<&serde_json::Value> = rows.iter().filter(|r| r.get("microseconds").is_some()).collect();
    // NUM_BUFFERS = 9 stages of A and B do not fit in a CTA's shared memory.
    assert_eq!(timed.len(), 4, "{v}");
    for r in rows.iter().filter(|r| r.get("error").is_some()) {
        assert_eq!(r["config"]["NUM_BUFFERS"], "9");
        assert!(r["error"].as_str().unwrap_or("").contains("smem-capacity"), "{r}");
    }
    let times: Vec<f64> = timed
        .iter()
        .map(|r| r["microseconds"].as_f64().unwrap_or(0.0))
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "not ranked: {times:?}");
    assert_eq!(timed[0]["slowdown"].as_f64(), Some(1.0));
    for r in &timed {
        let (nb, bn) = (
            r["config"]["NUM_BUFFERS"].as_str().unwrap_or(""),
            r["config"]["BLOCK_N"].as_str().unwrap_or(""),
        );
        let (nb, bn) = (format!("NUM_BUFFERS={nb}"), format!("BLOCK_N={bn}"));
        let mut args = words("time matmul_pipelined --chip b200 --timing-only --json");
        args.extend(["--const", &nb, "--const", &bn]);
        let single = bwsim_json(0, &args);
        assert_eq!(single["microseconds"], r["microseconds"], "{nb} {bn}");
    }
}

/// Sweeping a constant the kernel does not declare is an error naming the ones it does.
#[test]
fn sweep_of_an_unknown_constant_names_the_kernel_constants() {
    let sweep = words("time matmul_pipelined --chip b200 --sweep STAGES=2,3");
    bwsim_says(&sweep, 2, &["declares no constant `STAGES`", "NUM_BUFFERS"]);
}

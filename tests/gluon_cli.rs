//! `bwsim` on Gluon TTGIR: `bwsim import` prints the `.tile` source, and the commands that load
//! kernels take a `.ttgir` file wherever they take a `.tile` one, with diagnostics quoting the
//! Python source.

mod common;
// The walk of a kernel's PTX as one warp executes it, shared with the backend's tests.
#[path = "../backends/tests/common/ptx_walk.rs"]
mod ptx_walk;

use common::{bwsim, bwsim_says, scratch};

#[test]
fn import_prints_tile_source_that_verifies() {
    let (code, out, err) = bwsim(&["import", "tests/gluon/3.9/elementwise_add_ws.sm_90a.ttgir"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("kernel elementwise_add_ws_kernel {"), "{out}");
    assert!(out.contains("warp_specialize {"), "{out}");
    assert!(out.contains("worker load(warps=1, regs=24)"), "{out}");
    assert!(out.contains("launch {"), "{out}");
    let dir = scratch("gluon-cli");
    let tile = dir.join("ws.tile");
    let tile = tile.to_string_lossy();
    let (code, _, err) = bwsim(&[
        "import",
        "tests/gluon/3.9/elementwise_add_ws.sm_90a.ttgir",
        "-o",
        &tile,
    ]);
    assert_eq!(code, 0, "{err}");
    let written = std::fs::read_to_string(&*tile).expect("written");
    assert_eq!(written, out);
    let (code, _, err) = bwsim(&["verify", &tile]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = bwsim(&["fmt", "--check", &tile]);
    assert_eq!(code, 0, "the imported source is canonical: {err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn verify_takes_ttgir() {
    let (code, _, err) = bwsim(&["verify", "tests/gluon/3.9/matmul_pipelined.sm_100a.ttgir"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("ok (sm_100a, 8 warps"), "{err}");
    let (code, out, _) = bwsim(&["verify", "--json", "tests/gluon/3.9/async_gather.sm_100a.ttgir"]);
    assert_eq!(code, 0);
    assert!(out.contains("\"ok\":true"), "{out}");
}

#[test]
fn import_errors_quote_the_python_line() {
    let dir = scratch("gluon-cli-err");
    std::fs::write(dir.join("k.py"), "def k(x):\n    y = gl.acos(x)\n").expect("write");
    let ttgir = dir.join("k.ttgir");
    std::fs::write(
        &ttgir,
        "#loc1 = loc(\"k.py\":1:0)\nmodule attributes {\"ttg.num-warps\" = 4 : i32, ttg.target = \"cuda:90\"} {\n  tt.func public @k(%x: f32 loc(\"x\"(#loc1))) attributes {noinline = false} {\n    %y = math.acos %x : f32 loc(\"k.py\":2:8)\n    tt.return loc(#loc1)\n  } loc(#loc1)\n} loc(#loc1)\n",
    )
    .expect("write");
    let p = ttgir.to_string_lossy();
    for cmd in ["import", "verify"] {
        let (code, _, err) = bwsim(&[cmd, &p]);
        assert_eq!(code, 1, "{cmd}: {err}");
        assert!(err.contains("error[ttgir-unsupported-op]"), "{cmd}: {err}");
        assert!(err.contains("`math.acos`"), "{cmd}: {err}");
        assert!(err.contains("y = gl.acos(x)"), "{cmd}: {err}");
    }
    let (code, out, _) = bwsim(&["import", "--json", &p]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let d = &v["diagnostics"][0];
    assert_eq!(d["code"], "ttgir-unsupported-op", "{out}");
    assert!(
        d["primary"]["file"].as_str().is_some_and(|f| f.ends_with("k.py")),
        "{out}"
    );
    assert_eq!(d["primary"]["line_col"][0], 2, "{out}");
    assert!(
        d["labels"][0]["file"]
            .as_str()
            .is_some_and(|f| f.ends_with("k.ttgir")),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_ttgir_file_is_a_clear_error() {
    let (code, _, err) = bwsim(&["verify", "no/such/kernel.ttgir"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read `no/such/kernel.ttgir`"), "{err}");
}

#[test]
fn fmt_write_never_overwrites_ttgir() {
    let path = format!(
        "{}/tests/gluon/3.9/tcgen05_copy.sm_100a.ttgir",
        env!("CARGO_MANIFEST_DIR")
    );
    let before = std::fs::read_to_string(&path).expect("fixture");
    let (code, _, err) = bwsim(&["fmt", "--write", "tests/gluon/3.9/tcgen05_copy.sm_100a.ttgir"]);
    assert_eq!(code, 2);
    assert!(err.contains("bwsim import"), "{err}");
    let after = std::fs::read_to_string(&path).expect("fixture");
    assert!(after == before && after.contains("ttng.tmem_copy"));
}

/// `bwsim check` on a planted bug's TTGIR (Triton 3.9's): the missing fence is reported on the
/// Python lines (the TMA load that overwrites the buffer, the read, the release without a
/// fence); the correct kernel checks clean.
#[test]
fn check_reports_the_planted_missing_fence_on_the_python_lines() {
    let file = "tests/gluon/3.9/bug_ws_add_no_fence.sm_100a.ttgir";
    let (code, _, err) = bwsim(&["check", file, "--schedules", "4", "--jobs", "2"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("error[missing-fence]"), "{err}");
    assert!(err.contains("tests/gluon/planted_bugs.py:45:9"), "{err}");
    for quoted in [
        "tma.async_load(a_desc, [xoff, yoff], bar, a_bufs.index(index))",
        "a_val = a_bufs.index(load_index).load(layout)",
        "mbarrier.arrive(load_empty_bars.index(load_index), count=1)",
    ] {
        assert!(err.contains(quoted), "`{quoted}` not quoted:\n{err}");
    }
    assert!(
        err.contains(&format!("replay: bwsim check {file} --seed 0")),
        "{err}"
    );
    assert!(err.contains("4 schedules in"), "{err}");
    // The bwsim operations the diagnostic names, in Gluon's words.
    assert!(
        err.contains("in Gluon: `fence.async_shared` is fence_async_shared()"),
        "{err}"
    );

    let (code, out, _) = bwsim(&["check", file, "--schedules", "4", "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["ok"], false, "{out}");
    let findings = v["findings"].as_array().expect("findings");
    assert!(!findings.is_empty(), "{out}");
    for f in findings {
        let d = &f["diagnostic"];
        assert_eq!(d["code"], "missing-fence", "{out}");
        let notes = d["notes"].as_array().expect("notes");
        assert!(
            notes
                .iter()
                .any(|n| n.as_str().is_some_and(|n| n.starts_with("in Gluon: "))),
            "{out}"
        );
        // The two TMA loads of planted_bugs.py.
        let line = d["primary"]["line_col"][0].as_u64();
        assert!(matches!(line, Some(45) | Some(46)), "{out}");
    }

    let fixed = "tests/gluon/3.9/bug_ws_add_fixed.sm_100a.ttgir";
    bwsim_says(&["check", fixed, "--schedules", "4"], 0, &["no hazards found"]);
}

/// One pass reports everything: `bwsim check` on a kernel whose TMA store moves an f32 buffer
/// through an f16 descriptor reports that (`tma-dtype`, defined hardware behaviour) and goes on
/// to the hazard the kernel is about (`write-while-in-flight`), both at the Python lines, exit
/// 1; `bwsim run` runs it to completion and reports the static error with its outputs.
#[test]
fn check_and_run_report_a_tma_dtype_mismatch_with_the_hazard() {
    let file = "tests/gluon/3.6/bug_tma_dtype_race.sm_100a.ttgir";
    let (code, out, err) = bwsim(&["check", file, "--schedules", "4", "--json"]);
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let codes: std::collections::BTreeSet<String> = (v["findings"].as_array().expect("findings"))
        .iter()
        .filter_map(|f| f["diagnostic"]["code"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        codes,
        ["tma-dtype", "write-while-in-flight"]
            .iter()
            .map(|c| c.to_string())
            .collect(),
        "{out}"
    );
    let (code, out, err) = bwsim(&["run", file]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("outcome   completed"), "{out}");
    assert!(out.contains("result    ERROR"), "{out}");
    assert!(err.contains("error[tma-dtype]"), "{err}");
    assert!(err.contains("tma_dtype_race.py:29:5"), "{err}");
}

/// `bwsim run` checks a fixture against the reference its sidecar names for the fixture's
/// release: Triton 3.6 and 3.7 count a histogram value outside the bins in the bin of its low
/// bits, 3.8 and later in none (`// run [3.6-3.7]: reference ..._low_bits`), and each
/// release's kernel passes against its own reference, not the kernel name's.
#[test]
fn run_takes_the_reference_the_sidecar_names_for_the_release() {
    for release in ["3.7", "3.9"] {
        let file = format!("tests/gluon/{release}/register_gather_histogram.sm_100a.ttgir");
        let (code, out, err) = bwsim(&["run", &file, "--json"]);
        assert_eq!(code, 0, "{file}: {out}{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        assert_eq!(v["result"], "PASS", "{file}: {out}");
        let reference = match release {
            "3.7" => "register_gather_histogram_low_bits",
            _ => "register_gather_histogram_kernel",
        };
        assert_eq!(v["reference"], reference, "{file}: {out}");
    }
}

/// What the sidecar of a fixture of `version` (`(3, 9)`) says of it: whether the import
/// refuses it (a `// refused:` directive that applies: gluon/tests/gluon_corpus.rs), and the
/// error code and message text with which the PTX backend refuses it (`// ptx: CODE TEXT`),
/// if it does.
fn sidecar_says(
    ttgir: &std::path::Path,
    version: (u32, u32),
    target: &str,
) -> (bool, Option<(String, String)>) {
    let Some(sidecar) = bwsim_gluon::launch_path_for(ttgir) else {
        return (false, None);
    };
    let text = std::fs::read_to_string(&sidecar).expect("sidecar");
    let ds = bwsim_testkit::directives::parse(&text, bwsim_testkit::directives::GLUON_KEYS, true)
        .unwrap_or_else(|e| panic!("{}: {e}", sidecar.display()));
    let path = &sidecar;
    let applies = |key: &'static str| {
        ds.iter().filter(move |d| {
            d.key == key
                && d.applies_to(version, target)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
    };
    let ptx = applies("ptx").next_back().map(|d| {
        let (code, text) = d
            .value
            .split_once(' ')
            .unwrap_or_else(|| panic!("{}: `ptx: CODE TEXT`", sidecar.display()));
        (code.to_string(), text.trim().to_string())
    });
    (applies("refused").next().is_some(), ptx)
}

/// Every correct Gluon fixture of every Triton version (tests/gluon/VERSION/, not the planted
/// bugs nor the fixtures whose import is refused) lowers to PTX for its target and ptxas
/// assembles it (`bwsim ptx FILE.ttgir --cubin`), as the bundled kernels do in
/// backends/tests/ptxas.rs: the imported kernels, with their layouts as Triton chose them,
/// go through the PTX backend too; a fixture whose sidecar says the backend refuses it
/// (`// ptx: CODE TEXT`) fails with that error, and the test fails once it lowers. ptxas comes
/// from `BWSIM_PTXAS`, `PATH` or `.tools/py`.
#[test]
fn every_gluon_fixture_lowers_to_ptx_that_ptxas_assembles() {
    let dir = scratch("gluon-ptx");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut fixtures = Vec::new();
    // The newest release in the default tier, every release in the full one.
    let newest = bwsim_gluon::version::Version::newest();
    let every_release =
        bwsim_testkit::runs_in_full_tier("ptxas over the fixtures of the older Triton releases");
    for v in bwsim_gluon::version::Version::all().filter(|v| every_release || *v == newest) {
        let version = bwsim_testkit::directives::release(v.minor()).expect("a release line");
        let folder = root.join("tests/gluon").join(v.minor());
        for e in std::fs::read_dir(&folder).expect("a version folder") {
            let name = e.expect("entry").file_name().to_string_lossy().into_owned();
            let Some((_, target)) = name.strip_suffix(".ttgir").and_then(|s| s.rsplit_once('.')) else {
                continue;
            };
            let (refused, ptx) = sidecar_says(&folder.join(&name), version, target);
            if !name.starts_with("bug_") && !refused {
                fixtures.push((format!("{}/{name}", v.minor()), ptx));
            }
        }
    }
    fixtures.sort();
    let releases = if every_release { 4 } else { 1 };
    assert!(fixtures.len() >= releases * 25, "{fixtures:?}");
    // One `bwsim ptx` (and ptxas) per fixture, on every core.
    let threads = bwsim_isa::pool::threads(usize::MAX);
    let mut failed: Vec<String> =
        bwsim_isa::pool::map_ordered(&fixtures, threads, |_, (f, ptx)| lower_and_assemble(&dir, f, ptx))
            .into_iter()
            .flatten()
            .collect();
    failed.sort();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// `bwsim ptx tests/gluon/F --cubin ...`: what is wrong with the outcome, given what the
/// fixture's sidecar says of the PTX backend (`ptx`: the refusal it states), or `None`.
fn lower_and_assemble(dir: &std::path::Path, f: &str, ptx: &Option<(String, String)>) -> Option<String> {
    let out = dir.join(f.replace('/', "_"));
    let cubin = out.with_extension("cubin");
    let (code, _, err) = bwsim(&[
        "ptx",
        &format!("tests/gluon/{f}"),
        "-o",
        &out.with_extension("ptx").to_string_lossy(),
        "--cubin",
        &cubin.to_string_lossy(),
    ]);
    match ptx {
        None if code != 0 || !cubin.exists() => Some(format!("{f} (exit {code}):\n{err}")),
        Some((c, text)) if code == 0 => Some(format!(
            "{f} lowers now, but its sidecar says the backend refuses it ({c}: {text}); remove its `ptx:` line"
        )),
        Some((c, text)) if !(err.contains(&format!("error[{c}]")) && err.contains(text.as_str())) => {
            Some(format!("{f}: not the refusal its sidecar states ({c}: {text}):\n{err}"))
        }
        _ => None,
    }
}

/// The warp-specialized cluster fixtures (tests/gluon/3.8/pair_ring_matmul.py): each cluster
/// barrier the default partition executes outside the `warp_specialize` region (the import
/// adds them as Triton's compiler does: a relaxed one publishing a barrier the pair shares
/// before the region, one before the kernel's end) is executed by every warp of the CTA,
/// workers and the warps of no partition included, in the same order around the CTA barrier
/// that opens the region, as in Triton 3.9's PTX for these kernels (`barrier.cluster` waits
/// for every non-exited thread of the cluster, PTX ISA). `bwsim ptx` lowers each for both
/// targets (ptxas assembles them in `every_gluon_fixture_lowers_to_ptx_that_ptxas_assembles`).
#[test]
fn warp_specialized_cluster_fixtures_run_each_cluster_barrier_on_every_warp() {
    let dir = scratch("gluon-cluster-ws");
    let exit = [
        "bar.sync 0",
        "barrier.cluster.arrive.release.aligned",
        "barrier.cluster.wait.acquire.aligned",
    ];
    let publish = [
        "barrier.cluster.arrive.relaxed.aligned",
        "barrier.cluster.wait.acquire.aligned",
    ];
    let pair: Vec<&str> = publish.iter().chain(&exit).copied().collect();
    for (fixture, want, warps) in [
        // 4 default warps, a producer of 4.
        ("cluster_ws_relay", exit.to_vec(), 8),
        ("bug_cluster_ws_relay_no_wait", exit.to_vec(), 8),
        // 4 default warps, a worker of 1, rounded up to two warpgroups.
        ("cluster_ws_pair_signal", pair, 8),
    ] {
        for target in ["sm_100a", "sm_90a"] {
            let f = format!("tests/gluon/3.9/{fixture}.{target}.ttgir");
            let out = dir.join(format!("{fixture}.{target}.ptx"));
            let (code, _, err) = bwsim(&["ptx", &f, "-o", &out.to_string_lossy()]);
            assert_eq!(code, 0, "{f}: {err}");
            let text = std::fs::read_to_string(&out).expect("the PTX");
            assert!(
                text.contains(&format!(".target {target}")) && text.contains(".explicitcluster"),
                "{f}"
            );
            assert!(
                text.contains(&format!("blockDim = ({}, 1, 1)", 32 * warps)),
                "{f}: {warps} warps expected:\n{text}"
            );
            for w in 0..warps {
                assert_eq!(
                    ptx_walk::synchronisations(&text, w),
                    want,
                    "{f}: warp {w}:\n{text}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

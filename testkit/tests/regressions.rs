//! Every failure the fuzzers found, as the smallest input that showed it, with the behaviour
//! it must have now. Each test names the run that found it.

use bwsim_isa::launch;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{Diagnostic, Kernel};
use bwsim_testkit::oracle::{self, Budget, Verdict};
use bwsim_testkit::TtgirCase;

const HEAD: &str = "kernel k {\n  target sm_100a\n  num_warps 4\n";

fn parse(src: &str) -> Kernel {
    bwsim_isa::parser::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}"))
}

fn assert_verifies(src: &str) {
    let k = parse(src);
    let (c, d) = verify(&k, &VerifyOptions::default());
    assert!(c.is_some(), "verify: {d:?}");
}

/// The verifier's diagnostics for `src`, which must parse and must not verify.
fn refused(src: &str) -> Vec<Diagnostic> {
    let k = parse(src);
    let (c, d) = verify(&k, &VerifyOptions::default());
    assert!(c.is_none(), "{src} verified");
    d
}

/// Found by the first short run of the generated-kernel property: a grid of
/// `[2^31 - 1, 2^31 - 1, 2^31 - 1]` overflowed the CTA count (`u64` product) in the simulator.
/// Grids beyond the hardware's `[2^31 - 1, 65535, 65535]` are now a launch diagnostic.
#[test]
fn grid_beyond_hardware_limits_is_a_launch_error_not_an_overflow() {
    for (grid, ok) in [
        ("[2147483647, 2147483647, 2147483647]", false),
        ("[65536, 65536]", false),
        ("[1, 1, 65536]", false),
        ("[2147483647, 65535, 65535]", true),
    ] {
        let src = format!(
            "{HEAD}  param p: ptr(f32)\n  launch {{\n    grid = {grid}\n    tensor t: f32[4] = zeros()\n    p = t\n  }}\n}}\n"
        );
        let k = parse(&src);
        let (c, d) = verify(&k, &VerifyOptions::default());
        if ok {
            let c = c.unwrap_or_else(|| panic!("{grid}: {d:?}"));
            let plan = launch::resolve(&c, k.launch.as_ref().expect("launch")).expect("resolves");
            assert_eq!(plan.num_ctas(), 2147483647u64 * 65535 * 65535);
        } else {
            let e = d
                .iter()
                .find(|d| d.code == "launch")
                .unwrap_or_else(|| panic!("{grid}: {d:?}"));
            assert!(
                e.message.contains("exceeds the hardware's grid limits"),
                "{}",
                e.message
            );
            assert!(e.notes.iter().any(|n| n.contains("[2147483647, 65535, 65535]")));
        }
    }
}

/// The largest legal grid runs into the step limit, not an overflow: CTAs are admitted one
/// after another and the run stops after the configured number of steps.
#[test]
fn largest_grid_runs_into_the_step_limit() {
    let src = format!(
        "{HEAD}  let bars = mbar.alloc 1\n  mbar.init bars[0], 1\n  launch {{\n    grid = [2147483647, 65535, 65535]\n    limit steps = 1000\n  }}\n}}\n"
    );
    let r = bwsim_sim::run_source(&src, &[], 1).expect("runs");
    assert_eq!(
        r.outcome,
        bwsim_sim::Outcome::LimitReached(bwsim_sim::Limit::Steps)
    );
    assert_eq!(r.counters.steps, 1000);
}

/// Found by the first short run of the generated-kernel property: `f32[3, 1 << 62]` overflowed
/// the tensor's byte count (`numel * bits`). Sizes saturate; such a launch is refused by the
/// memory limit before anything is allocated.
#[test]
fn tensor_bytes_beyond_u64_are_refused_by_the_memory_limit() {
    for dims in ["3, (1 << 62)", "1, (1 << 62)", "(1 << 40), (1 << 20)"] {
        let src = format!(
            "{HEAD}  param p: ptr(f32)\n  launch {{\n    grid = [1]\n    tensor t: f32[{dims}] = zeros()\n    p = t\n  }}\n}}\n"
        );
        let k = parse(&src);
        let (c, d) = verify(&k, &VerifyOptions::default());
        let Some(c) = c else {
            // numel itself overflows: the launch check says so.
            assert!(
                d.iter().any(|d| d.message.contains("tensor size overflows")),
                "{d:?}"
            );
            continue;
        };
        let plan = launch::resolve(&c, k.launch.as_ref().expect("launch")).expect("resolves");
        let e = launch::materialize(&plan, 0).expect_err("refused");
        assert_eq!(e.code, "memory-limit");
        assert_eq!(
            oracle::check_text(&src, &Budget::default()),
            Verdict::MemoryRefused
        );
    }
}

/// Found by the generated-kernel statistics (a kernel rejected for no visible reason): a loop
/// variable called `i1` — an element-type name — made `bufs[i1 % 2]` a constant expression on
/// the type `i1` ("`%` does not apply to these constants"). Element-type names cannot be bound.
#[test]
fn element_type_names_cannot_be_bound() {
    for (stmt, name) in [
        ("  for i1 in 0..4 {\n  }\n", "i1"),
        ("  let u8 = 3\n", "u8"),
        ("  static_for f32 in 0..2 {\n  }\n", "f32"),
    ] {
        let src = format!("{HEAD}{stmt}}}\n");
        let d = bwsim_isa::parser::parse(&src).expect_err("rejected");
        let e = &d[0];
        assert_eq!(e.code, "syntax");
        assert_eq!(e.message, format!("`{name}` is an element type, not a name"));
        assert_eq!(&src[e.primary.span.range()], name);
    }
    // Other names that merely start like a type still work.
    assert_verifies(&format!("{HEAD}  for i1x in 0..4 {{\n  }}\n}}\n"));
}

/// Found by the first long run of mutated generated kernels (case 1178 of seed 3, a hang):
/// `arange(-2147483648, 64, lin)` verified and the simulator set out to build a 2^31-element
/// tile (16 GiB). Register tiles above Triton's 2^20 elements are now a `tile-size` error,
/// wherever they arise, and `arange`'s length is computed without overflow.
#[test]
fn huge_register_tiles_are_a_verifier_error() {
    for e in [
        "arange(-2147483648, 64, lin)",
        "arange(-9223372036854775807, 9223372036854775807, lin)",
        "full([1048576, 2], 0.0, f32, row)",
        "broadcast(expand_dims(arange(0, 1024, lin), 1), [1024, 2048])",
        "expand_dims(arange(0, 1048576, lin), 1) + expand_dims(arange(0, 2, lin2), 0)",
    ] {
        let src = format!(
            "{HEAD}  layout lin = blocked([1], [32], [4], [0])\n  layout lin2 = blocked([1], [32], [4], [0])\n  layout row = blocked([1, 1], [1, 32], [1, 4], [1, 0])\n  let x = {e}\n}}\n"
        );
        let d = refused(&src);
        let t = d
            .iter()
            .find(|d| d.code == "tile-size")
            .unwrap_or_else(|| panic!("{e}: {d:?}"));
        assert!(t.message.contains("more than 1048576"), "{}", t.message);
    }
}

/// Found while probing what the mutator's `static_for` insertions reach: three nested
/// `static_for`s of 1024 trips each (each under the per-loop limit) made the verifier unroll
/// 2^30 bodies (over a minute, then the simulator and the backend again); and bounds at the
/// `i64` extremes overflowed the trip count. Nested unrolling is now capped in all, and trip
/// counts are computed without overflow.
#[test]
fn nested_static_for_is_capped_in_all_and_extreme_bounds_do_not_overflow() {
    let nested = format!(
        "{HEAD}  let bars = mbar.alloc 1\n  static_for i in 0..1024 {{\n    static_for j in 0..1024 {{\n      static_for k in 0..1024 {{\n        mbar.init bars[0], 1\n      }}\n    }}\n  }}\n}}\n"
    );
    let t = std::time::Instant::now();
    let d = refused(&nested);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        t.elapsed()
    );
    let e = d
        .iter()
        .find(|d| d.code == "static-for")
        .expect("static-for error");
    assert!(e.message.contains("unroll 1048576 copies"), "{}", e.message);
    // Exactly at the cap is fine.
    assert_verifies(&format!(
        "{HEAD}  static_for i in 0..256 {{\n    static_for j in 0..256 {{\n    }}\n  }}\n}}\n"
    ));
    for (a, b, st) in [
        ("(-9223372036854775807 - 1)", "9223372036854775807", "1"),
        ("0", "9223372036854775807", "4611686018427387904"),
        (
            "9223372036854775806",
            "9223372036854775807",
            "9223372036854775807",
        ),
    ] {
        let src = format!("{HEAD}  static_for i in {a}..{b} step {st} {{\n  }}\n}}\n");
        let k = parse(&src);
        let (_, d) = verify(&k, &VerifyOptions::default());
        // Either within the limit (and fine) or refused with the trip count: never a panic.
        for e in d.iter().filter(|d| d.code == "static-for") {
            assert!(e.message.contains("iterations (limit 1024)"), "{}", e.message);
        }
    }
}

/// Every saved fuzzer input (testkit/tests/findings/) passes the whole oracle now.
///
/// - `static-for-trip-overflow.tile`: the first 36-minute run, case 29202 of seed 1000 (a seed
///   kernel with `NUM_LOAD_BUFFERS = 9223372036854775807`): the `static_for` trip count
///   overflowed in the verifier (fixed with the nested-unroll cap above).
/// - `cdiv-by-i64-min.tile`: the second long run, case 97554 of seed 2000 (`XBLOCK =
///   (-9223372036854775807 - 1)`): `cdiv(x, i64::MIN)` computed `y - 1` unchecked.
/// - `tmem-col-stride-overflow.tile`: the third long run, case 72060 of seed 3000
///   (`col_stride=0x7fffffff`): TMEM column arithmetic multiplied unchecked.
#[test]
fn saved_findings_pass_the_oracle() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/findings");
    let mut n = 0;
    for p in files_with_extension(&dir, "tile") {
        let bytes = std::fs::read(&p).expect("readable");
        bwsim_testkit::with_big_stack(move || oracle::check(&bytes, &Budget::default()));
        n += 1;
    }
    assert!(n >= 1, "no saved findings in {}", dir.display());
    // TTGIR cases (their inputs in findings/, tested below).
    for p in files_with_extension(&dir, "ttgir") {
        let case = TtgirCase::from_bytes(&std::fs::read(&p).expect("readable"));
        bwsim_testkit::with_big_stack(move || oracle::check_ttgir(&case, &Budget::default()));
    }
}

/// The files in `dir` whose extension is `ext`, sorted by path.
fn files_with_extension(dir: &std::path::Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("findings folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    paths.sort();
    paths
}

fn finding(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/findings")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every error of a refused import points at text inside the composite source (the oracle's
/// property).
fn assert_refused_with_spans(text: &str) {
    let l = bwsim_gluon::import_text("k.ttgir", text, None, None);
    let ds = l.kernel.expect_err("refused");
    for d in ds.iter().filter(|d| d.is_error()) {
        assert!(
            !d.primary.span.is_dummy() && d.primary.span.end as usize <= l.source.text.len(),
            "a spanless or misplaced error for {text:?}: {d:?}"
        );
    }
}

/// Found by the first short run of the TTGIR property (Triton 3.7 seeds, a truncation:
/// `findings/ttgir-no-module-spanless.ttgir`): a file without a `module` is refused
/// with `error[ttgir-module]: no \`module\` in the file`, which had no span (it showed no
/// location); it now points at the file's first line.
#[test]
fn a_file_without_a_module_is_refused_with_a_span() {
    assert_refused_with_spans(&finding("ttgir-no-module-spanless.ttgir"));
    for text in ["", "\n", "#loc = loc(unknown)\n", "// triton-version: 3.9.0\n"] {
        assert_refused_with_spans(text);
    }
}

/// Found by probing what a TTGIR location may name (`findings/python-location-dev-zero.ttgir`):
/// the import reads every Python file the locations name (gluon/src/source.rs, `read_python`,
/// `std::fs::read_to_string`), whatever it is, so `loc("/dev/zero":1:1)` reads until memory
/// runs out and a FIFO blocks the import forever; only regular files up to 16 MiB are read now. This test names a FIFO (a hang without the
/// memory) and gives the import 5 seconds.
#[test]
fn python_locations_naming_special_files_do_not_hang_the_import() {
    let fifo = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("ttgir-location.fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", fifo.display());
    let text = finding("python-location-dev-zero.ttgir").replace("/dev/zero", &fifo.to_string_lossy());
    let budget = Budget {
        import_time: std::time::Duration::from_secs(5),
        ..Budget::default()
    };
    let v = oracle::check_ttgir(&TtgirCase::new(&text, None), &budget);
    assert_eq!(v, Verdict::ImportError);
}

/// Found by the second long run (case 97554 of seed 2000): constant `cdiv(x, y)` overflowed
/// computing `y - 1` for `y = i64::MIN`. And, looking for the same pattern, shape products of
/// `reshape` and of TMA shared buffers multiplied user dimensions unchecked. All are overflow
/// diagnostics or plain mismatches now.
#[test]
fn constant_cdiv_and_shape_products_do_not_overflow() {
    let src = format!("{HEAD}  const B: int = (-9223372036854775807 - 1)\n  const C: int = cdiv(5, B)\n}}\n");
    let k = parse(&src);
    let (c, d) = verify(&k, &VerifyOptions::default());
    // cdiv(5, i64::MIN) = (5 + i64::MIN - 1) / i64::MIN = 0: fine, computed without overflow.
    assert!(c.is_some(), "{d:?}");
    // Quotients that fit are computed even when x + y - 1 would not fit an i64 ...
    assert_verifies(&format!(
        "{HEAD}  const C: int = cdiv(9223372036854775807, 2)\n  static_assert C == 4611686018427387904, \"cdiv\"\n}}\n"
    ));
    // ... and a quotient that does not fit is an overflow diagnostic.
    let src = format!("{HEAD}  const C: int = cdiv((-9223372036854775807 - 1), -1)\n}}\n");
    let d = refused(&src);
    assert!(d.iter().any(|d| d.message.contains("overflow")), "{d:?}");

    let src = format!(
        "{HEAD}  layout lin = blocked([1], [32], [4], [0])\n  let x = reshape(arange(0, 64, lin), [4294967295, 4294967295, 4294967295])\n}}\n"
    );
    let d = refused(&src);
    assert!(
        d.iter().any(|d| d.message.contains("changes the element count")),
        "{d:?}"
    );
}

/// Found by the third long run (case 72060 of seed 3000): a `tmem.alloc` with
/// `col_stride=0x7fffffff` overflowed the verifier's column count (`bits * col_stride` in
/// `u32`); the same review found a descriptor's `nbytes` multiplying its block dimensions
/// unchecked. Both saturate: the kernel gets its capacity or box diagnostic.
#[test]
fn tmem_col_stride_and_descriptor_bytes_do_not_overflow() {
    for (decl, stmt) in [
        (
            "",
            "  let tm = tmem.alloc f16[128, 64], block=[128, 64], col_stride=0x7fffffff\n",
        ),
        (
            "  param d: tensor_desc(f32[65536, 65536, 65536, 65536, 65536], nvmma(128))\n",
            "  let bars = mbar.alloc 1\n  mbar.init bars[0], 1\n  mbar.expect bars[0], d.nbytes\n",
        ),
    ] {
        let src = format!("{HEAD}{decl}{stmt}}}\n");
        let d = refused(&src);
        assert!(d.iter().any(|d| d.is_error()), "{d:?}");
    }
}

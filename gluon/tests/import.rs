//! The importer on its own: its printed output (one fixture snapshotted); statements carry
//! their Python lines in every version's TTGIR; unsupported operations are errors naming the
//! operation at its Python line (quoted when the file is there, `file:line:col` when it is not);
//! malformed TTGIR never panics. (Every fixture's round trip through `.tile` text is part of
//! each fixture's test in gluon_corpus.rs.)

use bwsim_gluon::version::Version;
use bwsim_isa::diag;
use bwsim_isa::launch::HostTensor;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{Diagnostic, Kernel, SourceFile};
use bwsim_sim::RunResult;
use std::path::{Path, PathBuf};

/// The fixtures of one Triton version (tests/gluon/3.9/, ...).
fn dir(v: Version) -> PathBuf {
    Path::new("../tests/gluon").join(v.minor())
}

#[test]
fn import_output_snapshot() {
    let l = bwsim_gluon::load(&dir(Version::newest()).join("tcgen05_copy.sm_100a.ttgir")).expect("readable");
    let k = l.kernel.expect("imports");
    insta::with_settings!({
        snapshot_path => "../../traces/gluon",
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("import_tcgen05_copy", bwsim_isa::print(&k));
    });
}

/// Statements carry the Python line they came from, in every version's TTGIR.
#[test]
fn spans_point_at_python_lines() {
    for v in Version::all() {
        let l = bwsim_gluon::load(&dir(v).join("elementwise_add_ws.sm_100a.ttgir")).expect("readable");
        let k = l.kernel.expect("imports");
        let mut seen = 0;
        k.walk_stmts(&mut |s| {
            if let bwsim_isa::ir::StmtKind::Op(op) = &s.kind {
                if op.kind.name() == "fence.async_shared" {
                    let line = l.source.line_col(op.span.start as usize).0;
                    assert!(l.source.file_name_of(op.span).ends_with("elementwise_add.py"));
                    assert_eq!(
                        l.source.snippet(op.span),
                        "fence_async_shared()",
                        "{v:?} line {line}"
                    );
                    seen += 1;
                }
            }
        });
        assert_eq!(seen, 2, "{v:?}");
    }
}

/// A TTGIR module with one operation `op` (a line of MLIR using `%x`, an i32 parameter) at
/// `kern.py:3:4`.
fn module_with(op: &str, py: &str) -> String {
    format!(
        "#loc1 = loc(\"{py}\":1:0)\n#loc2 = loc(\"{py}\":3:4)\nmodule attributes {{\"ttg.num-warps\" = 4 : i32, ttg.target = \"cuda:100\"}} {{\n  tt.func public @k(%x: f32 loc(\"x\"(#loc1))) attributes {{noinline = false}} {{\n    {op} loc(#loc2)\n    tt.return loc(#loc1)\n  }} loc(#loc1)\n}} loc(#loc1)\n"
    )
}

/// `text` imported as `k.ttgir` (with `launch` as its launch section): its composite source and
/// the kernel. A refusal fails the test with the rendered diagnostics.
fn import_ok(text: &str, launch: Option<&str>) -> (SourceFile, Kernel) {
    let l = bwsim_gluon::import_text(
        "k.ttgir",
        text,
        None,
        launch.map(|s| ("k.launch".into(), s.into())),
    );
    let k = l
        .kernel
        .unwrap_or_else(|d| panic!("{}", diag::render(&d, &l.source)));
    (l.source, k)
}

/// The `.tile` text of the import of the module with `op` at `kern.py:3:4`.
fn import_printed(op: &str) -> String {
    bwsim_isa::print(&import_ok(&module_with(op, "kern.py"), None).1)
}

/// The errors of the import of `text` as `k.ttgir`, which must be refused (`why`), and their
/// rendering.
fn refused(text: &str, why: &str) -> (Vec<Diagnostic>, String) {
    let l = bwsim_gluon::import_text("k.ttgir", text, None, None);
    let d = l.kernel.expect_err(why);
    let r = diag::render(&d, &l.source);
    (d, r)
}

/// [`refused`] for the module with `op` at `kern.py:3:4`.
fn refused_op(op: &str, why: &str) -> (Vec<Diagnostic>, String) {
    refused(&module_with(op, "kern.py"), why)
}

/// Verify `k` and run it on inputs drawn with `seed`: the first input and the result. A verifier
/// error fails the test.
fn run(source: &SourceFile, k: &Kernel, seed: u64) -> (HostTensor, RunResult) {
    let (c, d) = verify(k, &VerifyOptions::default());
    let c = c.unwrap_or_else(|| panic!("{}", diag::render(&d, source)));
    let plan = bwsim_isa::launch::resolve(&c, k.launch.as_ref().expect("launch")).expect("plan");
    let inputs = bwsim_isa::launch::materialize(&plan, seed).expect("within the memory limit");
    let input = inputs[0].clone();
    (input, bwsim_sim::run(&c, &plan, inputs, &Default::default()))
}

/// [`run`], which must end without diagnostics.
fn run_clean(source: &SourceFile, k: &Kernel, seed: u64) -> (HostTensor, RunResult) {
    let (input, r) = run(source, k, seed);
    assert!(
        r.diagnostics.is_empty(),
        "{}",
        diag::render(&r.diagnostics, source)
    );
    (input, r)
}

/// `text` imported with `launch` ([`import_ok`]) and run on inputs drawn with `seed`
/// ([`run_clean`]): the first input and the result.
fn import_and_run(text: &str, launch: &str, seed: u64) -> (HostTensor, RunResult) {
    let (source, k) = import_ok(text, Some(launch));
    run_clean(&source, &k, seed)
}

#[test]
fn unsupported_op_names_the_op_and_quotes_the_python_line() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bwsim-gluon-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("kern.py"), "def k(x):\n    # acos\n    y = gl.acos(x)\n").expect("write");
    let text = module_with("%y = math.acos %x : f32", "kern.py");
    let l = bwsim_gluon::import_text("k.ttgir", &text, Some(&dir), None);
    let d = l.kernel.expect_err("math.acos is not supported");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].code, "ttgir-unsupported-op");
    assert!(d[0].message.contains("`math.acos`"), "{}", d[0].message);
    let r = diag::render(&d, &l.source);
    assert!(r.contains("y = gl.acos(x)"), "{r}");
    assert!(r.contains("kern.py:3:5"), "{r}");
    // The TTGIR line is the second label.
    assert!(r.contains("k.ttgir:5:"), "{r}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_the_python_file_diagnostics_print_file_line_col() {
    let text = module_with("%y = math.acos %x : f32", "gone/kern.py");
    let l = bwsim_gluon::import_text("k.ttgir", &text, None, None);
    let d = l.kernel.expect_err("math.acos is not supported");
    let r = diag::render(&d, &l.source);
    assert!(r.contains("gone/kern.py:3:5"), "{r}");
    assert!(r.contains(bwsim_gluon::source::NOT_AVAILABLE), "{r}");
    let j = d[0].clone().locate(&l.source);
    assert_eq!(j.primary.line_col, Some((3, 5)));
}

#[test]
fn every_unsupported_op_is_reported_not_only_the_first() {
    let text = module_with(
        "%y = math.acos %x : f32 loc(#loc2)\n    %z = math.acos %x : f32",
        "kern.py",
    );
    let (d, _) = refused(&text, "two unsupported ops");
    let names: Vec<&str> = d.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(d.len(), 2, "{names:?}");
}

#[test]
fn math_functions_and_one_op_reductions_import() {
    let printed = import_printed(
        "%y = math.exp2 %x : f32 loc(#loc2)\n    %z = math.rsqrt %y : f32 loc(#loc2)\n    %w = tt.precise_sqrt %z : f32",
    );
    for f in ["exp2(x)", "rsqrt(y)", "sqrt(z)"] {
        assert!(printed.contains(f), "{f} in:\n{printed}");
    }
}

#[test]
fn libdevice_calls_import_as_math_functions_and_inline_asm_is_refused_by_name() {
    let printed = import_printed(
        "%y = tt.extern_elementwise %x {libname = \"\", libpath = \"\", pure = true, symbol = \"__nv_fast_expf\"} : (f32) -> f32 loc(#loc2)\n    %z = tt.extern_elementwise %y {libname = \"\", libpath = \"\", pure = true, symbol = \"__nv_erff\"} : (f32) -> f32",
    );
    assert!(
        printed.contains("exp(x)") && printed.contains("erf(y)"),
        "{printed}"
    );
    let (_, r) = refused_op("%y = tt.elementwise_inline_asm \"tanh.approx.f32 $0, $1;\" {constraints = \"=r,r\", packed_element = 1 : i32, pure = true} %x : f32 -> f32", "inline asm is refused");
    assert!(r.contains("tanh.approx.f32 $0, $1;"), "{r}");
    let (_, r) = refused_op("%y = tt.extern_elementwise %x {libname = \"\", libpath = \"\", pure = true, symbol = \"__nv_acosf\"} : (f32) -> f32", "acos is refused");
    assert!(r.contains("`__nv_acosf`"));
    let printed = import_printed(
        "%y = tt.extern_elementwise %x {libname = \"\", libpath = \"\", pure = true, symbol = \"__nv_tanhf\"} : (f32) -> f32 loc(#loc2)\n    %z = math.log1p %y : f32 loc(#loc2)\n    %w = math.exp10 %z : f32 loc(#loc2)\n    %v = tt.extern_elementwise %w {libname = \"\", libpath = \"\", pure = true, symbol = \"__nv_log10f\"} : (f32) -> f32",
    );
    for f in ["tanh(x)", "log1p(y)", "exp10(z)", "log10(w)"] {
        assert!(printed.contains(f), "{f} in:\n{printed}");
    }
    let printed = import_printed(
        "%y = math.expm1 %x : f32 loc(#loc2)\n    %z = tt.extern_elementwise %y {libname = \"\", libpath = \"\", pure = true, symbol = \"__nv_tanf\"} : (f32) -> f32 loc(#loc2)\n    %w = tt.extern_elementwise %z {libname = \"\", libpath = \"\", pure = true, symbol = \"__nv_atanf\"} : (f32) -> f32 loc(#loc2)\n    %v = math.atan %w : f32",
    );
    for f in ["expm1(x)", "tan(y)", "atan(z)", "atan(w)"] {
        assert!(printed.contains(f), "{f} in:\n{printed}");
    }
}

/// `tt.cat` orders the result as Triton's lowering does: each thread's registers of the first
/// operand, then of the second, placed by the result's layout. With the operands' layout
/// (two registers a thread) the result's registers 2 and 3 are its second repetition, the
/// second half: a plain concatenation. With four registers a thread the result interleaves
/// the operands thread by thread.
#[test]
fn cat_concatenates_each_threads_registers() {
    for (out_spt, interleaved) in [(2, false), (4, true)] {
        let text = format!(
            r#"#blocked = #ttg.blocked<{{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}}>
#out = #ttg.blocked<{{sizePerThread = [{out_spt}], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}}>
module attributes {{"ttg.num-warps" = 4 : i32, ttg.target = "cuda:100"}} {{
  tt.func public @k(%p: !tt.ptr<i32>, %o: !tt.ptr<i32>) attributes {{noinline = false}} {{
    %r = tt.make_range {{end = 256 : i32, start = 0 : i32}} : tensor<256xi32, #blocked>
    %ps = tt.splat %p : !tt.ptr<i32> -> tensor<256x!tt.ptr<i32>, #blocked>
    %pa = tt.addptr %ps, %r : tensor<256x!tt.ptr<i32>, #blocked>, tensor<256xi32, #blocked>
    %a = tt.load %pa : tensor<256x!tt.ptr<i32>, #blocked>
    %c256 = arith.constant dense<256> : tensor<256xi32, #blocked>
    %pb = tt.addptr %pa, %c256 : tensor<256x!tt.ptr<i32>, #blocked>, tensor<256xi32, #blocked>
    %b = tt.load %pb : tensor<256x!tt.ptr<i32>, #blocked>
    %c = tt.cat %a, %b : tensor<256xi32, #blocked> -> tensor<512xi32, #out>
    %ro = tt.make_range {{end = 512 : i32, start = 0 : i32}} : tensor<512xi32, #out>
    %os = tt.splat %o : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>, #out>
    %po = tt.addptr %os, %ro : tensor<512x!tt.ptr<i32>, #out>, tensor<512xi32, #out>
    tt.store %po, %c : tensor<512x!tt.ptr<i32>, #out>
    tt.return
  }}
}}
"#
        );
        let launch = "launch {\n  grid = [1]\n  tensor x: i32[512] = randint(0 - 1000, 1000)\n  tensor out: i32[512] = fill(5)\n  p = x\n  o = out\n  outputs = [out]\n}\n";
        let (x, r) = import_and_run(&text, launch, 3);
        let out = r.tensor("out").expect("out");
        let xs: Vec<u64> = (0..512).map(|i| x.get_bits(i)).collect();
        // Thread (warp, lane) = t holds a[2t], a[2t + 1] and b[2t], b[2t + 1] (b = x[256..]).
        for t in 0..128usize {
            let regs = [xs[2 * t], xs[2 * t + 1], xs[256 + 2 * t], xs[256 + 2 * t + 1]];
            // The result's element of each register of thread t.
            let at = |i: usize| {
                if out_spt == 4 {
                    4 * t + i
                } else {
                    // Registers (rep, reg): element ((rep * 4 + warp) * 32 + lane) * 2 + reg.
                    (i / 2) * 256 + 2 * t + i % 2
                }
            };
            for (i, want) in regs.iter().enumerate() {
                assert_eq!(
                    out.get_bits(at(i) as u64),
                    *want,
                    "spt {out_spt}, thread {t}, register {i}"
                );
            }
        }
        let concatenated = (0..512).all(|i| out.get_bits(i) == xs[i as usize]);
        assert_eq!(concatenated, !interleaved);
    }
}

/// `ttg.inline_asm` (per-thread inline PTX) runs its block once per thread on the thread's
/// registers in register order: with two elements a thread and the layout repeated twice, a
/// thread's registers are x[2t], x[2t + 1], x[256 + 2t], x[256 + 2t + 1], and the block does
/// something different to each.
#[test]
fn per_thread_inline_asm_binds_each_threads_registers_in_order() {
    let text = r#"#blocked = #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:100"} {
  tt.func public @k(%p: !tt.ptr<i32>, %o: !tt.ptr<i32>, %s: i32) attributes {noinline = false} {
    %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #blocked>
    %ps = tt.splat %p : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>, #blocked>
    %pa = tt.addptr %ps, %r : tensor<512x!tt.ptr<i32>, #blocked>, tensor<512xi32, #blocked>
    %x = tt.load %pa : tensor<512x!tt.ptr<i32>, #blocked>
    %y = ttg.inline_asm "add.s32 $0, $5, $4;\0Amul.lo.s32 $1, $6, 3;\0Asub.s32 $2, $7, $4;\0Axor.b32 $3, $8, 255;" {constraints = "=r,=r,=r,=r,r,r,r,r,r", pure = true} %s, %x : (i32, tensor<512xi32, #blocked>) -> tensor<512xi32, #blocked>
    %os = tt.splat %o : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>, #blocked>
    %po = tt.addptr %os, %r : tensor<512x!tt.ptr<i32>, #blocked>, tensor<512xi32, #blocked>
    tt.store %po, %y : tensor<512x!tt.ptr<i32>, #blocked>
    tt.return
  }
}
"#;
    let launch = "launch {\n  grid = [1]\n  tensor x: i32[512] = randint(0 - 1000, 1000)\n  tensor out: i32[512] = fill(5)\n  p = x\n  o = out\n  s = 1000\n  outputs = [out]\n}\n";
    let (x, r) = import_and_run(text, launch, 3);
    let out = r.tensor("out").expect("out");
    for i in 0..512u64 {
        let v = x.get_bits(i) as u32 as i32;
        // Register (rep, reg) of its thread: rep = i / 256, reg = i % 2.
        let want = match (i / 256) * 2 + i % 2 {
            0 => v + 1000,
            1 => v * 3,
            2 => v - 1000,
            _ => v ^ 255,
        };
        assert_eq!(out.get_bits(i) as u32 as i32, want, "element {i}");
    }
}

/// `arith.floordivsi`, `arith.ceildivsi` and `arith.ceildivui` round the quotient toward -inf
/// and +inf, on tiles (both signs of divisor) and on scalars: checked against the rational
/// quotient rounded by f64 floor/ceil, and unsigned `div_ceil`.
#[test]
fn rounding_divisions_round_toward_the_infinities() {
    let text = r#"#blocked = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:100"} {
  tt.func public @k(%p: !tt.ptr<i32>, %q: !tt.ptr<i32>, %o: !tt.ptr<i32>, %n: i32) attributes {noinline = false} {
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #blocked>
    %ps = tt.splat %p : !tt.ptr<i32> -> tensor<128x!tt.ptr<i32>, #blocked>
    %pp = tt.addptr %ps, %r : tensor<128x!tt.ptr<i32>, #blocked>, tensor<128xi32, #blocked>
    %x = tt.load %pp : tensor<128x!tt.ptr<i32>, #blocked>
    %qs = tt.splat %q : !tt.ptr<i32> -> tensor<128x!tt.ptr<i32>, #blocked>
    %qp = tt.addptr %qs, %r : tensor<128x!tt.ptr<i32>, #blocked>, tensor<128xi32, #blocked>
    %d = tt.load %qp : tensor<128x!tt.ptr<i32>, #blocked>
    %zero = arith.constant dense<0> : tensor<128xi32, #blocked>
    %nd = arith.subi %zero, %d : tensor<128xi32, #blocked>
    %f0 = arith.floordivsi %x, %d : tensor<128xi32, #blocked>
    %f1 = arith.ceildivsi %x, %d : tensor<128xi32, #blocked>
    %f2 = arith.floordivsi %x, %nd : tensor<128xi32, #blocked>
    %f3 = arith.ceildivsi %x, %nd : tensor<128xi32, #blocked>
    %f4 = arith.ceildivui %x, %d : tensor<128xi32, #blocked>
    %c128 = arith.constant dense<128> : tensor<128xi32, #blocked>
    %os = tt.splat %o : !tt.ptr<i32> -> tensor<128x!tt.ptr<i32>, #blocked>
    %o0 = tt.addptr %os, %r : tensor<128x!tt.ptr<i32>, #blocked>, tensor<128xi32, #blocked>
    tt.store %o0, %f0 : tensor<128x!tt.ptr<i32>, #blocked>
    %o1 = tt.addptr %o0, %c128 : tensor<128x!tt.ptr<i32>, #blocked>, tensor<128xi32, #blocked>
    tt.store %o1, %f1 : tensor<128x!tt.ptr<i32>, #blocked>
    %o2 = tt.addptr %o1, %c128 : tensor<128x!tt.ptr<i32>, #blocked>, tensor<128xi32, #blocked>
    tt.store %o2, %f2 : tensor<128x!tt.ptr<i32>, #blocked>
    %o3 = tt.addptr %o2, %c128 : tensor<128x!tt.ptr<i32>, #blocked>, tensor<128xi32, #blocked>
    tt.store %o3, %f3 : tensor<128x!tt.ptr<i32>, #blocked>
    %o4 = tt.addptr %o3, %c128 : tensor<128x!tt.ptr<i32>, #blocked>, tensor<128xi32, #blocked>
    tt.store %o4, %f4 : tensor<128x!tt.ptr<i32>, #blocked>
    %c7 = arith.constant 7 : i32
    %s0 = arith.floordivsi %n, %c7 : i32
    %s1 = arith.ceildivsi %n, %c7 : i32
    %c640 = arith.constant 640 : i32
    %c641 = arith.constant 641 : i32
    %so0 = tt.addptr %o, %c640 : !tt.ptr<i32>, i32
    tt.store %so0, %s0 : !tt.ptr<i32>
    %so1 = tt.addptr %o, %c641 : !tt.ptr<i32>, i32
    tt.store %so1, %s1 : !tt.ptr<i32>
    tt.return
  }
}
"#;
    let launch = "launch {\n  grid = [1]\n  tensor x: i32[128] = randint(0 - 100, 100)\n  tensor d: i32[128] = randint(1, 9)\n  tensor out: i32[642] = fill(5)\n  p = x\n  q = d\n  o = out\n  n = 0 - 20\n  outputs = [out]\n}\n";
    let (x, r) = import_and_run(text, launch, 3);
    let d = r.tensor("d").expect("d");
    let out = r.tensor("out").expect("out");
    let at = |i: u64| out.get_bits(i) as u32 as i32;
    let mut negative = 0;
    for i in 0..128u64 {
        let (a, b) = (x.get_bits(i) as u32 as i32, d.get_bits(i) as u32 as i32);
        negative += (a < 0 && a % b != 0) as usize;
        let exact = |b: i32| a as f64 / b as f64;
        assert_eq!(at(i), exact(b).floor() as i32, "floordivsi({a}, {b})");
        assert_eq!(at(128 + i), exact(b).ceil() as i32, "ceildivsi({a}, {b})");
        assert_eq!(at(256 + i), exact(-b).floor() as i32, "floordivsi({a}, {})", -b);
        assert_eq!(at(384 + i), exact(-b).ceil() as i32, "ceildivsi({a}, {})", -b);
        assert_eq!(
            at(512 + i) as u32,
            (a as u32).div_ceil(b as u32),
            "ceildivui({a}, {b})"
        );
    }
    // Inexact negative quotients are where floor and truncation differ: the draw has some.
    assert!(negative > 10, "{negative}");
    assert_eq!((at(640), at(641)), (-3, -2));
}

/// Inline PTX that pairs f32 lanes imports as the elementwise arithmetic it performs (the
/// paired multiply of tutorial 01-attention-forward becomes `x * x`, a scalar `fma.rn.f32` an
/// `fma`), and a snippet that reads its own output register (`mov.b32 $0, $0`, undefined) is
/// refused saying so.
#[test]
fn inline_asm_of_paired_f32_arithmetic_imports_as_tile_math() {
    // Newlines as MLIR writes them in a string: `\0A`.
    let mul2 = r"\0A {\0A .reg .b64 ra, rb, rc;\0A mov.b64 ra, { $2, $3 };\0A mov.b64 rb, { $4, $5 };\0A mul.f32x2 rc, ra, rb;\0A mov.b64 { $0, $1 }, rc;\0A }\0A";
    let text = module_with(
        &format!(
            "%y = tt.elementwise_inline_asm \"{mul2}\" {{constraints = \"=r,=r,r,r,r,r\", packed_element = 2 : i32, pure = true}} %x, %x : f32, f32 -> f32 loc(#loc2)\n    %z = tt.elementwise_inline_asm \"fma.rn.f32 $0, $1, $2, $3;\" {{constraints = \"=r,r,r,r\", packed_element = 1 : i32, pure = true}} %y, %x, %x : f32, f32, f32 -> f32"
        ),
        "kern.py",
    );
    let printed = bwsim_isa::print(&import_ok(&text, None).1);
    assert!(
        printed.contains("x * x") && printed.contains("fma(y, x, x)"),
        "{printed}"
    );
    let (_, r) = refused_op("%y = tt.elementwise_inline_asm \"mov.b32 $0, $0;\" {constraints = \"=r,r\", packed_element = 1 : i32, pure = true} %x : f32 -> f32", "reading the output is refused");
    assert!(r.contains("reads the output `$0` before writing it"), "{r}");
}

/// `scf.if` with scalar results writes its result types after `->`, not after a colon.
#[test]
fn if_with_scalar_results_imports() {
    let printed = import_printed(
        "%c = arith.cmpf ogt, %x, %x : f32 loc(#loc2)\n    %r:2 = scf.if %c -> (f32, f32) {\n      scf.yield %x, %x : f32, f32 loc(#loc2)\n    } else {\n      %n = arith.negf %x : f32 loc(#loc2)\n      scf.yield %n, %x : f32, f32 loc(#loc2)\n    } loc(#loc2)\n    %s = arith.addf %r#0, %r#1 : f32",
    );
    assert!(printed.contains("if c"), "{printed}");
}

/// A reduction whose combiner is neither one fold per operand nor a (value, index) extreme
/// imports as its combine steps in the GPU's order: each thread folds its registers left to
/// right, then the lanes and the warps combine by butterflies, highest bit first, the lower
/// lane's value on the left. `c(a, b) = 3a + b` (wrapping) depends on that order; the expected
/// value runs the butterflies lane by lane, as shuffles do.
#[test]
fn general_combiners_combine_in_the_gpus_order() {
    // The same placement as a blocked layout and as the linear layout it is.
    let blocked =
        "#ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>";
    let linear = "#ttg.linear<{register = [[1], [256]], lane = [[2], [4], [8], [16], [32]], warp = [[64], [128]], block = []}>";
    for layout in [blocked, linear] {
        let text = r#"#blocked = #ttg.blocked<{sizePerThread = [2], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
#red = LAYOUT
module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:100"} {
  tt.func public @k(%p: !tt.ptr<i32>, %o: !tt.ptr<i32>) attributes {noinline = false} {
    %r = tt.make_range {end = 512 : i32, start = 0 : i32} : tensor<512xi32, #blocked>
    %ps = tt.splat %p : !tt.ptr<i32> -> tensor<512x!tt.ptr<i32>, #blocked>
    %pp = tt.addptr %ps, %r : tensor<512x!tt.ptr<i32>, #blocked>, tensor<512xi32, #blocked>
    %x0 = tt.load %pp : tensor<512x!tt.ptr<i32>, #blocked>
    %x = ttg.convert_layout %x0 : tensor<512xi32, #blocked> -> tensor<512xi32, #red>
    %s = "tt.reduce"(%x) <{axis = 0 : i32}> ({
    ^bb0(%a: i32, %b: i32):
      %c3 = arith.constant 3 : i32
      %m = arith.muli %a, %c3 : i32
      %t = arith.addi %m, %b : i32
      tt.reduce.return %t : i32
    }) : (tensor<512xi32, #red>) -> i32
    tt.store %o, %s : !tt.ptr<i32>
    tt.return
  }
}
"#;
        let text = text.replace("LAYOUT", layout);
        let launch = "launch {\n  grid = [1]\n  tensor x: i32[512] = randint(0 - 100, 100)\n  tensor out: i32[1] = fill(5)\n  p = x\n  o = out\n  outputs = [out]\n}\n";
        let (x, r) = import_and_run(&text, launch, 3);
        let c = |a: i32, b: i32| a.wrapping_mul(3).wrapping_add(b);
        let xs: Vec<i32> = (0..512).map(|i| x.get_bits(i) as u32 as i32).collect();
        // Element k = ((rep * 4 + warp) * 32 + lane) * 2 + reg: each thread's four elements in
        // register order (reg, then rep), folded left to right.
        let thread = |warp: usize, lane: usize| {
            let at = |rep: usize, reg: usize| xs[((rep * 4 + warp) * 32 + lane) * 2 + reg];
            c(c(c(at(0, 0), at(0, 1)), at(1, 0)), at(1, 1))
        };
        // Butterflies: every lane combines its value with its partner's at distance d.
        let butterfly = |mut v: Vec<i32>| {
            let mut d = v.len() / 2;
            while d > 0 {
                v = (0..v.len()).map(|l| c(v[l], v[l ^ d])).collect();
                d /= 2;
            }
            v[0]
        };
        let per_warp: Vec<i32> = (0..4)
            .map(|w| butterfly((0..32).map(|l| thread(w, l)).collect()))
            .collect();
        let want = butterfly(per_warp);
        let out = r.tensor("out").expect("out");
        assert_eq!(out.get_bits(0) as u32 as i32, want);
        // Another order (a plain left fold) gives another value: the test tells orders apart.
        assert_ne!(xs.iter().skip(1).fold(xs[0], |a, &b| c(a, b)), want);
    }
}

#[test]
fn unknown_operations_are_errors_not_drops() {
    let (d, _) = refused_op("%y = tt.frobnicate %x : f32", "unknown op");
    assert!(d[0].message.contains("tt.frobnicate"));
}

fn floor(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Truncations and byte replacements of three fixtures never panic the importer: the newest
/// release's TTGIR in the default tier, every release's in the full tier (the same kernels in
/// each release's spelling; about four times the cost).
#[test]
fn malformed_ttgir_never_panics() {
    let versions: Vec<Version> =
        if bwsim_testkit::runs_in_full_tier("malformed TTGIR of the older Triton releases' fixtures") {
            Version::all().collect()
        } else {
            vec![Version::newest()]
        };
    for (v, name) in versions.into_iter().flat_map(|v| {
        [
            "elementwise_add_ws.sm_100a.ttgir",
            "matmul_warp_specialized.sm_100a.ttgir",
            "async_gather.sm_100a.ttgir",
        ]
        .map(|n| (v, n))
    }) {
        let text = std::fs::read_to_string(dir(v).join(name)).expect("fixture");
        let n = text.len();
        // Truncations, and single-byte replacements by characters MLIR gives meaning to.
        for k in 0..200 {
            let cut = (k * 7919) % n;
            let mut t = text[..floor(&text, cut)].to_string();
            let _ = bwsim_gluon::import_text(name, &t, None, None);
            let at = floor(&text, (k * 104_729) % n);
            t = text.clone();
            let c = ["{", "}", "(", ")", "%", "#", ":", "\n", "<", ">", "\"", "x", "0"][k % 13];
            let end = (at + 1..=n).find(|&e| text.is_char_boundary(e)).unwrap_or(n);
            t.replace_range(at..end, c);
            let _ = bwsim_gluon::import_text(name, &t, None, None);
        }
    }
}

/// Scalar and tensor `arith.select`, splats, a masked store: the imported kernel computes what
/// the TTGIR says (checked against values worked out by hand).
#[test]
fn selects_splats_and_masks_compute_what_the_ttgir_says() {
    let text = r#"#blocked = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:100"} {
  tt.func public @k(%p: !tt.ptr<f32>, %n: i32, %f: f32) attributes {noinline = false} {
    %c = arith.constant dense<1.0> : tensor<128xf32, #blocked>
    %r = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #blocked>
    %s = tt.splat %n : i32 -> tensor<128xi32, #blocked>
    %m = arith.cmpi slt, %r, %s : tensor<128xi32, #blocked>
    %fs = tt.splat %f : f32 -> tensor<128xf32, #blocked>
    %w = arith.select %m, %fs, %c : tensor<128xi1, #blocked>, tensor<128xf32, #blocked>
    %q = arith.cmpi sgt, %n, %n : i32
    %qs = tt.splat %q : i1 -> tensor<128xi1, #blocked>
    %w2 = arith.select %qs, %fs, %c : tensor<128xi1, #blocked>, tensor<128xf32, #blocked>
    %sum = arith.addf %w, %w2 : tensor<128xf32, #blocked>
    %ps = tt.splat %p : !tt.ptr<f32> -> tensor<128x!tt.ptr<f32>, #blocked>
    %pp = tt.addptr %ps, %r : tensor<128x!tt.ptr<f32>, #blocked>, tensor<128xi32, #blocked>
    tt.store %pp, %sum, %m : tensor<128x!tt.ptr<f32>, #blocked>
    tt.return
  }
}
"#;
    let launch = "launch {\n  grid = [1]\n  tensor out: f32[128] = fill(5)\n  p = out\n  n = 100\n  f = 2.5\n  outputs = [out]\n}\n";
    let (source, k) = import_ok(text, Some(launch));
    let (_, r) = run(&source, &k, 0);
    let out = r.tensor("out").expect("out");
    for i in 0..128 {
        let want = if i < 100 { 2.5 + 1.0 } else { 5.0 };
        assert_eq!(out.get(i), want, "out[{i}]");
    }
}

const TRANS_HEADER: &str = r#"#blocked = #ttg.blocked<{sizePerThread = [1, 1], threadsPerWarp = [1, 32], warpsPerCTA = [4, 1], order = [1, 0]}>
#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 32}>
#shared_t = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = true, elementBitWidth = 32}>
#plain = #ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>
#smem = #ttg.shared_memory
"#;

/// Pointers to a row-major `[R, C]` f32 matrix at `%p`, as `%NAME_ptrs` (`blocked` layout).
fn ptrs(name: &str, p: &str, r: usize, c: usize) -> String {
    format!(
        r#"    %{name}_r = tt.make_range {{end = {r} : i32, start = 0 : i32}} : tensor<{r}xi32, #ttg.slice<{{dim = 1, parent = #blocked}}>>
    %{name}_c = tt.make_range {{end = {c} : i32, start = 0 : i32}} : tensor<{c}xi32, #ttg.slice<{{dim = 0, parent = #blocked}}>>
    %{name}_r2 = tt.expand_dims %{name}_r {{axis = 1 : i32}} : tensor<{r}xi32, #ttg.slice<{{dim = 1, parent = #blocked}}>> -> tensor<{r}x1xi32, #blocked>
    %{name}_k = arith.constant dense<{c}> : tensor<{r}x1xi32, #blocked>
    %{name}_rk = arith.muli %{name}_r2, %{name}_k : tensor<{r}x1xi32, #blocked>
    %{name}_c2 = tt.expand_dims %{name}_c {{axis = 0 : i32}} : tensor<{c}xi32, #ttg.slice<{{dim = 0, parent = #blocked}}>> -> tensor<1x{c}xi32, #blocked>
    %{name}_rb = tt.broadcast %{name}_rk : tensor<{r}x1xi32, #blocked> -> tensor<{r}x{c}xi32, #blocked>
    %{name}_cb = tt.broadcast %{name}_c2 : tensor<1x{c}xi32, #blocked> -> tensor<{r}x{c}xi32, #blocked>
    %{name}_o = arith.addi %{name}_rb, %{name}_cb : tensor<{r}x{c}xi32, #blocked>
    %{name}_s = tt.splat %{p} : !tt.ptr<f32> -> tensor<{r}x{c}x!tt.ptr<f32>, #blocked>
    %{name}_ptrs = tt.addptr %{name}_s, %{name}_o : tensor<{r}x{c}x!tt.ptr<f32>, #blocked>, tensor<{r}x{c}xi32, #blocked>
"#
    )
}

/// A kernel that stores `in` ([16, 32], f32) into stage 1 of a two-stage NVMMA buffer, then
/// `body` (TTGIR using `%buf` and `%b1`).
fn trans_module(body: &str) -> String {
    format!(
        "{TRANS_HEADER}module attributes {{\"ttg.num-warps\" = 4 : i32, ttg.target = \"cuda:100\"}} {{\n  tt.func public @k(%src: !tt.ptr<f32>, %out1: !tt.ptr<f32>, %out2: !tt.ptr<f32>) attributes {{noinline = false}} {{\n{}    %v = tt.load %in_ptrs : tensor<16x32x!tt.ptr<f32>, #blocked>\n    %buf = ttg.local_alloc : () -> !ttg.memdesc<2x16x32xf32, #shared, #smem, mutable>\n    %c1 = arith.constant 1 : i32\n    %b1 = ttg.memdesc_index %buf[%c1] : !ttg.memdesc<2x16x32xf32, #shared, #smem, mutable> -> !ttg.memdesc<16x32xf32, #shared, #smem, mutable>\n    ttg.local_store %v, %b1 : tensor<16x32xf32, #blocked> -> !ttg.memdesc<16x32xf32, #shared, #smem, mutable>\n{body}    tt.return\n  }}\n}}\n",
        ptrs("in", "src", 16, 32)
    )
}

/// `ttg.memdesc_trans` (`permute` of a shared buffer) of a whole buffer and of one stage: the
/// transposed views read element (j, i) where the buffer holds (i, j), through the 128-byte
/// swizzle; the imported view is `smem.reinterpret` of the same bytes with the layout's
/// `transposed` flipped.
#[test]
fn memdesc_trans_reads_the_same_bytes_transposed() {
    let body = format!(
        "{}{}    %t = ttg.memdesc_trans %buf {{order = array<i32: 0, 2, 1>}} : !ttg.memdesc<2x16x32xf32, #shared, #smem, mutable> -> !ttg.memdesc<2x32x16xf32, #shared_t, #smem, mutable>
    %t1 = ttg.memdesc_index %t[%c1] : !ttg.memdesc<2x32x16xf32, #shared_t, #smem, mutable> -> !ttg.memdesc<32x16xf32, #shared_t, #smem, mutable>
    %w1 = ttg.local_load %t1 : !ttg.memdesc<32x16xf32, #shared_t, #smem, mutable> -> tensor<32x16xf32, #blocked>
    tt.store %o1_ptrs, %w1 : tensor<32x16x!tt.ptr<f32>, #blocked>
    %u = ttg.memdesc_trans %b1 {{order = array<i32: 1, 0>}} : !ttg.memdesc<16x32xf32, #shared, #smem, mutable> -> !ttg.memdesc<32x16xf32, #shared_t, #smem, mutable>
    %u2 = ttg.memdesc_subslice %u[8, 0] : !ttg.memdesc<32x16xf32, #shared_t, #smem, mutable> -> !ttg.memdesc<16x16xf32, #shared_t, #smem, mutable, 32x16>
    %w2 = ttg.local_load %u2 : !ttg.memdesc<16x16xf32, #shared_t, #smem, mutable> -> tensor<16x16xf32, #blocked>
    tt.store %o2_ptrs, %w2 : tensor<16x16x!tt.ptr<f32>, #blocked>
",
        ptrs("o1", "out1", 32, 16),
        ptrs("o2", "out2", 16, 16)
    );
    let text = trans_module(&body);
    let launch = "launch {\n  grid = [1]\n  tensor input: f32[16, 32] = randn()\n  tensor t: f32[32, 16] = zeros()\n  tensor s: f32[16, 16] = zeros()\n  src = input\n  out1 = t\n  out2 = s\n  outputs = [t, s]\n}\n";
    let (source, k) = import_ok(&text, Some(launch));
    let printed = bwsim_isa::print(&k);
    assert!(
        printed.contains("smem.reinterpret buf, f32[2, 32, 16], nvmma(128, transposed=true)"),
        "{printed}"
    );
    assert!(
        printed.contains("smem.reinterpret buf[1], f32[32, 16], nvmma(128, transposed=true)"),
        "{printed}"
    );
    let (input, r) = run_clean(&source, &k, 3);
    let (t, s) = (r.tensor("t").expect("t"), r.tensor("s").expect("s"));
    for i in 0..16 {
        for j in 0..32 {
            assert_eq!(t.get(j * 16 + i), input.get(i * 32 + j), "t[{j}][{i}]");
        }
        for j in 0..16 {
            assert_eq!(s.get(j * 16 + i), input.get(i * 32 + j + 8), "s[{j}][{i}]");
        }
    }
}

/// The transposed views bwsim has no layout for are errors at the operation.
#[test]
fn memdesc_trans_refuses_what_it_cannot_express() {
    for (body, want) in [
        (
            "    %s = ttg.memdesc_subslice %b1[0, 16] : !ttg.memdesc<16x32xf32, #shared, #smem, mutable> -> !ttg.memdesc<16x16xf32, #shared, #smem, mutable, 16x32>\n    %t = ttg.memdesc_trans %s {order = array<i32: 1, 0>} : !ttg.memdesc<16x16xf32, #shared, #smem, mutable, 16x32> -> !ttg.memdesc<16x16xf32, #shared_t, #smem, mutable, 32x16>\n",
            "subslice",
        ),
        (
            "    %t = ttg.memdesc_trans %buf {order = array<i32: 1, 0, 2>} : !ttg.memdesc<2x16x32xf32, #shared, #smem, mutable> -> !ttg.memdesc<16x2x32xf32, #shared, #smem, mutable>\n",
            "last two dimensions",
        ),
        (
            "    %p = ttg.local_alloc : () -> !ttg.memdesc<16x32xf32, #plain, #smem, mutable>\n    %t = ttg.memdesc_trans %p {order = array<i32: 1, 0>} : !ttg.memdesc<16x32xf32, #plain, #smem, mutable> -> !ttg.memdesc<32x16xf32, #plain, #smem, mutable>\n",
            "no bwsim layout",
        ),
    ] {
        let text = trans_module(body);
        let (d, r) = refused(&text, "refused");
        assert_eq!(d.len(), 1, "{r}");
        assert!(r.contains("ttg.memdesc_trans") && r.contains(want), "{r}");
    }
}

/// `shared_linear` views of a dense buffer (the result layouts of `ttg.memdesc_reshape` and of a
/// `ttg.memdesc_trans` Triton cannot keep NVMMA): a plain [16, 32] buffer reshaped to
/// [16, 2, 16], permuted to [2, 16, 16] and reshaped to [32, 16] reads, at (r, c), the element
/// the buffer holds at (r % 16, (r / 16) * 16 + c).
#[test]
fn shared_linear_views_read_the_elements_their_bases_name() {
    let lin = r#"#lin3 = #ttg.shared_linear<{offset = [[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [0, 1, 0], [1, 0, 0], [2, 0, 0], [4, 0, 0], [8, 0, 0]]}, alignment = 16>
#lin3t = #ttg.shared_linear<{offset = [[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 0, 8], [1, 0, 0], [0, 1, 0], [0, 2, 0], [0, 4, 0], [0, 8, 0]]}, alignment = 16>
#lin2 = #ttg.shared_linear<{offset = [[0, 1], [0, 2], [0, 4], [0, 8], [16, 0], [1, 0], [2, 0], [4, 0], [8, 0]]}, alignment = 16>
"#;
    let body = format!(
        "{}    %p = ttg.local_alloc : () -> !ttg.memdesc<16x32xf32, #plain, #smem, mutable>
    ttg.local_store %v, %p : tensor<16x32xf32, #blocked> -> !ttg.memdesc<16x32xf32, #plain, #smem, mutable>
    %r = ttg.memdesc_reshape %p : !ttg.memdesc<16x32xf32, #plain, #smem, mutable> -> !ttg.memdesc<16x2x16xf32, #lin3, #smem, mutable>
    %t = ttg.memdesc_trans %r {{order = array<i32: 1, 0, 2>}} : !ttg.memdesc<16x2x16xf32, #lin3, #smem, mutable> -> !ttg.memdesc<2x16x16xf32, #lin3t, #smem, mutable>
    %f = ttg.memdesc_reshape %t : !ttg.memdesc<2x16x16xf32, #lin3t, #smem, mutable> -> !ttg.memdesc<32x16xf32, #lin2, #smem, mutable>
    %w = ttg.local_load %f : !ttg.memdesc<32x16xf32, #lin2, #smem, mutable> -> tensor<32x16xf32, #blocked>
    tt.store %o1_ptrs, %w : tensor<32x16x!tt.ptr<f32>, #blocked>
",
        ptrs("o1", "out1", 32, 16)
    );
    let text = format!("{lin}{}", trans_module(&body));
    let launch = "launch {\n  grid = [1]\n  tensor input: f32[16, 32] = randn()\n  tensor t: f32[32, 16] = zeros()\n  tensor s: f32[16, 16] = zeros()\n  src = input\n  out1 = t\n  out2 = s\n  outputs = [t]\n}\n";
    let (source, k) = import_ok(&text, Some(launch));
    let printed = bwsim_isa::print(&k);
    assert!(
        printed.contains(
            "f32[32, 16], linear([[0, 1], [0, 2], [0, 4], [0, 8], [16, 0], [1, 0], [2, 0], [4, 0], [8, 0]])"
        ),
        "{printed}"
    );
    let (input, r) = run_clean(&source, &k, 5);
    let t = r.tensor("t").expect("t");
    for row in 0..32 {
        for col in 0..16 {
            assert_eq!(
                t.get(row * 16 + col),
                input.get((row % 16) * 32 + (row / 16) * 16 + col),
                "t[{row}][{col}]"
            );
        }
    }
}

/// Reshaped views bwsim cannot express are errors at the operation: of a swizzled buffer (its
/// swizzle follows the absolute address, not the view) and of a subslice (not one run of memory).
#[test]
fn memdesc_reshape_refuses_what_it_cannot_express() {
    let lin = "#lin = #ttg.shared_linear<{offset = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [1, 0], [2, 0], [4, 0], [8, 0], [16, 0]]}, alignment = 16>\n";
    for (body, want) in [
        (
            "    %r = ttg.memdesc_reshape %b1 : !ttg.memdesc<16x32xf32, #shared, #smem, mutable> -> !ttg.memdesc<32x16xf32, #lin, #smem, mutable>\n",
            "dense buffers",
        ),
        (
            // Rows of 32 f32 (128 bytes, one span) re-cut into rows of 16: not the same bytes.
            "    %r = ttg.memdesc_reshape %b1 : !ttg.memdesc<16x32xf32, #shared, #smem, mutable> -> !ttg.memdesc<32x16xf32, #shared, #smem, mutable>\n",
            "dense buffers",
        ),
        (
            "    %p = ttg.local_alloc : () -> !ttg.memdesc<32x32xf32, #plain, #smem, mutable>\n    %s = ttg.memdesc_subslice %p[0, 16] : !ttg.memdesc<32x32xf32, #plain, #smem, mutable> -> !ttg.memdesc<32x16xf32, #plain, #smem, mutable, 32x32>\n    %r = ttg.memdesc_reshape %s : !ttg.memdesc<32x16xf32, #plain, #smem, mutable, 32x32> -> !ttg.memdesc<16x32xf32, #plain, #smem, mutable, 32x32>\n",
            "subslice",
        ),
    ] {
        let text = format!("{lin}{}", trans_module(body));
        let (d, r) = refused(&text, "refused");
        assert_eq!(d.len(), 1, "{r}");
        assert!(r.contains("ttg.memdesc_reshape") && r.contains(want), "{r}");
    }
}

/// `tt.atomic_rmw`'s ordering and scope words become `sem=`/`scope=`, left out where they are
/// Triton's defaults (`acq_rel`, `gpu`).
#[test]
fn atomic_ordering_and_scope_are_imported() {
    let path = dir(Version::newest()).join("atomics.sm_100a.ttgir");
    let text = std::fs::read_to_string(&path).expect("readable");
    let relaxed = text.replacen(
        "tt.atomic_rmw max, acq_rel, gpu",
        "tt.atomic_rmw max, relaxed, cta",
        1,
    );
    assert_ne!(relaxed, text, "the fixture has an atomic max");
    let l = bwsim_gluon::import_text("atomics.sm_100a.ttgir", &relaxed, path.parent(), None);
    let k = l
        .kernel
        .unwrap_or_else(|d| panic!("{}", diag::render(&d, &l.source)));
    let printed = bwsim_isa::print(&k);
    let atomics: Vec<&str> = printed.lines().filter(|l| l.contains("global.atomic")).collect();
    assert_eq!(atomics.len(), 3, "{printed}");
    let ordered: Vec<&&str> = atomics.iter().filter(|l| l.contains("sem=")).collect();
    assert_eq!(ordered.len(), 1, "{atomics:?}");
    assert!(
        ordered[0].contains("global.atomic max") && ordered[0].contains("sem=relaxed, scope=cta"),
        "{atomics:?}"
    );
}

/// A kernel with pointer parameters `%p` (f32), `%o` (i32) and `%f` (f32) whose body is `body`.
fn address_module(body: &str) -> String {
    format!(
        "module attributes {{\"ttg.num-warps\" = 4 : i32, ttg.target = \"cuda:100\"}} {{\n  tt.func public @k(%p: !tt.ptr<f32>, %o: !tt.ptr<i32>, %f: !tt.ptr<f32>) attributes {{noinline = false}} {{\n{body}\n    tt.return\n  }}\n}}\n"
    )
}

const ADDRESS_LAUNCH: &str = "launch {\n  grid = [1]\n  tensor x: f32[64] = randn()\n  tensor out: i32[4] = fill(7)\n  tensor fout: f32[1] = fill(7)\n  p = x\n  o = out\n  f = fout\n  outputs = [out, fout]\n}\n";

/// An address (`tt.ptr_to_int`) keeps its tensor and byte offset through masks, remainders and
/// differences, and turns back into a pointer of the same tensor: with the address `a` of `x`
/// (a multiple of 256), `(a + 20) & 15 = 4`, `((a + 20) & -16) - a = 16`, `(a + 20) % 8 = 4`,
/// and the pointer made from `(a + 20) & -16` reads `x[4]`.
#[test]
fn addresses_keep_their_tensor_through_masks_and_differences() {
    let body = r#"    %a = tt.ptr_to_int %p : !tt.ptr<f32> -> i64
    %c20 = arith.constant 20 : i64
    %b = arith.addi %a, %c20 : i64
    %c15 = arith.constant 15 : i64
    %lo = arith.andi %b, %c15 : i64
    %cm16 = arith.constant -16 : i64
    %down = arith.andi %b, %cm16 : i64
    %d = arith.subi %down, %a : i64
    %c8 = arith.constant 8 : i64
    %r8 = arith.remsi %b, %c8 : i64
    %c1 = arith.constant 1 : i32
    %c2 = arith.constant 2 : i32
    %t0 = arith.trunci %lo : i64 to i32
    tt.store %o, %t0 : !tt.ptr<i32>
    %o1 = tt.addptr %o, %c1 : !tt.ptr<i32>, i32
    %t1 = arith.trunci %d : i64 to i32
    tt.store %o1, %t1 : !tt.ptr<i32>
    %o2 = tt.addptr %o, %c2 : !tt.ptr<i32>, i32
    %t2 = arith.trunci %r8 : i64 to i32
    tt.store %o2, %t2 : !tt.ptr<i32>
    %q = tt.int_to_ptr %down : i64 -> !tt.ptr<f32>
    %v = tt.load %q : !tt.ptr<f32>
    tt.store %f, %v : !tt.ptr<f32>"#;
    let (x, r) = import_and_run(&address_module(body), ADDRESS_LAUNCH, 5);
    let out = r.tensor("out").expect("out");
    let got: Vec<u64> = (0..4).map(|i| out.get_bits(i)).collect();
    assert_eq!(got, vec![4, 16, 4, 7]);
    assert_eq!(r.tensor("fout").expect("fout").get_bits(0), x.get_bits(4));
}

/// A pointer made from an address that is not a multiple of its element size stops the run
/// at the cast (the GPU's access would fault with a misaligned address).
#[test]
fn a_misaligned_address_cast_to_a_pointer_stops_the_run() {
    let body = r#"    %a = tt.ptr_to_int %p : !tt.ptr<f32> -> i64
    %c2 = arith.constant 2 : i64
    %b = arith.addi %a, %c2 : i64
    %q = tt.int_to_ptr %b : i64 -> !tt.ptr<f32>
    %v = tt.load %q : !tt.ptr<f32>
    tt.store %f, %v : !tt.ptr<f32>"#;
    let (source, k) = import_ok(&address_module(body), Some(ADDRESS_LAUNCH));
    let (_, r) = run(&source, &k, 1);
    let d = r
        .diagnostics
        .iter()
        .find(|d| d.code == "device-assert")
        .unwrap_or_else(|| panic!("{}", diag::render(&r.diagnostics, &source)));
    assert!(d.message.contains("misaligned address"), "{}", d.message);
}

/// What bwsim cannot give a value without numeric addresses is refused with the reason: a
/// pointer made from a constant, the product of an address, the difference of two tensors'
/// addresses.
#[test]
fn addresses_without_a_tensor_are_refused() {
    let (_, r) = refused_op(
        "%c = arith.constant 4096 : i64 loc(#loc2)\n    %q = tt.int_to_ptr %c : i64 -> !tt.ptr<f32>",
        "a pointer from a constant",
    );
    assert!(r.contains("not the address of a kernel argument's tensor"), "{r}");
    for (body, why) in [
        (
            "    %a = tt.ptr_to_int %p : !tt.ptr<f32> -> i64\n    %c2 = arith.constant 2 : i64\n    %m = arith.muli %a, %c2 : i64",
            "a product",
        ),
        (
            "    %a = tt.ptr_to_int %p : !tt.ptr<f32> -> i64\n    %b = tt.ptr_to_int %f : !tt.ptr<f32> -> i64\n    %d = arith.subi %a, %b : i64",
            "two tensors",
        ),
    ] {
        let (_, r) = refused(&address_module(body), why);
        assert!(r.contains("an address (a pointer as an integer)"), "{why}: {r}");
    }
}

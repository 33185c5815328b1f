//! The PTX of a TIRx kernel (apache-tvm 0.27.0's `gemm_async` lowered for `sm_100a`, fixtures
//! `tirx/gemm_async*.sm_100a.ptx`, see tirx/README.md): a one-CTA TMA + `tcgen05` GEMM whose
//! `.loc`s point at the lines of its TVMScript, `tirx/gemm_async.py`, with five planted-bug
//! variants (one TVMScript statement changed each). Every fixture parses, its `.loc`s land on
//! the TVMScript lines of the statements they lower, and it loads with the launch its header
//! gives; the correct kernel runs on the machine, C equals the exact product A · Bᵀ, and it
//! checks clean; each planted bug is reported with its code at its TVMScript line.
//!
//! TIRx issues every warp's `tcgen05.ld` at lane 0 of the allocation; the machine gives each
//! warp its own quarter of the lanes whatever quarter the address names (tirx/README.md has
//! the evidence).

mod cute;

use bwsim_isa::types::Swizzle;
use bwsim_isa::Code;
use bwsim_ptxfront::machine;
use bwsim_ptxfront::parse::Stmt;
use bwsim_ptxfront::{load, parse, Arg, Error, Launch, Program, TensorMap};
use cute::{assert_exact_product, f16_buffer, operands, run_clean, M, N};

/// The correct kernel (`""`) and the five planted bugs.
const BUGS: [&str; 6] = [
    "",
    "no_tma_wait",
    "wrong_parity",
    "ld_before_wait",
    "no_proxy_fence",
    "short_expect",
];

const SOURCE: &str = "ptxfront/tests/fixtures/tirx/gemm_async.py";

/// The fixture of the correct kernel (`bug` = "") or of a planted bug.
fn fixture(bug: &str) -> String {
    let name = if bug.is_empty() {
        "gemm_async.sm_100a.ptx".to_string()
    } else {
        format!("gemm_async.bug_{bug}.sm_100a.ptx")
    };
    cute::read_fixture(&format!("tirx/{name}"))
}

/// The 1-based line of the TVMScript that holds `text` (once).
fn script_line(text: &str) -> u32 {
    cute::line_of(&cute::read_fixture("tirx/gemm_async.py"), text)
}

/// The value of a `KEY=V0,V1,...` word of a `// param:` line.
fn field(words: &[&str], key: &str) -> Vec<u64> {
    let w = words
        .iter()
        .find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no `{key}=` in {words:?}"));
    w.split(',').map(|x| x.parse().expect("a number")).collect()
}

/// The launch the header gives (the `// param:` tensor maps over buffers A, B and C, the
/// `// shared:` bytes), one CTA of the kernel's `.reqntid` threads, over the CPU operands
/// (C zeroed).
fn gemm_launch(src: &str) -> (Program, Launch, Vec<Vec<u8>>) {
    let m = parse(src).expect("parses");
    let name = m.kernels[0].name.clone();
    let p = load(src, &m, &name).expect("loads");
    let mut args = Vec::new();
    for line in src.lines() {
        let Some(rest) = line.strip_prefix("// param:") else {
            continue;
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        assert_eq!(words[1], "tensormap", "{line}");
        let (elem_bytes, dtype) = match words[2] {
            "fp16" => (2, bwsim_isa::DType::F16),
            "fp32" => (4, bwsim_isa::DType::F32),
            t => panic!("element type {t}"),
        };
        args.push(Arg::TensorMap(TensorMap {
            buffer: field(&words, "buffer")[0] as usize,
            elem_bytes,
            dtype,
            dims: field(&words, "dims"),
            strides: field(&words, "strides"),
            box_dims: field(&words, "box").iter().map(|&b| b as u32).collect(),
            swizzle: Swizzle::from_bytes(field(&words, "swizzle")[0] as i64).expect("a swizzle"),
        }));
    }
    assert_eq!(args.len(), 3, "three tensor maps");
    // TVM's `__launch_bounds__(128)`: `.maxntid 128`, the CTA TVM's host code launches.
    let threads = m.kernels[0].maxntid.clone().expect("a .maxntid");
    assert_eq!(threads, vec![128]);
    let mut l = Launch::new([1, 1, 1], [128, 1, 1], args);
    l.dynamic_shared = bwsim_ptxfront::launch::shared(src).expect("a // shared: line");
    let (a, b) = operands();
    (p, l, vec![f16_buffer(&a), f16_buffer(&b), vec![0; M * N * 4]])
}

#[test]
fn every_fixture_parses_with_locs_in_the_tvmscript() {
    for bug in BUGS {
        let src = fixture(bug);
        let m = parse(&src).unwrap_or_else(|e| panic!("{bug}: {e}"));
        assert_eq!(m.target, vec!["sm_100a".to_string()]);
        assert_eq!(m.files.get(&1).map(String::as_str), Some(SOURCE));
        let k = &m.kernels[0];
        assert_eq!(k.maxntid, Some(vec![128]));
        // Three tensor maps by value, 128 bytes each.
        assert_eq!(k.params.iter().map(|p| p.bytes).collect::<Vec<_>>(), vec![128; 3]);
        // Every instruction from the first `.loc` on has one inside the prim_func's body (nvcc
        // puts the reads of the special registers first, before any `.loc`).
        let (first, last) = (script_line("def gemm("), script_line("return gemm"));
        let mut seen = false;
        for s in &k.body {
            if let Stmt::Instr(i) = s {
                match i.loc {
                    Some(l) => {
                        seen = true;
                        assert!(l.file == 1 && (first..last).contains(&l.line), "{bug}: {l:?}");
                    }
                    None => assert!(!seen, "{bug}: PTX line {} has no .loc", i.ptx_line),
                }
            }
        }
        assert!(seen, "{bug}: no .loc");
        // The statements of the TVMScript are there, at their lines: the MMAs at `gemm_async`,
        // the tensor-memory load at the warpgroup copy, the TMA store at the copy to C.
        for (form, text) in [
            ("tcgen05.mma", "Tx.gemm_async("),
            ("tcgen05.ld", "Tx.wg.copy_async("),
            ("cp.async.bulk.tensor", "Tx.copy_async(C["),
        ] {
            let want = script_line(text);
            assert!(
                k.body.iter().any(|s| matches!(s, Stmt::Instr(i)
                    if i.opcode == form.split('.').next().unwrap_or(form)
                        && form.split('.').skip(1).all(|m| i.mods.iter().any(|x| x == m))
                        && i.loc.is_some_and(|l| l.line == want))),
                "{bug}: no {form} at TVMScript line {want}"
            );
        }
    }
}

#[test]
fn every_fixture_loads_with_the_launch_its_header_gives() {
    for bug in BUGS {
        let (_, launch, buffers) = gemm_launch(&fixture(bug));
        assert!(
            launch.dynamic_shared >= 2 * 128 * 64 * 2,
            "{bug}: A and B fit in shared memory"
        );
        assert_eq!(
            buffers.iter().map(Vec::len).collect::<Vec<_>>(),
            [M * 64 * 2, N * 64 * 2, M * N * 4],
            "{bug}"
        );
    }
}

/// The TVMScript line of instruction `pc` (its `.loc`).
fn line(p: &Program, pc: usize) -> u32 {
    p.ins[pc].loc.map_or(0, |l| l.line)
}

/// The correct kernel runs (one schedule, the checker watching) and checks clean, and C is
/// A · Bᵀ: the operands are multiples of 1/2 in [-2, 2], so every product and partial sum is
/// exact in f32 and the comparison is exact.
#[test]
fn runs_and_matches_the_cpu_reference() {
    let (p, l, mut bufs) = gemm_launch(&fixture(""));
    run_clean(&p, &l, &mut bufs);
    assert_exact_product(|i, j| {
        let x = 4 * (i * N + j);
        f32::from_le_bytes([bufs[2][x], bufs[2][x + 1], bufs[2][x + 2], bufs[2][x + 3]]) as f64
    });
}

/// More schedules of the correct kernel check clean: 20 in the full tier (`BWSIM_FULL=1`);
/// the default tier has the one of [`runs_and_matches_the_cpu_reference`].
#[test]
fn checks_clean() {
    if !std::env::var("BWSIM_FULL").is_ok_and(|v| v == "1") {
        eprintln!("checks_clean: 20 schedules of the TIRx GEMM belong to the full tier (BWSIM_FULL=1)");
        return;
    }
    let (p, l, bufs) = gemm_launch(&fixture(""));
    assert_eq!(machine::check(&p, &l, &bufs, 20).expect("runs"), vec![]);
}

/// What one schedule of the planted bug `bug` reports, as (code, TVMScript line, TVMScript
/// lines of what it conflicts with): the checker's findings, the finding that stopped the run
/// last.
fn reports(bug: &str) -> Vec<(Code, u32, Vec<u32>)> {
    let (p, l, bufs) = gemm_launch(&fixture(bug));
    let fs = machine::check(&p, &l, &bufs, 1).unwrap_or_else(|e| panic!("{bug}: {e}"));
    fs.iter()
        .map(|f| {
            (
                f.code,
                line(&p, f.pc),
                f.with.iter().map(|&w| line(&p, w)).collect(),
            )
        })
        .collect()
}

/// Whether `reports` hold one with a code of `codes` at `at` whose conflicting accesses are
/// all at lines of `with`.
fn reported(reports: &[(Code, u32, Vec<u32>)], codes: &[Code], at: u32, with: &[u32]) -> bool {
    reports
        .iter()
        .any(|(c, l, w)| codes.contains(c) && *l == at && !w.is_empty() && w.iter().all(|x| with.contains(x)))
}

/// The MMA reads A and B unordered with the TMA copies that write them when the elected thread
/// does not wait on the TMA barrier, or waits for parity 1 (the phase before the barrier's
/// first, complete at once): reported at `Tx.gemm_async`, with the copies.
#[test]
fn an_unawaited_tma_is_reported_at_the_gemm() {
    let copies = [
        script_line("Tx.copy_async(A_smem"),
        script_line("Tx.copy_async(B_smem"),
    ];
    let gemm = script_line("Tx.gemm_async(");
    for bug in ["no_tma_wait", "wrong_parity"] {
        let rs = reports(bug);
        assert!(
            reported(&rs, &[Code::Race, Code::ReadBeforeComplete], gemm, &copies),
            "{bug}: {rs:?}"
        );
    }
}

/// `tcgen05.ld` before the wait for the MMA's commit reads the accumulator unordered with the
/// MMAs that write it: reported at `Tx.wg.copy_async`, with the MMA.
#[test]
fn a_load_before_the_commit_is_awaited_is_reported_at_the_copy() {
    let rs = reports("ld_before_wait");
    let (ld, gemm) = (script_line("Tx.wg.copy_async("), script_line("Tx.gemm_async("));
    assert!(
        reported(&rs, &[Code::Race, Code::ReadBeforeComplete], ld, &[gemm]),
        "{rs:?}"
    );
}

/// Without `fence.proxy.async` the TMA store (async proxy) reads the staging buffer the
/// generic stores of C wrote: `missing-fence` at the TMA store, with the stores.
#[test]
fn a_missing_proxy_fence_is_reported_at_the_tma_store() {
    let rs = reports("no_proxy_fence");
    let (store, stores) = (script_line("Tx.copy_async(C["), script_line("Tx.copy(C_smem"));
    assert!(reported(&rs, &[Code::MissingFence], store, &[stores]), "{rs:?}");
}

/// An expect-tx 128 bytes short of what the copies deliver: the barrier's count never reaches
/// zero, the elected thread waits forever, and once nothing is in flight the run reports a
/// `tx-mismatch` at the expect, with both copies, and stops with the `deadlock`.
#[test]
fn a_short_expect_is_reported_at_the_expect() {
    let rs = reports("short_expect");
    let expect = script_line("mbarrier.arrive.expect_tx");
    let copies = [
        script_line("Tx.copy_async(A_smem"),
        script_line("Tx.copy_async(B_smem"),
    ];
    assert_eq!(rs.len(), 2, "{rs:?}");
    assert!(reported(&rs, &[Code::TxMismatch], expect, &copies), "{rs:?}");
    assert_eq!(rs[0].2.len(), 2, "both copies: {rs:?}");
    assert_eq!(rs[1].0, Code::Deadlock, "{rs:?}");
    // The copies deliver the 32768 bytes of A and B, 128 more than expected.
    let (p, l, bufs) = gemm_launch(&fixture("short_expect"));
    let mut b = bufs.clone();
    let opts = machine::Options { seed: 0, check: true };
    let (r, fs) = machine::run_to_stop(&p, &l, &mut b, &opts);
    assert!(matches!(r, Err(Error::Stuck(_))), "the run should stop: {r:?}");
    let [f] = fs.as_slice() else {
        panic!("one finding before the stop: {fs:?}");
    };
    let m = &f.diagnostic.message;
    assert!(
        m.contains("received 128 bytes more") && m.contains("32640 expected, 32768 delivered"),
        "{m}"
    );
}

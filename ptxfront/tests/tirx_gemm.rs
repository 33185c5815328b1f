//! The PTX of a TIRx kernel (apache-tvm 0.27.0's `gemm_async` lowered for `sm_100a`, fixtures
//! `tirx/gemm_async*.sm_100a.ptx`, see tirx/README.md): a one-CTA TMA + `tcgen05` GEMM whose
//! `.loc`s point at the lines of its TVMScript, `tirx/gemm_async.py`, with five planted-bug
//! variants (one TVMScript statement changed each). This test holds what works today: every
//! fixture parses, its `.loc`s land on the TVMScript lines of the statements they lower, and it
//! loads with the launch its header gives.
//!
//! Not yet run or checked: the kernels load and start, but the machine stops the run: TIRx lowers `Tx.wg.copy_async`
//! from TMEM to one `tcgen05.ld.32x32b.x128` per warp at the allocation's base address (lane 0)
//! for all four warps, and the machine refuses a warp reaching lanes outside its quarter
//! ("warp 1 reaches tensor-memory lane 0, outside its lanes 32..64"); whether the hardware
//! offsets the lane by the warp is to be settled first (tirx/README.md). The `short_expect`
//! variant also did not finish one schedule within a minute.

mod cute;

use bwsim_isa::types::Swizzle;
use bwsim_ptxfront::parse::Stmt;
use bwsim_ptxfront::{load, parse, Arg, Launch, Program, TensorMap};
use cute::{f16_buffer, operands, M, N};

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
        let elem_bytes = match words[2] {
            "fp16" => 2,
            "fp32" => 4,
            t => panic!("element type {t}"),
        };
        args.push(Arg::TensorMap(TensorMap {
            buffer: field(&words, "buffer")[0] as usize,
            elem_bytes,
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

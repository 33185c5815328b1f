//! The CuTe DSL's own PTX for CUTLASS's Blackwell dense GEMM example (fixture
//! `cute-dsl-4.8.1/dense_gemm.sm_100a.ptx`, see its README): a TMA + `tcgen05` + `mbarrier`
//! kernel as a production Python DSL emits it. The parser must read all of it: the header,
//! the kernel's parameters (three `CUtensorMap`s by value), every instruction with its opcode,
//! modifiers and guard, and the `.loc` position in force, each compared with what a plain
//! line-by-line reading of the text says. Every instruction resolves for execution, and the
//! machine runs it: C equals a CPU reference, the run checks clean, and dropped waits planted
//! into the text are reported at their lines.
//!
//! What makes this file harder than Triton's: modifiers that start with a digit (`.2d` of
//! `cp.async.bulk.tensor`, `.32x32b` of `tcgen05.ld`), nested `{ }` blocks with their own
//! `.reg` and labels (one per inline-assembly `mbarrier` wait loop, the same names in every
//! block), `[tensor map, {coordinates}]` operands and `mov.pred %p, -1`.

use std::collections::BTreeMap;

mod cute;

use bwsim_isa::Code;
use bwsim_ptxfront::machine;
use bwsim_ptxfront::parse::Stmt;
use bwsim_ptxfront::{load, parse, Error, Module};
use cute::{assert_exact_product, f16_value, fixture, gemm_launch, line_of, run_clean, N};

/// What one instruction line of the text says, read without the parser: its 1-based line, the
/// guard (`@%p`/`@!%p` as written), the opcode with its modifiers (the first word), and the
/// `.loc` (file, line, column) last seen above it.
struct TextInstr {
    line: u32,
    guard: Option<String>,
    form: String,
    loc: Option<(u32, u32, u32)>,
}

/// The instruction lines of the kernel body: between the `{` after `.entry` and its `}` (the
/// inline-assembly blocks inside open and close their own braces, each on a line of its own),
/// every line that ends in `;` and is neither a directive nor a comment, with the `.loc` in
/// force (inside an inline-assembly block of LLVM's, `// begin inline asm` to `// end inline
/// asm`, the one before the block: LLVM numbers the block's own `.loc` lines from it, one per
/// line of the assembly string).
fn text_instrs(src: &str) -> Vec<TextInstr> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut loc = None;
    let mut asm = false;
    for (i, raw) in src.lines().enumerate() {
        let l = raw.trim();
        if l.starts_with("// begin inline asm") || l.starts_with("// end inline asm") {
            asm = l.starts_with("// begin");
            continue;
        }
        if l == "{" {
            depth += 1;
            continue;
        }
        if l == "}" {
            depth -= 1;
            if depth == 0 {
                break;
            }
            continue;
        }
        if depth == 0 {
            continue;
        }
        if let Some(rest) = l.strip_prefix(".loc").filter(|_| !asm) {
            let w: Vec<u32> = rest
                .split_whitespace()
                .map(|x| x.parse().expect("a .loc field"))
                .collect();
            loc = Some((w[0], w[1], w[2]));
            continue;
        }
        if l.is_empty() || l.starts_with('.') || l.starts_with("//") || !l.ends_with(';') {
            continue;
        }
        let mut words = l.split_whitespace();
        let mut first = words.next().expect("a word");
        let mut guard = None;
        if first.starts_with('@') {
            guard = Some(first.to_string());
            first = words.next().expect("an opcode after the guard");
        }
        out.push(TextInstr {
            line: i as u32 + 1,
            guard,
            form: first.trim_end_matches(';').to_string(),
            loc,
        });
    }
    out
}

#[test]
fn parses_every_instruction_as_written() {
    let src = fixture();
    let m = parse(&src).expect("the CuTe DSL PTX parses");
    assert_eq!(m.version, Some((8, 8)));
    assert_eq!(m.target, vec!["sm_100a".to_string()]);
    assert_eq!(m.address_size, Some(64));
    assert_eq!(
        m.files.get(&1).map(String::as_str),
        Some("examples/python/CuTeDSL/cute/blackwell/kernel/dense_gemm/dense_gemm.py")
    );
    assert_eq!(m.kernels.len(), 1);
    let k = &m.kernels[0];
    assert!(k
        .name
        .starts_with("kernel_cutlass_kernel_dense_gemmDenseGemmKernel"));
    assert_eq!(k.reqntid, Some(vec![128, 1, 1]));
    // A 32-byte struct, then the tensor maps of A, B and C: 128 bytes aligned to 64 each, laid
    // out one after another in the parameter space.
    let shapes: Vec<(u32, u32, u32)> = k.params.iter().map(|p| (p.bytes, p.align, p.offset)).collect();
    assert_eq!(
        shapes,
        vec![(32, 16, 0), (128, 64, 64), (128, 64, 192), (128, 64, 320)]
    );

    let text = text_instrs(&src);
    let parsed: Vec<_> = k
        .body
        .iter()
        .filter_map(|s| match s {
            Stmt::Instr(i) => Some(i),
            Stmt::Label(..) => None,
        })
        .collect();
    assert_eq!(parsed.len(), text.len(), "instruction count");
    for (p, t) in parsed.iter().zip(&text) {
        let form = std::iter::once(p.opcode.clone())
            .chain(p.mods.iter().cloned())
            .collect::<Vec<_>>()
            .join(".");
        assert_eq!((p.ptx_line, form.as_str()), (t.line, t.form.as_str()));
        // A register declared inside an inline-assembly block (`P1`, declared again in every
        // block) may be renamed apart by the parser as `P1$...`.
        let guard = p.guard.map(|(r, neg)| {
            let name = &k.regs[r as usize].name;
            let name = name.split_once('$').map_or(name.as_str(), |(n, _)| n);
            format!("@{}{name}", if neg { "!" } else { "" })
        });
        assert_eq!(guard, t.guard, "guard of PTX line {}", t.line);
        assert_eq!(
            p.loc.map(|l| (l.file, l.line, l.col)),
            t.loc,
            ".loc of PTX line {}",
            t.line
        );
    }
    // The Blackwell pieces are there: tensor-core MMAs, tensor-memory allocation and loads,
    // TMA loads and stores, mbarrier waits.
    for family in [
        "tcgen05.mma",
        "tcgen05.alloc",
        "tcgen05.ld",
        "cp.async.bulk.tensor",
        "mbarrier.try_wait",
    ] {
        assert!(
            text.iter().any(|t| t.form.starts_with(family)),
            "no {family} instruction"
        );
    }
}

/// What loading the kernel for execution refuses, found by removing each refused instruction
/// and loading again until the rest loads: the forms refused as unsupported, and the lines
/// refused as invalid (PTX that `ptxas` accepts, so a front-end bug), each with its PTX lines.
#[derive(Default)]
struct Refusals {
    unsupported: BTreeMap<String, Vec<u32>>,
    invalid: BTreeMap<String, Vec<u32>>,
}

fn refusals(src: &str, m: &Module) -> Refusals {
    let mut m = m.clone();
    let name = m.kernels[0].name.clone();
    let mut out = Refusals::default();
    loop {
        let (key, line, into) = match load(src, &m, &name) {
            Ok(_) => return out,
            Err(Error::Unsupported { opcode, line, .. }) => (opcode, line, &mut out.unsupported),
            Err(Error::Invalid { message, span }) => {
                let line = src[..span.start as usize].matches('\n').count() as u32 + 1;
                (message, line, &mut out.invalid)
            }
            Err(e) => panic!("loading the CuTe DSL kernel: {e}"),
        };
        let body = &mut m.kernels[0].body;
        let before = body.len();
        body.retain(|s| !matches!(s, Stmt::Instr(i) if i.ptx_line == line));
        assert!(
            body.len() < before,
            "`{key}` refused at PTX line {line}, which holds no instruction"
        );
        into.entry(key).or_default().push(line);
    }
}

#[test]
fn lists_what_the_executor_does_not_run_yet() {
    let src = fixture();
    let m = parse(&src).expect("the CuTe DSL PTX parses");
    let r = refusals(&src, &m);
    eprintln!(
        "{} instruction forms of the CuTe DSL dense GEMM are not run yet by the PTX front end:",
        r.unsupported.len()
    );
    for (form, lines) in &r.unsupported {
        eprintln!("  {form} x{} (first at PTX line {})", lines.len(), lines[0]);
    }
    for (message, lines) in &r.invalid {
        eprintln!("  refused as invalid: {message} (PTX lines {lines:?})");
    }
    // Every refused line is an instruction whose written form is the one reported.
    let text = text_instrs(&src);
    for (form, lines) in &r.unsupported {
        for l in lines {
            let t = text.iter().find(|t| t.line == *l).expect("an instruction line");
            assert!(
                t.form.starts_with(form.as_str()),
                "PTX line {l} is `{}`, refused as `{form}`",
                t.form
            );
        }
    }
    // ptxas assembles the fixture, so nothing in it is malformed PTX.
    assert!(
        r.invalid.is_empty(),
        "valid PTX refused as invalid: {:?}",
        r.invalid
    );
    // And the front end runs every form in it.
    assert!(r.unsupported.is_empty(), "refused: {:?}", r.unsupported);
}

#[test]
fn runs_and_matches_the_cpu_reference() {
    let src = fixture();
    let (p, l, mut bufs) = gemm_launch(&src);
    run_clean(&p, &l, &mut bufs);
    assert_exact_product(|i, j| {
        let x = 2 * (i * N + j);
        f16_value(u16::from_le_bytes([bufs[2][x], bufs[2][x + 1]]))
    });
}

/// The fixture with `from` (which must occur once) replaced by `to`: a bug planted into the
/// PTX text.
fn planted(from: &str, to: &str) -> String {
    let src = fixture();
    assert_eq!(src.matches(from).count(), 1, "`{from}` occurs once");
    src.replacen(from, to, 1)
}

/// The findings of `schedules` schedules of `src` as `(code, PTX line of the finding, PTX
/// lines of the access it conflicts with)`.
fn findings(src: &str, schedules: u64) -> Vec<(Code, u32, Vec<u32>)> {
    let (p, l, bufs) = gemm_launch(src);
    let fs = machine::check(&p, &l, &bufs, schedules).expect("runs");
    let line = |pc: usize| p.ins[pc].ptx_line;
    fs.iter()
        .map(|f| (f.code, line(f.pc), f.with.iter().map(|&w| line(w)).collect()))
        .collect()
}

/// 50 schedules check clean: the full tier's (`BWSIM_FULL=1`, as `bwsim_testkit::full_tier`
/// reads it); the default tier has the one of [`runs_and_matches_the_cpu_reference`].
#[test]
fn checks_clean() {
    if !std::env::var("BWSIM_FULL").is_ok_and(|v| v == "1") {
        eprintln!("checks_clean: 50 schedules of the CuTe DSL GEMM belong to the full tier (BWSIM_FULL=1)");
        return;
    }
    assert_eq!(findings(&fixture(), 50), vec![]);
}

/// The MMA warp skips its wait for the TMA loads of A and B (the branch past the wait loop
/// taken whether or not the first try succeeded): the first MMA reads the tiles the copies
/// write, unordered with them.
#[test]
fn a_dropped_wait_for_the_operands_is_reported_at_the_mma() {
    let src = planted("@%p25 bra \t$L__BB0_24;", "bra.uni \t$L__BB0_24;");
    let mma = line_of(
        &src,
        "tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r8], %rd4, %rd5",
    );
    let copies = [
        line_of(&src, "[%r6], [%rd14, {%r43, %r43}]"),
        line_of(&src, "[%r7], [%rd16, {%r45, %r45}]"),
    ];
    let fs = findings(&src, 1);
    assert!(
        fs.iter()
            .any(|(c, at, with)| matches!(c, Code::Race | Code::ReadBeforeComplete)
                && *at == mma
                && with.iter().all(|w| copies.contains(w))),
        "{fs:?}"
    );
}

/// The epilogue waits for the wrong phase of the barrier the accumulator's commit arrives on
/// (parity 1 of a fresh barrier: the phase before its first, complete at once), so it does
/// not wait for the MMAs: its first `tcgen05.ld` reads the accumulator before the first MMA's
/// completion was observed.
#[test]
fn a_dropped_wait_for_the_accumulator_is_reported_at_the_tmem_load() {
    let src = planted(
        "mbarrier.try_wait.parity.shared.b64 P1, [%r81], 0, 10000000;",
        "mbarrier.try_wait.parity.shared.b64 P1, [%r81], 1, 10000000;",
    );
    let ld = line_of(&src, "tcgen05.ld.sync.aligned.32x32b.x32.b32 {%r100,");
    let mma = line_of(
        &src,
        "tcgen05.mma.cta_group::1.kind::f16.collector::a::discard [%r8], %rd4, %rd5",
    );
    let fs = findings(&src, 1);
    assert!(fs.contains(&(Code::ReadBeforeComplete, ld, vec![mma])), "{fs:?}");
}

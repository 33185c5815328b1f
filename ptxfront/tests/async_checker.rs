//! Triton 3.9's PTX of Gluon fixtures with TMA copies and mbarriers (tests/gluon/proxy_fences.py),
//! run on the PTX front end's machine ([`bwsim_ptxfront::machine`]): the outputs equal the
//! kernel's documented semantics, and the hazard checker gives the verdicts of the fixtures'
//! TTGIR (tests/gluon/*.launch), its findings at the same Python lines (through `.loc`). Bugs
//! planted into the PTX itself (a deleted `fence.proxy.async`, a deleted mbarrier wait) are
//! reported at the Python line of the access they leave unordered.

mod common;

use bwsim_isa::Code;
use bwsim_ptxfront::launch::{self, Value};
use bwsim_ptxfront::machine::{self, Finding, Options};
use bwsim_ptxfront::{compile, Error, Launch, Program};
use common::{bytes_f32, f32_bytes, randn};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/triton-3.9");

fn fixture(name: &str) -> String {
    let path = format!("{FIXTURES}/{name}.ptx");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `(code, primary line, other line)` of a finding, lines as `.loc` gives them.
fn at(p: &Program, f: &Finding) -> (Code, String, String) {
    let line = |pc: usize| {
        machine::source_line(p, pc).map_or_else(|| format!("pc {pc}"), |(f, l)| format!("{f}:{l}"))
    };
    (
        f.code,
        line(f.pc),
        f.with.first().map_or(String::new(), |&w| line(w)),
    )
}

/// A launch of a `scale_kernel`-style kernel: x (f32[32, 64 * blocks], buffer 0) into y
/// (zeros, buffer 1), one CTA of 128 threads (256 for the warp-specialized kernel).
fn scale_launch(
    src: &str,
    kernel: &str,
    blocks: u64,
    threads: u32,
) -> Result<(Program, Launch, Vec<Vec<u8>>), Error> {
    let p = compile(src, kernel)?;
    let params = launch::params(src)?;
    let shape = vec![32, 64 * blocks];
    let args = launch::args(
        &p,
        &params,
        &[
            (
                "x_desc",
                Value::Tensor {
                    buffer: 0,
                    shape: shape.clone(),
                },
            ),
            ("y_desc", Value::Tensor { buffer: 1, shape }),
            ("n_blocks", Value::Int(blocks as i64)),
        ],
    )?;
    let block = launch::threads(&p)?;
    assert_eq!(block, [threads, 1, 1]);
    let mut l = Launch::new([1, 1, 1], block, args);
    l.dynamic_shared = launch::shared(src)?;
    let n = 32 * 64 * blocks as usize;
    Ok((p, l, vec![f32_bytes(&randn(n, 7)), vec![0; 4 * n]]))
}

/// The kernel's semantics (proxy_fences.py): y = 2 x, exact in f32.
/// The buffers after a run of schedule `seed` from `bufs`, without the hazard checker.
fn run_unchecked(p: &Program, l: &Launch, bufs: &[Vec<u8>], seed: u64) -> Result<Vec<Vec<u8>>, Error> {
    let mut b = bufs.to_vec();
    machine::run(p, l, &mut b, &Options { seed, check: false })?;
    Ok(b)
}

fn assert_doubled(bufs: &[Vec<u8>]) {
    let (x, y) = (bytes_f32(&bufs[0]), bytes_f32(&bufs[1]));
    for (i, (a, b)) in x.iter().zip(&y).enumerate() {
        assert_eq!(a * 2.0, *b, "y[{i}]");
    }
}

#[test]
fn scale_kernel_doubles_and_checks_clean() -> Result<(), Error> {
    // tests/gluon/proxy_fences.launch: `check [3.7+]: clean` (Triton fences the TMA store).
    let src = fixture("proxy_fences.sm_100a");
    let (p, l, bufs) = scale_launch(&src, "scale_kernel", 4, 128)?;
    for seed in 0..4 {
        let mut b = bufs.clone();
        let o = machine::run(&p, &l, &mut b, &Options { seed, check: true })?;
        assert_doubled(&b);
        let found: Vec<_> = o.findings.iter().map(|f| at(&p, f)).collect();
        assert!(found.is_empty(), "seed {seed}: {found:?}");
        assert_eq!(o.stats.threads, 128);
    }
    Ok(())
}

#[test]
fn a_deleted_proxy_fence_is_reported_at_the_tma_store() -> Result<(), Error> {
    let src = fixture("proxy_fences.sm_100a");
    let planted = src.replacen("\tfence.proxy.async.shared::cta;\n", "", 1);
    assert_ne!(planted, src, "the fixture has the fence to delete");
    let (p, l, bufs) = scale_launch(&planted, "scale_kernel", 4, 128)?;
    let found: Vec<_> = machine::check(&p, &l, &bufs, 4)?
        .iter()
        .map(|f| at(&p, f))
        .collect();
    // The TMA store (line 51) reads out_buf that the generic store (37) wrote, and the next
    // block's TMA load (34) overwrites in_buf that the generic load (36) read: the one fence
    // ordered both (as Triton 3.6's TTGIR misses the first: proxy_fences.launch).
    let want = |a: &str, b: &str| {
        (
            Code::MissingFence,
            format!("proxy_fences.py:{a}"),
            format!("proxy_fences.py:{b}"),
        )
    };
    assert!(found.contains(&want("51", "37")), "{found:?}");
    assert!(found.contains(&want("34", "36")), "{found:?}");
    assert_eq!(found.len(), 2, "{found:?}");
    Ok(())
}

#[test]
fn a_deleted_mbarrier_wait_is_reported_at_the_shared_load() -> Result<(), Error> {
    let src = fixture("proxy_fences.sm_100a");
    // The inline-assembly block of `mbarrier.wait` (the try_wait loop), deleted.
    let start = src
        .find("\t{\n\t.reg .pred complete;")
        .or_else(|| src.find("{\n\t.reg .pred complete;"));
    let start = start.expect("the fixture has a wait loop");
    let end = start + src[start..].find("}\n").expect("the block closes") + 2;
    let planted = format!("{}{}", &src[..start], &src[end..]);
    // One block: without the wait a second block's arrive could underflow the barrier.
    let (p, l, bufs) = scale_launch(&planted, "scale_kernel", 1, 128)?;
    let findings = machine::check(&p, &l, &bufs, 8)?;
    let found: Vec<_> = findings.iter().map(|f| at(&p, f)).collect();
    let rbc = (
        Code::ReadBeforeComplete,
        "proxy_fences.py:36".to_string(),
        "proxy_fences.py:34".to_string(),
    );
    assert!(found.contains(&rbc), "{found:?}");
    // A warp that reads before a copy it did not issue lands sees the same two accesses the
    // other way round (a race at the copy), and the kernel may invalidate the barrier before
    // the copy completes on it; nothing else is reported.
    for f in &found {
        assert!(
            *f == rbc
                || *f
                    == (
                        Code::Race,
                        "proxy_fences.py:34".to_string(),
                        "proxy_fences.py:36".to_string()
                    )
                || *f
                    == (
                        Code::BarrierMisuse,
                        "proxy_fences.py:34".to_string(),
                        String::new()
                    ),
            "{found:?}"
        );
    }
    let d = &findings
        .iter()
        .find(|f| f.code == Code::ReadBeforeComplete)
        .expect("found")
        .diagnostic;
    let text = &planted[d.primary.span.range()];
    assert!(text.starts_with("ldmatrix"), "{text}");
    Ok(())
}

#[test]
fn the_handoff_bug_is_reported_where_its_ttgir_is() -> Result<(), Error> {
    // tests/gluon/bug_proxy_fences_handoff.launch:
    // `expect: missing-fence at proxy_fences.py:60 with proxy_fences.py:37`, `check: expected`.
    let src = fixture("bug_proxy_fences_handoff.sm_100a");
    let (p, l, bufs) = scale_launch(&src, "ws_scale_kernel", 1, 256)?;
    // The kernel stores the block as two boxes (two instructions at line 60): one finding at
    // the Python level.
    let want = (
        Code::MissingFence,
        "proxy_fences.py:60".to_string(),
        "proxy_fences.py:37".to_string(),
    );
    assert_eq!(verdicts(&p, &l, &bufs, 4)?, vec![want]);
    assert_doubled(&run_unchecked(&p, &l, &bufs, 0)?);
    Ok(())
}

/// A launch of `ws_add_kernel` (planted_bugs.py): a, b (f32[32, 384], buffers 0 and 1) into c
/// (zeros, buffer 2), six column blocks, as tests/gluon/bug_ws_add_*.launch.
fn ws_add_launch(src: &str) -> Result<(Program, Launch, Vec<Vec<u8>>), Error> {
    let p = compile(src, "ws_add_kernel")?;
    let params = launch::params(src)?;
    let shape = vec![32, 384];
    let t = |buffer| Value::Tensor {
        buffer,
        shape: shape.clone(),
    };
    let args = launch::args(
        &p,
        &params,
        &[
            ("a_desc", t(0)),
            ("b_desc", t(1)),
            ("c_desc", t(2)),
            ("xnumel", Value::Int(32)),
            ("ynumel", Value::Int(384)),
        ],
    )?;
    let mut l = Launch::new([1, 1, 1], launch::threads(&p)?, args);
    l.dynamic_shared = launch::shared(src)?;
    let n = 32 * 384;
    Ok((
        p,
        l,
        vec![f32_bytes(&randn(n, 1)), f32_bytes(&randn(n, 2)), vec![0; 4 * n]],
    ))
}

/// `(code, primary line, other line)` of every finding, each once.
fn verdicts(
    p: &Program,
    l: &Launch,
    bufs: &[Vec<u8>],
    schedules: u64,
) -> Result<Vec<(Code, String, String)>, Error> {
    let found: std::collections::BTreeSet<_> = machine::check(p, l, bufs, schedules)?
        .iter()
        .map(|f| at(p, f))
        .collect();
    Ok(found.into_iter().collect())
}

fn pb(code: Code, a: u32, b: u32) -> (Code, String, String) {
    (
        code,
        format!("planted_bugs.py:{a}"),
        format!("planted_bugs.py:{b}"),
    )
}

#[test]
fn the_warp_specialized_add_adds_and_checks_clean() -> Result<(), Error> {
    // tests/gluon/bug_ws_add_fixed.launch: `run: reference elementwise_add_ws`, `check: clean`.
    let src = fixture("bug_ws_add_fixed.sm_100a");
    let (p, l, bufs) = ws_add_launch(&src)?;
    let b = run_unchecked(&p, &l, &bufs, 3)?;
    let (x, y, c) = (bytes_f32(&b[0]), bytes_f32(&b[1]), bytes_f32(&b[2]));
    for i in 0..c.len() {
        assert_eq!(c[i], x[i] + y[i], "c[{i}]");
    }
    assert_eq!(verdicts(&p, &l, &bufs, 4)?, vec![]);
    Ok(())
}

#[test]
fn the_planted_bugs_of_the_warp_specialized_add_are_found_at_their_ttgir_lines() -> Result<(), Error> {
    // tests/gluon/bug_ws_add_no_fence.launch: missing-fence at 45 with 61 (and the release at
    // 67), at 46 with 62; bug_ws_add_early_release.launch: race at 45 with 61, at 46 with 62.
    let (p, l, bufs) = ws_add_launch(&fixture("bug_ws_add_no_fence.sm_100a"))?;
    assert_eq!(
        verdicts(&p, &l, &bufs, 4)?,
        vec![pb(Code::MissingFence, 45, 61), pb(Code::MissingFence, 46, 62)]
    );
    let (p, l, bufs) = ws_add_launch(&fixture("bug_ws_add_early_release.sm_100a"))?;
    let found = verdicts(&p, &l, &bufs, 8)?;
    assert!(found.contains(&pb(Code::Race, 45, 61)), "{found:?}");
    assert!(found.contains(&pb(Code::Race, 46, 62)), "{found:?}");
    Ok(())
}

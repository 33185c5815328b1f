//! The checker's findings where a run stops or a wait aliases, on the PTX front end's machine
//! with hand-written kernels, each beside its fixed twin (which runs to its stated outputs and
//! checks clean), as the tile machine reports them (docs/semantics.md, "The PTX front end"):
//! - a stuck run keeps the findings made before it stopped (a race of the unordered accesses
//!   a missing arrive leaves) and stops with the `deadlock`; a barrier whose transaction count
//!   can never reach zero is a `tx-mismatch` finding before that `deadlock`;
//! - an mbarrier wait whose parity means a phase the barrier has moved two completions past is
//!   `phase-aliasing` (the checker's `CtaHb::aliasing`);
//! - a four-lane fp8 lane whose result no source states is, in a check, the schedule's
//!   `unspecified-result` finding (the run stops with it).

mod common;

use bwsim_isa::Code;
use bwsim_ptxfront::machine::{self, Finding, Options};
use bwsim_ptxfront::{compile, Arg, Error, Launch, Program};
use common::{bytes_i32, words};

/// A kernel `k` of one parameter `out` (a pointer), `threads` threads per CTA, the dynamic
/// shared array `smem` and the `.loc` file 1 `stops.py`, around `body`, which starts with
/// `%rd1` the output, `%r1` the thread's index and `%r3` the address of `smem` (an mbarrier
/// at `smem`, another at `smem + 8`, data from `smem + 16`).
fn kernel(threads: u32, body: &str) -> String {
    format!(
        ".version 8.7\n.target sm_100a\n.address_size 64\n.extern .shared .align 16 .b8 smem[];\n\n\
         .visible .entry k(\n\t.param .u64 out\n)\n.reqntid {threads}\n{{\n\
         \t.reg .pred \t%p<8>;\n\t.reg .b32 \t%r<24>;\n\t.reg .b64 \t%rd<12>;\n\
         \tld.param.u64 \t%rd1, [out];\n\tmov.u32 \t%r1, %tid.x;\n\tmov.u32 \t%r3, smem;\n\
         \tsetp.eq.u32 \t%p1, %r1, 0;\n{body}\tret;\n}}\n\t.file\t1 \"stops.py\"\n"
    )
}

/// One CTA of `threads` threads over an output of `out_bytes` bytes (buffer 0), with 512
/// bytes of dynamic shared memory.
fn launch(src: &str, threads: u32, out_bytes: usize) -> Result<(Program, Launch, Vec<Vec<u8>>), Error> {
    let p = compile(src, "k")?;
    let mut l = Launch::new([1, 1, 1], [threads, 1, 1], vec![Arg::Buffer(0)]);
    l.dynamic_shared = 512;
    Ok((p, l, vec![vec![0; out_bytes]]))
}

/// `(code, primary line, other line)` of a finding, lines as `.loc` gives them.
fn at(p: &Program, f: &Finding) -> (Code, u32, u32) {
    let line = |pc: usize| machine::source_line(p, pc).map_or(0, |(_, l)| l);
    (f.code, line(f.pc), f.with.first().map_or(0, |&w| line(w)))
}

/// A producer warp (threads 0-31) writes word `i` of `smem + 16` (line 20) and, when `arrive`,
/// its lane 0 then arrives on the mbarrier at `smem` (line 21); the consumer warp (threads
/// 32-63) reads word `i` (line 30) and waits on the barrier's phase 0 (line 31), after the
/// read when `read_first` (the bug) and before it otherwise, and writes the word to
/// `out[i]`.
fn handoff(arrive: bool, read_first: bool) -> String {
    let read = "\t.loc\t1 30 0\n\tld.shared.u32 \t%r7, [%r5];\n";
    let wait = "\t.loc\t1 31 0\n$L__wait:\n\tmbarrier.try_wait.parity.shared::cta.b64 \t%p3, [%r3], 0;\n\t@!%p3 bra \t$L__wait;\n";
    let (first, second) = if read_first { (read, wait) } else { (wait, read) };
    let arrive = if arrive {
        "\t.loc\t1 21 0\n\t@%p1 mbarrier.arrive.shared::cta.b64 \t_, [%r3];\n"
    } else {
        ""
    };
    kernel(
        64,
        &format!(
            "\t.loc\t1 10 0\n\t@%p1 mbarrier.init.shared::cta.b64 \t[%r3], 1;\n\tbar.sync \t0;\n\
             \tand.b32 \t%r4, %r1, 31;\n\tshl.b32 \t%r5, %r4, 2;\n\tadd.s32 \t%r5, %r5, %r3;\n\
             \tadd.s32 \t%r5, %r5, 16;\n\tsetp.ge.u32 \t%p2, %r1, 32;\n\t@%p2 bra \t$L__consumer;\n\
             \t.loc\t1 20 0\n\tst.shared.u32 \t[%r5], %r1;\n{arrive}\tbra.uni \t$L__end;\n\
             $L__consumer:\n{first}{second}\tmul.wide.u32 \t%rd2, %r4, 4;\n\tadd.s64 \t%rd3, %rd1, %rd2;\n\
             \tst.global.u32 \t[%rd3], %r7;\n$L__end:\n"
        ),
    )
}

#[test]
fn a_stuck_run_keeps_the_race_found_before_its_deadlock() -> Result<(), Error> {
    // The producer never arrives and the consumer reads before its wait: the read and the
    // write are unordered (a race, in either order), and the wait never completes.
    let (p, l, bufs) = launch(&handoff(false, true), 64, 128)?;
    for seed in 0..4 {
        let mut b = bufs.clone();
        let (r, findings) = machine::run_to_stop(&p, &l, &mut b, &Options { seed, check: true });
        match r {
            Err(Error::Stuck(f)) => assert_eq!(at(&p, &f).0, Code::Deadlock, "seed {seed}"),
            r => panic!("seed {seed}: not stuck: {r:?}"),
        }
        let found: Vec<_> = findings.iter().map(|f| at(&p, f)).collect();
        assert!(
            found.contains(&(Code::Race, 30, 20)) || found.contains(&(Code::Race, 20, 30)),
            "seed {seed}: {found:?}"
        );
        assert!(found.iter().all(|f| f.0 == Code::Race), "seed {seed}: {found:?}");
        // `run` stops with the same error.
        let mut b = bufs.clone();
        assert!(matches!(
            machine::run(&p, &l, &mut b, &Options { seed, check: true }),
            Err(Error::Stuck(_))
        ));
    }
    // The check reports both: the race, then the deadlock, at the consumer's wait.
    let found: Vec<_> = machine::check(&p, &l, &bufs, 4)?
        .iter()
        .map(|f| at(&p, f))
        .collect();
    assert!(found.iter().any(|f| f.0 == Code::Race), "{found:?}");
    assert!(
        found.iter().any(|f| f.0 == Code::Deadlock && f.1 == 31),
        "{found:?}"
    );

    // The fixed twin: arrive after the write, read after the wait.
    let (p, l, bufs) = launch(&handoff(true, false), 64, 128)?;
    for seed in 0..4 {
        let mut b = bufs.clone();
        let o = machine::run(&p, &l, &mut b, &Options { seed, check: true })?;
        assert!(o.findings.is_empty(), "seed {seed}: {:?}", o.findings);
        // out[i] = the producer's thread i.
        assert_eq!(bytes_i32(&b[0]), (0..32).collect::<Vec<i32>>(), "seed {seed}");
    }
    assert!(machine::check(&p, &l, &bufs, 4)?.is_empty());
    Ok(())
}

/// One warp: thread 0 inits the mbarrier at `smem` (count 1) and arrives on it with
/// `arrive` (line 40); every thread waits on its phase 0 (line 41), then thread 0 writes 1
/// to `out[0]`.
fn expect_tx(arrive: &str) -> String {
    kernel(
        32,
        &format!(
            "\t@%p1 mbarrier.init.shared::cta.b64 \t[%r3], 1;\n\tbar.sync \t0;\n\
             \t.loc\t1 40 0\n\t@%p1 {arrive};\n\t.loc\t1 41 0\n$L__wait:\n\
             \tmbarrier.try_wait.parity.shared::cta.b64 \t%p3, [%r3], 0;\n\t@!%p3 bra \t$L__wait;\n\
             \tmov.u32 \t%r4, 1;\n\t@%p1 st.global.u32 \t[%rd1], %r4;\n"
        ),
    )
}

#[test]
fn a_transaction_count_no_copy_completes_is_a_tx_mismatch_before_the_deadlock() -> Result<(), Error> {
    // 16 bytes expected and no copy to deliver them: the phase never completes.
    let src = expect_tx("mbarrier.arrive.expect_tx.shared::cta.b64 \t_, [%r3], 16");
    let (p, l, bufs) = launch(&src, 32, 4)?;
    let mut b = bufs.clone();
    let (r, findings) = machine::run_to_stop(&p, &l, &mut b, &Options { seed: 0, check: true });
    match r {
        Err(Error::Stuck(f)) => assert_eq!(at(&p, &f), (Code::Deadlock, 41, 0)),
        r => panic!("not stuck: {r:?}"),
    }
    let found: Vec<_> = findings.iter().map(|f| at(&p, f)).collect();
    assert_eq!(found, [(Code::TxMismatch, 40, 0)]);
    let found: Vec<_> = machine::check(&p, &l, &bufs, 2)?
        .iter()
        .map(|f| at(&p, f))
        .collect();
    assert_eq!(found, [(Code::TxMismatch, 40, 0), (Code::Deadlock, 41, 0)]);

    // The fixed twin expects no bytes: the arrival completes the phase.
    let src = expect_tx("mbarrier.arrive.shared::cta.b64 \t_, [%r3]");
    let (p, l, bufs) = launch(&src, 32, 4)?;
    let mut b = bufs.clone();
    let o = machine::run(&p, &l, &mut b, &Options { seed: 0, check: true })?;
    assert!(o.findings.is_empty(), "{:?}", o.findings);
    assert_eq!(bytes_i32(&b[0]), [1]);
    assert!(machine::check(&p, &l, &bufs, 2)?.is_empty());
    Ok(())
}

/// Lane 0 of the producer warp completes three phases of the `full` mbarrier (at `smem`,
/// count 1; arrivals at line 50), and, when `wait_empty`, waits for the consumer's release on
/// `empty` (at `smem + 8`, count 1; line 51) between them. Lane 0 of the consumer warp waits
/// for each of the three phases of `full` (parity 0, 1, 0; line 60) and releases `empty`
/// after each of the first two (line 61), then writes 1 to `out[0]`.
fn pipeline(wait_empty: bool) -> String {
    let wait = |parity: u32, bar: &str, line: u32, label: String| {
        format!(
            "\t.loc\t1 {line} 0\n{label}:\n\
             \tmbarrier.try_wait.parity.shared::cta.b64 \t%p3, [{bar}], {parity};\n\
             \t@!%p3 bra \t{label};\n"
        )
    };
    let arrive = |bar: &str, line: u32| {
        format!("\t.loc\t1 {line} 0\n\tmbarrier.arrive.shared::cta.b64 \t_, [{bar}];\n")
    };
    let mut producer = String::new();
    for (k, parity) in [0, 1].into_iter().enumerate() {
        producer += &arrive("%r3", 50);
        if wait_empty {
            producer += &wait(parity, "%r5", 51, format!("$L__p{k}"));
        }
    }
    producer += &arrive("%r3", 50);
    let mut consumer = String::new();
    for (k, parity) in [0, 1, 0].into_iter().enumerate() {
        consumer += &wait(parity, "%r3", 60, format!("$L__c{k}"));
        if k < 2 {
            consumer += &arrive("%r5", 61);
        }
    }
    kernel(
        64,
        &format!(
            "\tadd.s32 \t%r5, %r3, 8;\n\t@%p1 mbarrier.init.shared::cta.b64 \t[%r3], 1;\n\
             \t@%p1 mbarrier.init.shared::cta.b64 \t[%r5], 1;\n\tbar.sync \t0;\n\
             \tsetp.eq.u32 \t%p2, %r1, 32;\n\t@%p2 bra \t$L__consumer;\n\t@!%p1 bra \t$L__end;\n\
             {producer}\tbra.uni \t$L__end;\n$L__consumer:\n{consumer}\
             \tmov.u32 \t%r4, 1;\n\tst.global.u32 \t[%rd1], %r4;\n$L__end:\n"
        ),
    )
}

#[test]
fn a_wait_two_phases_behind_its_barrier_is_phase_aliasing() -> Result<(), Error> {
    // Without the waits on `empty` the producer may complete `full`'s phases 0 and 1 before
    // the consumer's first wait (parity 0, meaning phase 0), which parity then cannot tell
    // from phase 2: phase aliasing at the wait, the arrivals that completed the phases it
    // missed labelled.
    let (p, l, bufs) = launch(&pipeline(false), 64, 4)?;
    let found: Vec<_> = machine::check(&p, &l, &bufs, 16)?
        .iter()
        .map(|f| at(&p, f))
        .collect();
    assert!(found.contains(&(Code::PhaseAliasing, 60, 50)), "{found:?}");
    assert!(
        (found.iter()).all(|f| matches!(f.0, Code::PhaseAliasing | Code::Deadlock)),
        "{found:?}"
    );

    // The fixed twin: the producer completes a phase only after the consumer released the
    // one before. Every schedule runs to the end, clean.
    let (p, l, bufs) = launch(&pipeline(true), 64, 4)?;
    for seed in 0..8 {
        let mut b = bufs.clone();
        let o = machine::run(&p, &l, &mut b, &Options { seed, check: true })?;
        assert!(o.findings.is_empty(), "seed {seed}: {:?}", o.findings);
        assert_eq!(bytes_i32(&b[0]), [1], "seed {seed}");
    }
    assert!(machine::check(&p, &l, &bufs, 16)?.is_empty());
    Ok(())
}

/// One thread multiplies the four e4m3 lanes of `io[0]` by those of `io[1]` (line 37,
/// `mul.e4m3x4`) into `io[2]`.
fn fp8_mul() -> String {
    kernel(
        32,
        "\t@!%p1 bra \t$L__end;\n\tld.global.b32 \t%r4, [%rd1];\n\tld.global.b32 \t%r5, [%rd1+4];\n\
         \t.loc\t1 37 0\n\tmul.e4m3x4.e4m3x4.e4m3x4 \t%r6, %r4, %r5;\n\tst.global.b32 \t[%rd1+8], %r6;\n$L__end:\n",
    )
}

#[test]
fn an_unspecified_fp8_lane_is_a_finding_of_the_check() -> Result<(), Error> {
    let (p, l, _) = launch(&fp8_mul(), 32, 12)?;
    let io = |a: u32, b: u32| vec![[a.to_le_bytes(), b.to_le_bytes(), [0; 4]].concat()];
    // e4m3 lanes (bias 7): 0x38 = 1.0, 0x40 = 2.0, 0x48 = 4.0, 0x58 = 16.0, 0x60 = 32.0.
    // Lane 1: 32 * 16 = 512, past e4m3's largest finite value (448; 464 rounds down to it).
    let overflow = io(0x6038, 0x5838);
    let mut b = overflow.clone();
    assert!(matches!(
        machine::run(&p, &l, &mut b, &Options { seed: 0, check: true }),
        Err(Error::Unspecified { .. })
    ));
    let found: Vec<_> = machine::check(&p, &l, &overflow, 2)?
        .iter()
        .map(|f| at(&p, f))
        .collect();
    assert_eq!(found, [(Code::UnspecifiedResult, 37, 0)]);

    // In range: 1 * 1 = 1 (0x38), 2 * 4 = 8 (0x50), 0 * 0 = 0.
    let fine = io(0x4038, 0x4838);
    let mut b = fine.clone();
    let o = machine::run(&p, &l, &mut b, &Options { seed: 0, check: true })?;
    assert!(o.findings.is_empty(), "{:?}", o.findings);
    assert_eq!(words(&b[0]).nth(2).map(u32::from_le_bytes), Some(0x5038));
    assert!(machine::check(&p, &l, &fine, 2)?.is_empty());
    Ok(())
}

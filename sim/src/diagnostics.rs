//! The hazard checker's diagnostics beside the conflicting-access ones
//! ([`crate::check::hazards::CtaHb::describe`]): uninitialised reads, phase aliasing, transaction-count
//! mismatches, leaked tensor memory and mbarrier misuse. The machine detects each and calls
//! the builder here with what it knows (the program for spans and names, the checker's records);
//! the timing engine uses the same mbarrier-misuse faults.
//!
//! This module builds text and spans; it decides nothing about when a hazard happened.

use crate::check::hazards::{Aliasing, BarHb};
use crate::lower::Program;
use crate::trap::Fault;
use bwsim_isa::{Code, Diagnostic, Span};

/// `uninit-read`: the operation `op` (at `span`) reads `what` (which bytes or cells) that
/// nothing wrote in this launch.
/// A warning by default (the code's level): reading undefined bytes is harmless until they
/// reach a global store, an address, a branch or an MMA ([`crate::taint`] adds where they do).
pub fn uninit_read(op: &str, what: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::UninitRead,
        format!("`{op}` reads {what} that nothing wrote in this launch"),
        span,
        "reads uninitialised memory",
    )
    .with_note("shared and tensor memory start with undefined contents in every launch")
    .with_help("write the buffer first (a TMA load waited on, an `smem.store`, an MMA with `use_acc=false`), or check which buffer or stage index this reads")
}

/// `cluster-exit`: CTA `owner` (rank `owner_rank`) may exit before the access at `span` by its
/// peer `peer` (rank `peer_rank`) to its shared memory.
pub fn cluster_exit(
    op: &str,
    span: Span,
    peer: u32,
    peer_rank: u32,
    owner: u32,
    owner_rank: u32,
) -> Diagnostic {
    Diagnostic::new(
        Code::ClusterExit,
        format!(
            "CTA {owner} (rank {owner_rank} of its cluster) may exit while CTA {peer} (rank {peer_rank}) still accesses its shared memory"
        ),
        span,
        format!("`{op}` by CTA {peer} reaches CTA {owner}'s shared memory"),
    )
    .with_note("a CTA's shared memory is released when it exits; a peer's access after that is undefined (PTX ISA, \"Distributed Shared Memory\")")
    .with_help("end every CTA of the cluster with `cluster.arrive` + `cluster.wait` (or `cluster.sync`) after its last access to a peer's shared memory")
}

/// `phase-aliasing`: `who` waits (at `span`) with `parity` on barrier `bar`, now in `phase`,
/// and `al` says which completions it cannot have seen; `span_of` gives the span of the
/// instruction numbered `instr` that completed a missed phase (the tile program's or the PTX
/// front end's).
pub fn phase_aliasing(
    span_of: impl Fn(u32) -> Span,
    al: &Aliasing,
    who: &str,
    bar: &str,
    span: Span,
    phase: u64,
    parity: u32,
) -> Diagnostic {
    let passes = (phase & 1) != parity as u64;
    let missed = al.missed.iter().flatten().count() as u64;
    let mut d = Diagnostic::error(
        Code::PhaseAliasing,
        format!("phase aliasing on `{bar}`: this wait means a phase the barrier has already moved past"),
        span,
        format!("{who} waits for parity {parity} here"),
    );
    let mut by_instr: Vec<(u32, Vec<u64>)> = Vec::new();
    for (k, w) in al.missed.iter().flatten().enumerate() {
        let phase_k = phase - missed + k as u64;
        match by_instr.iter_mut().find(|(i, _)| *i == w.instr) {
            Some((_, v)) => v.push(phase_k),
            None => by_instr.push((w.instr, vec![phase_k])),
        }
    }
    for (instr, phases) in by_instr {
        let sp = span_of(instr);
        let what = match phases.as_slice() {
            [p] => format!("completed phase {p} of `{bar}` (parity {})", p & 1),
            ps => format!(
                "completed phases {} of `{bar}`",
                ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(" and ")
            ),
        };
        d = d.with_label(sp, what);
    }
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    let meant = if missed == 2 {
        format!(
            "{who} cannot have observed the completion of phase {}: the phase it waits for and the one after it have both completed, and parity cannot tell them apart",
            phase - 2
        )
    } else {
        format!(
            "{who} knows of {} completion{} and waits with parity {parity}, which means phase {}{}, already complete; phase {} has completed since and parity now shows it",
            phase - 1,
            plural(phase - 1),
            phase as i64 - 2,
            if phase == 1 { " (the phase a fresh barrier counts as complete)" } else { "" },
            phase - 1
        )
    };
    d = d
        .with_note(format!(
            "`{bar}` has completed {phase} phase{} (the current phase has parity {}); {meant}",
            plural(phase),
            phase & 1,
        ))
        .with_note(format!(
            "in this schedule parity alone {} the wait (parity is all the hardware keeps: docs/semantics.md#mbarrier)",
            if passes { "passes" } else { "blocks" }
        ))
        .with_help("a producer must not get two phases ahead of a waiter: give every pipeline stage its own barrier, release each buffer on its own barrier, or make the producer wait for the consumer's release before completing this barrier again");
    d
}

/// The `tx-mismatch` of a barrier that will never complete its phase: `tx` is its transaction
/// count (expected minus delivered bytes).
pub fn tx_mismatch(prog: &Program, bar: &str, tx: i64, hb: &BarHb) -> Diagnostic {
    let span = |pc: &u32| prog.code.get(*pc as usize).map(|i| i.span).unwrap_or(Span::DUMMY);
    let expects: Vec<Span> = hb.expect_at.iter().map(span).collect();
    let delivers: Vec<Span> = hb.deliver_at.iter().map(span).collect();
    let mut d = if tx < 0 {
        let primary = delivers.first().copied().unwrap_or(Span::DUMMY);
        let mut d = Diagnostic::error(
            Code::TxMismatch,
            format!(
                "`{bar}` received {} bytes more than its phase expects: the phase can never complete",
                -tx
            ),
            primary,
            format!("delivers bytes to `{bar}`"),
        );
        for s in delivers.iter().skip(1) {
            d = d.with_label(*s, "delivers bytes too");
        }
        for s in &expects {
            d = d.with_label(*s, format!("expects bytes on `{bar}`"));
        }
        d.with_help(if expects.is_empty() {
            format!("add `mbar.expect {bar}, BYTES` (BYTES: everything the copies deliver, e.g. `desc.nbytes` per copy) before the copies, in the phase they complete")
        } else {
            "expect exactly the bytes the copies deliver: the full box of each, out-of-bounds part included".to_string()
        })
    } else {
        let primary = expects.first().copied().unwrap_or(Span::DUMMY);
        let mut d = Diagnostic::error(
            Code::TxMismatch,
            format!("`{bar}` still expects {tx} bytes that no copy in flight will deliver: the phase can never complete"),
            primary,
            format!("expects bytes on `{bar}`"),
        );
        for s in &delivers {
            d = d.with_label(*s, format!("delivers bytes to `{bar}`"));
        }
        d.with_help(
            "expect only the bytes that the copies issued on this barrier deliver (`desc.nbytes` per copy)",
        )
    };
    d = d.with_note(format!(
        "in the current phase: {} bytes expected, {} bytes delivered (the phase completes only when the transaction count returns to zero: docs/semantics.md#mbarrier)",
        hb.expected, hb.delivered
    ));
    d
}

/// `tmem-leak`: CTA `cta` exits with columns `col..col + cols` allocated at `span`.
pub fn tmem_leak(cta: u32, col: u32, cols: u32, span: Span) -> Diagnostic {
    Diagnostic::error(
        Code::TmemLeak,
        format!(
            "CTA {} exits with TMEM columns {}..{} still allocated",
            cta,
            col,
            col + cols
        ),
        span,
        "allocated here and never freed",
    )
    .with_note("every tcgen05.alloc must be freed before the kernel exits (docs/semantics.md#tensor-memory-and-tcgen05)")
    .with_help("add `tmem.dealloc` for this buffer at the end of the kernel")
}

/// `barrier-misuse`: the mbarrier at shared byte `addr` used before `mbar.init`.
pub fn barrier_before_init(addr: u32) -> Fault {
    Fault::error(
        Code::BarrierMisuse,
        format!("mbarrier at shared byte {addr} used before mbar.init"),
    )
    .with_help("initialise every barrier with `mbar.init` before any arrive, expect, wait or TMA on it")
}

/// `barrier-misuse`: the mbarrier at shared byte `addr` used after `mbar.invalidate` (the
/// functional machine adds the invalidation's place with [`Fault::with_label`]).
pub fn barrier_after_invalidate(addr: u32) -> Fault {
    Fault::error(
        Code::BarrierMisuse,
        format!("mbarrier at shared byte {addr} used after mbar.invalidate"),
    )
    .with_help("re-initialise it with `mbar.init` before using it again")
}

/// `barrier-misuse` for an asynchronous arrival (`what`: a `tcgen05.commit` whose tensor-core
/// work has just completed) that lands on the mbarrier at shared byte `addr` after
/// `mbar.invalidate` (the machine adds the invalidation's place). The PTX ISA leaves every
/// mbarrier operation on an invalidated object but `mbarrier.init` undefined, and the arrival
/// is such an operation: the kernel invalidated the barrier while the arrival was in flight.
pub fn arrival_after_invalidate(addr: u32, what: &str) -> Fault {
    Fault::error(
        Code::BarrierMisuse,
        format!(
            "the arrival of {what} lands on the mbarrier at shared byte {addr} after mbar.invalidate: it was still in flight when the barrier was invalidated"
        ),
    )
    .with_help(
        "wait for the phase this arrival completes before invalidating the barrier",
    )
}

/// `barrier-reinit`: `mbar.init` at `span` of the mbarrier at shared byte `addr`, which the
/// `mbar.init` at `first` initialised and nothing invalidated since. The PTX ISA ends an
/// mbarrier object's life with `mbarrier.inval` before its memory serves anything else;
/// initialising a live one over arrivals or waits still under way leaves them undefined.
pub fn barrier_reinit(addr: u32, span: Span, first: Span) -> Diagnostic {
    let d = Diagnostic::error(
        Code::BarrierReinit,
        format!("mbarrier at shared byte {addr} initialised again without `mbar.invalidate`"),
        span,
        "initialised again here",
    );
    // (`Span`'s `==` ignores positions: spans compare equal so that trees compare by content.)
    let d = if (first.start, first.end) == (span.start, span.end) {
        d.with_note(
            "the live initialisation is this same `mbar.init`, run earlier (an earlier loop iteration)",
        )
    } else {
        d.with_label(first, "initialised here, and not invalidated since")
    };
    d.with_note("its phase, pending count and transaction count start over while arrivals or waits of the first initialisation may still be under way")
    .with_help("initialise the barrier once (outside the loop), or `mbar.invalidate` it before initialising it again")
}

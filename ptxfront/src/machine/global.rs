//! Global memory in the machine's check: the global loads, stores and atomics of different
//! CTAs, and the release/acquire synchronisation between them (`global-race`, the rule of
//! `bwsim_sim::check::global`, docs/semantics.md "Global memory").
//!
//! The machine runs the CTAs one after another; each CTA's global-memory events
//! ([`GEvent`], in the order its threads made them) are checked here when the CTA is done,
//! against a shadow of every 4-byte granule shared by all CTAs: its last write and the reads
//! since (one per CTA), each with the CTA, the CTA's epoch at the access (how many releases
//! the CTA had made) and the instruction; and the synchronisation its releases left (per
//! CTA, the epochs a release published). Two accesses of different CTAs conflict when one
//! writes and not both are strong (atomics, `.relaxed`/`.acquire`/`.release` accesses); the
//! conflict is a race unless the later CTA had learnt, by acquiring, a release the earlier CTA
//! made after its access. A release is a strong write that is `.release` itself or follows a
//! `fence.release/acq_rel/sc` (or `membar.gl`/`.sys`) of its thread, at a scope beyond the CTA;
//! an acquire is a strong read that is `.acquire`, or followed by such a fence of its thread,
//! and learns what the granule's releases published. A plain write ends the release sequence;
//! strong writes continue it. A plain store that leaves a granule's bytes as they were, by the
//! instruction that made its last write in another CTA, does not conflict with that write (a
//! replicated store, as `bwsim_sim::check::global` has it).
//!
//! The model is per CTA: the accesses of one CTA are not checked against each other (the
//! shared-memory check orders its warps), and a release publishes every access its CTA made
//! before it, of any thread. The bulk tensor copies' global accesses are not recorded.

use super::{source_line, Finding};
use crate::exec::GEvent;
use crate::program::Program;
use bwsim_isa::{Code, Diagnostic, Span};
use std::collections::HashMap;

/// One recorded access: its CTA, the CTA's epoch at it, its instruction, strong or not.
#[derive(Clone, Copy, Debug)]
struct Rec {
    cta: usize,
    epoch: u32,
    pc: usize,
    strong: bool,
    write: bool,
}

/// A granule's state.
#[derive(Default)]
struct State {
    write: Option<Rec>,
    reads: Vec<Rec>,
    /// What the releases of the granule's release sequence published: per CTA, the epochs
    /// whose accesses they order.
    sync: Option<Vec<u32>>,
}

/// The shadow of global memory, shared by the CTAs of a run.
pub(crate) struct GlobalCheck {
    ctas: usize,
    shadow: HashMap<u64, State>,
}

fn join(into: &mut [u32], from: &[u32]) {
    for (a, b) in into.iter_mut().zip(from) {
        *a = (*a).max(*b);
    }
}

impl GlobalCheck {
    /// The shadow for a run of `ctas` CTAs.
    pub(crate) fn new(ctas: usize) -> GlobalCheck {
        GlobalCheck {
            ctas,
            shadow: HashMap::new(),
        }
    }

    /// Checks CTA `cta`'s (linear id) events, reporting each race into `findings` once per
    /// pair of instructions.
    pub(crate) fn cta(&mut self, p: &Program, cta: usize, events: &[GEvent], findings: &mut Vec<Finding>) {
        let mut known = vec![0u32; self.ctas.max(cta + 1)];
        // Per thread: a release fence not yet followed by a strong write; what its strong
        // reads since its last acquire fence found.
        let mut fenced: HashMap<usize, ()> = HashMap::new();
        let mut found: HashMap<usize, Vec<Vec<u32>>> = HashMap::new();
        for e in events {
            match *e {
                GEvent::Fence { thread, order } => {
                    if !order.cross {
                        continue;
                    }
                    if order.release {
                        fenced.insert(thread, ());
                    }
                    if order.acquire {
                        for s in found.remove(&thread).unwrap_or_default() {
                            join(&mut known, &s);
                        }
                    }
                }
                GEvent::Access(a) => {
                    let (thread, pc, write, order) = (a.thread, a.pc, a.write, a.order);
                    let me = Rec {
                        cta,
                        epoch: known[cta],
                        pc,
                        strong: order.strong,
                        write,
                    };
                    let release = write
                        && order.strong
                        && order.cross
                        && (fenced.remove(&thread).is_some() || order.release);
                    let published = release.then(|| {
                        let mut k = known.clone();
                        k[cta] += 1;
                        k
                    });
                    for g in a.addr / 4..=(a.addr + a.bytes.max(1) as u64 - 1) / 4 {
                        let st = self.shadow.entry(g).or_default();
                        let races =
                            |r: &Rec| r.cta != cta && !(r.strong && me.strong) && known[r.cta] <= r.epoch;
                        let mut with: Vec<Rec> = Vec::new();
                        if let Some(w) = st.write {
                            if races(&w) && !(write && a.silent && !order.strong && w.pc == pc) {
                                with.push(w);
                            }
                        }
                        if write {
                            with.extend(st.reads.iter().filter(|r| races(r)));
                        }
                        if write {
                            if !order.strong {
                                st.sync = None;
                            }
                            st.write = Some(me);
                            st.reads.clear();
                        } else {
                            st.reads.retain(|r| r.cta != cta);
                            st.reads.push(me);
                            if let (true, true, Some(s)) = (order.strong, order.cross, &st.sync) {
                                if order.acquire {
                                    join(&mut known, s);
                                } else {
                                    found.entry(thread).or_default().push(s.clone());
                                }
                            }
                        }
                        if let Some(k) = &published {
                            match &mut st.sync {
                                Some(s) => join(s, k),
                                None => st.sync = Some(k.clone()),
                            }
                        }
                        for w in with {
                            report(p, &me, &w, g * 4, findings);
                        }
                    }
                    if release {
                        known[cta] += 1;
                    }
                }
            }
        }
    }
}

/// A `global-race` between access `second` and the earlier `first` (of another CTA) at byte
/// `byte`, once per pair of instructions.
fn report(p: &Program, second: &Rec, first: &Rec, byte: u64, findings: &mut Vec<Finding>) {
    if findings
        .iter()
        .any(|f| f.code == Code::GlobalRace && f.pc == second.pc && f.with == [first.pc])
    {
        return;
    }
    let span = |pc: usize| p.ins.get(pc).map_or(Span::DUMMY, |i| i.span);
    let src = |pc: usize| source_line(p, pc).map_or(String::new(), |(f, l)| format!(", at {f}:{l}"));
    let access = |r: &Rec| {
        let verb = if r.write { "writes" } else { "reads" };
        let kind = if r.strong { "strong" } else { "plain" };
        format!("{verb} ({kind}) in CTA {}{}", r.cta, src(r.pc))
    };
    let off = byte.wrapping_sub(crate::exec::GLOBAL_BASE);
    let (buf, off) = (off / crate::exec::BUFFER_STRIDE, off % crate::exec::BUFFER_STRIDE);
    let d = Diagnostic::error(
        Code::GlobalRace,
        format!(
            "data race on global memory: CTAs {} and {} access it with no release/acquire between them",
            first.cta, second.cta
        ),
        span(second.pc),
        access(second),
    )
    .with_label(span(first.pc), access(first))
    .with_note(format!(
        "first conflict at byte {off} of launch buffer {buf}; the second access is at {}, the first at {}",
        p.place(second.pc),
        p.place(first.pc)
    ))
    .with_help(
        "publish the first access with a release (`fence.release.gpu` before a relaxed store of a flag, or `st.release.gpu`) that the second access's CTA acquires (`ld.acquire.gpu`, or a relaxed load then `fence.acquire.gpu`)",
    );
    findings.push(Finding {
        code: Code::GlobalRace,
        pc: second.pc,
        with: vec![first.pc],
        diagnostic: d,
    });
}

//! The wait-for graph of a deadlock: who waits on which mbarrier, and who could still arrive
//! on it.
//!
//! When every agent is blocked and nothing is in flight, the machine describes each blocked
//! partition as a [`Waiter`]; [`diagnose`] builds the graph (petgraph) with an edge from every
//! waiter to the barrier it waits on and from every barrier to each unfinished partition that
//! has arrived on it before (directly, or through a TMA copy or a `tcgen05.commit` it issued),
//! looks for a cycle, and renders the `deadlock` diagnostic: each waiter with the barrier
//! state, who could still arrive, and the cycle when there is one.
//!
//! This module knows nothing of the machine: it gets plain descriptions, plus the program's
//! static arrive sites ([`arrive_sites`]).

use crate::interp;
use crate::lower::{CExpr, IKind, LOp, Program};
use bwsim_isa::Code;
use bwsim_isa::{Diagnostic, Span};
use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::HashMap;

/// A partition that arrived on a barrier before.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// The partition (agent index).
    pub agent: u32,
    /// The operation it arrived through (`mbar.arrive`, `tma.load`, `tcgen05.commit`, ...).
    pub op: &'static str,
}

/// The state of an mbarrier someone waits on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarWait {
    pub addr: u32,
    /// `name[i]`.
    pub name: String,
    pub parity: u32,
    /// `None` when the barrier is not initialised (or invalidated).
    pub state: Option<BarStateView>,
    /// The partitions whose code arrives on it (`mbar.arrive`, `mbar.expect`, a TMA copy or a
    /// `tcgen05.commit` completing on it), found in the program or seen in this run.
    pub arrivals: Vec<Arrival>,
    /// Whether anything arrived on it in this run (`None`: not tracked, the checker is off).
    pub arrived: Option<bool>,
}

/// Phase, pending arrivals and tx-count of a barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarStateView {
    pub phase: u64,
    pub pending: u32,
    pub expected: u32,
    pub tx: i64,
}

/// What a blocked partition waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitOn {
    Mbar(BarWait),
    /// Its worker partitions (the join of `warp_specialize`).
    Join(Vec<u32>),
    /// Anything else, in words (`tma.store_wait`, `wgmma.wait`, a TMEM allocation).
    Other(String),
}

/// A blocked partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiter {
    pub agent: u32,
    /// `cta0.default`.
    pub name: String,
    /// The blocking instruction.
    pub span: Span,
    pub on: WaitOn,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Node {
    Agent(u32),
    Bar(u32),
}

/// The line for one waiter (kept stable: tests and users grep it).
fn describe(w: &Waiter, names: &HashMap<u32, String>, blocked: &HashMap<u32, &Waiter>) -> String {
    match &w.on {
        WaitOn::Mbar(b) => {
            let mut line = match &b.state {
                Some(s) => format!(
                    "{} waits for parity {} of `{}`: its phase is {} (parity {}), {} of {} arrivals pending, tx-count {}",
                    w.name,
                    b.parity,
                    b.name,
                    s.phase,
                    s.phase & 1,
                    s.pending,
                    s.expected,
                    s.tx
                ),
                None => format!("{} waits on `{}`, which is not initialised", w.name, b.name),
            };
            let mut who: Vec<(u32, Vec<&str>)> = Vec::new();
            for a in &b.arrivals {
                match who.iter_mut().find(|(x, _)| *x == a.agent) {
                    Some((_, ops)) if !ops.contains(&a.op) => ops.push(a.op),
                    Some(_) => {}
                    None => who.push((a.agent, vec![a.op])),
                }
            }
            let who: Vec<String> = who
                .iter()
                .map(|(agent, ops)| {
                    let n = names
                        .get(agent)
                        .cloned()
                        .unwrap_or_else(|| format!("agent {agent}"));
                    let state = match blocked.get(agent) {
                        Some(o) => match &o.on {
                            WaitOn::Mbar(ob) => format!("blocked on `{}`", ob.name),
                            _ => "blocked".to_string(),
                        },
                        None => "finished".to_string(),
                    };
                    let ops: Vec<String> = ops.iter().map(|o| format!("`{o}`")).collect();
                    format!("{n} ({}; {state})", ops.join(", "))
                })
                .collect();
            if who.is_empty() {
                line.push_str("; no partition's code arrives on it");
            } else {
                line.push_str(&format!("; arrives on it: {}", who.join(", ")));
            }
            if b.arrived == Some(false) {
                line.push_str("; nothing has arrived on it in this run");
            }
            line
        }
        WaitOn::Join(children) => {
            let left: Vec<String> = children
                .iter()
                .filter(|c| blocked.contains_key(c))
                .map(|c| names.get(c).cloned().unwrap_or_default())
                .collect();
            format!(
                "{} waits for its worker partitions to finish ({} still blocked)",
                w.name,
                left.join(", ")
            )
        }
        WaitOn::Other(s) => format!("{} waits {s}", w.name),
    }
}

/// The `deadlock` diagnostic for a set of blocked partitions (`names`: agent index → name, for
/// every partition of the CTAs involved).
pub fn diagnose(waiters: &[Waiter], names: &HashMap<u32, String>) -> Diagnostic {
    let blocked: HashMap<u32, &Waiter> = waiters.iter().map(|w| (w.agent, w)).collect();
    let mut g: DiGraph<Node, ()> = DiGraph::new();
    let mut idx: HashMap<Node, NodeIndex> = HashMap::new();
    let mut node =
        |g: &mut DiGraph<Node, ()>, n: Node| *idx.entry(n.clone()).or_insert_with(|| g.add_node(n));
    for w in waiters {
        let a = node(&mut g, Node::Agent(w.agent));
        match &w.on {
            WaitOn::Mbar(b) => {
                let bn = node(&mut g, Node::Bar(b.addr));
                g.update_edge(a, bn, ());
                for ar in &b.arrivals {
                    if blocked.contains_key(&ar.agent) {
                        let an = node(&mut g, Node::Agent(ar.agent));
                        g.update_edge(bn, an, ());
                    }
                }
            }
            WaitOn::Join(children) => {
                for c in children.iter().filter(|c| blocked.contains_key(c)) {
                    let cn = node(&mut g, Node::Agent(*c));
                    g.update_edge(a, cn, ());
                }
            }
            WaitOn::Other(_) => {}
        }
    }
    let bar_names: HashMap<u32, &str> = waiters
        .iter()
        .filter_map(|w| match &w.on {
            WaitOn::Mbar(b) => Some((b.addr, b.name.as_str())),
            _ => None,
        })
        .collect();
    let label = |n: &Node| match n {
        Node::Agent(a) => names.get(a).cloned().unwrap_or_else(|| format!("agent {a}")),
        Node::Bar(b) => format!("`{}`", bar_names.get(b).copied().unwrap_or("?")),
    };
    // A cycle: walk inside the first strongly connected component with more than one node.
    let mut cycle = None;
    let mut cycle_bars: Vec<u32> = Vec::new();
    for scc in tarjan_scc(&g) {
        if scc.len() < 2 {
            continue;
        }
        let start = scc.iter().copied().min_by_key(|n| n.index()).unwrap_or(scc[0]);
        let mut path = vec![start];
        let mut at = start;
        while path.len() <= scc.len() {
            let Some(next) = g
                .neighbors(at)
                .filter(|n| scc.contains(n))
                .min_by_key(|n| n.index())
            else {
                break;
            };
            path.push(next);
            if next == start {
                break;
            }
            at = next;
        }
        cycle = Some(
            path.iter()
                .map(|n| label(&g[*n]))
                .collect::<Vec<_>>()
                .join(" -> "),
        );
        cycle_bars = path
            .iter()
            .filter_map(|n| match g[*n] {
                Node::Bar(b) => Some(b),
                _ => None,
            })
            .collect();
        break;
    }
    let lines: Vec<(Span, String)> = waiters
        .iter()
        .map(|w| (w.span, describe(w, names, &blocked)))
        .collect();
    let (first_span, first) = lines.first().cloned().unwrap_or((Span::DUMMY, "no agent".into()));
    let short = |w: &Waiter| match &w.on {
        WaitOn::Mbar(b) => format!("{} waits for parity {} of `{}`", w.name, b.parity, b.name),
        WaitOn::Join(_) => format!("{} waits for its workers", w.name),
        WaitOn::Other(s) => format!("{} waits {s}", w.name),
    };
    let mut d = Diagnostic::error(
        Code::Deadlock,
        "deadlock: every agent is blocked and nothing is in flight",
        first_span,
        waiters.first().map(short).unwrap_or(first),
    );
    for w in waiters.iter().skip(1) {
        d = d.with_label(w.span, short(w));
    }
    for (_, l) in &lines {
        d = d.with_note(l.clone());
    }
    if let Some(c) = cycle {
        d = d.with_note(format!("wait-for cycle: {c}"));
    }
    let tx = waiters.iter().find_map(|w| match &w.on {
        WaitOn::Mbar(b) => b.state.filter(|s| s.tx != 0).map(|s| (b.name.clone(), s.tx)),
        _ => None,
    });
    let lonely = waiters.iter().find_map(|w| match &w.on {
        WaitOn::Mbar(b) if !b.arrivals.iter().any(|a| blocked.contains_key(&a.agent)) => Some(b.name.clone()),
        _ => None,
    });
    // A cycle of fresh barrier phases nothing arrived on: some wait there needs the other parity.
    let fresh_cycle = !cycle_bars.is_empty()
        && waiters.iter().all(|w| match &w.on {
            WaitOn::Mbar(b) if cycle_bars.contains(&b.addr) => {
                b.state.is_some_and(|s| s.phase == 0) && b.arrived != Some(true)
            }
            _ => true,
        });
    let help = if let Some((b, t)) = tx {
        format!("the transaction count of `{b}` is {t}, not 0, so its phase cannot complete: expect exactly the bytes its copies deliver")
    } else if fresh_cycle {
        "every barrier in the wait-for cycle is still in its first phase and nothing has arrived on it: one of these waits must pass on a fresh barrier; a producer waiting for a free slot waits on parity `phase ^ 1` (a fresh barrier passes a wait on parity 1)".to_string()
    } else if let Some(b) = lonely {
        format!(
            "no unfinished partition can arrive on `{b}` any more: add the missing `mbar.arrive` (or `tcgen05.commit`) that releases it, or fix the parity of the wait (a fresh barrier passes a wait on parity 1 and blocks one on parity 0)"
        )
    } else {
        "the partitions wait on each other: check each wait's parity against the phase its producer completes (a fresh barrier passes a wait on parity 1 and blocks one on parity 0)".to_string()
    };
    d.with_help(help)
}

/// Which partitions (agent index within a CTA: 0 the default, workers in declaration order)
/// have code that arrives on each mbarrier allocation (keyed by its first byte), and through
/// which operation. Found by following the control flow of each partition and resolving the
/// barrier operand to the `mbar.alloc` that made it; a barrier reached another way is missed
/// (the run's own record of arrivals covers it).
pub fn arrive_sites(prog: &Program) -> HashMap<u32, Vec<(u32, &'static str)>> {
    let mut alloc_of_slot: HashMap<u32, u32> = HashMap::new();
    for i in &prog.code {
        if let IKind::Op {
            op: LOp::MbarAlloc { addr, .. },
            dsts,
            ..
        } = &i.kind
        {
            if let [d] = dsts.as_slice() {
                alloc_of_slot.insert(*d, *addr);
            }
        }
    }
    let mut entries = vec![0u32];
    for i in &prog.code {
        if let IKind::Fork { workers } = &i.kind {
            entries.extend(workers.iter().map(|w| w.entry));
            break;
        }
    }
    let mut out: HashMap<u32, Vec<(u32, &'static str)>> = HashMap::new();
    for (part, &entry) in entries.iter().enumerate() {
        let mut seen = vec![false; prog.code.len()];
        let mut todo = vec![entry];
        while let Some(pc) = todo.pop() {
            let Some(i) = prog.code.get(pc as usize) else {
                continue;
            };
            if std::mem::replace(&mut seen[pc as usize], true) {
                continue;
            }
            if let IKind::Op { op, name, .. } = &i.kind {
                if let Some(addr) = op
                    .signalled_barrier()
                    .and_then(root_slot)
                    .and_then(|sl| alloc_of_slot.get(&sl))
                {
                    let v = out.entry(*addr).or_default();
                    if !v.contains(&(part as u32, name)) {
                        v.push((part as u32, name));
                    }
                }
            }
            todo.extend(interp::successors(pc, &i.kind));
        }
    }
    out
}

/// The slot a barrier operand (`bars`, `bars[i]`) comes from.
fn root_slot(e: &CExpr) -> Option<u32> {
    match e {
        CExpr::Slot(s) => Some(*s),
        CExpr::Index(b, _) => root_slot(b),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(addr: u32, name: &str, parity: u32, arrivals: Vec<Arrival>) -> WaitOn {
        WaitOn::Mbar(BarWait {
            addr,
            name: name.into(),
            parity,
            state: Some(BarStateView {
                phase: 1,
                pending: 1,
                expected: 1,
                tx: 0,
            }),
            arrived: Some(!arrivals.is_empty()),
            arrivals,
        })
    }

    #[test]
    fn a_two_partition_cycle_is_named_and_a_lonely_barrier_gets_the_help() {
        let names: HashMap<u32, String> = [
            (0, "cta0.default".to_string()),
            (1, "cta0.worker.mma".to_string()),
        ]
        .into();
        let ws = vec![
            Waiter {
                agent: 0,
                name: names[&0].clone(),
                span: Span::new(10, 20),
                on: bar(
                    8,
                    "ready[0]",
                    1,
                    vec![Arrival {
                        agent: 1,
                        op: "tcgen05.commit",
                    }],
                ),
            },
            Waiter {
                agent: 1,
                name: names[&1].clone(),
                span: Span::new(30, 40),
                on: bar(
                    16,
                    "empty[0]",
                    0,
                    vec![Arrival {
                        agent: 0,
                        op: "mbar.arrive",
                    }],
                ),
            },
        ];
        let d = diagnose(&ws, &names);
        assert_eq!(d.code, "deadlock");
        assert_eq!(d.labels.len(), 1);
        let notes = d.notes.join("\n");
        for want in [
            "wait-for cycle: cta0.default -> `ready[0]` -> cta0.worker.mma -> `empty[0]` -> cta0.default",
            "arrives on it: cta0.worker.mma (`tcgen05.commit`; blocked on `empty[0]`)",
        ] {
            assert!(notes.contains(want), "{notes}");
        }
        assert!(d
            .help
            .as_deref()
            .is_some_and(|h| h.contains("wait on each other")));
        // Without the second arrival: no cycle, and the help names the barrier nobody arrives on.
        let mut ws2 = ws.clone();
        ws2[1].on = bar(16, "empty[0]", 0, vec![]);
        let d = diagnose(&ws2, &names);
        let notes = d.notes.join("\n");
        assert!(!notes.contains("cycle"), "{notes}");
        assert!(
            notes.contains("no partition's code arrives on it; nothing has arrived on it in this run"),
            "{notes}"
        );
        assert!(d
            .help
            .as_deref()
            .is_some_and(|h| h.contains("no unfinished partition can arrive on `empty[0]`")));
    }
}

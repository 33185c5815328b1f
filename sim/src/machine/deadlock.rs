//! What the machine says when it stops without finishing: where every agent is (for a
//! resource-limit diagnostic) and the `deadlock` diagnostic with its wait-for graph.

use super::*;

impl<'p, 's> Machine<'p, 's> {
    /// Where every live agent is (for the resource-limit diagnostic).
    pub(super) fn where_now(&self) -> limits::Where {
        let mut agents = Vec::new();
        for c in self.slots.iter().flatten() {
            for (a, ag) in c.agents.iter().enumerate() {
                let how = match ag.state {
                    AState::Done => continue,
                    AState::Ready => "runnable",
                    AState::Blocked(_) => "blocked",
                };
                let instr = self.prog.code.get(ag.pc as usize);
                let span = instr.map_or(Span::DUMMY, |i| i.span);
                let who = self.trace.unit_name(c.id, Unit::Agent(a as u32));
                agents.push((span, format!("{who} is here ({how})")));
            }
        }
        limits::Where {
            steps: self.counters.steps,
            time: self.now,
            ctas_done: self.counters.ctas,
            ctas_total: self.total_ctas,
            agents,
        }
    }

    /// The `deadlock` diagnostic (with its wait-for graph), after reporting a `tx-mismatch`
    /// for every waited-on barrier whose transaction count cannot reach zero any more.
    pub(super) fn deadlock(&mut self) -> Diagnostic {
        const PER_SLOT: u32 = 1 << 16;
        let prog = self.prog;
        let mut waiters = Vec::new();
        let mut names = HashMap::new();
        let mut mismatches = Vec::new();
        let sites = waitfor::arrive_sites(prog);
        for (si, c) in self.slots.iter().enumerate() {
            let Some(c) = c else { continue };
            let gid = |a: u32| si as u32 * PER_SLOT + a;
            for a in 0..c.agents.len() as u32 {
                names.insert(gid(a), self.trace.unit_name(c.id, Unit::Agent(a)));
            }
            for (a, ag) in c.agents.iter().enumerate() {
                let AState::Blocked(b) = ag.state else { continue };
                let span = prog
                    .code
                    .get(ag.pc as usize)
                    .map(|i| i.span)
                    .unwrap_or(Span::DUMMY);
                let on = match b {
                    Block::Mbar { addr, parity } => {
                        let state = match c.bars.get(&addr) {
                            Some(BarState::Live(m, _)) => Some(BarStateView {
                                phase: m.phase,
                                pending: m.pending,
                                expected: m.expected,
                                tx: m.tx,
                            }),
                            _ => None,
                        };
                        let hbar = c.hb.as_deref().and_then(|h| h.bar(addr));
                        let mut arrivals: Vec<Arrival> = prog
                            .allocs
                            .iter()
                            .find_map(|al| match al.place {
                                AllocPlace::Mbar { addr: a0, count }
                                    if addr >= a0 && addr < a0 + 8 * count =>
                                {
                                    sites.get(&a0)
                                }
                                _ => None,
                            })
                            .map(|v| v.iter().map(|&(p, op)| Arrival { agent: gid(p), op }).collect())
                            .unwrap_or_default();
                        for ar in hbar.map(|h| h.arrivers.as_slice()).unwrap_or_default() {
                            let x = Arrival {
                                agent: gid(ar.agent),
                                op: op_name(prog, ar.instr),
                            };
                            if !arrivals.contains(&x) {
                                arrivals.push(x);
                            }
                        }
                        let arrived =
                            c.hb.as_deref()
                                .map(|_| hbar.is_some_and(|h| !h.arrivers.is_empty()));
                        if let (Some(st), Some(hb)) = (state, hbar) {
                            if st.tx != 0 && !mismatches.iter().any(|(x, _): &(u32, _)| *x == addr) {
                                mismatches.push((
                                    addr,
                                    diagnostics::tx_mismatch(prog, &prog.mbar_name(addr), st.tx, hb),
                                ));
                            }
                        }
                        WaitOn::Mbar(BarWait {
                            addr: si as u32 * PER_SLOT * 16 + addr,
                            name: prog.mbar_name(addr),
                            parity,
                            state,
                            arrivals,
                            arrived,
                        })
                    }
                    Block::StoreWait { n, .. } => {
                        WaitOn::Other(format!("until at most {n} TMA store groups are pending"))
                    }
                    Block::WgmmaWait { n } => {
                        WaitOn::Other(format!("until at most {n} wgmma groups are pending"))
                    }
                    Block::CpAsyncWait { n, .. } => {
                        WaitOn::Other(format!("until at most {n} cp.async groups are pending"))
                    }
                    Block::Join => WaitOn::Join(ag.children.iter().map(|&ch| gid(ch)).collect()),
                    Block::TmemAlloc { cols } => WaitOn::Other(format!("for {cols} free TMEM columns")),
                    Block::ClusterSync { .. } => {
                        WaitOn::Other("in cluster.sync for the other CTAs of its cluster".to_string())
                    }
                };
                waiters.push(Waiter {
                    agent: gid(a as u32),
                    name: self.trace.unit_name(c.id, Unit::Agent(a as u32)),
                    span,
                    on,
                });
            }
        }
        for (_, d) in mismatches {
            self.report(d);
        }
        waitfor::diagnose(&waiters, &names)
    }
}

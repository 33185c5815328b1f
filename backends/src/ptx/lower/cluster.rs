//! Cluster barriers (`cluster.arrive`, `cluster.wait`, `cluster.sync`) and, in a kernel with
//! `warp_specialize`, their replay on the warps that do not run the default partition.
//!
//! `barrier.cluster` completes once every non-exited thread of every CTA of the cluster has
//! arrived (PTX ISA, "barrier.cluster"), but code outside the `warp_specialize` region runs on
//! the default partition's warps only: worker warps jump over the code before the region and
//! leave the kernel after their partition. So each cluster barrier the default partition
//! executes outside the region is recorded as a [`Step`], and the other warps (the workers and
//! the warps that only round the block up to whole warpgroups) execute the same steps in the
//! same order at two places of their own: the steps before the region on their way to
//! `$ws_entry` (from [`WORKERS_BEFORE`]), the steps after it between the end of their
//! partition and the kernel's end (from [`WORKERS_AFTER`]). Triton 3.9 does the same in its
//! PTX: worker warps wait in a loop for the default partition's next request, which may be
//! "arrive and wait on the cluster barrier" with the same `.relaxed`/release form.
//!
//! Such a barrier must execute a fixed number of times, known when lowering: at the kernel's top
//! level or in `static_for` bodies (unrolled), never under a dynamic `for`, `while` or `if`,
//! and never inside a partition (the other partitions would not arrive); both are refused.

use super::*;

/// Where worker warps go instead of `$ws_entry` at the kernel's start.
pub(super) const WORKERS_BEFORE: &str = "$ws_workers";
/// Where worker warps (and the warps of no partition) go when their partition is done.
pub(super) const WORKERS_AFTER: &str = "$ws_workers_exit";

/// One cluster barrier of the default partition outside the region, as worker warps replay it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// `cluster.arrive` (`relaxed`: `.relaxed`, else `.release`).
    Arrive { relaxed: bool },
    /// `cluster.wait`.
    Wait,
    /// `cluster.sync`: an arrive and a wait.
    Sync,
}

/// A recorded step with the operation it replays (for the PTX line map).
#[derive(Clone, Debug)]
pub(super) struct Recorded {
    step: Step,
    op: &'static str,
    span: Span,
}

/// The cluster barriers of a warp-specialized kernel outside its region.
#[derive(Clone, Debug, Default)]
pub(super) struct Replay {
    /// Executed by the default partition before the region, in order.
    before: Vec<Recorded>,
    /// Executed by the default partition after the region, in order.
    after: Vec<Recorded>,
    /// While the partitions' bodies are lowered.
    pub in_region: bool,
    /// Some worker partition may end with tensor-memory accesses not yet fenced for a thread
    /// barrier (the replayed arrives up to the first wait then take `tcgen05.fence::before_thread_sync`).
    pub workers_tmem_dirty: bool,
}

impl<'c, 'k> Lowerer<'c, 'k> {
    /// `cluster.arrive [relaxed=...]`.
    pub(super) fn cluster_arrive(
        &mut self,
        relaxed: Option<&Expr>,
        name: &'static str,
        span: Span,
    ) -> LResult<()> {
        let relaxed = match relaxed {
            Some(r) => self.const_int(r, name)? != 0,
            None => false,
        };
        self.whole_cluster(Step::Arrive { relaxed }, name, span)?;
        if self.part.tmem_dirty && self.target() == Target::Sm100a {
            self.e.ins("tcgen05.fence::before_thread_sync");
        }
        self.e.ins(arrive_ins(relaxed));
        Ok(())
    }

    /// `cluster.wait`.
    pub(super) fn cluster_wait(&mut self, name: &'static str, span: Span) -> LResult<()> {
        self.whole_cluster(Step::Wait, name, span)?;
        self.e.ins(WAIT_INS);
        if self.target() == Target::Sm100a && self.part.tmem_dirty {
            self.e.ins("tcgen05.fence::after_thread_sync");
        }
        // Every thread of the CTA passed the arrive before this wait returns.
        self.part.synced();
        Ok(())
    }

    /// `cluster.sync`.
    pub(super) fn cluster_sync(&mut self, name: &'static str, span: Span) -> LResult<()> {
        self.whole_cluster(Step::Sync, name, span)?;
        let tm = self.part.tmem_dirty && self.target() == Target::Sm100a;
        if tm {
            self.e.ins("tcgen05.fence::before_thread_sync");
        }
        self.e.ins(SYNC_ARRIVE_INS);
        self.e.ins(SYNC_WAIT_INS);
        if tm {
            self.e.ins("tcgen05.fence::after_thread_sync");
        }
        // It synchronises the whole CTA too.
        self.part.synced();
        Ok(())
    }

    /// A cluster barrier counts every thread of every CTA of the cluster, and the kernel then
    /// launches as a cluster. In a kernel with worker partitions it is recorded for the worker
    /// warps to replay ([`Replay`]), or refused where they cannot.
    fn whole_cluster(&mut self, step: Step, name: &'static str, span: Span) -> LResult<()> {
        if !self.ck.workers.is_empty() {
            if self.replay.in_region {
                return Err(unsupported(
                    name,
                    span,
                    format!(
                        "{name} inside a warp_specialize partition (the warps of the other partitions would not arrive)"
                    ),
                ));
            }
            if self.depth != self.static_depth {
                return Err(unsupported(
                    name,
                    span,
                    format!(
                        "{name} under a dynamic `for`, `while` or `if` in a kernel with warp_specialize partitions (worker warps replay the default partition's cluster barriers, which must then be a fixed sequence)"
                    ),
                ));
            }
            let r = Recorded { step, op: name, span };
            if self.ws_done {
                self.replay.after.push(r);
            } else {
                self.replay.before.push(r);
            }
        }
        self.uses_cluster = true;
        Ok(())
    }

    /// Right before `$ws_entry`, after the default partition's code before the region: the
    /// worker warps' replay of that code's cluster barriers, which the default partition
    /// jumps over.
    pub(super) fn place_workers_before(&mut self) {
        if self.replay.before.is_empty() {
            self.e.place(WORKERS_BEFORE);
            return;
        }
        self.e.ins("bra.uni $ws_entry");
        self.e.place(WORKERS_BEFORE);
        self.e.comment(
            "worker warps: the cluster barriers the default partition executed before warp_specialize",
        );
        let steps = std::mem::take(&mut self.replay.before);
        self.replay_steps(&steps, false);
        self.replay.before = steps;
    }

    /// After the default partition's code after the region, right before the kernel's end:
    /// the worker warps' replay of that code's cluster barriers, which the default partition
    /// jumps over.
    pub(super) fn place_workers_after(&mut self, end: &str) {
        if self.replay.after.is_empty() {
            self.e.place(WORKERS_AFTER);
            return;
        }
        self.e.ins(format!("bra.uni {end}"));
        self.e.place(WORKERS_AFTER);
        self.e.comment(
            "worker warps: the cluster barriers the default partition executed after warp_specialize",
        );
        let steps = std::mem::take(&mut self.replay.after);
        let dirty = self.replay.workers_tmem_dirty;
        self.replay_steps(&steps, dirty);
        self.replay.after = steps;
    }

    /// The instructions of `steps`, each line mapped to the operation it replays. `tmem_dirty`:
    /// tensor-memory accesses may precede the first step (the arrives before the first wait are
    /// then fenced, as the default partition's are).
    fn replay_steps(&mut self, steps: &[Recorded], mut tmem_dirty: bool) {
        let sm100 = self.target() == Target::Sm100a;
        for r in steps {
            let prev = self.e.set_origin(Some(Origin {
                op: r.op.to_string(),
                span: r.span,
            }));
            match r.step {
                Step::Arrive { relaxed } => {
                    if tmem_dirty && sm100 {
                        self.e.ins("tcgen05.fence::before_thread_sync");
                    }
                    self.e.ins(arrive_ins(relaxed));
                }
                Step::Wait => {
                    self.e.ins(WAIT_INS);
                    tmem_dirty = false;
                }
                Step::Sync => {
                    if tmem_dirty && sm100 {
                        self.e.ins("tcgen05.fence::before_thread_sync");
                    }
                    self.e.ins(SYNC_ARRIVE_INS);
                    self.e.ins(SYNC_WAIT_INS);
                    tmem_dirty = false;
                }
            }
            self.e.set_origin(prev);
        }
    }
}

/// The split arrive, executed at one PC by every thread of a warp.
fn arrive_ins(relaxed: bool) -> &'static str {
    if relaxed {
        "barrier.cluster.arrive.relaxed.aligned"
    } else {
        "barrier.cluster.arrive.release.aligned"
    }
}

/// The split wait, executed at one PC by every thread of a warp.
const WAIT_INS: &str = "barrier.cluster.wait.acquire.aligned";
/// `cluster.sync`'s arrive (no `.aligned`: no claim on the warp's convergence).
const SYNC_ARRIVE_INS: &str = "barrier.cluster.arrive.release";
/// `cluster.sync`'s wait.
const SYNC_WAIT_INS: &str = "barrier.cluster.wait.acquire";

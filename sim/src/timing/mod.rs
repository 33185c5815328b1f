//! The cycle-approximate timing model: how long a kernel's whole grid takes on a chip (B200,
//! GB200, H100, H200), which unit bounds it, and a trace of what one SM did.
//!
//! It runs the same lowered op stream as the functional simulator ([`crate::lower`]), with its
//! own discrete-event engine ([`engine`]) over SM cycles:
//! - per SM: the issue cost of every instruction ([`cost`]), shared-memory bandwidth, the TMA
//!   unit (latency, per-SM bandwidth each way, gather4 messages), the tensor pipe (cycles per
//!   tcgen05.mma / wgmma from shape, kind and the chip's per-SM rate; tcgen05.cp and
//!   tcgen05.ld/st costs), mbarrier and fence latencies;
//! - per GPU: a CTA scheduler with occupancy limits ([`occupancy`]: shared memory, TMEM,
//!   registers, threads) that starts a cluster's CTAs together on SMs of one GPC, an L2 that sees box reuse between CTAs (so rasterisation and grouped
//!   tile schedulers change its hit rate) and HBM bandwidth shared by all SMs ([`memsys`]).
//!
//! Every parameter comes from the chip table ([`crate::chips`]), each with its source.
//!
//! **Payloads.** The timing model never computes tile data: register tiles are carried as
//! element type and shape only ([`hollow`]), so a 128 x 256 accumulator costs nothing to move
//! and a full 8192 x 8192 x 16384 problem runs in seconds. Correctness is the functional
//! simulator's job: `bwsim time` runs it first (hazards, deadlocks, results against nothing
//! but the simulator's own rules) unless `--timing-only` is given, which is what full-size
//! problems need. A kernel whose *control flow* depends on tile data cannot be timed here and
//! is reported as unsupported; gathers and scatters are timed by their row count and counted
//! as L2 misses (their row indices are data).
//!
//! This module owns timing; it shares no state with [`crate::machine`].

pub mod cost;
pub mod engine;
pub mod hollow;
pub mod memsys;
pub mod occupancy;
pub mod pipe;
pub mod share;
pub mod trace;

pub use occupancy::{Limiter, Needs, Occupancy};
pub use trace::{Rec as TimingTrace, TEvent, TUnit, TWhat, TraceMode};

use crate::chips::Chip;
use crate::lower;
use crate::session::{Session, Verify};
use bwsim_isa::consts::Override;
use bwsim_isa::launch::LaunchPlan;
use bwsim_isa::typeck::Checked;
use bwsim_isa::Code;
use bwsim_isa::{Diagnostic, Span};
use serde::Serialize;

/// Why a kernel could not be timed.
#[derive(Debug, thiserror::Error)]
pub enum TimingError {
    /// Lowering failed (the diagnostics say why).
    #[error("the kernel could not be lowered")]
    Lower(Vec<Diagnostic>),
    /// An operation failed: a fault the hardware would raise, barrier misuse, or a construct
    /// the timing model does not support.
    #[error("{code}: {message} ({agent} at cycle {time:.0})")]
    Op {
        code: Code,
        message: String,
        span: Span,
        agent: String,
        time: f64,
    },
    /// Every partition left is blocked and nothing is in flight.
    #[error("deadlock at cycle {time:.0}: {} partitions blocked", waiters.len())]
    Deadlock {
        time: f64,
        /// (partition, span of its blocking op, what it waits for)
        waiters: Vec<(String, Span, String)>,
    },
    /// One CTA needs more than an SM has.
    #[error("one CTA does not fit on an SM of {chip}: {why}")]
    DoesNotFit {
        chip: &'static str,
        why: String,
        span: Span,
    },
    /// The event budget ran out (a livelock guard, never wall-clock).
    #[error("more than {0} events: stopped")]
    EventLimit(u64),
}

impl TimingError {
    /// The error as diagnostics with spans.
    pub fn to_diagnostics(&self) -> Vec<Diagnostic> {
        match self {
            TimingError::Lower(d) => d.clone(),
            TimingError::Op {
                code,
                message,
                span,
                agent,
                time,
            } => vec![Diagnostic::error(*code, message.clone(), *span, "here")
                .with_note(format!("in {agent} at cycle {time:.0} of the timing model"))],
            TimingError::Deadlock { time, waiters } => {
                let (first_span, rest) = match waiters.first() {
                    Some(w) => (w.1, &waiters[..]),
                    None => (Span::DUMMY, &waiters[..]),
                };
                let mut d = Diagnostic::error(
                    Code::Deadlock,
                    format!("every partition is blocked at cycle {time:.0} of the timing model"),
                    first_span,
                    "blocked here",
                );
                for (who, _, on) in rest {
                    d = d.with_note(format!("{who} waits for {on}"));
                }
                vec![d]
            }
            TimingError::DoesNotFit { why, span, .. } => {
                vec![Diagnostic::error(
                    Code::Occupancy,
                    self.to_string(),
                    *span,
                    why.clone(),
                )]
            }
            TimingError::EventLimit(_) => {
                vec![Diagnostic::error(
                    Code::TimingLimit,
                    self.to_string(),
                    Span::DUMMY,
                    "",
                )]
            }
        }
    }
}

/// The default of [`TimeOptions::lookahead_cycles`].
pub const DEFAULT_LOOKAHEAD: f64 = 64.0;

/// How to time.
#[derive(Clone, Debug)]
pub struct TimeOptions {
    pub chip: Chip,
    pub trace: TraceMode,
    /// Stop after this many engine events.
    pub max_events: u64,
    /// Bins of the HBM bandwidth counter in the trace.
    pub hbm_bins: u32,
    /// How far (cycles) a partition may run ahead of the engine's event queue before it
    /// yields ([`engine`]): 0 is strict time order; a few dozen cycles changes results by well
    /// under a percent and makes full-size problems several times faster.
    pub lookahead_cycles: f64,
}

impl TimeOptions {
    pub fn new(chip: &Chip) -> TimeOptions {
        TimeOptions {
            chip: *chip,
            trace: TraceMode::Off,
            max_events: 2_000_000_000,
            hbm_bins: 200,
            lookahead_cycles: DEFAULT_LOOKAHEAD,
        }
    }
}

/// Busy fraction of each unit over the kernel's duration (of all SMs for per-SM units).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Utilisation {
    pub tensor: f64,
    /// The busier direction of the SMs' TMA ports.
    pub tma: f64,
    pub hbm: f64,
    pub l2_bandwidth: f64,
    pub smem: f64,
    pub alu: f64,
}

/// What `bwsim time` reports.
#[derive(Clone, Debug, Serialize)]
pub struct TimingReport {
    pub kernel: String,
    pub chip: &'static str,
    pub grid: [u32; 3],
    pub cycles: f64,
    pub seconds: f64,
    pub microseconds: f64,
    /// "matmul" when the kernel does MMAs, else "streaming".
    pub kind: &'static str,
    /// Tensor FLOPs done.
    pub flops: f64,
    /// Achieved TFLOP/s (matmul-like kernels).
    pub tflops: Option<f64>,
    /// Global bytes read and written by the kernel (TMA and generic accesses, as requested).
    pub global_bytes: f64,
    /// Achieved TB/s of those bytes (10^12 bytes per second; streaming kernels).
    pub tbps: Option<f64>,
    /// HBM traffic and its rate.
    pub hbm_bytes: f64,
    pub hbm_tbps: f64,
    /// Bytes of loads found in L2 over bytes loaded.
    pub l2_hit_rate: f64,
    pub utilisation: Utilisation,
    /// The unit that bounds the kernel, or "latency" when none is near saturation.
    pub critical: String,
    pub needs: Needs,
    /// Whether the model charged the spill `needs.spills` predicts (wgmma accumulators on a
    /// chip with `wgmma_spill_cycles`; other spills are flagged only).
    pub spill_charged: bool,
    pub occupancy: Occupancy,
    /// Engine work, for the curious.
    pub ctas: u64,
    pub mmas: u64,
    pub tma_loads: u64,
    pub events: u64,
    pub instructions: u64,
}

impl TimingReport {
    /// The human rendering `bwsim time` prints.
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let u = &self.utilisation;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} on {} (grid {}x{}x{}, {} CTA/SM, occupancy limited by {:?})",
            self.kernel,
            self.chip,
            self.grid[0],
            self.grid[1],
            self.grid[2],
            self.occupancy.ctas_per_sm,
            self.occupancy.limiter
        );
        let _ = writeln!(s, "  cycles        {:.0}", self.cycles);
        let _ = writeln!(s, "  time          {:.2} us", self.microseconds);
        if let Some(t) = self.tflops {
            let _ = writeln!(s, "  throughput    {t:.1} TFLOP/s");
        }
        if let Some(t) = self.tbps {
            let _ = writeln!(s, "  bandwidth     {t:.2} TB/s (global bytes read + written)");
        }
        let _ = writeln!(s, "  HBM           {:.2} TB/s", self.hbm_tbps);
        let _ = writeln!(s, "  L2 hit rate   {:.1} %", 100.0 * self.l2_hit_rate);
        let _ = writeln!(
            s,
            "  utilisation   tensor {:.0} %  TMA {:.0} %  HBM {:.0} %  L2 {:.0} %  smem {:.0} %  ALU {:.0} %",
            100.0 * u.tensor,
            100.0 * u.tma,
            100.0 * u.hbm,
            100.0 * u.l2_bandwidth,
            100.0 * u.smem,
            100.0 * u.alu
        );
        let _ = writeln!(s, "  critical      {}", self.critical);
        if self.needs.spills && self.spill_charged {
            let _ = writeln!(
                s,
                "  note          the register estimate exceeds 255 per thread: the accumulator spills to local memory and every wgmma waits for it (timed)"
            );
        } else if self.needs.spills {
            let _ = writeln!(
                s,
                "  note          the register estimate exceeds 255 per thread at its largest register tile: hardware would spill there; the model times only wgmma accumulator spills"
            );
        }
        s
    }
}

/// A timing run: the report and, when asked, the trace.
#[derive(Clone, Debug)]
pub struct Timing {
    pub report: TimingReport,
    pub trace: Option<TimingTrace>,
}

/// Units at or above this busy fraction are called the critical resource. A queue that bounds
/// a kernel runs at 90-100 % (HBM streams, L2-bound matmuls, warp-specialized MMAs); a kernel
/// that waits for its MMA round trips keeps its tensor pipe at 65-80 % busy, and that is latency,
/// not throughput, so the bar is well above that.
const SATURATED: f64 = 0.85;

fn critical(u: &Utilisation) -> String {
    let units = [
        ("tensor pipe", u.tensor),
        ("HBM bandwidth", u.hbm),
        ("L2 bandwidth", u.l2_bandwidth),
        ("TMA", u.tma),
        ("shared memory", u.smem),
        ("ALU", u.alu),
    ];
    let (name, v) = units
        .iter()
        .copied()
        .fold(("", -1.0), |best, x| if x.1 > best.1 { x } else { best });
    if v >= SATURATED {
        format!("{name} ({:.0} % busy)", 100.0 * v)
    } else {
        format!(
            "latency: no unit {:.0} % busy or more (the busiest is {name} at {:.0} %); the critical path is TMA, MMA and barrier latency",
            100.0 * SATURATED,
            100.0 * v
        )
    }
}

/// Time a verified kernel for one launch.
pub fn time(checked: &Checked, plan: &LaunchPlan, opts: &TimeOptions) -> Result<Timing, TimingError> {
    let prog = lower::lower(checked, plan).map_err(TimingError::Lower)?;
    let chip = &opts.chip;
    let needs = occupancy::needs(checked, &prog);
    let occ = occupancy::occupancy(chip, &needs);
    if occ.ctas_per_sm == 0 {
        let why = match occ.limiter {
            Limiter::SharedMemory => format!(
                "{} B of shared memory (+{} reserved) against {} per CTA",
                needs.smem, chip.smem_reserved_per_cta, chip.smem_per_cta
            ),
            Limiter::TensorMemory => format!("{} TMEM columns against {}", needs.tmem_cols, chip.tmem_cols),
            Limiter::Threads => format!("{} threads against {}", needs.threads, chip.threads_per_sm),
            Limiter::Registers => format!("{} registers against {}", needs.regs, chip.regs_per_sm),
            Limiter::CtaSlots => "no CTA slot".to_string(),
        };
        return Err(TimingError::DoesNotFit {
            chip: chip.name,
            why,
            span: checked.kernel.name.span,
        });
    }
    // Clusters run along x, each CTA of one on a different SM of one GPC (engine module doc).
    let cs = plan.cluster[0].max(1);
    if plan.cluster[1] > 1 || plan.cluster[2] > 1 {
        return Err(TimingError::Op {
            code: Code::SimUnsupported,
            message: format!(
                "the timing model runs clusters along x (as the simulator does); this launch has cluster {:?}",
                plan.cluster
            ),
            span: checked.kernel.name.span,
            agent: "launch".into(),
            time: 0.0,
        });
    }
    let largest = chip.gpcs().iter().map(|g| g.len() as u32).max().unwrap_or(0);
    if cs > largest {
        return Err(TimingError::DoesNotFit {
            chip: chip.name,
            why: format!("a cluster of {cs} CTAs needs {cs} SMs of one GPC; the largest GPC has {largest}"),
            span: checked.kernel.name.span,
        });
    }
    let rec = match opts.trace {
        TraceMode::Off => None,
        m => Some(trace::Rec::new(m, chip.clock_mhz)),
    };
    // The HBM counter's bins: a first guess of the kernel's length is not known, so bin
    // finely and merge afterwards.
    let hbm_bin = rec.as_ref().map(|_| 256.0);
    let dtypes = plan.tensors.iter().map(|t| t.dtype).collect();
    let eng = engine::Engine::new(
        &prog,
        plan.grid,
        dtypes,
        chip,
        occ.ctas_per_sm,
        rec,
        hbm_bin,
        opts.max_events,
        opts.lookahead_cycles,
    )
    .with_spills(
        needs
            .spills
            .then(|| chip.l1_left(needs.smem, occ.ctas_per_sm) as u64),
    );
    let r = eng.run()?;
    // The grid's time plus the chip's fixed cost of a launch (chips.rs, `kernel_overhead_us`).
    let cycles = r.cycles.max(1.0) + chip.kernel_overhead_us * chip.clock_mhz;
    let seconds = cycles * chip.cycle_s();
    let sm_cycles = cycles * chip.sms as f64;
    let mem = &r.mem;
    // Queued write-back may still occupy HBM after the last CTA retires (the kernel does not
    // wait for it), so busy time can exceed the kernel's: a unit is at most fully busy.
    let util = Utilisation {
        tensor: (r.tensor_busy / sm_cycles).min(1.0),
        tma: (r.tma_in_busy.max(r.tma_out_busy) / sm_cycles).min(1.0),
        hbm: (mem.hbm.busy / cycles).min(1.0),
        l2_bandwidth: (mem.l2_port.busy / cycles).min(1.0),
        smem: (r.smem_busy / sm_cycles).min(1.0),
        alu: (r.alu_busy / sm_cycles).min(1.0),
    };
    let matmul = r.stats.flops > 0.0;
    let mut trace = r.rec;
    if let (Some(t), Some(tl)) = (&mut trace, &mem.timeline) {
        let mut tl = tl.clone();
        let want = opts.hbm_bins.max(1) as usize;
        let merge = tl.bytes.len().div_ceil(want).max(1);
        tl.bytes = tl.bytes.chunks(merge).map(|c| c.iter().sum()).collect();
        tl.bin_cycles *= merge as f64;
        t.hbm = Some(tl);
    }
    let report = TimingReport {
        kernel: checked.kernel.name.name.clone(),
        chip: chip.name,
        grid: plan.grid,
        cycles,
        seconds,
        microseconds: seconds * 1e6,
        kind: if matmul { "matmul" } else { "streaming" },
        flops: r.stats.flops,
        tflops: matmul.then(|| r.stats.flops / seconds / 1e12),
        global_bytes: r.stats.global_bytes,
        tbps: (!matmul).then(|| r.stats.global_bytes / seconds / 1e12),
        hbm_bytes: mem.stats.hbm_bytes,
        hbm_tbps: mem.stats.hbm_bytes / seconds / 1e12,
        l2_hit_rate: if mem.stats.load_bytes > 0.0 {
            mem.stats.hit_bytes / mem.stats.load_bytes
        } else {
            0.0
        },
        critical: critical(&util),
        utilisation: util,
        needs,
        spill_charged: r.stats.spilled_wgmmas > 0
            && (chip.wgmma_spill_cycles > 0.0 || chip.wgmma_spill_l1_miss_cycles > 0.0),
        occupancy: occ,
        ctas: r.stats.ctas,
        mmas: r.stats.mmas,
        tma_loads: r.stats.tma_loads,
        events: r.stats.events,
        instructions: r.stats.instructions,
    };
    Ok(Timing { report, trace })
}

/// The constant overrides `bwsim time` applies for `chip`: the user's, plus `NUM_SMS` set to the
/// chip's SM count when the kernel declares that constant and the user did not set it (the
/// tutorials size persistent grids with the device's SM count).
pub fn chip_overrides(kernel: &bwsim_isa::Kernel, chip: &Chip, user: &[Override]) -> Vec<Override> {
    let mut o = user.to_vec();
    let declares = kernel.consts.iter().any(|c| c.name.name == "NUM_SMS");
    if declares && !user.iter().any(|u| u.name == "NUM_SMS") {
        o.push(Override {
            name: "NUM_SMS".into(),
            value: chip.sms.to_string(),
        });
    }
    o
}

/// Parse, verify for the chip's target, resolve the `launch { }` section (no inputs are made)
/// and time `.tile` source.
pub fn time_source(src: &str, overrides: &[Override], opts: &TimeOptions) -> Result<Timing, Vec<Diagnostic>> {
    let kernel = crate::session::parse(src)?;
    let overrides = chip_overrides(&kernel, &opts.chip, overrides);
    let s = Session::new(&kernel, Some(opts.chip.target), &overrides, Verify::Strict)?;
    time(&s.checked, &s.plan, opts).map_err(|e| e.to_diagnostics())
}

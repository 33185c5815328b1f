//! The machine's tensor core: `tcgen05` instructions on a CTA's tensor memory and tensor pipe,
//! as the tile machine runs `tmem.*`, `tcgen05.mma` and `tcgen05.commit` (docs/semantics.md,
//! "The PTX front end").
//!
//! - Tensor memory is 128 lanes x 512 columns of 32-bit cells; `tcgen05.alloc` hands a warp
//!   the lowest free run of `ncols` columns aligned to `ncols` (a power of two from 32 to 512)
//!   and writes its address (lane 0, first column: `lane << 16 | column`) to shared memory (a
//!   slot whose write and reads the checker does not record, until something else is written
//!   there).
//! - `tcgen05.mma` (`cta_group::1`, M = 64 or 128, B in shared memory, A in shared or tensor
//!   memory) is an asynchronous operation issued by the thread: its matrix descriptors and
//!   instruction descriptor are decoded at the issue ([`Desc`], [`InstrDesc`]); it runs on the
//!   CTA's tensor pipe in issue order, where the checker sees its reads of A and B (async
//!   proxy, or tensor memory for an A there) and of the accumulator and its write of the
//!   accumulator (tensor memory); the arithmetic is the simulator's
//!   ([`bwsim_sim::mma::mma_bits`]). A block-scaled MMA also reads its scale factors from
//!   tensor memory, every lane quarter's copy ([`bwsim_sim::mma::mma_bits_scaled`]).
//! - `tcgen05.cp` is a tensor-pipe operation too: it reads its rows of shared memory (async
//!   proxy) and writes them into tensor memory.
//! - `tcgen05.commit` is an arrival on its mbarrier by the tensor pipe once the pipe's earlier
//!   operations are done (the pipe runs in order, so "the thread's earlier operations" of the
//!   PTX ISA are among them).
//! - `tcgen05.ld` / `tcgen05.st` move the cells their shape gives each thread's registers
//!   ([`TmemShape::cell`]) in the warp's lane quarter (warp id mod 4, whatever quarter the
//!   address's lane field names), when issued: the checker sees a generic tensor-memory
//!   access by the warp; `tcgen05.wait::ld/st` have nothing left to wait for.
//! - CTA pairs (`.cta_group::2`: the pair's allocation, MMAs of M = 256 over both CTAs'
//!   operands and accumulators on the leader's pipe) are [`pair`]'s.

use super::{Flight, Machine, Work};
use crate::program::{AgentOp, CpShape, MmaA, MmaKind, TmemRef, TmemShape, Val};
use crate::Error;
use bwsim_isa::types::DType;
use bwsim_sim::check::hazards::Actor;
use bwsim_sim::check::hb::{Hazard, Kind};
use bwsim_sim::sched::AsyncKind;
use std::collections::{BTreeMap, BTreeSet};

mod pair;

/// Lanes of tensor memory.
pub const LANES: u32 = 128;
/// Columns of tensor memory (32 bits each).
pub const COLUMNS: u32 = 512;

/// A CTA's tensor memory: its cells and allocations.
pub(super) struct Tmem {
    cells: Vec<u32>,
    /// Allocated column runs: first column, count.
    allocs: BTreeMap<u32, u32>,
    relinquished: bool,
    /// `.cta_group::2` allocations (first column, count) the pair peer has not made yet
    /// ([`pair`]).
    pair_open: Vec<(u32, u32)>,
    /// Shared granules holding an allocation's address, until something else is written there.
    pub(super) slots: BTreeSet<u32>,
}

impl Default for Tmem {
    fn default() -> Tmem {
        Tmem {
            cells: vec![0; (LANES * COLUMNS) as usize],
            allocs: BTreeMap::new(),
            relinquished: false,
            pair_open: Vec::new(),
            slots: BTreeSet::new(),
        }
    }
}

impl Tmem {
    fn cell(lane: u32, col: u32) -> usize {
        (lane * COLUMNS + col) as usize
    }

    /// Whether columns `col..col + n` lie in one allocation.
    fn allocated(&self, col: u32, n: u32) -> bool {
        self.allocs
            .range(..=col)
            .next_back()
            .is_some_and(|(&c, &k)| col + n <= c + k)
    }

    /// The lowest free run of `n` columns aligned to `n`.
    fn free_run(&self, n: u32) -> Option<u32> {
        (0..COLUMNS / n)
            .map(|i| i * n)
            .find(|&c| self.allocs.iter().all(|(&a, &k)| c + n <= a || a + k <= c))
    }
}

/// Why a matrix descriptor's operand cannot be read ([`Desc::addresses`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperandError {
    /// An MN-major operand without swizzling (not modelled).
    Unswizzled,
    /// An element at this shared byte lies past the CTA's shared memory.
    Past(u32),
}

/// A 64-bit shared-memory matrix descriptor (PTX ISA, "Matrix Descriptors", the `tcgen05`
/// format): start address, leading and stride byte offsets (each stored >> 4), the base
/// offset and the swizzling mode (bits 61-63: 0 none, 2 128-byte, 4 64-byte, 6 32-byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Desc {
    pub start: u32,
    pub lbo: u32,
    pub sbo: u32,
    pub base_offset: u32,
    /// Bytes of one swizzle span (128, 64, 32), or 0 without swizzling.
    pub swizzle: u32,
}

impl Desc {
    /// Decodes `d`; refuses the forms not modelled (128-byte swizzling with 32-byte atoms, a
    /// non-zero base offset, the absolute-LBO mode).
    pub fn decode(d: u64) -> Result<Desc, String> {
        let f = |lo: u32, bits: u32| ((d >> lo) & ((1 << bits) - 1)) as u32;
        let swizzle = match f(61, 3) {
            0 => 0,
            2 => 128,
            4 => 64,
            6 => 32,
            m => {
                return Err(format!(
                    "swizzling mode {m} of a matrix descriptor is not modelled"
                ))
            }
        };
        let desc = Desc {
            start: f(0, 14) << 4,
            lbo: f(16, 14) << 4,
            sbo: f(32, 14) << 4,
            base_offset: f(49, 3),
            swizzle,
        };
        if desc.base_offset != 0 || f(52, 1) != 0 {
            return Err("matrix descriptors with a base offset or absolute LBO mode are not modelled".into());
        }
        Ok(desc)
    }

    /// The shared bytes of rows `rows` (along M or N) of an operand of `k` elements of `eb`
    /// bytes, K-major unless `mn_major`, row by row, each checked to lie in the first `smem`
    /// bytes.
    pub fn addresses(
        &self,
        rows: std::ops::Range<u32>,
        k: u32,
        eb: u32,
        mn_major: bool,
        smem: u32,
    ) -> Result<Vec<u32>, OperandError> {
        let mut out = Vec::with_capacity(rows.len() * k as usize);
        for r in rows {
            for j in 0..k {
                let x = self
                    .address(r, j, eb, !mn_major)
                    .ok_or(OperandError::Unswizzled)?;
                if x + eb > smem {
                    return Err(OperandError::Past(x));
                }
                out.push(x);
            }
        }
        Ok(out)
    }

    /// The shared byte of element `(mn, k)` of an operand of `eb`-byte elements, K-major
    /// (`k_major`) or MN-major, in the canonical layouts the descriptor names: swizzled, 8-row
    /// atoms of one span each, SBO between atoms along M/N (K-major) or K (MN-major), LBO
    /// between spans along M/N (MN-major); unswizzled (K-major only), 8 x 16-byte core
    /// matrices, SBO between them along M/N and LBO along K. The swizzle XORs address bits
    /// 4 and up with bits 7 and up, by absolute address.
    pub fn address(&self, mn: u32, k: u32, eb: u32, k_major: bool) -> Option<u32> {
        let w = self.swizzle;
        let pre = if w == 0 {
            if !k_major {
                return None;
            }
            let kb = k * eb;
            self.start + (mn / 8) * self.sbo + (kb / 16) * self.lbo + (mn % 8) * 16 + kb % 16
        } else if k_major {
            self.start + (mn / 8) * self.sbo + (mn % 8) * w + k * eb
        } else {
            let span = w / eb;
            self.start + (mn / span) * self.lbo + (k / 8) * self.sbo + (k % 8) * w + (mn % span) * eb
        };
        let mask = (w / 16).saturating_sub(1);
        Some(pre ^ (((pre >> 7) & mask) << 4))
    }
}

/// A 32-bit instruction descriptor (PTX ISA, "Instruction descriptor"): D's type (bits 4-5,
/// dense kinds), A's and B's (7-9, 10-12), negation (13, 14), majorness (15, 16: 1 for
/// MN-major), N >> 3 (17-22) and M >> 4 (24-28); the block-scaled kinds put B's scale-factor
/// id in bits 4-5 (D is f32), the scale type in bit 23 (1 ue8m0, 0 ue4m3), A's scale-factor
/// id in bits 29-30 and, for fp4, the K of the instruction in bit 31 (0: K = 64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstrDesc {
    pub d: DType,
    pub a: DType,
    pub b: DType,
    pub negate: [bool; 2],
    pub mn_major: [bool; 2],
    pub n: u32,
    pub m: u32,
    /// Block scaling: the scale factors' type and A's and B's scale-factor ids.
    pub scale: Option<(DType, [u32; 2])>,
}

impl InstrDesc {
    /// Decodes `i` for an MMA of `kind`; refuses sparsity, types the kind does not take and
    /// the forms not modelled (f16 accumulators, M other than 64 and 128, A and B of different
    /// types, fp4 in the 8-bit containers of `kind::mxf8f6f4`).
    pub fn decode(i: u32, kind: MmaKind) -> Result<InstrDesc, String> {
        let desc = InstrDesc::fields(i, kind)?;
        // PTX ISA, "tcgen05.mma" shapes of `cta_group::1`: M = 64 with N a multiple of 8,
        // M = 128 with N a multiple of 16, N up to 256.
        let step = if desc.m == 64 { 8 } else { 16 };
        if !matches!(desc.m, 64 | 128) || desc.n == 0 || !desc.n.is_multiple_of(step) || desc.n > 256 {
            return Err(format!(
                "the shape M = {}, N = {} (`cta_group::1` runs M = 64 with N a multiple of 8, \
                 M = 128 with N a multiple of 16, N up to 256)",
                desc.m, desc.n
            ));
        }
        Ok(desc)
    }

    /// The fields of `i` for an MMA of `kind`, whatever its shape ([`InstrDesc::decode`]).
    fn fields(i: u32, kind: MmaKind) -> Result<InstrDesc, String> {
        let f = |lo: u32, bits: u32| (i >> lo) & ((1 << bits) - 1);
        if f(2, 1) != 0 {
            return Err("sparse MMAs are not modelled".into());
        }
        let scaled = matches!(kind, MmaKind::Mxf8f6f4 | MmaKind::Mxf4 | MmaKind::Mxf4nvf4);
        let d = match (scaled, f(4, 2)) {
            (true, _) | (false, 1) => DType::F32,
            (false, 0) => return Err("f16 accumulators are not modelled".into()),
            (false, x) => return Err(format!("accumulator type {x} is not one of kind {kind:?}")),
        };
        let ty = |x: u32| match (kind, x) {
            (MmaKind::F16, 0) => Ok(DType::F16),
            (MmaKind::F16, 1) => Ok(DType::BF16),
            (MmaKind::Tf32, 2) => Ok(DType::TF32),
            (MmaKind::F8f6f4 | MmaKind::Mxf8f6f4, 0) => Ok(DType::F8E4M3),
            (MmaKind::F8f6f4 | MmaKind::Mxf8f6f4, 1) => Ok(DType::F8E5M2),
            (MmaKind::Mxf4 | MmaKind::Mxf4nvf4, 1) => Ok(DType::F4E2M1),
            _ => Err(format!("operand type {x} of kind {kind:?} is not modelled")),
        };
        let scale = if scaled {
            let sty = match (kind, f(23, 1)) {
                (_, 1) => DType::UE8M0,
                (MmaKind::Mxf4nvf4, 0) => DType::UE4M3,
                _ => return Err(format!("ue4m3 scale factors are not a type of kind {kind:?}")),
            };
            if f(31, 1) != 0 {
                return Err("fp4 MMAs of K = 96 are not modelled".into());
            }
            Some((sty, [f(29, 2), f(4, 2)]))
        } else {
            None
        };
        let desc = InstrDesc {
            d,
            a: ty(f(7, 3))?,
            b: ty(f(10, 3))?,
            negate: [f(13, 1) != 0, f(14, 1) != 0],
            mn_major: [f(15, 1) != 0, f(16, 1) != 0],
            n: f(17, 6) << 3,
            m: f(24, 5) << 4,
            scale,
        };
        if desc.a != desc.b {
            return Err("A and B of different types are not modelled".into());
        }
        Ok(desc)
    }

    /// K elements of one instruction: 32 bytes of A (PTX ISA, "tcgen05.mma" shapes), so 64
    /// packed fp4 elements.
    pub fn k(&self) -> u32 {
        bwsim_sim::mma_numerics::instruction_k(self.a, self.scale.is_some()) as u32
    }

    /// K elements of one scale factor: 16 for ue4m3 factors, else 32.
    pub fn vec(&self) -> u32 {
        match self.scale {
            Some((DType::UE4M3, _)) => 16,
            _ => 32,
        }
    }
}

/// Where an MMA reads its A from.
pub(super) enum AIn {
    /// The shared byte and bit offset (4 or 0 for a packed fp4 element, else 0) of A's
    /// `m x k` elements, row-major.
    Smem(Vec<(u32, u32)>),
    /// Tensor memory: row `i` in the lane [`row_lane`] gives from `lane`, its elements
    /// packed along the columns from `col` (16-bit elements two to a column, low half first).
    Tmem { lane: u32, col: u32 },
}

/// The tensor-memory lane of row `i` of an MMA operand or accumulator of `m` rows whose
/// address names lane `lane` (PTX ISA, "Data path layout organization" of `cta_group::1`):
/// M = 128 takes lanes 0 to 127 in order; M = 64 takes 16 lanes of each warp's quarter,
/// from `lane` (0 or 16) on.
pub(super) fn row_lane(m: u32, lane: u32, i: u32) -> u32 {
    if m == 64 {
        lane + (i / 16) * 32 + i % 16
    } else {
        lane + i
    }
}

/// Work for the tensor pipe.
pub(super) enum PipeWork {
    /// An MMA: its shape and types, its A, the shared bytes (and bit offsets) of B (`n x k`),
    /// the accumulator's first lane and column, whether it accumulates, and the first
    /// columns of A's and B's scale factors of a block-scaled one.
    Mma {
        desc: InstrDesc,
        k: u32,
        a: AIn,
        b: Vec<(u32, u32)>,
        lane: u32,
        col: u32,
        use_acc: bool,
        scales: Option<[u32; 2]>,
    },
    /// A commit's arrival on the mbarrier at shared byte `bar`.
    ///
    /// With a multicast mask, on the barrier at offset `bar` of each CTA of the cluster it
    /// names ([`super::cluster`]).
    Commit { bar: u32, mask: Option<Vec<usize>> },
    /// A pair MMA (`.cta_group::2`) of the pair leader's pipe ([`pair`]).
    Pair(pair::PairMma),
    /// A `tcgen05.cp`: each 32-bit word at shared byte `src` lands in tensor-memory cell
    /// `(lane, column)`.
    Cp { words: Vec<(u32, (u32, u32))> },
}

impl Machine<'_, '_> {
    /// Runs the `tcgen05` instruction `op` at `pc` for the lanes `group` of warp `w`
    /// (`fence.mbarrier_init` too).
    pub(super) fn tcgen05(
        &mut self,
        w: usize,
        pc: usize,
        op: &AgentOp,
        group: &[usize],
    ) -> Result<(), Error> {
        match op {
            AgentOp::FenceMbarInit => {
                if let Some(hb) = &mut self.hb {
                    hb.init_fence(w);
                }
            }
            AgentOp::TmemAlloc { dst, cols, pair } => {
                // One allocation for the warp (the instruction is `.sync.aligned`).
                let Some(&t) = group.first() else { return Ok(()) };
                let n = self.value(t, *cols, pc)? as u32;
                if !(32..=COLUMNS).contains(&n) || !n.is_power_of_two() {
                    return Err(self.rt(
                        pc,
                        format!("`tcgen05.alloc` of {n} columns (a power of two from 32 to 512)"),
                    ));
                }
                if self.tmem.relinquished {
                    return Err(self.rt(
                        pc,
                        "`tcgen05.alloc` after `tcgen05.relinquish_alloc_permit`".into(),
                    ));
                }
                let run = if *pair {
                    self.pair_alloc(n, pc)?
                } else {
                    self.tmem.free_run(n)
                };
                let Some(col) = run else {
                    return Err(self.rt(pc, format!("`tcgen05.alloc` of {n} columns: tensor memory has no free run that wide (the hardware would wait for a dealloc forever here)")));
                };
                self.tmem.allocs.insert(col, n);
                let a = self.shared_addr(t, dst, pc)? as usize;
                if a + 4 > self.cta.shared.len() {
                    return Err(self.rt(
                        pc,
                        format!(
                            "`tcgen05.alloc` writes shared bytes {a}..{}, past the CTA's",
                            a + 4
                        ),
                    ));
                }
                // The address's write, and the warps' reads of it, are not accesses the checker
                // records: the tile model has no such accesses, and Triton reuses the slot for
                // TMA destinations with no proxy fence after the warps have read it.
                self.cta.shared[a..a + 4].copy_from_slice(&col.to_le_bytes());
                self.tmem
                    .slots
                    .insert(a as u32 / bwsim_sim::check::hazards::SMEM_GRANULE);
                if let Some(hb) = &mut self.hb {
                    hb.tmem_alloc(w);
                }
            }
            AgentOp::TmemDealloc { taddr, cols } => {
                let Some(&t) = group.first() else { return Ok(()) };
                let (lane, col) = self.taddr(t, *taddr, 0, pc)?;
                let n = self.value(t, *cols, pc)? as u32;
                if lane != 0 || self.tmem.allocs.get(&col) != Some(&n) {
                    return Err(self.rt(
                        pc,
                        format!("`tcgen05.dealloc` of {n} columns at lane {lane}, column {col}, which is not an allocation"),
                    ));
                }
                self.tmem.allocs.remove(&col);
                if let Some(hb) = &mut self.hb {
                    hb.tmem_dealloc(w, col, n);
                }
            }
            AgentOp::TmemRelinquish => self.tmem.relinquished = true,
            AgentOp::Mma {
                pair,
                d,
                a,
                b,
                idesc,
                scales,
                disable,
                acc,
                kind,
            } => {
                for &t in group {
                    let operands = MmaOperands {
                        d,
                        a: *a,
                        b: *b,
                        idesc: *idesc,
                        acc: *acc,
                        scales: scales.as_ref(),
                        disable,
                    };
                    let work = if *pair {
                        self.pair_mma_work(w, t, pc, *kind, &operands)?
                    } else {
                        self.mma_work(t, pc, (*kind, false), &operands)?
                    };
                    self.pipe_issue(w, pc, work, AsyncKind::Mma);
                }
            }
            AgentOp::TmemCp { shape, at, src } => {
                for &t in group {
                    let work = self.cp_work(t, pc, *shape, at, *src)?;
                    self.pipe_issue(w, pc, work, AsyncKind::Cp);
                }
            }
            AgentOp::Commit { bar, multicast, pair } => {
                for &t in group {
                    let (bar, mask) = match multicast {
                        None if *pair => self.pair_commit_target(t, bar, pc)?,
                        None => (self.shared_addr(t, bar, pc)?, None),
                        Some(m) => self.multicast_commit_target(t, bar, *m, pc)?,
                    };
                    self.pipe_issue(w, pc, PipeWork::Commit { bar, mask }, AsyncKind::Commit);
                }
            }
            AgentOp::TmemLd { shape, regs, at } => {
                let cells = self.lane_cells(w, pc, group, at, *shape, regs.len())?;
                for (&t, cs) in group.iter().zip(&cells) {
                    for (&r, &(lane, col)) in regs.iter().zip(cs) {
                        let v = self.tmem.cells[Tmem::cell(lane, col)];
                        self.cta.write(&mut self.th[t], r, v as u64);
                    }
                }
                self.check_tmem(w, pc, Kind::Read, &cells);
            }
            AgentOp::TmemSt { shape, vals, at } => {
                let cells = self.lane_cells(w, pc, group, at, *shape, vals.len())?;
                for (&t, cs) in group.iter().zip(&cells) {
                    for (&v, &(lane, col)) in vals.iter().zip(cs) {
                        let v = self.value(t, v, pc)? as u32;
                        self.tmem.cells[Tmem::cell(lane, col)] = v;
                    }
                }
                self.check_tmem(w, pc, Kind::Write, &cells);
            }
            _ => return Err(self.rt(pc, "internal: not a tensor-core instruction".into())),
        }
        Ok(())
    }

    /// The error of an operand (`what`, in words) of the MMA `opcode` at `pc` that cannot be
    /// read: a refusal of the unmodelled form, or a run-time error for bytes past shared memory.
    pub(super) fn operand_error(&self, e: OperandError, pc: usize, opcode: &str, what: &str) -> Error {
        let i = &self.cta.p.ins[pc];
        match e {
            OperandError::Unswizzled => Error::Unsupported {
                opcode: opcode.into(),
                line: i.ptx_line,
                span: i.span,
                why: "MN-major operands without swizzling".into(),
            },
            OperandError::Past(x) => self.rt(
                pc,
                format!(
                    "{what} reaches shared byte {x}, past the CTA's {}",
                    self.cta.shared.len()
                ),
            ),
        }
    }

    /// A tensor-memory address: lane (bits 16 and up) and column (bits 0-15).
    fn taddr(&self, t: usize, v: Val, offset: i64, pc: usize) -> Result<(u32, u32), Error> {
        let a = (self.value(t, v, pc)? as i64).wrapping_add(offset) as u32;
        Ok((a >> 16, a & 0xffff))
    }

    /// The cells each lane of `group` of warp `w` moves with a load or store of `shape` and
    /// `nregs` registers at `at`, register by register ([`TmemShape::cell`]). The warp
    /// reaches only its quarter of the lanes (`32 * (w % 4)` and the 31 after it), and the
    /// address's lane field selects a lane inside that quarter: its quarter bits (5 and 6)
    /// are not read, so that lane 0 and lane `32 * (w % 4)` name the same first lane
    /// (docs/semantics.md, "Tensor memory"). Every lane must stay in the quarter, and the
    /// columns in an allocation.
    fn lane_cells(
        &self,
        w: usize,
        pc: usize,
        group: &[usize],
        at: &TmemRef,
        shape: TmemShape,
        nregs: usize,
    ) -> Result<Vec<Vec<(u32, u32)>>, Error> {
        let quarter = (w as u32 % 4) * 32;
        let per = shape.regs_per_rep() as u32;
        group
            .iter()
            .map(|&t| {
                let (field, col) = self.taddr(t, at.taddr, at.offset, pc)?;
                let first = quarter + field % 32;
                let l = t as u32 % 32;
                (0..nregs as u32)
                    .map(|r| {
                        let (dl, dc) = shape.cell(l, r % per);
                        let (lane, c) = (first + dl, col + dc + (r / per) * shape.cols_per_rep());
                        if lane >= quarter + 32 {
                            return Err(self.rt(
                                pc,
                                format!(
                                    "warp {w}'s tensor-memory access at lane {} of its quarter reaches \
                                     lane {lane}, outside its lanes {quarter}..{}",
                                    field % 32,
                                    quarter + 32
                                ),
                            ));
                        }
                        if !self.tmem.allocated(c, 1) {
                            return Err(self.rt(pc, format!("tensor-memory column {c} is not allocated")));
                        }
                        Ok((lane, c))
                    })
                    .collect()
            })
            .collect()
    }

    /// The checker's view of a load or store of `cells` (each lane's) by warp `w`.
    fn check_tmem(&mut self, w: usize, pc: usize, kind: Kind, cells: &[Vec<(u32, u32)>]) {
        let Some(hb) = &mut self.hb else { return };
        let all: Vec<(u32, u32)> = cells.iter().flatten().copied().collect();
        if let Some(h) = hb.generic_tmem(w, pc as u32, kind, &all) {
            self.report(&h);
        }
    }

    /// Decodes thread `t`'s `tcgen05.mma` at `pc`; `pair`: a `.cta_group::2` one, whose
    /// operands in this CTA are A's first `M / 2` rows and B's first `N / 2` ([`pair`]).
    fn mma_work(
        &self,
        t: usize,
        pc: usize,
        (kind, pair): (MmaKind, bool),
        o: &MmaOperands<'_>,
    ) -> Result<PipeWork, Error> {
        let refuse = |why: String| {
            let i = &self.cta.p.ins[pc];
            Error::Unsupported {
                opcode: "tcgen05.mma".into(),
                line: i.ptx_line,
                span: i.span,
                why,
            }
        };
        for &v in o.disable {
            if self.value(t, v, pc)? as u32 != 0 {
                return Err(refuse("disable-output-lane masks other than 0".into()));
            }
        }
        let idesc = self.value(t, o.idesc, pc)? as u32;
        let desc = if pair {
            InstrDesc::decode_pair(idesc, kind)
        } else {
            InstrDesc::decode(idesc, kind)
        }
        .map_err(refuse)?;
        let rows = if pair {
            [desc.m / 2, desc.n / 2]
        } else {
            [desc.m, desc.n]
        };
        let k = desc.k();
        // The lanes of an operand of `m` rows at lane `lane`: lane 0 for M = 128, 0 or 16
        // for M = 64.
        let lanes_ok = |lane: u32| lane == 0 || desc.m == 64 && lane == 16;
        let (lane, col) = self.taddr(t, o.d.taddr, o.d.offset, pc)?;
        if !lanes_ok(lane) || !self.tmem.allocated(col, desc.n) {
            return Err(self.rt(
                pc,
                format!(
                    "the accumulator (lane {lane}, columns {col}..{}) is not allocated tensor memory \
                     at a lane an M = {} MMA starts at",
                    col + desc.n,
                    desc.m
                ),
            ));
        }
        let scales = match o.scales {
            None => None,
            Some(_) if desc.m != 128 => {
                return Err(refuse("block-scaled MMAs of M = 64 are not modelled".into()))
            }
            Some(refs) => {
                let mut cols = [0; 2];
                for (x, (r, rows)) in refs.iter().zip([desc.m, desc.n]).enumerate() {
                    let (slane, scol) = self.taddr(t, r.taddr, r.offset, pc)?;
                    let n = rows.div_ceil(32);
                    if slane != 0 || !self.tmem.allocated(scol, n) {
                        return Err(self.rt(
                            pc,
                            format!(
                                "the scale factors of {} (lane {slane}, columns {scol}..{}) are not \
                                 allocated tensor memory from lane 0",
                                ["A", "B"][x],
                                scol + n
                            ),
                        ));
                    }
                    cols[x] = scol;
                }
                Some(cols)
            }
        };
        let (a, b, acc) = (o.a, o.b, o.acc);
        // Packed fp4 elements: two to a byte along K, the lower k in the low half.
        let bits = desc.a.bits();
        let eb = bits.div_ceil(8);
        let smem = self.cta.shared.len() as u32;
        let operand = |v: Val, rows: u32, mn_major: bool| -> Result<Vec<(u32, u32)>, Error> {
            let dsc = Desc::decode(self.value(t, v, pc)?).map_err(refuse)?;
            // fp4: each byte holds two elements along K, the lower k in the low half.
            let per = if bits < 8 { 2 } else { 1 };
            if per == 2 && (mn_major || k % 2 != 0) {
                return Err(refuse(
                    "fp4 operands MN-major or of an odd K are not modelled".into(),
                ));
            }
            let xs = dsc
                .addresses(0..rows, k / per, eb, mn_major, smem)
                .map_err(|e| self.operand_error(e, pc, "tcgen05.mma", "an MMA operand"))?;
            Ok(xs
                .into_iter()
                .flat_map(|x| (0..per).map(move |h| (x, h * 4)))
                .collect())
        };
        let a = match a {
            MmaA::Desc(v) => AIn::Smem(operand(v, rows[0], desc.mn_major[0])?),
            MmaA::Tmem(at) => {
                let (alane, acol) = self.taddr(t, at.taddr, at.offset, pc)?;
                let cols = (k * desc.a.bits()).div_ceil(32);
                if desc.mn_major[0] {
                    return Err(refuse(
                        "an A in tensor memory is K-major (its majorness bit is 1)".into(),
                    ));
                }
                if !lanes_ok(alane) || !self.tmem.allocated(acol, cols) {
                    return Err(self.rt(
                        pc,
                        format!(
                            "the A operand (lane {alane}, columns {acol}..{}) is not allocated tensor \
                             memory at a lane an M = {} MMA starts at",
                            acol + cols,
                            desc.m
                        ),
                    ));
                }
                AIn::Tmem {
                    lane: alane,
                    col: acol,
                }
            }
        };
        Ok(PipeWork::Mma {
            desc,
            k,
            a,
            b: operand(b, rows[1], desc.mn_major[1])?,
            lane,
            col,
            use_acc: self.value(t, acc, pc)? & 1 != 0,
            scales,
        })
    }

    /// Warp `w` issues `work` at `pc` onto the tensor pipe, which runs it after the work
    /// issued before it.
    fn pipe_issue(&mut self, w: usize, pc: usize, work: PipeWork, kind: AsyncKind) {
        let op = self.hb.as_mut().map_or(0, |hb| hb.issue(w, pc as u32));
        let due = (self.now + self.sched.latency(kind)).max(self.pipe_due + 1);
        self.pipe_due = due;
        let tie = self.sched.tiebreak();
        self.flights.push(Flight {
            due,
            tie,
            cta: self.rank,
            work: Work::Pipe { op, pc, work },
        });
    }

    /// The tensor pipe runs `work` (issued at `pc`, the checker's async op `op`).
    pub(super) fn land_pipe(&mut self, op: u32, pc: usize, work: PipeWork) -> Result<(), Error> {
        if let Some(hb) = &mut self.hb {
            hb.pipe_exec(op);
        }
        match work {
            PipeWork::Mma {
                desc,
                k,
                a,
                b,
                lane,
                col,
                use_acc,
                scales,
            } => {
                let (m, n) = (desc.m, desc.n);
                let cells: Vec<(u32, u32)> = (0..m)
                    .flat_map(|i| (0..n).map(move |j| (row_lane(m, lane, i), col + j)))
                    .collect();
                let bits = desc.a.bits();
                // A in tensor memory: each element's cell and bit offset, row-major.
                let a_cells: Vec<(u32, u32, u32)> = match &a {
                    AIn::Smem(_) => Vec::new(),
                    AIn::Tmem { lane, col } => (0..m)
                        .flat_map(|i| {
                            (0..k).map(move |j| (row_lane(m, *lane, i), col + j * bits / 32, j * bits % 32))
                        })
                        .collect(),
                };
                // A block-scaled MMA reads every copy of its factors (one per lane quarter).
                let factor_cells: Vec<(u32, u32)> = scales
                    .iter()
                    .flat_map(|cols| cols.iter().zip([m, n]))
                    .flat_map(|(&c, rows)| {
                        (0..4).flat_map(move |q| (0..rows).map(move |r| (32 * q + r % 32, c + r / 32)))
                    })
                    .collect();
                if let Some(hb) = &mut self.hb {
                    let mut found: Vec<Hazard> = Vec::new();
                    match &a {
                        AIn::Smem(a) => found.extend(hb.pipe_smem(op, Kind::Read, a, bits)),
                        AIn::Tmem { .. } => {
                            let mut read: Vec<(u32, u32)> = a_cells.iter().map(|&(l, c, _)| (l, c)).collect();
                            read.dedup();
                            found.extend(hb.pipe_tmem(op, Kind::Read, &read));
                        }
                    }
                    found.extend(hb.pipe_smem(op, Kind::Read, &b, bits));
                    if !factor_cells.is_empty() {
                        found.extend(hb.pipe_tmem(op, Kind::Read, &factor_cells));
                    }
                    if use_acc {
                        found.extend(hb.pipe_tmem(op, Kind::Read, &cells));
                    }
                    found.extend(hb.pipe_tmem(op, Kind::Write, &cells));
                    for h in found {
                        self.report(&h);
                    }
                }
                let av = match &a {
                    AIn::Smem(a) => self.smem_elems(a, bits),
                    AIn::Tmem { .. } => {
                        let mask = if bits >= 32 { u32::MAX } else { (1u32 << bits) - 1 };
                        a_cells
                            .iter()
                            .map(|&(l, c, sh)| ((self.tmem.cells[Tmem::cell(l, c)] >> sh) & mask) as u64)
                            .collect()
                    }
                };
                let bv = self.smem_elems(&b, bits);
                let olds: Vec<u64> = cells
                    .iter()
                    .map(|&(l, c)| self.tmem.cells[Tmem::cell(l, c)] as u64)
                    .collect();
                let shape = [m as usize, n as usize, k as usize];
                let out = match (scales, desc.scale) {
                    (Some(cols), Some((ty, ids))) => {
                        let f = self.factors(&desc, lane, cols, ty, ids, pc)?;
                        let s = bwsim_sim::mma::BitsScales {
                            vec: desc.vec() as usize,
                            a: &f.a,
                            b: &f.b,
                            row_quarter: &f.row_quarter,
                        };
                        bwsim_sim::mma::mma_bits_scaled(
                            &av,
                            &bv,
                            shape,
                            [desc.a, desc.b],
                            &olds,
                            use_acc,
                            desc.negate,
                            &s,
                            &self.arith,
                        )
                    }
                    _ => bwsim_sim::mma::mma_bits(
                        &av,
                        &bv,
                        shape,
                        desc.a,
                        desc.d,
                        &olds,
                        use_acc,
                        desc.negate,
                        &self.arith,
                    ),
                };
                self.store_cells(&cells, &out);
            }
            PipeWork::Pair(p) => self.land_pair_mma(op, p),
            PipeWork::Cp { words } => {
                if let Some(hb) = &mut self.hb {
                    let src: Vec<(u32, u32)> = words.iter().map(|&(x, _)| (x, 0)).collect();
                    let dst: Vec<(u32, u32)> = words.iter().map(|&(_, c)| c).collect();
                    let mut found: Vec<Hazard> = Vec::new();
                    found.extend(hb.pipe_smem(op, Kind::Read, &src, 32));
                    found.extend(hb.pipe_tmem(op, Kind::Write, &dst));
                    for h in found {
                        self.report(&h);
                    }
                }
                for (x, (l, c)) in words {
                    let x = x as usize;
                    let b = &self.cta.shared[x..x + 4];
                    self.tmem.cells[Tmem::cell(l, c)] = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
            }
            PipeWork::Commit {
                bar,
                mask: Some(ranks),
            } => self.commit_multicast(pc, bar, &ranks)?,
            PipeWork::Commit { bar, mask: None } => self.unit_delivers((bar, pc), Actor::Pipe, None)?,
        }
        Ok(())
    }
}

impl Machine<'_, '_> {
    /// The elements of `bits` bits at the shared bytes and bit offsets `v`.
    fn smem_elems(&self, v: &[(u32, u32)], bits: u32) -> Vec<u64> {
        let eb = bits.div_ceil(8) as usize;
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        v.iter()
            .map(|&(x, shift)| {
                let x = x as usize;
                let mut w = [0u8; 8];
                w[..eb].copy_from_slice(&self.cta.shared[x..x + eb]);
                (u64::from_le_bytes(w) >> shift) & mask
            })
            .collect()
    }

    /// Decodes thread `t`'s `tcgen05.cp` of `shape` at `pc` into tensor memory at `at` from
    /// the shared matrix descriptor `src`: row `r` of the source (its bytes as the K-major
    /// elements of a one-byte operand, [`Desc::address`]) lands in the lanes the shape gives
    /// it, from `at`'s column on, four bytes to a column.
    fn cp_work(
        &self,
        t: usize,
        pc: usize,
        shape: CpShape,
        at: &TmemRef,
        src: Val,
    ) -> Result<PipeWork, Error> {
        let refuse = |why: String| {
            let i = &self.cta.p.ins[pc];
            Error::Unsupported {
                opcode: i.opcode.clone(),
                line: i.ptx_line,
                span: i.span,
                why,
            }
        };
        let dsc = Desc::decode(self.value(t, src, pc)?).map_err(refuse)?;
        let (lane, col) = self.taddr(t, at.taddr, at.offset, pc)?;
        let (rows, bytes) = shape.rows_bytes();
        if lane != 0 || !self.tmem.allocated(col, bytes / 4) {
            return Err(self.rt(
                pc,
                format!(
                    "`tcgen05.cp` into lane {lane}, columns {col}..{}: not allocated tensor memory from lane 0",
                    col + bytes / 4
                ),
            ));
        }
        let smem = self.cta.shared.len() as u32;
        let mut words = Vec::with_capacity((rows * bytes / 4) as usize);
        for r in 0..rows {
            for c in 0..bytes / 4 {
                let x = dsc
                    .address(r, 4 * c, 1, true)
                    .ok_or_else(|| refuse("the source's layout".into()))?;
                if x + 4 > smem {
                    return Err(self.rt(
                        pc,
                        format!("`tcgen05.cp` reads shared byte {x}, past the CTA's {smem}"),
                    ));
                }
                for l in shape.lanes(r) {
                    words.push((x, (l, col + c)));
                }
            }
        }
        Ok(PipeWork::Cp { words })
    }
}

/// The operands of a `tcgen05.mma` as resolved ([`AgentOp::Mma`]).
struct MmaOperands<'o> {
    d: &'o TmemRef,
    a: MmaA,
    b: Val,
    idesc: Val,
    acc: Val,
    scales: Option<&'o [TmemRef; 2]>,
    disable: &'o [Val],
}

/// A block-scaled MMA's factors as numbers ([`bwsim_sim::mma::BitsScales`]).
struct Factors {
    a: Vec<f64>,
    b: Vec<Vec<f64>>,
    row_quarter: Vec<usize>,
}

impl Machine<'_, '_> {
    /// The factors of a block-scaled MMA of accumulator lane `lane`, A's factors from column
    /// `cols[0]`, B's from `cols[1]`, of type `ty`, at scale-factor ids `ids` (docs/semantics.md,
    /// "The PTX front end"): factor `(r, kb)` of a matrix of R rows lies in lane `r % 32` of
    /// every lane quarter, column `c + r / 32`, byte `id + kb` of the cell; the datapath of
    /// quarter `q` reads the copies in quarter `q`.
    fn factors(
        &self,
        desc: &InstrDesc,
        lane: u32,
        cols: [u32; 2],
        ty: DType,
        ids: [u32; 2],
        pc: usize,
    ) -> Result<Factors, Error> {
        let blocks = desc.k() / desc.vec();
        let (m, n) = (desc.m, desc.n);
        let factor = |q: u32, r: u32, c: u32, byte: u32| -> Result<f64, Error> {
            if byte >= 4 {
                return Err(self.rt(
                    pc,
                    format!("a scale-factor id names byte {byte} of a 32-bit tensor-memory cell"),
                ));
            }
            let cell = self.tmem.cells[Tmem::cell(32 * q + r % 32, c + r / 32)];
            Ok(bwsim_sim::value::bits_to_f64(
                ty,
                ((cell >> (8 * byte)) & 0xff) as u64,
            ))
        };
        let row_quarter: Vec<usize> = (0..m).map(|i| (row_lane(m, lane, i) / 32) as usize).collect();
        let mut a = Vec::with_capacity((m * blocks) as usize);
        for i in 0..m {
            for kb in 0..blocks {
                a.push(factor(row_lane(m, lane, i) / 32, i, cols[0], ids[0] + kb)?);
            }
        }
        let mut b = Vec::with_capacity(4);
        for q in 0..4u32 {
            if !row_quarter.contains(&(q as usize)) {
                b.push(Vec::new());
                continue;
            }
            let mut f = Vec::with_capacity((n * blocks) as usize);
            for j in 0..n {
                for kb in 0..blocks {
                    f.push(factor(q, j, cols[1], ids[1] + kb)?);
                }
            }
            b.push(f);
        }
        Ok(Factors { a, b, row_quarter })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_cute_dsl_descriptors() {
        // The CuTe DSL dense GEMM's A descriptor for a buffer at shared byte 16512 & !1023:
        // `(addr >> 4) | 0x4000404000000000`: 128-byte swizzle, SBO 1024, version 1.
        let d = Desc::decode(0x4000_4040_0000_0000 | (16384 >> 4)).expect("decodes");
        assert_eq!((d.start, d.lbo, d.sbo, d.swizzle), (16384, 0, 1024, 128));
        // Row 1, K 0: one span further; row 9: one atom (SBO) and one span further, then the
        // XOR of bits 4-6 with bits 7-9 (row 9 sits at 1024 + 128: bits 7-9 = 1).
        assert_eq!(d.address(0, 0, 2, true), Some(16384));
        assert_eq!(d.address(1, 0, 2, true), Some(16384 + 128 + 16));
        assert_eq!(d.address(9, 3, 2, true), Some((16384 + 1024 + 128 + 6) ^ 16));
        // An MN-major 128-byte-swizzled B (docs/hardware/mma-descriptors.md: LBO 8192 between
        // 64-element column blocks, SBO 1024 between groups of 8 K rows).
        let b = Desc {
            start: 0,
            lbo: 8192,
            sbo: 1024,
            base_offset: 0,
            swizzle: 128,
        };
        assert_eq!(b.address(65, 9, 2, false), Some((8192 + 1024 + 128 + 2) ^ 16));
        assert!(
            Desc::decode(1 << 61).is_err(),
            "128-byte swizzle with 32-byte atoms"
        );
    }

    #[test]
    fn decodes_block_scaled_descriptors() {
        // Triton's descriptors of docs/hardware/tmem-scales.md. kind::mxf8f6f4's second K step,
        // 0x28A00010: B's id 1 (bits 4-5), e4m3 A and B, N 128, ue8m0 (bit 23), M 128, A's
        // id 1 (bits 29-30); one factor per 32 K, the instruction's K 32.
        let i = InstrDesc::decode(0x28A0_0010, MmaKind::Mxf8f6f4).expect("decodes");
        assert_eq!((i.a, i.b, i.d), (DType::F8E4M3, DType::F8E4M3, DType::F32));
        assert_eq!((i.m, i.n, i.scale), (128, 128, Some((DType::UE8M0, [1, 1]))));
        assert_eq!((i.k(), i.vec()), (32, 32));
        // kind::mxf4's second K step, 0x48A004A0: e2m1 (format 1), ids 2; K 64.
        let i = InstrDesc::decode(0x48A0_04A0, MmaKind::Mxf4).expect("decodes");
        assert_eq!((i.a, i.scale), (DType::F4E2M1, Some((DType::UE8M0, [2, 2]))));
        assert_eq!((i.k(), i.vec()), (64, 32));
        // kind::mxf4nvf4 with bit 23 clear: ue4m3 factors, one per 16 K.
        let i = InstrDesc::decode(0x0820_0480, MmaKind::Mxf4nvf4).expect("decodes");
        assert_eq!((i.scale, i.vec()), (Some((DType::UE4M3, [0, 0])), 16));
        assert!(
            InstrDesc::decode(0x0820_0000, MmaKind::Mxf8f6f4).is_err(),
            "ue4m3 factors under kind::mxf8f6f4"
        );
        assert!(
            InstrDesc::decode(0x08A0_1400, MmaKind::Mxf8f6f4).is_err(),
            "e4m3 A with an e2m1 B (mixed types)"
        );
    }

    #[test]
    fn decodes_instruction_descriptors() {
        // Triton's 0x08210010 (docs/hardware/mma-descriptors.md): f32 D, f16 A and B, B
        // MN-major, N 128, M 128.
        let i = InstrDesc::decode(0x0821_0010, MmaKind::F16).expect("decodes");
        assert_eq!((i.d, i.a, i.b), (DType::F32, DType::F16, DType::F16));
        assert_eq!(
            (i.m, i.n, i.mn_major, i.negate),
            (128, 128, [false, true], [false, false])
        );
        // The CuTe DSL's 0x08202010: A negated.
        let i = InstrDesc::decode(0x0820_2010, MmaKind::F16).expect("decodes");
        assert_eq!(i.negate, [true, false]);
        assert!(
            InstrDesc::decode(0x0820_0000, MmaKind::F16).is_err(),
            "f16 accumulator"
        );
        // Triton's M = 64 descriptor of attention at 64-row tiles, 0x04100010: N 64.
        let i = InstrDesc::decode(0x0410_0010, MmaKind::F16).expect("decodes");
        assert_eq!((i.m, i.n), (64, 64));
        assert!(
            InstrDesc::decode(0x1020_0010, MmaKind::F16).is_err(),
            "M = 256 (a CTA pair's)"
        );
        assert!(
            InstrDesc::decode(0x0802_0010, MmaKind::F16).is_err(),
            "M = 128 with N = 8"
        );
        assert!(
            InstrDesc::decode(0x0820_0010, MmaKind::Tf32).is_err(),
            "f16 under kind::tf32"
        );
    }
}

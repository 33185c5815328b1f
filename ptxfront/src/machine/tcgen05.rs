//! The machine's tensor core: `tcgen05` instructions on a CTA's tensor memory and tensor pipe,
//! as the tile machine runs `tmem.*`, `tcgen05.mma` and `tcgen05.commit` (docs/semantics.md,
//! "The PTX front end").
//!
//! - Tensor memory is 128 lanes x 512 columns of 32-bit cells; `tcgen05.alloc` hands a warp
//!   the lowest free run of `ncols` columns aligned to `ncols` (a power of two from 32 to 512)
//!   and writes its address (lane 0, first column: `lane << 16 | column`) to shared memory (a
//!   slot whose write and reads the checker does not record, until something else is written
//!   there).
//! - `tcgen05.mma` (`cta_group::1`, M = 128, A and B in shared memory) is an asynchronous
//!   operation issued by the thread: its matrix descriptors and instruction descriptor are
//!   decoded at the issue ([`Desc`], [`InstrDesc`]); it runs on the CTA's tensor pipe in issue
//!   order, where the checker sees its reads of A and B (async proxy) and of the accumulator
//!   and its write of the accumulator (tensor memory); the arithmetic is the simulator's
//!   ([`bwsim_sim::mma::mma_bits`]).
//! - `tcgen05.commit` is an arrival on its mbarrier by the tensor pipe once the pipe's earlier
//!   operations are done (the pipe runs in order, so "the thread's earlier operations" of the
//!   PTX ISA are among them).
//! - `tcgen05.ld` / `tcgen05.st` of the `32x32b` shape move one lane per thread (the warp's
//!   lane quarter, warp id mod 4, whatever quarter the address's lane field names) and `N`
//!   consecutive columns, when issued: the checker sees a
//!   generic tensor-memory access by the warp; `tcgen05.wait::ld/st` have nothing left to wait
//!   for.

use super::{Flight, Machine, Work};
use crate::program::{AgentOp, MmaKind, TmemRef, Val};
use crate::Error;
use bwsim_isa::types::DType;
use bwsim_sim::check::hazards::Actor;
use bwsim_sim::check::hb::{Hazard, Kind};
use bwsim_sim::sched::AsyncKind;
use std::collections::{BTreeMap, BTreeSet};

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
    /// Shared granules holding an allocation's address, until something else is written there.
    pub(super) slots: BTreeSet<u32>,
}

impl Default for Tmem {
    fn default() -> Tmem {
        Tmem {
            cells: vec![0; (LANES * COLUMNS) as usize],
            allocs: BTreeMap::new(),
            relinquished: false,
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

/// A 32-bit instruction descriptor of the dense `kind::f16`, `kind::tf32` and `kind::f8f6f4`
/// MMAs (PTX ISA, "Instruction descriptor"): D's type (bits 4-5), A's and B's (7-9, 10-12),
/// negation (13, 14), majorness (15, 16: 1 for MN-major), N >> 3 (17-22) and M >> 4 (24-28).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstrDesc {
    pub d: DType,
    pub a: DType,
    pub b: DType,
    pub negate: [bool; 2],
    pub mn_major: [bool; 2],
    pub n: u32,
    pub m: u32,
}

impl InstrDesc {
    /// Decodes `i` for an MMA of `kind`; refuses sparsity, types the kind does not take and
    /// the forms not modelled (f16 accumulators, M other than 128).
    pub fn decode(i: u32, kind: MmaKind) -> Result<InstrDesc, String> {
        let f = |lo: u32, bits: u32| (i >> lo) & ((1 << bits) - 1);
        if f(2, 1) != 0 {
            return Err("sparse MMAs are not modelled".into());
        }
        let d = match f(4, 2) {
            1 => DType::F32,
            0 => return Err("f16 accumulators are not modelled".into()),
            x => return Err(format!("accumulator type {x} is not one of kind {kind:?}")),
        };
        let ty = |x: u32| match (kind, x) {
            (MmaKind::F16, 0) => Ok(DType::F16),
            (MmaKind::F16, 1) => Ok(DType::BF16),
            (MmaKind::Tf32, 2) => Ok(DType::TF32),
            (MmaKind::F8f6f4, 0) => Ok(DType::F8E4M3),
            (MmaKind::F8f6f4, 1) => Ok(DType::F8E5M2),
            _ => Err(format!("operand type {x} of kind {kind:?} is not modelled")),
        };
        let desc = InstrDesc {
            d,
            a: ty(f(7, 3))?,
            b: ty(f(10, 3))?,
            negate: [f(13, 1) != 0, f(14, 1) != 0],
            mn_major: [f(15, 1) != 0, f(16, 1) != 0],
            n: f(17, 6) << 3,
            m: f(24, 5) << 4,
        };
        if desc.a != desc.b {
            return Err("A and B of different types are not modelled".into());
        }
        if desc.m != 128 || desc.n == 0 || !desc.n.is_multiple_of(16) || desc.n > 256 {
            return Err(format!(
                "the shape M = {}, N = {} (this model runs M = 128 with N a multiple of 16 up to 256)",
                desc.m, desc.n
            ));
        }
        Ok(desc)
    }
}

/// Work for the tensor pipe.
pub(super) enum PipeWork {
    /// An MMA: its shape and types, the shared bytes of A (`m x k`, row-major) and of B
    /// (`n x k`), the accumulator's first column (lane 0) and whether it accumulates.
    Mma {
        desc: InstrDesc,
        k: u32,
        a: Vec<u32>,
        b: Vec<u32>,
        col: u32,
        use_acc: bool,
    },
    /// A commit's arrival on the mbarrier at shared byte `bar`.
    Commit { bar: u32 },
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
            AgentOp::TmemAlloc { dst, cols } => {
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
                let Some(col) = self.tmem.free_run(n) else {
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
                d,
                a,
                b,
                idesc,
                disable,
                acc,
                kind,
            } => {
                for &t in group {
                    let work = self.mma_work(t, pc, *kind, d, [*a, *b, *idesc, *acc], disable)?;
                    self.pipe_issue(w, pc, work, AsyncKind::Mma);
                }
            }
            AgentOp::Commit { bar } => {
                for &t in group {
                    let bar = self.shared_addr(t, bar, pc)?;
                    self.pipe_issue(w, pc, PipeWork::Commit { bar }, AsyncKind::Commit);
                }
            }
            AgentOp::TmemLd { regs, at } => {
                let n = regs.len() as u32;
                let cells = self.lane_cells(w, pc, group, at, n)?;
                for (&t, &(lane, col)) in group.iter().zip(&cells) {
                    for (j, &r) in regs.iter().enumerate() {
                        let v = self.tmem.cells[Tmem::cell(lane, col + j as u32)];
                        self.cta.write(&mut self.th[t], r, v as u64);
                    }
                }
                self.check_tmem(w, pc, Kind::Read, &cells, n);
            }
            AgentOp::TmemSt { vals, at } => {
                let n = vals.len() as u32;
                let cells = self.lane_cells(w, pc, group, at, n)?;
                for (&t, &(lane, col)) in group.iter().zip(&cells) {
                    for (j, &v) in vals.iter().enumerate() {
                        let v = self.value(t, v, pc)? as u32;
                        self.tmem.cells[Tmem::cell(lane, col + j as u32)] = v;
                    }
                }
                self.check_tmem(w, pc, Kind::Write, &cells, n);
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

    /// The first cell each lane of `group` of warp `w` moves with a `32x32b` load or store of
    /// `n` columns at `at`. The warp reaches only its quarter of the lanes (`32 * (w % 4)` and
    /// the 31 after it), and the address's lane field selects a lane inside that quarter: its
    /// quarter bits (5 and 6) are not read, so that lane 0 and lane `32 * (w % 4)` name the
    /// same first lane (docs/semantics.md, "Tensor memory"). The thread's lane is that first
    /// lane plus its lane id, which must stay in the quarter, and the columns in an allocation.
    fn lane_cells(
        &self,
        w: usize,
        pc: usize,
        group: &[usize],
        at: &TmemRef,
        n: u32,
    ) -> Result<Vec<(u32, u32)>, Error> {
        let quarter = (w as u32 % 4) * 32;
        group
            .iter()
            .map(|&t| {
                let (field, col) = self.taddr(t, at.taddr, at.offset, pc)?;
                let lane = quarter + field % 32 + t as u32 % 32;
                if lane >= quarter + 32 {
                    return Err(self.rt(
                        pc,
                        format!(
                            "warp {w}'s `32x32b` access at lane {} of its quarter reaches \
                             tensor-memory lane {lane}, outside its lanes {quarter}..{}",
                            field % 32,
                            quarter + 32
                        ),
                    ));
                }
                if !self.tmem.allocated(col, n) {
                    return Err(self.rt(
                        pc,
                        format!("tensor-memory columns {col}..{} are not allocated", col + n),
                    ));
                }
                Ok((lane, col))
            })
            .collect()
    }

    /// The checker's view of a load or store of `n` columns from each of `cells` by warp `w`.
    fn check_tmem(&mut self, w: usize, pc: usize, kind: Kind, cells: &[(u32, u32)], n: u32) {
        let Some(hb) = &mut self.hb else { return };
        let all: Vec<(u32, u32)> = cells
            .iter()
            .flat_map(|&(l, c)| (0..n).map(move |j| (l, c + j)))
            .collect();
        if let Some(h) = hb.generic_tmem(w, pc as u32, kind, &all) {
            self.report(&h);
        }
    }

    /// Decodes thread `t`'s `tcgen05.mma` at `pc`: `[a, b, idesc, enable_input_d]`.
    fn mma_work(
        &self,
        t: usize,
        pc: usize,
        kind: MmaKind,
        d: &TmemRef,
        [a, b, idesc, acc]: [Val; 4],
        disable: &[Val],
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
        for &v in disable {
            if self.value(t, v, pc)? as u32 != 0 {
                return Err(refuse("disable-output-lane masks other than 0".into()));
            }
        }
        let desc = InstrDesc::decode(self.value(t, idesc, pc)? as u32, kind).map_err(refuse)?;
        let (lane, col) = self.taddr(t, d.taddr, d.offset, pc)?;
        if lane != 0 || !self.tmem.allocated(col, desc.n) {
            return Err(self.rt(
                pc,
                format!(
                    "the accumulator (lane {lane}, columns {col}..{}) is not allocated tensor memory",
                    col + desc.n
                ),
            ));
        }
        let k = bwsim_sim::mma_numerics::instruction_k(desc.a, false) as u32;
        let eb = desc.a.bits() / 8;
        let smem = self.cta.shared.len() as u32;
        let operand = |v: Val, rows: u32, mn_major: bool| -> Result<Vec<u32>, Error> {
            let dsc = Desc::decode(self.value(t, v, pc)?).map_err(refuse)?;
            dsc.addresses(0..rows, k, eb, mn_major, smem)
                .map_err(|e| self.operand_error(e, pc, "tcgen05.mma", "an MMA operand"))
        };
        Ok(PipeWork::Mma {
            desc,
            k,
            a: operand(a, desc.m, desc.mn_major[0])?,
            b: operand(b, desc.n, desc.mn_major[1])?,
            col,
            use_acc: self.value(t, acc, pc)? & 1 != 0,
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
                col,
                use_acc,
            } => {
                let (m, n) = (desc.m, desc.n);
                let cells: Vec<(u32, u32)> = (0..m).flat_map(|i| (0..n).map(move |j| (i, col + j))).collect();
                if let Some(hb) = &mut self.hb {
                    let bits = desc.a.bits();
                    let smem = |v: &[u32]| v.iter().map(|&x| (x, 0)).collect::<Vec<_>>();
                    let mut found: Vec<Hazard> = Vec::new();
                    found.extend(hb.pipe_smem(op, Kind::Read, &smem(&a), bits));
                    found.extend(hb.pipe_smem(op, Kind::Read, &smem(&b), bits));
                    if use_acc {
                        found.extend(hb.pipe_tmem(op, Kind::Read, &cells));
                    }
                    found.extend(hb.pipe_tmem(op, Kind::Write, &cells));
                    for h in found {
                        self.report(&h);
                    }
                }
                let eb = (desc.a.bits() / 8) as usize;
                let read = |v: &[u32]| -> Vec<u64> {
                    v.iter()
                        .map(|&x| {
                            let x = x as usize;
                            let mut w = [0u8; 8];
                            w[..eb].copy_from_slice(&self.cta.shared[x..x + eb]);
                            u64::from_le_bytes(w)
                        })
                        .collect()
                };
                let (av, bv) = (read(&a), read(&b));
                let olds: Vec<u64> = cells
                    .iter()
                    .map(|&(l, c)| self.tmem.cells[Tmem::cell(l, c)] as u64)
                    .collect();
                let out = bwsim_sim::mma::mma_bits(
                    &av,
                    &bv,
                    [m as usize, n as usize, k as usize],
                    desc.a,
                    desc.d,
                    &olds,
                    use_acc,
                    desc.negate,
                    &self.arith,
                );
                for (&(l, c), v) in cells.iter().zip(out) {
                    self.tmem.cells[Tmem::cell(l, c)] = v as u32;
                }
            }
            PipeWork::Commit { bar } => {
                if !self.bars.contains_key(&bar) {
                    self.misuse(pc, bar);
                    return Ok(());
                }
                let r = self.bar_mut(bar, pc)?.arrive(1);
                let flipped = r.map_err(|f| self.fault(pc, f))?;
                if let Some(hb) = &mut self.hb {
                    hb.bar_update(bar, Actor::Pipe, true, 0, flipped);
                }
            }
        }
        Ok(())
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
        assert!(InstrDesc::decode(0x0420_0010, MmaKind::F16).is_err(), "M = 64");
        assert!(
            InstrDesc::decode(0x0820_0010, MmaKind::Tf32).is_err(),
            "f16 under kind::tf32"
        );
    }
}

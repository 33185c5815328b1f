//! Tensor-core arithmetic: tcgen05.mma (f16/bf16, tf32, f8f6f4, i8, block-scaled
//! mxf8f6f4/nvf4), tcgen05.cp, and Hopper wgmma.
//!
//! Operands are READ FROM SHARED-MEMORY BITS through the buffer layout ([`crate::views`]):
//! A is the view `[M, K]` (K-major unless `transposed`), B the view `[K, N]` (MN-major unless
//! `transposed`), so a layout or swizzle bug produces wrong numbers exactly as on hardware.
//! Floating-point products are added into an f32 accumulator as the tensor core does, one
//! block FMA per instruction's K ([`crate::mma_numerics`], measured on the H100; the run's
//! [`crate::mma_numerics::MmaNumerics`] picks the arithmetic per MMA family), and into an f16
//! accumulator with the same alignment, each step rounded to nearest f16 (measured too);
//! integer accumulators take the exact sum, wrapped to 32 bits as s32 wraps (measured). tf32 operands drop the low 13 mantissa
//! bits of the stored f32 (the tensor core ignores them; measured with the same probe).
//! Block scales: ue8m0 = 2^(e-127) per 32 K-elements, ue4m3 per 16.
//!
//! This module knows memories and views; when an operation runs is the machine's business.

use crate::memory::{Smem, Tmem};
use crate::mma_narrow::{self, NarrowPanels, NarrowRows};
use crate::mma_numerics::{self, Arith, Operand, PackedLine, PackedLines};
use crate::trap::{Fault, OpResult};
use crate::value::{bits_to_f64, i64_to_bits, round_to, SmemView, Tile, TmemView};
use crate::views::{self, TmemCell};
use bwsim_isa::types::DType;

/// The A operand of an MMA.
#[derive(Clone, Copy, Debug)]
pub enum AOperand {
    Smem(SmemView),
    Tmem(TmemView),
}

impl AOperand {
    fn shape(&self) -> &[u32] {
        match self {
            AOperand::Smem(v) => v.shape.as_slice(),
            AOperand::Tmem(v) => v.shape.as_slice(),
        }
    }
    /// The shared-memory view, when A is in shared memory.
    fn smem_view(&self) -> Option<SmemView> {
        match self {
            AOperand::Smem(v) => Some(*v),
            AOperand::Tmem(_) => None,
        }
    }
    /// Offset of the view's K index 0 inside its root (for whole-K scale buffers).
    fn k_origin(&self) -> u32 {
        let (o, _) = match self {
            AOperand::Smem(v) => (v.origin, ()),
            AOperand::Tmem(v) => (v.origin, ()),
        };
        o.as_slice().last().copied().unwrap_or(0)
    }
}

/// A tcgen05.mma as issued.
#[derive(Clone, Copy, Debug)]
pub struct MmaOp {
    pub a: AOperand,
    pub b: SmemView,
    pub acc: TmemView,
    pub scales: Option<(TmemView, TmemView)>,
    pub use_acc: bool,
}

fn last2(s: &[u32]) -> (u32, u32) {
    match s.len() {
        0 => (1, 1),
        1 => (1, s[0]),
        n => (s[n - 2], s[n - 1]),
    }
}

/// Decode an operand element for the tensor core.
fn operand(dtype: DType, bits: u64) -> f64 {
    match dtype {
        DType::TF32 | DType::F32 => f32::from_bits((bits as u32) & !0x1fff) as f64,
        d => bits_to_f64(d, bits),
    }
}

/// A shared-memory operand as numbers, row-major over its view.
fn read_smem(smem: &Smem, v: &SmemView) -> OpResult<Vec<f64>> {
    read_smem_at(smem, v, crate::views::view_addresses(v).as_deref())
}

/// [`read_smem`] at the view's placement `addrs` (`None`: it overflows the address space).
fn read_smem_at(smem: &Smem, v: &SmemView, addrs: Option<&Vec<(u32, u32)>>) -> OpResult<Vec<f64>> {
    let addrs = addrs
        .ok_or_else(|| Fault::trap(crate::trap::CudaError::IllegalAddress, "shared address overflow"))?;
    let bits = v.dtype.bits();
    let mut out = Vec::with_capacity(addrs.len());
    for &(addr, shift) in addrs.iter() {
        out.push(operand(v.dtype, smem.read(addr, shift, bits)?));
    }
    Ok(out)
}

fn read_a(smem: &Smem, tmem: &Tmem, a: &AOperand, m: u32, k: u32) -> OpResult<Vec<f64>> {
    match a {
        AOperand::Smem(v) => read_smem(smem, v),
        AOperand::Tmem(v) => {
            let mut out = Vec::with_capacity((m * k) as usize);
            for i in 0..m {
                for j in 0..k {
                    out.push(operand(v.dtype, tmem.read_view(v, &[i, j])?));
                }
            }
            Ok(out)
        }
    }
}

/// A matrix of operands as lines of `k` (rows of A, columns of B), decoded once for every dot
/// product that reads them: the reference form of every line, and the packed form
/// ([`mma_numerics::PackedLines`]) of the lines whose every operand fits it.
struct Lines {
    k: usize,
    ops: Vec<Operand>,
    packed: PackedLines,
}

/// One line of [`Lines`].
#[derive(Clone, Copy)]
struct Line<'a> {
    ops: &'a [Operand],
    packed: Option<PackedLine<'a>>,
}

impl Lines {
    /// `lines` lines of `k` values each, row-major.
    fn new(vs: &[f64], lines: usize, k: usize) -> Lines {
        Lines {
            k,
            ops: mma_numerics::operands(vs),
            packed: PackedLines::new(vs, lines, k),
        }
    }

    fn line(&self, i: usize) -> Line<'_> {
        Line {
            ops: &self.ops[i * self.k..(i + 1) * self.k],
            packed: self.packed.line(i),
        }
    }
}

/// One accumulator element: `row · col (+ old)` in the accumulator type, through the block
/// FMA chain when `arith` models this operand type into an f32 accumulator (the packed chain
/// when both lines fit it: the same bits) or an f16 one (each step rounded to nearest f16),
/// else the exact sum rounded once (integers: exact, wrapped to the accumulator's width).
#[allow(clippy::too_many_arguments)] // the element's operands, its accumulator and the model
fn dot(
    row: Line,
    col: Line,
    old: f64,
    use_acc: bool,
    acc: DType,
    operand: DType,
    scaled: bool,
    arith: &Arith,
) -> u64 {
    if acc == DType::F16 {
        if let Some(p) = arith.block_for(operand) {
            // An f16 accumulator: the same alignment, each step's sum rounded to nearest f16
            // (mma_numerics::block_step_f16, measured on the H100).
            let k = mma_numerics::instruction_k(operand, scaled);
            let old = round_to(DType::F16, old) as u16;
            return mma_numerics::chain_f16(row.ops, col.ops, k, old, use_acc, p.align_bits) as u64;
        }
    }
    match arith.block_for(operand).filter(|_| acc == DType::F32) {
        Some(p) => {
            let k = mma_numerics::instruction_k(operand, scaled);
            let r = match (row.packed, col.packed) {
                (Some(a), Some(b)) if mma_numerics::packed_supports(p) => {
                    mma_numerics::chain_packed(a, b, k, old as f32, use_acc, p)
                }
                _ => mma_numerics::chain(row.ops, col.ops, k, old as f32, use_acc, p),
            };
            r.to_bits() as u64
        }
        None => {
            let s: f64 = row.ops.iter().zip(col.ops).map(|(a, b)| a.v * b.v).sum();
            round_to(acc, s + if use_acc { old } else { 0.0 })
        }
    }
}

/// The accumulator's cells, row-major over `[m, n]` (element `[i, j]` of the view, its copy in
/// lane quarter 0).
fn acc_cells(v: &TmemView, m: u32, n: u32) -> std::sync::Arc<Vec<TmemCell>> {
    if v.shape.len() == 2 && !v.scales {
        views::tmem_view_cells(v, 0)
    } else {
        std::sync::Arc::new(
            (0..m)
                .flat_map(|i| (0..n).map(move |j| views::tmem_element(v, &[i, j])))
                .collect(),
        )
    }
}

/// Write accumulator element `idx` at `cell` (its [`acc_cells`] entry): one cell, or a
/// scale-factor view's copies in every quarter as [`Tmem::write_view`] writes them.
fn write_acc(tmem: &mut Tmem, v: &TmemView, cell: TmemCell, idx: &[u32], bits: u64) -> OpResult<()> {
    if v.scales {
        tmem.write_view(v, idx, bits)
    } else {
        tmem.write(cell, v.dtype.bits(), bits)
    }
}

/// D = A·B (+ D): the accumulator is read and written in tensor memory.
///
/// `ahead` is this MMA as an [`AheadWorker`] started computing it when it started on the pipe:
/// its result is taken when every byte it read is still the same now (so it is the result a
/// computation now would give, bit for bit), and dropped otherwise.
pub fn mma(
    smem: &Smem,
    tmem: &mut Tmem,
    op: &MmaOp,
    arith: &Arith,
    exec: &MmaExec,
    ahead: Option<AheadMma>,
) -> OpResult<()> {
    if let Some(results) = ahead.and_then(|a| a.take(smem, tmem)) {
        let (m, _) = last2(op.a.shape());
        let (_, n) = last2(op.acc.shape.as_slice());
        let cells = acc_cells(&op.acc, m, n);
        return write_results(tmem, &op.acc, &cells, &results, n as usize);
    }
    let g = gather(smem, tmem, op, exec.threads > 1)?;
    // Every old value was readable (the results are a function of the inputs only); a cell
    // outside the allocation takes the element-by-element loop, which faults where it always
    // did.
    let Some(olds) = &g.olds else {
        let forms = Forms::default();
        let ins = g.inputs(&forms, arith);
        let acc_bits = op.acc.dtype.bits();
        for i in 0..g.mu {
            for j in 0..g.nu {
                let cell = g.cells[i * g.nu + j];
                let bits = ins.element(i, j, tmem.read(cell, acc_bits)?);
                write_acc(tmem, &op.acc, cell, &[i as u32, j as u32], bits)?;
            }
        }
        return Ok(());
    };
    let key = exec.memo.as_ref().map(|_| g.key(arith));
    let cached = match (&exec.memo, &key) {
        (Some(memo), Some(key)) => memo.get(key),
        _ => None,
    };
    let results = match cached {
        Some(r) => r,
        None => {
            let r = g.compute(olds, arith, exec.threads);
            if let (Some(memo), Some(key)) = (&exec.memo, key) {
                memo.put(key, r.clone());
            }
            r
        }
    };
    write_results(tmem, &op.acc, &g.cells, &results, g.nu)
}

/// D = A·B (+ D) over operands given as raw bits, for a front end that addresses the operands
/// itself (the PTX front end decodes tcgen05's shared-memory matrix descriptors): `a` holds
/// `m` rows of `k` elements and `b` `n` columns of `k` (each line along K), both of type
/// `operand` (floating-point, or 8-bit integers into an integer `acc`, summed exactly as
/// [`mma`] sums them); `olds` the accumulator's `m x n` bits of type `acc`,
/// row-major (read only with `use_acc`). `negate` flips the signs of A and of B (the
/// instruction descriptor's negate bits). Returns the new accumulator bits, row-major: the
/// arithmetic of [`mma`], element for element.
#[allow(clippy::too_many_arguments)] // the operands, their shape and types, and the model
pub fn mma_bits(
    a: &[u64],
    b: &[u64],
    [m, n, k]: [usize; 3],
    operand: DType,
    acc: DType,
    olds: &[u64],
    use_acc: bool,
    negate: [bool; 2],
    arith: &Arith,
) -> Vec<u64> {
    let decode = |v: &[u64], neg: bool| -> Vec<f64> {
        v.iter()
            .map(|&x| {
                let f = self::operand(operand, x);
                if neg {
                    -f
                } else {
                    f
                }
            })
            .collect()
    };
    let (av, bt) = (decode(a, negate[0]), decode(b, negate[1]));
    let forms = Forms::default();
    MmaInputs {
        av: &av,
        bt: &bt,
        bt_q: &[],
        forms: &forms,
        m,
        k,
        row_quarter: &[],
        acc,
        a_dtype: operand,
        int: acc.is_int(),
        use_acc,
        scaled: false,
        arith,
        n,
    }
    .all(olds, m, 1)
}

/// Write an MMA's results, row-major over the accumulator view of `n` columns, at its
/// [`acc_cells`].
fn write_results(
    tmem: &mut Tmem,
    acc: &TmemView,
    cells: &[TmemCell],
    results: &[u64],
    n: usize,
) -> OpResult<()> {
    if acc.scales {
        for (x, (&cell, &bits)) in cells.iter().zip(results).enumerate() {
            write_acc(tmem, acc, cell, &[(x / n) as u32, (x % n) as u32], bits)?;
        }
        return Ok(());
    }
    let width = acc.dtype.bits();
    for (&cell, &bits) in cells.iter().zip(results) {
        tmem.write(cell, width, bits)?;
    }
    Ok(())
}

/// A thread that computes MMAs ahead of their completion, in the order they start on the
/// tensor pipe ([`MmaExec::ahead`]). It keeps its own view placements warm across MMAs and
/// ends when dropped, after the MMAs already given to it.
#[derive(Debug)]
pub struct AheadWorker {
    jobs: crossbeam::channel::Sender<Box<dyn FnOnce() + Send>>,
    /// Copies of the memories whose MMAs are done, reused for the next (only the parts an
    /// MMA reads are ever copied into them, and only those are read).
    spare: std::sync::Arc<std::sync::Mutex<Vec<Seen>>>,
    /// The byte span of each shared-memory view and the column span of each set of
    /// tensor-memory views seen so far (a loop walks the same few).
    spans: std::cell::RefCell<std::collections::HashMap<SmemView, std::ops::Range<usize>>>,
    cols: std::cell::RefCell<std::collections::HashMap<[Option<TmemView>; 4], std::ops::Range<u32>>>,
}

impl Default for AheadWorker {
    fn default() -> AheadWorker {
        AheadWorker::new()
    }
}

/// Spans an [`AheadWorker`] keeps before it starts over.
const AHEAD_SPANS: usize = 1024;

impl AheadWorker {
    pub fn new() -> AheadWorker {
        let (jobs, rx) = crossbeam::channel::unbounded::<Box<dyn FnOnce() + Send>>();
        std::thread::spawn(move || {
            for job in rx {
                job();
            }
        });
        AheadWorker {
            jobs,
            spare: Default::default(),
            spans: Default::default(),
            cols: Default::default(),
        }
    }

    /// The bytes of shared memory view `v` lies in.
    fn span(&self, v: &SmemView, len: usize) -> Option<std::ops::Range<usize>> {
        if let Some(r) = self.spans.borrow().get(v) {
            return Some(r.clone());
        }
        let addrs = views::view_addresses(v)?;
        let lo = addrs.iter().map(|&(a, _)| a).min()? as usize;
        let hi = addrs.iter().map(|&(a, _)| a).max()? as usize + v.dtype.bits().div_ceil(8) as usize;
        let r = lo..hi.min(len);
        let mut spans = self.spans.borrow_mut();
        if spans.len() >= AHEAD_SPANS {
            spans.clear();
        }
        spans.insert(*v, r.clone());
        Some(r)
    }

    /// The tensor-memory columns the accumulator, the scale factors and an A in tensor memory
    /// of `op` lie in.
    fn columns(&self, op: &MmaOp) -> Option<std::ops::Range<u32>> {
        let (sa, sb) = op.scales.unzip();
        let a = match op.a {
            AOperand::Tmem(v) => Some(v),
            AOperand::Smem(_) => None,
        };
        let key = [Some(op.acc), sa, sb, a];
        if let Some(r) = self.cols.borrow().get(&key) {
            return Some(r.clone());
        }
        let mut cols: Option<std::ops::Range<u32>> = None;
        for v in key.iter().flatten() {
            for &(_, col) in views::tmem_view_copies(v).iter() {
                let r = cols.get_or_insert(col..col + 1);
                *r = r.start.min(col)..r.end.max(col + 1);
            }
        }
        let r = cols?;
        let mut all = self.cols.borrow_mut();
        if all.len() >= AHEAD_SPANS {
            all.clear();
        }
        all.insert(key, r.clone());
        Some(r)
    }

    /// Start computing `op` from copies of the memories as they are now (the simulation goes
    /// on meanwhile). `None` when the MMA is too small to pay for the copies (then [`mma`]
    /// computes it at completion).
    pub fn start(
        &self,
        smem: &Smem,
        tmem: &Tmem,
        op: &MmaOp,
        arith: &Arith,
        threads: usize,
    ) -> Option<AheadMma> {
        let (m, k) = last2(op.a.shape());
        let (_, n) = last2(op.b.shape.as_slice());
        if (m as usize) * (n as usize) * (k as usize) < AHEAD_MMA_WORK {
            return None;
        }
        // The shared-memory bytes the operands lie in, and the tensor-memory columns the
        // accumulator, the scale factors and an A in tensor memory lie in: copied now,
        // compared at completion.
        let mut ranges = Vec::new();
        for v in [op.a.smem_view(), Some(op.b)].into_iter().flatten() {
            ranges.push(self.span(&v, smem.len())?);
        }
        let cols = self.columns(op)?;
        let spare = self.spare.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let seen = match spare {
            Some(mut seen) if seen.smem.len() == smem.len() => {
                seen.smem.copy_ranges(smem, &ranges);
                seen.tmem.copy_columns(tmem, cols.clone());
                seen.cols = cols;
                seen
            }
            _ => Seen {
                smem: smem.with_ranges(&ranges),
                tmem: tmem.with_columns(cols.clone()),
                cols,
            },
        };
        let seen = std::sync::Arc::new(seen);
        let (tx, result) = crossbeam::channel::bounded(1);
        let (op, arith, mem) = (*op, *arith, seen.clone());
        let job = Box::new(move || {
            let r = gather(&mem.smem, &mem.tmem, &op, threads > 1)
                .ok()
                .and_then(|g| Some(g.compute(g.olds.as_deref()?, &arith, threads)));
            // Let the copies go before answering, so that they can be reused.
            drop(mem);
            // The run may have ended and dropped its end of the channel.
            let _ = tx.send(r);
        });
        self.jobs.send(job).ok()?;
        Some(AheadMma {
            seen,
            ranges,
            result,
            spare: self.spare.clone(),
        })
    }
}

/// Below this many products an MMA is not computed ahead (the copies of the memories cost
/// about as much as computing it).
const AHEAD_MMA_WORK: usize = 1 << 18;

/// What an [`AheadWorker`] copied of the memories when an MMA started: the operands' bytes of
/// shared memory, the tensor-memory columns `cols` and the allocation state (the rest is
/// zero or left from an earlier MMA, and never read).
#[derive(Debug)]
struct Seen {
    smem: Smem,
    tmem: Tmem,
    cols: std::ops::Range<u32>,
}

/// An MMA being computed by an [`AheadWorker`] from copies of the memories taken when it
/// started.
#[derive(Debug)]
pub struct AheadMma {
    spare: std::sync::Arc<std::sync::Mutex<Vec<Seen>>>,
    seen: std::sync::Arc<Seen>,
    ranges: Vec<std::ops::Range<usize>>,
    result: crossbeam::channel::Receiver<Option<Vec<u64>>>,
}

impl AheadMma {
    /// The results, when the operands' shared-memory bytes and tensor-memory columns (and the
    /// allocation state) are what they were when the MMA started (waiting for the worker if needed); `None` when
    /// something changed or the inputs could not be read (a fault [`mma`] reports).
    fn take(self, smem: &Smem, tmem: &Tmem) -> Option<Vec<u64>> {
        let seen = &*self.seen;
        let same = self.ranges.iter().all(|r| smem.same_bytes(&seen.smem, r.clone()))
            && tmem.same_columns(&seen.tmem, seen.cols.clone());
        if !same {
            return None;
        }
        let r = self.result.recv().ok().flatten();
        // The worker has let its copies go before answering: keep them for the next MMA.
        if let Ok(seen) = std::sync::Arc::try_unwrap(self.seen) {
            let mut spare = self.spare.lock().unwrap_or_else(|e| e.into_inner());
            if spare.len() < 4 {
                spare.push(seen);
            }
        }
        r
    }
}

/// Everything an MMA's results depend on, read from memory and owned: the operands as
/// numbers (block scales folded in), the accumulator's cells and old bits, the types.
struct Gathered {
    av: Vec<f64>,
    bt: Vec<f64>,
    bt_q: Vec<Vec<f64>>,
    row_quarter: Vec<usize>,
    /// The old accumulator bits, row-major (empty without `use_acc`); `None` when a cell
    /// cannot be read.
    olds: Option<Vec<u64>>,
    cells: std::sync::Arc<Vec<TmemCell>>,
    mu: usize,
    nu: usize,
    ku: usize,
    acc: DType,
    a_dtype: DType,
    int: bool,
    use_acc: bool,
    scaled: bool,
}

/// Read an MMA's inputs.
///
/// With `parallel`, B is read on a second thread while A is read (its placement taken here,
/// where the thread's placements are kept).
fn gather(smem: &Smem, tmem: &Tmem, op: &MmaOp, parallel: bool) -> OpResult<Gathered> {
    let (m, k) = last2(op.a.shape());
    let (kb, n) = last2(op.b.shape.as_slice());
    let (am, an) = last2(op.acc.shape.as_slice());
    if k != kb || am != m || an != n {
        return Err(Fault::unsupported(format!(
            "MMA shapes {m}x{k}, {kb}x{n}, {am}x{an}"
        )));
    }
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    // B transposed to [N, K] so every dot product walks contiguous memory.
    let b_addrs = views::view_addresses(&op.b);
    let read_bt = || -> OpResult<Vec<f64>> {
        let bv = read_smem_at(smem, &op.b, b_addrs.as_deref())?;
        let mut bt = vec![0f64; nu * ku];
        for kk in 0..ku {
            for j in 0..nu {
                bt[j * ku + kk] = bv[kk * nu + j];
            }
        }
        Ok(bt)
    };
    let (av, bt) = if parallel {
        std::thread::scope(|scope| {
            let bt = scope.spawn(read_bt);
            let av = read_a(smem, tmem, &op.a, m, k);
            (av, bt.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
        })
    } else {
        (read_a(smem, tmem, &op.a, m, k), read_bt())
    };
    let mut av = av?;
    let bt = bt?;
    // Block scales (one factor per `vec` K-elements) folded into the operands (exact: scales
    // are powers of two or 4-bit values). The datapath of lane quarter q computes the
    // accumulator rows in that quarter and reads both operands' factors from the copies in
    // its own quarter (docs/hardware/tmem-scales.md), so B is scaled once per quarter.
    let mut row_quarter = vec![0usize; mu];
    let mut bt_q: Vec<Vec<f64>> = Vec::new();
    if let Some((sa, sb)) = &op.scales {
        let vec = if sa.dtype == DType::UE4M3 { 16 } else { 32 };
        let (_, sa_cols) = last2(sa.shape.as_slice());
        let (_, sb_cols) = last2(sb.shape.as_slice());
        // A scale buffer covering more K than this MMA is indexed by the absolute K.
        let koff = if sa_cols * vec > k { op.a.k_origin() } else { 0 };
        let blk = |kk: usize, cols: u32| {
            ((koff as usize + kk) / vec as usize).min(cols.saturating_sub(1) as usize) as u32
        };
        for (i, q) in row_quarter.iter_mut().enumerate() {
            *q = (crate::views::tmem_element(&op.acc, &[i as u32, 0]).lane / 32) as usize;
        }
        for (i, &q) in row_quarter.iter().enumerate() {
            let mut f = Vec::with_capacity(sa_cols as usize);
            for j in 0..sa_cols {
                f.push(bits_to_f64(
                    sa.dtype,
                    tmem.read_view_in(sa, &[i as u32, j], q as u32)?,
                ));
            }
            for kk in 0..ku {
                av[i * ku + kk] *= f.get(blk(kk, sa_cols) as usize).copied().unwrap_or(1.0);
            }
        }
        for q in 0..4u32 {
            if !row_quarter.contains(&(q as usize)) {
                bt_q.push(Vec::new());
                continue;
            }
            let mut b = bt.clone();
            for j in 0..nu {
                let mut f = Vec::with_capacity(sb_cols as usize);
                for c in 0..sb_cols {
                    f.push(bits_to_f64(sb.dtype, tmem.read_view_in(sb, &[j as u32, c], q)?));
                }
                for kk in 0..ku {
                    b[j * ku + kk] *= f.get(blk(kk, sb_cols) as usize).copied().unwrap_or(1.0);
                }
            }
            bt_q.push(b);
        }
    }
    let int = op.acc.dtype.is_int();
    let a_dtype = match op.a {
        AOperand::Smem(v) => v.dtype,
        AOperand::Tmem(v) => v.dtype,
    };
    let cells = acc_cells(&op.acc, m, n);
    let acc_bits = op.acc.dtype.bits();
    let olds: Option<Vec<u64>> = if op.use_acc {
        cells.iter().map(|&c| tmem.read(c, acc_bits).ok()).collect()
    } else {
        Some(Vec::new())
    };
    Ok(Gathered {
        av,
        bt,
        bt_q,
        row_quarter,
        olds,
        cells,
        mu,
        nu,
        ku,
        acc: op.acc.dtype,
        a_dtype,
        int,
        use_acc: op.use_acc,
        scaled: op.scales.is_some(),
    })
}

impl Gathered {
    fn inputs<'a>(&'a self, forms: &'a Forms, arith: &'a Arith) -> MmaInputs<'a> {
        MmaInputs {
            av: &self.av,
            bt: &self.bt,
            bt_q: &self.bt_q,
            forms,
            m: self.mu,
            k: self.ku,
            row_quarter: &self.row_quarter,
            acc: self.acc,
            a_dtype: self.a_dtype,
            int: self.int,
            use_acc: self.use_acc,
            scaled: self.scaled,
            arith,
            n: self.nu,
        }
    }

    /// Every result element, row-major, from the old accumulator bits `olds`.
    fn compute(&self, olds: &[u64], arith: &Arith, threads: usize) -> Vec<u64> {
        let forms = Forms::default();
        self.inputs(&forms, arith).all(olds, self.mu, threads)
    }

    /// The memo key: the types, shape and arithmetic, then every input value and old bit.
    fn key(&self, arith: &Arith) -> MemoKey {
        let params = match arith.block_for(self.a_dtype) {
            Some(p) => [p.align_bits as u64, p.result_bits as u64],
            None => [u64::MAX, u64::MAX],
        };
        let head = [
            self.acc as u64,
            self.a_dtype as u64,
            self.int as u64,
            self.use_acc as u64,
            self.scaled as u64,
            self.nu as u64,
            self.ku as u64,
            params[0],
            params[1],
        ];
        let olds = self.olds.as_deref().unwrap_or(&[]);
        mma_key(&head, &self.av, &self.bt, &self.bt_q, &self.row_quarter, olds)
    }
}

/// The memo key of an MMA: `head` (types, shape, arithmetic), the scaled operand values, the
/// per-quarter B copies with the rows' quarters, the old accumulator bits.
fn mma_key(
    head: &[u64],
    av: &[f64],
    bt: &[f64],
    bt_q: &[Vec<f64>],
    row_quarter: &[usize],
    olds: &[u64],
) -> MemoKey {
    let mut words = Vec::with_capacity(
        head.len() + av.len() + bt.len() * bt_q.len().max(1) + olds.len() + row_quarter.len(),
    );
    words.extend_from_slice(head);
    words.extend(av.iter().map(|v| v.to_bits()));
    if bt_q.is_empty() {
        words.extend(bt.iter().map(|v| v.to_bits()));
    } else {
        for b in bt_q {
            words.push(b.len() as u64);
            words.extend(b.iter().map(|v| v.to_bits()));
        }
        words.extend(row_quarter.iter().map(|&q| q as u64));
    }
    words.extend_from_slice(olds);
    MemoKey::new(words)
}

/// Everything one tcgen05.mma's results depend on, decoded.
struct MmaInputs<'a> {
    av: &'a [f64],
    bt: &'a [f64],
    bt_q: &'a [Vec<f64>],
    forms: &'a Forms,
    m: usize,
    k: usize,
    row_quarter: &'a [usize],
    acc: DType,
    a_dtype: DType,
    int: bool,
    use_acc: bool,
    scaled: bool,
    arith: &'a Arith,
    n: usize,
}

/// The forms of an MMA's operands, each built by the first thread that needs it: A's rows
/// and B's columns (per lane quarter when scaled) as [`Lines`], and in the narrow form.
#[derive(Default)]
struct Forms {
    a_lines: std::sync::OnceLock<Lines>,
    b_lines: std::sync::OnceLock<Lines>,
    bq_lines: std::sync::OnceLock<Vec<Lines>>,
    a_narrow: std::sync::OnceLock<NarrowRows>,
    b_narrow: std::sync::OnceLock<NarrowPanels>,
    bq_narrow: std::sync::OnceLock<Vec<NarrowPanels>>,
}

impl<'a> MmaInputs<'a> {
    fn a_lines(&self) -> &'a Lines {
        self.a_form(&self.forms.a_lines, Lines::new)
    }

    /// A's rows in the form `make` builds, built once.
    fn a_form<T>(
        &self,
        cell: &'a std::sync::OnceLock<T>,
        make: impl FnOnce(&[f64], usize, usize) -> T,
    ) -> &'a T {
        cell.get_or_init(|| make(self.av, self.m, self.k))
    }

    /// B's columns as row `i` of the result reads them.
    fn b_lines(&self, i: usize) -> &'a Lines {
        self.b_form(i, &self.forms.b_lines, &self.forms.bq_lines, Lines::new)
    }

    /// B's columns in the form `make` builds, as row `i` of the result reads them: one form of
    /// the whole B, or (block-scaled) one per lane quarter, each built once.
    fn b_form<T>(
        &self,
        i: usize,
        one: &'a std::sync::OnceLock<T>,
        quarters: &'a std::sync::OnceLock<Vec<T>>,
        make: impl Fn(&[f64], usize, usize) -> T,
    ) -> &'a T {
        if self.bt_q.is_empty() {
            return one.get_or_init(|| make(self.bt, self.n, self.k));
        }
        let quarters = quarters.get_or_init(|| {
            (self.bt_q.iter())
                .map(|b| make(b, if b.is_empty() { 0 } else { self.n }, self.k))
                .collect()
        });
        &quarters[self.row_quarter[i]]
    }

    fn a_narrow(&self) -> &'a NarrowRows {
        self.a_form(&self.forms.a_narrow, NarrowRows::new)
    }

    /// B's columns in the narrow form, as row `i` of the result reads them.
    fn b_narrow(&self, i: usize) -> &'a NarrowPanels {
        self.b_form(i, &self.forms.b_narrow, &self.forms.bq_narrow, NarrowPanels::new)
    }

    /// Accumulator element `(i, j)` from its old bits (ignored without `use_acc`).
    fn element(&self, i: usize, j: usize, old_bits: u64) -> u64 {
        let ku = self.k;
        let bq = if self.bt_q.is_empty() {
            self.bt
        } else {
            self.bt_q[self.row_quarter[i]].as_slice()
        };
        if self.int {
            let arow = &self.av[i * ku..(i + 1) * ku];
            let bcol = &bq[j * ku..(j + 1) * ku];
            let mut si = 0i64;
            for (a, b) in arow.iter().zip(bcol) {
                si = si.wrapping_add((*a as i64).wrapping_mul(*b as i64));
            }
            let old = if self.use_acc {
                crate::value::bits_to_i64(self.acc, old_bits)
            } else {
                0
            };
            i64_to_bits(self.acc, si.wrapping_add(old))
        } else {
            let old = if self.use_acc {
                bits_to_f64(self.acc, old_bits)
            } else {
                0.0
            };
            dot(
                self.a_lines().line(i),
                self.b_lines(i).line(j),
                old,
                self.use_acc,
                self.acc,
                self.a_dtype,
                self.scaled,
                self.arith,
            )
        }
    }

    /// Rows `rows` of the result, row-major.
    ///
    /// Compiled also for wider vector units, taken where the CPU has them (`pulp`'s run-time
    /// dispatch): the same operations in wider lanes, so the same bits on every CPU.
    fn rows(&self, olds: &[u64], rows: std::ops::Range<usize>) -> Vec<u64> {
        /// The rows as one operation for `pulp` (no closure, which would be compiled once
        /// outside every vector-unit variant).
        struct Rows<'i, 'a> {
            inputs: &'i MmaInputs<'a>,
            olds: &'i [u64],
            rows: std::ops::Range<usize>,
        }
        impl pulp::WithSimd for Rows<'_, '_> {
            type Output = Vec<u64>;
            #[inline(always)]
            fn with_simd<S: pulp::Simd>(self, _: S) -> Vec<u64> {
                self.inputs.rows_in(self.olds, self.rows)
            }
        }
        pulp::Arch::new().dispatch(Rows {
            inputs: self,
            olds,
            rows,
        })
    }

    /// [`MmaInputs::rows`], inlined into each of its vector-unit variants.
    #[inline(always)]
    fn rows_in(&self, olds: &[u64], rows: std::ops::Range<usize>) -> Vec<u64> {
        let mut out = Vec::with_capacity(rows.len() * self.n);
        for i in rows {
            for j0 in (0..self.n).step_by(mma_narrow::COLS) {
                if let Some(r) = self.narrow_cols(i, j0, olds) {
                    out.extend_from_slice(&r);
                    continue;
                }
                let end = (j0 + mma_narrow::COLS).min(self.n);
                let mut j = j0;
                while j < end {
                    let whole = j + PACKED_COLS <= end;
                    match whole
                        .then(|| self.packed_cols::<PACKED_COLS>(i, j, olds))
                        .flatten()
                    {
                        Some(r) => {
                            out.extend_from_slice(&r);
                            j += PACKED_COLS;
                        }
                        None => {
                            out.push(self.element(i, j, olds.get(i * self.n + j).copied().unwrap_or(0)));
                            j += 1;
                        }
                    }
                }
            }
        }
        out
    }

    /// Elements `(i, j..j + W)` when every one takes the packed block-FMA chain ([`dot`]'s
    /// first arm), computed together by [`mma_numerics::chain_packed_cols`]: the same bits
    /// [`MmaInputs::element`] gives each.
    fn packed_cols<const W: usize>(&self, i: usize, j: usize, olds: &[u64]) -> Option<[u64; W]> {
        if self.int || j + W > self.n || self.acc != DType::F32 {
            return None;
        }
        let p = self.arith.block_for(self.a_dtype)?;
        if !mma_numerics::packed_supports(p) {
            return None;
        }
        let lines = self.b_lines(i);
        let a = self.a_lines().line(i).packed?;
        let mut b = [a; W];
        for (w, b) in b.iter_mut().enumerate() {
            *b = lines.line(j + w).packed?;
        }
        let acc = self.accumulators(i, j, olds);
        let k = mma_numerics::instruction_k(self.a_dtype, self.scaled);
        let r = mma_numerics::chain_packed_cols(a, b, k, acc, self.use_acc, p);
        Some(r.map(|x| x.to_bits() as u64))
    }

    /// The accumulators of elements `(i, j..j + W)` as f32 from their old bits `olds` (zeros
    /// without `use_acc`).
    fn accumulators<const W: usize>(&self, i: usize, j: usize, olds: &[u64]) -> [f32; W] {
        std::array::from_fn(|w| {
            let old = olds.get(i * self.n + j + w).copied().unwrap_or(0);
            if self.use_acc {
                bits_to_f64(self.acc, old) as f32
            } else {
                0.0
            }
        })
    }

    /// Elements `(i, j..j + COLS)` (`j` a multiple of [`mma_narrow::COLS`]) when every one
    /// takes the block-FMA chain and their operands fit the narrow form, computed together by
    /// [`mma_narrow::chain_cols`]: the same bits [`MmaInputs::element`] gives each.
    #[inline(always)]
    fn narrow_cols(&self, i: usize, j: usize, olds: &[u64]) -> Option<[u64; mma_narrow::COLS]> {
        if self.int || self.acc != DType::F32 {
            return None;
        }
        let p = self.arith.block_for(self.a_dtype)?;
        if !mma_narrow::narrow_supports(p) {
            return None;
        }
        let b = self.b_narrow(i).panel(j / mma_narrow::COLS)?;
        let a = self.a_narrow().row(i)?;
        let acc = self.accumulators(i, j, olds);
        let k = mma_numerics::instruction_k(self.a_dtype, self.scaled);
        // Rare (an accumulator out of the narrow range): the reference forms, built then.
        let general = |w: usize, r: std::ops::Range<usize>, c: Option<f32>| {
            let row = self.a_lines().line(i).ops;
            let col = self.b_lines(i).line(j + w).ops;
            mma_numerics::block_step(&row[r.clone()], &col[r], c, p)
        };
        let r = mma_narrow::chain_cols(a, b, k, acc, self.use_acc, p, general);
        Some(r.map(|x| x.to_bits() as u64))
    }

    /// Part of the operand forms row `i`'s results read, built by the `t`-th thread of
    /// [`MmaInputs::all`] before its rows: A's by the first, B's by the second, so the two
    /// are built at once (a form is built once, by whichever thread asks first).
    fn prepare(&self, t: usize, i: usize) {
        if self.int {
            return;
        }
        let narrow = self.acc == DType::F32
            && self
                .arith
                .block_for(self.a_dtype)
                .is_some_and(mma_narrow::narrow_supports);
        match (t, narrow) {
            (0, true) => drop(self.a_narrow()),
            (1, true) => drop(self.b_narrow(i)),
            (0, false) => drop(self.a_lines()),
            (1, false) => drop(self.b_lines(i)),
            _ => {}
        }
    }

    /// Every result element, row-major; rows split over up to `threads` threads when the MMA
    /// is large enough to pay for them (each element is computed alone, so the split cannot
    /// change a bit).
    fn all(&self, olds: &[u64], m: usize, threads: usize) -> Vec<u64> {
        let work = m * self.n * self.k;
        let threads = threads.clamp(1, m.max(1));
        if threads == 1 || work < PARALLEL_MMA_WORK {
            return self.rows(olds, 0..m);
        }
        let per = m.div_ceil(threads);
        std::thread::scope(|scope| {
            let parts: Vec<_> = (0..m)
                .step_by(per)
                .enumerate()
                .map(|(t, lo)| {
                    scope.spawn(move || {
                        self.prepare(t, lo);
                        self.rows(olds, lo..(lo + per).min(m))
                    })
                })
                .collect();
            parts
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    }
}

/// Accumulator columns whose block-FMA chains run interleaved ([`MmaInputs::packed_cols`]).
const PACKED_COLS: usize = 4;

/// Below this many products an MMA runs on one thread (a thread costs tens of microseconds).
const PARALLEL_MMA_WORK: usize = 1 << 18;

/// How MMAs are computed, never what they compute: a memo of results shared by the runs of
/// one exploration, the threads one large MMA may use, and whether MMAs are computed ahead.
#[derive(Clone, Debug, Default)]
pub struct MmaExec {
    /// Results of recent MMAs by their exact inputs ([`MmaMemo`]).
    pub memo: Option<std::sync::Arc<MmaMemo>>,
    /// Threads for the rows of one large MMA (0 or 1: the calling thread only).
    pub threads: usize,
    /// Compute each large MMA on another thread from the moment it starts on the tensor pipe
    /// ([`AheadWorker`]), while the simulation goes on; taken at completion only if its
    /// inputs are unchanged, so the results are the same bits. Not with a `memo` (the
    /// schedules of a check take their results from it instead).
    pub ahead: bool,
}

/// The exact inputs of an MMA as words, with their hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoKey {
    hash: u64,
    words: Vec<u64>,
}

impl MemoKey {
    fn new(words: Vec<u64>) -> MemoKey {
        // FNV-style multiply-xor: a cheap filter; equality compares the words.
        let hash = words.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &w| {
            (h ^ w).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29)
        });
        MemoKey { hash, words }
    }
}

/// Results of recent MMAs by their exact inputs (operand values, old accumulator bits,
/// types, arithmetic), oldest dropped first past [`MEMO_WORDS`]. The schedules of a check
/// run one kernel on the same data, so most of their MMAs repeat an earlier schedule's; a
/// hit returns the very bits a recomputation would give.
#[derive(Debug, Default)]
pub struct MmaMemo {
    entries: std::sync::Mutex<std::collections::VecDeque<(MemoKey, Vec<u64>)>>,
    hits: std::sync::atomic::AtomicU64,
}

/// Words (keys and results) an [`MmaMemo`] keeps: 16 MiB.
const MEMO_WORDS: usize = 2 << 20;

impl MmaMemo {
    /// MMAs answered from the memo so far.
    pub fn hits(&self) -> u64 {
        self.hits.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn get(&self, key: &MemoKey) -> Option<Vec<u64>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let r = entries
            .iter()
            .find(|(k, _)| k.hash == key.hash && k == key)
            .map(|(_, r)| r.clone());
        if r.is_some() {
            self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        r
    }

    fn put(&self, key: MemoKey, result: Vec<u64>) {
        let size = key.words.len() + result.len();
        if size > MEMO_WORDS {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.iter().any(|(k, _)| k == &key) {
            return;
        }
        let mut held: usize = entries.iter().map(|(k, r)| k.words.len() + r.len()).sum();
        while held + size > MEMO_WORDS {
            match entries.pop_front() {
                Some((k, r)) => held -= k.words.len() + r.len(),
                None => break,
            }
        }
        entries.push_back((key, result));
    }
}

/// A `cta_group::2` MMA of a CTA pair: CTA r holds A_r [M/2, K] and B_r [K, N/2] in its shared
/// memory and its accumulator rows [M/2, N] in its tensor memory (all at the same addresses in
/// both CTAs); D_r = A_r · [B_0 | B_1] (+ D_r) [docs/semantics.md#clusters-and-cta-pairs].
/// Each CTA's half is answered from `exec`'s memo when the same inputs were computed before
/// (as [`mma`] does).
pub fn mma_pair(
    smem: [&Smem; 2],
    tmem: [&mut Tmem; 2],
    op: &MmaOp,
    arith: &Arith,
    exec: &MmaExec,
) -> OpResult<()> {
    let AOperand::Smem(a) = op.a else {
        return Err(Fault::unsupported("cta_group::2 MMA with A in tensor memory"));
    };
    let (m, k) = last2(a.shape.as_slice());
    let (kb, nh) = last2(op.b.shape.as_slice());
    let (am, n) = last2(op.acc.shape.as_slice());
    if k != kb || am != m || n != 2 * nh {
        return Err(Fault::unsupported(format!(
            "cta_group::2 MMA shapes: A {m}x{k}, B {kb}x{nh}, accumulator {am}x{n} per CTA"
        )));
    }
    let (mu, ku, nhu) = (m as usize, k as usize, nh as usize);
    // [B_0 | B_1] as [N, K] rows.
    let mut bt = vec![0f64; 2 * nhu * ku];
    for (r, sm) in smem.iter().enumerate() {
        let bv = read_smem(sm, &op.b)?;
        for kk in 0..ku {
            for j in 0..nhu {
                bt[(r * nhu + j) * ku + kk] = bv[kk * nhu + j];
            }
        }
    }
    let cells = acc_cells(&op.acc, m, n);
    let acc_bits = op.acc.dtype.bits();
    let params = match arith.block_for(a.dtype) {
        Some(p) => [p.align_bits as u64, p.result_bits as u64],
        None => [u64::MAX, u64::MAX],
    };
    // A pair MMA's key starts with a word no single-CTA key starts with (an accumulator type).
    let head = [
        u64::MAX,
        op.acc.dtype as u64,
        a.dtype as u64,
        op.use_acc as u64,
        m as u64,
        n as u64,
        k as u64,
        params[0],
        params[1],
    ];
    for (sm, tm) in smem.iter().zip(tmem) {
        let av = read_smem(sm, &a)?;
        let olds = if op.use_acc {
            cells
                .iter()
                .map(|&c| tm.read(c, acc_bits))
                .collect::<OpResult<Vec<u64>>>()?
        } else {
            Vec::new()
        };
        let key = exec
            .memo
            .as_ref()
            .map(|_| mma_key(&head, &av, &bt, &[], &[], &olds));
        if let (Some(memo), Some(key)) = (&exec.memo, &key) {
            if let Some(r) = memo.get(key) {
                write_results(tm, &op.acc, &cells, &r, n as usize)?;
                continue;
            }
        }
        let av = Lines::new(&av, mu, ku);
        let btl = Lines::new(&bt, 2 * nhu, ku);
        let mut results = Vec::with_capacity(cells.len());
        for i in 0..mu {
            let arow = av.line(i);
            for j in 0..2 * nhu {
                let x = i * 2 * nhu + j;
                let old = match olds.get(x) {
                    Some(&b) => bits_to_f64(op.acc.dtype, b),
                    None => 0.0,
                };
                results.push(dot(
                    arow,
                    btl.line(j),
                    old,
                    op.use_acc,
                    op.acc.dtype,
                    a.dtype,
                    false,
                    arith,
                ));
            }
        }
        write_results(tm, &op.acc, &cells, &results, n as usize)?;
        if let (Some(memo), Some(key)) = (&exec.memo, key) {
            memo.put(key, results);
        }
    }
    Ok(())
}

/// tcgen05.cp: shared → tensor memory, element by element through both layouts.
pub fn cp(smem: &Smem, tmem: &mut Tmem, src: &SmemView, dst: &TmemView) -> OpResult<()> {
    if src.shape.as_slice() != dst.shape.as_slice() {
        return Err(Fault::unsupported("tcgen05.cp shape mismatch"));
    }
    let shape = src.shape.as_slice();
    let n = src.shape.numel();
    let mut idx = vec![0u32; shape.len()];
    for lin in 0..n {
        crate::value::unravel(lin, shape, &mut idx);
        let bits = smem.read_view(src, &idx)?;
        tmem.write_view(dst, &idx, bits)?;
    }
    Ok(())
}

/// The A operand of a wgmma.
#[derive(Clone, Debug)]
pub enum WgmmaA<'a> {
    Smem(SmemView),
    Regs(&'a Tile),
}

/// wgmma: `acc' = A·B (+ acc)` in f32 registers, one instruction's K at a time.
pub fn wgmma(
    smem: &Smem,
    a: &WgmmaA,
    b: &SmemView,
    acc: &Tile,
    use_acc: bool,
    arith: &Arith,
) -> OpResult<Tile> {
    let (m, k) = match a {
        WgmmaA::Smem(v) => last2(v.shape.as_slice()),
        WgmmaA::Regs(t) => last2(&t.shape),
    };
    let (kb, n) = last2(b.shape.as_slice());
    if kb != k || acc.shape != [m, n] {
        return Err(Fault::unsupported("wgmma shape mismatch"));
    }
    let av: Vec<f64> = match a {
        WgmmaA::Smem(v) => read_smem(smem, v)?,
        WgmmaA::Regs(t) => (0..t.numel()).map(|i| operand(t.dtype, t.bits[i])).collect(),
    };
    let bv = read_smem(smem, b)?;
    let a_dtype = match a {
        WgmmaA::Smem(v) => v.dtype,
        WgmmaA::Regs(t) => t.dtype,
    };
    let (ku, nu) = (k as usize, n as usize);
    let av = Lines::new(&av, m as usize, ku);
    // B as [N, K] columns.
    let bt: Vec<f64> = (0..nu * ku).map(|x| bv[(x % ku) * nu + x / ku]).collect();
    let bt = Lines::new(&bt, nu, ku);
    let mut bits = Vec::with_capacity((m * n) as usize);
    for i in 0..m as usize {
        let row = av.line(i);
        for j in 0..nu {
            let col = bt.line(j);
            let old = if use_acc { acc.f(i * nu + j) } else { 0.0 };
            bits.push(dot(row, col, old, use_acc, acc.dtype, a_dtype, false, arith));
        }
    }
    Ok(Tile {
        dtype: acc.dtype,
        shape: vec![m, n],
        bits,
    })
}

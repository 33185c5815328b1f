//! Tensor-core arithmetic: tcgen05.mma (f16/bf16, tf32, f8f6f4, i8, block-scaled
//! mxf8f6f4/nvf4), tcgen05.cp, and Hopper wgmma.
//!
//! Operands are READ FROM SHARED-MEMORY BITS through the buffer layout ([`crate::layout`]):
//! A is the view `[M, K]` (K-major unless `transposed`), B the view `[K, N]` (MN-major unless
//! `transposed`), so a layout or swizzle bug produces wrong numbers exactly as on hardware.
//! Floating-point products are added into an f32 accumulator as the tensor core does, one
//! block FMA per instruction's K ([`crate::mma_numerics`], measured on the H100; the run's
//! [`crate::mma_numerics::MmaNumerics`] picks the arithmetic per MMA family); other
//! accumulator types take the exact sum rounded once. tf32 operands drop the low 13 mantissa
//! bits of the stored f32 (the tensor core ignores them; measured with the same probe).
//! Block scales: ue8m0 = 2^(e-127) per 32 K-elements, ue4m3 per 16.
//!
//! This module knows memories and views; when an operation runs is the machine's business.

use crate::layout::{self, TmemCell};
use crate::memory::{Smem, Tmem};
use crate::mma_numerics::{self, Arith, Operand, PackedLine, PackedLines};
use crate::trap::{Fault, OpResult};
use crate::value::{bits_to_f64, i64_to_bits, round_to, SmemView, Tile, TmemView};
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
    let addrs = crate::layout::view_addresses(v)
        .ok_or_else(|| Fault::trap(crate::trap::CudaError::IllegalAddress, "shared address overflow"))?;
    let bits = v.dtype.bits();
    let mut out = Vec::with_capacity(addrs.len());
    for (addr, shift) in addrs {
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

fn read_b(smem: &Smem, b: &SmemView, _k: u32, _n: u32) -> OpResult<Vec<f64>> {
    read_smem(smem, b)
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
/// when both lines fit it: the same bits), else the exact sum rounded once.
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
fn acc_cells(v: &TmemView, m: u32, n: u32) -> Vec<TmemCell> {
    if v.shape.len() == 2 && !v.scales {
        layout::tmem_view_cells(v, 0)
    } else {
        (0..m)
            .flat_map(|i| (0..n).map(move |j| layout::tmem_element(v, &[i, j])))
            .collect()
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
pub fn mma(smem: &Smem, tmem: &mut Tmem, op: &MmaOp, arith: &Arith) -> OpResult<()> {
    let (m, k) = last2(op.a.shape());
    let (kb, n) = last2(op.b.shape.as_slice());
    let (am, an) = last2(op.acc.shape.as_slice());
    if k != kb || am != m || an != n {
        return Err(Fault::unsupported(format!(
            "MMA shapes {m}x{k}, {kb}x{n}, {am}x{an}"
        )));
    }
    let av = read_a(smem, tmem, &op.a, m, k)?;
    let bv = read_b(smem, &op.b, k, n)?;
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    let mut av = av;
    // B transposed to [N, K] so every dot product walks contiguous memory.
    let mut bt = vec![0f64; nu * ku];
    for kk in 0..ku {
        for j in 0..nu {
            bt[j * ku + kk] = bv[kk * nu + j];
        }
    }
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
            *q = (crate::layout::tmem_element(&op.acc, &[i as u32, 0]).lane / 32) as usize;
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
    let scaled = op.scales.is_some();
    let a_lines = Lines::new(&av, mu, ku);
    let b_lines = Lines::new(&bt, nu, ku);
    let bq_lines: Vec<Lines> = bt_q
        .iter()
        .map(|b| Lines::new(b, if b.is_empty() { 0 } else { nu }, ku))
        .collect();
    let cells = acc_cells(&op.acc, m, n);
    let acc_bits = op.acc.dtype.bits();
    for i in 0..mu {
        let arow = &av[i * ku..(i + 1) * ku];
        let arow_ops = a_lines.line(i);
        let (bq, bq_op) = if bt_q.is_empty() {
            (&bt, &b_lines)
        } else {
            (&bt_q[row_quarter[i]], &bq_lines[row_quarter[i]])
        };
        for j in 0..nu {
            let bcol = &bq[j * ku..(j + 1) * ku];
            let bcol_ops = bq_op.line(j);
            let idx = [i as u32, j as u32];
            let cell = cells[i * nu + j];
            let bits = if int {
                let mut si = 0i64;
                for (a, b) in arow.iter().zip(bcol) {
                    si = si.wrapping_add((*a as i64).wrapping_mul(*b as i64));
                }
                let old = if op.use_acc {
                    crate::value::bits_to_i64(op.acc.dtype, tmem.read(cell, acc_bits)?)
                } else {
                    0
                };
                i64_to_bits(op.acc.dtype, si.wrapping_add(old))
            } else {
                let old = if op.use_acc {
                    bits_to_f64(op.acc.dtype, tmem.read(cell, acc_bits)?)
                } else {
                    0.0
                };
                dot(
                    arow_ops,
                    bcol_ops,
                    old,
                    op.use_acc,
                    op.acc.dtype,
                    a_dtype,
                    scaled,
                    arith,
                )
            };
            write_acc(tmem, &op.acc, cell, &idx, bits)?;
        }
    }
    Ok(())
}

/// A `cta_group::2` MMA of a CTA pair: CTA r holds A_r [M/2, K] and B_r [K, N/2] in its shared
/// memory and its accumulator rows [M/2, N] in its tensor memory (all at the same addresses in
/// both CTAs); D_r = A_r · [B_0 | B_1] (+ D_r) [PTX.md section 8, seed TIRx page].
pub fn mma_pair(smem: [&Smem; 2], tmem: [&mut Tmem; 2], op: &MmaOp, arith: &Arith) -> OpResult<()> {
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
    let bt = Lines::new(&bt, 2 * nhu, ku);
    let cells = acc_cells(&op.acc, m, n);
    let acc_bits = op.acc.dtype.bits();
    for (sm, tm) in smem.iter().zip(tmem) {
        let av = Lines::new(&read_smem(sm, &a)?, mu, ku);
        for i in 0..mu {
            let arow = av.line(i);
            for j in 0..2 * nhu {
                let idx = [i as u32, j as u32];
                let cell = cells[i * 2 * nhu + j];
                let old = if op.use_acc {
                    bits_to_f64(op.acc.dtype, tm.read(cell, acc_bits)?)
                } else {
                    0.0
                };
                let bits = dot(
                    arow,
                    bt.line(j),
                    old,
                    op.use_acc,
                    op.acc.dtype,
                    a.dtype,
                    false,
                    arith,
                );
                write_acc(tm, &op.acc, cell, &idx, bits)?;
            }
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
    let bv = read_b(smem, b, k, n)?;
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

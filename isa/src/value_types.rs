//! The type vocabulary of the tile IR: register tiles and their layouts, shared and tensor
//! memory buffers, tensor descriptors, and the values an expression can have (`Ty`), with the
//! sizes they carry. The type checker
//! (`typeck`) assigns these types; the operation rules (`rules`), the launch checks and the
//! backends read them. Where an element of a buffer lives is [`crate::placement`]'s.

use crate::types::*;

pub use crate::placement::{
    row_major_bases, scale_cell, scale_matrix_cols, LinearSmem, LinearSmemError, LINEAR_SMEM_MAX_BITS,
    TMEM_QUARTER_LANES,
};

/// The TMEM layout block of a tensor-memory buffer written without `block=`: its last two
/// dimensions, M at most 128.
pub fn default_tmem_block(shape: &[u32]) -> [u32; 2] {
    let m = if shape.len() >= 2 {
        shape[shape.len() - 2]
    } else {
        128
    };
    [m.min(128), shape.last().copied().unwrap_or(1)]
}

/// The reduction of a reducing TMA store (`tma.store DESC[coords], SRC, reduce=OP`, PTX
/// `cp.reduce.async.bulk.tensor` with `.redOp`): each element of the box read from shared
/// memory is combined into the global element it lands on, `new = OP(old, src)`, atomically
/// per element. The element type is the descriptor's; the PTX ISA admits `.add` on f32, f16,
/// bf16, 32-bit integers and u64, `.min`/`.max` on f16, bf16 and 32- and 64-bit integers,
/// `.inc`/`.dec` on u32 and the bitwise operations on 32- and 64-bit integers
/// ([`TmaReduceOp::supports`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TmaReduceOp {
    Add,
    Min,
    Max,
    /// `old >= src ? 0 : old + 1` (unsigned): a wrapping counter, `atom.inc`'s rule.
    Inc,
    /// `old == 0 || old > src ? src : old - 1` (unsigned), `atom.dec`'s rule.
    Dec,
    And,
    Or,
    Xor,
}

impl TmaReduceOp {
    pub const ALL: [TmaReduceOp; 8] = [
        TmaReduceOp::Add,
        TmaReduceOp::Min,
        TmaReduceOp::Max,
        TmaReduceOp::Inc,
        TmaReduceOp::Dec,
        TmaReduceOp::And,
        TmaReduceOp::Or,
        TmaReduceOp::Xor,
    ];

    /// The name written in `.tile` (`reduce=add`) and in PTX (`.add`).
    pub const fn name(self) -> &'static str {
        match self {
            TmaReduceOp::Add => "add",
            TmaReduceOp::Min => "min",
            TmaReduceOp::Max => "max",
            TmaReduceOp::Inc => "inc",
            TmaReduceOp::Dec => "dec",
            TmaReduceOp::And => "and",
            TmaReduceOp::Or => "or",
            TmaReduceOp::Xor => "xor",
        }
    }

    pub fn from_name(name: &str) -> Option<TmaReduceOp> {
        TmaReduceOp::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Whether the PTX ISA defines the reduction on elements of type `d`.
    pub fn supports(self, d: DType) -> bool {
        use DType::*;
        match self {
            TmaReduceOp::Add => matches!(d, F32 | F16 | BF16 | I32 | U32 | I64 | U64),
            TmaReduceOp::Min | TmaReduceOp::Max => matches!(d, F16 | BF16 | I32 | U32 | I64 | U64),
            TmaReduceOp::Inc | TmaReduceOp::Dec => matches!(d, I32 | U32),
            TmaReduceOp::And | TmaReduceOp::Or | TmaReduceOp::Xor => matches!(d, I32 | U32 | I64 | U64),
        }
    }

    /// The new bits of an element of type `d` holding `old` after the reduction of `src` into
    /// it (both the element's bits, zero-extended). Floats add with one rounding to nearest
    /// even; min and max are IEEE minNum/maxNum (a NaN loses to a number). Integer
    /// arithmetic wraps; min, max, inc and dec compare as `d`'s signedness says (inc and dec
    /// as unsigned).
    pub fn apply(self, d: DType, old: u64, src: u64) -> u64 {
        let bits = d.bits();
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let (o, v) = (old & mask, src & mask);
        let signed = |x: u64| -> i64 {
            let sh = 64 - bits;
            ((x << sh) as i64) >> sh
        };
        // Computed in f64 and rounded once to `d`: f64 carries more than twice the significand
        // bits of f32, f16 and bf16 plus two, so the double rounding of a sum is innocuous.
        let float = |f: fn(f64, f64) -> f64| -> u64 {
            match d {
                DType::F32 => (f(f32::from_bits(o as u32) as f64, f32::from_bits(v as u32) as f64) as f32)
                    .to_bits() as u64,
                DType::F16 => half::f16::from_f64(f(
                    half::f16::from_bits(o as u16).to_f64(),
                    half::f16::from_bits(v as u16).to_f64(),
                ))
                .to_bits() as u64,
                DType::BF16 => half::bf16::from_f64(f(
                    half::bf16::from_bits(o as u16).to_f64(),
                    half::bf16::from_bits(v as u16).to_f64(),
                ))
                .to_bits() as u64,
                _ => o,
            }
        };
        let is_signed = matches!(d, DType::I32 | DType::I64 | DType::I16 | DType::I8);
        let out = match self {
            TmaReduceOp::Add if d.is_float() => float(|a, b| a + b),
            TmaReduceOp::Min if d.is_float() => float(f64::min),
            TmaReduceOp::Max if d.is_float() => float(f64::max),
            TmaReduceOp::Add => o.wrapping_add(v),
            TmaReduceOp::Min if is_signed => signed(o).min(signed(v)) as u64,
            TmaReduceOp::Max if is_signed => signed(o).max(signed(v)) as u64,
            TmaReduceOp::Min => o.min(v),
            TmaReduceOp::Max => o.max(v),
            TmaReduceOp::Inc => {
                if o >= v {
                    0
                } else {
                    o + 1
                }
            }
            TmaReduceOp::Dec => {
                if o == 0 || o > v {
                    v
                } else {
                    o - 1
                }
            }
            TmaReduceOp::And => o & v,
            TmaReduceOp::Or => o | v,
            TmaReduceOp::Xor => o ^ v,
        };
        out & mask
    }
}

/// The names of the `N` operations `$ty::ALL`, in order, as a constant array (`name` is a
/// `const fn`).
macro_rules! names_of {
    ($ty:ty, $n:expr) => {{
        let mut names = [""; $n];
        let mut i = 0;
        while i < $n {
            names[i] = <$ty>::ALL[i].name();
            i += 1;
        }
        names
    }};
}

/// The reductions of a reducing TMA store, by name (see [`TmaReduceOp`]).
pub const TMA_REDUCE_OPS: [&str; 8] = names_of!(TmaReduceOp, 8);

/// An operation of `global.atomic` (a read-modify-write, or an atomic read), by its `.tile` name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    Add,
    Max,
    Min,
    And,
    Or,
    Xor,
    Xchg,
    /// Compare-and-swap: stores the value where the old one equals `compare`.
    Cas,
    /// An atomic read (PTX `ld.relaxed`/`ld.acquire`, Triton's `tt.atomic_load`): the old
    /// value, nothing stored; the value operand is not read. Global memory only, with
    /// `sem=relaxed` or `sem=acquire`.
    Load,
}

impl AtomicOp {
    pub const ALL: [AtomicOp; 9] = [
        AtomicOp::Add,
        AtomicOp::Max,
        AtomicOp::Min,
        AtomicOp::And,
        AtomicOp::Or,
        AtomicOp::Xor,
        AtomicOp::Xchg,
        AtomicOp::Cas,
        AtomicOp::Load,
    ];

    /// The name written in `.tile` (`global.atomic add, ...`).
    pub const fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "add",
            AtomicOp::Max => "max",
            AtomicOp::Min => "min",
            AtomicOp::And => "and",
            AtomicOp::Or => "or",
            AtomicOp::Xor => "xor",
            AtomicOp::Xchg => "xchg",
            AtomicOp::Cas => "cas",
            AtomicOp::Load => "load",
        }
    }

    pub fn from_name(name: &str) -> Option<AtomicOp> {
        AtomicOp::ALL.into_iter().find(|o| o.name() == name)
    }
}

/// The memory-ordering semantics of a `global.atomic` (`sem=NAME`), PTX `atom`'s `.sem`
/// qualifier; without `sem=` an atomic is `acq_rel`, Triton's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicSem {
    Relaxed,
    Acquire,
    Release,
    AcqRel,
}

impl AtomicSem {
    pub const ALL: [AtomicSem; 4] = [
        AtomicSem::Relaxed,
        AtomicSem::Acquire,
        AtomicSem::Release,
        AtomicSem::AcqRel,
    ];

    /// The name written in `.tile` and in PTX (`relaxed`, `acquire`, `release`, `acq_rel`).
    pub const fn name(self) -> &'static str {
        match self {
            AtomicSem::Relaxed => "relaxed",
            AtomicSem::Acquire => "acquire",
            AtomicSem::Release => "release",
            AtomicSem::AcqRel => "acq_rel",
        }
    }

    pub fn from_name(name: &str) -> Option<AtomicSem> {
        AtomicSem::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Whether it has acquire semantics.
    pub fn acquires(self) -> bool {
        matches!(self, AtomicSem::Acquire | AtomicSem::AcqRel)
    }

    /// Whether it has release semantics.
    pub fn releases(self) -> bool {
        matches!(self, AtomicSem::Release | AtomicSem::AcqRel)
    }
}

/// The memory scope of a `global.atomic` (`scope=NAME`), PTX `atom`'s `.scope` qualifier: the
/// threads its ordering can synchronise with. Without `scope=` an atomic is `gpu`-scoped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AtomicScope {
    Cta,
    Cluster,
    Gpu,
    Sys,
}

impl AtomicScope {
    pub const ALL: [AtomicScope; 4] = [
        AtomicScope::Cta,
        AtomicScope::Cluster,
        AtomicScope::Gpu,
        AtomicScope::Sys,
    ];

    /// The name written in `.tile` and in PTX (`cta`, `cluster`, `gpu`, `sys`).
    pub const fn name(self) -> &'static str {
        match self {
            AtomicScope::Cta => "cta",
            AtomicScope::Cluster => "cluster",
            AtomicScope::Gpu => "gpu",
            AtomicScope::Sys => "sys",
        }
    }

    pub fn from_name(name: &str) -> Option<AtomicScope> {
        AtomicScope::ALL.into_iter().find(|o| o.name() == name)
    }
}

/// The operations of `global.atomic`, by name (see [`AtomicOp`]).
pub const ATOMIC_OPS: [&str; 9] = names_of!(AtomicOp, 9);

/// Shared-memory layout of a buffer, as the type checker resolves it: a `linear` layout by
/// its offset bases.
pub type SmemLayout = SmemLayoutOf<Vec<Vec<u32>>>;

/// Shared-memory layouts, a `linear` one's bases in the form `L`: as written ([`SmemLayout`])
/// or inverted for placement ([`crate::placement::Layout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SmemLayoutOf<L> {
    /// Row-major, unswizzled.
    Plain,
    /// Gluon's `NVMMASharedLayout`: rows of the innermost dimension padded to the swizzle span
    /// and swizzled by absolute address. `transposed` marks an MN-major MMA operand.
    /// `fp4_padded` is the layout of an fp4 operand of a mixed-precision block-scaled MMA
    /// (`fp4_padded=True`): every 8 bytes of data (16 fp4 values) followed by 8 bytes of
    /// padding, so a row takes twice its data's bytes.
    Nvmma {
        swizzle: Swizzle,
        transposed: bool,
        fp4_padded: bool,
    },
    /// Gluon's `SwizzledSharedLayout(vec, per_phase, max_phase)` (generic ld/st only).
    Swizzled {
        vec: u32,
        per_phase: u32,
        max_phase: u32,
    },
    /// Gluon's `SharedLinearLayout`: bit `i` of an element's offset (in elements from the
    /// view's first byte, unswizzled memory) contributes the coordinates `bases[i]`, XORed
    /// together. What a reshaped or permuted view of a dense buffer has (tutorial 11 views its
    /// packed-block scale factors this way for `tcgen05.cp`). See [`LinearSmem`].
    Linear { bases: L },
}

impl<L> SmemLayoutOf<L> {
    /// The NVMMA swizzle; none for the other layouts.
    pub fn swizzle(&self) -> Swizzle {
        match self {
            SmemLayoutOf::Nvmma { swizzle, .. } => *swizzle,
            _ => Swizzle::None,
        }
    }
    /// An NVMMA layout of an MN-major operand.
    pub fn transposed(&self) -> bool {
        matches!(self, SmemLayoutOf::Nvmma { transposed: true, .. })
    }
    /// An NVMMA layout with every 8 data bytes followed by 8 bytes of padding.
    pub fn fp4_padded(&self) -> bool {
        matches!(self, SmemLayoutOf::Nvmma { fp4_padded: true, .. })
    }
    /// The same layout with a `linear` one replaced by `linear(bases)`.
    pub fn map_linear<M>(&self, linear: impl FnOnce(&L) -> SmemLayoutOf<M>) -> SmemLayoutOf<M> {
        match *self {
            SmemLayoutOf::Plain => SmemLayoutOf::Plain,
            SmemLayoutOf::Nvmma {
                swizzle,
                transposed,
                fp4_padded,
            } => SmemLayoutOf::Nvmma {
                swizzle,
                transposed,
                fp4_padded,
            },
            SmemLayoutOf::Swizzled {
                vec,
                per_phase,
                max_phase,
            } => SmemLayoutOf::Swizzled {
                vec,
                per_phase,
                max_phase,
            },
            SmemLayoutOf::Linear { ref bases } => linear(bases),
        }
    }
}

impl SmemLayout {
    /// `linear([[c0, c1, ..], ..])`: the offset bases of a `linear` layout, written as integer
    /// literals (the one argument of the call). `None` when the argument is not a list of
    /// lists of non-negative integer literals.
    pub fn linear_from_args(args: &[crate::ir::Arg]) -> Option<SmemLayout> {
        use crate::ir::ExprKind;
        let [a] = args else { return None };
        if a.key.is_some() {
            return None;
        }
        let ExprKind::List(items) = &a.value.kind else {
            return None;
        };
        let bases = items
            .iter()
            .map(|b| match &b.kind {
                ExprKind::List(cs) => cs
                    .iter()
                    .map(|c| match c.kind {
                        ExprKind::Int(v) => u32::try_from(v).ok(),
                        _ => None,
                    })
                    .collect::<Option<Vec<u32>>>(),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        Some(SmemLayout::Linear { bases })
    }

    /// Alignment the allocator gives a buffer of this layout: the swizzle period for
    /// swizzled NVMMA layouts (docs/semantics.md#shared-memory-swizzle), else 128 bytes (the TMA
    /// requirement).
    pub fn alignment(&self) -> u32 {
        match self {
            SmemLayout::Nvmma { swizzle, .. } => swizzle.period().max(128),
            _ => 128,
        }
    }
    pub fn describe(&self) -> String {
        match self {
            SmemLayout::Plain => "plain".into(),
            SmemLayout::Nvmma {
                swizzle,
                transposed,
                fp4_padded,
            } => {
                format!(
                    "nvmma({}{}{})",
                    swizzle.bytes(),
                    if *transposed { ", transposed=true" } else { "" },
                    if *fp4_padded { ", fp4_padded=true" } else { "" }
                )
            }
            SmemLayout::Swizzled {
                vec,
                per_phase,
                max_phase,
            } => format!("swizzled({vec}, {per_phase}, {max_phase})"),
            SmemLayout::Linear { bases } => format!("linear({bases:?})"),
        }
    }
}

/// Register-tile layout (how a partition's threads hold a tile). Used by lowering; the
/// functional simulator ignores it except where a rule depends on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TileLayout {
    Blocked {
        spt: Vec<u32>,
        tpw: Vec<u32>,
        wpc: Vec<u32>,
        order: Vec<u32>,
    },
    Slice {
        dim: u32,
        parent: Box<TileLayout>,
    },
    /// One TMEM lane (accumulator row) per thread: `tcgen05.ld 32x32b`.
    Tmem32x32b,
    /// The wgmma accumulator fragment (docs/semantics.md#wgmma).
    Wgmma {
        warps: [u32; 2],
        n: u32,
    },
}

impl TileLayout {
    /// Rank of tiles this layout can describe (None: any).
    pub fn rank(&self) -> Option<usize> {
        match self {
            TileLayout::Blocked { spt, .. } => Some(spt.len()),
            TileLayout::Slice { parent, .. } => parent.rank().map(|r| r.saturating_sub(1)),
            TileLayout::Tmem32x32b | TileLayout::Wgmma { .. } => Some(2),
        }
    }
}

/// A TMA descriptor parameter's static part (global shape and strides come at launch).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DescTy {
    pub dtype: DType,
    pub block: Vec<u32>,
    pub layout: SmemLayout,
    pub oob: OobFill,
    /// `elementStrides` of the tensor map, one per dimension (outermost first, all 1 unless
    /// `elem_strides=[...]` is given).
    pub elem_strides: Vec<u32>,
}

impl DescTy {
    /// The box a copy moves: `ceil(block / stride)` elements in every dimension but the
    /// innermost, where a stride has no effect (`INTERLEAVE_NONE`) [docs/semantics.md#tma, H100].
    pub fn box_shape(&self) -> Vec<u32> {
        traversed_box(&self.block, &self.elem_strides)
    }
    /// Bytes one copy moves and completes on its barrier (Gluon's `block_type.nbytes` when
    /// every stride is 1).
    pub fn nbytes(&self) -> u64 {
        (self.box_shape().iter())
            .fold(1u64, |a, &d| a.saturating_mul(d as u64))
            .saturating_mul(self.dtype.bits() as u64)
            / 8
    }
}

/// `ceil(block[k] / strides[k])` for every dimension but the innermost (see
/// [`DescTy::box_shape`]); a missing stride counts as 1.
pub fn traversed_box(block: &[u32], strides: &[u32]) -> Vec<u32> {
    let r = block.len();
    block
        .iter()
        .enumerate()
        .map(|(k, &b)| {
            let s = strides.get(k).copied().unwrap_or(1).max(1);
            if k + 1 == r {
                b
            } else {
                b.div_ceil(s)
            }
        })
        .collect()
}

/// A shared-memory buffer or view of one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SmemTy {
    pub dtype: DType,
    pub shape: Vec<u32>,
    pub layout: SmemLayout,
    /// The allocation this view lies in.
    pub alloc: usize,
}

/// A tensor-memory buffer or view.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TmemTy {
    pub dtype: DType,
    pub shape: Vec<u32>,
    pub block: [u32; 2],
    pub col_stride: u32,
    pub scales: bool,
    pub alloc: usize,
}

impl TmemTy {
    /// What placing this buffer's elements needs ([`crate::placement::TmemLayout`]).
    pub fn placement(&self) -> crate::placement::TmemLayout {
        crate::placement::TmemLayout {
            dtype: self.dtype,
            block: self.block,
            col_stride: self.col_stride,
            scales: self.scales,
        }
    }
    /// TMEM columns one `[M, N]` matrix of this type occupies.
    pub fn matrix_cols(&self) -> u32 {
        u32::try_from(self.placement().matrix_cols(&self.shape)).unwrap_or(u32::MAX)
    }
    /// TMEM columns of the whole buffer.
    pub fn cols(&self) -> u32 {
        let outer: u32 = if self.shape.len() > 2 {
            self.shape[..self.shape.len() - 2]
                .iter()
                .fold(1u32, |a, &b| a.saturating_mul(b))
        } else {
            1
        };
        outer.saturating_mul(self.matrix_cols())
    }
}

/// A register tile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileTy {
    pub dtype: DType,
    pub shape: Vec<u32>,
    pub layout: Option<TileLayout>,
}

/// The type of a value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Scalar(ScalarTy),
    Tile(TileTy),
    Smem(SmemTy),
    /// `count: Some(n)` an array of n barriers; `None` one barrier.
    Mbar {
        count: Option<u32>,
        alloc: usize,
    },
    Tmem(TmemTy),
    Desc(DescTy),
    Ptr(DType),
    Tuple(Vec<Ty>),
    /// A layout or element-type name used as an argument.
    Layout(TileLayout),
    DType(DType),
}

impl Ty {
    pub fn describe(&self) -> String {
        match self {
            Ty::Scalar(s) => s.name().to_string(),
            Ty::Tile(t) => format!("tile<{}{:?}>", t.dtype, t.shape),
            Ty::Smem(s) => format!("smem<{}{:?}, {}>", s.dtype, s.shape, s.layout.describe()),
            Ty::Mbar { count: Some(n), .. } => format!("mbar<{n}>"),
            Ty::Mbar { count: None, .. } => "mbar".into(),
            Ty::Tmem(t) => format!("tmem<{}{:?}>", t.dtype, t.shape),
            Ty::Desc(d) => format!("tensor_desc<{}{:?}>", d.dtype, d.block),
            Ty::Ptr(d) => format!("ptr({d})"),
            Ty::Tuple(ts) => format!(
                "({})",
                ts.iter().map(|t| t.describe()).collect::<Vec<_>>().join(", ")
            ),
            Ty::Layout(_) => "layout".into(),
            Ty::DType(d) => format!("dtype {d}"),
        }
    }
    pub fn is_scalar(&self) -> bool {
        matches!(self, Ty::Scalar(_))
    }
    pub fn is_int_scalar(&self) -> bool {
        matches!(self, Ty::Scalar(ScalarTy::I32 | ScalarTy::I64 | ScalarTy::I1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values worked by hand from the PTX ISA's definitions of `.redOp` (`atom`'s rules for
    /// `.inc` and `.dec`).
    #[test]
    fn tma_reductions_compute_the_ptx_rules() {
        use TmaReduceOp::*;
        let f = |x: f32| x.to_bits() as u64;
        assert_eq!(Add.apply(DType::F32, f(1.5), f(-4.0)), f(-2.5));
        // One rounding: 1 + 2^-24 rounds to even (1.0) in f32.
        assert_eq!(Add.apply(DType::F32, f(1.0), f(2f32.powi(-24))), f(1.0));
        let h = |x: f32| half::f16::from_f32(x).to_bits() as u64;
        assert_eq!(Add.apply(DType::F16, h(2048.0), h(1.0)), h(2048.0));
        assert_eq!(Max.apply(DType::F16, h(-1.0), h(0.5)), h(0.5));
        assert_eq!(
            Min.apply(DType::BF16, 0x7fc0, half::bf16::from_f32(3.0).to_bits() as u64),
            0x4040
        );
        // Integers: wrapping add, signed and unsigned orders.
        let i = |x: i32| x as u32 as u64;
        assert_eq!(Add.apply(DType::I32, i(i32::MAX), i(1)), i(i32::MIN));
        assert_eq!(Min.apply(DType::I32, i(-3), i(2)), i(-3));
        assert_eq!(Min.apply(DType::U32, i(-3), i(2)), 2);
        assert_eq!(Max.apply(DType::I64, (-5i64) as u64, 7), 7);
        // inc: a counter wrapping to 0 once it reaches the operand.
        assert_eq!(Inc.apply(DType::U32, 3, 5), 4);
        assert_eq!(Inc.apply(DType::U32, 5, 5), 0);
        // dec: from 0, or above the operand, back to the operand.
        assert_eq!(Dec.apply(DType::U32, 0, 5), 5);
        assert_eq!(Dec.apply(DType::U32, 9, 5), 5);
        assert_eq!(Dec.apply(DType::U32, 4, 5), 3);
        assert_eq!(Xor.apply(DType::U64, 0b1100, 0b1010), 0b0110);
        assert_eq!(And.apply(DType::I32, i(-1), 0xf0), 0xf0);
        assert_eq!(Or.apply(DType::I32, 1, 2), 3);
        for r in TmaReduceOp::ALL {
            assert_eq!(TmaReduceOp::from_name(r.name()), Some(r));
        }
        assert!(!Max.supports(DType::F32) && Add.supports(DType::F32) && !Inc.supports(DType::I64));
    }
}

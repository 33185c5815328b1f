//! The tile IR: one kernel per `.tile` file.
//!
//! The IR is plain data. A kernel holds compile-time constants, parameters, named
//! register-tile layouts, a body of structured statements and an optional launch spec.
//! Operations ([`OpKind`]) are typed records whose operands are [`Expr`]s: a value name,
//! a scalar expression, a view (`bufs[i]`, `tm[0:128, 256:384]`), a descriptor with
//! coordinates (`desc[x, y]`) or a type (`f16[128, 64]`). What an operand must be is
//! decided by the type checker ([`crate::typeck`]), never by the parser, so the printer and
//! the parser stay small and exactly inverse.
//!
//! Spans never take part in equality; comments do (so that `bwsim fmt` keeps them). Nor do
//! node ids ([`crate::ids`]): operations, expressions, names and statements carry typed ids
//! that [`Kernel::number_nodes`] assigns, by which the checker's results are looked up.

pub use crate::ids::{ExprId, Id, IdentId, OpId, StmtId};
use crate::span::Span;
use crate::types::Target;
use serde::Serialize;

/// A name with the span where it was written.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Ident {
    pub name: String,
    pub span: Span,
    /// This name's id in the kernel's numbering ([`Kernel::number_nodes`]).
    #[serde(skip)]
    pub id: IdentId,
}

impl Ident {
    pub fn new(name: impl Into<String>) -> Ident {
        Ident::spanned(name, Span::DUMMY)
    }
    pub fn spanned(name: impl Into<String>, span: Span) -> Ident {
        Ident {
            name: name.into(),
            span,
            id: Id::UNSET,
        }
    }
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum UnOp {
    Neg,
    Not,
}

/// Binary operators, in the precedence classes of [`BinOp::precedence`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitOr,
    BitXor,
    BitAnd,
    Shl,
    Shr,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinOp {
    pub const ALL: [BinOp; 18] = [
        BinOp::Or,
        BinOp::And,
        BinOp::Eq,
        BinOp::Ne,
        BinOp::Lt,
        BinOp::Le,
        BinOp::Gt,
        BinOp::Ge,
        BinOp::BitOr,
        BinOp::BitXor,
        BinOp::BitAnd,
        BinOp::Shl,
        BinOp::Shr,
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
    ];
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::BitAnd => "&",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }
    /// The truth of the comparison `x OP y` (`==`, `!=`, `<`, `<=`, `>`, `>=`), with a NaN
    /// unequal to everything and unordered, as IEEE 754 compares; `None` for an operator that
    /// is not a comparison. The one definition the constant folder, the simulator and the PTX
    /// backend's folding share.
    pub fn compare<T: PartialOrd>(self, x: T, y: T) -> Option<bool> {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let o = x.partial_cmp(&y);
        Some(match self {
            BinOp::Eq => o == Some(Equal),
            BinOp::Ne => o != Some(Equal),
            BinOp::Lt => o == Some(Less),
            BinOp::Le => matches!(o, Some(Less | Equal)),
            BinOp::Gt => o == Some(Greater),
            BinOp::Ge => matches!(o, Some(Greater | Equal)),
            _ => return None,
        })
    }
    /// Binding strength; all binary operators are left-associative.
    /// Comparisons bind looser than bit operations (unlike C, like Rust), so
    /// `i // n & 1` style phase arithmetic reads as written.
    pub fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::And => 2,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 3,
            BinOp::BitOr => 4,
            BinOp::BitXor => 5,
            BinOp::BitAnd => 6,
            BinOp::Shl | BinOp::Shr => 7,
            BinOp::Add | BinOp::Sub => 8,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 9,
        }
    }
    pub fn is_comparison(self) -> bool {
        self.precedence() == 3
    }
}

/// An expression with its span.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
    /// This expression's id in the kernel's numbering ([`Kernel::number_nodes`]).
    #[serde(skip)]
    pub id: ExprId,
}

/// A call argument: positional or `key=value`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Arg {
    pub key: Option<Ident>,
    pub value: Expr,
}

/// One item inside `x[...]`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum IndexItem {
    /// `i`: a (possibly dynamic) index or coordinate.
    Expr(Expr),
    /// `a:b`, `:b`, `a:`, `:`: a constant range.
    Slice(Option<Expr>, Option<Expr>),
    /// `None`: a new axis of extent 1 (Gluon's `x[:, None]`).
    NewAxis,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum ExprKind {
    /// Integer literal (never negative: `-3` is `Neg(3)`).
    Int(i64),
    /// Float literal (finite, non-negative).
    Float(f64),
    Bool(bool),
    Str(String),
    /// A value, constant, parameter, layout name, element type or target name.
    Name(String),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `f(args)`: a built-in function (see [`crate::typeck`] for the list).
    Call(String, Vec<Arg>),
    /// `x[items]`: view of a buffer, coordinates of a descriptor, a tile type `f16[...]`.
    Index(Box<Expr>, Vec<IndexItem>),
    /// `x.field` (`desc.shape`, `desc.nbytes`, `bufs.shape`).
    Field(Box<Expr>, String),
    /// `[a, b, c]`.
    List(Vec<Expr>),
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr {
            kind,
            span,
            id: Id::UNSET,
        }
    }
    pub fn int(v: i64) -> Expr {
        if v < 0 {
            Expr::new(
                ExprKind::Unary(UnOp::Neg, Box::new(Expr::int(v.saturating_neg()))),
                Span::DUMMY,
            )
        } else {
            Expr::new(ExprKind::Int(v), Span::DUMMY)
        }
    }
    pub fn name(n: &str) -> Expr {
        Expr::new(ExprKind::Name(n.to_string()), Span::DUMMY)
    }
    pub fn bool(b: bool) -> Expr {
        Expr::new(ExprKind::Bool(b), Span::DUMMY)
    }
    pub fn call(f: &str, args: Vec<Expr>) -> Expr {
        Expr::new(
            ExprKind::Call(
                f.to_string(),
                args.into_iter().map(|value| Arg { key: None, value }).collect(),
            ),
            Span::DUMMY,
        )
    }
    pub fn binary(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::new(ExprKind::Binary(op, Box::new(a), Box::new(b)), Span::DUMMY)
    }
    pub fn index(base: Expr, items: Vec<Expr>) -> Expr {
        Expr::new(
            ExprKind::Index(Box::new(base), items.into_iter().map(IndexItem::Expr).collect()),
            Span::DUMMY,
        )
    }
    pub fn list(items: Vec<Expr>) -> Expr {
        Expr::new(ExprKind::List(items), Span::DUMMY)
    }
    /// The name, if this expression is a bare name.
    pub fn as_name(&self) -> Option<&str> {
        match &self.kind {
            ExprKind::Name(n) => Some(n),
            _ => None,
        }
    }
}

/// Declares every operation: its `.tile` name, its positional operands (required, in
/// order) and its keyword operands (optional). Generates [`OpKind`] and the conversions
/// the parser and printer use, so an operation's syntax is defined exactly once. [`OpKind`]
/// is generic over its operand type so a later stage (the simulator's lowered program) keeps
/// the same operation shape with its own operands, converted by [`OpKind::try_map`].
/// A row prefixed with `@cfg(PREDICATE)` exists only where the predicate holds (the
/// `probe-op` feature's row).
macro_rules! define_ops {
    ($( $(#[$doc:meta])* $(@cfg($cfg:meta))? $variant:ident = $name:literal ( $($pos:ident),* ; $($kw:ident),* ) ),* $(,)?) => {
        /// Every operation of the IR. Operand meaning per variant is documented on it and
        /// enforced by the type checker. `E` is the operand type: [`Expr`] in the IR.
        #[derive(Clone, Debug, PartialEq, Serialize)]
        pub enum OpKind<E = Expr> {
            $( $(#[$doc])* $(#[cfg($cfg)])? $variant { $($pos: E,)* $($kw: Option<E>,)* }, )*
        }

        impl OpKind {
            /// All operation names, as written in `.tile` files.
            pub const NAMES: &'static [&'static str] = &[$( $(#[cfg($cfg)])? $name ),*];

            /// Positional and keyword operand names of the operation called `name`.
            pub fn signature(name: &str) -> Option<(&'static [&'static str], &'static [&'static str])> {
                match name {
                    $( $(#[cfg($cfg)])? $name => Some((&[$(stringify!($pos)),*], &[$(stringify!($kw)),*])), )*
                    _ => None,
                }
            }

            /// Build an operation from its name and written operands.
            pub fn from_parts(name: &str, pos: Vec<Expr>, kw: Vec<(Ident, Expr)>) -> Result<OpKind, OpShapeError> {
                match name {
                    $( $(#[cfg($cfg)])? $name => {
                        let expected: &[&str] = &[$(stringify!($pos)),*];
                        if pos.len() != expected.len() {
                            return Err(OpShapeError::Arity { op: $name, expected, found: pos.len() });
                        }
                        #[allow(unused_mut, unused_variables)]
                        let mut it = pos.into_iter();
                        $( let Some($pos) = it.next() else { return Err(OpShapeError::Arity { op: $name, expected, found: 0 }) }; )*
                        $( let mut $kw: Option<Expr> = None; )*
                        for pair in kw {
                            #[allow(unused_variables)]
                            let (k, v) = pair;
                            match k.name.as_str() {
                                $( stringify!($kw) => {
                                    if $kw.is_some() {
                                        return Err(OpShapeError::DuplicateKeyword { op: $name, key: k });
                                    }
                                    $kw = Some(v);
                                } )*
                                _ => return Err(OpShapeError::UnknownKeyword {
                                    op: $name, key: k, allowed: &[$(stringify!($kw)),*],
                                }),
                            }
                        }
                        Ok(OpKind::$variant { $($pos,)* $($kw,)* })
                    } )*
                    _ => Err(OpShapeError::UnknownOp),
                }
            }
        }

        impl<E> OpKind<E> {
            /// The `.tile` name of this operation.
            pub fn name(&self) -> &'static str {
                match self { $( $(#[cfg($cfg)])? OpKind::$variant { .. } => $name, )* }
            }

            /// The operation's operands as written: positional ones, then keyword ones that are present.
            pub fn to_parts(&self) -> (Vec<&E>, Vec<(&'static str, &E)>) {
                match self {
                    $( $(#[cfg($cfg)])? OpKind::$variant { $($pos,)* $($kw,)* } => {
                        #[allow(unused_mut)]
                        let mut kws: Vec<(&'static str, &E)> = Vec::new();
                        $( if let Some(e) = $kw { kws.push((stringify!($kw), e)); } )*
                        (vec![$($pos),*], kws)
                    } )*
                }
            }

            /// Mutable access to every operand expression (for rewriting passes).
            pub fn operands_mut(&mut self) -> Vec<&mut E> {
                match self {
                    $( $(#[cfg($cfg)])? OpKind::$variant { $($pos,)* $($kw,)* } => {
                        #[allow(unused_mut)]
                        let mut v: Vec<&mut E> = vec![$($pos),*];
                        $( if let Some(e) = $kw { v.push(e); } )*
                        v
                    } )*
                }
            }

            /// The same operation with every operand converted by `f`, which is given the
            /// operand's name (`"bar"`, `"layout"`, ...) and may return `None` for an operand
            /// the target has no counterpart for (a layout or type operand that is not a
            /// value): a keyword operand is then left out, while a positional one makes the
            /// operation unconvertible (`Ok(None)`). The first error of `f` is returned.
            pub fn try_map<'a, F, X>(
                &'a self,
                mut f: impl FnMut(&'static str, &'a E) -> Result<Option<F>, X>,
            ) -> Result<Option<OpKind<F>>, X> {
                Ok(Some(match self {
                    $( $(#[cfg($cfg)])? OpKind::$variant { $($pos,)* $($kw,)* } => OpKind::$variant {
                        $( $pos: match f(stringify!($pos), $pos)? {
                            Some(v) => v,
                            None => return Ok(None),
                        }, )*
                        $( $kw: match $kw {
                            Some(e) => f(stringify!($kw), e)?,
                            None => None,
                        }, )*
                    }, )*
                }))
            }
        }
    };
}

define_ops! {
    /// `smem.alloc DTYPE[dims], LAYOUT` → shared-memory buffer. LAYOUT: `nvmma(swizzle[, transposed=true])`,
    /// `plain`, or `swizzled(vec, per_phase, max_phase)`. Lives from here to its last use in its block.
    SmemAlloc = "smem.alloc" (ty, layout; align),
    /// `smem.reinterpret VIEW, DTYPE[dims], LAYOUT` → the same bytes seen with another type and layout.
    SmemReinterpret = "smem.reinterpret" (src, ty, layout;),
    /// `mbar.alloc N` → an array of N mbarriers (8 bytes each, 8-byte aligned).
    MbarAlloc = "mbar.alloc" (count; offset),
    /// `tmem.alloc DTYPE[dims], block=[M, N], col_stride=S` → tensor-memory buffer (power-of-two columns).
    /// `scales=true` gives the block-scaled MMA scale-factor layout; `manual=true` requires `tmem.dealloc`.
    TmemAlloc = "tmem.alloc" (ty; block, col_stride, scales, manual),
    /// `tmem.reinterpret VIEW, DTYPE[dims], block=[M, N], col_stride=S` → the same tensor-memory
    /// columns, from the view's first column, seen with another type and layout (Gluon's
    /// `_reinterpret`: attention's P written over S).
    TmemReinterpret = "tmem.reinterpret" (src, ty; block, col_stride),
    /// `tmem.dealloc BUF`: free a `manual=true` allocation.
    TmemDealloc = "tmem.dealloc" (buf;),
    /// `tma.load DESC[coords], DST, BAR`: global → shared tile copy completing its bytes on BAR.
    /// `multicast=MASK` (an integer, bit r for cluster rank r): the box is read once and lands
    /// at DST's offsets in every CTA of MASK, each completing its bytes on its own BAR
    /// (`.multicast::cluster`). `bar_cta=R`: the bytes complete on BAR in CTA R of this CTA's
    /// pair instead (`.cta_group::2`, the barrier of the pair's leader); with both, the bytes
    /// landing in CTA t complete on BAR of the CTA at R's place in t's own pair,
    /// `(t & ~1) | (R & 1)`.
    TmaLoad = "tma.load" (src, dst, bar; pred, multicast, bar_cta),
    /// `tma.store DESC[coords], SRC`: shared → global tile copy joining the current bulk group.
    /// `reduce=OP` (`add`, `min`, `max`, `inc`, `dec`, `and`, `or`, `xor`): each element is
    /// combined into the global one it lands on instead of replacing it
    /// (`cp.reduce.async.bulk.tensor`, Gluon's `tma.async_atomic_add` and friends).
    TmaStore = "tma.store" (dst, src; pred, reduce),
    /// `tma.store_wait N`: wait until at most N bulk groups still read shared memory
    /// (`wait_group.read`, as Gluon); `full=true` also waits for their global writes.
    TmaStoreWait = "tma.store_wait" (pendings; full),
    /// `tma.gather DESC[x_offsets, y], DST, BAR`: rows `x_offsets` (an i32 tile) of columns `y..y+BLOCK_Y`.
    TmaGather = "tma.gather" (src, dst, bar; pred),
    /// `tma.scatter DESC[x_offsets, y], SRC`.
    TmaScatter = "tma.scatter" (dst, src; pred),
    /// `tma.make_desc PTR, OFFSET, [DIMS], [STRIDES], tensor_desc(DTYPE[block], LAYOUT)` → a
    /// descriptor built on the device (Gluon's `tma.make_tensor_descriptor`): its global base
    /// is element OFFSET of PTR, its dimensions DIMS and the byte strides of its outer
    /// dimensions STRIDES (both outermost first; the innermost dimension is contiguous). The
    /// tensor map is written through the generic proxy and released at GPU scope
    /// (`tensormap.replace` on a copy in shared memory, then `tensormap.cp_fenceproxy ...
    /// .release.gpu`); a TMA copy through it reads it through the tensormap proxy, so the CTA
    /// acquires it first (`tma.desc_acquire`).
    TmaMakeDesc = "tma.make_desc" (ptr, offset, shape, strides, ty;),
    /// `tma.desc_acquire DESC`: `fence.proxy.tensormap::generic.acquire.gpu` on DESC's tensor
    /// map, after which the CTA's TMA copies through DESC read the map `tma.make_desc` wrote.
    TmaDescAcquire = "tma.desc_acquire" (desc;),
    /// `mbar.init BAR, COUNT`.
    MbarInit = "mbar.init" (bar, count;),
    /// `mbar.expect BAR, BYTES`: `mbarrier.arrive.expect_tx` (Gluon's `mbarrier.expect`): expect BYTES, then arrive once.
    /// `cta=R`: on the same barrier in CTA R of the cluster (`.release.cluster.shared::cluster`).
    MbarExpect = "mbar.expect" (bar, bytes; pred, cta),
    /// `mbar.expect_tx BAR, BYTES`: add BYTES to the tx-count without arriving.
    MbarExpectTx = "mbar.expect_tx" (bar, bytes; pred),
    /// `mbar.complete_tx BAR, BYTES`: subtract BYTES from the tx-count (what TMA does as bytes land).
    MbarCompleteTx = "mbar.complete_tx" (bar, bytes; pred),
    /// `mbar.arrive BAR[, count=N][, pred=P][, cta=R]`. With `cta=R` the arrival lands on the
    /// same barrier in CTA R of the cluster (`mapa` + `mbarrier.arrive.release.cluster.shared::cluster`),
    /// releasing this partition's earlier accesses at cluster scope.
    MbarArrive = "mbar.arrive" (bar; count, pred, cta),
    /// `mbar.wait BAR, PHASE`: block until the phase with parity PHASE has completed.
    MbarWait = "mbar.wait" (bar, phase;),
    /// `mbar.test_wait BAR, PHASE` → i1, never blocks.
    MbarTestWait = "mbar.test_wait" (bar, phase;),
    /// `mbar.invalidate BAR`.
    MbarInvalidate = "mbar.invalidate" (bar;),
    /// `fence.async_shared`: `fence.proxy.async.shared::cta`.
    FenceAsyncShared = "fence.async_shared" (;),
    /// `fence.mbarrier_init`: `fence.mbarrier_init.release.cluster`.
    FenceMbarrierInit = "fence.mbarrier_init" (;),
    /// `tcgen05.fence_before`: `tcgen05.fence::before_thread_sync`.
    Tcgen05FenceBefore = "tcgen05.fence_before" (;),
    /// `tcgen05.fence_after`: `tcgen05.fence::after_thread_sync`.
    Tcgen05FenceAfter = "tcgen05.fence_after" (;),
    /// `tcgen05.mma A, B, ACC, use_acc=U`: ACC (tmem, f32) = A·B (+ ACC). A: smem [M, K] or tmem; B: smem [K, N].
    /// With `cta_group=2` the operands are this CTA's halves of a CTA pair (cluster of 2):
    /// A [M/2, K], B [K, N/2], ACC [M/2, N]; the even CTA issues the pair's M x N MMA.
    Tcgen05Mma = "tcgen05.mma" (a, b, acc; use_acc, pred, cta_group),
    /// `tcgen05.mma_scaled A, B, ACC, A_SCALE, B_SCALE, use_acc=U`: block-scaled fp8/fp6/fp4 with scale factors in tmem.
    Tcgen05MmaScaled = "tcgen05.mma_scaled" (a, b, acc, a_scale, b_scale; use_acc, pred, cta_group),
    /// `tcgen05.cp SRC, DST`: shared → tensor memory copy on the tensor pipe.
    Tcgen05Cp = "tcgen05.cp" (src, dst;),
    /// `tcgen05.commit BAR`: BAR receives one arrival once every earlier tcgen05 op of this partition completed.
    /// `multicast=MASK`: the arrival lands on BAR in every CTA of MASK (bit r for cluster rank
    /// r, `.multicast::cluster`). With `cta_group=2` and no mask, both CTAs of the pair.
    Tcgen05Commit = "tcgen05.commit" (bar; pred, cta_group, multicast),
    /// `tmem.load BUF[, layout=L]` → register tile (`tcgen05.ld` + `wait::ld`).
    TmemLoad = "tmem.load" (src; layout),
    /// `tmem.store BUF, VALUE` (`tcgen05.st` + `wait::st`).
    TmemStore = "tmem.store" (dst, value;),
    /// `wgmma A, B, ACC, use_acc=U` → the accumulator tile, in flight until `wgmma.wait`.
    Wgmma = "wgmma" (a, b, acc; use_acc),
    /// `wgmma.wait N`: at most N wgmma groups of this partition stay in flight.
    WgmmaWait = "wgmma.wait" (pendings;),
    /// `smem.load BUF, layout=L` → register tile.
    /// `cta=R` reads the same buffer in CTA R of the cluster (distributed shared memory:
    /// `mapa.shared::cluster` + `ld.shared::cluster`).
    SmemLoad = "smem.load" (src; layout, cta),
    /// `smem.store BUF, VALUE[, cta=R]`; `cta=R` writes the same buffer in CTA R of the
    /// cluster (`mapa.shared::cluster` + `st.shared::cluster`).
    SmemStore = "smem.store" (dst, value; cta),
    /// `smem.gather BUF, INDEX, AXIS` → tile shaped and laid out as INDEX (i32), of BUF's type:
    /// element `p` is BUF at `p` with coordinate AXIS replaced by `INDEX[p]` (Gluon's
    /// `shared_memory_descriptor.gather`; one `ld.shared` per element).
    SmemGather = "smem.gather" (src, index, axis;),
    /// `smem.scatter BUF, INDEX, VALUE, AXIS`: BUF at `p` with coordinate AXIS replaced by
    /// `INDEX[p]` receives `VALUE[p]` (one `st.shared` per element; duplicate targets keep one
    /// of their values).
    SmemScatter = "smem.scatter" (dst, index, value, axis;),
    /// `smem.atomic OP, BUF, INDEX, VALUE, AXIS[, mask=M]` → the old values (0 where masked off):
    /// [`SmemScatter`]'s targets updated by one atomic read-modify-write per element, OP one
    /// of `add`, `max`, `min`, `and`, `or`, `xor`, `xchg` (`atom.shared`).
    SmemAtomic = "smem.atomic" (op, dst, index, value, axis; mask),
    /// `global.load PTR, OFFSETS[, mask=M][, other=V]` → tile; OFFSETS is an integer tile of element offsets.
    GlobalLoad = "global.load" (ptr, offsets; mask, other),
    /// `global.store PTR, OFFSETS, VALUE[, mask=M]`.
    GlobalStore = "global.store" (ptr, offsets, value; mask),
    /// `global.atomic OP, PTR, OFFSETS, VALUE[, mask=M]` → the old values: one atomic
    /// read-modify-write per element, OP one of `add`, `max`, `min`, `and`, `or`, `xor`, `xchg`;
    /// `global.atomic cas, PTR, OFFSETS, VALUE, compare=C` stores VALUE where the old value
    /// equals C (compare-and-swap). `sem=` (`relaxed`, `acquire`, `release`, `acq_rel`) and
    /// `scope=` (`cta`, `cluster`, `gpu`, `sys`) give its memory ordering, PTX `atom.SEM.SCOPE`;
    /// by default `acq_rel` at `gpu` scope, as Triton's `atomic_*`.
    GlobalAtomic = "global.atomic" (op, ptr, offsets, value; mask, compare, sem, scope),
    /// `cp.async DST, PTR, OFFSETS[, mask=M]`: each thread copies its elements of the global
    /// tensor at PTR + OFFSETS into the same positions of the shared view DST, asynchronously
    /// (`cp.async`); masked elements are written as zeros. The copies join the partition's open
    /// group; they are visible once a `cp.async.wait` retires that group.
    CpAsync = "cp.async" (dst, ptr, offsets; mask),
    /// `cp.async.commit`: close the partition's open group of `cp.async` copies
    /// (`cp.async.commit_group`).
    CpAsyncCommit = "cp.async.commit" (;),
    /// `cp.async.wait N`: wait until at most N committed groups of the partition are in flight
    /// (`cp.async.wait_group N`); the older groups' copies are then visible to the partition.
    CpAsyncWait = "cp.async.wait" (pendings;),
    /// `cp.async.arrive BAR[, noinc=true]`: BAR receives one arrival per thread of the
    /// partition once every `cp.async` the partition issued before completes
    /// (`cp.async.mbarrier.arrive[.noinc].shared::cta.b64`, Gluon's
    /// `async_copy.mbarrier_arrive`). Without `noinc` each thread first adds one to the
    /// barrier's pending count, so that the arrival makes no net change to it and the phase
    /// still needs its other arrivals; with `noinc=true` the arrivals count towards the
    /// barrier's expected count.
    CpAsyncArrive = "cp.async.arrive" (bar; noinc),
    /// `clc.try_cancel RESULT, BAR`: cluster launch control (Blackwell): ask the hardware to
    /// cancel the launch of a cluster that has not started yet, asynchronously; a 16-byte
    /// response lands in RESULT (a 16-byte shared buffer) and completes 16 bytes on BAR
    /// (`clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128`).
    /// `multicast=true` writes the response into every CTA of the cluster.
    ClcTryCancel = "clc.try_cancel" (result, bar; multicast),
    /// `let (canceled, x, y, z) = clc.query RESULT`: read a `clc.try_cancel` response from shared
    /// memory: whether it cancelled a launch (i1) and that launch's first program id (i32 each;
    /// undefined when it did not) (`clusterlaunchcontrol.query_cancel`).
    ClcQuery = "clc.query" (result;),
    /// `bar.sync`: all warps of the CTA (or of the partition, inside `warp_specialize`).
    BarSync = "bar.sync" (;),
    /// `device.assert COND, "MESSAGE"`: every element of COND (an i1 tile or a scalar) must be
    /// true; a false one stops the launch with a device-side assertion failure naming MESSAGE
    /// (Gluon's `gl.device_assert`, Triton's `tt.assert`, compiled in debug mode).
    DeviceAssert = "device.assert" (cond, msg;),
    /// `cluster.sync`: `barrier.cluster.arrive.release` + `barrier.cluster.wait.acquire`: every
    /// CTA of the cluster arrives before any proceeds (e.g. both CTAs of a `cta_group=2` pair
    /// have their operands in shared memory before the pair's MMA is issued).
    ClusterSync = "cluster.sync" (;),
    /// `cluster.arrive[, relaxed=true]`: the arrive half of the split cluster barrier
    /// (`barrier.cluster.arrive.release.aligned`; `relaxed=true`:
    /// `barrier.cluster.arrive.relaxed.aligned`, which releases nothing). Every thread of every
    /// CTA of the cluster arrives once per phase.
    ClusterArrive = "cluster.arrive" (; relaxed),
    /// `cluster.wait`: the wait half (`barrier.cluster.wait.acquire.aligned`): blocks until
    /// every thread of the cluster arrived in the current phase.
    ClusterWait = "cluster.wait" (;),
    /// `inline_asm "PTX", "CONSTRAINTS", [ARGS], [DTYPES], pack=N` → one value per result
    /// dtype (a tuple when there are several): an elementwise inline-PTX snippet (Gluon's
    /// `inline_asm_elementwise`) run on every group of `pack` elements of the argument tiles
    /// (scalars broadcast; all-scalar arguments give scalars), its `$N` operands bound as
    /// Triton binds them. `pure=false` records Gluon's `is_pure=False` (no effect here: the
    /// interpreted subset has no side effects).
    InlineAsm = "inline_asm" (asm, constraints, args, dtypes; pack, pure),
    /// `probe.op`: no operation. Exists only with the `probe-op` feature, which adds it so that
    /// the compiler names every exhaustive dispatch a new operation must be taught
    /// (`scripts/new-op-probe`, docs/ARCHITECTURE.md "Where to add an operation").
    @cfg(feature = "probe-op") ProbeOp = "probe.op" (;),
}

/// The operands of `tcgen05.mma` and of its block-scaled form `tcgen05.mma_scaled`, borrowed
/// from either ([`OpKind::tcgen05_mma`]): the one shape the type checker, the simulator's
/// lowering and the PTX backend read an MMA in.
#[derive(Clone, Copy, Debug)]
pub struct MmaOperands<'a> {
    pub a: &'a Expr,
    pub b: &'a Expr,
    pub acc: &'a Expr,
    /// The scale factors of A and of B (`tcgen05.mma_scaled`).
    pub scales: Option<(&'a Expr, &'a Expr)>,
    pub use_acc: &'a Option<Expr>,
    pub pred: &'a Option<Expr>,
    pub cta_group: &'a Option<Expr>,
}

impl OpKind {
    /// The operands of a `tcgen05.mma` or `tcgen05.mma_scaled`; `None` for any other operation.
    pub fn tcgen05_mma(&self) -> Option<MmaOperands<'_>> {
        let (a, b, acc, scales, use_acc, pred, cta_group) = match self {
            OpKind::Tcgen05Mma {
                a,
                b,
                acc,
                use_acc,
                pred,
                cta_group,
            } => (a, b, acc, None, use_acc, pred, cta_group),
            OpKind::Tcgen05MmaScaled {
                a,
                b,
                acc,
                a_scale,
                b_scale,
                use_acc,
                pred,
                cta_group,
            } => (a, b, acc, Some((a_scale, b_scale)), use_acc, pred, cta_group),
            _ => return None,
        };
        Some(MmaOperands {
            a,
            b,
            acc,
            scales,
            use_acc,
            pred,
            cta_group,
        })
    }
}

/// Why written operands do not fit an operation's signature.
#[derive(Clone, Debug)]
pub enum OpShapeError {
    UnknownOp,
    Arity {
        op: &'static str,
        expected: &'static [&'static str],
        found: usize,
    },
    DuplicateKeyword {
        op: &'static str,
        key: Ident,
    },
    UnknownKeyword {
        op: &'static str,
        key: Ident,
        allowed: &'static [&'static str],
    },
}

/// An operation with the span of the whole operation text.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Op {
    pub kind: OpKind,
    pub span: Span,
    /// This operation's id in the kernel's numbering ([`Kernel::number_nodes`]).
    #[serde(skip)]
    pub id: OpId,
}

impl Op {
    /// An operation not yet numbered.
    pub fn new(kind: OpKind, span: Span) -> Op {
        Op {
            kind,
            span,
            id: Id::UNSET,
        }
    }
}

/// Right-hand side of `let`/assignment.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[allow(clippy::large_enum_variant)] // one per statement; boxing would only add noise
pub enum Rhs {
    Expr(Expr),
    Op(Op),
}

/// A worker partition of `warp_specialize`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Worker {
    pub comments: Vec<String>,
    pub name: Ident,
    pub warps: Expr,
    pub regs: Expr,
    pub body: Block,
    pub span: Span,
}

/// The default partition of `warp_specialize`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DefaultPartition {
    pub comments: Vec<String>,
    /// Register budget of the default partition (optional; Gluon gives it what is left).
    pub regs: Option<Expr>,
    pub body: Block,
    pub span: Span,
}

/// A counted loop: `for var in start..end [step s] { body }`, or with `static_for` (`unrolled`)
/// one whose bounds are constants and whose body the checker and the lowerings repeat per
/// iteration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ForLoop {
    pub var: Ident,
    pub start: Expr,
    pub end: Expr,
    pub step: Option<Expr>,
    pub body: Block,
    pub unrolled: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum StmtKind {
    /// `let a = ...` / `let (a, b) = ...`: new names.
    Let { names: Vec<Ident>, value: Rhs },
    /// `a = ...` / `(a, b) = ...`: assign existing names (same types).
    Assign { names: Vec<Ident>, value: Rhs },
    /// An operation without a result.
    Op(Op),
    /// `for i in a..b [step s] { }` (dynamic) or `static_for i in a..b [step s] { }` (unrolled, constant bounds).
    For(ForLoop),
    /// `while c { }`: runs the body while the (dynamic) condition holds, testing it before
    /// each iteration (TTGIR's `scf.while`).
    While { cond: Expr, body: Block },
    /// `if c { } [else { }]`. A condition made only of constants is decided at compile time.
    If {
        cond: Expr,
        then_body: Block,
        else_body: Option<Block>,
    },
    /// `warp_specialize { default { } worker NAME(warps=W, regs=R) { } ... }`.
    WarpSpecialize {
        default: DefaultPartition,
        workers: Vec<Worker>,
    },
    /// `static_assert COND, "message"`.
    StaticAssert { cond: Expr, message: String },
}

/// A statement with the comment lines written above it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stmt {
    pub comments: Vec<String>,
    pub kind: StmtKind,
    pub span: Span,
    /// This statement's id in the kernel's numbering ([`Kernel::number_nodes`]).
    #[serde(skip)]
    pub id: StmtId,
}

impl Stmt {
    /// A statement not yet numbered.
    pub fn new(comments: Vec<String>, kind: StmtKind, span: Span) -> Stmt {
        Stmt {
            comments,
            kind,
            span,
            id: Id::UNSET,
        }
    }
}

/// A `{ ... }` block. `end_comments` are the comment lines before its closing brace.
#[derive(Clone, Debug, PartialEq, Serialize, Default)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub end_comments: Vec<String>,
}

/// Kind of a compile-time constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ConstKind {
    Int,
    Bool,
    DType,
}

impl ConstKind {
    pub fn name(self) -> &'static str {
        match self {
            ConstKind::Int => "int",
            ConstKind::Bool => "bool",
            ConstKind::DType => "dtype",
        }
    }
}

/// `const NAME: KIND = DEFAULT`: overridable with `--const NAME=VALUE`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConstDecl {
    pub comments: Vec<String>,
    pub name: Ident,
    pub kind: ConstKind,
    pub value: Expr,
    pub span: Span,
}

/// `param NAME: TYPE`. TYPE: `i32`, `i64`, `f32`, `ptr(DTYPE)`, or
/// `tensor_desc(DTYPE[block dims], LAYOUT[, oob=nan])`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Param {
    pub comments: Vec<String>,
    pub name: Ident,
    pub ty: Expr,
    pub span: Span,
}

/// `layout NAME = LAYOUT`: a named register-tile layout.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayoutDecl {
    pub comments: Vec<String>,
    pub name: Ident,
    pub value: Expr,
    pub span: Span,
}

/// One line of a `launch { }` section.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum LaunchItemKind {
    /// `tensor NAME: DTYPE[dims] = INIT`: a global tensor the host allocates.
    Tensor { name: Ident, ty: Expr, init: Expr },
    /// `NAME = VALUE`: `grid`, `cluster`, `outputs`, or a kernel parameter's argument.
    Set { name: Ident, value: Expr },
    /// `limit NAME = VALUE`: a resource limit of runs of this launch (`steps`, `wall_time`,
    /// `memory`, `trace_events`; see [`crate::limits`]).
    Limit { name: Ident, value: Expr },
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LaunchItem {
    pub comments: Vec<String>,
    pub kind: LaunchItemKind,
    pub span: Span,
}

/// `launch { ... }`: how `bwsim run` launches the kernel.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Launch {
    pub comments: Vec<String>,
    pub items: Vec<LaunchItem>,
    pub end_comments: Vec<String>,
    pub span: Span,
}

/// A kernel: the unit of a `.tile` file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Kernel {
    /// Comment lines above `kernel`.
    pub comments: Vec<String>,
    pub name: Ident,
    /// Targets the kernel supports; the first is the default.
    pub targets: Vec<Target>,
    pub num_warps: Expr,
    pub consts: Vec<ConstDecl>,
    pub params: Vec<Param>,
    pub layouts: Vec<LayoutDecl>,
    pub body: Block,
    pub launch: Option<Launch>,
    /// Comment lines after the kernel.
    pub trailing_comments: Vec<String>,
    pub span: Span,
}

impl Kernel {
    /// Visit every statement, depth first, in source order.
    pub fn walk_stmts<'a>(&'a self, f: &mut dyn FnMut(&'a Stmt)) {
        walk_block(&self.body, f)
    }
}

/// Visit every statement of a block, depth first.
pub fn walk_block<'a>(b: &'a Block, f: &mut dyn FnMut(&'a Stmt)) {
    for s in &b.stmts {
        f(s);
        for inner in s.blocks() {
            walk_block(inner, f);
        }
    }
}

/// `child_blocks!(name)` / `child_blocks!(name, mut)`: a method giving the blocks a statement
/// holds, shared or mutable.
macro_rules! child_blocks {
    ($name:ident $(, $m:tt)?) => {
        /// The blocks the statement holds, in source order: a loop's body, an `if`'s branches,
        /// every partition of a `warp_specialize` (the default first).
        pub fn $name(&$($m)? self) -> Vec<&$($m)? Block> {
            match &$($m)? self.kind {
                StmtKind::For(f) => vec![&$($m)? f.body],
                StmtKind::While { body, .. } => vec![body],
                StmtKind::If {
                    then_body, else_body, ..
                } => {
                    let mut v = vec![then_body];
                    v.extend(else_body);
                    v
                }
                StmtKind::WarpSpecialize { default, workers } => {
                    let mut v = vec![&$($m)? default.body];
                    v.extend(workers.into_iter().map(|w| &$($m)? w.body));
                    v
                }
                _ => Vec::new(),
            }
        }
    };
}

impl Stmt {
    child_blocks!(blocks);
    child_blocks!(blocks_mut, mut);
}

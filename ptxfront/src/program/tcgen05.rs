//! The `tcgen05` instructions the machine runs: their resolution into ops (`Cx::tcgen05`:
//! allocation, MMAs of one CTA or a pair, commits, copies, loads and stores, fences and
//! waits), and the operand forms beyond the dense shared-memory MMA: an A in tensor memory,
//! the copy shapes of `tcgen05.cp`, the lane and column maps of the `tcgen05.ld`/`tcgen05.st`
//! shapes.

use super::{AgentOp, Cx, MmaKind, Op, TmemRef, Val};
use crate::parse::{AddrBase, Instr, Operand};
use crate::Error;

/// The A operand of a `tcgen05.mma`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MmaA {
    /// A shared-memory matrix descriptor.
    Desc(Val),
    /// A tensor-memory address (`[a]`).
    Tmem(TmemRef),
}

/// The shape of a `tcgen05.ld`/`tcgen05.st` (PTX ISA, "Matrix fragments for tcgen05.ld/st"):
/// the tensor-memory lanes and bits one repetition of the warp moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmemShape {
    /// 32 lanes x 32 bits: one lane per thread.
    S32x32b,
    /// 16 lanes x 64 bits.
    S16x64b,
    /// 16 lanes x 128 bits.
    S16x128b,
    /// 16 lanes x 256 bits.
    S16x256b,
    /// Two 16 lanes x 32 bits halves, the second `imm` columns after the first.
    S16x32bx2(u32),
}

/// The bound on a `16x32bx2` column offset: tensor memory's 512 columns.
const COLUMNS_OFFSET_LIMIT: u64 = 512;

impl TmemShape {
    /// Registers per thread of one repetition (`.x1`).
    pub fn regs_per_rep(self) -> usize {
        match self {
            TmemShape::S32x32b | TmemShape::S16x64b | TmemShape::S16x32bx2(_) => 1,
            TmemShape::S16x128b => 2,
            TmemShape::S16x256b => 4,
        }
    }

    /// Where register `r` of lane `l` of one repetition lies, relative to the access's
    /// first lane and column (PTX ISA, "Matrix fragments for tcgen05.ld/st"; the same maps as
    /// Triton 3.9's `get_tmem_reg_layout` for these shapes).
    pub fn cell(self, l: u32, r: u32) -> (u32, u32) {
        match self {
            TmemShape::S32x32b => (l, 0),
            TmemShape::S16x64b => (l / 4 + 8 * (l % 2), (l / 2) % 2),
            TmemShape::S16x128b => (l / 4 + 8 * (r % 2), l % 4),
            TmemShape::S16x256b => (l / 4 + 8 * (r / 2 % 2), r % 2 + 2 * (l % 4)),
            TmemShape::S16x32bx2(imm) => (l % 16, if l < 16 { 0 } else { imm }),
        }
    }

    /// Columns one repetition spans (the next repetition's first column is this far on).
    pub fn cols_per_rep(self) -> u32 {
        match self {
            TmemShape::S32x32b | TmemShape::S16x32bx2(_) => 1,
            TmemShape::S16x64b => 2,
            TmemShape::S16x128b => 4,
            TmemShape::S16x256b => 8,
        }
    }
}

/// The shape of a `tcgen05.cp` (PTX ISA, "tcgen05.cp"): the rows of shared memory it copies,
/// their bytes, and the lanes each row lands in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpShape {
    /// 128 rows of 32 bytes into lanes 0 to 127.
    S128x256b,
    /// 128 rows of 16 bytes into lanes 0 to 127.
    S128x128b,
    /// 32 rows of 16 bytes, each into lane `r` of every lane quarter (`.warpx4`).
    S32x128bWarpx4,
}

impl CpShape {
    /// Rows and bytes per row.
    pub fn rows_bytes(self) -> (u32, u32) {
        match self {
            CpShape::S128x256b => (128, 32),
            CpShape::S128x128b => (128, 16),
            CpShape::S32x128bWarpx4 => (32, 16),
        }
    }

    /// The lanes row `r` lands in, relative to the destination's lane.
    pub fn lanes(self, r: u32) -> Vec<u32> {
        match self {
            CpShape::S128x256b | CpShape::S128x128b => vec![r],
            CpShape::S32x128bWarpx4 => (0..4).map(|q| 32 * q + r).collect(),
        }
    }
}

impl Cx<'_> {
    /// The `tcgen05` forms the machine runs (`cta_group::1`; tensor-memory loads and stores of
    /// the `32x32b` shape); the thread-sync fences and the waits are no-ops here (the machine
    /// runs loads and stores when they are issued).
    pub(super) fn tcgen05(&self, i: &Instr, m: &[&str]) -> Result<Op, Error> {
        let o = &i.operands;
        let pair = m.contains(&"cta_group::2");
        if pair && m.first() == Some(&"cp") {
            return Err(self.unsupported(i, "CTA-pair copies (`tcgen05.cp.cta_group::2`)"));
        }
        let tmem = |x: Option<&Operand>| match x {
            Some(Operand::Addr(a)) => match a.base {
                Some(AddrBase::Reg(r)) => Ok(TmemRef {
                    taddr: Val::Reg(r),
                    offset: a.offset,
                }),
                _ => Err(self.invalid(i, "expected a tensor-memory address in a register")),
            },
            _ => Err(self.invalid(i, "expected a tensor-memory address `[taddr]`")),
        };
        let val = |k: usize| match o.get(k) {
            Some(x) => self.val(i, x),
            None => Err(self.invalid(i, format!("expected operand {}", k + 1))),
        };
        let op = match m.first().copied() {
            Some("alloc") => match o.first() {
                Some(Operand::Addr(a)) => AgentOp::TmemAlloc {
                    dst: self.memref(i, a)?,
                    cols: val(1)?,
                    pair,
                },
                _ => return Err(self.invalid(i, "expected [dst], ncols")),
            },
            Some("dealloc") => AgentOp::TmemDealloc {
                taddr: val(0)?,
                cols: val(1)?,
            },
            Some("relinquish_alloc_permit") => AgentOp::TmemRelinquish,
            Some(f) if f.starts_with("fence::") => return Ok(Op::Nop),
            Some("wait::ld" | "wait::st") => return Ok(Op::Nop),
            Some("commit") => match o.first() {
                Some(Operand::Addr(a)) => AgentOp::Commit {
                    bar: self.memref(i, a)?,
                    multicast: match (m.contains(&"multicast::cluster"), o.get(1)) {
                        (false, _) => None,
                        (true, Some(x)) => Some(self.val(i, x)?),
                        (true, None) => return Err(self.invalid(i, "`.multicast::cluster` needs a CTA mask")),
                    },
                    pair,
                },
                _ => return Err(self.invalid(i, "expected an mbarrier address")),
            },
            Some("mma") => {
                let scaled = m.iter().any(|x| x.starts_with("block_scale"));
                let kind = match (m.iter().find_map(|x| x.strip_prefix("kind::")), scaled) {
                    (Some("f16"), false) => MmaKind::F16,
                    (Some("tf32"), false) => MmaKind::Tf32,
                    (Some("f8f6f4"), false) => MmaKind::F8f6f4,
                    (Some("mxf8f6f4"), true) => MmaKind::Mxf8f6f4,
                    (Some("mxf4"), true) => MmaKind::Mxf4,
                    (Some("mxf4nvf4"), true) => MmaKind::Mxf4nvf4,
                    _ => return Err(self.unsupported(
                        i,
                        "kinds other than f16, tf32, f8f6f4 and the block-scaled mxf8f6f4, mxf4, mxf4nvf4",
                    )),
                };
                if m.iter().any(|x| *x == "ws" || *x == "sp") {
                    return Err(self.unsupported(i, "weight-stationary and sparse forms"));
                }
                let a = match o.get(1) {
                    Some(x @ Operand::Addr(_)) => MmaA::Tmem(tmem(Some(x))?),
                    _ => MmaA::Desc(val(1)?),
                };
                let mut at = 4;
                let scales = if scaled {
                    at += 2;
                    Some([tmem(o.get(4))?, tmem(o.get(5))?])
                } else {
                    None
                };
                let disable = match o.get(at) {
                    Some(Operand::Vec(v)) => {
                        at += 1;
                        v.iter().map(|x| self.val(i, x)).collect::<Result<_, _>>()?
                    }
                    _ => Vec::new(),
                };
                if o.len() != at + 1 {
                    return Err(self.unsupported(i, "scale-input-d and collector-usage operands"));
                }
                AgentOp::Mma {
                    pair,
                    kind,
                    d: tmem(o.first())?,
                    a,
                    b: val(2)?,
                    idesc: val(3)?,
                    scales,
                    disable,
                    acc: val(at)?,
                }
            }
            Some("cp") => {
                let shape = if m.contains(&"128x256b") {
                    CpShape::S128x256b
                } else if m.contains(&"128x128b") {
                    CpShape::S128x128b
                } else if m.contains(&"32x128b") && m.contains(&"warpx4") {
                    CpShape::S32x128bWarpx4
                } else {
                    return Err(
                        self.unsupported(i, "shapes other than 128x256b, 128x128b and 32x128b.warpx4")
                    );
                };
                if m.iter()
                    .any(|x| x.starts_with("b8x16") || x.starts_with("b6x16") || x.starts_with("b4x16"))
                {
                    return Err(self.unsupported(i, "decompressing copies"));
                }
                AgentOp::TmemCp {
                    shape,
                    at: tmem(o.first())?,
                    src: val(1)?,
                }
            }
            Some(dir @ ("ld" | "st")) => {
                if m.iter().any(|x| x.starts_with("pack") || x.starts_with("unpack")) {
                    return Err(self.unsupported(i, "packing (`.pack::16b`, `.unpack::16b`)"));
                }
                let num = m
                    .iter()
                    .find_map(|x| x.strip_prefix('x').and_then(|n| n.parse::<usize>().ok()))
                    .ok_or_else(|| self.invalid(i, "expected a `.xN` count"))?;
                // `16x32bx2` takes the second half's column offset as an immediate after the
                // address.
                let split = usize::from(m.contains(&"16x32bx2"));
                let shape = match m.iter().find(|x| x.starts_with("16x") || x.starts_with("32x")) {
                    Some(&"32x32b") => TmemShape::S32x32b,
                    Some(&"16x64b") => TmemShape::S16x64b,
                    Some(&"16x128b") => TmemShape::S16x128b,
                    Some(&"16x256b") => TmemShape::S16x256b,
                    Some(&"16x32bx2") => {
                        let k = if dir == "ld" { 2 } else { 1 };
                        match o.get(k) {
                            Some(Operand::Int(n)) if *n < COLUMNS_OFFSET_LIMIT => {
                                TmemShape::S16x32bx2(*n as u32)
                            }
                            _ => {
                                return Err(
                                    self.invalid(i, "expected the immediate column offset of `.16x32bx2`")
                                )
                            }
                        }
                    }
                    _ => return Err(self.invalid(i, "expected a tensor-memory shape")),
                };
                let (regs, at) = if dir == "ld" {
                    (o.first(), o.get(1))
                } else {
                    (o.get(1 + split), o.first())
                };
                let regs: Vec<&Operand> = match regs {
                    Some(Operand::Vec(v)) => v.iter().collect(),
                    Some(x) => vec![x],
                    None => Vec::new(),
                };
                let want = num * shape.regs_per_rep();
                if regs.len() != want {
                    return Err(self.invalid(
                        i,
                        format!("{} registers for `.x{num}` (this shape moves {want})", regs.len()),
                    ));
                }
                let at = tmem(at)?;
                if dir == "ld" {
                    AgentOp::TmemLd {
                        shape,
                        regs: regs.iter().map(|x| self.reg(i, x)).collect::<Result<_, _>>()?,
                        at,
                    }
                } else {
                    AgentOp::TmemSt {
                        shape,
                        vals: regs.iter().map(|x| self.val(i, x)).collect::<Result<_, _>>()?,
                        at,
                    }
                }
            }
            _ => return Err(self.unsupported(i, "")),
        };
        Ok(Op::Agent(op))
    }
}

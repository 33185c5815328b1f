//! Atomic read-modify-writes of the PTX front end: `atom` and `red` on global and shared
//! memory (generic addressing too), their arithmetic, and how a thread runs one.
//!
//! A thread of the executor runs alone between synchronising instructions ([`crate::exec`]),
//! so an atomic is one read of the element, the combination, and one write, with nothing of
//! another thread between them. The `.sem` (`.relaxed`, `.acquire`, `.release`, `.acq_rel`)
//! and `.scope` (`.cta`, `.cluster`, `.gpu`, `.sys`) qualifiers order memory for other threads;
//! the front end's memories are sequentially consistent in the order the threads run, so they
//! change no value. The arithmetic of `add`, `min`, `max`, `inc`, `dec`, `and`, `or` and `xor`
//! is the simulator's reduction arithmetic ([`TmaReduceOp::apply`], the rule the PTX ISA states
//! for each, shared with the TMA reductions); `exch` stores the operand, `cas` stores its second
//! operand where the element equals the first. The packed `.f16x2` / `.bf16x2` adds combine
//! each 16-bit half on its own; `.v2`/`.v4`/`.v8` vector forms and `.f64` are refused.
//!
//! The global-memory check sees an atomic as a strong read and write with its `.sem` and
//! `.scope` ([`Order`]).
//!
//! To the hazard checker a shared-memory atomic is a read of its element: atomics of different
//! warps on one element do not race, and a plain write of the element that another warp makes
//! unordered with the atomic is a race either way round. (A plain read of the element unordered
//! with an atomic is not reported.)

use crate::exec::{Cta, Thread};
use crate::parse::Space;
use crate::program::{MemRef, Val};
use crate::Error;
use bwsim_isa::types::DType;
use bwsim_isa::value_types::TmaReduceOp;

/// What a memory access or fence orders across CTAs ([`crate::machine`]'s global-memory
/// check): `strong` accesses (atomics, `ld`/`st` `.relaxed`/`.acquire`/`.release`/`.volatile`)
/// never race with each other; `acquire` / `release` synchronise at a scope that reaches other
/// CTAs (`.gpu`, `.sys`; `cross` false for `.cta`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Order {
    pub strong: bool,
    pub acquire: bool,
    pub release: bool,
    pub cross: bool,
}

impl Order {
    /// The order the qualifiers `m` of an access or a fence give.
    pub fn of(m: &[&str]) -> Order {
        let has = |x: &str| m.contains(&x);
        let sc = has("sc") || has("acq_rel");
        Order {
            strong: ["relaxed", "acquire", "release", "acq_rel", "volatile", "sc"]
                .iter()
                .any(|x| has(x)),
            acquire: sc || has("acquire"),
            release: sc || has("release"),
            cross: !has("cta"),
        }
    }
}

/// The operation of an atomic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomOp {
    /// `add`, `min`, `max`, `inc`, `dec`, `and`, `or`, `xor`.
    Reduce(TmaReduceOp),
    Exch,
    Cas,
}

/// The type of an atomic's element: a scalar, or two packed halves (`.f16x2`, `.bf16x2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomType {
    pub elem: DType,
    pub packed: bool,
}

impl AtomType {
    /// The type PTX names `.ty` (`b32`, `u32`, `s32`, `u64`, `s64`, `b64`, `f32`, `f16`,
    /// `bf16`, `f16x2`, `bf16x2`), if the front end runs atomics of it.
    pub fn of(ty: &str) -> Option<AtomType> {
        let (elem, packed) = match ty {
            "b32" | "u32" => (DType::U32, false),
            "s32" => (DType::I32, false),
            "b64" | "u64" => (DType::U64, false),
            "s64" => (DType::I64, false),
            "f32" => (DType::F32, false),
            "f16" => (DType::F16, false),
            "bf16" => (DType::BF16, false),
            "f16x2" => (DType::F16, true),
            "bf16x2" => (DType::BF16, true),
            _ => return None,
        };
        Some(AtomType { elem, packed })
    }

    /// Bytes of the element in memory.
    pub fn bytes(self) -> u32 {
        self.elem.bits() / 8 * if self.packed { 2 } else { 1 }
    }
}

/// Whether the PTX ISA defines `op` on elements of type `ty`.
pub fn defined(op: AtomOp, ty: AtomType) -> bool {
    use DType::*;
    let e = ty.elem;
    match op {
        AtomOp::Reduce(TmaReduceOp::Add | TmaReduceOp::Min | TmaReduceOp::Max) => true,
        AtomOp::Reduce(TmaReduceOp::Inc | TmaReduceOp::Dec) => e == U32,
        AtomOp::Reduce(_) => matches!(e, U32 | I32 | U64 | I64) && !ty.packed,
        AtomOp::Exch | AtomOp::Cas => !ty.packed && !matches!(e, F16 | BF16),
    }
}

/// The bits an element of type `ty` holding `old` holds after atomic `op` with operand `b`
/// (`c`: `cas`'s new value, `b` its compare value).
pub fn combine(op: AtomOp, ty: AtomType, old: u64, b: u64, c: u64) -> u64 {
    let bits = ty.bytes() * 8;
    let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let out = match op {
        AtomOp::Exch => b,
        AtomOp::Cas => {
            if old & mask == b & mask {
                c
            } else {
                old
            }
        }
        AtomOp::Reduce(r) if ty.packed => {
            let lo = r.apply(ty.elem, old & 0xffff, b & 0xffff);
            let hi = r.apply(ty.elem, (old >> 16) & 0xffff, (b >> 16) & 0xffff);
            (hi & 0xffff) << 16 | (lo & 0xffff)
        }
        AtomOp::Reduce(r) => r.apply(ty.elem, old, b),
    };
    out & mask
}

/// A resolved `atom` (`d: Some`) or `red` (`d: None`).
#[derive(Clone, Debug, PartialEq)]
pub struct Atom {
    pub op: AtomOp,
    pub ty: AtomType,
    /// The state space (`None`: generic addressing).
    pub space: Option<Space>,
    /// The destination of the old value (`atom`).
    pub d: Option<u16>,
    pub at: MemRef,
    pub b: Val,
    /// `cas`'s new value.
    pub c: Option<Val>,
    /// Its `.sem` and `.scope`.
    pub order: Order,
}

impl Cta<'_> {
    /// Runs atomic `a` at `pc` for thread `t`: the element read (and, in shared memory, logged
    /// as the thread's read for the checker), combined, written back; the old value to `d`.
    pub(crate) fn atom(&mut self, t: &mut Thread, a: &Atom, pc: usize) -> Result<(), Error> {
        let n = a.ty.bytes();
        let (sp, addr) = self.address(t, a.space, &a.at, pc)?;
        if !matches!(sp, Space::Global | Space::Shared) {
            return Err(self.rt(
                pc,
                format!("an atomic on {sp:?} memory, which PTX atomics do not reach"),
            ));
        }
        let b = self.read(t, a.b, pc)?;
        let c = a.c.map(|c| self.read(t, c, pc)).transpose()?.unwrap_or(0);
        let old = self.load(sp, addr, n, pc)?;
        let new = combine(a.op, a.ty, old, b, c);
        let bytes = self.bytes_at(sp, addr, n, pc)?;
        for (i, x) in bytes.iter_mut().enumerate() {
            *x = (new >> (8 * i)) as u8;
        }
        if let Some(d) = a.d {
            self.write(t, d, old);
        }
        if sp == Space::Global {
            self.note_global(addr, n, true, false, a.order, pc);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(s: &str) -> AtomType {
        AtomType::of(s).expect("a type atomics take")
    }
    const ADD: AtomOp = AtomOp::Reduce(TmaReduceOp::Add);

    #[test]
    fn integer_atomics_wrap_and_compare_by_signedness() {
        assert_eq!(combine(ADD, ty("u32"), 0xffff_fffe, 3, 0), 1);
        let max = AtomOp::Reduce(TmaReduceOp::Max);
        // -1 against 5: signed max keeps 5, unsigned keeps 0xffffffff.
        assert_eq!(combine(max, ty("s32"), 0xffff_ffff, 5, 0), 5);
        assert_eq!(combine(max, ty("u32"), 0xffff_ffff, 5, 0), 0xffff_ffff);
        let min = AtomOp::Reduce(TmaReduceOp::Min);
        assert_eq!(combine(min, ty("s64"), 3, (-7i64) as u64, 0), (-7i64) as u64);
        let xor = AtomOp::Reduce(TmaReduceOp::Xor);
        assert_eq!(combine(xor, ty("b32"), 0b1100, 0b1010, 0), 0b0110);
    }

    #[test]
    fn inc_and_dec_follow_the_isa_rule() {
        let inc = AtomOp::Reduce(TmaReduceOp::Inc);
        let dec = AtomOp::Reduce(TmaReduceOp::Dec);
        // inc: old >= b ? 0 : old + 1.
        assert_eq!(combine(inc, ty("u32"), 4, 0xffff_ffff, 0), 5);
        assert_eq!(combine(inc, ty("u32"), 7, 7, 0), 0);
        // dec: old == 0 || old > b ? b : old - 1.
        assert_eq!(combine(dec, ty("u32"), 0, 9, 0), 9);
        assert_eq!(combine(dec, ty("u32"), 12, 9, 0), 9);
        assert_eq!(combine(dec, ty("u32"), 5, 9, 0), 4);
    }

    #[test]
    fn exch_and_cas() {
        assert_eq!(combine(AtomOp::Exch, ty("b32"), 1, 2, 0), 2);
        // cas: the new value only where the element equals the compare value.
        assert_eq!(combine(AtomOp::Cas, ty("b32"), 0, 0, 7), 7);
        assert_eq!(combine(AtomOp::Cas, ty("b32"), 3, 0, 7), 3);
        assert_eq!(combine(AtomOp::Cas, ty("b64"), 1 << 40, 1 << 40, 9), 9);
    }

    #[test]
    fn float_adds_round_once_and_packed_halves_add_apart() {
        let f = |x: f32| x.to_bits() as u64;
        assert_eq!(combine(ADD, ty("f32"), f(1.5), f(2.25), 0), f(3.75));
        // 2^24 + 1 is not an f32: the sum rounds to even.
        assert_eq!(combine(ADD, ty("f32"), f(16777216.0), f(1.0), 0), f(16777216.0));
        // f16 bits: 1.0 = 0x3c00, -2.0 = 0xc000, 0.5 = 0x3800, 8.0 = 0x4800, 1.5 = 0x3e00,
        // 6.0 = 0x4600, 2048.0 = 0x6800, 2.0 = 0x4000 (high half first below).
        assert_eq!(
            combine(ADD, ty("f16x2"), 0xc000_3c00, 0x4800_3800, 0),
            0x4600_3e00
        );
        // 2048 + 1 rounds back to 2048 in the low half; nothing carries into the high one.
        assert_eq!(
            combine(ADD, ty("f16x2"), 0x3c00_6800, 0x3c00_3c00, 0),
            0x4000_6800
        );
        // bf16 bits: 1.0 = 0x3f80, 0.5 = 0x3f00, 1.5 = 0x3fc0.
        assert_eq!(combine(ADD, ty("bf16"), 0x3f80, 0x3f00, 0), 0x3fc0);
    }

    #[test]
    fn the_isa_defines_only_some_pairs() {
        assert!(defined(AtomOp::Reduce(TmaReduceOp::Inc), ty("u32")));
        assert!(!defined(AtomOp::Reduce(TmaReduceOp::Inc), ty("s32")));
        assert!(!defined(AtomOp::Reduce(TmaReduceOp::And), ty("f32")));
        assert!(!defined(AtomOp::Cas, ty("f16x2")));
        assert!(AtomType::of("f64").is_none());
    }
}

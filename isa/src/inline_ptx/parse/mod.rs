//! From tokens to checked instructions: statements, `{ }` scopes, `.reg` declarations and
//! guards here; every instruction's form resolved (types, modifiers, operand widths) or refused
//! with the instruction's text and the reason in `resolve`.

mod resolve;

use super::float::{Fmt, Rnd};
use super::lex::{comma_list, lex, Dialect, Literal, Tok, Tokens};
use super::{lex, PtxError};
use crate::span::Span;
pub use resolve::carry::{carry_apply, is_carry_form, CarryOp, CARRY_FLAG};
use resolve::Resolve;
use std::borrow::Cow;
use std::collections::HashMap;

/// A register of the snippet (`$N` operands first, then declared locals).
pub type RegId = u16;

/// A source operand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Src {
    Reg(RegId),
    /// An immediate, already encoded in the operand's type.
    Imm(u64),
}

/// A float type of an arithmetic instruction: its format and lanes (`.f16x2`: 2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FTy {
    pub fmt: Fmt,
    pub lanes: u32,
}

impl FTy {
    pub fn bits(self) -> u32 {
        self.fmt.bits * self.lanes
    }
}

/// An integer type: width and signedness (`.bN` counts as unsigned).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ITy {
    pub bits: u32,
    pub signed: bool,
}

/// A scalar type of a conversion or comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Ty {
    Int(ITy),
    Float(Fmt),
}

impl Ty {
    pub fn bits(self) -> u32 {
        match self {
            Ty::Int(i) => i.bits,
            Ty::Float(f) => f.bits,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IOp {
    Add,
    Sub,
    MulLo,
    MulHi,
    MulWide,
    MadLo,
    MadHi,
    MadWide,
    Min,
    Max,
    Div,
    Rem,
    Abs,
    Neg,
    Popc,
    Clz,
    Brev,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BOp {
    And,
    Or,
    Xor,
    Not,
    Cnot,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FOp {
    Add,
    Sub,
    Mul,
    Fma,
    Div,
    Rcp,
    Sqrt,
    Ex2,
    Min,
    Max,
    Neg,
    Abs,
}

/// Modifiers of a float instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FMods {
    pub rnd: Rnd,
    /// `.approx` (`ex2`, `rcp`, `div`, `sqrt`; `div.full` too): computed correctly rounded.
    pub approx: bool,
    pub ftz: bool,
    pub sat: bool,
    /// `min`/`max` `.NaN`: a NaN operand gives NaN.
    pub nan: bool,
    /// `.relu`: negative results (and NaN) become +0.
    pub relu: bool,
    /// `min`/`max` `.xorsign.abs`: the minimum (maximum) of the operands' magnitudes, its sign
    /// the XOR of their signs (a NaN result stays the canonical NaN).
    pub xorsign: bool,
}

impl FMods {
    /// Rounding `rnd` and no other modifier: the instruction as its bare form computes it.
    pub fn rounded(rnd: Rnd) -> FMods {
        FMods {
            rnd,
            approx: false,
            ftz: false,
            sat: false,
            nan: false,
            relu: false,
            xorsign: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Lo,
    Ls,
    Hi,
    Hs,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

/// How a `cvt` converts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CvtMods {
    /// `.rn`/`.rz`/`.rm`/`.rp`, or the integer roundings `.rni` etc. (`int_rnd`).
    pub rnd: Option<Rnd>,
    pub int_rnd: bool,
    pub ftz: bool,
    pub sat: bool,
    pub relu: bool,
    pub satfinite: bool,
}

/// One checked instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Mov {
        d: RegId,
        a: Src,
    },
    /// `mov.bN d, {a, b, ...}`: parts from the least significant.
    Pack {
        d: RegId,
        parts: Vec<Src>,
        bits: u32,
    },
    /// `mov.bN {a, b, ...}, s` (`_` drops a part).
    Unpack {
        ds: Vec<Option<RegId>>,
        a: Src,
        bits: u32,
    },
    Int {
        op: IOp,
        ty: ITy,
        sat: bool,
        d: RegId,
        s: Vec<Src>,
    },
    /// Extended-precision arithmetic (`add.cc`, `addc`, `sub.cc`, `subc`, `mad.lo.cc`,
    /// `madc.hi`, ...): `cin` and `cout` are the carry flag's register when the instruction
    /// reads (writes) it.
    Carry {
        op: CarryOp,
        ty: ITy,
        d: RegId,
        s: Vec<Src>,
        cin: Option<RegId>,
        cout: Option<RegId>,
    },
    /// Bitwise logic on `bits` bits (1: predicates).
    Bit {
        op: BOp,
        bits: u32,
        d: RegId,
        s: Vec<Src>,
    },
    Shift {
        left: bool,
        arith: bool,
        bits: u32,
        d: RegId,
        a: Src,
        b: Src,
    },
    /// Four-lane fp8 arithmetic (`add.rn.e4m3x4.e4m3x4`, `fma.e5m2x4.e4m3x4.e4m3x4`, sm_100a):
    /// `dtype` the result's lanes, `types` each source's, one lane each
    /// [`crate::packed_arith::lane`].
    Packed {
        op: crate::packed_arith::PackedOp,
        dtype: crate::types::DType,
        types: Vec<crate::types::DType>,
        d: RegId,
        s: Vec<Src>,
    },
    Float {
        op: FOp,
        ty: FTy,
        m: FMods,
        d: RegId,
        s: Vec<Src>,
    },
    Setp {
        cmp: Cmp,
        ty: Ty,
        lanes: u32,
        ftz: bool,
        p: Option<RegId>,
        q: Option<RegId>,
        a: Src,
        b: Src,
        /// `.and`/`.or`/`.xor` with a predicate (negated when the bool is set).
        combine: Option<(BOp, Src, bool)>,
    },
    Selp {
        d: RegId,
        a: Src,
        b: Src,
        c: Src,
    },
    Cvt {
        dst: Ty,
        src: Ty,
        m: CvtMods,
        d: RegId,
        a: Src,
    },
    /// `cvt` packing two values into one register: `d = {cvt(a) high, cvt(b) low}`.
    CvtPack {
        dst: Fmt,
        src: Fmt,
        m: CvtMods,
        d: RegId,
        a: Src,
        b: Src,
    },
    /// `cvt.f16x2.e4m3x2` and the like: two narrow lanes of `a` widened.
    CvtUnpack {
        dst: Fmt,
        src: Fmt,
        relu: bool,
        d: RegId,
        a: Src,
    },
    Prmt {
        d: RegId,
        a: Src,
        b: Src,
        c: Src,
    },
    Lop3 {
        d: RegId,
        a: Src,
        b: Src,
        c: Src,
        lut: u8,
    },
    Shf {
        left: bool,
        clamp: bool,
        d: RegId,
        a: Src,
        b: Src,
        c: Src,
    },
    Bfe {
        signed: bool,
        bits: u32,
        d: RegId,
        a: Src,
        b: Src,
        c: Src,
    },
    Bfi {
        bits: u32,
        d: RegId,
        a: Src,
        b: Src,
        c: Src,
        e: Src,
    },
}

/// An instruction with its guard and its place in the snippet.
#[derive(Clone, Debug, PartialEq)]
pub struct Ins {
    pub guard: Option<(RegId, bool)>,
    pub op: Op,
    /// Byte range of the instruction (opcode to `;`) in the snippet.
    pub at: (usize, usize),
}

/// A parsed snippet: its instructions and registers.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub ins: Vec<Ins>,
    /// Width of every register in bits (1: a predicate); `$N` operands first.
    pub reg_bits: Vec<u32>,
    /// Names of the registers (for messages).
    pub reg_names: Vec<String>,
}

/// A raw operand before its instruction is resolved.
#[derive(Clone, Debug)]
enum Raw {
    Reg(RegId),
    NotReg(RegId),
    /// A numeric literal.
    Lit(Literal),
    Vec(Vec<Option<RegId>>),
    /// `p|q`.
    Pair(RegId, Option<RegId>),
}

struct P<'s> {
    src: &'s str,
    /// The tokens, and the current one.
    t: Tokens,
    scopes: Vec<HashMap<String, RegId>>,
    /// Registers declared outside the snippet (a whole kernel's, for [`parse_instruction`]).
    outer: Option<&'s HashMap<String, RegId>>,
    reg_bits: Cow<'s, [u32]>,
    reg_names: Cow<'s, [String]>,
}

/// Parses `src`, whose `$N` operands have the widths `operand_bits` (16, 32 or 64).
pub fn parse(src: &str, operand_bits: &[u32]) -> Result<Parsed, PtxError> {
    let mut p = P {
        src,
        t: Tokens::new(lex(src, Dialect::Snippet)?, src.len()),
        scopes: vec![HashMap::new()],
        outer: None,
        reg_bits: Cow::Owned(operand_bits.to_vec()),
        reg_names: Cow::Owned((0..operand_bits.len()).map(|i| format!("${i}")).collect()),
    };
    let mut ins = Vec::new();
    while p.t.i < p.t.toks.len() {
        if let Some(i) = p.statement()? {
            ins.push(i);
        }
    }
    if p.scopes.len() != 1 {
        return Err(PtxError::at(
            src,
            (src.len(), src.len()),
            "a `{` scope is never closed".into(),
        ));
    }
    Ok(Parsed {
        ins,
        reg_bits: p.reg_bits.into_owned(),
        reg_names: p.reg_names.into_owned(),
    })
}

/// Parses and resolves the one instruction at `at` of `src` (a whole PTX file, from the opcode
/// or its guard to the `;`), whose registers are declared in `regs` (widths and names, indexed
/// by [`RegId`]) and named by `names`. The result's `at` and any error's `at` are byte ranges of
/// `src`. A front end for whole kernels calls this for every instruction of the subset, so that
/// the subset's forms and semantics live here once.
pub fn parse_instruction(
    src: &str,
    at: (usize, usize),
    regs: &Parsed,
    names: &HashMap<String, RegId>,
) -> Result<Ins, PtxError> {
    let text = src.get(at.0..at.1).ok_or_else(|| PtxError {
        message: "instruction range outside the text".into(),
        at,
    })?;
    let shift = |s: Span| Span::new(s.start as usize + at.0, s.end as usize + at.0);
    let toks = lex(text, Dialect::Snippet)
        .map_err(|e| {
            PtxError::from(lex::SyntaxError {
                span: shift(e.span),
                ..e
            })
        })?
        .into_iter()
        .map(|t| lex::Token {
            span: shift(t.span),
            ..t
        })
        .collect();
    let mut p = P {
        src,
        t: Tokens::new(toks, src.len()),
        scopes: vec![HashMap::new()],
        outer: Some(names),
        reg_bits: Cow::Borrowed(&regs.reg_bits),
        reg_names: Cow::Borrowed(&regs.reg_names),
    };
    let ins = p.instruction(p.at())?;
    if p.t.i != p.t.toks.len() {
        return Err(PtxError::at(src, p.at(), "expected one instruction".into()));
    }
    Ok(ins)
}

/// The width of a `.reg` type.
fn reg_type_bits(t: &str) -> Option<u32> {
    Some(match t {
        "pred" => 1,
        "b16" | "u16" | "s16" | "f16" | "bf16" => 16,
        "b32" | "u32" | "s32" | "f32" | "f16x2" | "bf16x2" => 32,
        "b64" | "u64" | "s64" | "f64" | "f32x2" => 64,
        _ => return None,
    })
}

/// The opcodes of the subset, for the message that refuses another.
pub const OPCODES: &[&str] = &[
    "mov", "add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max", "abs", "neg", "rcp", "sqrt", "ex2",
    "and", "or", "xor", "not", "cnot", "shl", "shr", "shf", "prmt", "lop3", "bfe", "bfi", "popc", "clz",
    "brev", "setp", "selp", "cvt", "addc", "subc", "madc",
];

impl AsMut<Tokens> for P<'_> {
    fn as_mut(&mut self) -> &mut Tokens {
        &mut self.t
    }
}

impl<'s> P<'s> {
    fn at(&self) -> (usize, usize) {
        let r = self.t.span().range();
        (r.start, r.end)
    }
    fn err(&self, at: (usize, usize), m: impl Into<String>) -> PtxError {
        PtxError::at(self.src, at, m.into())
    }

    fn lookup(&self, name: &str) -> Option<RegId> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name).copied())
            .or_else(|| self.outer.and_then(|o| o.get(name).copied()))
    }

    fn statement(&mut self) -> Result<Option<Ins>, PtxError> {
        let start = self.at();
        match self.t.peek().cloned() {
            Some(Tok::Punct('{')) => {
                self.t.i += 1;
                self.scopes.push(HashMap::new());
                Ok(None)
            }
            Some(Tok::Punct('}')) => {
                self.t.i += 1;
                if self.scopes.len() == 1 {
                    return Err(self.err(start, "`}` closes no scope"));
                }
                self.scopes.pop();
                Ok(None)
            }
            Some(Tok::Punct(';')) => {
                self.t.i += 1;
                Ok(None)
            }
            Some(Tok::Dot(d)) if d == "reg" => {
                self.t.i += 1;
                self.reg_decl(start)?;
                Ok(None)
            }
            Some(Tok::Dot(d)) => Err(self.err(start, format!("the directive `.{d}` is outside the inline-PTX subset bwsim interprets (only `.reg` declarations)"))),
            _ => self.instruction(start).map(Some),
        }
    }

    fn reg_decl(&mut self, start: (usize, usize)) -> Result<(), PtxError> {
        let ty = match self.t.peek().cloned() {
            Some(Tok::Dot(t)) => {
                self.t.i += 1;
                t
            }
            _ => return Err(self.err(start, "`.reg` needs a type (`.reg .b32 r;`)")),
        };
        let bits = reg_type_bits(&ty)
            .ok_or_else(|| self.err(start, format!("registers of type `.{ty}` are outside the subset")))?;
        for (n, _) in self.t.declared_names(256)? {
            if self.reg_bits.len() >= u16::MAX as usize {
                return Err(self.err(start, "too many registers"));
            }
            let id = self.reg_bits.len() as RegId;
            self.reg_bits.to_mut().push(bits);
            self.reg_names.to_mut().push(n.clone());
            if let Some(s) = self.scopes.last_mut() {
                s.insert(n, id);
            }
        }
        Ok(())
    }

    /// Declares the carry flag ([`CARRY_FLAG`]) in a snippet's outermost scope the first time
    /// an instruction names it. A kernel's register file, borrowed, declares it itself.
    fn declare_carry_flag(&mut self, at: (usize, usize)) -> Result<(), PtxError> {
        if self.lookup(CARRY_FLAG).is_some() {
            return Ok(());
        }
        if matches!(self.reg_bits, Cow::Borrowed(_)) || self.reg_bits.len() >= u16::MAX as usize {
            return Err(self.err(at, "the register file declares no carry flag (`CC.CF`)"));
        }
        let id = self.reg_bits.len() as RegId;
        self.reg_bits.to_mut().push(1);
        self.reg_names.to_mut().push(CARRY_FLAG.to_string());
        self.scopes[0].insert(CARRY_FLAG.to_string(), id);
        Ok(())
    }

    fn reg_name(&mut self) -> Result<RegId, PtxError> {
        let at = self.at();
        match self.t.peek().cloned() {
            Some(Tok::Operand(n)) => {
                self.t.i += 1;
                if n < self.reg_names.len() && self.reg_names[n] == format!("${n}") {
                    Ok(n as RegId)
                } else {
                    Err(self.err(
                        at,
                        format!("`${n}` is not an operand of this snippet (its constraints bind fewer)"),
                    ))
                }
            }
            Some(Tok::Ident(n)) => {
                self.t.i += 1;
                self.lookup(&n)
                    .ok_or_else(|| self.err(at, format!("`{n}` is not a declared register")))
            }
            _ => Err(self.err(at, "expected a register")),
        }
    }

    fn operand(&mut self) -> Result<Raw, PtxError> {
        let at = self.at();
        if self.t.eat('-') {
            return self
                .t
                .literal()
                .map(|l| Raw::Lit(l.negated()))
                .ok_or_else(|| self.err(at, "a negated register operand is outside the subset (use `neg`)"));
        }
        if let Some(l) = self.t.literal() {
            return Ok(Raw::Lit(l));
        }
        match self.t.peek() {
            Some(Tok::Punct('{')) => {
                self.t.i += 1;
                let v = comma_list(self, |p| {
                    if p.t.eat_sink() {
                        Ok(None)
                    } else {
                        p.reg_name().map(Some)
                    }
                })?;
                self.t.expect('}', "closing the vector operand")?;
                Ok(Raw::Vec(v))
            }
            Some(Tok::Punct('!')) => {
                self.t.i += 1;
                Ok(Raw::NotReg(self.reg_name()?))
            }
            Some(Tok::Punct('[')) => Err(self.err(
                at,
                "memory operands are outside the inline-PTX subset bwsim interprets",
            )),
            _ => {
                let r = self.reg_name()?;
                if self.t.eat('|') {
                    let q = if self.t.eat_sink() {
                        None
                    } else {
                        Some(self.reg_name()?)
                    };
                    return Ok(Raw::Pair(r, q));
                }
                Ok(Raw::Reg(r))
            }
        }
    }

    fn instruction(&mut self, start: (usize, usize)) -> Result<Ins, PtxError> {
        let mut guard = None;
        if self.t.eat('@') {
            let neg = self.t.eat('!');
            let p = self.reg_name()?;
            if self.reg_bits[p as usize] != 1 {
                return Err(self.err(
                    start,
                    format!("the guard `{}` is not a predicate", self.reg_names[p as usize]),
                ));
            }
            guard = Some((p, neg));
        }
        let op_at = self.at();
        let opcode = match self.t.peek().cloned() {
            Some(Tok::Ident(n)) => {
                self.t.i += 1;
                n
            }
            _ => return Err(self.err(op_at, "expected an instruction")),
        };
        if self.t.peek() == Some(&Tok::Punct(':')) {
            return Err(self.err(
                op_at,
                format!("the label `{opcode}:` is outside the subset (no branches)"),
            ));
        }
        let mods = self.t.modifiers();
        let ops = if self.t.peek() == Some(&Tok::Punct(';')) {
            Vec::new()
        } else {
            comma_list(self, Self::operand)?
        };
        let end = self.at().1;
        if !self.t.eat(';') {
            return Err(self.err(
                (op_at.0, end),
                format!("expected `;` after `{opcode}`'s operands"),
            ));
        }
        let at = (op_at.0, end);
        if is_carry_form(&opcode, &mods) {
            self.declare_carry_flag(at)?;
        }
        let text = self.src[at.0..at.1].to_string();
        let r = Resolve {
            p: self,
            text: &text,
            at,
        };
        let op = r.resolve(&opcode, &mods, &ops)?;
        Ok(Ins { guard, op, at })
    }
}

pub fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

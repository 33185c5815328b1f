//! Inline PTX of elementwise snippets (Triton's `tt.elementwise_inline_asm`, Gluon's
//! `gl.inline_asm_elementwise`): a parser of the PTX subset such snippets use, a checker that
//! resolves every instruction or refuses it with its text, and an interpreter over bits.
//!
//! - `lex`: the one PTX lexer and token cursor (the whole-file front end `bwsim-ptxfront`
//!   lexes and walks its tokens with them too).
//! - `parse`: the snippet's statements, `{ }` scopes, `.reg` declarations,
//!   `@p`/`@!p` guards, and each instruction resolved to a checked form ([`parse::Op`]).
//! - `float`: exact floating-point arithmetic in every rounding mode (the soft-float core).
//! - `exec`: the semantics of each instruction on bits.
//! - `deps`: which elements of a pack group each output can depend on.
//! - `undef`: which bits of an instruction's results are undefined, given its inputs'.
//!
//! Operand binding follows Triton's lowering of the op: with `pack` elements per call,
//! elements narrower than 32 bits travel `min(32 / bits, pack)` to a register (element `k`
//! of a register in bits `k * width ..`), wider ones one to a register; `$0 ..` are the
//! results' registers (result by result), then the arguments' registers (argument by
//! argument). A constraint's letter gives its register's width: `h` 16 bits, `r` and `f` 32,
//! `l` and `d` 64.
//!
//! This module knows PTX and bits; the type checker, the simulator and the PTX backend call
//! it, and it knows nothing of them.

mod deps;
mod exec;
pub mod float;
pub mod lex;
pub mod parse;
mod undef;

pub use deps::operands;
pub use undef::undefined_bits;

use crate::types::DType;

/// A snippet the subset does not cover, or that is malformed: the message names the
/// instruction; `at` is the byte range in the snippet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PtxError {
    pub message: String,
    pub at: (usize, usize),
}

impl From<lex::SyntaxError> for PtxError {
    fn from(e: lex::SyntaxError) -> PtxError {
        let r = e.span.range();
        PtxError {
            message: e.message,
            at: (r.start, r.end),
        }
    }
}

impl PtxError {
    fn at(_src: &str, at: (usize, usize), message: String) -> PtxError {
        PtxError { message, at }
    }
    fn whole(message: String) -> PtxError {
        PtxError { message, at: (0, 0) }
    }
}

/// What stops one call of a snippet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    #[error("`{ins}` reads `{reg}`, which holds no value on this path (a guarded write was skipped)")]
    Undefined { reg: String, ins: String },
    #[error("`{ins}` divides by zero (PTX leaves the result unspecified)")]
    DivideByZero { ins: String },
    #[error("`{ins}`, lane {lane}: {why} (bwsim does not guess it: unspecified-result)")]
    Unspecified { ins: String, lane: u32, why: String },
}

/// One `$N` operand: which result or argument it carries and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    pub output: bool,
    /// The result or argument index.
    pub value: usize,
    /// The first element of the pack group it holds, and how many.
    pub first: usize,
    pub elems: usize,
    pub elem_bits: u32,
    /// The register's width (16, 32 or 64) and its constraint letter.
    pub reg_bits: u32,
    pub letter: char,
}

/// A checked snippet with its binding, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub asm: String,
    pub slots: Vec<Slot>,
    pub pack: usize,
    pub args: Vec<DType>,
    pub results: Vec<DType>,
    parsed: parse::Parsed,
}

/// The register width of a constraint letter.
fn letter_bits(c: char) -> Option<u32> {
    match c {
        'h' => Some(16),
        'r' | 'f' => Some(32),
        'l' | 'd' => Some(64),
        _ => None,
    }
}

/// Checks `asm` with its `constraints` for arguments and results of the given element types,
/// `pack` elements per call.
pub fn compile(
    asm: &str,
    constraints: &str,
    args: &[DType],
    results: &[DType],
    pack: usize,
) -> Result<Program, PtxError> {
    if pack == 0 || pack > 16 || !pack.is_power_of_two() {
        return Err(PtxError::whole(format!(
            "`pack={pack}`: bwsim takes packs of 1, 2, 4, 8 or 16 elements"
        )));
    }
    if results.is_empty() {
        return Err(PtxError::whole("the snippet has no result".into()));
    }
    let cons: Vec<&str> = constraints.split(',').map(str::trim).collect();
    let mut slots = Vec::new();
    let mut plan = |output: bool, value: usize, d: DType| -> Result<(), PtxError> {
        let bits = d.bits();
        if bits == 1 || bits == 4 {
            return Err(PtxError::whole(format!(
                "{} {value} is {d}: bwsim binds elements of 8, 16, 32 or 64 bits",
                if output { "result" } else { "argument" }
            )));
        }
        let per = if bits < 32 {
            (32 / bits as usize).min(pack)
        } else {
            1
        };
        for first in (0..pack).step_by(per) {
            slots.push(Slot {
                output,
                value,
                first,
                elems: per,
                elem_bits: bits,
                reg_bits: bits * per as u32,
                letter: ' ',
            });
        }
        Ok(())
    };
    for (i, d) in results.iter().enumerate() {
        plan(true, i, *d)?;
    }
    for (i, d) in args.iter().enumerate() {
        plan(false, i, *d)?;
    }
    let n_out = slots.iter().filter(|s| s.output).count();
    let want_out = cons.iter().filter(|c| c.starts_with('=')).count();
    if cons.len() != slots.len() || want_out != n_out {
        return Err(PtxError::whole(format!(
            "constraints `{constraints}` name {want_out} outputs and {} inputs; with pack={pack} the results need {n_out} registers and the arguments {}",
            cons.len() - want_out,
            slots.len() - n_out
        )));
    }
    for (k, (s, c)) in slots.iter_mut().zip(&cons).enumerate() {
        let body = c.trim_start_matches('=').trim_start_matches('&');
        if c.starts_with('=') != s.output || (!s.output && k < n_out) {
            return Err(PtxError::whole(format!(
                "constraint `{c}` of `${k}`: outputs (`=`) come first"
            )));
        }
        let letter = body.chars().next().filter(|_| body.len() == 1).unwrap_or('?');
        let Some(b) = letter_bits(letter) else {
            return Err(PtxError::whole(format!(
                "constraint `{c}` of `${k}`: bwsim binds registers `h` (16 bits), `r`/`f` (32), `l`/`d` (64)"
            )));
        };
        if b != s.reg_bits {
            return Err(PtxError::whole(format!(
                "constraint `{c}` of `${k}` is a {b}-bit register, but {} {} ({} x {}) takes {} bits",
                if s.output { "result" } else { "argument" },
                s.value,
                s.elems,
                if s.output { results[s.value] } else { args[s.value] },
                s.reg_bits
            )));
        }
        s.letter = letter;
    }
    let bits: Vec<u32> = slots.iter().map(|s| s.reg_bits).collect();
    let parsed = parse::parse(asm, &bits)?;
    assigned_before_use(asm, &parsed, &slots)?;
    let prog = Program {
        asm: asm.to_string(),
        slots,
        pack,
        args: args.to_vec(),
        results: results.to_vec(),
        parsed,
    };
    if pack > 1 {
        prog.check_separable()?;
    }
    Ok(prog)
}

/// Every register is written before it is read (a guarded write counts; the interpreter
/// checks the path), and every output is written.
fn assigned_before_use(asm: &str, p: &parse::Parsed, slots: &[Slot]) -> Result<(), PtxError> {
    use parse::Src;
    let mut w: Vec<bool> = (0..p.reg_bits.len())
        .map(|i| slots.get(i).is_some_and(|s| !s.output))
        .collect();
    for ins in &p.ins {
        let mut reads: Vec<Src> = Vec::new();
        let mut writes: Vec<u16> = Vec::new();
        if let Some((g, _)) = ins.guard {
            reads.push(Src::Reg(g));
        }
        let (r, wr) = deps::operands(&ins.op);
        reads.extend(r);
        writes.extend(wr);
        for r in reads {
            if let Src::Reg(r) = r {
                if !w[r as usize] {
                    let what = if (r as usize) < slots.len() {
                        "the output"
                    } else {
                        "the register"
                    };
                    return Err(PtxError::at(
                        asm,
                        ins.at,
                        format!(
                            "`{}` reads {what} `{}` before writing it (its value is undefined)",
                            &asm[ins.at.0..ins.at.1],
                            p.reg_names[r as usize]
                        ),
                    ));
                }
            }
        }
        for r in writes {
            if slots.get(r as usize).is_some_and(|s| !s.output) {
                return Err(PtxError::at(
                    asm,
                    ins.at,
                    format!(
                        "`{}` writes the input `${r}` (inputs are read-only)",
                        &asm[ins.at.0..ins.at.1]
                    ),
                ));
            }
            w[r as usize] = true;
        }
    }
    for (k, s) in slots.iter().enumerate() {
        if s.output && !w[k] {
            return Err(PtxError::whole(format!(
                "the snippet never writes its output `${k}`"
            )));
        }
    }
    Ok(())
}

impl Program {
    /// Instructions of one call (the issue cost the timing model charges per pack group).
    pub fn instructions(&self) -> usize {
        self.parsed.ins.len()
    }

    /// Whether the snippet uses an instruction of sm_100 (`.f32x2` arithmetic, four-lane fp8
    /// arithmetic).
    pub fn needs_sm100(&self) -> bool {
        self.parsed.ins.iter().any(|i| {
            matches!(&i.op, parse::Op::Float { ty, .. } if ty.lanes == 2 && ty.fmt == float::F32)
                || matches!(&i.op, parse::Op::Packed { .. })
        })
    }

    /// The width of each `$N` register.
    pub fn operand_bits(&self) -> Vec<u32> {
        self.slots.iter().map(|s| s.reg_bits).collect()
    }

    /// One call: `args[a * pack + e]` holds element `e` of argument `a` (its bits); returns
    /// the results the same way (`out[r * pack + e]`).
    pub fn run(&self, args: &[u64]) -> Result<Vec<u64>, RunError> {
        let n = self.parsed.reg_bits.len();
        let mut regs = exec::Regs {
            v: vec![0; n],
            def: vec![false; n],
            p: &self.parsed,
            text: &self.asm,
        };
        for (k, s) in self.slots.iter().enumerate() {
            if s.output {
                continue;
            }
            let mut v = 0u64;
            for j in 0..s.elems {
                let e = args.get(s.value * self.pack + s.first + j).copied().unwrap_or(0);
                v |= (e & parse::mask(s.elem_bits)) << (j as u32 * s.elem_bits);
            }
            regs.v[k] = v;
            regs.def[k] = true;
        }
        regs.run()?;
        let mut out = vec![0u64; self.results.len() * self.pack];
        for (k, s) in self.slots.iter().enumerate() {
            if !s.output {
                continue;
            }
            if !regs.def[k] {
                return Err(RunError::Undefined {
                    reg: format!("${k}"),
                    ins: "the end of the snippet".into(),
                });
            }
            for j in 0..s.elems {
                out[s.value * self.pack + s.first + j] =
                    (regs.v[k] >> (j as u32 * s.elem_bits)) & parse::mask(s.elem_bits);
            }
        }
        Ok(out)
    }

    /// Refuses a snippet whose output elements may depend on other elements of their pack
    /// group: its result would depend on how a thread's registers are grouped, which is the
    /// layout's business, not the element's.
    fn check_separable(&self) -> Result<(), PtxError> {
        let inputs = (0..self.parsed.reg_bits.len())
            .map(|k| match self.slots.get(k) {
                Some(s) if !s.output => (0..s.reg_bits)
                    .map(|b| 1u32 << (s.first + (b / s.elem_bits) as usize))
                    .collect(),
                _ => vec![0; self.parsed.reg_bits[k] as usize],
            })
            .collect();
        let out = deps::flow(&self.parsed, inputs);
        for (k, s) in self.slots.iter().enumerate() {
            if !s.output {
                continue;
            }
            for (b, m) in out[k].iter().enumerate() {
                let e = s.first + b / s.elem_bits as usize;
                if m & !(1u32 << e) != 0 {
                    return Err(PtxError::whole(format!(
                        "element {e} of `${k}` may depend on other elements of its pack of {}: the result would depend on how the layout groups a thread's registers (bwsim takes snippets that compute each element from the same element of the arguments)",
                        self.pack
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Executes one instruction of [`parse::parse_instruction`] (its guard is the caller's) on a
/// register file `v` (bits) with `def` marking the registers that hold a value; `regs` gives
/// the registers' widths and names and `src` the text the instruction's `at` points into.
pub fn step(
    ins: &parse::Ins,
    regs: &parse::Parsed,
    src: &str,
    v: &mut Vec<u64>,
    def: &mut Vec<bool>,
) -> Result<(), RunError> {
    let mut r = exec::Regs {
        v: std::mem::take(v),
        def: std::mem::take(def),
        p: regs,
        text: src,
    };
    let out = r.step(ins);
    *v = r.v;
    *def = r.def;
    out
}

#[cfg(test)]
mod tests;

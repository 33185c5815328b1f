//! Calls and per-thread memory: PTX's call ABI for the `.func` bodies of a module, the
//! external functions a compiler calls (`__assertfail`, `vprintf`), and each thread's local
//! frame (its `.local` variables and the `.param` variables of its call sequences).
//!
//! A call of a `.func` the module defines is inlined when the kernel is loaded ([`inline`]):
//! the callee's registers, labels and variables are renamed apart for that call site (`%r1$c2`,
//! `$L__BB1_3$c2`), its parameters and return parameters become the call sequence's `.param`
//! variables the call names (PTX passes them by value in the parameter space: the caller
//! stores the arguments with `st.param`, the callee reads them with `ld.param`, and the other
//! way round for the return values), and each `ret` jumps past the inlined body. A call
//! sequence's variables live in the calling thread's frame, as its `.local` variables do
//! ([`frame_layout`]); a recursive call is refused.
//!
//! `call __assertfail, (message, file, line, function, charsize)` is a device assertion that
//! failed: the run stops with a `device-assert` finding at the call, naming the message the
//! kernel passes (as the tile machine reports Gluon's `device_assert`). `vprintf` prints
//! nothing here: the front end keeps no output stream. [`Cta::trap`] makes the finding of
//! such a fault, which `Error::Trap` carries (an access outside every buffer is another).

use crate::exec::{Cta, Thread};
use crate::parse::{rename_syms, AddrBase, Instr, Kernel, Module, Operand, Reg, Space, Stmt};
use crate::program::{unsupported, Op};
use crate::Error;
use bwsim_isa::{Code, Diagnostic};
use std::collections::HashMap;

/// How deeply calls may nest before the load refuses the kernel (PTX allows recursion; the
/// compilers bwsim reads do not emit it).
const MAX_DEPTH: u32 = 16;

/// Kernel `k` of module `m` with every call of a `.func` that `m` defines replaced by the
/// function's body (see the module doc); calls of declared-only functions stay.
pub(crate) fn inline(m: &Module, k: &Kernel) -> Result<Kernel, Error> {
    let mut out = Kernel {
        body: Vec::new(),
        ..k.clone()
    };
    let mut sites = 0;
    expand(m, &k.body, &mut out, &mut sites, 0)?;
    Ok(out)
}

/// Appends `body` to `out.body`, inlining the calls in it.
fn expand(m: &Module, body: &[Stmt], out: &mut Kernel, sites: &mut u32, depth: u32) -> Result<(), Error> {
    for st in body {
        match st {
            Stmt::Instr(i) if i.opcode == "call" => match callee(m, i) {
                Some((f, body)) => {
                    if depth >= MAX_DEPTH {
                        return Err(unsupported(i, "recursive calls"));
                    }
                    inline_call(m, i, f, body, out, sites, depth)?;
                }
                None => out.body.push(st.clone()),
            },
            _ => out.body.push(st.clone()),
        }
    }
    Ok(())
}

/// The function a `call` names, with its body, if the module defines it.
fn callee<'m>(m: &'m Module, i: &Instr) -> Option<(&'m crate::parse::Func, &'m Kernel)> {
    let Some(Operand::Sym(name)) = i.operands.get(1) else {
        return None;
    };
    let f = m.func(name)?;
    Some((f, f.body()?))
}

fn invalid(i: &Instr, why: String) -> Error {
    Error::Invalid {
        message: format!("`{}`: {why}", i.opcode),
        span: i.span,
    }
}

/// The names of a call's parameter list (its operand `k`: 0 the return parameters, 2 the
/// arguments): each must be a `.param` variable.
fn param_names(i: &Instr, k: usize) -> Result<Vec<String>, Error> {
    match i.operands.get(k) {
        Some(Operand::Vec(v)) => v
            .iter()
            .map(|o| match o {
                Operand::Sym(n) => Ok(n.clone()),
                _ => Err(unsupported(i, "call arguments other than `.param` variables")),
            })
            .collect(),
        _ => Err(invalid(i, "expected `call (RETS), NAME, (ARGS)`".into())),
    }
}

/// Inlines the call `i` of `f` (body `fk`) into `out`.
fn inline_call(
    m: &Module,
    i: &Instr,
    f: &crate::parse::Func,
    fk: &Kernel,
    out: &mut Kernel,
    sites: &mut u32,
    depth: u32,
) -> Result<(), Error> {
    let (rets, args) = (param_names(i, 0)?, param_names(i, 2)?);
    if args.len() != f.k.params.len() || rets.len() > f.rets.len() {
        return Err(invalid(
            i,
            format!(
                "`{}` takes {} parameters and returns {}; the call gives {} and takes {}",
                f.k.name,
                f.k.params.len(),
                f.rets.len(),
                args.len(),
                rets.len()
            ),
        ));
    }
    *sites += 1;
    let site = *sites;
    let suffix = |n: &str| format!("{n}$c{site}");
    // The callee's registers, appended under names of their own.
    let mut regs = Vec::with_capacity(fk.regs.len());
    for r in &fk.regs {
        if out.regs.len() >= u16::MAX as usize {
            return Err(invalid(i, "too many registers after inlining the call".into()));
        }
        let name = suffix(&r.name);
        regs.push(out.regs.len() as u16);
        out.reg_index.insert(name.clone(), out.regs.len() as u16);
        out.regs.push(Reg { name, bits: r.bits });
    }
    // Symbols: parameters to the call's variables, the callee's own labels and variables to
    // names of this call site.
    let mut names: HashMap<String, String> = HashMap::new();
    for (p, a) in f.k.params.iter().zip(&args) {
        names.insert(p.name.clone(), a.clone());
    }
    for (p, r) in f.rets.iter().zip(&rets) {
        names.insert(p.name.clone(), r.clone());
    }
    for st in &fk.body {
        if let Stmt::Label(l, _) = st {
            names.insert(l.clone(), suffix(l));
        }
    }
    for v in &fk.vars {
        names.insert(v.name.clone(), suffix(&v.name));
        out.vars.push(crate::parse::Var {
            name: suffix(&v.name),
            ..v.clone()
        });
    }
    for (t, ls) in &fk.branch_targets {
        out.branch_targets
            .insert(suffix(t), ls.iter().map(|l| suffix(l)).collect());
    }
    let end = suffix("$L__return");
    let jump = |from: &Instr, guard: Option<(u16, bool)>| Instr {
        guard,
        opcode: "bra".into(),
        mods: vec!["uni".into()],
        operands: vec![Operand::Sym(end.clone())],
        ..from.clone()
    };
    if let Some((p, neg)) = i.guard {
        // A guarded call: the threads whose guard is false go past it.
        out.body.push(Stmt::Instr(jump(i, Some((p, !neg)))));
    }
    let rename = |n: &str| names.get(n).cloned();
    let mut body = Vec::with_capacity(fk.body.len());
    for st in &fk.body {
        body.push(match st {
            Stmt::Label(l, s) => Stmt::Label(suffix(l), *s),
            Stmt::Instr(x) => {
                let mut x = x.clone();
                x.guard = x.guard.map(|(g, n)| (regs[g as usize], n));
                renumber(&mut x.operands, &regs);
                rename_syms(&mut x.operands, &rename);
                if matches!(x.opcode.as_str(), "ret") {
                    x = jump(&x, x.guard);
                }
                Stmt::Instr(x)
            }
        });
    }
    expand(m, &body, out, sites, depth + 1)?;
    out.body.push(Stmt::Label(end, i.span));
    Ok(())
}

/// Maps the callee's register indices in `os` to the inlined ones.
fn renumber(os: &mut [Operand], regs: &[u16]) {
    let r = |x: &mut u16| *x = regs[*x as usize];
    for o in os {
        match o {
            Operand::Reg(x) | Operand::NotReg(x) | Operand::SinkPair(x) => r(x),
            Operand::Pair(x, q) => {
                r(x);
                if let Some(q) = q {
                    r(q);
                }
            }
            Operand::Addr(a) => {
                if let Some(AddrBase::Reg(x)) = &mut a.base {
                    r(x);
                }
            }
            Operand::Tensor(a, cs) => {
                if let Some(AddrBase::Reg(x)) = &mut a.base {
                    r(x);
                }
                renumber(cs, regs);
            }
            Operand::Vec(v) => renumber(v, regs),
            _ => {}
        }
    }
}

/// The per-thread frame of kernel `k` (after [`inline`]): each `.local` and body `.param`
/// variable's byte offset, in declaration order at its alignment, and the frame's size.
pub(crate) fn frame_layout(k: &Kernel) -> (HashMap<String, u64>, u64) {
    let mut at = HashMap::new();
    let mut off = 0u64;
    for v in k
        .vars
        .iter()
        .filter(|v| matches!(v.space, Space::Local | Space::Param))
    {
        let a = v.align.max(1) as u64;
        off = off.div_ceil(a) * a;
        at.insert(v.name.clone(), off);
        off += v.bytes();
    }
    (at, off)
}

/// The operation of a call that [`inline`] left: a function the module only declares.
/// `__assertfail` is a failed device assertion; `vprintf` has no effect here.
pub(crate) fn resolve_extern(i: &Instr, frame: &HashMap<String, u64>) -> Result<Op, Error> {
    let Some(Operand::Sym(name)) = i.operands.get(1) else {
        return Err(invalid(i, "expected `call (RETS), NAME, (ARGS)`".into()));
    };
    match name.as_str() {
        "__assertfail" => {
            let args = param_names(i, 2)?;
            let at = |k: usize| {
                args.get(k).and_then(|n| frame.get(n)).copied().ok_or_else(|| {
                    invalid(
                        i,
                        "`__assertfail` takes (message, file, line, function, charsize)".into(),
                    )
                })
            };
            Ok(Op::Assert {
                message: at(0)?,
                file: at(1)?,
                line: at(2)?,
            })
        }
        "vprintf" => Ok(Op::Nop),
        _ => Err(unsupported(
            i,
            &format!("a call of `{name}`, which the module declares but does not define"),
        )),
    }
}

/// Where a generic address of a thread's frame starts (`cvta.local`).
pub const LOCAL_WINDOW: u64 = 1 << 58;

/// Longest assertion message or file name read from memory.
const MAX_TEXT: u64 = 1024;

impl Cta<'_> {
    /// Bytes `a..a + n` of thread `t`'s frame, or a fault.
    fn frame_range(&self, t: &Thread, a: u64, n: u32, pc: usize) -> Result<std::ops::Range<usize>, Error> {
        match a.checked_add(n as u64) {
            Some(e) if e <= t.frame.len() as u64 && a.is_multiple_of(n as u64) => Ok(a as usize..e as usize),
            _ => Err(self.rt(
                pc,
                format!(
                    "a {n}-byte access at {a:#x} is outside the thread's {} bytes of local and call parameters, or misaligned",
                    t.frame.len()
                ),
            )),
        }
    }

    /// An `n`-byte little-endian load from thread `t`'s frame.
    pub(crate) fn frame_load(&self, t: &Thread, a: u64, n: u32, pc: usize) -> Result<u64, Error> {
        let r = self.frame_range(t, a, n, pc)?;
        Ok(t.frame[r].iter().take(8).rev().fold(0, |v, &b| v << 8 | b as u64))
    }

    /// An `n`-byte little-endian store into thread `t`'s frame.
    pub(crate) fn frame_store(&self, t: &mut Thread, a: u64, n: u32, v: u64, pc: usize) -> Result<(), Error> {
        let r = self.frame_range(t, a, n, pc)?;
        for (k, b) in t.frame[r].iter_mut().enumerate() {
            *b = if k < 8 { (v >> (8 * k)) as u8 } else { 0 };
        }
        Ok(())
    }

    /// The failed assertion of thread `t` at `pc`: the `device-assert` finding
    /// that stops the run, with the message, file and line the call passes.
    pub(crate) fn assert_fail(&mut self, t: &Thread, op: &Op, pc: usize) -> Error {
        let Op::Assert { message, file, line } = *op else {
            return self.rt(pc, "internal: not an assertion".into());
        };
        let text = |cta: &mut Self, at: u64| -> String {
            let Ok(mut a) = cta.frame_load(t, at, 8, pc) else {
                return String::new();
            };
            let mut s = Vec::new();
            while (s.len() as u64) < MAX_TEXT {
                let (sp, x) = cta.locate(None, &crate::program::Base::None, a);
                match cta.load(sp, x, 1, pc) {
                    Ok(0) | Err(_) => break,
                    Ok(b) => s.push(b as u8),
                }
                a += 1;
            }
            String::from_utf8_lossy(&s).into_owned()
        };
        let msg = text(self, message);
        let file = text(self, file);
        let line = self.frame_load(t, line, 4, pc).unwrap_or(0);
        let message = format!(
            "device assertion `{msg}` failed ({file}:{line}) in thread {:?} of CTA {:?} (on the GPU, cudaErrorAssert)",
            t.tid, self.ctaid
        );
        self.trap(pc, Code::DeviceAssert, message, "the assertion failed here")
    }

    /// The error of a fault at `pc` that stops the launch with a CUDA error: a finding of
    /// `code` labelled `label` there.
    pub(crate) fn trap(&self, pc: usize, code: Code, message: String, label: &str) -> Error {
        let span = self.p.ins.get(pc).map_or(bwsim_isa::Span::DUMMY, |i| i.span);
        let message = format!("{message}, at {}", self.p.place(pc));
        Error::Trap(Box::new(crate::machine::Finding {
            code,
            pc,
            with: Vec::new(),
            diagnostic: Diagnostic::error(code, message, span, label),
        }))
    }
}

//! `inline_asm`: the snippet emitted as inline PTX the way Triton emits it, once per group of
//! `pack` registers of a thread (in register order): each `$N` bound to a register of its
//! constraint's width (`h` 16 bits, `r`/`f` 32, `l`/`d` 64), elements narrower than 32 bits
//! packed into one register (`mov.b32 r, {a, b}`; 8-bit elements, each held in the low byte
//! of a 16-bit register, shifted into their bytes), the snippet in a `{ }` scope of its own so
//! that its `.reg` declarations do not collide across copies. The type checker admits only
//! snippets whose elements do not depend on each other, so any grouping of registers is the
//! same computation; a last partial group repeats its last register.

use super::*;
use bwsim_isa::inline_ptx::Program;

/// The register class of a constraint letter.
fn class_of(letter: char) -> RegClass {
    match letter {
        'h' => RegClass::B16,
        'f' => RegClass::F32,
        'l' | 'd' => RegClass::B64,
        _ => RegClass::B32,
    }
}

fn bits_name(c: RegClass) -> &'static str {
    match c {
        RegClass::B16 => "b16",
        RegClass::B64 => "b64",
        _ => "b32",
    }
}

/// `text` with every `$N` replaced by `ops[N]`.
fn substitute(text: &str, ops: &[String]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut it = text.char_indices().peekable();
    while let Some((_, c)) = it.next() {
        if c != '$' {
            out.push(c);
            continue;
        }
        let mut n = String::new();
        while let Some(&(_, d)) = it.peek() {
            if !d.is_ascii_digit() {
                break;
            }
            n.push(d);
            it.next();
        }
        match n.parse::<usize>().ok().and_then(|k| ops.get(k)) {
            Some(r) => out.push_str(r),
            None => {
                out.push('$');
                out.push_str(&n);
            }
        }
    }
    out
}

impl<'c, 'k> Lowerer<'c, 'k> {
    pub(super) fn inline_asm(&mut self, op: &Op, args: &Expr) -> LResult<Val> {
        let name = "inline_asm";
        let span = op.span;
        let prog: std::sync::Arc<Program> = self
            .ck
            .inline_asm(op)
            .cloned()
            .ok_or_else(|| invalid(name, span, "the snippet was not type-checked"))?;
        let ExprKind::List(items) = &args.kind else {
            return Err(invalid(name, args.span, "the arguments are a list"));
        };
        let mut vals = Vec::with_capacity(items.len());
        for a in items {
            vals.push(self.expr(a)?);
        }
        let any_tile = vals.iter().any(|v| matches!(v, Val::Tile(_)));
        let refs: Vec<&Val> = vals.iter().collect();
        let (tiles, ll, parent) = if any_tile {
            let (t, ll, p) = self.align_tiles(&refs, span)?;
            (t, Some(ll), p)
        } else {
            (vec![None; vals.len()], None, None)
        };
        // Per argument: its registers (one per register index), or one scalar register.
        let mut srcs: Vec<Vec<Reg>> = Vec::with_capacity(vals.len());
        for (i, v) in vals.iter().enumerate() {
            match &tiles[i] {
                Some(t) => srcs.push(t.regs.clone()),
                None => {
                    let st = match prog.args[i] {
                        DType::I64 => ScalarTy::I64,
                        DType::F32 => ScalarTy::F32,
                        DType::I32 => ScalarTy::I32,
                        d => return Err(unsupported(name, span, format!("a scalar argument of {d}"))),
                    };
                    srcs.push(vec![self.scalar_reg(v, st, span)?]);
                }
            }
        }
        let nregs = ll.as_ref().map_or(1, |l| l.num_regs());
        let mut results: Vec<Vec<Reg>> = Vec::with_capacity(prog.results.len());
        let mut out_tiles = Vec::new();
        for d in &prog.results {
            match &ll {
                Some(l) => {
                    let t = self.fresh_tile(*d, l.clone(), parent.clone(), span)?;
                    results.push(t.regs.clone());
                    out_tiles.push(Val::Tile(t));
                }
                None => {
                    let st = match d {
                        DType::I64 => ScalarTy::I64,
                        DType::F32 => ScalarTy::F32,
                        _ => ScalarTy::I32,
                    };
                    let r = self.e.reg(scalar_class(st));
                    results.push(vec![r]);
                    out_tiles.push(Val::Scalar(st, r));
                }
            }
        }
        let pack = prog.pack;
        for g in (0..nregs).step_by(pack) {
            let at = |k: usize, regs: &[Reg]| regs[(g + k).min(nregs - 1).min(regs.len() - 1)];
            let mut ops = Vec::with_capacity(prog.slots.len());
            let mut after = Vec::new();
            for s in &prog.slots {
                let class = class_of(s.letter);
                let tmp = self.e.reg(class);
                let regs = if s.output {
                    &results[s.value]
                } else {
                    &srcs[s.value]
                };
                let elems: Vec<Reg> = (0..s.elems).map(|j| at(s.first + j, regs)).collect();
                if s.output {
                    // Only elements of this group that exist are written back.
                    let live: Vec<Option<Reg>> = (0..s.elems)
                        .map(|j| (g + s.first + j < nregs || nregs == 1).then_some(elems[j]))
                        .collect();
                    after.push((tmp, class, live, s.elem_bits));
                } else if s.elems == 1 {
                    let src = elems[0];
                    if src.class == class {
                        ops.push(src.to_string());
                        continue;
                    }
                    self.e.ins(format!("mov.{} {tmp}, {src}", bits_name(class)));
                } else if s.elem_bits == 8 {
                    // 8-bit elements (each in the low byte of its 16-bit register): element
                    // j into byte j.
                    let acc = self.e.reg(RegClass::B32);
                    self.e.ins(format!("mov.b32 {acc}, 0"));
                    for (j, r) in elems.iter().enumerate() {
                        let x = self.e.reg(RegClass::B32);
                        self.e.ins(format!("cvt.u32.u16 {x}, {r}"));
                        self.e.ins(format!("and.b32 {x}, {x}, 255"));
                        self.e.ins(format!("shl.b32 {x}, {x}, {}", 8 * j));
                        self.e.ins(format!("or.b32 {acc}, {acc}, {x}"));
                    }
                    match class {
                        RegClass::B16 => self.e.ins(format!("cvt.u16.u32 {tmp}, {acc}")),
                        _ => self.e.ins(format!("mov.b32 {tmp}, {acc}")),
                    }
                } else {
                    let parts: Vec<String> = elems.iter().map(|r| r.to_string()).collect();
                    self.e.ins(format!(
                        "mov.{} {tmp}, {{{}}}",
                        bits_name(class),
                        parts.join(", ")
                    ));
                }
                ops.push(tmp.to_string());
            }
            let text = substitute(&prog.asm, &ops);
            let mut lines = vec!["\t{".to_string()];
            lines.extend(
                text.lines()
                    .map(|l| l.trim())
                    .filter(|l| !l.is_empty())
                    .map(|l| format!("\t{l}")),
            );
            lines.push("\t}".to_string());
            self.e.raw(lines);
            for (tmp, class, live, elem_bits) in after {
                if elem_bits == 8 && live.len() > 1 {
                    // Byte j of the result to element j's 16-bit register.
                    let w = self.e.reg(RegClass::B32);
                    match class {
                        RegClass::B16 => self.e.ins(format!("cvt.u32.u16 {w}, {tmp}")),
                        _ => self.e.ins(format!("mov.b32 {w}, {tmp}")),
                    }
                    for (j, d) in live.iter().enumerate() {
                        if let Some(d) = d {
                            let y = self.e.reg(RegClass::B32);
                            self.e.ins(format!("shr.b32 {y}, {w}, {}", 8 * j));
                            self.e.ins(format!("and.b32 {y}, {y}, 255"));
                            self.e.ins(format!("cvt.u16.u32 {d}, {y}"));
                        }
                    }
                } else if live.len() == 1 {
                    if let Some(d) = live[0] {
                        self.e.ins(format!("mov.{} {d}, {tmp}", bits_name(class)));
                    }
                } else {
                    let parts: Vec<String> = live
                        .iter()
                        .map(|d| d.map_or("_".to_string(), |r| r.to_string()))
                        .collect();
                    self.e.ins(format!(
                        "mov.{} {{{}}}, {tmp}",
                        bits_name(class),
                        parts.join(", ")
                    ));
                }
            }
        }
        Ok(if out_tiles.len() == 1 {
            out_tiles.remove(0)
        } else {
            Val::Tuple(out_tiles)
        })
    }
}

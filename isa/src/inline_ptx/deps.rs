//! Which elements of a pack group each output bit can depend on: a conservative dataflow
//! over the instructions, exact for bit moves (`mov` packs and unpacks, bitwise logic,
//! shifts and permutes by immediates) and lane by lane for packed arithmetic (`.f16x2`,
//! `.f32x2`, packing `cvt`). A snippet whose every output element depends only on the same
//! element of the arguments computes the same result however a thread's registers are
//! grouped, so the simulator may group elements in any order.

use super::parse::{FOp, Ins, Op, Parsed, RegId, Src, Ty};

/// Per bit of a register: a bit set of the pack-group elements it may depend on.
type D = Vec<u32>;

fn union(v: &[u32]) -> u32 {
    v.iter().fold(0, |a, b| a | b)
}

pub(super) struct Flow<'p> {
    pub(super) p: &'p Parsed,
    /// Per register; a register past the end depends on nothing.
    pub(super) d: Vec<D>,
}

impl Flow<'_> {
    fn get(&self, s: Src, bits: u32) -> D {
        match s {
            Src::Imm(_) => vec![0; bits as usize],
            Src::Reg(r) => {
                let mut v = self.d.get(r as usize).cloned().unwrap_or_default();
                v.resize(bits as usize, 0);
                v
            }
        }
    }
    fn all(&self, s: Src, bits: u32) -> u32 {
        union(&self.get(s, bits))
    }
    fn bits(&self, r: RegId) -> u32 {
        self.p.reg_bits[r as usize]
    }
    /// Every bit of `d` depends on everything in `m`.
    fn set_all(&mut self, d: RegId, m: u32) -> D {
        vec![m; self.bits(d) as usize]
    }
    /// The dependencies of `d`, which takes bits of `src` the control operand `ctrl` chooses:
    /// `pick(c)` when `ctrl` is the immediate `c`, else every bit of `d` depends on all of
    /// `src` and of `ctrl`.
    fn by_control(
        &mut self,
        d: RegId,
        src: &[u32],
        ctrl: Src,
        pick: impl FnOnce(u64) -> D,
    ) -> Vec<(RegId, D)> {
        let v = match Self::imm(ctrl) {
            Some(c) => pick(c),
            None => {
                let m = union(src) | self.all(ctrl, 32);
                self.set_all(d, m)
            }
        };
        vec![(d, v)]
    }
    fn imm(s: Src) -> Option<u64> {
        match s {
            Src::Imm(v) => Some(v),
            Src::Reg(_) => None,
        }
    }

    /// The new dependencies of the registers `ins` writes.
    pub(super) fn step(&mut self, ins: &Ins) -> Vec<(RegId, D)> {
        let w = |f: &Self, r: RegId| f.bits(r);
        match &ins.op {
            Op::Mov { d, a } => vec![(*d, self.get(*a, w(self, *d)))],
            Op::Pack { d, parts, bits } => {
                let mut v = Vec::new();
                for p in parts {
                    v.extend(self.get(*p, *bits));
                }
                vec![(*d, v)]
            }
            Op::Unpack { ds, a, bits } => {
                let src = self.get(*a, bits * ds.len() as u32);
                ds.iter()
                    .enumerate()
                    .filter_map(|(k, d)| {
                        d.map(|d| (d, src[k * *bits as usize..(k + 1) * *bits as usize].to_vec()))
                    })
                    .collect()
            }
            Op::Bit { d, s, bits, op } => {
                let n = *bits as usize;
                let srcs: Vec<D> = s.iter().map(|x| self.get(*x, *bits)).collect();
                // A constant operand decides the bits it forces: `and` with a 0 bit gives 0,
                // `or` with a 1 bit gives 1, whatever the other operand's bit is.
                let forced = s.iter().fold(0u64, |acc, x| match (op, Self::imm(*x)) {
                    (super::parse::BOp::And, Some(c)) => acc | !c,
                    (super::parse::BOp::Or, Some(c)) => acc | c,
                    _ => acc,
                });
                let v = (0..n)
                    .map(|i| {
                        if i < 64 && (forced >> i) & 1 == 1 {
                            0
                        } else {
                            srcs.iter().fold(0, |a, x| a | x[i])
                        }
                    })
                    .collect::<D>();
                if matches!(
                    ins.op,
                    Op::Bit {
                        op: super::parse::BOp::Cnot,
                        ..
                    }
                ) {
                    let m = union(&v);
                    return vec![(*d, self.set_all(*d, m))];
                }
                vec![(*d, v)]
            }
            Op::Lop3 { d, a, b, c, .. } => {
                let (a, b, c) = (self.get(*a, 32), self.get(*b, 32), self.get(*c, 32));
                vec![(*d, (0..32).map(|i| a[i] | b[i] | c[i]).collect())]
            }
            Op::Selp { d, a, b, c } => {
                let n = w(self, *d);
                let (a, b, c) = (self.get(*a, n), self.get(*b, n), self.all(*c, 1));
                vec![(*d, (0..n as usize).map(|i| a[i] | b[i] | c).collect())]
            }
            Op::Float { op, ty, d, s, .. } => {
                let fb = ty.fmt.bits as usize;
                let srcs: Vec<D> = s.iter().map(|x| self.get(*x, ty.bits())).collect();
                let mut v = vec![0; ty.bits() as usize];
                for lane in 0..ty.lanes as usize {
                    let m = srcs
                        .iter()
                        .fold(0, |a, x| a | union(&x[lane * fb..(lane + 1) * fb]));
                    // Negation and absolute value move bits, but a NaN canonicalises: the
                    // whole lane either way.
                    let _ = matches!(op, FOp::Neg | FOp::Abs);
                    v[lane * fb..(lane + 1) * fb].iter_mut().for_each(|x| *x = m);
                }
                vec![(*d, v)]
            }
            Op::Packed { types, d, s, .. } => {
                // Lane i of the result depends on lane i of every source (4 or 8 bits wide).
                let srcs: Vec<(D, usize)> = s
                    .iter()
                    .zip(types)
                    .map(|(x, t)| (self.get(*x, 4 * t.bits()), t.bits() as usize))
                    .collect();
                let mut v = vec![0; 32];
                for lane in 0..4 {
                    let m = srcs
                        .iter()
                        .fold(0, |a, (x, w)| a | union(&x[lane * w..(lane + 1) * w]));
                    v[lane * 8..(lane + 1) * 8].iter_mut().for_each(|x| *x = m);
                }
                vec![(*d, v)]
            }
            Op::Shift {
                left,
                arith,
                bits,
                d,
                a,
                b,
            } => {
                let n = *bits as usize;
                let src = self.get(*a, *bits);
                self.by_control(*d, &src, *b, |k| {
                    let k = k as usize;
                    (0..n)
                        .map(|i| {
                            if *left {
                                if i >= k {
                                    src[i - k]
                                } else {
                                    0
                                }
                            } else if i + k < n {
                                src[i + k]
                            } else if *arith {
                                src[n - 1]
                            } else {
                                0
                            }
                        })
                        .collect()
                })
            }
            Op::Shf {
                left,
                clamp,
                d,
                a,
                b,
                c,
            } => {
                let mut src = self.get(*a, 32);
                src.extend(self.get(*b, 32));
                self.by_control(*d, &src, *c, |c| {
                    let n = if *clamp { c.min(32) } else { c & 31 } as usize;
                    (0..32)
                        .map(|i| {
                            // Bit i of the result is bit (32 + i - n) of {b, a} shifted left,
                            // or bit (i + n) shifted right.
                            let j = if *left { 32 + i - n } else { i + n };
                            src.get(j).copied().unwrap_or(0)
                        })
                        .collect()
                })
            }
            Op::Prmt { d, a, b, c } => {
                let mut src = self.get(*a, 32);
                src.extend(self.get(*b, 32));
                self.by_control(*d, &src, *c, |c| {
                    let mut v = vec![0; 32];
                    for k in 0..4 {
                        let sel = ((c >> (4 * k)) & 0xf) as usize;
                        let byte = (sel & 7) * 8;
                        for i in 0..8 {
                            v[8 * k + i] = if sel & 8 != 0 {
                                src[byte + 7]
                            } else {
                                src[byte + i]
                            };
                        }
                    }
                    v
                })
            }
            Op::Bfe {
                bits,
                d,
                a,
                b,
                c,
                signed,
            } => {
                let n = *bits as usize;
                let src = self.get(*a, *bits);
                match (Self::imm(*b), Self::imm(*c)) {
                    (Some(pos), Some(len)) => {
                        let (pos, len) = ((pos & 0xff) as usize, (len & 0xff) as usize);
                        let sbit = if *signed && len > 0 {
                            src[(pos + len - 1).min(n - 1)]
                        } else {
                            0
                        };
                        let v = (0..n)
                            .map(|i| {
                                if i < len && pos + i < n {
                                    src[pos + i]
                                } else {
                                    sbit
                                }
                            })
                            .collect();
                        vec![(*d, v)]
                    }
                    _ => {
                        let m = union(&src) | self.all(*b, 32) | self.all(*c, 32);
                        vec![(*d, self.set_all(*d, m))]
                    }
                }
            }
            Op::Bfi { bits, d, a, b, c, e } => {
                let n = *bits as usize;
                let (sa, sb) = (self.get(*a, *bits), self.get(*b, *bits));
                match (Self::imm(*c), Self::imm(*e)) {
                    (Some(pos), Some(len)) => {
                        let (pos, len) = ((pos & 0xff) as usize, (len & 0xff) as usize);
                        let v = (0..n)
                            .map(|i| {
                                if i >= pos && i - pos < len {
                                    sa[i - pos]
                                } else {
                                    sb[i]
                                }
                            })
                            .collect();
                        vec![(*d, v)]
                    }
                    _ => {
                        let m = union(&sa) | union(&sb) | self.all(*c, 32) | self.all(*e, 32);
                        vec![(*d, self.set_all(*d, m))]
                    }
                }
            }
            Op::Setp {
                ty,
                lanes,
                p,
                q,
                a,
                b,
                combine,
                ..
            } => {
                let lb = ty.bits() as usize;
                let (a, b) = (self.get(*a, ty.bits() * lanes), self.get(*b, ty.bits() * lanes));
                let cm = combine.map(|(_, s, _)| self.all(s, 1)).unwrap_or(0);
                let lane = |k: usize| union(&a[k * lb..(k + 1) * lb]) | union(&b[k * lb..(k + 1) * lb]) | cm;
                let (mp, mq) = if *lanes == 2 {
                    (lane(0), lane(1))
                } else {
                    (lane(0), lane(0))
                };
                let mut out = Vec::new();
                if let Some(p) = p {
                    out.push((*p, vec![mp]));
                }
                if let Some(q) = q {
                    out.push((*q, vec![mq]));
                }
                out
            }
            Op::Int { d, s, .. } => {
                let m = s.iter().fold(0, |acc, x| acc | self.all(*x, 64));
                vec![(*d, self.set_all(*d, m))]
            }
            Op::Carry { d, s, cin, cout, .. } => {
                let cin = cin.map(|f| self.all(Src::Reg(f), 1)).unwrap_or(0);
                let m = s.iter().fold(cin, |acc, x| acc | self.all(*x, 64));
                let mut out = vec![(*d, self.set_all(*d, m))];
                out.extend(cout.map(|f| (f, vec![m])));
                out
            }
            // An integer conversion without `.sat` truncates or extends: bit i is the
            // source's bit i, then copies of its sign bit (signed) or zeros.
            Op::Cvt {
                dst: Ty::Int(dt),
                src: Ty::Int(st),
                m,
                d,
                a,
            } if !m.sat => {
                let s = self.get(*a, st.bits);
                let top = if st.signed { s[st.bits as usize - 1] } else { 0 };
                let v = (0..dt.bits as usize)
                    .map(|i| s.get(i).copied().unwrap_or(top))
                    .collect();
                vec![(*d, v)]
            }
            Op::Cvt { d, a, src, .. } => {
                let m = self.all(*a, src.bits().max(16));
                vec![(*d, self.set_all(*d, m))]
            }
            Op::CvtPack {
                dst, src, d, a, b, ..
            } => {
                let db = dst.bits as usize;
                let (hi, lo) = if src.bits == 16 {
                    let s = self.get(*a, 32);
                    (union(&s[16..]), union(&s[..16]))
                } else {
                    (self.all(*a, 32), self.all(*b, 32))
                };
                let mut v = vec![lo; db];
                v.extend(vec![hi; db]);
                vec![(*d, v)]
            }
            Op::CvtUnpack { dst, src, d, a, .. } => {
                let sb = src.bits as usize;
                let s = self.get(*a, 16);
                let (lo, hi) = (union(&s[..sb]), union(&s[sb..2 * sb]));
                let db = dst.bits as usize;
                let mut v = vec![lo; db];
                v.extend(vec![hi; db]);
                vec![(*d, v)]
            }
        }
    }
}

/// The sources an instruction reads and the registers it writes (its guard aside).
pub fn operands(op: &Op) -> (Vec<Src>, Vec<RegId>) {
    let mut reads: Vec<Src> = Vec::new();
    let mut writes: Vec<RegId> = Vec::new();
    match op {
        Op::Mov { d, a } => {
            reads.push(*a);
            writes.push(*d);
        }
        Op::Pack { d, parts, .. } => {
            reads.extend(parts);
            writes.push(*d);
        }
        Op::Unpack { ds, a, .. } => {
            reads.push(*a);
            writes.extend(ds.iter().flatten());
        }
        Op::Int { d, s, .. } | Op::Bit { d, s, .. } | Op::Float { d, s, .. } | Op::Packed { d, s, .. } => {
            reads.extend(s);
            writes.push(*d);
        }
        Op::Carry { d, s, cin, cout, .. } => {
            reads.extend(s);
            reads.extend(cin.map(Src::Reg));
            writes.push(*d);
            writes.extend(cout);
        }
        Op::Shift { d, a, b, .. } => {
            reads.extend([*a, *b]);
            writes.push(*d);
        }
        Op::Setp {
            p: pp,
            q,
            a,
            b,
            combine,
            ..
        } => {
            reads.extend([*a, *b]);
            reads.extend(combine.map(|c| c.1));
            writes.extend(pp.iter().chain(q.iter()));
        }
        Op::Selp { d, a, b, c } | Op::Prmt { d, a, b, c } | Op::Lop3 { d, a, b, c, .. } => {
            reads.extend([*a, *b, *c]);
            writes.push(*d);
        }
        Op::Shf { d, a, b, c, .. } | Op::Bfe { d, a, b, c, .. } => {
            reads.extend([*a, *b, *c]);
            writes.push(*d);
        }
        Op::Bfi { d, a, b, c, e, .. } => {
            reads.extend([*a, *b, *c, *e]);
            writes.push(*d);
        }
        Op::Cvt { d, a, .. } | Op::CvtUnpack { d, a, .. } => {
            reads.push(*a);
            writes.push(*d);
        }
        Op::CvtPack { d, a, b, .. } => {
            reads.extend([*a, *b]);
            writes.push(*d);
        }
    }
    (reads, writes)
}

/// Runs the dataflow from `inputs` (per register, per bit) and returns every register's
/// dependencies at the end.
pub(super) fn flow(p: &Parsed, inputs: Vec<D>) -> Vec<D> {
    let mut f = Flow { p, d: inputs };
    for ins in &p.ins {
        let g = ins.guard.map(|(r, _)| union(&f.d[r as usize])).unwrap_or(0);
        for (r, mut v) in f.step(ins) {
            if ins.guard.is_some() {
                let old = &f.d[r as usize];
                for (i, x) in v.iter_mut().enumerate() {
                    *x |= g | old.get(i).copied().unwrap_or(0);
                }
            }
            v.resize(f.bits(r) as usize, 0);
            f.d[r as usize] = v;
        }
    }
    f.d
}

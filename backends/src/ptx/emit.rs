//! PTX text emission: typed virtual registers, labels, instruction lines, and the record of
//! which IR operation produced each line.
//!
//! This module knows PTX syntax only (register classes, how a line is written); what the lines
//! mean is decided by [`super::lower`].

use bwsim_isa::Span;
use std::fmt;

/// The register classes the backend declares (`.reg .pred %p<N>;` and so on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegClass {
    /// Predicates (`%p`): i1 values.
    Pred,
    /// 16-bit (`%h`): f16, bf16 and 8/16-bit integers (8-bit values live in the low byte).
    B16,
    /// 32-bit integers and raw bits (`%r`).
    B32,
    /// 32-bit floats (`%f`).
    F32,
    /// 64-bit integers and addresses (`%rd`).
    B64,
    /// 128-bit values (`%rq`): a cluster-launch-control response.
    B128,
}

impl RegClass {
    const ALL: [RegClass; 6] = [
        RegClass::Pred,
        RegClass::B16,
        RegClass::B32,
        RegClass::F32,
        RegClass::B64,
        RegClass::B128,
    ];

    fn index(self) -> usize {
        match self {
            RegClass::Pred => 0,
            RegClass::B16 => 1,
            RegClass::B32 => 2,
            RegClass::F32 => 3,
            RegClass::B64 => 4,
            RegClass::B128 => 5,
        }
    }
    fn prefix(self) -> &'static str {
        match self {
            RegClass::Pred => "%p",
            RegClass::B16 => "%h",
            RegClass::B32 => "%r",
            RegClass::F32 => "%f",
            RegClass::B64 => "%rd",
            RegClass::B128 => "%rq",
        }
    }
    /// The PTX type a register of this class is declared with (`.b32`), which is also the
    /// type that moves it to and from memory as it is (a predicate excepted).
    pub(crate) fn decl_type(self) -> &'static str {
        match self {
            RegClass::Pred => ".pred",
            RegClass::B16 => ".b16",
            RegClass::B32 => ".b32",
            RegClass::F32 => ".f32",
            RegClass::B64 => ".b64",
            RegClass::B128 => ".b128",
        }
    }
}

/// A virtual register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reg {
    pub class: RegClass,
    pub idx: u32,
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.class.prefix(), self.idx)
    }
}

/// Where a PTX line came from: the IR operation (or statement) and its source span.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Origin {
    /// The operation's `.tile` name (`tma.load`), or a statement kind (`let`, `for`, `kernel`).
    pub op: String,
    pub span: Span,
}

/// Accumulates the body of one `.entry`.
#[derive(Default)]
pub struct Emitter {
    lines: Vec<(String, Option<Origin>)>,
    counts: [u32; 6],
    labels: u32,
    cur: Option<Origin>,
    /// Deferred tensor-memory loads (see [`Emitter::defer_load`]).
    pending: Vec<Deferred>,
}

/// A `tcgen05.ld` held back until one of its registers is read.
struct Deferred {
    regs: Vec<String>,
    lines: Vec<String>,
    origin: Option<Origin>,
}

/// Instructions that neither synchronise nor touch tensor memory: a deferred load may move
/// past them (docs/semantics.md#completion-and-ordering: TMEM changes only through the tensor pipe,
/// which a partition orders with barriers, mbarriers and tcgen05 operations, none of them in this
/// list).
const PURE_PREFIXES: &[&str] = &[
    "add.",
    "sub.",
    "mul.",
    "mad.",
    "div.",
    "rem.",
    "neg.",
    "abs.",
    "min.",
    "max.",
    "fma.",
    "and.",
    "or.",
    "xor.",
    "not.",
    "shl.",
    "shr.",
    "bfe.",
    "setp.",
    "selp.",
    "cvt.",
    "cvta.",
    "mov.",
    "ld.shared.",
    "st.shared.",
    "ld.global.",
    "st.global.",
    "ld.param.",
    "fence.proxy.async",
];

/// The `%name` register tokens of an instruction.
fn reg_tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '%' || c == '_'))
        .filter(|t| t.starts_with('%'))
}

impl Emitter {
    pub fn new() -> Emitter {
        Emitter::default()
    }

    /// A fresh register of the class.
    pub fn reg(&mut self, class: RegClass) -> Reg {
        let c = &mut self.counts[class.index()];
        let r = Reg { class, idx: *c };
        *c += 1;
        r
    }

    /// `N` fresh registers of the class, numbered in order.
    pub fn regs<const N: usize>(&mut self, class: RegClass) -> [Reg; N] {
        std::array::from_fn(|_| self.reg(class))
    }

    /// A fresh label name.
    pub fn label(&mut self, hint: &str) -> String {
        self.labels += 1;
        format!("$L{}_{}", self.labels, hint)
    }

    /// Set the origin recorded for the following lines; returns the previous one.
    pub fn set_origin(&mut self, o: Option<Origin>) -> Option<Origin> {
        std::mem::replace(&mut self.cur, o)
    }

    /// One instruction (the `;` is added).
    pub fn ins(&mut self, text: impl AsRef<str>) {
        let t = text.as_ref();
        if !self.pending.is_empty() {
            self.flush_for(t);
        }
        self.lines.push((format!("\t{t};"), self.cur.clone()));
    }

    /// Lines as written (an inline-PTX block: its own `{ }` and `;`s), after every deferred
    /// load (the block may read any register).
    pub fn raw(&mut self, lines: Vec<String>) {
        self.flush_all();
        for l in lines {
            self.lines.push((l, self.cur.clone()));
        }
    }

    /// Hold back a tensor-memory load (`lines`, which write `regs`, followed by a
    /// `tcgen05.wait::ld`) until an instruction reads one of `regs`, or until any instruction
    /// that synchronises, branches or touches tensor memory. This keeps a large accumulator
    /// from being live in registers all at once when it is consumed piece by piece, as
    /// Triton's TMEM subtiling does.
    pub fn defer_load(&mut self, regs: Vec<Reg>, lines: Vec<String>) {
        self.pending.push(Deferred {
            regs: regs.iter().map(|r| r.to_string()).collect(),
            lines,
            origin: self.cur.clone(),
        });
    }

    /// Emit every deferred load now.
    pub fn flush_all(&mut self) {
        let all = std::mem::take(&mut self.pending);
        self.emit_deferred(all);
    }

    fn flush_for(&mut self, text: &str) {
        let body = match text.strip_prefix('@') {
            Some(r) => r.split_once(' ').map(|x| x.1).unwrap_or(r),
            None => text,
        };
        // Bulk-group bookkeeping and TMA stores signal no barrier, so another agent cannot
        // be released by them to overwrite tensor memory.
        let bulk = body.starts_with("cp.async.bulk.wait_group")
            || body.starts_with("cp.async.bulk.commit_group")
            || (body.starts_with("cp.async.bulk.tensor") && body.contains(".global.shared::cta"));
        if !bulk && !PURE_PREFIXES.iter().any(|p| body.starts_with(p)) {
            self.flush_all();
            return;
        }
        let used: std::collections::HashSet<&str> = reg_tokens(text).collect();
        let (now, later): (Vec<Deferred>, Vec<Deferred>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|d| d.regs.iter().any(|r| used.contains(r.as_str())));
        self.pending = later;
        self.emit_deferred(now);
    }

    fn emit_deferred(&mut self, ds: Vec<Deferred>) {
        if ds.is_empty() {
            return;
        }
        for d in ds {
            for l in d.lines {
                self.lines.push((format!("\t{l};"), d.origin.clone()));
            }
        }
        self.lines
            .push(("\ttcgen05.wait::ld.sync.aligned;".to_string(), self.cur.clone()));
    }

    /// One instruction under a guard predicate (`@p ins;`), or unguarded when `None`.
    pub fn ins_if(&mut self, pred: Option<Reg>, text: impl AsRef<str>) {
        match pred {
            Some(p) => self.ins(format!("@{p} {}", text.as_ref())),
            None => self.ins(text),
        }
    }

    /// Place a label.
    pub fn place(&mut self, label: &str) {
        self.flush_all();
        self.lines.push((format!("{label}:"), self.cur.clone()));
    }

    /// A comment line.
    pub fn comment(&mut self, text: impl AsRef<str>) {
        self.lines
            .push((format!("\t// {}", text.as_ref()), self.cur.clone()));
    }

    /// Register declarations for every class used.
    pub fn declarations(&self) -> Vec<String> {
        RegClass::ALL
            .iter()
            .filter(|c| self.counts[c.index()] > 0)
            .map(|c| {
                format!(
                    "\t.reg {} {}<{}>;",
                    c.decl_type(),
                    c.prefix(),
                    self.counts[c.index()]
                )
            })
            .collect()
    }

    /// The body lines with their origins.
    pub fn into_lines(mut self) -> Vec<(String, Option<Origin>)> {
        self.flush_all();
        self.lines
    }
}

/// An f32 immediate in PTX's exact hexadecimal form (`0f3F800000`).
pub fn f32_imm(v: f64) -> String {
    format!("0f{:08X}", (v as f32).to_bits())
}

/// A 16-bit float immediate is not writable in PTX; this gives the bits as `0xNNNN` for `mov.b16`.
pub fn f16_bits(v: f64) -> u16 {
    half::f16::from_f64(v).to_bits()
}

/// bf16 bits of a value (round to nearest even), for `mov.b16`.
pub fn bf16_bits(v: f64) -> u16 {
    half::bf16::from_f64(v).to_bits()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The emitted lines without their indentation.
    fn trimmed(e: Emitter) -> Vec<String> {
        e.into_lines()
            .into_iter()
            .map(|l| l.0.trim().to_string())
            .collect()
    }

    #[test]
    fn registers_and_declarations() {
        let mut e = Emitter::new();
        let a = e.reg(RegClass::B32);
        let b = e.reg(RegClass::B32);
        let p = e.reg(RegClass::Pred);
        assert_eq!(a.to_string(), "%r0");
        assert_eq!(b.to_string(), "%r1");
        assert_eq!(p.to_string(), "%p0");
        assert_eq!(
            e.declarations(),
            vec![
                "\t.reg .pred %p<1>;".to_string(),
                "\t.reg .b32 %r<2>;".to_string()
            ]
        );
    }

    #[test]
    fn deferred_loads_move_to_their_first_reader_and_stop_at_synchronisation() {
        let mut e = Emitter::new();
        let a = e.reg(RegClass::F32);
        let b = e.reg(RegClass::F32);
        e.defer_load(
            vec![a],
            vec![format!("tcgen05.ld.sync.aligned.32x32b.x1.b32 {{{a}}}, [%r9]")],
        );
        e.defer_load(
            vec![b],
            vec![format!("tcgen05.ld.sync.aligned.32x32b.x1.b32 {{{b}}}, [%r8]")],
        );
        // Pure and unrelated: both loads stay deferred.
        e.ins("add.u32 %r1, %r2, 3");
        e.ins("st.shared.f32 [%r1], %f7");
        // Reads `b`: only b's load comes first.
        e.ins(format!("cvt.rn.f16.f32 %h0, {b}"));
        // A barrier is a synchronisation point: a's load is emitted before it.
        e.ins("bar.sync 0");
        let lines = trimmed(e);
        assert_eq!(
            lines,
            vec![
                "add.u32 %r1, %r2, 3;",
                "st.shared.f32 [%r1], %f7;",
                "tcgen05.ld.sync.aligned.32x32b.x1.b32 {%f1}, [%r8];",
                "tcgen05.wait::ld.sync.aligned;",
                "cvt.rn.f16.f32 %h0, %f1;",
                "tcgen05.ld.sync.aligned.32x32b.x1.b32 {%f0}, [%r9];",
                "tcgen05.wait::ld.sync.aligned;",
                "bar.sync 0;",
            ]
        );
        // Labels (control-flow merges) and mbarrier arrivals flush too; TMA stores do not.
        let mut e = Emitter::new();
        let c = e.reg(RegClass::F32);
        e.defer_load(vec![c], vec!["LD".into()]);
        e.ins("@%p1 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd1, {%r1, %r2}], [%r3]");
        e.ins("@%p1 mbarrier.arrive.shared::cta.b64 _, [%r4]");
        let lines = trimmed(e);
        assert_eq!(lines[1], "LD;", "{lines:?}");
        let mut e = Emitter::new();
        e.defer_load(vec![c], vec!["LD".into()]);
        e.place("$L1");
        assert_eq!(e.into_lines()[0].0.trim(), "LD;");
    }

    #[test]
    fn float_immediates() {
        assert_eq!(f32_imm(1.0), "0f3F800000");
        assert_eq!(f32_imm(0.0), "0f00000000");
        assert_eq!(f16_bits(1.0), 0x3C00);
        assert_eq!(bf16_bits(1.0), 0x3F80);
    }
}

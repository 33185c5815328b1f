//! Definedness for `uninit-read`, as Valgrind's memcheck tracks it: reading shared or tensor
//! memory nothing wrote is not harmful in itself (padding, a tile loaded whole and masked
//! later); what matters is where the undefined bytes go. A value read from undefined bytes is
//! *undefined* (tainted, with the instruction that read it as its origin); every value computed
//! from an undefined one is undefined too, and so are shared-memory bytes an undefined value is
//! stored to. When undefined bytes reach a [`Sink`] (a global store, an address, a branch
//! condition or an MMA operand) the origin's `uninit-read` warning gets a label there.
//!
//! The granularity is the value (a whole tile, not each element) for registers and the byte
//! for shared memory: a tile with one undefined element is undefined. That over-approximates
//! memcheck's bit-precise tracking, which is the safe side for a warning that says "may".

use crate::lower::{CExpr, IItem, Program, Slot};
use bwsim_isa::{Code, Diagnostic, Span};
use std::collections::{BTreeMap, HashMap};

/// Where undefined bytes do harm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sink {
    /// Written to global memory (`global.store`, an atomic, a TMA store).
    GlobalStore,
    /// Used as an address or index (global offsets, TMA coordinates).
    Address,
    /// Deciding control flow (`if`, a predicate, a store mask).
    Branch,
    /// An operand of an MMA (`tcgen05.mma`, `wgmma`).
    MmaOperand,
}

impl Sink {
    /// The sink in words, for labels (`a global store`).
    pub fn what(self) -> &'static str {
        match self {
            Sink::GlobalStore => "a global store",
            Sink::Address => "an address",
            Sink::Branch => "a branch condition",
            Sink::MmaOperand => "an MMA operand",
        }
    }
}

/// The undefined values of one partition: frame slot to the instruction (pc) whose read of
/// undefined bytes they come from.
pub type SlotTaint = BTreeMap<Slot, u32>;

/// Bind the taint of an instruction's results: `dsts` carry `origin` (undefined) or, with
/// `None`, are defined.
pub fn set_undef(t: &mut SlotTaint, dsts: &[Slot], origin: Option<u32>) {
    for &d in dsts {
        match origin {
            Some(o) => {
                t.insert(d, o);
            }
            None => {
                t.remove(&d);
            }
        }
    }
}

/// Call `f` on each direct operand of `e` (an index's dynamic items included).
pub fn for_each_operand<'e>(e: &'e CExpr, f: &mut impl FnMut(&'e CExpr)) {
    match e {
        CExpr::Slot(_)
        | CExpr::Const(_)
        | CExpr::ProgramId(_)
        | CExpr::NumPrograms(_)
        | CExpr::Arange { .. } => {}
        CExpr::Unary(_, x)
        | CExpr::Cast(x, _)
        | CExpr::ExpandDims(x, _)
        | CExpr::Broadcast(x, _)
        | CExpr::Reshape(x, _)
        | CExpr::Permute(x, _)
        | CExpr::Split(x)
        | CExpr::Scan(_, x, _, _)
        | CExpr::Reduce(_, x, _)
        | CExpr::ShapeOf(x, _) => f(x),
        CExpr::Full { value, .. } => f(value),
        CExpr::Binary(_, x, y) | CExpr::Join(x, y) => {
            f(x);
            f(y);
        }
        CExpr::Call(_, xs) | CExpr::InlineAsm(_, xs) => xs.iter().for_each(f),
        CExpr::Index(x, items) => {
            f(x);
            for i in items {
                if let IItem::Expr(x) = i {
                    f(x);
                }
            }
        }
    }
}

/// Call `f` on every frame slot `e` reads.
pub fn for_each_slot(e: &CExpr, f: &mut impl FnMut(Slot)) {
    match e {
        CExpr::Slot(s) => f(*s),
        _ => for_each_operand(e, &mut |x| for_each_slot(x, &mut *f)),
    }
}

/// The origin of an undefined value `e` reads, if it reads any (the earliest origin).
pub fn origin(e: &CExpr, t: &SlotTaint) -> Option<u32> {
    if t.is_empty() {
        return None;
    }
    let mut o: Option<u32> = None;
    for_each_slot(e, &mut |s| {
        if let Some(&pc) = t.get(&s) {
            o = Some(o.map_or(pc, |x| x.min(pc)));
        }
    });
    o
}

/// The index expressions of `e` (`x[i, j]` with dynamic `i`, `j`): undefined values there
/// are addresses.
pub fn index_origin(e: &CExpr, t: &SlotTaint) -> Option<u32> {
    if t.is_empty() {
        return None;
    }
    let mut o: Option<u32> = None;
    let mut visit = |x: &CExpr| {
        if let Some(pc) = origin(x, t) {
            o = Some(o.map_or(pc, |y: u32| y.min(pc)));
        }
    };
    fn walk(e: &CExpr, visit: &mut dyn FnMut(&CExpr)) {
        match e {
            CExpr::Index(x, items) => {
                walk(x, visit);
                for i in items {
                    if let IItem::Expr(x) = i {
                        visit(x);
                    }
                }
            }
            _ => for_each_operand(e, &mut |x| walk(x, visit)),
        }
    }
    walk(e, &mut visit);
    o
}

/// Undefined shared-memory bytes of one CTA that hold an undefined value someone stored
/// (bytes never written are undefined by the shadow memory's written bits already): byte
/// address to origin.
#[derive(Clone, Debug, Default)]
pub struct SmemTaint(HashMap<u32, u32>);

impl SmemTaint {
    /// Mark `bytes` bytes from each address (or clear them, with `origin: None`).
    pub fn store(&mut self, addrs: &[(u32, u32)], bytes: u32, origin: Option<u32>) {
        if origin.is_none() && self.0.is_empty() {
            return;
        }
        for &(a, _) in addrs {
            for b in a..a.saturating_add(bytes.max(1)) {
                match origin {
                    Some(o) => {
                        self.0.insert(b, o);
                    }
                    None => {
                        self.0.remove(&b);
                    }
                }
            }
        }
    }
    /// Clear a byte range (a TMA or copy wrote defined data there).
    pub fn clear_range(&mut self, start: u32, len: u32) {
        if !self.0.is_empty() {
            self.0.retain(|&b, _| b < start || b >= start.saturating_add(len));
        }
    }
    /// The origin of any undefined byte among `bytes` bytes from each address.
    pub fn origin(&self, addrs: &[(u32, u32)], bytes: u32) -> Option<u32> {
        if self.0.is_empty() {
            return None;
        }
        addrs
            .iter()
            .flat_map(|&(a, _)| a..a.saturating_add(bytes.max(1)))
            .filter_map(|b| self.0.get(&b).copied())
            .min()
    }
}

/// The sinks each origin's undefined bytes reached in one run.
#[derive(Clone, Debug, Default)]
pub struct Reached(BTreeMap<u32, Vec<(Sink, u32)>>);

/// Labels per `uninit-read` (at most this many sinks each).
const MAX_SINKS: usize = 4;

impl Reached {
    /// Undefined bytes read at `origin` reach `sink` at instruction `pc`.
    pub fn add(&mut self, origin: u32, sink: Sink, pc: u32) {
        let v = self.0.entry(origin).or_default();
        if v.len() < MAX_SINKS && !v.iter().any(|&(s, p)| s == sink && p == pc) {
            v.push((sink, pc));
        }
    }

    /// Give every `uninit-read` of `diags` (found at the instruction of an origin) a label at
    /// each sink its undefined bytes reached, and a note that says which kinds they reached,
    /// or that they reached none in this run.
    pub fn annotate(&self, diags: &mut [Diagnostic], prog: &Program) {
        let span = |pc: u32| prog.code.get(pc as usize).map(|i| i.span).unwrap_or(Span::DUMMY);
        // Spans compare equal to every span: they are keyed and compared by their bytes.
        let at = |sp: Span| (sp.start, sp.end);
        let mut by_span: HashMap<(u32, u32), Vec<(Sink, u32)>> = HashMap::new();
        for (&o, v) in &self.0 {
            by_span.entry(at(span(o))).or_default().extend(v.iter().copied());
        }
        for d in diags.iter_mut().filter(|d| d.code == Code::UninitRead) {
            let sinks = by_span.remove(&at(d.primary.span)).unwrap_or_default();
            if sinks.is_empty() {
                d.notes.push(
                    "in this run the undefined bytes reach no global store, address, branch condition or MMA \
                     operand (definedness is tracked through every value computed from them, as memcheck does)"
                        .to_string(),
                );
                continue;
            }
            let mut kinds: Vec<Sink> = sinks.iter().map(|&(s, _)| s).collect();
            kinds.sort();
            kinds.dedup();
            for (s, pc) in sinks {
                let sp = span(pc);
                let msg = format!("the undefined bytes reach {} here", s.what());
                if at(sp) == at(d.primary.span) {
                    d.primary.message = format!("{}; {msg}", d.primary.message);
                } else {
                    d.labels.push(bwsim_isa::diag::Label {
                        span: sp,
                        message: msg,
                        line_col: None,
                    });
                }
            }
            let words: Vec<&str> = kinds.iter().map(|k| k.what()).collect();
            d.notes.push(format!(
                "the undefined bytes reach {} (tracked through every value computed from them, as memcheck does)",
                join_words(&words)
            ));
        }
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_words(w: &[&str]) -> String {
    match w {
        [] => String::new(),
        [a] => a.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

//! The proxy fences Triton's compiler adds after TTGIR.
//!
//! A TTGIR file is not the whole program: lowering it to LLVM, Triton runs a proxy-fence pass
//! that puts a `fence.proxy.async.shared::cta` in front of an async-proxy operation whenever
//! shared memory it touches was accessed through the generic proxy since the last such fence.
//! A kernel that writes a tile with `smem.store` and hands it to `tma.async_store` without a
//! `fence_async_shared()` is therefore correct as compiled, and bwsim, which reads the TTGIR,
//! has to add the same fence to check what runs. [`Cx::plan_proxy_fences`] finds the
//! operations the pass fences; `region_block` emits a `fence.async_shared` (spanned at the
//! operation's own Python line, as the compiler locates it) before each.
//!
//! What the pass does, per release (established by running each release's pass on TTGIR
//! written for it; docs/gluon.md has the evidence):
//!
//! - Every release (3.6 to 3.9) fences an async-proxy *write* of shared memory (a TMA load or
//!   gather, 3.8's `clc_try_cancel`) that overlaps a generic read or write since the last fence
//!   (write after read, write after write).
//! - 3.7 and later also fence an async-proxy *read* (a TMA store, reduce or scatter, the shared
//!   operands of `tcgen05_mma`/`tcgen05_mma_scaled` and of Hopper's `warpgroup` MMA, the source
//!   of `tcgen05_copy`) that overlaps a generic write since the last fence (read after write).
//!   3.6 leaves those to the kernel, and counts a TMA store's read as an ordinary one: a TMA
//!   load into a buffer a TMA store read since the last fence gets a fence.
//! - Overlap is per allocation up to 3.8 (a store to `bufs.index(0)` fences a TMA store of
//!   `bufs.index(1)`); 3.9 tells apart the elements of a buffer array picked by constant
//!   indices.
//! - The analysis follows the control flow: branches join, a loop's back edge carries the end
//!   of its body to its start. An explicit fence clears what came before it, and so does each
//!   fence the pass adds.
//! - `warp_specialize`: each partition starts from what precedes the `warp_specialize`, so a
//!   buffer written before it is fenced in the partition that TMA-stores it. The partitions
//!   do not see one another: a buffer written in one partition and handed to another's TMA
//!   store over an mbarrier gets no fence, and bwsim still reports the missing fence. After the
//!   `warp_specialize`, what the default partition did carries on (3.7 and 3.8); 3.9 carries on
//!   what every partition did.
//!
//! Not modelled: Triton's allocator gives buffers whose lifetimes do not overlap (and the
//! scratch space of layout conversions) the same addresses, and the pass compares addresses, so
//! it may fence two distinct buffers that happen to share memory. bwsim compares buffers, and
//! does not add those fences: where a kernel depends on one, bwsim reports the missing fence.
//! Shared-memory views carried through loop iteration arguments or `scf.if` results are not
//! followed either (they are rare in Gluon): an access through one fences nothing.

use super::{Cx, Op, Region, R};
use crate::lexer::Tok;
use crate::version::Version;
use std::collections::{BTreeSet, HashMap, HashSet};

/// What a release's pass does (see the module documentation).
#[derive(Clone, Copy, Debug)]
struct Rules {
    /// Async-proxy reads are fenced after generic writes (3.7 and later); before, a TMA store's
    /// counts as a generic read.
    async_reads: bool,
    /// Constant `memdesc_index` elements of one allocation are told apart (3.9).
    element_slices: bool,
    /// After a `warp_specialize`, every partition's accesses carry on (3.9), not only the
    /// default partition's.
    all_partitions_carry: bool,
}

impl Rules {
    fn of(v: Version) -> Rules {
        Rules {
            async_reads: v >= Version::V3_7,
            element_slices: v >= Version::V3_9,
            all_partitions_carry: v >= Version::V3_9,
        }
    }
}

/// A part of shared memory: an allocation (numbered in the order met), and the path of
/// `memdesc_index` steps to an element of it (`None` for a step by a value not known when
/// compiling). Empty when the release does not tell elements apart.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Slice {
    alloc: usize,
    path: Vec<Option<i64>>,
}

impl Slice {
    /// Whether the two may share bytes: the same allocation, and no index step at which both
    /// are known and differ (a shorter path is the whole of what it picks).
    fn overlaps(&self, other: &Slice) -> bool {
        self.alloc == other.alloc
            && self
                .path
                .iter()
                .zip(&other.path)
                .all(|(a, b)| a.is_none() || b.is_none() || a == b)
    }
}

/// Generic-proxy accesses since the last fence, on every path: `(slice, is_write)`.
type State = BTreeSet<(Slice, bool)>;

/// The values of one isolated scope: shared-memory views and integer constants.
#[derive(Clone, Default)]
struct Scope {
    views: HashMap<String, Slice>,
    consts: HashMap<String, i64>,
}

/// How an operation touches shared memory, for the pass.
enum Access {
    /// A generic read (`false`) or write (`true`) of the operands at these positions.
    Generic(Vec<usize>, bool),
    /// An async-proxy read of the operands at these positions.
    AsyncRead(Vec<usize>),
    /// An async-proxy write of the operand at this position.
    AsyncWrite(usize),
}

fn access_of(name: &str) -> Option<Access> {
    Some(match name {
        "ttg.local_store" => Access::Generic(vec![1], true),
        "ttg.local_load" | "ttng.clc_load_result" => Access::Generic(vec![0], false),
        "ttg.async_copy_global_to_local" => Access::Generic(vec![1], true),
        "ttng.async_tma_copy_global_to_local" | "ttng.async_tma_gather" => Access::AsyncWrite(1),
        "ttng.clc_try_cancel" => Access::AsyncWrite(0),
        "ttng.async_tma_copy_local_to_global" | "ttng.async_tma_reduce" | "ttng.async_tma_scatter" => {
            Access::AsyncRead(vec![1])
        }
        "ttng.tc_gen5_mma" | "ttng.tc_gen5_mma_scaled" | "ttng.warp_group_dot" => {
            Access::AsyncRead(vec![0, 1])
        }
        "ttng.tmem_copy" => Access::AsyncRead(vec![0]),
        _ => return None,
    })
}

/// The walk's state besides the flowing [`State`].
struct Plan {
    rules: Rules,
    /// `Op::span.start` of each operation the pass fences.
    fenced: HashSet<u32>,
    /// Allocations numbered so far, by the `local_alloc`'s `Op::span.start`.
    allocs: HashMap<u32, usize>,
}

impl<'m> Cx<'m> {
    /// The operations (by the start of their TTGIR text) that Triton's proxy-fence pass puts a
    /// fence in front of, in the kernel body `body`, for the release being read.
    pub(super) fn plan_proxy_fences(&self, body: &Region) -> R<HashSet<u32>> {
        let mut plan = Plan {
            rules: Rules::of(self.version),
            fenced: HashSet::new(),
            allocs: HashMap::new(),
        };
        let mut scope = Scope::default();
        self.fence_region(body, State::new(), &mut scope, &mut plan)?;
        Ok(plan.fenced)
    }

    /// Walk a region's operations from `state`; the state at its end.
    fn fence_region(&self, r: &Region, mut state: State, scope: &mut Scope, plan: &mut Plan) -> R<State> {
        for op in &r.ops {
            state = self.fence_op(op, state, scope, plan)?;
        }
        Ok(state)
    }

    fn fence_op(&self, op: &Op, mut state: State, scope: &mut Scope, plan: &mut Plan) -> R<State> {
        let name = op.name.as_str();
        match name {
            "arith.constant" => {
                if let (Some(r), Some(v)) = (op.results.first(), op.toks.iter().find_map(int_tok)) {
                    scope.consts.insert(r.clone(), v);
                }
                return Ok(state);
            }
            "ttg.local_alloc" => {
                let n = plan.allocs.len();
                let alloc = *plan.allocs.entry(op.span.start).or_insert(n);
                let slice = Slice {
                    alloc,
                    path: Vec::new(),
                };
                if let Some(r) = op.results.first() {
                    scope.views.insert(r.clone(), slice.clone());
                }
                // `local_alloc %value` writes the value (a generic store).
                if !self.operand_items(op)?.is_empty() {
                    state.insert((slice, true));
                }
                return Ok(state);
            }
            "ttg.memdesc_index" => {
                let items = self.operand_items(op)?;
                if let (Some(r), Some(src)) = (op.results.first(), items.first()) {
                    if let Some(base) = scope.views.get(&src.name).cloned() {
                        let idx = src
                            .bracket
                            .first()
                            .and_then(|(n, _)| scope.consts.get(n).copied());
                        let mut slice = base;
                        if plan.rules.element_slices {
                            slice.path.push(idx);
                        }
                        scope.views.insert(r.clone(), slice);
                    }
                }
                return Ok(state);
            }
            n if n.starts_with("ttg.memdesc_") => {
                // Other views (subslice, transpose, reshape, reinterpret): the same memory as
                // their source, as far as the pass is modelled here.
                let items = self.operand_items(op)?;
                if let (Some(r), Some(src)) = (op.results.first(), items.first()) {
                    if let Some(base) = scope.views.get(&src.name).cloned() {
                        scope.views.insert(r.clone(), base);
                    }
                }
                return Ok(state);
            }
            "ttng.fence_async_shared" => return Ok(State::new()),
            "scf.for" => return self.fence_loop(op, state, scope, plan),
            "scf.while" => {
                // before → after → before ...; the loop leaves from `before`.
                let (Some(before), Some(after)) = (op.regions.first(), op.regions.get(1)) else {
                    return Ok(state);
                };
                let mut head = state;
                loop {
                    let fenced = plan.fenced.len();
                    let out = self.fence_region(before, head.clone(), scope, plan)?;
                    let back = self.fence_region(after, out.clone(), scope, plan)?;
                    let next: State = head.union(&back).cloned().collect();
                    if next == head && plan.fenced.len() == fenced {
                        return Ok(out);
                    }
                    head = next;
                }
            }
            "scf.if" => {
                let mut out = State::new();
                for r in &op.regions {
                    out.extend(self.fence_region(r, state.clone(), scope, plan)?);
                }
                if op.regions.len() < 2 {
                    out.extend(state);
                }
                return Ok(out);
            }
            "ttg.warp_specialize" => return self.fence_warp_specialize(op, state, scope, plan),
            _ => {}
        }
        let Some(access) = access_of(name) else {
            return Ok(state);
        };
        let items = self.operand_items(op)?;
        let slice_at = |i: usize| items.get(i).and_then(|it| scope.views.get(&it.name)).cloned();
        match access {
            Access::Generic(at, write) => {
                for s in at.into_iter().filter_map(slice_at) {
                    state.insert((s, write));
                }
            }
            Access::AsyncRead(at) if plan.rules.async_reads => {
                let hit = at
                    .into_iter()
                    .filter_map(slice_at)
                    .any(|s| state.iter().any(|(g, w)| *w && g.overlaps(&s)));
                if hit {
                    plan.fenced.insert(op.span.start);
                    state.clear();
                }
            }
            Access::AsyncRead(at) if name.starts_with("ttng.async_tma_") => {
                // 3.6 counts a TMA store's read as an ordinary one: a later TMA load into the
                // buffer is fenced against it (not an MMA's operand reads).
                for s in at.into_iter().filter_map(slice_at) {
                    state.insert((s, false));
                }
            }
            Access::AsyncRead(_) => {}
            Access::AsyncWrite(at) => {
                let hit = slice_at(at).is_some_and(|s| state.iter().any(|(g, _)| g.overlaps(&s)));
                if hit {
                    plan.fenced.insert(op.span.start);
                    state.clear();
                }
            }
        }
        Ok(state)
    }

    /// `scf.for`: the body runs from the join of the entry and its own end, until nothing
    /// changes; the loop may run no iteration, so it leaves with that join too.
    fn fence_loop(&self, op: &Op, state: State, scope: &mut Scope, plan: &mut Plan) -> R<State> {
        let Some(body) = op.regions.first() else {
            return Ok(state);
        };
        let mut head = state;
        loop {
            let fenced = plan.fenced.len();
            let out = self.fence_region(body, head.clone(), scope, plan)?;
            let next: State = head.union(&out).cloned().collect();
            if next == head && plan.fenced.len() == fenced {
                return Ok(head);
            }
            head = next;
        }
    }

    /// `ttg.warp_specialize`: every partition starts from `state`; a worker partition sees the
    /// captured operands under its own argument names, in a scope of its own.
    fn fence_warp_specialize(&self, op: &Op, state: State, scope: &mut Scope, plan: &mut Plan) -> R<State> {
        let mut toks = op.toks.iter().peekable();
        let mut captured: Vec<String> = Vec::new();
        if matches!(toks.peek().map(|t| &t.tok), Some(Tok::Punct("("))) {
            toks.next();
            for t in toks.by_ref() {
                match &t.tok {
                    Tok::Value(v) => captured.push(v.clone()),
                    Tok::Punct(")") => break,
                    _ => {}
                }
            }
        }
        let mut out = State::new();
        let mut params: Vec<String> = Vec::new();
        let mut in_params = false;
        let mut worker = false;
        let mut depth = 0i64;
        for t in toks {
            match &t.tok {
                Tok::Ident(w) if w == "default" && depth == 0 => {
                    params.clear();
                    worker = false;
                }
                Tok::Ident(w) if w.starts_with("partition") && depth == 0 => {
                    params.clear();
                    in_params = true;
                    worker = true;
                }
                Tok::Punct("(") | Tok::Punct("<") | Tok::Punct("[") | Tok::Punct("{") => depth += 1,
                Tok::Punct(")") | Tok::Punct(">") | Tok::Punct("]") | Tok::Punct("}") => {
                    depth -= 1;
                    if depth == 0 {
                        in_params = false;
                    }
                }
                Tok::Value(v) if in_params && depth == 1 => params.push(v.clone()),
                Tok::Region(ri) => {
                    let Some(r) = op.regions.get(*ri) else { continue };
                    let end = if !worker {
                        // The default partition: the enclosing scope.
                        self.fence_region(r, state.clone(), scope, plan)?
                    } else {
                        let mut inner = Scope::default();
                        for (p, c) in params.iter().zip(&captured) {
                            if let Some(s) = scope.views.get(c) {
                                inner.views.insert(p.clone(), s.clone());
                            }
                            if let Some(v) = scope.consts.get(c) {
                                inner.consts.insert(p.clone(), *v);
                            }
                        }
                        let end = self.fence_region(r, state.clone(), &mut inner, plan)?;
                        if !plan.rules.all_partitions_carry {
                            continue;
                        }
                        end
                    };
                    out.extend(end);
                    params.clear();
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

/// The value of an integer constant's token.
fn int_tok(t: &crate::lexer::Token) -> Option<i64> {
    match t.tok {
        Tok::Int(v) => Some(v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(alloc: usize, path: &[Option<i64>]) -> Slice {
        Slice {
            alloc,
            path: path.to_vec(),
        }
    }

    #[test]
    fn slices_overlap_unless_known_indices_differ() {
        let whole = slice(0, &[]);
        assert!(whole.overlaps(&slice(0, &[Some(1)])));
        assert!(slice(0, &[Some(0)]).overlaps(&slice(0, &[Some(0), Some(3)])));
        assert!(!slice(0, &[Some(0)]).overlaps(&slice(0, &[Some(1)])));
        // An index not known when compiling may be any element.
        assert!(slice(0, &[None]).overlaps(&slice(0, &[Some(1)])));
        assert!(!whole.overlaps(&slice(1, &[])));
    }

    #[test]
    fn rules_follow_the_release() {
        let r = Rules::of(Version::V3_6);
        assert!(!r.async_reads && !r.element_slices && !r.all_partitions_carry);
        for v in [Version::V3_7, Version::V3_8] {
            let r = Rules::of(v);
            assert!(r.async_reads && !r.element_slices && !r.all_partitions_carry);
        }
        let r = Rules::of(Version::V3_9);
        assert!(r.async_reads && r.element_slices && r.all_partitions_carry);
    }
}

//! Resolving a parsed kernel into what the executor runs: labels to instruction indices, every
//! instruction to an [`Op`] the executor knows, or a refusal naming the instruction and its
//! line. Arithmetic, logic, comparison, selection and conversion forms are resolved by the
//! inline-PTX checker of bwsim-isa ([`bwsim_isa::inline_ptx::parse::parse_instruction`]), so
//! that their forms and their semantics live in one place.

use crate::parse::{Addr, AddrBase, Instr, Kernel, Module, Operand, Space, Stmt};
use crate::Error;
use bwsim_isa::inline_ptx::parse::{self as ip, Parsed, OPCODES};
use bwsim_isa::span::Span;
use std::collections::HashMap;

mod cp_async;
mod tensormaps;
mod wgmma;

pub use cp_async::CpOp;
pub use tensormaps::{TmapField, TmapOp};
pub use wgmma::{WgA, WgMma, WgOp};
mod barriers;
mod memory;
mod tcgen05;

pub use tcgen05::{CpShape, MmaA, TmemShape};

/// The mode of a `vote.sync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteMode {
    /// `.ballot.b32`: bit `i` set when lane `i` of the member mask votes true.
    Ballot,
    /// `.all.pred`: every member votes true.
    All,
    /// `.any.pred`: some member votes true.
    Any,
    /// `.uni.pred`: the members vote alike.
    Uni,
}

/// A special register read by `mov`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sreg {
    Tid(usize),
    Ntid(usize),
    Ctaid(usize),
    Nctaid(usize),
    Laneid,
    Warpid,
    Nwarpid,
    /// `%cluster_ctarank`: the CTA's rank in its cluster (x fastest).
    ClusterCtarank,
    /// `%cluster_nctarank`: the CTAs of a cluster.
    ClusterNctarank,
    /// `%cluster_ctaid`: the CTA's position in its cluster.
    ClusterCtaid(usize),
    /// `%cluster_nctaid`: the cluster's shape in CTAs.
    ClusterNctaid(usize),
    /// `%clusterid`: the cluster's position in the grid.
    Clusterid(usize),
    /// `%nclusterid`: the grid's shape in clusters.
    Nclusterid(usize),
    /// `%is_explicit_cluster`: whether the launch gave a cluster shape.
    IsExplicitCluster,
}

/// Where a memory instruction's address points.
#[derive(Clone, Debug, PartialEq)]
pub enum Base {
    Reg(u16),
    /// A parameter (its byte offset in the parameter space).
    Param(u32),
    /// A shared variable (its byte offset in the CTA's shared memory).
    Shared(u64),
    /// A module-level global variable (its index).
    Global(usize),
    /// A variable of the thread's frame, `.local` or a call sequence's `.param` (its byte
    /// offset in the frame, [`crate::calls`]).
    Local(u64),
    None,
}

/// A value a resolved instruction reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val {
    Reg(u16),
    Imm(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduxOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

/// A resolved instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Delegated to the inline-PTX interpreter.
    Alu(ip::Ins),
    MovSreg {
        d: u16,
        s: Sreg,
    },
    /// `mov d, SYMBOL`: the address of a variable or parameter.
    MovAddr {
        d: u16,
        base: Base,
    },
    /// `ld`: element e of `access` into `dsts[e]` (none: `_`); `signed`: narrower loads
    /// sign-extend.
    Ld {
        access: Access,
        signed: bool,
        dsts: Vec<Option<u16>>,
    },
    /// `st`: `srcs[e]` into element e of `access`.
    St {
        access: Access,
        srcs: Vec<Val>,
    },
    /// `mapa.shared::cluster.u32 d, a, rank`: the `.shared::cluster` address of the byte that
    /// `a` names in the shared memory of the CTA of rank `rank` ([`crate::exec::cluster_window`]).
    Mapa {
        d: u16,
        a: Val,
        rank: Val,
    },
    /// `mov.b128 d, {lo, hi}`: a 128-bit register holds its low 64 bits (the front end's
    /// cluster launch control responses say all they say there, [`crate::machine`]).
    Mov128 {
        d: u16,
        lo: Val,
    },
    /// `clusterlaunchcontrol.query_cancel.QUERY d, response`: whether the response cancelled
    /// a launch, or the first CTA id of the launch it cancelled (`dsts`: one register per
    /// dimension asked, x, y, z; a fourth of `.v4` gets 0).
    ClcQuery {
        canceled: bool,
        dims: Vec<usize>,
        dsts: Vec<u16>,
        src: Val,
    },
    /// `cvta[.to].SPACE`: `to` converts a generic address into the space's.
    Cvta {
        to: bool,
        space: Space,
        d: u16,
        a: Val,
    },
    Bra {
        target: usize,
    },
    /// `brx.idx index, TABLE`: to the `index`th label of a `.branchtargets` table.
    Brx {
        index: Val,
        targets: Vec<usize>,
    },
    Bar {
        id: Val,
        count: Option<Val>,
    },
    Shfl {
        mode: ShflMode,
        d: u16,
        p: Option<u16>,
        a: Val,
        b: Val,
        c: Val,
        mask: Val,
    },
    Redux {
        op: ReduxOp,
        signed: bool,
        float: bool,
        nan: bool,
        abs: bool,
        d: u16,
        a: Val,
        mask: Val,
    },
    /// `vote.sync.MODE d, {!}a, membermask` (a warp collective over the predicate `a`, negated
    /// when `not`): the lanes' votes as a mask (`.ballot.b32`) or one predicate for all
    /// (`.all`, `.any`, `.uni` of `.pred`).
    Vote {
        mode: VoteMode,
        d: u16,
        a: Val,
        not: bool,
        mask: Val,
    },
    Exit,
    /// `elect.sync d|p, membermask`: the lowest lane of the mask is elected (a warp collective).
    Elect {
        d: Option<u16>,
        p: Option<u16>,
        mask: Val,
    },
    /// `ldmatrix`/`stmatrix.sync.aligned.m8n8.xN[.trans].shared.b16` (a warp collective): `num`
    /// 8 x 8 matrices of 16-bit elements, each lane giving the address of one row and holding a
    /// 32-bit fragment of each matrix.
    Matrix {
        store: bool,
        num: u32,
        trans: bool,
        regs: Vec<u16>,
        at: MemRef,
    },
    /// `atom` / `red` ([`crate::atomic`]).
    Atom(crate::atomic::Atom),
    /// A memory-ordering fence (`fence.sc/acq_rel/acquire/release`, `membar`): no effect on
    /// values; to the global-memory check, what it orders.
    Fence(crate::atomic::Order),
    /// Instructions with no effect on values or memory in this model (`setmaxnreg`,
    /// `bar.warp.sync`, `call vprintf`).
    Nop,
    /// `call __assertfail, (message, file, line, ...)`: a failed device assertion; the
    /// frame offsets of the call's message, file and line parameters.
    Assert {
        message: u64,
        file: u64,
        line: u64,
    },
    /// `trap`: the kernel aborts.
    Trap,
    /// An instruction that only the machine ([`crate::machine`]) runs: mbarriers, proxy
    /// fences, bulk tensor copies and their groups.
    Agent(AgentOp),
}

/// The memory a `ld` or `st` reads or writes: its state space (`None`: generic addressing), the
/// bytes of one element, and the first element's address; element e is `e * bytes` past it.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    pub space: Option<Space>,
    pub bytes: u32,
    pub at: MemRef,
    /// Its `.sem` and `.scope` (`ld.acquire.gpu`, `st.relaxed.gpu`, ...).
    pub order: crate::atomic::Order,
}

/// A memory operand: a base and a byte offset.
#[derive(Clone, Debug, PartialEq)]
pub struct MemRef {
    pub base: Base,
    pub offset: i64,
}

/// The instructions the machine runs per warp ([`crate::machine`]).
#[derive(Clone, Debug, PartialEq)]
pub enum AgentOp {
    /// `mbarrier.init.shared::cta.b64 [bar], count`.
    MbarInit { bar: MemRef, count: Val },
    /// `mbarrier.arrive[.expect_tx].shared::cta.b64 state, [bar][, tx_bytes]` (one arrival),
    /// or `mbarrier.expect_tx` (`arrive: false`).
    MbarArrive {
        bar: MemRef,
        tx: Option<Val>,
        arrive: bool,
        state: Option<u16>,
    },
    /// `mbarrier.{try,test}_wait.parity.shared::cta.b64 p, [bar], parity`.
    MbarWait { p: u16, bar: MemRef, parity: Val },
    /// `mbarrier.inval.shared::cta.b64 [bar]`.
    MbarInval { bar: MemRef },
    /// `fence.proxy.async[.shared::cta]`.
    FenceProxyAsync,
    /// `cp.async.bulk.tensor.Nd.shared::cta.global.mbarrier::complete_tx::bytes [dst], [tmap,
    /// {coords}], [bar]`; `gather4`: `.2d.tile::gather4`, whose coordinates are a column and
    /// four rows.
    TmaLoad {
        dst: MemRef,
        tmap: MemRef,
        coords: Vec<Val>,
        bar: MemRef,
        gather4: bool,
        /// `.multicast::cluster`'s CTA mask: the box lands at the same offsets in every CTA
        /// of the cluster whose rank's bit is set, completing on each one's barrier.
        multicast: Option<Val>,
        /// `.cta_group::2`: the barrier may be either CTA of the pair ([`crate::machine`]'s
        /// pair module).
        pair: bool,
    },
    /// `cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group [tmap, {coords}], [src]`;
    /// `scatter4`: `.2d.tile::scatter4` (a column and four rows); `reduce`:
    /// `cp.reduce.async.bulk.tensor`, each element combined into global memory by the operation.
    TmaStore {
        tmap: MemRef,
        coords: Vec<Val>,
        src: MemRef,
        scatter4: bool,
        reduce: Option<bwsim_isa::value_types::TmaReduceOp>,
    },
    /// `cp.async.bulk.commit_group`.
    BulkCommit,
    /// `cp.async.bulk.wait_group[.read] n`.
    BulkWait { n: u64, read: bool },
    /// `fence.mbarrier_init.release.cluster`: the warp's earlier `mbarrier.init`s released.
    FenceMbarInit,
    /// `ld`/`st.shared::cluster` (an [`Op::Ld`] or [`Op::St`]): an access to the shared
    /// memory of the CTA a `.shared::cluster` address names (distributed shared memory).
    Dsmem(Box<Op>),
    /// `barrier.cluster.arrive[.release|.relaxed][.aligned]`: the thread arrives on the
    /// cluster barrier; `relaxed` releases nothing but the inits a `fence.mbarrier_init`
    /// covered.
    ClusterArrive { relaxed: bool },
    /// `clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes
    /// [.multicast::cluster::all].b128 [dst], [bar]`: asks to cancel the launch of a cluster
    /// that has not started; the 16-byte response lands at `dst` (in every CTA of the cluster
    /// with `multicast`) and completes 16 bytes on `bar` there.
    ClcTryCancel {
        dst: MemRef,
        bar: MemRef,
        multicast: bool,
    },
    /// `barrier.cluster.wait[.acquire][.aligned]`: waits until every thread of the cluster
    /// that has not exited arrived in the phase the thread arrived in.
    ClusterWait,
    /// `tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [dst], ncols`: one allocation
    /// for the warp, its tensor-memory address written to shared `dst`; `pair`:
    /// `.cta_group::2`, the same columns in both CTAs of the pair.
    TmemAlloc { dst: MemRef, cols: Val, pair: bool },
    /// `tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, ncols`.
    TmemDealloc { taddr: Val, cols: Val },
    /// `tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned`.
    TmemRelinquish,
    /// `tcgen05.mma.cta_group::1.kind::KIND[.block_scale.blockV] [d], adesc | [a], bdesc, idesc,
    /// [[scale_a], [scale_b],] [{disable_output_lane},] enable_input_d`: B in shared memory,
    /// named by its matrix descriptor; A the same, or in tensor memory; the block-scaled kinds'
    /// scale factors in tensor memory. `pair`: `.cta_group::2`, issued by the pair's even CTA
    /// over both CTAs' operands and accumulators.
    Mma {
        pair: bool,
        kind: MmaKind,
        d: TmemRef,
        a: MmaA,
        b: Val,
        idesc: Val,
        scales: Option<[TmemRef; 2]>,
        disable: Vec<Val>,
        acc: Val,
    },
    /// `tcgen05.commit.cta_group::1.mbarrier::arrive::one[.shared::cluster].b64 [bar]`: an
    /// arrival on `bar` once the warp's earlier tensor-pipe operations are done.
    ///
    /// `.multicast::cluster` with a CTA mask: an arrival on the barrier at the same offset in
    /// every CTA of the cluster the mask names. `pair`: `.cta_group::2`, tracking the pair
    /// MMAs the pair leader's pipe ran.
    Commit {
        bar: MemRef,
        multicast: Option<Val>,
        pair: bool,
    },
    /// `tcgen05.cp.cta_group::1.SHAPE [taddr], sdesc`: shared memory (named by a matrix
    /// descriptor) into tensor memory, on the tensor pipe.
    TmemCp { shape: CpShape, at: TmemRef, src: Val },
    /// `tcgen05.ld.sync.aligned.SHAPE.xN.b32 {regs}, [taddr][, imm]`.
    TmemLd {
        shape: TmemShape,
        regs: Vec<u16>,
        at: TmemRef,
    },
    /// `tcgen05.st.sync.aligned.SHAPE.xN.b32 [taddr][, imm], {vals}`.
    TmemSt {
        shape: TmemShape,
        vals: Vec<Val>,
        at: TmemRef,
    },
    /// Non-bulk `cp.async`, its groups and its mbarrier arrivals.
    CpAsync(CpOp),
    /// Tensor maps built on the device ([`TmapOp`]).
    Tensormap(TmapOp),
    /// `wgmma`: fences, MMAs, their groups and waits.
    Wgmma(WgOp),
}

/// A tensor-memory address operand, `[taddr+offset]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TmemRef {
    pub taddr: Val,
    pub offset: i64,
}

/// The `.kind` of a `tcgen05.mma` (which operand types its instruction descriptor may name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaKind {
    F16,
    Tf32,
    F8f6f4,
    /// Block-scaled fp8/fp6/fp4 (`.kind::mxf8f6f4`), ue8m0 scales per 32 K-elements.
    Mxf8f6f4,
    /// Block-scaled fp4 (`.kind::mxf4`), ue8m0 scales per 32 K-elements.
    Mxf4,
    /// Block-scaled fp4 (`.kind::mxf4nvf4`), ue8m0 per 32 or ue4m3 per 16 K-elements.
    Mxf4nvf4,
}

/// A resolved instruction with its guard and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Ins {
    pub guard: Option<(u16, bool)>,
    pub op: Op,
    pub span: Span,
    pub ptx_line: u32,
    pub loc: Option<crate::parse::Loc>,
    pub opcode: String,
}

impl Ins {
    /// Whether the instruction waits for other threads (warp collectives, CTA barriers).
    pub fn synchronises(&self) -> bool {
        matches!(
            self.op,
            Op::Bar { .. }
                | Op::Shfl { .. }
                | Op::Redux { .. }
                | Op::Elect { .. }
                | Op::Vote { .. }
                | Op::Matrix { .. }
                | Op::Agent(_)
        )
    }
}

/// One kernel ready to run.
#[derive(Clone, Debug)]
pub struct Program {
    pub name: String,
    pub src: String,
    pub ins: Vec<Ins>,
    /// Register widths and names, in the inline interpreter's form.
    pub regs: Parsed,
    /// Parameters: name, offset, bytes.
    pub params: Vec<crate::parse::Param>,
    pub param_bytes: u32,
    /// Bytes of each thread's frame (`.local` variables and call parameters).
    pub frame_bytes: u64,
    /// Static shared memory in bytes (variables placed in declaration order; the unsized
    /// `.extern` array starts after them, at the dynamic shared memory, aligned as the
    /// `.extern` declares and to 16 bytes at least).
    pub static_shared: u64,
    /// Module-level global variables (bytes with their initializers).
    pub globals: Vec<(String, Vec<u8>)>,
    pub reqntid: Option<Vec<u32>>,
    pub cluster: Option<Vec<u32>>,
    /// `.file` names by number (for messages).
    pub files: std::collections::BTreeMap<u32, String>,
    lines: crate::parse::Lines,
}

impl Program {
    /// A human-readable place of instruction `pc`: the PTX line and, where a `.loc` is in force,
    /// the source file, line and column.
    pub fn place(&self, pc: usize) -> String {
        let Some(i) = self.ins.get(pc) else {
            return "the end of the kernel".into();
        };
        let mut s = format!("PTX line {}", i.ptx_line);
        if let Some(l) = i.loc {
            let f = self.files.get(&l.file).map_or("?", |f| f.as_str());
            s += &format!(" ({f}:{}:{})", l.line, l.col);
        }
        s
    }

    /// 1-based line of a byte offset of the source.
    pub fn line_of(&self, at: usize) -> u32 {
        self.lines.of(at)
    }
}

/// Gives the kernel the condition code's carry flag, a one-bit register under
/// [`ip::CARRY_FLAG`] (each thread its own), which the extended-precision forms (`add.cc`,
/// `madc`, ...) read and write.
fn declare_carry_flag(k: &mut crate::parse::Kernel) {
    k.reg_index
        .insert(ip::CARRY_FLAG.to_string(), k.regs.len() as u16);
    k.regs.push(crate::parse::Reg {
        name: ip::CARRY_FLAG.to_string(),
        bits: 1,
    });
}

/// Resolves kernel `name` of `module` (parsed from `src`).
pub fn load(src: &str, module: &Module, name: &str) -> Result<Program, Error> {
    let k = module.kernel(name).ok_or_else(|| {
        Error::Launch(format!(
            "the PTX has no kernel `{name}` (it has: {})",
            module
                .kernels
                .iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let lines = crate::parse::Lines::new(src);
    let mut inlined = crate::calls::inline(module, k)?;
    declare_carry_flag(&mut inlined);
    let k = &inlined;
    let (frame, frame_bytes) = crate::calls::frame_layout(k);
    let regs = Parsed {
        ins: Vec::new(),
        reg_bits: k.regs.iter().map(|r| r.bits).collect(),
        reg_names: k.regs.iter().map(|r| r.name.clone()).collect(),
    };
    // Labels to the index of the next instruction.
    let mut labels = HashMap::new();
    let mut n = 0;
    for s in &k.body {
        match s {
            Stmt::Label(l, _) => {
                labels.insert(l.clone(), n);
            }
            Stmt::Instr(_) => n += 1,
        }
    }
    // Shared variables: module-level then the kernel's, each at its alignment.
    let mut shared: HashMap<String, u64> = HashMap::new();
    let mut off = 0u64;
    let mut extern_shared = Vec::new();
    for v in module
        .vars
        .iter()
        .chain(&k.vars)
        .filter(|v| v.space == Space::Shared)
    {
        if v.count.is_none() {
            extern_shared.push(v);
            continue;
        }
        let a = v.align.max(1) as u64;
        off = off.div_ceil(a) * a;
        shared.insert(v.name.clone(), off);
        off += v.bytes();
    }
    // The dynamic shared memory starts at the strictest alignment its `.extern` arrays declare
    // (at least 16 bytes): TVM's `.extern .shared .align 64` array after a 4-byte static
    // variable starts at byte 64, and a kernel may round addresses in it down to that
    // alignment (TVM's matrix descriptors keep the start address's bits 6 and up).
    let dyn_align = (extern_shared.iter())
        .map(|v| v.align.max(1) as u64)
        .fold(16, u64::max);
    let static_shared = off.div_ceil(dyn_align) * dyn_align;
    for v in extern_shared {
        shared.insert(v.name.clone(), static_shared);
    }
    let mut globals = Vec::new();
    let mut global_index = HashMap::new();
    for v in module
        .vars
        .iter()
        .chain(&k.vars)
        .filter(|v| matches!(v.space, Space::Global | Space::Const))
    {
        let mut bytes = vec![0u8; v.bytes() as usize];
        for (i, e) in v.init.iter().enumerate() {
            for b in 0..v.elem_bytes as usize {
                if let Some(x) = bytes.get_mut(i * v.elem_bytes as usize + b) {
                    *x = (e >> (8 * b)) as u8;
                }
            }
        }
        global_index.insert(v.name.clone(), globals.len());
        globals.push((v.name.clone(), bytes));
    }
    let params: HashMap<&str, u32> = k.params.iter().map(|p| (p.name.as_str(), p.offset)).collect();
    let cx = Cx {
        src,
        k,
        regs: &regs,
        labels: &labels,
        shared: &shared,
        globals: &global_index,
        params: &params,
        frame: &frame,
    };
    let mut ins = Vec::new();
    for s in &k.body {
        if let Stmt::Instr(i) = s {
            ins.push(Ins {
                guard: i.guard,
                op: cx.resolve(i)?,
                span: i.full_span,
                ptx_line: i.ptx_line,
                loc: i.loc,
                opcode: i.opcode.clone(),
            });
        }
    }
    let param_bytes = k.params.iter().map(|p| p.offset + p.bytes).max().unwrap_or(0);
    Ok(Program {
        name: k.name.clone(),
        src: src.to_string(),
        ins,
        regs,
        params: k.params.clone(),
        param_bytes,
        frame_bytes,
        static_shared,
        globals,
        reqntid: k.reqntid.clone(),
        cluster: k.cluster.clone(),
        files: module.files.clone(),
        lines,
    })
}

struct Cx<'a> {
    src: &'a str,
    k: &'a Kernel,
    regs: &'a Parsed,
    labels: &'a HashMap<String, usize>,
    shared: &'a HashMap<String, u64>,
    globals: &'a HashMap<String, usize>,
    params: &'a HashMap<&'a str, u32>,
    /// The thread frame's variables ([`crate::calls::frame_layout`]).
    frame: &'a HashMap<String, u64>,
}

fn space_of(m: &str) -> Option<Space> {
    Some(match m.split("::").next().unwrap_or("") {
        "global" => Space::Global,
        "shared" => Space::Shared,
        "param" => Space::Param,
        "local" => Space::Local,
        "const" => Space::Const,
        _ => return None,
    })
}

/// The refusal of instruction `i` (its opcode with its modifiers, and its line), saying `why`.
pub(crate) fn unsupported(i: &Instr, why: &str) -> Error {
    Error::Unsupported {
        opcode: format!(
            "{}{}",
            i.opcode,
            i.mods.iter().map(|m| format!(".{m}")).collect::<String>()
        ),
        line: i.ptx_line,
        span: i.span,
        why: why.into(),
    }
}

impl Cx<'_> {
    fn unsupported(&self, i: &Instr, why: &str) -> Error {
        unsupported(i, why)
    }
    fn invalid(&self, i: &Instr, why: impl Into<String>) -> Error {
        Error::Invalid {
            message: format!("`{}`: {}", &self.src[i.span.range()], why.into()),
            span: i.span,
        }
    }
    fn reg(&self, i: &Instr, o: &Operand) -> Result<u16, Error> {
        match o {
            Operand::Reg(r) => Ok(*r),
            _ => Err(self.invalid(i, "expected a register")),
        }
    }
    fn val(&self, i: &Instr, o: &Operand) -> Result<Val, Error> {
        match o {
            Operand::Reg(r) => Ok(Val::Reg(*r)),
            Operand::Int(v) => Ok(Val::Imm(*v)),
            Operand::F32(b) => Ok(Val::Imm(*b as u64)),
            Operand::F64(b) => Ok(Val::Imm(*b)),
            _ => Err(self.invalid(i, "expected a register or an immediate")),
        }
    }
    fn base(&self, i: &Instr, a: &Addr, space: Option<Space>) -> Result<Base, Error> {
        Ok(match &a.base {
            None => Base::None,
            Some(AddrBase::Reg(r)) => Base::Reg(*r),
            Some(AddrBase::Sym(s)) => self.sym(i, s, space)?,
        })
    }
    fn sym(&self, i: &Instr, s: &str, space: Option<Space>) -> Result<Base, Error> {
        if let Some(&o) = self.params.get(s) {
            if matches!(space, Some(Space::Param) | None) {
                return Ok(Base::Param(o));
            }
        }
        if let Some(&o) = self.shared.get(s) {
            return Ok(Base::Shared(o));
        }
        if let Some(&o) = self.frame.get(s) {
            return Ok(Base::Local(o));
        }
        if let Some(&g) = self.globals.get(s) {
            return Ok(Base::Global(g));
        }
        Err(self.invalid(i, format!("`{s}` is not a parameter or variable of this kernel")))
    }

    fn memref(&self, i: &Instr, a: &Addr) -> Result<MemRef, Error> {
        Ok(MemRef {
            base: self.base(i, a, Some(Space::Shared))?,
            offset: a.offset,
        })
    }

    /// The register names for re-reading an instruction's text when one of its operands is a
    /// register of an inline-assembly block (renamed `name$sN` by the parser): the kernel's
    /// names plus each such operand under the name the text writes. `None` when there is none.
    fn scoped_names(&self, o: &[Operand]) -> Option<HashMap<String, u16>> {
        let mut out: Option<HashMap<String, u16>> = None;
        self.add_scoped(o, &mut out);
        out
    }

    /// [`Cx::scoped_names`] of `o` into `out`, through vector operands (`mov.b32 {b0, b1,
    /// b2, b3}, %r;` of a block's `.reg .b8 b<4>;`).
    fn add_scoped(&self, o: &[Operand], out: &mut Option<HashMap<String, u16>>) {
        for op in o {
            let regs = match op {
                Operand::Reg(r) | Operand::NotReg(r) | Operand::SinkPair(r) => [Some(*r), None],
                Operand::Pair(r, q) => [Some(*r), *q],
                Operand::Vec(items) => {
                    self.add_scoped(items, out);
                    continue;
                }
                _ => continue,
            };
            for r in regs.into_iter().flatten() {
                if let Some((name, _)) = self.k.regs[r as usize].name.split_once('$') {
                    out.get_or_insert_with(|| self.k.reg_index.clone())
                        .insert(name.to_string(), r);
                }
            }
        }
    }

    fn resolve(&self, i: &Instr) -> Result<Op, Error> {
        let m: Vec<&str> = i.mods.iter().map(|s| s.as_str()).collect();
        let o = &i.operands;
        match i.opcode.as_str() {
            "mov" if o.len() == 2 && matches!(o[1], Operand::Special(..)) => {
                let Operand::Special(n, c) = &o[1] else {
                    return Err(self.invalid(i, "expected a special register"));
                };
                let dim = match c {
                    Some('x') => Some(0),
                    Some('y') => Some(1),
                    Some('z') => Some(2),
                    _ => None,
                };
                let s = match (n.as_str(), dim) {
                    ("%tid", Some(d)) => Sreg::Tid(d),
                    ("%ntid", Some(d)) => Sreg::Ntid(d),
                    ("%ctaid", Some(d)) => Sreg::Ctaid(d),
                    ("%nctaid", Some(d)) => Sreg::Nctaid(d),
                    ("%laneid", None) => Sreg::Laneid,
                    ("%warpid", None) => Sreg::Warpid,
                    ("%nwarpid", None) => Sreg::Nwarpid,
                    ("%cluster_ctarank", None) => Sreg::ClusterCtarank,
                    ("%cluster_nctarank", None) => Sreg::ClusterNctarank,
                    ("%cluster_ctaid", Some(d)) => Sreg::ClusterCtaid(d),
                    ("%cluster_nctaid", Some(d)) => Sreg::ClusterNctaid(d),
                    ("%clusterid", Some(d)) => Sreg::Clusterid(d),
                    ("%nclusterid", Some(d)) => Sreg::Nclusterid(d),
                    ("%is_explicit_cluster", None) => Sreg::IsExplicitCluster,
                    _ => return Err(self.unsupported(i, &format!("the special register `{n}`"))),
                };
                Ok(Op::MovSreg {
                    d: self.reg(i, &o[0])?,
                    s,
                })
            }
            "mov" if o.len() == 2 && matches!(o[1], Operand::Sym(_)) => {
                let Operand::Sym(s) = &o[1] else {
                    return Err(self.invalid(i, "expected a symbol"));
                };
                Ok(Op::MovAddr {
                    d: self.reg(i, &o[0])?,
                    base: self.sym(i, s, None)?,
                })
            }
            "mov" if m.contains(&"b128") => match (o.first(), o.get(1)) {
                (Some(d), Some(Operand::Vec(v))) if v.len() == 2 => Ok(Op::Mov128 {
                    d: self.reg(i, d)?,
                    lo: self.val(i, &v[0])?,
                }),
                _ => Err(self.unsupported(i, "forms other than `mov.b128 d, {lo, hi}`")),
            },
            op if OPCODES.contains(&op) => {
                let scoped = self.scoped_names(o);
                let ins = ip::parse_instruction(
                    self.src,
                    (i.span.start as usize, i.span.end as usize),
                    self.regs,
                    scoped.as_ref().unwrap_or(&self.k.reg_index),
                )
                .map_err(|e| {
                    if e.message.contains("outside the subset")
                        || e.message.contains("not a type")
                        || e.message.contains("bwsim takes")
                    {
                        Error::Unsupported {
                            opcode: i.opcode.clone(),
                            line: i.ptx_line,
                            span: i.span,
                            why: e.message.clone(),
                        }
                    } else {
                        Error::Invalid {
                            message: e.message,
                            span: Span::new(e.at.0, e.at.1),
                        }
                    }
                })?;
                Ok(Op::Alu(ins))
            }
            "ld" | "st" => {
                let space = m.iter().find_map(|x| space_of(x));
                if space == Some(Space::Const) {
                    return Err(self.unsupported(i, "constant memory"));
                }
                if m.iter().any(|x| x.starts_with("async") || x.starts_with("bulk")) {
                    return Err(self.unsupported(i, "asynchronous forms"));
                }
                let lanes = m.iter().find_map(|x| match *x {
                    "v2" => Some(2),
                    "v4" => Some(4),
                    "v8" => Some(8),
                    _ => None,
                });
                let ty = m.last().copied().unwrap_or("");
                let bytes = crate::parse::type_bytes(ty)
                    .ok_or_else(|| self.invalid(i, format!("`.{ty}` is not a type `{}` takes", i.opcode)))?;
                let signed = ty.starts_with('s');
                let (vals, addr) = if i.opcode == "ld" {
                    match (o.first(), o.get(1)) {
                        (Some(v), Some(Operand::Addr(a))) => (v, a),
                        _ => return Err(self.invalid(i, "`ld` takes a destination and an address")),
                    }
                } else {
                    match (o.first(), o.get(1)) {
                        (Some(Operand::Addr(a)), Some(v)) => (v, a),
                        _ => return Err(self.invalid(i, "`st` takes an address and a value")),
                    }
                };
                let elems: Vec<&Operand> = match vals {
                    Operand::Vec(v) => v.iter().collect(),
                    x => vec![x],
                };
                if elems.len() != lanes.unwrap_or(1) {
                    return Err(self.invalid(
                        i,
                        format!("{} values for a `.v{}` access", elems.len(), lanes.unwrap_or(1)),
                    ));
                }
                let access = Access {
                    space,
                    bytes,
                    order: crate::atomic::Order::of(&m),
                    at: MemRef {
                        base: self.base(i, addr, space)?,
                        offset: addr.offset,
                    },
                };
                let cluster = m.contains(&"shared::cluster");
                let op = if i.opcode == "ld" {
                    let dsts = elems
                        .iter()
                        .map(|e| match e {
                            Operand::Sink => Ok(None),
                            e => {
                                let r = self.reg(i, e)?;
                                if self.regs.reg_bits[r as usize] < bytes * 8 {
                                    return Err(
                                        self.invalid(i, "a destination narrower than the loaded type")
                                    );
                                }
                                Ok(Some(r))
                            }
                        })
                        .collect::<Result<_, Error>>()?;
                    Op::Ld { access, signed, dsts }
                } else {
                    let srcs = elems
                        .iter()
                        .map(|e| self.val(i, e))
                        .collect::<Result<_, Error>>()?;
                    Op::St { access, srcs }
                };
                Ok(if cluster {
                    Op::Agent(AgentOp::Dsmem(Box::new(op)))
                } else {
                    op
                })
            }
            "mapa" => {
                if !m.contains(&"shared::cluster") {
                    return Err(self.unsupported(i, "generic addresses (the `.shared::cluster` form runs)"));
                }
                let (Some(d), Some(a), Some(r)) = (o.first(), o.get(1), o.get(2)) else {
                    return Err(self.invalid(i, "`mapa` takes d, a, rank"));
                };
                let a = match a {
                    Operand::Sym(s) => match self.sym(i, s, Some(Space::Shared))? {
                        Base::Shared(off) => Val::Imm(off),
                        _ => return Err(self.invalid(i, "expected a shared variable")),
                    },
                    x => self.val(i, x)?,
                };
                Ok(Op::Mapa {
                    d: self.reg(i, d)?,
                    a,
                    rank: self.val(i, r)?,
                })
            }
            "clusterlaunchcontrol" => self.clc(i, &m),
            "barrier" if m.first() == Some(&"cluster") => match m.get(1).copied() {
                Some("arrive") => Ok(Op::Agent(AgentOp::ClusterArrive {
                    relaxed: m.contains(&"relaxed"),
                })),
                Some("wait") => Ok(Op::Agent(AgentOp::ClusterWait)),
                _ => Err(self.unsupported(i, "")),
            },
            "cvta" => {
                let to = m.first() == Some(&"to");
                let space = m
                    .iter()
                    .find_map(|x| space_of(x))
                    .ok_or_else(|| self.invalid(i, "`cvta` needs a state space"))?;
                if space == Space::Const {
                    return Err(self.unsupported(i, "cvta of constant addresses"));
                }
                if o.len() != 2 {
                    return Err(self.invalid(i, "`cvta` takes 2 operands"));
                }
                let a = match &o[1] {
                    Operand::Sym(s) => match self.sym(i, s, None)? {
                        Base::Shared(off) | Base::Local(off) => Val::Imm(off),
                        _ => return Err(self.unsupported(i, "cvta of a global symbol")),
                    },
                    x => self.val(i, x)?,
                };
                Ok(Op::Cvta {
                    to,
                    space,
                    d: self.reg(i, &o[0])?,
                    a,
                })
            }
            "brx" if m.first() == Some(&"idx") => {
                let (Some(x), Some(Operand::Sym(t))) = (o.first(), o.get(1)) else {
                    return Err(self.invalid(i, "`brx.idx` takes an index and a `.branchtargets` label"));
                };
                let names = self
                    .k
                    .branch_targets
                    .get(t)
                    .ok_or_else(|| self.invalid(i, format!("no `.branchtargets` table `{t}`")))?;
                let targets = names
                    .iter()
                    .map(|l| {
                        self.labels
                            .get(l)
                            .copied()
                            .ok_or_else(|| self.invalid(i, format!("no label `{l}`")))
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Op::Brx {
                    index: self.val(i, x)?,
                    targets,
                })
            }
            "bra" => match o.first() {
                Some(Operand::Sym(l)) => Ok(Op::Bra {
                    target: *self
                        .labels
                        .get(l)
                        .ok_or_else(|| self.invalid(i, format!("no label `{l}`")))?,
                }),
                _ => Err(self.invalid(i, "`bra` takes a label")),
            },
            "bar" if m.first() == Some(&"warp") => Ok(Op::Nop),
            "bar" | "barrier" => {
                let sync = m.contains(&"sync");
                if !sync || m.iter().any(|x| matches!(*x, "arrive" | "red")) {
                    return Err(self.unsupported(i, "barrier arrive and reduction forms"));
                }
                let id = self.val(
                    i,
                    o.first()
                        .ok_or_else(|| self.invalid(i, "a barrier needs its id"))?,
                )?;
                let count = o.get(1).map(|c| self.val(i, c)).transpose()?;
                Ok(Op::Bar { id, count })
            }
            "shfl" => {
                if !m.contains(&"sync") {
                    return Err(self.unsupported(i, "`shfl` without `.sync`"));
                }
                let mode = if m.contains(&"up") {
                    ShflMode::Up
                } else if m.contains(&"down") {
                    ShflMode::Down
                } else if m.contains(&"bfly") {
                    ShflMode::Bfly
                } else if m.contains(&"idx") {
                    ShflMode::Idx
                } else {
                    return Err(self.invalid(i, "`shfl.sync` needs a mode"));
                };
                if o.len() != 5 {
                    return Err(self.invalid(i, "`shfl.sync` takes d[|p], a, b, c, membermask"));
                }
                let (d, p) = match &o[0] {
                    Operand::Reg(r) => (*r, None),
                    Operand::Pair(r, q) => (*r, *q),
                    _ => return Err(self.invalid(i, "expected a destination register")),
                };
                Ok(Op::Shfl {
                    mode,
                    d,
                    p,
                    a: self.val(i, &o[1])?,
                    b: self.val(i, &o[2])?,
                    c: self.val(i, &o[3])?,
                    mask: self.val(i, &o[4])?,
                })
            }
            "redux" => {
                let op = match m.get(1).copied() {
                    Some("add") => ReduxOp::Add,
                    Some("min") => ReduxOp::Min,
                    Some("max") => ReduxOp::Max,
                    Some("and") => ReduxOp::And,
                    Some("or") => ReduxOp::Or,
                    Some("xor") => ReduxOp::Xor,
                    _ => return Err(self.invalid(i, "`redux.sync` needs an operation")),
                };
                let ty = m.last().copied().unwrap_or("");
                let float = ty == "f32";
                if !matches!(ty, "u32" | "s32" | "b32" | "f32")
                    || (float && !matches!(op, ReduxOp::Min | ReduxOp::Max))
                {
                    return Err(self.unsupported(i, &format!("`redux.sync` of `.{ty}`")));
                }
                if o.len() != 3 {
                    return Err(self.invalid(i, "`redux.sync` takes d, a, membermask"));
                }
                Ok(Op::Redux {
                    op,
                    signed: ty == "s32",
                    float,
                    nan: m.contains(&"NaN"),
                    abs: m.contains(&"abs"),
                    d: self.reg(i, &o[0])?,
                    a: self.val(i, &o[1])?,
                    mask: self.val(i, &o[2])?,
                })
            }
            "ret" | "exit" => Ok(Op::Exit),
            "trap" => Ok(Op::Trap),
            "call" => crate::calls::resolve_extern(i, self.frame),
            "vote" => {
                if !m.contains(&"sync") {
                    return Err(self.unsupported(i, "`vote` without `.sync`"));
                }
                let (mode, ty) = match m.get(1).copied() {
                    Some("ballot") => (VoteMode::Ballot, "b32"),
                    Some("all") => (VoteMode::All, "pred"),
                    Some("any") => (VoteMode::Any, "pred"),
                    Some("uni") => (VoteMode::Uni, "pred"),
                    _ => return Err(self.invalid(i, "`vote.sync` needs a mode: ballot, all, any or uni")),
                };
                if m.last().copied() != Some(ty) {
                    return Err(self.invalid(i, format!("`vote.sync.{}` takes `.{ty}`", m[1])));
                }
                if o.len() != 3 {
                    return Err(self.invalid(i, "`vote.sync` takes d, {!}a, membermask"));
                }
                let (a, not) = match &o[1] {
                    Operand::NotReg(r) => (Val::Reg(*r), true),
                    other => (self.val(i, other)?, false),
                };
                Ok(Op::Vote {
                    mode,
                    d: self.reg(i, &o[0])?,
                    a,
                    not,
                    mask: self.val(i, &o[2])?,
                })
            }
            "elect" => {
                let (d, p) = match o.first() {
                    Some(Operand::Pair(r, q)) => (Some(*r), *q),
                    Some(Operand::SinkPair(q)) => (None, Some(*q)),
                    Some(Operand::Reg(r)) => (Some(*r), None),
                    Some(Operand::Sink) => (None, None),
                    _ => return Err(self.invalid(i, "`elect.sync` takes d|p, membermask")),
                };
                let mask = self.val(
                    i,
                    o.get(1)
                        .ok_or_else(|| self.invalid(i, "`elect.sync` needs a member mask"))?,
                )?;
                Ok(Op::Elect { d, p, mask })
            }
            "ldmatrix" | "stmatrix" => {
                let store = i.opcode == "stmatrix";
                if !m.contains(&"m8n8") || !m.contains(&"b16") {
                    return Err(self.unsupported(i, "shapes other than `.m8n8` of `.b16`"));
                }
                let num = if m.contains(&"x4") {
                    4
                } else if m.contains(&"x2") {
                    2
                } else {
                    1
                };
                let (regs_op, addr) = match (store, o.first(), o.get(1)) {
                    (false, Some(r), Some(Operand::Addr(a))) => (r, a),
                    (true, Some(Operand::Addr(a)), Some(r)) => (r, a),
                    _ => return Err(self.invalid(i, "expected registers and a shared address")),
                };
                let regs: Vec<u16> = match regs_op {
                    Operand::Vec(v) => v.iter().map(|x| self.reg(i, x)).collect::<Result<_, _>>()?,
                    x => vec![self.reg(i, x)?],
                };
                if regs.len() != num as usize {
                    return Err(self.invalid(i, format!("{} registers for `.x{num}`", regs.len())));
                }
                Ok(Op::Matrix {
                    store,
                    num,
                    trans: m.contains(&"trans"),
                    regs,
                    at: self.memref(i, addr)?,
                })
            }
            "setmaxnreg" => Ok(Op::Nop),
            "mbarrier" => self.mbarrier(i, &m),
            op if tensormaps::is_tensormap(op, &m) => self.tensormap(i, &m),
            "fence" if m.first() == Some(&"proxy") && m.get(1) == Some(&"async") => {
                Ok(Op::Agent(AgentOp::FenceProxyAsync))
            }
            "atom" | "red" => self.atom(i, &m),
            "fence" | "membar" if memory::ordering_fence(&i.opcode, &m) => {
                // `membar.{gl,sys}` and `fence.sc` are sequentially consistent fences.
                let m = if i.opcode == "membar" {
                    vec!["sc", m[0]]
                } else {
                    m.clone()
                };
                Ok(Op::Fence(crate::atomic::Order::of(&m)))
            }
            "cp" if memory::bulk_tensor_form(&m) => self.bulk_tensor(i, &m),
            "cp" if m.starts_with(&["async", "bulk", "tensor"]) => {
                if m.contains(&"im2col") {
                    return Err(self.unsupported(i, "im2col forms"));
                }
                fn tensor(x: Option<&Operand>) -> Option<(&Addr, &Vec<Operand>)> {
                    match x {
                        Some(Operand::Tensor(a, c)) => Some((a, c)),
                        _ => None,
                    }
                }
                // The state spaces after the dimensions (and a `.cta_group`, placed before them).
                let mut spaces = m
                    .iter()
                    .skip(4)
                    .filter(|x| !x.starts_with("cta_group::"))
                    .copied();
                let (d4, d5) = (spaces.next().unwrap_or(""), spaces.next().unwrap_or(""));
                if d4.starts_with("shared") && d5 == "global" {
                    let (Some(Operand::Addr(dst)), Some((tm, cs)), Some(Operand::Addr(bar))) =
                        (o.first(), tensor(o.get(1)), o.get(2))
                    else {
                        return Err(
                            self.invalid(i, "expected [dst], [tensor map, {coordinates}], [mbarrier]")
                        );
                    };
                    Ok(Op::Agent(AgentOp::TmaLoad {
                        dst: self.memref(i, dst)?,
                        tmap: self.memref(i, tm)?,
                        coords: cs.iter().map(|c| self.val(i, c)).collect::<Result<_, _>>()?,
                        bar: self.memref(i, bar)?,
                        gather4: false,
                        multicast: match (m.contains(&"multicast::cluster"), o.get(3)) {
                            (false, _) => None,
                            (true, Some(x)) => Some(self.val(i, x)?),
                            (true, None) => {
                                return Err(self.invalid(i, "`.multicast::cluster` needs a CTA mask"))
                            }
                        },
                        pair: m.contains(&"cta_group::2"),
                    }))
                } else if d4 == "global" && d5.starts_with("shared") && m.contains(&"bulk_group") {
                    let (Some((tm, cs)), Some(Operand::Addr(src))) = (tensor(o.first()), o.get(1)) else {
                        return Err(self.invalid(i, "expected [tensor map, {coordinates}], [src]"));
                    };
                    Ok(Op::Agent(AgentOp::TmaStore {
                        tmap: self.memref(i, tm)?,
                        coords: cs.iter().map(|c| self.val(i, c)).collect::<Result<_, _>>()?,
                        src: self.memref(i, src)?,
                        scatter4: false,
                        reduce: None,
                    }))
                } else {
                    Err(self.unsupported(i, ""))
                }
            }
            "prefetch" if m.first() == Some(&"tensormap") => Ok(Op::Nop),
            "fence" if m.first() == Some(&"mbarrier_init") => Ok(Op::Agent(AgentOp::FenceMbarInit)),
            "tcgen05" => self.tcgen05(i, &m),
            "cp" if m == ["async", "bulk", "commit_group"] => Ok(Op::Agent(AgentOp::BulkCommit)),
            "cp" if m.starts_with(&["async", "bulk", "wait_group"]) => {
                let n = match o.first() {
                    Some(Operand::Int(n)) => *n,
                    _ => return Err(self.invalid(i, "`cp.async.bulk.wait_group` takes a constant")),
                };
                Ok(Op::Agent(AgentOp::BulkWait {
                    n,
                    read: m.contains(&"read"),
                }))
            }
            "cp" if cp_async::is_cp_async(&m) => self.cp_async(i, &m),
            "wgmma" => self.wgmma(i, &m),
            _ => Err(self.unsupported(i, "")),
        }
    }
}

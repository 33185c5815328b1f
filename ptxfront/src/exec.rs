//! Executing a [`Program`] over a launch: every CTA of the grid in turn, its threads in warps,
//! each thread with its own registers and program counter.
//!
//! Scheduling: within a CTA, the executor takes each warp in turn and runs each of its threads
//! alone until it stops at a synchronising instruction (a warp collective, a CTA barrier) or
//! exits. A warp collective (`shfl.sync`, `redux.sync`) runs once every thread its member mask
//! names has stopped at that same instruction; a barrier releases once the threads it counts
//! (all live threads of the CTA, or the count operand) have arrived. Divergence needs no
//! reconvergence stack: between synchronising instructions the threads of a warp are
//! independent, and at one the executor checks that the lanes it names are all there (a
//! collective whose named lanes stopped elsewhere, or exited, is an error, as PTX leaves it
//! undefined).
//!
//! Memories are byte-addressed: the parameter space (the launch's arguments, laid out as the
//! kernel declares them), global memory (each launch buffer at [`buffer_address`], then the
//! module's `.global` variables) and one shared memory per CTA (static variables, then the
//! dynamic `.extern` array). A generic address is global unless it falls in the shared window
//! at [`SHARED_WINDOW`] (what `cvta.shared` produces).

use crate::atomic::Order;
use crate::calls::LOCAL_WINDOW;
use crate::parse::Space;
use crate::program::{Base, MemRef, Op, Program, ReduxOp, ShflMode, Sreg, Val, VoteMode};
use crate::Error;
use bwsim_isa::inline_ptx;
use bwsim_isa::span::Span;

/// The global address of launch buffer 0; buffer `k` starts `k * BUFFER_STRIDE` above it.
pub const GLOBAL_BASE: u64 = 1 << 40;
pub const BUFFER_STRIDE: u64 = 1 << 36;
/// Generic addresses of the CTA's shared memory start here.
pub const SHARED_WINDOW: u64 = 1 << 56;
/// Generic addresses of the kernel's parameters (`cvta.param`) start here.
pub const PARAM_WINDOW: u64 = 1 << 57;
/// A CTA's shared addresses carry its rank in its cluster from this bit up: the byte at offset
/// `o` of the shared memory of the CTA of rank `r` is `r << CLUSTER_RANK_SHIFT | o`, in its own
/// `.shared::cta` window and in the cluster's `.shared::cluster` window alike (PTX ISA: a
/// `.shared::cta` address is a valid `.shared::cluster` address of the executing CTA). So the
/// address `mapa` gives replaces the rank, and Triton's mask `0xFEFFFFF0` (bit 24 cleared) names
/// the even CTA of a pair. A CTA has less than 16 MiB of shared memory.
pub const CLUSTER_RANK_SHIFT: u32 = 24;

/// The CTA rank and the shared byte offset that the `.shared::cluster` address `a` names.
pub fn cluster_address(a: u64) -> (u64, u64) {
    (a >> CLUSTER_RANK_SHIFT, a & ((1 << CLUSTER_RANK_SHIFT) - 1))
}

/// The `.shared::cluster` address of shared byte `offset` of the CTA of rank `rank`.
pub fn cluster_window(rank: u64, offset: u64) -> u64 {
    rank << CLUSTER_RANK_SHIFT | (offset & ((1 << CLUSTER_RANK_SHIFT) - 1))
}

/// The global address of launch buffer `k`.
pub fn buffer_address(k: usize) -> u64 {
    GLOBAL_BASE + k as u64 * BUFFER_STRIDE
}

/// One kernel argument, in the order of the kernel's parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// The address of launch buffer `k`.
    Buffer(usize),
    /// A null pointer or any other 64-bit value.
    U64(u64),
    U32(u32),
    F32(f32),
    /// Raw bytes (a tensor map's 128 bytes, for a kernel that only passes them on).
    Bytes(Vec<u8>),
    /// A tensor map (`CUtensorMap`) over a launch buffer, for `cp.async.bulk.tensor`; only
    /// the machine ([`crate::machine`]) runs the copies.
    TensorMap(crate::tensormap::TensorMap),
}

/// A launch: grid, cluster and CTA shape, arguments, dynamic shared memory.
#[derive(Clone, Debug)]
pub struct Launch {
    pub grid: [u32; 3],
    /// The cluster shape in CTAs (`[1, 1, 1]`: no clusters); it divides the grid.
    pub cluster: [u32; 3],
    pub block: [u32; 3],
    pub args: Vec<Arg>,
    pub dynamic_shared: u64,
    /// Instructions all threads together may execute before the run stops.
    pub max_steps: u64,
}

impl Launch {
    pub fn new(grid: [u32; 3], block: [u32; 3], args: Vec<Arg>) -> Launch {
        Launch {
            grid,
            cluster: [1, 1, 1],
            block,
            args,
            dynamic_shared: 0,
            max_steps: 1 << 32,
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub ctas: u64,
    pub threads: u64,
    /// Thread-instructions executed (a guarded-off instruction counts).
    pub instructions: u64,
    pub barriers: u64,
    pub collectives: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum St {
    Run,
    /// Stopped at the synchronising instruction at its pc; a barrier's id and expected count.
    Sync(Option<(u64, Option<u64>)>),
    /// Stopped at an instruction only the machine runs ([`Op::Agent`]).
    Agent,
    Done,
}

pub(crate) struct Thread {
    pub(crate) v: Vec<u64>,
    pub(crate) def: Vec<bool>,
    /// The registers holding undefined bits, each with their mask ([`crate::undef`]); empty
    /// for almost every thread.
    pub(crate) undef: Vec<(u16, u64)>,
    pub(crate) pc: usize,
    pub(crate) st: St,
    pub(crate) tid: [u32; 3],
    /// The thread's local memory and call parameters ([`crate::calls`]).
    pub(crate) frame: Vec<u8>,
}

/// The CTA barriers that every thread they wait for has reached, each as the indices in `th` of
/// the threads waiting at it, by barrier id: a barrier waits for the count its `bar.sync`
/// gives, else for every thread that has not finished.
pub(crate) fn complete_barriers(th: &[Thread]) -> Vec<Vec<usize>> {
    let live = th.iter().filter(|t| t.st != St::Done).count() as u64;
    let ids: std::collections::BTreeSet<u64> = th
        .iter()
        .filter_map(|t| match t.st {
            St::Sync(Some((id, _))) => Some(id),
            _ => None,
        })
        .collect();
    ids.into_iter()
        .filter_map(|id| {
            let at: Vec<usize> = (0..th.len())
                .filter(|&t| matches!(th[t].st, St::Sync(Some((i, _))) if i == id))
                .collect();
            let count = at.iter().find_map(|&t| match th[t].st {
                St::Sync(Some((_, c))) => c,
                _ => None,
            });
            (at.len() as u64 >= count.unwrap_or(live)).then_some(at)
        })
        .collect()
}

/// One global-memory event of a thread (what the machine's global-memory check reads,
/// [`crate::machine`]): an access (an atomic is a strong read, then a strong write) or a fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GEvent {
    Access(GAccess),
    Fence { thread: usize, order: Order },
}

/// A global-memory access of a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct GAccess {
    /// The thread's index in its CTA.
    pub(crate) thread: usize,
    pub(crate) pc: usize,
    /// The global address.
    pub(crate) addr: u64,
    pub(crate) bytes: u32,
    pub(crate) write: bool,
    /// A write of the bytes the memory already held.
    pub(crate) silent: bool,
    pub(crate) order: Order,
}

/// One shared-memory access by a thread (what the machine gives the hazard checker).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SharedAccess {
    pub(crate) pc: usize,
    pub(crate) addr: u32,
    pub(crate) bytes: u32,
    pub(crate) write: bool,
    /// A store of the bytes the memory already held.
    pub(crate) silent: bool,
}

pub(crate) struct Cta<'a> {
    pub(crate) p: &'a Program,
    pub(crate) l: &'a Launch,
    pub(crate) ctaid: [u32; 3],
    pub(crate) params: &'a [u8],
    pub(crate) shared: Vec<u8>,
    pub(crate) bufs: &'a mut [Vec<u8>],
    pub(crate) globals: &'a mut [Vec<u8>],
    pub(crate) stats: &'a mut Stats,
    /// Shared-memory accesses since the machine last took them (`None`: not recorded).
    pub(crate) log: Option<Vec<SharedAccess>>,
    /// The CTA's global-memory events (`None`: not recorded), and the thread and order of the
    /// instruction running.
    pub(crate) glog: Option<Vec<GEvent>>,
    pub(crate) gwho: (usize, Order),
}

/// Runs `p` over launch `l`; `bufs` are the global buffers the arguments point into, read and
/// written in place. The CTAs of a cluster run one after the other: what lets them act on
/// each other (cluster barriers, distributed shared memory) is the machine's
/// ([`crate::machine`]).
pub fn run(p: &Program, l: &Launch, bufs: &mut [Vec<u8>]) -> Result<Stats, Error> {
    let params = prepare(p, l, bufs)?;
    run_ctas(p, l, &params, bufs, false, |mut cta, members| {
        for &m in members {
            cta.ctaid = m;
            cta.shared.fill(0);
            cta.run()?;
            cta.stats.ctas += 1;
        }
        Ok(())
    })
}

/// Runs `run_cluster` on each cluster of launch `l` in turn (x fastest), given the CTA of rank
/// 0 of the cluster, with fresh shared memory (its accesses logged if `log`), the parameter
/// space `params` (from [`prepare`]), and the global buffers and the program's globals all
/// share, and the ids of the cluster's CTAs in rank order (`run_cluster` counts the CTAs it
/// runs in the statistics); the statistics of them all.
pub(crate) fn run_ctas(
    p: &Program,
    l: &Launch,
    params: &[u8],
    bufs: &mut [Vec<u8>],
    log: bool,
    mut run_cluster: impl FnMut(Cta<'_>, &[[u32; 3]]) -> Result<(), Error>,
) -> Result<Stats, Error> {
    let mut globals: Vec<Vec<u8>> = p.globals.iter().map(|(_, b)| b.clone()).collect();
    let mut stats = Stats::default();
    let c = l.cluster.map(|x| x.max(1));
    for cz in 0..l.grid[2].div_ceil(c[2]) {
        for cy in 0..l.grid[1].div_ceil(c[1]) {
            for cx in 0..l.grid[0].div_ceil(c[0]) {
                let mut members = Vec::new();
                for z in 0..c[2] {
                    for y in 0..c[1] {
                        for x in 0..c[0] {
                            members.push([cx * c[0] + x, cy * c[1] + y, cz * c[2] + z]);
                        }
                    }
                }
                run_cluster(
                    Cta {
                        p,
                        l,
                        ctaid: members[0],
                        params,
                        shared: vec![0; (p.static_shared + l.dynamic_shared) as usize],
                        bufs,
                        globals: &mut globals,
                        stats: &mut stats,
                        log: log.then(Vec::new),
                        glog: log.then(Vec::new),
                        gwho: (0, Order::default()),
                    },
                    &members,
                )?;
            }
        }
    }
    Ok(stats)
}

/// Checks launch `l` against `p` and lays out the parameter space. A tensor map's 128 bytes
/// hold its index among the launch's arguments (little-endian, in the first 8 bytes), which is
/// how the machine finds it from the address a copy names.
pub(crate) fn prepare(p: &Program, l: &Launch, bufs: &[Vec<u8>]) -> Result<Vec<u8>, Error> {
    if l.block.contains(&0) || l.grid.contains(&0) {
        return Err(Error::Launch("a grid or CTA dimension is 0".into()));
    }
    if let Some(r) = &p.reqntid {
        let want: u64 = r.iter().map(|&x| x as u64).product();
        let have: u64 = l.block.iter().map(|&x| x as u64).product();
        if want != have {
            return Err(Error::Launch(format!(
                "`{}` requires {want} threads per CTA (`.reqntid`), the launch has {have}",
                p.name
            )));
        }
    }
    if let Some(want) = &p.cluster {
        let want: Vec<u32> = (0..3).map(|i| want.get(i).copied().unwrap_or(1)).collect();
        if want != l.cluster {
            return Err(Error::Launch(format!(
                "`{}` requires clusters of {want:?} CTAs (`.reqnctapercluster`), the launch has {:?}",
                p.name, l.cluster
            )));
        }
    }
    if (0..3).any(|i| l.cluster[i] == 0 || !l.grid[i].is_multiple_of(l.cluster[i])) {
        return Err(Error::Launch(format!(
            "the cluster {:?} does not divide the grid {:?}",
            l.cluster, l.grid
        )));
    }
    if l.args.len() != p.params.len() {
        return Err(Error::Launch(format!(
            "`{}` takes {} parameters, the launch gives {}",
            p.name,
            p.params.len(),
            l.args.len()
        )));
    }
    let mut params = vec![0u8; p.param_bytes as usize];
    for (prm, a) in p.params.iter().zip(&l.args) {
        let bytes: Vec<u8> = match a {
            Arg::Buffer(k) => {
                if *k >= bufs.len() {
                    return Err(Error::Launch(format!(
                        "parameter `{}` names buffer {k}; there are {}",
                        prm.name,
                        bufs.len()
                    )));
                }
                buffer_address(*k).to_le_bytes().to_vec()
            }
            Arg::U64(v) => v.to_le_bytes().to_vec(),
            Arg::U32(v) => v.to_le_bytes().to_vec(),
            Arg::F32(v) => v.to_bits().to_le_bytes().to_vec(),
            Arg::Bytes(b) => b.clone(),
            Arg::TensorMap(t) => {
                if t.buffer >= bufs.len() {
                    return Err(Error::Launch(format!(
                        "the tensor map of parameter `{}` names buffer {}; there are {}",
                        prm.name,
                        t.buffer,
                        bufs.len()
                    )));
                }
                let mut b = vec![0u8; prm.bytes as usize];
                let k = (l.args.iter().position(|x| std::ptr::eq(x, a)).unwrap_or(0) as u64).to_le_bytes();
                let n = b.len().min(8);
                b[..n].copy_from_slice(&k[..n]);
                b
            }
        };
        if bytes.len() != prm.bytes as usize {
            return Err(Error::Launch(format!(
                "parameter `{}` is {} bytes, its argument {}",
                prm.name,
                prm.bytes,
                bytes.len()
            )));
        }
        let o = prm.offset as usize;
        params[o..o + bytes.len()].copy_from_slice(&bytes);
    }
    Ok(params)
}

/// The low 64 bits of the 16-byte response of a `clusterlaunchcontrol.try_cancel` that
/// cancelled the launch of the cluster whose first CTA is `ctaid` (`None`: that cancelled
/// nothing). The response is opaque on hardware; the front end writes the CTA id x plus one,
/// y and z in bits 0, 32 and 48 (a grid has less than 2^31 CTAs in x, 2^16 in y and z), and
/// zero for a response that cancelled nothing, as zeroed bytes read too; the rest is zero.
pub fn clc_encode(ctaid: Option<[u32; 3]>) -> u64 {
    match ctaid {
        Some([x, y, z]) => (x as u64 + 1) | (y as u64 & 0xffff) << 32 | (z as u64 & 0xffff) << 48,
        None => 0,
    }
}

/// The first CTA id a response's low 64 bits ([`clc_encode`]) name, if it cancelled a launch.
pub fn clc_response(v: u64) -> Option<[u32; 3]> {
    let x = v as u32;
    (x != 0).then(|| [x - 1, (v >> 32) as u32 & 0xffff, (v >> 48) as u32])
}

/// A loaded value of `bytes` bytes, sign-extended if `signed`.
pub(crate) fn extend(raw: u64, bytes: u32, signed: bool) -> u64 {
    if signed && bytes < 8 {
        let sh = 64 - 8 * bytes;
        (((raw << sh) as i64) >> sh) as u64
    } else {
        raw
    }
}

/// The rank in its cluster (of shape `cluster`) of the CTA at `ctaid`: its position in the
/// cluster, x fastest (PTX ISA, `%cluster_ctarank`).
pub(crate) fn cluster_rank(cluster: [u32; 3], ctaid: [u32; 3]) -> u32 {
    let c = cluster.map(|x| x.max(1));
    let [x, y, z] = [0, 1, 2].map(|i| ctaid[i] % c[i]);
    x + c[0] * (y + c[1] * z)
}

fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

impl Cta<'_> {
    pub(crate) fn rt(&self, pc: usize, message: String) -> Error {
        let span = self.p.ins.get(pc).map_or(Span::DUMMY, |i| i.span);
        Error::Runtime {
            message: format!("{message}, at {}", self.p.place(pc)),
            span,
        }
    }

    /// An `unspecified-result` stop at instruction `pc` (as [`Self::rt`] places it).
    pub(crate) fn unspecified(&self, pc: usize, message: String) -> Error {
        let span = self.p.ins.get(pc).map_or(Span::DUMMY, |i| i.span);
        Error::Unspecified {
            message: format!("{message}, at {}", self.p.place(pc)),
            span,
            pc,
        }
    }

    /// The CTA's threads, all at the first instruction.
    pub(crate) fn threads(&self) -> Vec<Thread> {
        let [bx, by, bz] = self.l.block;
        let n = (bx * by * bz) as usize;
        let nregs = self.p.regs.reg_bits.len();
        (0..n)
            .map(|k| {
                let k = k as u32;
                Thread {
                    v: vec![0; nregs],
                    def: vec![false; nregs],
                    undef: Vec::new(),
                    pc: 0,
                    st: St::Run,
                    tid: [k % bx, (k / bx) % by, k / (bx * by)],
                    frame: vec![0; self.p.frame_bytes as usize],
                }
            })
            .collect()
    }

    fn run(&mut self) -> Result<(), Error> {
        let mut th = self.threads();
        let n = th.len();
        self.stats.threads += n as u64;
        let warps = n.div_ceil(32);
        loop {
            let mut progressed = false;
            for w in 0..warps {
                let lanes = w * 32..(w * 32 + 32).min(n);
                loop {
                    for t in lanes.clone() {
                        while th[t].st == St::Run {
                            self.step(&mut th[t], t)?;
                            progressed = true;
                        }
                        if th[t].st == St::Agent {
                            let pc = th[t].pc;
                            return Err(self.rt(
                                pc,
                                format!(
                                    "`{}` needs the machine of the PTX front end (bwsim_ptxfront::machine), which runs warps as agents",
                                    self.p.ins[pc].opcode
                                ),
                            ));
                        }
                    }
                    // A warp collective whose lanes are all there.
                    let Some(first) = lanes.clone().find(|&t| th[t].st == St::Sync(None)) else {
                        break;
                    };
                    let pc = th[first].pc;
                    self.collective(&mut th, lanes.clone(), pc)?;
                    progressed = true;
                }
            }
            // Barriers.
            let live = th.iter().filter(|t| t.st != St::Done).count() as u64;
            if live == 0 {
                return Ok(());
            }
            let mut released = false;
            for at in complete_barriers(&th) {
                for &t in &at {
                    th[t].pc += 1;
                    th[t].st = St::Run;
                }
                self.stats.barriers += 1;
                released = true;
            }
            if !released && !progressed {
                let waiting: Vec<String> = th
                    .iter()
                    .filter(|t| t.st != St::Done)
                    .map(|t| self.p.place(t.pc))
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect();
                let pc = th.iter().find(|t| t.st != St::Done).map_or(0, |t| t.pc);
                return Err(self.rt(
                    pc,
                    format!(
                        "deadlock in CTA {:?}: {live} threads wait at barriers that never complete ({})",
                        self.ctaid,
                        waiting.join("; ")
                    ),
                ));
            }
        }
    }

    pub(crate) fn read(&self, t: &Thread, v: Val, pc: usize) -> Result<u64, Error> {
        match v {
            Val::Imm(x) => Ok(x),
            Val::Reg(r) => {
                if t.def[r as usize] {
                    if !t.undef.is_empty() {
                        self.defined(t, r, pc)?;
                    }
                    Ok(t.v[r as usize])
                } else {
                    Err(self.rt(
                        pc,
                        format!(
                            "`{}` is read before it is written",
                            self.p.regs.reg_names[r as usize]
                        ),
                    ))
                }
            }
        }
    }

    pub(crate) fn write(&self, t: &mut Thread, r: u16, v: u64) {
        t.v[r as usize] = v & mask(self.p.regs.reg_bits[r as usize]);
        t.def[r as usize] = true;
        if !t.undef.is_empty() {
            t.undef.retain(|&(x, _)| x != r);
        }
    }

    /// Runs one instruction of thread `t` (index `k` in the CTA), or stops it at a
    /// synchronising one.
    pub(crate) fn step(&mut self, t: &mut Thread, k: usize) -> Result<(), Error> {
        let pc = t.pc;
        let Some(ins) = self.p.ins.get(pc) else {
            t.st = St::Done;
            return Ok(());
        };
        self.stats.instructions += 1;
        if self.stats.instructions > self.l.max_steps {
            return Err(self.rt(
                pc,
                format!("the run passed its limit of {} instructions", self.l.max_steps),
            ));
        }
        if let Some((g, neg)) = ins.guard {
            let v = self.read(t, Val::Reg(g), pc)? != 0;
            if v == neg {
                t.pc += 1;
                return Ok(());
            }
        }
        if self.glog.is_some() {
            let order = match &ins.op {
                Op::Ld { access, .. } | Op::St { access, .. } => access.order,
                Op::Atom(a) => a.order,
                _ => Order::default(),
            };
            self.gwho = (k, order);
        }
        match &ins.op {
            Op::Alu(a) => {
                let out = if t.undef.is_empty() {
                    inline_ptx::step(a, &self.p.regs, &self.p.src, &mut t.v, &mut t.def)
                } else {
                    self.step_undefined(t, a)
                };
                let out = match out {
                    // A never-written register: its bits are undefined from here on.
                    Err(inline_ptx::RunError::Undefined { .. }) => self.step_undefined(t, a),
                    out => out,
                };
                out.map_err(|e| match e {
                    inline_ptx::RunError::Unspecified { .. } => self.unspecified(pc, e.to_string()),
                    _ => self.rt(pc, e.to_string()),
                })?;
            }
            Op::MovSreg { d, s } => {
                let l = self.l;
                let lin = k as u64;
                let v = match *s {
                    Sreg::Tid(i) => t.tid[i] as u64,
                    Sreg::Ntid(i) => l.block[i] as u64,
                    Sreg::Ctaid(i) => self.ctaid[i] as u64,
                    Sreg::Nctaid(i) => l.grid[i] as u64,
                    Sreg::Laneid => lin % 32,
                    Sreg::Warpid => lin / 32,
                    Sreg::Nwarpid => (l.block.iter().map(|&x| x as u64).product::<u64>()).div_ceil(32),
                    Sreg::ClusterCtarank => cluster_rank(l.cluster, self.ctaid) as u64,
                    Sreg::ClusterNctarank => l.cluster.iter().map(|&x| x as u64).product(),
                    Sreg::ClusterCtaid(i) => (self.ctaid[i] % l.cluster[i].max(1)) as u64,
                    Sreg::ClusterNctaid(i) => l.cluster[i] as u64,
                    Sreg::Clusterid(i) => (self.ctaid[i] / l.cluster[i].max(1)) as u64,
                    Sreg::Nclusterid(i) => (l.grid[i] / l.cluster[i].max(1)) as u64,
                    Sreg::IsExplicitCluster => (l.cluster != [1, 1, 1] || self.p.cluster.is_some()) as u64,
                };
                self.write(t, *d, v);
            }
            Op::MovAddr { d, base } => {
                let v = self.base_addr(t, base, pc)?;
                self.write(t, *d, v);
            }
            Op::Ld { access, signed, dsts } => {
                let bytes = access.bytes;
                let (sp, addr) = self.address(t, access.space, &access.at, pc)?;
                for (e, d) in dsts.iter().enumerate() {
                    let a = addr + e as u64 * bytes as u64;
                    let raw = if sp == Space::Local {
                        self.frame_load(t, a, bytes, pc)?
                    } else {
                        self.load(sp, a, bytes, pc)?
                    };
                    if let Some(d) = d {
                        self.write(t, *d, extend(raw, bytes, *signed));
                    }
                }
            }
            Op::St { access, srcs } => {
                let bytes = access.bytes;
                let (sp, addr) = self.address(t, access.space, &access.at, pc)?;
                for (e, s) in srcs.iter().enumerate() {
                    let v = self.read(t, *s, pc)?;
                    let a = addr + e as u64 * bytes as u64;
                    if sp == Space::Local {
                        self.frame_store(t, a, bytes, v, pc)?;
                    } else {
                        self.store(sp, a, bytes, v, pc)?;
                    }
                }
            }
            Op::Mapa { d, a, rank } => {
                let (a, r) = (self.read(t, *a, pc)?, self.read(t, *rank, pc)?);
                self.write(t, *d, cluster_window(r, cluster_address(a).1));
            }
            Op::Mov128 { d, lo } => {
                let v = self.read(t, *lo, pc)?;
                self.write(t, *d, v);
            }
            Op::ClcQuery {
                canceled,
                dims,
                dsts,
                src,
            } => {
                let r = clc_response(self.read(t, *src, pc)?);
                if *canceled {
                    self.write(t, dsts[0], r.is_some() as u64);
                }
                for (&dim, &d) in dims.iter().zip(dsts) {
                    let v = r.and_then(|c| c.get(dim).copied()).unwrap_or(0);
                    self.write(t, d, v as u64);
                }
            }
            Op::Cvta { to, space, d, a } => {
                let a = self.read(t, *a, pc)?;
                let v = match (space, to) {
                    (Space::Shared, false) => a.wrapping_add(SHARED_WINDOW),
                    (Space::Shared, true) => a.wrapping_sub(SHARED_WINDOW),
                    (Space::Param, false) => a.wrapping_add(PARAM_WINDOW),
                    (Space::Param, true) => a.wrapping_sub(PARAM_WINDOW),
                    (Space::Local, false) => a.wrapping_add(LOCAL_WINDOW),
                    (Space::Local, true) => a.wrapping_sub(LOCAL_WINDOW),
                    _ => a,
                };
                self.write(t, *d, v);
            }
            Op::Bra { target } => {
                t.pc = *target;
                return Ok(());
            }
            Op::Brx { index, targets } => {
                let x = self.read(t, *index, pc)?;
                let Some(&to) = targets.get(x as usize) else {
                    return Err(self.rt(
                        pc,
                        format!(
                            "`brx.idx` with index {x} into a table of {} labels",
                            targets.len()
                        ),
                    ));
                };
                t.pc = to;
                return Ok(());
            }
            Op::Bar { id, count } => {
                let id = self.read(t, *id, pc)?;
                let count = count.map(|c| self.read(t, c, pc)).transpose()?;
                t.st = St::Sync(Some((id, count)));
                return Ok(());
            }
            Op::Shfl { .. } | Op::Redux { .. } | Op::Elect { .. } | Op::Vote { .. } | Op::Matrix { .. } => {
                t.st = St::Sync(None);
                return Ok(());
            }
            Op::Agent(_) => {
                t.st = St::Agent;
                return Ok(());
            }
            Op::Atom(a) => self.atom(t, a, pc)?,
            Op::Fence(o) => {
                if let Some(g) = &mut self.glog {
                    g.push(GEvent::Fence { thread: k, order: *o });
                }
            }
            Op::Nop => {}
            op @ Op::Assert { .. } => return Err(self.assert_fail(t, op, pc)),
            Op::Trap => return Err(self.rt(pc, "`trap`: the kernel aborted".into())),
            Op::Exit => {
                t.st = St::Done;
                return Ok(());
            }
        }
        t.pc += 1;
        Ok(())
    }

    pub(crate) fn base_addr(&self, t: &Thread, b: &Base, pc: usize) -> Result<u64, Error> {
        Ok(match b {
            Base::Reg(r) => self.read(t, Val::Reg(*r), pc)?,
            Base::Param(o) => *o as u64,
            Base::Shared(o) => self.shared_base() + *o,
            Base::Local(o) => *o,
            Base::Global(g) => buffer_address(self.bufs.len() + *g),
            Base::None => 0,
        })
    }

    /// The space, and the address within it, of thread `t`'s access to `m` in `space` (`None`:
    /// generic addressing).
    pub(crate) fn address(
        &self,
        t: &Thread,
        space: Option<Space>,
        m: &MemRef,
        pc: usize,
    ) -> Result<(Space, u64), Error> {
        let a = self.base_addr(t, &m.base, pc)?.wrapping_add(m.offset as u64);
        Ok(self.locate(space, &m.base, a))
    }

    /// The space and address within it of an access.
    pub(crate) fn locate(&self, space: Option<Space>, base: &Base, a: u64) -> (Space, u64) {
        match (space, base) {
            // A `.shared` address held in a 32-bit register is computed in 32 bits: a base
            // below the variable plus an offset past it wraps (Triton 3.9 emits
            // `sub.s32 %r9, %smem, %r404` then `[%r9+33264]`).
            (Some(Space::Shared), _) if a > u32::MAX as u64 && a < SHARED_WINDOW => {
                (Space::Shared, a & u32::MAX as u64)
            }
            (_, Base::Local(_)) => (Space::Local, a),
            (Some(s), _) => (s, a),
            (None, Base::Param(_)) => (Space::Param, a),
            (None, Base::Shared(_)) => (Space::Shared, a),
            (None, _)
                if (SHARED_WINDOW + self.shared_base()
                    ..SHARED_WINDOW + self.shared_base() + self.shared.len() as u64)
                    .contains(&a) =>
            {
                (Space::Shared, a - SHARED_WINDOW)
            }
            (None, _) if (PARAM_WINDOW..PARAM_WINDOW + self.params.len() as u64).contains(&a) => {
                (Space::Param, a - PARAM_WINDOW)
            }
            (None, _) if (LOCAL_WINDOW..LOCAL_WINDOW + (1 << 32)).contains(&a) => {
                (Space::Local, a - LOCAL_WINDOW)
            }
            (None, _) => (Space::Global, a),
        }
    }

    /// The shared address of this CTA's byte 0 (its rank in its cluster, [`CLUSTER_RANK_SHIFT`]).
    pub(crate) fn shared_base(&self) -> u64 {
        cluster_window(cluster_rank(self.l.cluster, self.ctaid) as u64, 0)
    }

    /// The offset in this CTA's shared memory of the shared address `a` (unchanged, so out of
    /// bounds, when it is another CTA's).
    pub(crate) fn shared_offset(&self, a: u64) -> u64 {
        match cluster_address(a) {
            (r, off) if r == cluster_rank(self.l.cluster, self.ctaid) as u64 => off,
            _ => a,
        }
    }

    pub(crate) fn bytes_at(&mut self, sp: Space, a: u64, n: u32, pc: usize) -> Result<&mut [u8], Error> {
        if !a.is_multiple_of(n as u64) {
            return Err(self.rt(pc, format!("a {n}-byte access at the misaligned address {a:#x}")));
        }
        let out_of = |what: &str| format!("a {n}-byte access at {a:#x} is outside {what}");
        let err = match sp {
            Space::Param => {
                out_of("the memories a load or store reaches (parameters are read by `ld.param`)")
            }
            Space::Shared => {
                if a.checked_add(n as u64)
                    .is_some_and(|e| e <= self.shared.len() as u64)
                {
                    return Ok(&mut self.shared[a as usize..(a + n as u64) as usize]);
                }
                out_of(&format!("the CTA's {} bytes of shared memory", self.shared.len()))
            }
            _ => {
                let nb = self.bufs.len();
                let fits = |len: usize, o: u64| o + n as u64 <= len as u64;
                if a >= GLOBAL_BASE {
                    let k = ((a - GLOBAL_BASE) / BUFFER_STRIDE) as usize;
                    let o = (a - GLOBAL_BASE) % BUFFER_STRIDE;
                    let r = o as usize..(o + n as u64) as usize;
                    if k < nb && fits(self.bufs[k].len(), o) {
                        return Ok(&mut self.bufs[k][r]);
                    }
                    if k >= nb && k - nb < self.globals.len() && fits(self.globals[k - nb].len(), o) {
                        return Ok(&mut self.globals[k - nb][r]);
                    }
                }
                // The GPU's cudaErrorIllegalAddress.
                let m = out_of("every launch buffer and global variable");
                return Err(self.trap(pc, bwsim_isa::Code::IllegalAddress, m, "the access faults here"));
            }
        };
        Err(self.rt(pc, err))
    }

    pub(crate) fn load(&mut self, sp: Space, a: u64, n: u32, pc: usize) -> Result<u64, Error> {
        let a = if sp == Space::Shared {
            self.shared_offset(a)
        } else {
            a
        };
        self.note(sp, a, n, false, false, pc);
        if sp == Space::Param {
            if !a.is_multiple_of(n as u64) || a + n as u64 > self.params.len() as u64 {
                return Err(self.rt(
                    pc,
                    format!(
                        "a {n}-byte parameter read at {a} is outside the kernel's parameters or misaligned"
                    ),
                ));
            }
            let mut v = 0u64;
            for i in 0..n.min(8) as usize {
                v |= (self.params[a as usize + i] as u64) << (8 * i);
            }
            return Ok(v);
        }
        let b = self.bytes_at(sp, a, n, pc)?;
        let mut v = 0u64;
        for (i, x) in b.iter().take(8).enumerate() {
            v |= (*x as u64) << (8 * i);
        }
        Ok(v)
    }

    /// Records a global-memory access of the running thread with `order` for the machine's
    /// global-memory check.
    pub(crate) fn note_global(
        &mut self,
        addr: u64,
        bytes: u32,
        write: bool,
        silent: bool,
        order: Order,
        pc: usize,
    ) {
        let thread = self.gwho.0;
        if let Some(g) = &mut self.glog {
            let a = GAccess {
                thread,
                pc,
                addr,
                bytes,
                write,
                silent,
                order,
            };
            g.push(GEvent::Access(a));
        }
    }

    /// Records a shared-memory access for the machine's hazard checker, a global one for its
    /// global-memory check.
    fn note(&mut self, sp: Space, a: u64, n: u32, write: bool, silent: bool, pc: usize) {
        if sp == Space::Global {
            let order = self.gwho.1;
            self.note_global(a, n, write, silent, order, pc);
        }
        if sp == Space::Shared {
            if let Some(log) = &mut self.log {
                log.push(SharedAccess {
                    pc,
                    addr: a as u32,
                    bytes: n,
                    write,
                    silent,
                });
            }
        }
    }

    pub(crate) fn store(&mut self, sp: Space, a: u64, n: u32, v: u64, pc: usize) -> Result<(), Error> {
        if sp == Space::Param {
            return Err(self.rt(pc, "a store to the parameter space".into()));
        }
        let a = if sp == Space::Shared {
            self.shared_offset(a)
        } else {
            a
        };
        let log = self.log.is_some();
        let b = self.bytes_at(sp, a, n, pc)?;
        let mut silent = true;
        for (i, x) in b.iter_mut().enumerate() {
            let new = if i < 8 { (v >> (8 * i)) as u8 } else { 0 };
            silent &= *x == new;
            *x = new;
        }
        if log {
            self.note(sp, a, n, true, silent, pc);
        }
        Ok(())
    }

    /// Runs the collective at `pc` for the lanes of the warp stopped there.
    pub(crate) fn collective(
        &mut self,
        th: &mut [Thread],
        lanes: std::ops::Range<usize>,
        pc: usize,
    ) -> Result<(), Error> {
        let ins = &self.p.ins[pc];
        let w0 = lanes.start;
        let group: Vec<usize> = lanes
            .clone()
            .filter(|&t| th[t].st == St::Sync(None) && th[t].pc == pc)
            .collect();
        let full = Val::Imm(u32::MAX as u64);
        let (mask_v, a_v) = match &ins.op {
            Op::Shfl { mask, a, .. } | Op::Redux { mask, a, .. } | Op::Vote { mask, a, .. } => (*mask, *a),
            Op::Elect { mask, .. } => (*mask, Val::Imm(0)),
            // `.aligned`: every lane of the warp executes it.
            Op::Matrix { .. } => (full, Val::Imm(0)),
            _ => return Err(self.rt(pc, "internal: not a collective".into())),
        };
        let mut vals = [0u64; 32];
        // The undefined bits of each lane's source: a shuffle moves them to the lanes that
        // read it (crate::undef), every other collective uses its source's value.
        let mut undef = [0u64; 32];
        let mut here = 0u32;
        for &t in &group {
            here |= 1 << (t - w0);
            if matches!(ins.op, Op::Shfl { .. }) {
                (vals[t - w0], undef[t - w0]) = self.read_carrying(&th[t], a_v);
            } else {
                vals[t - w0] = self.read(&th[t], a_v, pc)?;
            }
        }
        let exists = if lanes.len() == 32 {
            u32::MAX
        } else {
            (1u32 << lanes.len()) - 1
        };
        // Each lane's member mask, within the warp's lanes.
        let mut masks = [0u32; 32];
        for &t in &group {
            let m = self.read(&th[t], mask_v, pc)? as u32 & exists;
            masks[t - w0] = m;
            if m & (1 << (t - w0)) == 0 {
                return Err(self.rt(
                    pc,
                    format!(
                        "lane {} runs `{}` but its member mask {m:#x} leaves it out",
                        t - w0,
                        ins.opcode
                    ),
                ));
            }
            if m & !here != 0 {
                let missing: Vec<u32> = (0..32).filter(|l| (m & !here) >> l & 1 == 1).collect();
                return Err(self.rt(
                    pc,
                    format!(
                        "divergent `{}`: the member mask {m:#x} of lane {} names lanes {missing:?}, which are elsewhere or have exited",
                        ins.opcode,
                        t - w0
                    ),
                ));
            }
        }
        self.stats.collectives += 1;
        match &ins.op {
            Op::Shfl { mode, d, p, b, c, .. } => {
                let mut out = Vec::new();
                for &t in &group {
                    let lane = (t - w0) as u64;
                    let bv = self.read(&th[t], *b, pc)? & 31;
                    let cv = self.read(&th[t], *c, pc)?;
                    let (cl, seg) = (cv & 31, (cv >> 8) & 31);
                    let max_lane = (lane & seg) | (cl & !seg & 31);
                    let min_lane = lane & seg;
                    let (j, ok) = match mode {
                        ShflMode::Up => {
                            let j = lane as i64 - bv as i64;
                            (j, j >= max_lane as i64)
                        }
                        ShflMode::Down => {
                            let j = (lane + bv) as i64;
                            (j, j <= max_lane as i64)
                        }
                        ShflMode::Bfly => {
                            let j = (lane ^ bv) as i64;
                            (j, j <= max_lane as i64)
                        }
                        ShflMode::Idx => {
                            let j = (min_lane | (bv & !seg & 31)) as i64;
                            (j, j <= max_lane as i64)
                        }
                    };
                    let j = if ok { j as usize } else { lane as usize };
                    if here >> j & 1 == 0 {
                        return Err(self.rt(
                            pc,
                            format!("lane {lane} of `shfl.sync` reads lane {j}, which does not take part"),
                        ));
                    }
                    out.push((t, vals[j], undef[j], ok));
                }
                for (t, v, u, ok) in out {
                    self.write(&mut th[t], *d, v);
                    if u != 0 {
                        th[t].undef.push((*d, u));
                    }
                    if let Some(p) = p {
                        self.write(&mut th[t], *p, ok as u64);
                    }
                }
            }
            Op::Redux {
                op,
                signed,
                float,
                nan,
                abs,
                d,
                ..
            } => {
                let xs: Vec<u64> = group.iter().map(|&t| vals[t - w0] & 0xffff_ffff).collect();
                let r = if *float {
                    redux_f32(*op == ReduxOp::Max, *nan, *abs, &xs)
                } else {
                    let fold = |f: fn(u64, u64, bool) -> u64| {
                        xs.iter().skip(1).fold(xs[0], |a, &b| f(a, b, *signed))
                    };
                    match op {
                        ReduxOp::Add => fold(|a, b, _| a.wrapping_add(b) & 0xffff_ffff),
                        ReduxOp::And => fold(|a, b, _| a & b),
                        ReduxOp::Or => fold(|a, b, _| a | b),
                        ReduxOp::Xor => fold(|a, b, _| a ^ b),
                        ReduxOp::Min => fold(|a, b, s| {
                            if s {
                                if (a as u32 as i32) <= (b as u32 as i32) {
                                    a
                                } else {
                                    b
                                }
                            } else {
                                a.min(b)
                            }
                        }),
                        ReduxOp::Max => fold(|a, b, s| {
                            if s {
                                if (a as u32 as i32) >= (b as u32 as i32) {
                                    a
                                } else {
                                    b
                                }
                            } else {
                                a.max(b)
                            }
                        }),
                    }
                };
                for &t in &group {
                    self.write(&mut th[t], *d, r);
                }
            }
            Op::Vote { mode, d, not, .. } => {
                // The lanes present that vote true; each lane counts those of its own member
                // mask (all present, checked above).
                let yes = group
                    .iter()
                    .filter(|&&t| (vals[t - w0] & 1 == 1) != *not)
                    .fold(0u32, |m, &t| m | 1 << (t - w0));
                for &t in &group {
                    let m = masks[t - w0];
                    let votes = yes & m;
                    let r = match mode {
                        VoteMode::Ballot => votes as u64,
                        VoteMode::All => (votes == m) as u64,
                        VoteMode::Any => (votes != 0) as u64,
                        VoteMode::Uni => (votes == m || votes == 0) as u64,
                    };
                    self.write(&mut th[t], *d, r);
                }
            }
            Op::Elect { d, p, .. } => {
                let m = masks[group[0] - w0] & here;
                let leader = m.trailing_zeros();
                for &t in &group {
                    let lane = (t - w0) as u32;
                    if let Some(d) = d {
                        self.write(&mut th[t], *d, leader as u64);
                    }
                    if let Some(p) = p {
                        self.write(&mut th[t], *p, (lane == leader) as u64);
                    }
                }
            }
            Op::Matrix {
                store,
                num,
                trans,
                regs,
                at,
            } => {
                if group.len() != lanes.len() {
                    return Err(self.rt(pc, format!("`{}` needs every lane of the warp", ins.opcode)));
                }
                // Lane 8j + r gives the address of row r of matrix j (lanes 0..8 for `.x1`,
                // 0..16 for `.x2`); lane t holds, of each matrix, row t / 4 at columns
                // 2 (t % 4) and 2 (t % 4) + 1 (with `.trans`, column t / 4 at those rows).
                let mut rows = [0u64; 32];
                for &t in &group {
                    let lane = t - w0;
                    if lane < 8 * *num as usize {
                        rows[lane] = self.address(&th[t], Some(Space::Shared), at, pc)?.1;
                    }
                }
                for &t in &group {
                    let lane = t - w0;
                    for (j, &r) in regs.iter().enumerate() {
                        let (mut v, mut out) = (0u64, Vec::new());
                        for h in 0..2 {
                            let (row, col) = if *trans {
                                (2 * (lane % 4) + h, lane / 4)
                            } else {
                                (lane / 4, 2 * (lane % 4) + h)
                            };
                            let a = rows[8 * j + row] + 2 * col as u64;
                            if *store {
                                out.push((a, (self.read(&th[t], Val::Reg(r), pc)? >> (16 * h)) & 0xffff));
                            } else {
                                v |= self.load(Space::Shared, a, 2, pc)? << (16 * h);
                            }
                        }
                        if *store {
                            for (a, x) in out {
                                self.store(Space::Shared, a, 2, x, pc)?;
                            }
                        } else {
                            self.write(&mut th[t], r, v);
                        }
                    }
                }
            }
            _ => {}
        }
        for &t in &group {
            th[t].pc += 1;
            th[t].st = St::Run;
        }
        Ok(())
    }
}

/// `redux.sync.{min,max}[.abs][.NaN].f32` over the lanes' values: NaN operands are ignored
/// unless `.NaN` (then any NaN gives the canonical NaN); all NaN gives the canonical NaN;
/// -0 orders below +0.
fn redux_f32(max: bool, nan: bool, abs: bool, xs: &[u64]) -> u64 {
    const QNAN: u64 = 0x7fff_ffff;
    let vals: Vec<u32> = xs
        .iter()
        .map(|&x| if abs { x as u32 & 0x7fff_ffff } else { x as u32 })
        .collect();
    let is_nan = |b: u32| b & 0x7fff_ffff > 0x7f80_0000;
    if vals.iter().any(|&b| is_nan(b)) && (nan || vals.iter().all(|&b| is_nan(b))) {
        return QNAN;
    }
    let key = |b: u32| -> i64 {
        let m = (b & 0x7fff_ffff) as i64;
        if b >> 31 == 1 {
            -m - 1
        } else {
            m
        }
    };
    let mut it = vals.into_iter().filter(|&b| !is_nan(b));
    let first = it.next().unwrap_or(0);
    it.fold(first, |a, b| {
        if (key(b) > key(a)) == max && key(a) != key(b) {
            b
        } else {
            a
        }
    }) as u64
}

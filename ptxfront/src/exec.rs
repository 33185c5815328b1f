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

use crate::parse::Space;
use crate::program::{Base, MemRef, Op, Program, ReduxOp, ShflMode, Sreg, Val};
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

/// A launch: grid and CTA shape, arguments, dynamic shared memory.
#[derive(Clone, Debug)]
pub struct Launch {
    pub grid: [u32; 3],
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
    pub(crate) pc: usize,
    pub(crate) st: St,
    pub(crate) tid: [u32; 3],
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
}

/// Runs `p` over launch `l`; `bufs` are the global buffers the arguments point into, read and
/// written in place.
pub fn run(p: &Program, l: &Launch, bufs: &mut [Vec<u8>]) -> Result<Stats, Error> {
    let params = prepare(p, l, bufs)?;
    run_ctas(p, l, &params, bufs, false, |mut cta| cta.run())
}

/// Runs `run_cta` on each CTA of launch `l` in turn (x fastest), each with fresh shared memory
/// (its accesses logged if `log`), the parameter space `params` (from [`prepare`]), and the
/// global buffers and the program's globals they share; the statistics of them all.
pub(crate) fn run_ctas(
    p: &Program,
    l: &Launch,
    params: &[u8],
    bufs: &mut [Vec<u8>],
    log: bool,
    mut run_cta: impl FnMut(Cta<'_>) -> Result<(), Error>,
) -> Result<Stats, Error> {
    let mut globals: Vec<Vec<u8>> = p.globals.iter().map(|(_, b)| b.clone()).collect();
    let mut stats = Stats::default();
    for z in 0..l.grid[2] {
        for y in 0..l.grid[1] {
            for x in 0..l.grid[0] {
                run_cta(Cta {
                    p,
                    l,
                    ctaid: [x, y, z],
                    params,
                    shared: vec![0; (p.static_shared + l.dynamic_shared) as usize],
                    bufs,
                    globals: &mut globals,
                    stats: &mut stats,
                    log: log.then(Vec::new),
                })?;
                stats.ctas += 1;
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
    if p.cluster.as_ref().is_some_and(|c| c.iter().any(|&x| x > 1)) {
        return Err(Error::Launch(
            "clusters of more than one CTA are not run yet".into(),
        ));
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
                    pc: 0,
                    st: St::Run,
                    tid: [k % bx, (k / bx) % by, k / (bx * by)],
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
        match &ins.op {
            Op::Alu(a) => {
                inline_ptx::step(a, &self.p.regs, &self.p.src, &mut t.v, &mut t.def).map_err(
                    |e| match e {
                        inline_ptx::RunError::Unspecified { .. } => self.unspecified(pc, e.to_string()),
                        _ => self.rt(pc, e.to_string()),
                    },
                )?;
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
                    let raw = self.load(sp, addr + e as u64 * bytes as u64, bytes, pc)?;
                    if let Some(d) = d {
                        let v = if *signed && bytes < 8 {
                            let sh = 64 - 8 * bytes;
                            (((raw << sh) as i64) >> sh) as u64
                        } else {
                            raw
                        };
                        self.write(t, *d, v);
                    }
                }
            }
            Op::St { access, srcs } => {
                let bytes = access.bytes;
                let (sp, addr) = self.address(t, access.space, &access.at, pc)?;
                for (e, s) in srcs.iter().enumerate() {
                    let v = self.read(t, *s, pc)?;
                    self.store(sp, addr + e as u64 * bytes as u64, bytes, v, pc)?;
                }
            }
            Op::Cvta { to, space, d, a } => {
                let a = self.read(t, *a, pc)?;
                let v = match (space, to) {
                    (Space::Shared, false) => a.wrapping_add(SHARED_WINDOW),
                    (Space::Shared, true) => a.wrapping_sub(SHARED_WINDOW),
                    (Space::Param, false) => a.wrapping_add(PARAM_WINDOW),
                    (Space::Param, true) => a.wrapping_sub(PARAM_WINDOW),
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
            Op::Shfl { .. } | Op::Redux { .. } | Op::Elect { .. } | Op::Matrix { .. } => {
                t.st = St::Sync(None);
                return Ok(());
            }
            Op::Agent(_) => {
                t.st = St::Agent;
                return Ok(());
            }
            Op::Nop => {}
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
            Base::Shared(o) => *o,
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
            (Some(s), _) => (s, a),
            (None, Base::Param(_)) => (Space::Param, a),
            (None, Base::Shared(_)) => (Space::Shared, a),
            (None, _) if (SHARED_WINDOW..SHARED_WINDOW + self.shared.len() as u64).contains(&a) => {
                (Space::Shared, a - SHARED_WINDOW)
            }
            (None, _) if (PARAM_WINDOW..PARAM_WINDOW + self.params.len() as u64).contains(&a) => {
                (Space::Param, a - PARAM_WINDOW)
            }
            (None, _) => (Space::Global, a),
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
                out_of("every launch buffer and global variable")
            }
        };
        Err(self.rt(pc, err))
    }

    pub(crate) fn load(&mut self, sp: Space, a: u64, n: u32, pc: usize) -> Result<u64, Error> {
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

    /// Records a shared-memory access for the machine's hazard checker.
    fn note(&mut self, sp: Space, a: u64, n: u32, write: bool, silent: bool, pc: usize) {
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
            Op::Shfl { mask, a, .. } | Op::Redux { mask, a, .. } => (*mask, *a),
            Op::Elect { mask, .. } => (*mask, Val::Imm(0)),
            // `.aligned`: every lane of the warp executes it.
            Op::Matrix { .. } => (full, Val::Imm(0)),
            _ => return Err(self.rt(pc, "internal: not a collective".into())),
        };
        let mut vals = [0u64; 32];
        let mut here = 0u32;
        for &t in &group {
            here |= 1 << (t - w0);
            vals[t - w0] = self.read(&th[t], a_v, pc)?;
        }
        let exists = if lanes.len() == 32 {
            u32::MAX
        } else {
            (1u32 << lanes.len()) - 1
        };
        for &t in &group {
            let m = self.read(&th[t], mask_v, pc)? as u32 & exists;
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
                    out.push((t, vals[j], ok));
                }
                for (t, v, ok) in out {
                    self.write(&mut th[t], *d, v);
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
            Op::Elect { d, p, mask } => {
                let m = self.read(&th[group[0]], *mask, pc)? as u32 & exists & here;
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

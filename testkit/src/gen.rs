//! Random kernels from a grammar of valid programs: a few shared-memory buffers and mbarriers,
//! TMA loads and stores, waits, arrivals, fences, generic shared and global accesses, `for`
//! loops with random trip counts and `warp_specialize` partitions; and a random launch spec
//! (tensor shapes, grids, scalar arguments and coordinates at and beyond every boundary,
//! negative and `i32` extremes included).
//!
//! The programs are well formed and mostly well typed; many deadlock, trap or break a rule on
//! purpose. Every choice comes from an [`arbitrary::Unstructured`], so equal bytes give equal
//! kernels.

use arbitrary::Unstructured;
use std::fmt::Write as _;

/// Element types the generator uses, with the inner block extent that makes a 128-byte row.
const DTYPES: &[(&str, u32)] = &[
    ("f32", 32),
    ("f16", 64),
    ("bf16", 64),
    ("i32", 32),
    ("f8e4m3", 128),
];

/// Pick one of `xs` (the first when the input is exhausted).
fn pick<'a, T: ?Sized>(u: &mut Unstructured, xs: &[&'a T]) -> &'a T {
    let i = u.choose_index(xs.len()).unwrap_or(0);
    xs[i]
}

fn chance(u: &mut Unstructured, percent: u8) -> bool {
    u.int_in_range(0u8..=99).unwrap_or(99) < percent
}

fn small(u: &mut Unstructured, lo: u32, hi: u32) -> u32 {
    u.int_in_range(lo..=hi).unwrap_or(lo)
}

struct Gen<'u, 'a> {
    u: &'u mut Unstructured<'a>,
    out: String,
    indent: usize,
    dtype: &'static str,
    bm: u32,
    bn: u32,
    nbuf: u32,
    nbar: u32,
    ndesc: u32,
    /// Loop variables in scope.
    loops: Vec<String>,
    /// Register tiles in scope of the current partition.
    tiles: Vec<String>,
    /// Warps of the partition being generated.
    warps: u32,
    /// Warp counts that need a `layout rowN` declaration.
    layouts: Vec<u32>,
    next_name: u32,
    stmts_left: u32,
}

impl Gen<'_, '_> {
    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.next_name += 1;
        format!("{prefix}{}", self.next_name)
    }

    /// An integer expression for a coordinate or count: boundaries, loop-dependent values
    /// and program ids.
    fn int_expr(&mut self, unit: u32) -> String {
        let lv = self.loops.last().cloned();
        let choices = self.u.int_in_range(0u8..=15).unwrap_or(0);
        match choices {
            0..=4 => "0".into(),
            5 => format!("{unit}"),
            6 => format!("-{unit}"),
            7 => format!("program_id(0) * {unit}"),
            8 => match lv {
                Some(v) => format!("{v} * {unit}"),
                None => format!("{}", 2 * unit),
            },
            9 => pick(
                self.u,
                &["2147483647", "-2147483648", "2147483648", "-1", "1", "16", "4"],
            )
            .to_string(),
            10 => match lv {
                Some(v) => format!("{v} * 2147483647"),
                None => "(1 << 40)".into(),
            },
            11 => format!("{} * {unit}", small(self.u, 1, 40)),
            12 => "n * 4".into(),
            _ => "0".into(),
        }
    }

    fn buf(&mut self) -> String {
        if self.nbuf == 1 && chance(self.u, 80) {
            return "buf0".into();
        }
        let i = self.slot(self.nbuf, 9, 3);
        format!("bufs[{i}]")
    }

    fn bar(&mut self) -> String {
        let i = self.slot(self.nbar, 19, 5);
        format!("bars[{i}]")
    }

    /// An index into an array of `n` buffers or barriers, from one draw in `0..=last`: the
    /// innermost loop variable modulo `n` for draws up to `via_loop` (inside a loop), rarely `n`
    /// itself (one past the end) for the draw `last`, otherwise a constant in range.
    fn slot(&mut self, n: u32, last: u8, via_loop: u8) -> String {
        match (
            self.loops.last().cloned(),
            self.u.int_in_range(0u8..=last).unwrap_or(0),
        ) {
            (Some(v), d) if d <= via_loop => format!("{v} % {n}"),
            (_, d) if d == last && chance(self.u, 10) => format!("{n}"),
            _ => format!("{}", small(self.u, 0, n - 1)),
        }
    }

    fn parity(&mut self) -> String {
        match (
            self.loops.last().cloned(),
            self.u.int_in_range(0u8..=7).unwrap_or(0),
        ) {
            (Some(v), 0..=2) => format!("{v} & 1"),
            (Some(v), 3) => format!("{v} / {} & 1", self.nbar),
            (Some(v), 4) => format!("{v} / {} & 1 ^ 1", self.nbar),
            (_, 5) => "1".into(),
            _ => "0".into(),
        }
    }

    fn desc(&mut self) -> String {
        format!("d{}", small(self.u, 0, self.ndesc - 1))
    }

    fn pred(&mut self) -> String {
        if !chance(self.u, 15) {
            return String::new();
        }
        match self.loops.last().cloned() {
            Some(v) => format!(", pred={v} < {}", small(self.u, 0, 3)),
            None => ", pred=program_id(0) == 0".into(),
        }
    }

    fn layout(&mut self) -> String {
        if !self.layouts.contains(&self.warps) {
            self.layouts.push(self.warps);
        }
        format!("row{}", self.warps)
    }

    fn stmt(&mut self, depth: u32) {
        if self.stmts_left == 0 {
            return;
        }
        self.stmts_left -= 1;
        let k = self.u.int_in_range(0u8..=25).unwrap_or(0);
        match k {
            0..=2 => {
                let (b, d, p) = (self.bar(), self.desc(), self.pred());
                let bytes = match self.u.int_in_range(0u8..=9).unwrap_or(0) {
                    0..=5 => format!("{d}.nbytes"),
                    6 => format!("2 * {d}.nbytes"),
                    7 => "0".into(),
                    8 => pick(self.u, &["-1", "2147483647", "(1 << 40)", "16"]).to_string(),
                    _ => format!("{d}.nbytes + {d}.nbytes"),
                };
                self.line(&format!("mbar.expect {b}, {bytes}{p}"));
            }
            3..=5 => {
                let (d, x, y, s, b, p) = (
                    self.desc(),
                    self.int_expr(self.bm),
                    self.int_expr(self.bn),
                    self.buf(),
                    self.bar(),
                    self.pred(),
                );
                self.line(&format!("tma.load {d}[{x}, {y}], {s}, {b}{p}"));
            }
            6..=7 => {
                let (b, p) = (self.bar(), self.parity());
                self.line(&format!("mbar.wait {b}, {p}"));
            }
            8 => {
                let b = self.bar();
                let c = if chance(self.u, 30) {
                    format!(", count={}", pick(self.u, &["1", "2", "0", "3"]))
                } else {
                    String::new()
                };
                let p = self.pred();
                self.line(&format!("mbar.arrive {b}{c}{p}"));
            }
            9 => self.line("fence.async_shared"),
            10..=11 => {
                let (s, l) = (self.buf(), self.layout());
                let name = self.fresh("v");
                self.line(&format!("let {name} = smem.load {s}, layout={l}"));
                self.tiles.push(name);
            }
            12 => {
                let s = self.buf();
                let v = if !self.tiles.is_empty() && chance(self.u, 60) {
                    let i = self.u.choose_index(self.tiles.len()).unwrap_or(0);
                    self.tiles[i].clone()
                } else {
                    let l = self.layout();
                    let val = pick(self.u, &["1.0", "0.0", "-2.5", "1e30", "7"]);
                    let val = if self.dtype == "i32" { "7" } else { val };
                    format!("full([{}, {}], {val}, {}, {l})", self.bm, self.bn, self.dtype)
                };
                self.line(&format!("smem.store {s}, {v}"));
            }
            13..=14 => {
                let (d, x, y, s, p) = (
                    self.desc(),
                    self.int_expr(self.bm),
                    self.int_expr(self.bn),
                    self.buf(),
                    self.pred(),
                );
                self.line(&format!("tma.store {d}[{x}, {y}], {s}{p}"));
            }
            15 => {
                let n = pick(self.u, &["0", "0", "1", "2"]);
                self.line(&format!("tma.store_wait {n}"));
            }
            16 => {
                // Generic global access through the ptr parameter.
                if !self.layouts.contains(&(100 + self.warps)) {
                    self.layouts.push(100 + self.warps);
                }
                let off = self.int_expr(1);
                let len = pick(self.u, &["32", "64", "128", "256"]);
                let name = self.fresh("g");
                self.line(&format!(
                    "let {name} = global.load p, arange(0, {len}, lin{}) + {off}",
                    self.warps
                ));
                if chance(self.u, 50) {
                    let off2 = self.int_expr(1);
                    self.line(&format!(
                        "global.store p, arange(0, {len}, lin{}) + {off2}, {name}",
                        self.warps
                    ));
                }
            }
            17 => {
                let b = self.bar();
                let c = if chance(self.u, 80) {
                    pick(self.u, &["1", "2"])
                } else {
                    pick(self.u, &["0", "1048575", "1048576"])
                };
                self.line(&format!("mbar.init {b}, {c}"));
            }
            18 => {
                let b = self.bar();
                self.line(&format!("mbar.invalidate {b}"));
            }
            19 => self.line("bar.sync"),
            20 => {
                let (b, p) = (self.bar(), self.parity());
                let name = self.fresh("t");
                self.line(&format!("let {name} = mbar.test_wait {b}, {p}"));
            }
            21..=23 if depth < 3 => {
                let v = format!("j{}", self.loops.len());
                let end = match self.u.int_in_range(0u8..=9).unwrap_or(0) {
                    0 => "0".to_string(),
                    1..=4 => format!("{}", small(self.u, 1, 4)),
                    5..=7 => "n".to_string(),
                    8 => "cdiv(n, 2)".to_string(),
                    _ => pick(self.u, &["-5", "2147483647", "(1 << 40)"]).to_string(),
                };
                let kw = if chance(self.u, 15) { "static_for" } else { "for" };
                let end = if kw == "static_for" {
                    format!("{}", small(self.u, 0, 3))
                } else {
                    end
                };
                self.line(&format!("{kw} {v} in 0..{end} {{"));
                self.indent += 1;
                self.loops.push(v);
                let saved = self.tiles.len();
                let n = small(self.u, 1, 5);
                for _ in 0..n {
                    self.stmt(depth + 1);
                }
                self.tiles.truncate(saved);
                self.loops.pop();
                self.indent -= 1;
                self.line("}");
            }
            24 if depth < 2 => {
                let c = pick(self.u, &["SM == 100", "true", "n > 2", "program_id(0) == 0"]);
                self.line(&format!("if {c} {{"));
                self.indent += 1;
                let saved = self.tiles.len();
                self.stmt(depth + 1);
                self.tiles.truncate(saved);
                self.indent -= 1;
                self.line("}");
            }
            _ => {
                let (b, p) = (self.bar(), self.parity());
                self.line(&format!("mbar.wait {b}, {p}"));
            }
        }
    }

    fn body(&mut self, n: u32, depth: u32) {
        for _ in 0..n {
            self.stmt(depth);
        }
    }
}

/// A random kernel with a launch section, as `.tile` text.
pub fn kernel(u: &mut Unstructured) -> String {
    let (dtype, inner) = DTYPES[u.choose_index(DTYPES.len()).unwrap_or(0)];
    let bm = *u.choose(&[1u32, 2, 8, 16, 32, 64]).unwrap_or(&8);
    let bn = if chance(u, 85) { inner } else { inner / 2 };
    let swizzle = if bn == inner { 128 } else { 64 };
    let num_warps = *u.choose(&[4u32, 4, 8, 1]).unwrap_or(&4);
    let mut g = Gen {
        u,
        out: String::new(),
        indent: 1,
        dtype,
        bm,
        bn,
        nbuf: 1,
        nbar: 1,
        ndesc: 1,
        loops: Vec::new(),
        tiles: Vec::new(),
        warps: num_warps,
        layouts: Vec::new(),
        next_name: 0,
        stmts_left: 40,
    };
    g.nbuf = small(g.u, 1, 3);
    g.nbar = small(g.u, 1, 3);
    g.ndesc = small(g.u, 1, 2);

    // Body first (it decides which layouts are needed), header after.
    if g.nbuf == 1 && chance(g.u, 50) {
        g.line(&format!(
            "let buf0 = smem.alloc {dtype}[{bm}, {bn}], nvmma({swizzle})"
        ));
        g.line(&format!(
            "let bufs = smem.alloc {dtype}[1, {bm}, {bn}], nvmma({swizzle})"
        ));
    } else {
        g.line(&format!(
            "let buf0 = smem.alloc {dtype}[{bm}, {bn}], nvmma({swizzle})"
        ));
        g.line(&format!(
            "let bufs = smem.alloc {dtype}[{}, {bm}, {bn}], nvmma({swizzle})",
            g.nbuf
        ));
    }
    g.line(&format!("let bars = mbar.alloc {}", g.nbar));
    let count = if chance(g.u, 95) {
        "1"
    } else {
        pick(g.u, &["2", "0", "3"])
    };
    g.line(&format!("static_for i in 0..{} {{", g.nbar));
    g.line(&format!("  mbar.init bars[i], {count}"));
    g.line("}");
    let prologue = small(g.u, 0, 6);
    g.body(prologue, 0);
    if chance(g.u, 40) {
        g.line("warp_specialize {");
        g.indent += 1;
        g.line("default {");
        g.indent += 1;
        let saved = g.tiles.len();
        let n = small(g.u, 1, 6);
        g.body(n, 1);
        g.tiles.truncate(saved);
        g.indent -= 1;
        g.line("}");
        let workers = small(g.u, 1, 2);
        for w in 0..workers {
            let warps = *g.u.choose(&[1u32, 1, 2, 4]).unwrap_or(&1);
            let regs = if chance(g.u, 95) {
                *g.u.choose(&[24u32, 32, 48, 40, 256]).unwrap_or(&24)
            } else {
                16
            };
            g.line(&format!("worker w{w}(warps={warps}, regs={regs}) {{"));
            g.indent += 1;
            g.warps = warps;
            // Register tiles of other partitions are not visible in a worker.
            let outer = std::mem::take(&mut g.tiles);
            let n = small(g.u, 1, 6);
            g.body(n, 1);
            g.tiles = outer;
            g.tiles.truncate(saved);
            g.warps = num_warps;
            g.indent -= 1;
            g.line("}");
        }
        g.indent -= 1;
        g.line("}");
    }
    let epilogue = small(g.u, 0, 4);
    g.body(epilogue, 0);
    if chance(g.u, 70) {
        g.line("tma.store_wait 0");
    }
    let body = std::mem::take(&mut g.out);

    let mut k = String::new();
    let _ = writeln!(k, "kernel generated {{");
    let target = if chance(g.u, 20) {
        "sm_90a"
    } else {
        "sm_100a, sm_90a"
    };
    let _ = writeln!(k, "  target {target}");
    let _ = writeln!(k, "  num_warps {num_warps}");
    for d in 0..g.ndesc {
        let _ = writeln!(
            k,
            "  param d{d}: tensor_desc({dtype}[{bm}, {bn}], nvmma({swizzle}))"
        );
    }
    let _ = writeln!(k, "  param p: ptr({dtype})");
    let _ = writeln!(k, "  param n: i32");
    let mut layouts = g.layouts.clone();
    layouts.sort_unstable();
    for w in layouts {
        if w >= 100 {
            let w = w - 100;
            let _ = writeln!(k, "  layout lin{w} = blocked([1], [32], [{w}], [0])");
        } else {
            let _ = writeln!(k, "  layout row{w} = blocked([1, 1], [1, 32], [1, {w}], [1, 0])");
        }
    }
    k.push_str(&body);
    k.push_str(&launch(g.u, dtype, bm, bn, g.ndesc));
    k.push_str("}\n");
    k
}

/// A random launch section for `ndesc` descriptors `d0..` over `DTYPE[bm, bn]` blocks, a
/// pointer `p` and a scalar `n`: shapes at and beyond the block, grids from one CTA to
/// `i32::MAX` in each dimension, scalars at the `i32` extremes, sometimes tensors far beyond
/// any memory limit.
pub fn launch(u: &mut Unstructured, dtype: &str, bm: u32, bn: u32, ndesc: u32) -> String {
    let mut l = String::from("  launch {\n");
    let grid = match u.int_in_range(0u8..=39).unwrap_or(0) {
        0..=9 | 20..=39 => "[1]".to_string(),
        10..=13 => format!("[{}]", small(u, 2, 3)),
        14..=15 => format!("[{}, {}]", small(u, 1, 2), small(u, 1, 2)),
        16 => "[2147483647]".into(),
        17 => "[2147483647, 2147483647, 2147483647]".into(),
        18 => "[65536, 65536]".into(),
        _ => "[0]".into(),
    };
    let _ = writeln!(l, "    grid = {grid}");
    let dim = |u: &mut Unstructured, b: u32| -> String {
        match u.int_in_range(0u8..=19).unwrap_or(0) {
            0..=7 => format!("{b}"),
            8..=10 => format!("{}", 2 * b),
            11 => format!("{}", (b + 1).max(2)),
            12 => format!("{}", b.saturating_sub(1).max(1)),
            13 => format!("{}", 4 * b),
            14 => "1".into(),
            15 => "100".into(),
            16 if chance(u, 30) => pick(u, &["0", "-1", "2147483647", "(1 << 40)", "(1 << 62)"]).to_string(),
            _ => format!("{}", 3 * b),
        }
    };
    for d in 0..ndesc {
        let (r, c) = (dim(u, bm), dim(u, bn));
        let init = pick(
            u,
            &["randn()", "zeros()", "iota()", "uniform(-1, 1)", "randint(0, 9)"],
        );
        let _ = writeln!(l, "    tensor t{d}: {dtype}[{r}, {c}] = {init}");
    }
    let plen = pick(u, &["256", "1024", "64", "1"]);
    let _ = writeln!(l, "    tensor tp: {dtype}[{plen}] = iota()");
    for d in 0..ndesc {
        let _ = writeln!(l, "    d{d} = t{d}");
    }
    let _ = writeln!(l, "    p = tp");
    let n = pick(
        u,
        &["1", "2", "3", "4", "0", "-1", "7", "2147483647", "-2147483648"],
    );
    let _ = writeln!(l, "    n = {n}");
    if chance(u, 50) {
        let _ = writeln!(l, "    outputs = [t0, tp]");
    }
    l.push_str("  }\n");
    l
}

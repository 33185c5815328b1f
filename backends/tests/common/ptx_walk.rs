//! A walk of a lowered kernel's PTX as one warp executes it, for tests of what every warp of
//! a CTA synchronises on (backends/tests/cluster_ws.rs, and the Gluon fixtures in the root
//! crate's tests/gluon_cli.rs, which include this file by path).
//!
//! The walker knows the warp's `%tid.x` (its lane 0), evaluates the integer and predicate
//! arithmetic the partition dispatch uses (`mov` of `%tid.x`, `shr`/`and`/`add`/`sub`, `setp`
//! with `.and`), takes a branch whose predicate it cannot evaluate as not taken (wait loops,
//! rank tests and loop exits of the bodies), and records every `barrier.cluster` and
//! `bar.sync 0` (the CTA-wide barrier) the warp executes before `ret`.

use std::collections::HashMap;

/// A register's or an immediate's value, when the walker knows it.
fn value(regs: &HashMap<String, u64>, operand: &str) -> Option<u64> {
    let o = operand.trim();
    if o.starts_with('%') {
        regs.get(o).copied()
    } else {
        o.parse().ok()
    }
}

/// The `barrier.cluster` and `bar.sync 0` instructions warp `warp` executes in `text`, in order.
pub fn synchronisations(text: &str, warp: u64) -> Vec<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or("").trim())
        .collect();
    let labels: HashMap<&str, usize> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.strip_suffix(':').map(|n| (n, i)))
        .collect();
    let start = lines.iter().position(|l| *l == "{").expect("the entry's body");
    let mut regs: HashMap<String, u64> = HashMap::new();
    let mut preds: HashMap<String, bool> = HashMap::new();
    let mut seen = Vec::new();
    let mut pc = start + 1;
    for _ in 0..100_000 {
        let l = lines[pc];
        pc += 1;
        let ins = l.trim_end_matches(';');
        if ins.is_empty() || ins.ends_with(':') || ins.starts_with('.') {
            continue;
        }
        // The guard: `@%p` / `@!%p`, unknown predicates are false.
        let (guard, ins) = match ins.strip_prefix('@') {
            Some(r) => {
                let (g, rest) = r.split_once(' ').expect("a guarded instruction");
                let (neg, p) = g.strip_prefix('!').map_or((false, g), |p| (true, p));
                (preds.get(p).map(|v| *v != neg), rest.trim())
            }
            None => (Some(true), ins),
        };
        let (opcode, operands) = ins.split_once(' ').unwrap_or((ins, ""));
        let ops: Vec<&str> = operands.split(',').map(str::trim).collect();
        if opcode == "ret" {
            assert_eq!(guard, Some(true), "a guarded ret: {l}");
            return seen;
        }
        if opcode.starts_with("barrier.cluster") || ins == "bar.sync 0" {
            assert_eq!(guard, Some(true), "warp {warp}: a guarded synchronisation: {l}");
            seen.push(ins.to_string());
            continue;
        }
        if opcode == "bra" || opcode == "bra.uni" {
            if guard == Some(true) {
                pc = labels[ops[0]];
            }
            continue;
        }
        if guard != Some(true) {
            // Not executed, or not known to be: what it writes is unknown.
            regs.remove(ops[0]);
            preds.remove(ops[0]);
            continue;
        }
        let dst = ops[0].to_string();
        match opcode {
            "mov.u32" if ops[1] == "%tid.x" => {
                regs.insert(dst, 32 * warp);
            }
            "shr.u32" | "and.b32" | "sub.u32" | "add.u32" => {
                match (value(&regs, ops[1]), value(&regs, ops[2])) {
                    (Some(a), Some(b)) => {
                        let v = match opcode {
                            "shr.u32" => a >> b,
                            "and.b32" => a & b,
                            "sub.u32" => a.wrapping_sub(b) & 0xffff_ffff,
                            _ => (a + b) & 0xffff_ffff,
                        };
                        regs.insert(dst, v);
                    }
                    _ => {
                        regs.remove(&dst);
                    }
                }
            }
            _ if opcode.starts_with("setp.") && opcode.ends_with(".u32") => {
                let parts: Vec<&str> = opcode.split('.').collect();
                let cmp = match (value(&regs, ops[1]), value(&regs, ops[2])) {
                    (Some(a), Some(b)) => Some(match parts[1] {
                        "eq" => a == b,
                        "ne" => a != b,
                        "lt" => a < b,
                        "le" => a <= b,
                        "gt" => a > b,
                        "ge" => a >= b,
                        c => panic!("setp.{c}"),
                    }),
                    _ => None,
                };
                let v = if parts.get(2) == Some(&"and") {
                    cmp.zip(preds.get(ops[3]).copied()).map(|(a, b)| a && b)
                } else {
                    cmp
                };
                match v {
                    Some(v) => preds.insert(dst, v),
                    None => preds.remove(&dst),
                };
            }
            _ => {
                regs.remove(&dst);
                preds.remove(&dst);
            }
        }
    }
    panic!("warp {warp}: no `ret` within 100000 instructions")
}

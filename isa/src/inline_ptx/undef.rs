//! Undefined bits through the interpreter, bit by bit, as Miri tracks uninitialised bytes: a
//! register the compiler never wrote (LLVM's `undef`: the unused half of a packed operand, a
//! dead operand of an inline-assembly block) holds undefined bits, and an instruction's result
//! bits are undefined where they can depend on one ([`super::deps`]'s dataflow, exact for bit
//! moves: `mov` packs and unpacks, bitwise logic with its constants, shifts and permutes by
//! immediates, integer truncations; any other instruction's result is undefined wherever an
//! input bit it reads is). The interpreter computes on such bits as zeros; whoever runs a
//! whole kernel reports a register with an undefined bit where it reaches something
//! observable (memory, an address, a branch), not where it is moved.

use super::deps::Flow;
use super::parse::{Ins, Parsed, RegId};

/// The undefined bits of each register `ins` writes (a mask per register, bit `i` set where
/// bit `i` of the result is undefined), given those of the registers it reads: `undef` lists
/// every register holding undefined bits with its mask (any other is fully defined).
pub fn undefined_bits(p: &Parsed, ins: &Ins, undef: &[(RegId, u64)]) -> Vec<(RegId, u64)> {
    let n = undef.iter().map(|&(r, _)| r as usize + 1).max().unwrap_or(0);
    let mut d = vec![Vec::new(); n];
    for &(r, m) in undef {
        let bits = p.reg_bits[r as usize].min(64);
        d[r as usize] = (0..bits).map(|i| ((m >> i) & 1) as u32).collect();
    }
    let mut f = Flow { p, d };
    f.step(ins)
        .into_iter()
        .map(|(r, v)| {
            let m = v
                .iter()
                .take(64)
                .enumerate()
                .fold(0u64, |acc, (i, &x)| acc | (u64::from(x != 0) << i));
            (r, m)
        })
        .collect()
}

//! `tcgen05.cp` of block-scale factors (tutorial 11's packed-block view): one
//! `32x128b.warpx4` copy per 128 rows x 4 K blocks, each from its 512 contiguous bytes into the
//! columns docs/hardware/tmem-scales.md places those factors in; other source layouts refused.

use bwsim_backends::ptx;
use bwsim_isa::verify::{verify, VerifyOptions};

/// A `[256, 8]` factor matrix in the packed-block layout `[1, 2, 2, 2, 256]` (128-row block,
/// 4-K-block block, 512 bytes), copied to a `scales=true` buffer.
fn kernel(view: &str) -> String {
    format!(
        "kernel k {{\n  target sm_100a\n  num_warps 4\n  let sf = smem.alloc i8[1, 2, 2, 2, 256], nvmma(0)\n  let v = {view}\n  let t = tmem.alloc i8[256, 8], scales=true\n  let bar = mbar.alloc 1\n  mbar.init bar[0], 1\n  tcgen05.cp v, t\n  tcgen05.commit bar[0]\n  mbar.wait bar[0], 0\n}}\n"
    )
}

const PACKED: &str = "smem.reinterpret sf, i8[256, 8], linear([[0, 1], [0, 2], [32, 0], [64, 0], [1, 0], [2, 0], [4, 0], [8, 0], [16, 0], [0, 4], [128, 0]])";

fn lower(src: &str) -> Result<String, String> {
    let k = bwsim_isa::parser::parse(src).map_err(|d| format!("{d:?}"))?;
    let (c, d) = verify(&k, &VerifyOptions::default());
    let c = c.ok_or_else(|| format!("{d:?}"))?;
    ptx::lower(&c).map(|m| m.text).map_err(|e| e.to_string())
}

/// The integer added by the last `add.u32 DST, _, N` that defines `reg` before line `at`.
fn added(lines: &[&str], at: usize, reg: &str) -> i64 {
    lines[..at]
        .iter()
        .rev()
        .find_map(|l| {
            let l = l.trim().trim_end_matches(';');
            let rest = l.strip_prefix("add.u32 ")?;
            let parts: Vec<&str> = rest.split(", ").collect();
            (parts.len() == 3 && parts[0] == reg).then(|| parts[2].parse().ok())?
        })
        .unwrap_or_else(|| panic!("no add defining {reg} before line {at}"))
}

#[test]
fn packed_block_factors_copy_chunk_by_chunk_to_their_columns() {
    let text = lower(&kernel(PACKED)).expect("lowers");
    let lines: Vec<&str> = text.lines().collect();
    let mut copies = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some(rest) = l
            .trim()
            .strip_prefix("@%p3 tcgen05.cp.cta_group::1.32x128b.warpx4 [")
        else {
            continue;
        };
        let (addr, desc) = rest.trim_end_matches(';').split_once("], ").expect("operands");
        // The descriptor: `or.b64 DESC, DESC, FIXED` after `add.u32 S, SMEM, OFFSET` (or none
        // for offset 0).
        let fixed: u64 = lines[..i]
            .iter()
            .rev()
            .find_map(|x| {
                x.trim()
                    .strip_prefix(&format!("or.b64 {desc}, {desc}, "))
                    .map(|v| v.trim_end_matches(';').parse().expect("constant"))
            })
            .expect("descriptor constant");
        let offset = lines[..i]
            .iter()
            .rev()
            .take(8)
            .find_map(|x| {
                let p: Vec<&str> = x.trim().trim_end_matches(';').split(", ").collect();
                (x.trim().starts_with("add.u32") && p.len() == 3 && p[1] == "%r3")
                    .then(|| p[2].parse::<i64>().expect("offset"))
            })
            .unwrap_or(0);
        copies.push((offset, added(&lines, i, addr), fixed));
    }
    // Chunk (128-row block mb, 4-K-block block kc) lies at byte (2 mb + kc) * 512 and goes to
    // column kc * ceil(256 / 32) + 4 mb; the descriptor has no swizzle, version bit 46, and
    // the matrix base offset of address bits 7-9 (4 for the chunks at 512 and 1536), as
    // Triton sets it.
    let v1 = 1u64 << 46;
    let b4 = v1 | 4 << 49;
    assert_eq!(
        copies,
        vec![(0, 0, v1), (512, 8, b4), (1024, 4, v1), (1536, 12, b4)],
        "{text}"
    );
}

#[test]
fn factors_in_another_layout_are_refused() {
    let e = lower(&kernel("smem.reinterpret sf, i8[256, 8], plain")).expect_err("refused");
    assert!(e.contains("packed-block"), "{e}");
}

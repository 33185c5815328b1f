//! The shared-memory swizzle as measured (docs/semantics.md#shared-memory-swizzle), end to end: a
//! TMA load writes a tile into an NVMMA-swizzled buffer and the kernel reads the raw bytes back
//! through a plain view of the same memory. The expected physical placement comes from the XOR rule
//! written in this test and from the 21 measured vectors of
//! docs/semantics.md#shared-memory-swizzle, not from the simulator's layout code.

mod common;
use bwsim_isa::types::SWIZZLE_VECTORS;
use common::*;

/// A `u32[1024 / SPAN, SPAN / 4]` tile whose element i holds i, TMA-loaded into a SPAN-byte
/// swizzled buffer that starts PAD bytes into a 1024-aligned plain buffer; the plain buffer's
/// 512 words are written out.
const SWZ: &str = include_str!("tiles/swizzle/swz.tile");

/// docs/semantics.md#shared-memory-swizzle: XOR address bits 6:4 (as wide as the mode needs)
/// with bits 9:7.
fn swizzle(span: u32, a: u32) -> u32 {
    let bits = match span {
        32 => 1,
        64 => 3,
        128 => 7,
        _ => unreachable!("modes are 32, 64, 128"),
    };
    a ^ (((a >> 7) & bits) << 4)
}

fn words(span: u32, pad: u32) -> Vec<u64> {
    let r = run_ok(SWZ, &[("SPAN", &span.to_string()), ("PAD", &pad.to_string())]);
    bits(tensor(&r, "out"))
}

#[test]
fn the_21_measured_vectors_through_a_tma_load() {
    for (col, span) in [(1, 32u32), (2, 64), (3, 128)] {
        let out = words(span, 0);
        // (unswizzled chunk address, physical for 32B, 64B, 128B)
        for row in SWIZZLE_VECTORS {
            let (a, phys) = (row.0, [row.1, row.2, row.3][col - 1]);
            // The chunk at logical byte a holds words a/4 .. a/4+3; its first word lands at phys.
            assert_eq!(
                out[(phys / 4) as usize],
                (a / 4) as u64,
                "{span}B swizzle: logical chunk {a} should be at {phys}"
            );
            assert_eq!(swizzle(span, a), phys, "the test's XOR rule reproduces the table");
        }
    }
}

#[test]
fn every_word_follows_the_xor_rule() {
    for span in [32u32, 64, 128] {
        let out = words(span, 0);
        for i in 0..256u32 {
            let p = swizzle(span, 4 * i);
            assert_eq!(out[(p / 4) as usize], i as u64, "{span}B, word {i}");
        }
        // The 1024 bytes after the box are untouched.
        assert!(out[256..].iter().all(|&w| w == 0xffff_ffff));
    }
}

/// A box 128 bytes past a 1024-byte boundary is swizzled by its ABSOLUTE address [H100]: its
/// first row lands where pattern row 1 puts it, not unswizzled.
#[test]
fn swizzle_follows_the_absolute_address() {
    for span in [32u32, 64, 128] {
        let out = words(span, 128);
        for i in 0..256u32 {
            let p = swizzle(span, 128 + 4 * i);
            assert_eq!(out[(p / 4) as usize], i as u64, "{span}B at +128, word {i}");
        }
        assert_ne!(out[32], 0, "first chunk of the box");
        if span == 128 {
            // Logical 128 (the box's first chunk) is physical 144 at this alignment.
            assert_eq!(out[144 / 4], 0);
            assert_eq!(
                out[128 / 4],
                4,
                "the box's second chunk took the first one's place"
            );
        }
    }
}

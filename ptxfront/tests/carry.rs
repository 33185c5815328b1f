//! The extended-precision forms (`add.cc`, `addc`, `sub.cc`, `subc`, `mad.lo.cc`, `madc.hi`)
//! in a whole kernel: each thread has its own carry flag. Values computed here with u128
//! arithmetic.

mod common;

use bwsim_ptxfront::{compile, run, Arg, Error, Launch};
use common::pointer_kernel;

/// Thread t: x = 0xffffffff - t, y = 0x10001 * t; stores the 64-bit x * y + (x:y) by
/// `mad.lo.cc`/`madc.hi` (libdevice's range-reduction pattern), the 64-bit sum
/// (x:y) + (y:x) by `add.cc`/`addc`, and the 64-bit difference (y:x) - (x:y) by
/// `sub.cc`/`subc` (HIGH:LOW words).
const BODY: &str = r#"	ld.param.u64 	%rd1, [carry_k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 24;
	add.s64 	%rd4, %rd2, %rd3;
	sub.s32 	%r2, -1, %r1;
	mul.lo.s32 	%r3, %r1, 65537;
	mad.lo.cc.u32 	%r4, %r2, %r3, %r3;
	madc.hi.u32 	%r5, %r2, %r3, %r2;
	add.cc.u32 	%r6, %r3, %r2;
	addc.u32 	%r7, %r2, %r3;
	sub.cc.u32 	%r8, %r2, %r3;
	subc.u32 	%r9, %r3, %r2;
	st.global.v2.b32 	[%rd4], {%r4, %r5};
	st.global.v2.b32 	[%rd4+8], {%r6, %r7};
	st.global.v2.b32 	[%rd4+16], {%r8, %r9};
	ret;"#;

/// The kernel with the body `body`.
fn kernel(body: &str) -> String {
    pointer_kernel(
        "carry_k",
        "sm_100a",
        "\t.reg .b32 \t%r<20>;\n\t.reg .b64 \t%rd<8>;",
        body,
    )
}

#[test]
fn carry_chains_compute_64_bit_arithmetic_per_thread() -> Result<(), Error> {
    let p = compile(&kernel(BODY), "carry_k")?;
    let n = 128usize;
    let mut bufs = vec![vec![0u8; 24 * n]];
    run(
        &p,
        &Launch::new([1, 1, 1], [n as u32, 1, 1], vec![Arg::Buffer(0)]),
        &mut bufs,
    )?;
    let word = |i: usize| {
        let b = &bufs[0][8 * i..8 * i + 8];
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    };
    for t in 0..n as u64 {
        let (x, y) = (0xffff_ffff - t, (0x10001 * t) & 0xffff_ffff);
        let xy = x << 32 | y;
        let yx = y << 32 | x;
        let mad = (x as u128 * y as u128 + xy as u128) as u64;
        assert_eq!(word(3 * t as usize), mad, "mad, thread {t}");
        assert_eq!(word(3 * t as usize + 1), xy.wrapping_add(yx), "add, thread {t}");
        assert_eq!(word(3 * t as usize + 2), yx.wrapping_sub(xy), "sub, thread {t}");
    }
    Ok(())
}

#[test]
fn a_carry_read_that_nothing_set_is_refused() {
    // `addc` with no `.cc` before it: the carry flag holds no value, so the sum is undefined
    // and its store stops the run.
    let src = kernel(BODY).replace("add.cc.u32 \t%r6", "add.u32 \t%r6").replace(
        "mad.lo.cc.u32 \t%r4, %r2, %r3, %r3;\n\tmadc.hi.u32",
        "mad.lo.u32 \t%r4, %r2, %r3, %r3;\n\tmad.hi.u32",
    );
    let src = src.replace("sub.cc.u32 \t%r8", "sub.u32 \t%r8");
    let p = compile(&src, "carry_k").unwrap_or_else(|e| panic!("{e}"));
    let mut bufs = vec![vec![0u8; 24 * 32]];
    let r = run(
        &p,
        &Launch::new([1, 1, 1], [32, 1, 1], vec![Arg::Buffer(0)]),
        &mut bufs,
    );
    let Err(Error::Runtime { message, .. }) = r else {
        panic!("expected a runtime stop, got {r:?}");
    };
    assert!(message.contains("`%r7` holds undefined bits"), "{message}");
}

//! Registers LLVM leaves undefined: a register no instruction wrote is carried bit by bit
//! through moves, packs, bitwise logic, permutes and truncations, and the run stops only where
//! an undefined bit reaches memory, an address or a branch. The defined values are computed
//! here by hand from the instructions' meaning; the bug cases are those uses.

mod common;

use bwsim_ptxfront::{compile, run, Arg, Error, Launch};
use common::pointer_kernel;

/// The registers of [`body`].
const REGS: &str =
    "\t.reg .pred \t%p<3>;\n\t.reg .b16 \t%rs<4>;\n\t.reg .b32 \t%r<20>;\n\t.reg .b64 \t%rd<8>;";

/// The kernel's body, `{TAIL}` replaced by `tail`.
fn body(tail: &str) -> String {
    BODY.replace("{TAIL}", tail)
}

/// Each thread stores 4 words at out + 16 * tid; `%r2` is never written (the unused half of a
/// pair, as in Triton's packed `f32x2` operands). `{TAIL}` is a use added by a bug case.
const BODY: &str = r#"	.loc	1 10 0
	ld.param.u64 	%rd1, [undef_k_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 16;
	add.s64 	%rd4, %rd2, %rd3;
	.loc	1 11 0
	mov.b64 	%rd5, {%r1, %r2};
	mov.b64 	{%r3, _}, %rd5;
	.loc	1 12 0
	and.b32 	%r4, %r2, 0xfffefffe;
	or.b32 	%r5, %r1, 0x00010000;
	prmt.b32 	%r6, %r5, %r4, 0x5410;
	cvt.u16.u32 	%rs1, %r6;
	cvt.u32.u16 	%r7, %rs1;
	and.b32 	%r8, %r4, 0x00010001;
	.loc	1 13 0
	st.global.v4.b32 	[%rd4], {%r3, %r7, %r8, %r1};
	.loc	1 14 0
	{TAIL}
$L__END:
	ret;"#;

fn go(tail: &str) -> Result<Vec<u32>, Error> {
    let src = format!(
        "{}\t.file\t1 \"undef.py\"\n",
        pointer_kernel("undef_k", "sm_90a", REGS, &body(tail))
    );
    let p = compile(&src, "undef_k")?;
    let n = 64;
    let mut bufs = vec![vec![0xAB; 16 * n]];
    run(
        &p,
        &Launch::new([1, 1, 1], [n as u32, 1, 1], vec![Arg::Buffer(0)]),
        &mut bufs,
    )?;
    Ok(bufs[0]
        .chunks(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect())
}

fn stop(tail: &str) -> String {
    match go(tail) {
        Err(Error::Runtime { message, .. }) => message,
        other => panic!("`{tail}`: expected a runtime stop, got {other:?}"),
    }
}

#[test]
fn undefined_bits_that_are_never_observed_do_not_stop_the_run() {
    let out = go("").unwrap_or_else(|e| panic!("{e}"));
    for t in 0..64u32 {
        let w = &out[4 * t as usize..4 * t as usize + 4];
        // The defined half of the pair; the low half of (tid | 0x10000) through the permute
        // and the truncation; `and` of undefined bits with 0x00010001, whose bits the earlier
        // `and` with 0xfffefffe made defined zeros; tid.
        assert_eq!(w, [t, t, 0, t], "thread {t}");
    }
}

#[test]
fn an_undefined_bit_stops_the_run_where_it_is_stored_branched_on_or_addressed() {
    // %r6's high half is %r4's low half: undefined but for bit 0, which the `and` cleared.
    let m = stop("st.global.b32 [%rd4], %r6;");
    assert!(
        m.contains("`%r6`") && m.contains("0xfffe0000") && m.contains("undef.py:14"),
        "{m}"
    );
    // A predicate computed from undefined bits, at the branch it decides.
    let m = stop("setp.ne.u32 %p1, %r4, 0;\n\t@%p1 bra $L__END;");
    assert!(m.contains("`%p1`"), "{m}");
    // An address offset by undefined bits (an addition is undefined wherever an input bit
    // it reads is: the whole sum).
    let m = stop("add.s64 %rd6, %rd4, %rd5;\n\tst.global.b32 [%rd6], %r1;");
    assert!(m.contains("`%rd6`") && m.contains("0xffffffffffffffff"), "{m}");
    // A never-written register stored as it is stays the error it was; one the arithmetic
    // already carried stops as undefined bits.
    let m = stop("st.global.b32 [%rd4], %r19;");
    assert!(m.contains("`%r19` is read before it is written"), "{m}");
    let m = stop("st.global.b32 [%rd4], %r2;");
    assert!(m.contains("`%r2` holds undefined bits (mask 0xffffffff"), "{m}");
    // Writing a register again makes it defined: the stored value is the new one.
    let out = go("mov.b32 %r6, 7;\n\tst.global.b32 [%rd4], %r6;").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out[4], 7);
}

/// The odd lanes write `%r9`, the even ones leave it unwritten (a predicated load's
/// destination, as Triton 3.6 and 3.7 shuffle it in a pair reduction); a butterfly shuffle
/// moves each lane's bits to its partner, undefined ones included.
const SHUFFLE: &str = "and.b32 %r10, %r1, 1;\n\tsetp.eq.u32 %p1, %r10, 1;\n\t@%p1 mov.b32 %r9, %r1;\n\t\
                       shfl.sync.bfly.b32 %r11, %r9, 1, 31, -1;\n\tsetp.eq.u32 %p2, %r10, 0;\n\t";

#[test]
fn a_shuffle_carries_undefined_bits_to_the_lanes_that_read_them() {
    // The even lanes read their odd partner's tid and store it over word 0.
    let out = go(&format!("{SHUFFLE}@%p2 st.global.b32 [%rd4], %r11;")).unwrap_or_else(|e| panic!("{e}"));
    for t in 0..64u32 {
        let want = if t % 2 == 0 { t + 1 } else { t };
        assert_eq!(out[4 * t as usize], want, "thread {t}");
    }
    // The bug twin: the odd lanes store what they read from the even ones, never written.
    let m = stop(&format!("{SHUFFLE}st.global.b32 [%rd4], %r11;"));
    assert!(
        m.contains("`%r11` holds undefined bits (mask 0xffffffff") && m.contains("undef.py:14"),
        "{m}"
    );
}

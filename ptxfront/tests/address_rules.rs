//! How the machine reads two kinds of address, on hand-written kernels whose expected results
//! follow from the rule alone (docs/semantics.md, "The PTX front end"):
//! - a warp's `tcgen05.ld/st` reaches its own quarter of the tensor-memory lanes (`32 * (w %
//!   4)` and the 31 after it), whatever quarter the address's lane field names: the field
//!   selects a lane inside the quarter (TIRx issues every warp's load at lane 0 of the
//!   allocation, CUTLASS and Triton add `32 * (w % 4)` to the lane; both reach the same lanes);
//! - the `.extern .shared` array (the dynamic shared memory) starts after the static shared
//!   variables at the alignment it declares.

use bwsim_ptxfront::machine::{self, Options};
use bwsim_ptxfront::{compile, Arg, Error, Launch};

/// 128 threads: warp 0 allocates 32 TMEM columns; each thread stores `tid + 1000` to column
/// 0 of its lane with the lane field `LANE_ST` in the address, then loads column 0 back with
/// the lane field `LANE_LD` and writes what it read to `out[tid]`. `LANE_ST` and `LANE_LD` are
/// PTX expressions of `%r1` (the thread id) and `%r2` (its warp).
const LANES: &str = r#"
.version 8.7
.target sm_100a
.address_size 64
.shared .align 16 .b8 slot[16];
.visible .entry lanes(.param .u64 out) { .reg .b64 %rd<4>; .reg .b32 %r<12>; .reg .pred %p<2>;
	mov.u32 %r1, %tid.x;
	shr.u32 %r2, %r1, 5;
	mov.u32 %r3, slot;
	setp.ne.u32 %p1, %r2, 0;
	@%p1 bra $L__alloc_done;
	tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 32;
$L__alloc_done:
	bar.sync 0;
	ld.shared.u32 %r4, [%r3];
	LANE_ST
	shl.b32 %r6, %r5, 16;
	add.s32 %r6, %r4, %r6;
	add.s32 %r7, %r1, 1000;
	tcgen05.st.sync.aligned.32x32b.x1.b32 [%r6], {%r7};
	tcgen05.wait::st.sync.aligned;
	bar.sync 0;
	LANE_LD
	shl.b32 %r9, %r8, 16;
	add.s32 %r9, %r4, %r9;
	tcgen05.ld.sync.aligned.32x32b.x1.b32 {%r10}, [%r9];
	tcgen05.wait::ld.sync.aligned;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd2, %rd2, %rd3;
	st.global.u32 [%rd2], %r10;
	bar.sync 0;
	@%p1 bra $L__end;
	tcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 32;
$L__end:
	ret;
}
"#;

/// The kernel with the stores' and loads' lane fields computed by `st` and `ld` (each
/// instruction writing `%r5` and `%r8`), run once on the machine with the checker: `out`.
fn lanes(st: &str, ld: &str) -> Result<Vec<u32>, Error> {
    let src = LANES.replace("LANE_ST", st).replace("LANE_LD", ld);
    let p = compile(&src, "lanes")?;
    let l = Launch::new([1, 1, 1], [128, 1, 1], vec![Arg::Buffer(0)]);
    let mut bufs = vec![vec![0u8; 128 * 4]];
    let o = machine::run(&p, &l, &mut bufs, &Options { seed: 0, check: true })?;
    assert!(o.findings.is_empty(), "{:?}", o.findings);
    Ok(bufs[0]
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// What every thread reads back when each reaches the lane of its own thread id: its own value.
fn own() -> Vec<u32> {
    (0..128).map(|t| t + 1000).collect()
}

#[test]
fn lane_zero_and_the_warps_quarter_reach_the_same_lanes() -> Result<(), Error> {
    // TIRx: every warp at lane 0; CUTLASS and Triton: warp w at lane 32 * (w % 4).
    let zero = "mov.u32 %r5, 0;";
    let quarter = "shl.b32 %r5, %r2, 5;";
    assert_eq!(lanes(zero, &zero.replace("%r5", "%r8"))?, own());
    assert_eq!(lanes(quarter, &quarter.replace("%r5", "%r8"))?, own());
    assert_eq!(lanes(zero, &quarter.replace("%r5", "%r8"))?, own());
    // The lane field naming another warp's quarter (warp w at 32 * ((w + 1) % 4)) still
    // reaches the warp's own lanes.
    let other = "add.u32 %r8, %r2, 1;\n\tand.b32 %r8, %r8, 3;\n\tshl.b32 %r8, %r8, 5;";
    assert_eq!(lanes(quarter, other)?, own());
    Ok(())
}

#[test]
fn a_lane_field_inside_the_quarter_that_overruns_it_is_refused() {
    // A `32x32b` access moves 32 consecutive lanes from the field's lane in the quarter: from
    // lane 16 of it, lanes 16..48, past the quarter's end.
    let r = lanes("mov.u32 %r5, 16;", "mov.u32 %r8, 0;");
    let Err(Error::Runtime { message, .. }) = &r else {
        panic!("expected the store refused, got {r:?}");
    };
    assert!(
        message.contains("lane 16 of its quarter") && message.contains("outside its lanes"),
        "{message}"
    );
}

/// A 4-byte static variable, then the `.extern` array aligned to 64: the array starts at byte
/// 64 of shared memory, not at 16, and `%r1` (its address) is written to `out`.
#[test]
fn the_dynamic_shared_array_starts_at_its_declared_alignment() -> Result<(), Error> {
    for (align, want) in [(16u32, 16u32), (64, 64), (1024, 1024)] {
        let src = format!(
            ".version 8.7\n.target sm_100a\n.address_size 64\n.extern .shared .align {align} .b8 dyn[];\n\
             .visible .entry k(.param .u64 out)\n{{\n\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<3>;\n\
             \t.shared .align 4 .b8 word[4];\n\tmov.u32 %r1, dyn;\n\tld.param.u64 %rd1, [out];\n\
             \tcvta.to.global.u64 %rd2, %rd1;\n\tst.global.u32 [%rd2], %r1;\n\tret;\n}}\n"
        );
        let p = compile(&src, "k")?;
        let mut l = Launch::new([1, 1, 1], [1, 1, 1], vec![Arg::Buffer(0)]);
        l.dynamic_shared = 2048;
        let mut bufs = vec![vec![0u8; 4]];
        bwsim_ptxfront::run(&p, &l, &mut bufs)?;
        assert_eq!(
            u32::from_le_bytes([bufs[0][0], bufs[0][1], bufs[0][2], bufs[0][3]]),
            want,
            ".align {align}"
        );
    }
    Ok(())
}

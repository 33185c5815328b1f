//! Hand-written kernels in the style compilers emit, run by the PTX front end and compared with
//! values computed here from each kernel's meaning (not from the executor), plus the errors a
//! malformed or unsupported kernel must give, at the right place.

mod common;

use bwsim_ptxfront::{compile, parse, run, Arg, Error, Launch};
use common::*;

/// c[i] = a[i] * 2 + b[i] for i < n, with a grid-stride loop: branches, a loop-carried
/// register, `.param` loads, `cvta.to.global`, 64-bit address arithmetic.
const SAXPY: &str = r#"
//
// Generated in the style of NVCC 12.x
//
.version 8.7
.target sm_100a
.address_size 64

	// .globl	saxpy_loop
.visible .entry saxpy_loop(
	.param .u64 saxpy_loop_param_0,
	.param .u64 saxpy_loop_param_1,
	.param .u64 saxpy_loop_param_2,
	.param .u32 saxpy_loop_param_3
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<12>;
	.reg .f32 	%f<5>;
	.reg .b64 	%rd<12>;

	.loc	1 4 0
	ld.param.u64 	%rd4, [saxpy_loop_param_0];
	ld.param.u64 	%rd5, [saxpy_loop_param_1];
	ld.param.u64 	%rd6, [saxpy_loop_param_2];
	ld.param.u32 	%r6, [saxpy_loop_param_3];
	.loc	1 5 13
	mov.u32 	%r7, %ntid.x;
	mov.u32 	%r8, %ctaid.x;
	mov.u32 	%r9, %tid.x;
	mad.lo.s32 	%r11, %r8, %r7, %r9;
	mov.u32 	%r10, %nctaid.x;
	mul.lo.s32 	%r3, %r10, %r7;
	setp.ge.s32 	%p1, %r11, %r6;
	@%p1 bra 	$L__BB0_3;
	cvta.to.global.u64 	%rd1, %rd4;
	cvta.to.global.u64 	%rd2, %rd5;
	cvta.to.global.u64 	%rd3, %rd6;
$L__BB0_2:
	.loc	1 7 9
	mul.wide.s32 	%rd7, %r11, 4;
	add.s64 	%rd8, %rd1, %rd7;
	ld.global.f32 	%f1, [%rd8];
	add.s64 	%rd9, %rd2, %rd7;
	ld.global.nc.f32 	%f2, [%rd9];
	fma.rn.f32 	%f3, %f1, 0f40000000, %f2;
	add.s64 	%rd10, %rd3, %rd7;
	st.global.f32 	[%rd10], %f3;
	.loc	1 6 35
	add.s32 	%r11, %r11, %r3;
	setp.lt.s32 	%p2, %r11, %r6;
	@%p2 bra 	$L__BB0_2;
$L__BB0_3:
	.loc	1 9 1
	ret;

}
	.file	1 "saxpy.cu"
"#;

#[test]
fn saxpy_grid_stride_loop() -> Result<(), Error> {
    let n = 1000;
    let a = randn(n, 1);
    let b = randn(n, 2);
    let p = compile(SAXPY, "saxpy_loop")?;
    let mut bufs = vec![f32_bytes(&a), f32_bytes(&b), vec![0xAB; 4 * n + 64]];
    // 3 CTAs of 96 threads: 288 threads, each visiting 3 or 4 elements.
    let launch = Launch::new(
        [3, 1, 1],
        [96, 1, 1],
        vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::U32(n as u32)],
    );
    let stats = run(&p, &launch, &mut bufs)?;
    let c = bytes_f32(&bufs[2][..4 * n]);
    for i in 0..n {
        // fma with 2.0: a*2 is exact, so fma equals the f32 sum a*2 + b.
        assert_eq!(c[i].to_bits(), (a[i] * 2.0 + b[i]).to_bits(), "element {i}");
    }
    // Past n the buffer is untouched.
    assert!(bufs[2][4 * n..].iter().all(|&x| x == 0xAB));
    assert_eq!(stats.ctas, 3);
    assert_eq!(stats.threads, 288);
    Ok(())
}

/// A block sum: each thread loads one element, warps reduce with `shfl.sync.down`, lane 0 of
/// each warp writes its partial to shared memory, `bar.sync`, then warp 0 adds the partials.
const BLOCK_SUM: &str = r#"
.version 8.7
.target sm_90a
.address_size 64

.extern .shared .align 16 .b8 dyn_smem[];

.visible .entry block_sum(
	.param .u64 .ptr .global .align 1 block_sum_param_0,
	.param .u64 .ptr .global .align 1 block_sum_param_1
)
.maxntid 256, 1, 1
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<40>;
	.reg .b64 	%rd<8>;
	.shared .align 4 .b8 partials[32];

	ld.param.u64 	%rd1, [block_sum_param_0];
	ld.param.u64 	%rd2, [block_sum_param_1];
	mov.u32 	%r1, %tid.x;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mad.lo.s32 	%r4, %r2, %r3, %r1;
	mul.wide.u32 	%rd3, %r4, 4;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.b32 	%r5, [%rd4];
	// warp reduction
	shfl.sync.down.b32 	%r6|%p1, %r5, 16, 31, -1;
	add.s32 	%r7, %r5, %r6;
	shfl.sync.down.b32 	%r8, %r7, 8, 31, -1;
	add.s32 	%r9, %r7, %r8;
	shfl.sync.down.b32 	%r10, %r9, 4, 31, -1;
	add.s32 	%r11, %r9, %r10;
	shfl.sync.down.b32 	%r12, %r11, 2, 31, -1;
	add.s32 	%r13, %r11, %r12;
	shfl.sync.down.b32 	%r14, %r13, 1, 31, -1;
	add.s32 	%r15, %r13, %r14;
	mov.u32 	%r16, %laneid;
	mov.u32 	%r17, %warpid;
	setp.ne.s32 	%p2, %r16, 0;
	shl.b32 	%r18, %r17, 2;
	mov.u32 	%r19, partials;
	add.s32 	%r20, %r19, %r18;
	@!%p2 st.shared.u32 	[%r20], %r15;
	bar.sync 	0;
	setp.ne.s32 	%p3, %r17, 0;
	@%p3 bra 	$L__done;
	// warp 0: lane l < 8 reads partial l
	setp.lt.u32 	%p1, %r16, 8;
	mov.b32 	%r21, 0;
	shl.b32 	%r22, %r16, 2;
	add.s32 	%r23, %r19, %r22;
	@%p1 ld.shared.u32 	%r21, [%r23];
	redux.sync.add.s32 	%r24, %r21, -1;
	@%p2 bra 	$L__done;
	mul.wide.u32 	%rd5, %r2, 4;
	add.s64 	%rd6, %rd2, %rd5;
	st.global.u32 	[%rd6], %r24;
$L__done:
	ret;
}
"#;

#[test]
fn block_sum_with_shuffles_shared_memory_and_a_barrier() -> Result<(), Error> {
    let ctas = 5;
    let x: Vec<i32> = (0..256 * ctas).map(|i| (i * 7919 % 1001) - 500).collect();
    let p = compile(BLOCK_SUM, "block_sum")?;
    let mut bufs = vec![i32_bytes(&x), vec![0; 4 * ctas as usize]];
    let launch = Launch::new(
        [ctas as u32, 1, 1],
        [256, 1, 1],
        vec![Arg::Buffer(0), Arg::Buffer(1)],
    );
    let stats = run(&p, &launch, &mut bufs)?;
    let got = bytes_i32(&bufs[1]);
    for c in 0..ctas as usize {
        let want: i32 = x[c * 256..(c + 1) * 256].iter().sum();
        assert_eq!(got[c], want, "CTA {c}");
    }
    // One barrier per CTA; 5 shuffles per warp plus one redux for warp 0.
    assert_eq!(stats.barriers, ctas as u64);
    assert_eq!(stats.collectives, ctas as u64 * (8 * 5 + 1));
    Ok(())
}

/// The bug twin of `block_sum`: the warp reduction runs inside a branch taken by the lower
/// half of each warp only, so the full-mask shuffle misses lanes.
#[test]
fn divergent_shuffle_is_reported_at_its_line() -> Result<(), Error> {
    let buggy = BLOCK_SUM.replace(
        "\t// warp reduction\n",
        "\t// warp reduction\n\tmov.u32 \t%r39, %laneid;\n\tsetp.ge.u32 \t%p3, %r39, 16;\n\t@%p3 bra \t$L__done;\n",
    );
    let p = compile(&buggy, "block_sum")?;
    let mut bufs = vec![vec![0; 4 * 256], vec![0; 4]];
    let launch = Launch::new([1, 1, 1], [256, 1, 1], vec![Arg::Buffer(0), Arg::Buffer(1)]);
    let Err(Error::Runtime { message, span }) = run(&p, &launch, &mut bufs) else {
        panic!("expected the divergent shuffle to be reported");
    };
    assert!(message.contains("divergent `shfl`"), "{message}");
    let line = buggy[..span.start as usize].lines().count();
    let shfl_line = buggy
        .lines()
        .position(|l| l.contains("shfl.sync.down.b32 \t%r6|%p1"))
        .map(|i| i + 1);
    assert_eq!(Some(line), shfl_line, "{message}");
    Ok(())
}

/// The other bug twin: a store without the bounds guard writes past the output buffer.
#[test]
fn out_of_bounds_store_is_reported_at_its_line() -> Result<(), Error> {
    let buggy = SAXPY.replace("\t@%p1 bra \t$L__BB0_3;\n", "");
    let p = compile(&buggy, "saxpy_loop")?;
    let n = 100;
    let mut bufs = vec![vec![0; 4 * n], vec![0; 4 * n], vec![0; 4 * n]];
    let launch = Launch::new(
        [1, 1, 1],
        [128, 1, 1],
        vec![Arg::Buffer(0), Arg::Buffer(1), Arg::Buffer(2), Arg::U32(n as u32)],
    );
    let Err(Error::Trap(f)) = run(&p, &launch, &mut bufs) else {
        panic!("expected an out-of-bounds access");
    };
    assert_eq!(f.code, bwsim_isa::Code::IllegalAddress);
    let (message, span) = (f.diagnostic.message, f.diagnostic.primary.span);
    assert!(message.contains("outside every launch buffer"), "{message}");
    // The first access past the end is the load of a[100] (line of `ld.global.f32`).
    let at = &buggy[span.range()];
    assert!(at.starts_with("ld.global.f32"), "{at}: {message}");
    assert!(message.contains("saxpy.cu:7:9"), "{message}");
    Ok(())
}

#[test]
fn special_registers_in_three_dimensions() -> Result<(), Error> {
    // out[linear thread id over the grid] = (tid.z, tid.y, tid.x, ctaid.y) packed in bytes.
    let src = r#"
.version 8.0
.target sm_90a
.address_size 64
.visible .entry ids(.param .u64 ids_param_0)
{
	.reg .b32 %r<20>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [ids_param_0];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %tid.y;
	mov.u32 %r3, %tid.z;
	mov.u32 %r4, %ctaid.y;
	mov.u32 %r5, %ntid.x;
	mov.u32 %r6, %ntid.y;
	mov.u32 %r7, %ntid.z;
	mad.lo.s32 %r8, %r3, %r6, %r2;
	mad.lo.s32 %r9, %r8, %r5, %r1;
	mul.lo.s32 %r10, %r5, %r6;
	mul.lo.s32 %r10, %r10, %r7;
	mad.lo.s32 %r11, %r4, %r10, %r9;
	shl.b32 %r12, %r3, 24;
	shl.b32 %r13, %r2, 16;
	shl.b32 %r14, %r1, 8;
	or.b32 %r15, %r12, %r13;
	or.b32 %r15, %r15, %r14;
	or.b32 %r15, %r15, %r4;
	mul.wide.u32 %rd2, %r11, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.b32 [%rd3+0], %r15;
	exit;
}
"#;
    let p = compile(src, "ids")?;
    let block = [4u32, 3, 2];
    let mut bufs = vec![vec![0u8; 4 * 24 * 2]];
    run(
        &p,
        &Launch::new([1, 2, 1], block, vec![Arg::Buffer(0)]),
        &mut bufs,
    )?;
    let got = bytes_i32(&bufs[0]);
    for cy in 0..2 {
        for z in 0..2 {
            for y in 0..3 {
                for x in 0..4 {
                    let lin = cy * 24 + (z * 3 + y) * 4 + x;
                    assert_eq!(got[lin as usize], z << 24 | y << 16 | x << 8 | cy, "thread {lin}");
                }
            }
        }
    }
    Ok(())
}

/// The kernel of [`block_registers_in_a_vector_operand`].
const HALVES: &str = r#"
.version 8.7
.target sm_100a
.address_size 64

.visible .entry halves(
	.param .u64 halves_param_0  // out
)
{
	.reg .b64 %rd<4>; .reg .b32 %r<6>;

	mov.u32 %r1, %tid.x;
	mad.lo.s32 %r2, %r1, 65537, 196609;
	ld.param.u64 %rd1, [halves_param_0];
	{
	.reg .b16 h<2>;
	mov.b32 {h0, h1}, %r2;
	mov.b32 %r3, {h1, h0};
	}
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.b32 [%rd3+0], %r3;
	exit;
}
"#;

/// Registers declared inside a `{ }` block (`.reg .b16 h<2>;`, as Triton's inline assembly
/// declares them) written through a vector operand and read after it: thread `t` stores its
/// `x = t * 0x10001 + 0x00030001` swapped by halves, `(x << 16) | (x >> 16)`.
#[test]
fn block_registers_in_a_vector_operand() -> Result<(), Error> {
    let p = compile(HALVES, "halves")?;
    let mut bufs = vec![vec![0u8; 4 * 32]];
    run(
        &p,
        &Launch::new([1, 1, 1], [32, 1, 1], vec![Arg::Buffer(0)]),
        &mut bufs,
    )?;
    for (t, got) in bytes_i32(&bufs[0]).into_iter().enumerate() {
        let x = (t as u32).wrapping_mul(0x10001).wrapping_add(0x0003_0001);
        assert_eq!(got as u32, x.rotate_left(16), "thread {t}");
    }
    Ok(())
}

#[test]
fn unsupported_instructions_name_themselves_and_their_line() -> Result<(), Error> {
    let src = ".version 8.7\n.target sm_100a\n.address_size 64\n.visible .entry k(.param .align 64 .b8 k_param_0[128])\n{\n\t.reg .b64 %rd<2>;\n\t.shared .align 8 .b8 bar[8];\n\tmov.u64 %rd1, bar;\n\twgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16 {%rd1}, %rd1, %rd1;\n\tret;\n}\n";
    let m = parse(src)?;
    assert_eq!(m.kernels[0].params[0].bytes, 128);
    assert_eq!(m.kernels[0].params[0].align, 64);
    let Err(e @ Error::Unsupported { line, span, .. }) = compile(src, "k") else {
        panic!("expected a refusal");
    };
    assert_eq!(line, 9);
    assert!(src[span.range()].starts_with("wgmma.mma_async.sp"));
    assert!(
        e.to_string().contains(
            "`wgmma.mma_async.sp.sync.aligned.m64n8k32.f32.f16.f16` (PTX line 9) is not supported yet"
        ),
        "{e}"
    );
    Ok(())
}

#[test]
fn malformed_ptx_gives_spanned_errors() {
    let cases: &[(&str, &str)] = &[
        (".version 8.7\n.entry k()\n{\n\tadd.s32 %r1, %r2, 1;\n}\n", "%r1"),
        (
            ".version 8.7\n.entry k()\n{\n\t.reg .b32 %r<2>;\n\tadd.s32 %r1, %r0, 1\n}\n",
            "}",
        ),
        (".version 8.7\n.entry k(\n", ""),
        (
            ".version 8.7\n.entry k()\n{\n\t.reg .b32 %r<2>;\n\tadd.s32 %r1, [%r0, 1;\n}\n",
            ",",
        ),
    ];
    for (src, at) in cases {
        match compile(src, "k") {
            Err(e @ (Error::Syntax { .. } | Error::Invalid { .. })) => {
                let s = e.span();
                assert_eq!(&src[s.range()], *at, "{src:?}: {e}");
            }
            other => panic!("{src:?}: expected a syntax error, got {other:?}"),
        }
    }
}

#[test]
fn an_unwritten_register_is_an_error_where_its_value_is_used() -> Result<(), Error> {
    // Arithmetic on a register no instruction wrote carries its undefined bits (tests/undefined.rs):
    // the run stops at the store that makes them observable, not at the addition.
    let head = ".version 8.7\n.target sm_100a\n.address_size 64\n.visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\t.shared .align 4 .b32 s;\n\tadd.s32 %r1, %r2, 1;\n";
    let unused = format!("{head}\tret;\n}}\n");
    let p = compile(&unused, "k")?;
    run(&p, &Launch::new([1, 1, 1], [32, 1, 1], vec![]), &mut [])?;
    let src = format!("{head}\tst.shared.b32 [s], %r1;\n\tret;\n}}\n");
    let p = compile(&src, "k")?;
    let Err(Error::Runtime { message, span }) = run(&p, &Launch::new([1, 1, 1], [32, 1, 1], vec![]), &mut [])
    else {
        panic!("expected an undefined read");
    };
    assert!(message.contains("`%r1` holds undefined bits"), "{message}");
    assert_eq!(&src[span.range()], "st.shared.b32 [s], %r1;");
    Ok(())
}

#[test]
fn a_barrier_some_threads_skip_deadlocks() -> Result<(), Error> {
    let src = ".version 8.7\n.target sm_100a\n.address_size 64\n.visible .entry k()\n{\n\t.reg .b32 %r<3>;\n\t.reg .pred %p<2>;\n\tmov.u32 %r1, %tid.x;\n\tsetp.lt.u32 %p1, %r1, 32;\n\t@%p1 bra $L__end;\n\tbar.sync 0, 64;\n$L__end:\n\tbar.sync 1;\n\tret;\n}\n";
    let p = compile(src, "k")?;
    // 64 threads: warp 1 waits at barrier 0 for 64 threads, warp 0 at barrier 1 for all.
    let r = run(&p, &Launch::new([1, 1, 1], [64, 1, 1], vec![]), &mut []);
    let Err(Error::Runtime { message, .. }) = r else {
        panic!("expected a deadlock, got {r:?}");
    };
    assert!(message.contains("deadlock"), "{message}");
    // With 32 threads barrier 1 completes.
    run(&p, &Launch::new([1, 1, 1], [32, 1, 1], vec![]), &mut [])?;
    Ok(())
}

/// Truncations and token deletions of real compiler output are accepted or refused with an
/// error whose span lies inside the text; nothing panics.
#[test]
fn mangled_ptx_never_panics() {
    let fixture = std::fs::read_to_string(format!(
        "{}/tests/fixtures/triton-3.9/softmax.sm_100a.ptx",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap_or_default();
    let mut cases: Vec<String> = Vec::new();
    for src in [SAXPY, BLOCK_SUM, fixture.as_str()] {
        let cuts: Vec<usize> = (0..src.len())
            .filter(|&i| src.is_char_boundary(i))
            .step_by(37)
            .collect();
        for &c in &cuts {
            cases.push(src[..c].to_string());
            // Delete a few bytes in the middle.
            let e = (c + 5).min(src.len());
            if src.is_char_boundary(e) {
                cases.push(format!("{}{}", &src[..c], &src[e..]));
            }
        }
    }
    for src in &cases {
        let Ok(m) = parse(src) else {
            if let Err(e) = parse(src) {
                assert!(e.span().end as usize <= src.len(), "{e}");
            }
            continue;
        };
        for k in &m.kernels {
            if let Ok(p) = bwsim_ptxfront::load(src, &m, &k.name) {
                let args: Vec<Arg> = p
                    .params
                    .iter()
                    .map(|prm| Arg::Bytes(vec![0; prm.bytes as usize]))
                    .collect();
                let mut l = Launch::new([1, 1, 1], [64, 1, 1], args);
                l.max_steps = 100_000;
                if let Err(e) = run(&p, &l, &mut []) {
                    assert!(e.span().end as usize <= src.len(), "{e}");
                }
            }
        }
    }
}

#[test]
fn inline_asm_scopes_keep_their_registers_and_labels_apart() -> Result<(), Error> {
    use bwsim_ptxfront::program::Op;
    // Two inline-assembly blocks declaring the same predicate and label (as Triton's
    // `mbarrier.wait` loops do): each branch goes to its own block's label.
    let block = "\t{\n\t.reg .pred p;\n\tL:\n\telect.sync %r1|p, -1;\n\t@!p bra.uni L;\n\t}\n";
    let src = format!(
        ".version 8.7\n.target sm_100a\n.address_size 64\n.visible .entry k()\n{{\n\t.reg .b32 %r<2>;\n{block}{block}\tret;\n}}\n"
    );
    let p = compile(&src, "k")?;
    let targets: Vec<usize> = p
        .ins
        .iter()
        .filter_map(|i| match i.op {
            Op::Bra { target } => Some(target),
            _ => None,
        })
        .collect();
    assert_eq!(targets, vec![0, 2]);
    let guards: Vec<_> = p.ins.iter().filter_map(|i| i.guard).collect();
    assert_eq!(guards.len(), 2);
    assert_ne!(guards[0].0, guards[1].0, "each block's `p` is its own register");
    Ok(())
}

#[test]
fn tensor_copies_parse() -> Result<(), Error> {
    // (The `.2d` token itself: bwsim-isa's lexer tests.)
    let m = parse(
        ".version 8.7\n.target sm_100a\n.address_size 64\n.visible .entry k(.param .align 64 .b8 k_param_0[128])\n{\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<2>;\n\tcp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r0];\n\tret;\n}\n",
    )?;
    let bwsim_ptxfront::parse::Stmt::Instr(i) = &m.kernels[0].body[0] else {
        panic!("an instruction");
    };
    assert_eq!(i.mods[3], "2d");
    assert!(matches!(&i.operands[1], bwsim_ptxfront::parse::Operand::Tensor(_, c) if c.len() == 2));
    Ok(())
}

/// `mov.b32 {b0, b1, b2, b3}, a` into a block's 8-bit registers (b0 the lowest byte), then
/// `cvt.rn.{f16x2,bf16x2}.e2m1x2` of one byte: its two e2m1 values (1 sign, 2 exponent bits of
/// bias 1, 1 significand bit; no NaN or infinity), the high nibble into the high half; the
/// results against values computed by hand.
#[test]
fn fp4_pairs_unpack_from_bytes_of_a_word() -> Result<(), Error> {
    let kernel = |ty: &str, byte: &str| {
        format!(
            ".version 8.7\n.target sm_100a\n.address_size 64\n\
             .visible .entry fp4(.param .u64 fp4_param_0, .param .u32 fp4_param_1)\n{{\n\
             .reg .b32 %r<3>;\n.reg .b64 %rd<2>;\n\
             ld.param.u64 %rd1, [fp4_param_0];\nld.param.u32 %r1, [fp4_param_1];\n\
             {{\n.reg .b8 b<4>;\nmov.b32 {{b0, b1, b2, b3}}, %r1;\ncvt.rn.{ty}.e2m1x2 %r2, {byte};\n}}\n\
             st.global.b32 [%rd1], %r2;\nret;\n}}\n"
        )
    };
    let run1 = |ty: &str, byte: &str| -> Result<u32, Error> {
        let p = compile(&kernel(ty, byte), "fp4")?;
        let mut bufs = vec![vec![0u8; 4]];
        let l = Launch::new([1, 1, 1], [1, 1, 1], vec![Arg::Buffer(0), Arg::U32(0x0000_9f32)]);
        run(&p, &l, &mut bufs)?;
        Ok(u32::from_le_bytes([
            bufs[0][0], bufs[0][1], bufs[0][2], bufs[0][3],
        ]))
    };
    // b0 = 0x32: 0x3 = 0.01.1 is 1.5 (f16 0x3e00), 0x2 = 0.01.0 is 1.0 (0x3c00).
    assert_eq!(run1("f16x2", "b0")?, 0x3e00_3c00);
    // b1 = 0x9f: 0x9 = 1.00.1 is the subnormal -0.5 (f16 0xb800, bf16 0xbf00), 0xf = 1.11.1
    // is -6 (finite: no NaN; f16 0xc600, bf16 0xc0c0).
    assert_eq!(run1("f16x2", "b1")?, 0xb800_c600);
    assert_eq!(run1("bf16x2", "b1")?, 0xbf00_c0c0);
    // b2 = 0: two +0.
    assert_eq!(run1("bf16x2", "b2")?, 0);
    Ok(())
}

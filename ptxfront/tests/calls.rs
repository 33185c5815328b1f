//! Calls in the forms LLVM's NVPTX back end emits them: `.func` bodies called through
//! call sequences of `.param` variables (arguments and a vector return value), a guarded
//! call, nested calls, a thread's `.local` frame, and `__assertfail`; each checked against
//! values computed here from the kernel's meaning, and each with the bug it must catch.

mod common;

use bwsim_isa::Code;
use bwsim_ptxfront::{compile, run, Arg, Error, Launch};
use common::*;

/// `out[2i] = a*b + 1` and `out[2i + 1] = a - b` from `affine(a, b)` (a `.func` returning a
/// pair), then `out[2i] += 10` through `bump`, which calls `add_ten` (nested calls), only for
/// threads with i < 4 (a guarded call); the pair goes through a `.local` array and back.
const CALLS: &str = r#"
.version 8.7
.target sm_90a
.address_size 64

.func  (.param .align 8 .b8 func_retval0[8]) affine
(
	.param .b32 affine_param_0,
	.param .b32 affine_param_1
)
;
.func  (.param .b32 func_retval0) add_ten
(
	.param .b32 add_ten_param_0
)
;
.visible .entry calls(
	.param .u64 calls_param_0,
	.param .u64 calls_param_1
)
.reqntid 32
{
	.local .align 8 .b8 	__local_depot0[8];
	.reg .b32 	%SPL;
	.reg .pred 	%p<2>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<8>;

	.loc	1 10 0
	mov.b32 	%SPL, __local_depot0;
	ld.param.u64 	%rd1, [calls_param_0];
	ld.param.u64 	%rd2, [calls_param_1];
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.b32 	%r2, [%rd4];
	.loc	1 11 0
	{ // callseq 0, 0
	.param .b32 	param0;
	.param .b32 	param1;
	.param .align 8 .b8 	retval0[8];
	st.param.b32 	[param0], %r2;
	st.param.b32 	[param1], 0f40000000;
	call.uni (retval0), affine, (param0, param1);
	ld.param.v2.b32 	{%r3, %r4}, [retval0];
	} // callseq 0
	st.local.v2.b32 	[%SPL], {%r3, %r4};
	ld.local.b32 	%r5, [%SPL+4];
	ld.local.b32 	%r6, [%SPL];
	.loc	1 12 0
	setp.lt.u32 	%p1, %r1, 4;
	{ // callseq 1, 0
	.param .b32 	param0;
	.param .b32 	retval0;
	st.param.b32 	[param0], %r6;
	@%p1 call.uni (retval0), bump, (param0);
	ld.param.b32 	%r7, [retval0];
	} // callseq 1
	selp.b32 	%r8, %r7, %r6, %p1;
	mul.wide.u32 	%rd5, %r1, 8;
	add.s64 	%rd6, %rd2, %rd5;
	st.global.v2.b32 	[%rd6], {%r8, %r5};
	ret;
}
.func  (.param .align 8 .b8 func_retval0[8]) affine(
	.param .b32 affine_param_0,
	.param .b32 affine_param_1
)
{
	.reg .b32 	%r<5>;
	.loc	1 20 0
	ld.param.b32 	%r1, [affine_param_0];
	ld.param.b32 	%r2, [affine_param_1];
	fma.rn.f32 	%r3, %r1, %r2, 0f3F800000;
	sub.f32 	%r4, %r1, %r2;
	st.param.v2.b32 	[func_retval0], {%r3, %r4};
	ret;
}
.func  (.param .b32 func_retval0) bump(
	.param .b32 bump_param_0
)
{
	.reg .b32 	%r<3>;
	ld.param.b32 	%r1, [bump_param_0];
	{ // callseq 2, 0
	.param .b32 	param0;
	.param .b32 	retval0;
	st.param.b32 	[param0], %r1;
	call.uni (retval0), add_ten, (param0);
	ld.param.b32 	%r2, [retval0];
	} // callseq 2
	st.param.b32 	[func_retval0], %r2;
	ret;
}
.func  (.param .b32 func_retval0) add_ten(
	.param .b32 add_ten_param_0
)
{
	.reg .b32 	%r<3>;
	ld.param.b32 	%r1, [add_ten_param_0];
	add.f32 	%r2, %r1, 0f41200000;
	st.param.b32 	[func_retval0], %r2;
	ret;
}
"#;

fn run_calls(src: &str, a: &[f32]) -> Result<Vec<f32>, Error> {
    let p = compile(src, "calls")?;
    let mut bufs = vec![f32_bytes(a), vec![0; 8 * 32]];
    let l = Launch::new([1, 1, 1], [32, 1, 1], vec![Arg::Buffer(0), Arg::Buffer(1)]);
    run(&p, &l, &mut bufs)?;
    Ok(bytes_f32(&bufs[1]))
}

#[test]
fn calls_pass_arguments_and_return_values_through_param_variables() {
    let a: Vec<f32> = (0..32).map(|i| i as f32 * 0.75 - 3.0).collect();
    let out = run_calls(CALLS, &a).expect("runs");
    for (i, &x) in a.iter().enumerate() {
        let fma = x.mul_add(2.0, 1.0);
        let want0 = if i < 4 { fma + 10.0 } else { fma };
        assert_eq!(out[2 * i].to_bits(), want0.to_bits(), "out[{}]", 2 * i);
        assert_eq!(
            out[2 * i + 1].to_bits(),
            (x - 2.0).to_bits(),
            "out[{}]",
            2 * i + 1
        );
    }
}

#[test]
fn a_call_with_its_arguments_swapped_gives_the_swapped_result() {
    // The bug case: the arguments bind by position, so swapping them changes a - b into b - a.
    let swapped = CALLS.replacen(
        "call.uni (retval0), affine, (param0, param1);",
        "call.uni (retval0), affine, (param1, param0);",
        1,
    );
    let a = vec![5.0f32; 32];
    let out = run_calls(&swapped, &a).expect("runs");
    assert_eq!(out[1], 2.0 - 5.0);
}

#[test]
fn calls_that_do_not_fit_the_function_are_refused() {
    let wrong = CALLS.replacen("affine, (param0, param1);", "affine, (param0);", 1);
    let e = compile(&wrong, "calls").unwrap_err();
    assert!(
        matches!(e, Error::Invalid { .. }) && e.to_string().contains("takes 2 parameters"),
        "{e}"
    );
    // A recursive function is refused at load.
    let recursive = CALLS.replacen(
        "call.uni (retval0), add_ten, (param0);",
        "call.uni (retval0), bump, (param0);",
        1,
    );
    let e = compile(&recursive, "calls").unwrap_err();
    assert!(e.to_string().contains("recursive"), "{e}");
    // A function the module only declares, other than __assertfail and vprintf.
    let external = ".extern .func ext (.param .b32 ext_param_0);\n".to_string()
        + &CALLS.replacen("bump, (param0);", "ext, (param0);", 1).replacen(
            "@%p1 call.uni (retval0), ext",
            "@%p1 call.uni ext",
            1,
        );
    let e = compile(&external, "calls").unwrap_err();
    assert!(
        matches!(e, Error::Unsupported { .. }) && e.to_string().contains("`ext`"),
        "{e}"
    );
}

/// `if x[i] >= limit: __assertfail("too big", "k.py", 7, "fn", 1)` as Triton's debug mode
/// emits it, the message and file in module-level `.global` arrays.
const ASSERT: &str = r#"
.version 8.7
.target sm_90a
.address_size 64

.extern .func __assertfail
(
	.param .b64 __assertfail_param_0,
	.param .b64 __assertfail_param_1,
	.param .b32 __assertfail_param_2,
	.param .b64 __assertfail_param_3,
	.param .b64 __assertfail_param_4
)
.noreturn;
.global .align 1 .b8 assertMessage_0[8] = {116, 111, 111, 32, 98, 105, 103};
.global .align 1 .b8 assertFile_0[5] = {107, 46, 112, 121};
.global .align 1 .b8 assertFunc_0[3] = {102, 110};
.visible .entry checked(
	.param .u64 checked_param_0,
	.param .u32 checked_param_1
)
.reqntid 64
{
	.reg .b64 	%rd<12>;
	.reg .b32 	%r<4>;
	.reg .pred 	%p<2>;

	.loc	1 5 0
	mov.u32 	%r2, %tid.x;
	ld.param.u64 	%rd1, [checked_param_0];
	shl.b32 	%r1, %r2, 2;
	cvt.u64.u32 	%rd2, %r1;
	add.s64 	%rd3, %rd1, %rd2;
	ld.global.b32 	%r3, [%rd3];
	ld.param.u32 	%r1, [checked_param_1];
	setp.ge.s32 	%p1, %r3, %r1;
	@%p1 bra 	$L__BB0_2;
	ret;
$L__BB0_2:
	.loc	1 7 5
	{ // callseq 0, 0
	.param .b64 	param0;
	.param .b64 	param1;
	.param .b32 	param2;
	.param .b64 	param3;
	.param .b64 	param4;
	mov.b64 	%rd4, assertFunc_0;
	cvta.global.u64 	%rd5, %rd4;
	st.param.b64 	[param3], %rd5;
	mov.b64 	%rd6, assertFile_0;
	cvta.global.u64 	%rd7, %rd6;
	st.param.b64 	[param1], %rd7;
	mov.b64 	%rd8, assertMessage_0;
	cvta.global.u64 	%rd9, %rd8;
	st.param.b64 	[param0], %rd9;
	st.param.b64 	[param4], 1;
	st.param.b32 	[param2], 7;
	call.uni __assertfail, (param0, param1, param2, param3, param4);
	} // callseq 0
	trap;
}
"#;

fn run_assert(x: &[i32], limit: u32) -> Result<(), Error> {
    let p = compile(ASSERT, "checked")?;
    let mut bufs = vec![i32_bytes(x)];
    let l = Launch::new([1, 1, 1], [64, 1, 1], vec![Arg::Buffer(0), Arg::U32(limit)]);
    run(&p, &l, &mut bufs).map(|_| ())
}

#[test]
fn assertfail_stops_the_run_with_a_device_assert_at_the_call() {
    let mut x: Vec<i32> = (0..64).collect();
    run_assert(&x, 64).expect("every element is below the limit");
    // Thread 37's element fails the assertion.
    x[37] = 100;
    let Err(Error::Trap(f)) = run_assert(&x, 64) else {
        panic!("the assertion must stop the run");
    };
    assert_eq!(f.code, Code::DeviceAssert);
    let m = &f.diagnostic.message;
    assert!(
        m.contains("`too big`") && m.contains("k.py:7") && m.contains("thread [37, 0, 0]"),
        "{m}"
    );
    assert!(ASSERT[f.diagnostic.primary.span.range()].starts_with("call.uni __assertfail"));
}

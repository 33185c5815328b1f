//! `vote.sync` (PTX ISA, "Parallel Synchronization and Communication Instructions: vote"): a
//! kernel in the style compilers emit votes over a predicate with member masks that differ
//! between the halves of each warp, and the outputs are compared with the votes computed here
//! from the ISA's definition of each mode; its bug twin votes with a full mask while half the
//! warp has branched away, which the machine reports at the vote's line.

use bwsim_ptxfront::{compile, run, Arg, Error, Launch};

/// Thread t votes on `x[t] > 0`: `out[4t..4t+4]` = the ballot and the `.all` and `.uni` votes
/// of its half-warp (member mask 0x0000ffff or 0xffff0000), and the `.any` vote of the whole
/// warp on the negated predicate.
const VOTES: &str = r#"
.version 8.7
.target sm_100a
.address_size 64

	// .globl	votes
.visible .entry votes(
	.param .u64 votes_param_0,
	.param .u64 votes_param_1
)
{
	.reg .pred 	%p<6>;
	.reg .b32 	%r<9>;
	.reg .b64 	%rd<9>;

	.loc	1 3 0
	ld.param.u64 	%rd1, [votes_param_0];
	ld.param.u64 	%rd2, [votes_param_1];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r1, %tid.x;
	mul.wide.u32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd3, %rd5;
	ld.global.u32 	%r2, [%rd6];
	setp.gt.s32 	%p1, %r2, 0;
	mov.u32 	%r3, %laneid;
	setp.lt.u32 	%p2, %r3, 16;
	selp.b32 	%r4, 65535, -65536, %p2;
	.loc	1 7 12
	vote.sync.ballot.b32 	%r5, %p1, %r4;
	vote.sync.all.pred 	%p3, %p1, %r4;
	vote.sync.any.pred 	%p4, !%p1, -1;
	vote.sync.uni.pred 	%p5, %p1, %r4;
	selp.u32 	%r6, 1, 0, %p3;
	selp.u32 	%r7, 1, 0, %p4;
	selp.u32 	%r8, 1, 0, %p5;
	mul.wide.u32 	%rd7, %r1, 16;
	add.s64 	%rd8, %rd4, %rd7;
	st.global.v4.u32 	[%rd8], {%r5, %r6, %r7, %r8};
$L__done:
	ret;

}
	.file	1 "votes.py"
"#;

/// Three warps: the first's low half all positive and its high half mixed, the second's low
/// half none positive and its high half all, the third all positive.
fn inputs() -> Vec<i32> {
    (0..96)
        .map(|t: i32| match (t / 32, t % 32) {
            (0, l) if l < 16 => l + 1,
            (0, l) => {
                if l % 3 == 0 {
                    -l
                } else {
                    l
                }
            }
            (1, l) if l < 16 => -l,
            (1, l) => l,
            (_, l) => 100 + l,
        })
        .collect()
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn votes_follow_each_lanes_member_mask() -> Result<(), Error> {
    let x = inputs();
    let p = compile(VOTES, "votes")?;
    let mut bufs = vec![
        x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>(),
        vec![0; 16 * 96],
    ];
    let launch = Launch::new([1, 1, 1], [96, 1, 1], vec![Arg::Buffer(0), Arg::Buffer(1)]);
    run(&p, &launch, &mut bufs)?;
    let out = words(&bufs[1]);
    for t in 0..96usize {
        let (w, lane) = (t / 32, t % 32);
        let warp = &x[32 * w..32 * w + 32];
        let yes = (0..32).filter(|&l| warp[l] > 0).fold(0u32, |m, l| m | 1 << l);
        let mask: u32 = if lane < 16 { 0x0000_ffff } else { 0xffff_0000 };
        let ballot = yes & mask;
        let want = [
            ballot,
            (ballot == mask) as u32,
            // `.any` over the whole warp of `!p`: some lane is not positive.
            (yes != u32::MAX) as u32,
            (ballot == mask || ballot == 0) as u32,
        ];
        assert_eq!(out[4 * t..4 * t + 4], want, "thread {t}");
    }
    // The cases the inputs were chosen for: warp 0's low half votes all true, its high half
    // not; warp 1's low half none (uniform); warp 2 has no lane voting false.
    assert_eq!(out[0..4], [0x0000_ffff, 1, 1, 1]);
    assert_eq!(out[4 * 16 + 1], 0);
    assert_eq!(out[4 * 32..4 * 32 + 4], [0, 0, 1, 1]);
    assert_eq!(out[4 * 64 + 2], 0);
    Ok(())
}

/// The bug twin: the high half of each warp branches past the votes, which name the whole
/// warp in their member mask.
#[test]
fn a_vote_half_the_warp_skips_is_reported_at_its_line() -> Result<(), Error> {
    let buggy = VOTES.replace(
        "\tvote.sync.ballot.b32 \t%r5, %p1, %r4;\n",
        "\t@!%p2 bra \t$L__done;\n\tvote.sync.ballot.b32 \t%r5, %p1, -1;\n",
    );
    let p = compile(&buggy, "votes")?;
    let x = inputs();
    let mut bufs = vec![
        x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>(),
        vec![0; 16 * 96],
    ];
    let launch = Launch::new([1, 1, 1], [96, 1, 1], vec![Arg::Buffer(0), Arg::Buffer(1)]);
    let Err(Error::Runtime { message, span }) = run(&p, &launch, &mut bufs) else {
        panic!("expected the divergent vote to be reported");
    };
    assert!(message.contains("divergent `vote`"), "{message}");
    assert!(
        buggy[span.range()].starts_with("vote.sync.ballot.b32"),
        "{message}"
    );
    Ok(())
}

#[test]
fn malformed_votes_are_refused_with_their_line() {
    for (form, why) in [
        (
            "vote.sync.ballot.pred \t%p3, %p1, -1;",
            "`vote.sync.ballot` takes `.b32`",
        ),
        (
            "vote.sync.all.b32 \t%r6, %p1, -1;",
            "`vote.sync.all` takes `.pred`",
        ),
        ("vote.sync.ballot.b32 \t%r6, %p1;", "takes d, {!}a, membermask"),
    ] {
        let src = VOTES.replace(
            "\tvote.sync.uni.pred \t%p5, %p1, %r4;\n",
            &format!("\t{form}\n\tvote.sync.uni.pred \t%p5, %p1, %r4;\n"),
        );
        let Err(e) = compile(&src, "votes") else {
            panic!("{form}: expected a refusal");
        };
        assert!(e.to_string().contains(why), "{form}: {e}");
    }
}

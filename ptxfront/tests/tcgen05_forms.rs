//! The `tcgen05` forms beyond the dense shared-memory MMA, on hand-written kernels whose
//! results follow from the PTX ISA's statements alone:
//! - the `16x64b`, `16x128b`, `16x256b` and `16x32bx2` shapes of `tcgen05.st`/`tcgen05.ld`
//!   ("Matrix fragments for tcgen05.ld/st": which lane and column each register of each
//!   thread moves), stored with the shape and read back one lane per thread with `32x32b`;
//! - `tcgen05.mma` with its A operand in tensor memory (M = 128 and M = 64: "Data path layout
//!   organization"), against the product computed here; and the checker's view of that read
//!   (an A stored by other warps without a barrier before the MMA is a race).

use bwsim_isa::Code;
use bwsim_ptxfront::machine::{self, Options};
use bwsim_ptxfront::{compile, Arg, Error, Launch};

const HEAD: &str = ".version 8.7\n.target sm_100a\n.address_size 64\n";

/// Runs kernel `k` of `src` with 128 threads on the machine with the checker, its parameters
/// `out` (`words` u32) and then one buffer per input; returns `out` and the codes the
/// checker found.
fn run_with(src: &str, inputs: &[Vec<u8>], words: usize) -> Result<(Vec<u32>, Vec<Code>), Error> {
    let p = compile(src, "k")?;
    let args = (0..=inputs.len()).map(Arg::Buffer).collect();
    let l = Launch::new([1, 1, 1], [128, 1, 1], args);
    let mut bufs = vec![vec![0u8; words * 4]];
    bufs.extend(inputs.iter().cloned());
    let o = machine::run(&p, &l, &mut bufs, &Options { seed: 0, check: true })?;
    let out = bufs[0]
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok((out, o.findings.iter().map(|f| f.code).collect()))
}

/// [`run_with`] without inputs.
fn run(src: &str, words: usize) -> Result<(Vec<u32>, Vec<Code>), Error> {
    run_with(src, &[], words)
}

/// Allocation of 64 columns by warp 0 into `slot`, its address in `%r4`; `%r1` the thread id,
/// `%r2` the warp.
const PROLOGUE: &str = "\tmov.u32 %r1, %tid.x;\n\tshr.u32 %r2, %r1, 5;\n\tmov.u32 %r3, slot;\n\
\tsetp.ne.u32 %p1, %r2, 0;\n\t@%p1 bra $L__alloc_done;\n\
\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r3], 64;\n\
\ttcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;\n$L__alloc_done:\n\
\tbar.sync 0;\n\tld.shared.u32 %r4, [%r3];\n";

/// Writes `n` registers `%v0..` to `out[tid * n ..]`, then frees the allocation.
fn epilogue(n: usize) -> String {
    let mut s = String::from("\tld.param.u64 %rd1, [out];\n\tcvta.to.global.u64 %rd2, %rd1;\n");
    s += &format!(
        "\tmul.wide.u32 %rd3, %r1, {};\n\tadd.s64 %rd2, %rd2, %rd3;\n",
        n * 4
    );
    for j in 0..n {
        s += &format!("\tst.global.u32 [%rd2+{}], %v{j};\n", j * 4);
    }
    s += "\tbar.sync 0;\n\t@%p1 bra $L__end;\n\ttcgen05.dealloc.cta_group::1.sync.aligned.b32 %r4, 64;\n$L__end:\n\tret;\n}\n";
    s
}

/// The kernel storing with `shape` (`.x1`, `regs` registers: thread `t`'s register `r` holds
/// `100 t + r`) at lane `lane` of each warp's quarter, then reading back 8 columns per lane
/// with `32x32b` into `out[tid * 8 ..]`. `imm` is the `16x32bx2` operand (with its comma).
fn shape_kernel(shape: &str, regs: usize, lane: u32, imm: &str) -> String {
    let mut s = format!(
        "{HEAD}.visible .entry k(.param .u64 out)\n{{\n\t.reg .pred %p<4>;\n\t.reg .b32 %r<16>;\n\
         \t.reg .b32 %v<16>;\n\t.reg .b64 %rd<8>;\n\t.shared .align 8 .b8 slot[8];\n{PROLOGUE}"
    );
    let list = |n: usize| (0..n).map(|j| format!("%v{j}")).collect::<Vec<_>>().join(", ");
    s += "\tmul.lo.u32 %r5, %r1, 100;\n";
    for r in 0..regs {
        s += &format!("\tadd.u32 %v{r}, %r5, {r};\n");
    }
    s += &format!("\tadd.u32 %r6, %r4, {};\n", lane << 16);
    s += &format!(
        "\ttcgen05.st.sync.aligned.{shape}.x1.b32 [%r6]{imm}, {{{}}};\n\ttcgen05.wait::st.sync.aligned;\n",
        list(regs)
    );
    s += "\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n\ttcgen05.fence::after_thread_sync;\n";
    s += &format!(
        "\ttcgen05.ld.sync.aligned.32x32b.x8.b32 {{{}}}, [%r4];\n\ttcgen05.wait::ld.sync.aligned;\n",
        list(8)
    );
    s + &epilogue(8)
}

/// What `shape_kernel` reads back, from `at(l, r)`: the quarter-relative lane and the column
/// of register `r` of lane `l`, as the PTX ISA's fragment figures place them.
fn expected(regs: u32, lane: u32, at: impl Fn(u32, u32) -> (u32, u32)) -> Vec<u32> {
    let mut out = vec![0u32; 128 * 8];
    for t in 0..128u32 {
        let (w, l) = (t / 32, t % 32);
        for r in 0..regs {
            let (row, col) = at(l, r);
            out[((32 * w + lane + row) * 8 + col) as usize] = 100 * t + r;
        }
    }
    out
}

#[test]
fn the_16_lane_shapes_place_each_register_where_the_ptx_isa_says() -> Result<(), Error> {
    // 16x64b: lane l holds row l/4 + 8 (l % 2), column (l / 2) % 2. By hand: lane 5 is row 9,
    // column 0; lane 6 is row 1, column 1.
    let s64 = |l: u32, _r: u32| (l / 4 + 8 * (l % 2), (l / 2) % 2);
    assert_eq!((s64(5, 0), s64(6, 0)), ((9, 0), (1, 1)));
    // 16x128b: register r of lane l at row l/4 + 8 (r % 2), column l % 4.
    let s128 = |l: u32, r: u32| (l / 4 + 8 * (r % 2), l % 4);
    // 16x256b: register r of lane l at row l/4 + 8 (r/2 % 2), column r % 2 + 2 (l % 4).
    let s256 = |l: u32, r: u32| (l / 4 + 8 * (r / 2 % 2), r % 2 + 2 * (l % 4));
    assert_eq!(s256(7, 3), (9, 7));
    // 16x32bx2 with offset 4: lanes 0-15 rows 0-15 at column 0, lanes 16-31 the same rows
    // at column 4.
    let s2 = |l: u32, _r: u32| (l % 16, if l < 16 { 0 } else { 4 });
    for (shape, regs, at, imm) in [
        ("16x64b", 1, &s64 as &dyn Fn(u32, u32) -> (u32, u32), ""),
        ("16x128b", 2, &s128, ""),
        ("16x256b", 4, &s256, ""),
        ("16x32bx2", 1, &s2, ", 4"),
    ] {
        for lane in [0, 16] {
            let (out, codes) = run(&shape_kernel(shape, regs, lane, imm), 128 * 8)?;
            assert!(codes.is_empty(), "{shape}: {codes:?}");
            assert_eq!(out, expected(regs as u32, lane, at), "{shape} at lane {lane}");
        }
    }
    // A hand-checked cell: warp 1's lane 5 stores 16x64b register 0 (100 * 37) at lane 32 + 9,
    // column 0.
    let (out, _) = run(&shape_kernel("16x64b", 1, 0, ""), 128 * 8)?;
    assert_eq!(out[(41 * 8) as usize], 3700);
    Ok(())
}

#[test]
fn a_16_lane_access_past_its_quarter_is_refused() {
    // From lane 17 of the quarter, the 16 lanes reach lane 32: the next warp's.
    let r = run(&shape_kernel("16x64b", 1, 17, ""), 128 * 8);
    let Err(Error::Runtime { message, .. }) = &r else {
        panic!("expected the store refused, got {r:?}");
    };
    assert!(message.contains("outside its lanes"), "{message}");
}

/// `A[i][k]` and `B[n][k]`: small integers, exact in f16 and in every f32 sum.
fn a_val(i: u32, k: u32) -> i32 {
    ((i + 3 * k) % 7) as i32 - 3
}
fn b_val(n: u32, k: u32) -> i32 {
    ((2 * n + k) % 5) as i32 - 2
}

/// A kernel with one MMA of M = `m`, N = 16, K = 16 (f16 into f32): A in tensor memory,
/// stored by every thread with `32x32b` (the thread's lane holds A's row of that lane), B
/// (16 x 16, K-major, no swizzle: 8 x 16-byte core matrices, 128 bytes apart along N and 256
/// along K) in shared memory, D at column 32, issued by thread 0 after a CTA barrier. With
/// `ordered`, the A stores come before that barrier (without, after it: the MMA races them).
/// Every thread writes its lane's 16 accumulator columns to `out[tid * 16 ..]`.
fn mma_kernel(m: u32, ordered: bool) -> String {
    let mut s = format!(
        "{HEAD}.visible .entry k(.param .u64 out)\n{{\n\t.reg .pred %p<8>;\n\t.reg .b32 %r<64>;\n\
         \t.reg .b32 %v<16>;\n\t.reg .f32 %f<8>;\n\t.reg .b64 %rd<8>;\n\
         \t.shared .align 1024 .b8 bmat[512];\n\t.shared .align 8 .b8 bar[8];\n\
         \t.shared .align 8 .b8 slot[8];\n\
         \tmov.u32 %r23, bar;\n\tmov.u32 %r1, %tid.x;\n\tsetp.ne.u32 %p2, %r1, 0;\n\t@%p2 bra $L__init_done;\n\
         \tmbarrier.init.shared::cta.b64 [%r23], 1;\n\tfence.mbarrier_init.release.cluster;\n$L__init_done:\n\
         {PROLOGUE}"
    );
    // The thread's row of A: its lane for M = 128; for M = 64, row 16 (lane / 32) + lane % 16
    // (meaningful in the lanes below 16 of each quarter).
    s += if m == 128 {
        "\tmov.u32 %r5, %r1;\n"
    } else {
        "\tand.b32 %r6, %r1, 15;\n\tshl.b32 %r5, %r2, 4;\n\tadd.u32 %r5, %r5, %r6;\n"
    };
    // `dst` = ((a * mul + add) % modulus) - off as f32.
    let val = |dst: &str, a: &str, add: &str, modulus: u32, off: u32| {
        format!(
            "\tmad.lo.u32 %r10, {a}, 1, {add};\n\trem.u32 %r10, %r10, {modulus};\n\
             \tsub.s32 %r10, %r10, {off};\n\tcvt.rn.f32.s32 {dst}, %r10;\n"
        )
    };
    // A: column c holds k = 2c (low half) and 2c + 1.
    for c in 0..8u32 {
        s += &val("%f1", "%r5", &(3 * (2 * c)).to_string(), 7, 3);
        s += &val("%f2", "%r5", &(3 * (2 * c + 1)).to_string(), 7, 3);
        s += &format!("\tcvt.rn.f16x2.f32 %v{c}, %f2, %f1;\n");
    }
    let store_a =
        "\ttcgen05.st.sync.aligned.32x32b.x8.b32 [%r4], {%v0, %v1, %v2, %v3, %v4, %v5, %v6, %v7};\n\
                   \ttcgen05.wait::st.sync.aligned;\n";
    if ordered {
        s += store_a;
    }
    // B: thread t writes (n, k0) and (n, k0 + 1), n = t % 16, k0 = 2 (t / 16), at byte
    // (n / 8) * 128 + (k0 / 8) * 256 + (n % 8) * 16 + (k0 % 8) * 2.
    s += "\tand.b32 %r11, %r1, 15;\n\tshr.u32 %r12, %r1, 4;\n\tshl.b32 %r13, %r12, 1;\n\tshl.b32 %r14, %r11, 1;\n";
    s += &val("%f3", "%r13", "%r14", 5, 2);
    s += "\tadd.u32 %r15, %r13, 1;\n";
    s += &val("%f4", "%r15", "%r14", 5, 2);
    s += "\tcvt.rn.f16x2.f32 %r16, %f4, %f3;\n\
          \tshr.u32 %r17, %r11, 3;\n\tshl.b32 %r17, %r17, 7;\n\tshr.u32 %r18, %r13, 3;\n\tshl.b32 %r18, %r18, 8;\n\
          \tand.b32 %r19, %r11, 7;\n\tshl.b32 %r19, %r19, 4;\n\tand.b32 %r20, %r13, 7;\n\tshl.b32 %r20, %r20, 1;\n\
          \tadd.u32 %r21, %r17, %r18;\n\tadd.u32 %r21, %r21, %r19;\n\tadd.u32 %r21, %r21, %r20;\n\
          \tmov.u32 %r22, bmat;\n\tadd.u32 %r21, %r21, %r22;\n\tst.shared.b32 [%r21], %r16;\n\
          \tfence.proxy.async.shared::cta;\n\
          \ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n\ttcgen05.fence::after_thread_sync;\n";
    if !ordered {
        s += store_a;
    }
    // Thread 0 issues the MMA: D at column 32, A at the allocation's column 0; the idesc:
    // f32 D (bit 4), f16 A and B, K-major, N >> 3 = 2 (bit 17), M >> 4 (bit 24). B's
    // descriptor: start >> 4, LBO 256 >> 4 (bit 16), SBO 128 >> 4 (bit 32).
    let idesc = 0x10 | (2 << 17) | ((m >> 4) << 24);
    s += &format!(
        "\t@%p2 bra $L__mma_done;\n\tmov.u32 %r24, bmat;\n\tcvt.u64.u32 %rd4, %r24;\n\tshr.u64 %rd4, %rd4, 4;\n\
         \tor.b64 %rd4, %rd4, 0x0000000800100000;\n\tadd.u32 %r25, %r4, 32;\n\tmov.u32 %r26, {idesc};\n\
         \tsetp.eq.u32 %p3, %r1, 1;\n\
         \ttcgen05.mma.cta_group::1.kind::f16 [%r25], [%r4], %rd4, %r26, %p3;\n\
         \ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r23];\n$L__mma_done:\n"
    );
    s += "$L__wait:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p4, [%r23], 0;\n\t@!%p4 bra $L__wait;\n\
          \ttcgen05.fence::after_thread_sync;\n\tadd.u32 %r27, %r4, 32;\n";
    s += &format!(
        "\ttcgen05.ld.sync.aligned.32x32b.x16.b32 {{{}}}, [%r27];\n\ttcgen05.wait::ld.sync.aligned;\n",
        (0..16).map(|j| format!("%v{j}")).collect::<Vec<_>>().join(", ")
    );
    s + &epilogue(16)
}

#[test]
fn an_mma_reads_its_a_from_tensor_memory() -> Result<(), Error> {
    for m in [128u32, 64] {
        let (out, codes) = run(&mma_kernel(m, true), 128 * 16)?;
        assert!(codes.is_empty(), "M = {m}: {codes:?}");
        for lane in 0..128u32 {
            // M = 64: rows 16 q .. 16 q + 15 in lanes 32 q .. 32 q + 15; the other lanes
            // hold no accumulator.
            let row = match m {
                128 => Some(lane),
                _ => (lane % 32 < 16).then_some(16 * (lane / 32) + lane % 32),
            };
            for j in 0..16u32 {
                let want = row.map_or(0.0, |i| {
                    (0..16).map(|k| a_val(i, k) * b_val(j, k)).sum::<i32>() as f32
                });
                let got = f32::from_bits(out[(lane * 16 + j) as usize]);
                assert_eq!(got, want, "M = {m}, lane {lane}, column {j}");
            }
        }
    }
    Ok(())
}

#[test]
fn an_mma_reading_a_stored_without_a_barrier_races() -> Result<(), Error> {
    // The pair is a `race` when a store came first, `write-while-in-flight` when the MMA's
    // read did (the MMA was issued before the unordered store).
    let (_, codes) = run(&mma_kernel(128, false), 128 * 16)?;
    assert!(
        codes
            .iter()
            .any(|c| matches!(c, Code::Race | Code::WriteWhileInFlight)),
        "{codes:?}"
    );
    Ok(())
}

/// The byte of element `(r, kb)` (byte `kb` of row `r`) of a K-major operand in the canonical
/// unswizzled layout: 8 x 16-byte core matrices, 128 bytes apart along the rows (SBO) and
/// `lbo` along the bytes (PTX ISA, "Shared memory matrix layout").
fn core_matrix_byte(r: u32, kb: u32, lbo: u32) -> usize {
    ((r / 8) * 128 + (kb / 16) * lbo + (r % 8) * 16 + kb % 16) as usize
}

/// The descriptor of such an operand at the shared address in `%r{reg}`, into `%rd{out}`:
/// start >> 4, LBO >> 4 at bit 16, SBO 128 >> 4 at bit 32.
fn core_matrix_desc(reg: u32, out: u32, lbo: u32) -> String {
    let fields = ((lbo as u64 >> 4) << 16) | (8u64 << 32);
    format!(
        "\tcvt.u64.u32 %rd{out}, %r{reg};\n\tshr.u64 %rd{out}, %rd{out}, 4;\n\tor.b64 %rd{out}, %rd{out}, {fields};\n"
    )
}

/// A kernel that copies `inp` (`words` u32 per thread, `128 * words` in all) into shared
/// `smem` word for word (thread `t` copies words `t`, `128 + t`, ...), stores tensor-memory cells
/// `inp2[tid * cols ..]` at columns 0.. of its lane with `32x32b`, orders both before thread 0
/// issues `issue` (PTX using `%r4`, the allocation, `%r22`, `smem`'s address, and `%r23`, an
/// mbarrier its commit arrives on), waits for it, and writes columns `ld_at..ld_at + ld` of
/// its lane to `out[tid * ld ..]`.
fn pipe_kernel(words: u32, cols: usize, issue: &str, ld_at: u32, ld: usize) -> String {
    let mut s = format!(
        "{HEAD}.visible .entry k(.param .u64 out, .param .u64 inp, .param .u64 inp2)\n{{\n\
         \t.reg .pred %p<8>;\n\t.reg .b32 %r<64>;\n\t.reg .b32 %v<64>;\n\t.reg .b64 %rd<16>;\n\
         \t.shared .align 1024 .b8 smem[{}];\n\t.shared .align 8 .b8 bar[8];\n\t.shared .align 8 .b8 slot[8];\n\
         \tmov.u32 %r23, bar;\n\tmov.u32 %r1, %tid.x;\n\tsetp.ne.u32 %p2, %r1, 0;\n\t@%p2 bra $L__init_done;\n\
         \tmbarrier.init.shared::cta.b64 [%r23], 1;\n\tfence.mbarrier_init.release.cluster;\n$L__init_done:\n\
         {PROLOGUE}\tmov.u32 %r22, smem;\n\
         \tld.param.u64 %rd5, [inp];\n\tcvta.to.global.u64 %rd5, %rd5;\n\tld.param.u64 %rd6, [inp2];\n\
         \tcvta.to.global.u64 %rd6, %rd6;\n\tmul.wide.u32 %rd7, %r1, 4;\n",
        words * 512
    );
    for j in 0..words {
        s += &format!(
            "\tadd.s64 %rd8, %rd5, %rd7;\n\tld.global.u32 %r30, [%rd8+{}];\n\tshl.b32 %r31, %r1, 2;\n\
             \tadd.u32 %r31, %r31, {};\n\tadd.u32 %r31, %r31, %r22;\n\tst.shared.u32 [%r31], %r30;\n",
            512 * j,
            512 * j
        );
    }
    s += &format!(
        "\tmul.wide.u32 %rd9, %r1, {};\n\tadd.s64 %rd9, %rd6, %rd9;\n",
        cols * 4
    );
    for c in 0..cols {
        s += &format!("\tld.global.u32 %v{c}, [%rd9+{}];\n", 4 * c);
    }
    if cols > 0 {
        let list = (0..cols).map(|c| format!("%v{c}")).collect::<Vec<_>>().join(", ");
        s += &format!("\ttcgen05.st.sync.aligned.32x32b.x{cols}.b32 [%r4], {{{list}}};\n\ttcgen05.wait::st.sync.aligned;\n");
    }
    s += "\tfence.proxy.async.shared::cta;\n\ttcgen05.fence::before_thread_sync;\n\tbar.sync 0;\n\
          \ttcgen05.fence::after_thread_sync;\n\t@%p2 bra $L__issued;\n";
    s += issue;
    s += "\ttcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r23];\n$L__issued:\n\
          $L__wait:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p4, [%r23], 0;\n\t@!%p4 bra $L__wait;\n\
          \ttcgen05.fence::after_thread_sync;\n";
    let list = (0..ld).map(|j| format!("%v{j}")).collect::<Vec<_>>().join(", ");
    s += &format!(
        "\tadd.u32 %r27, %r4, {ld_at};\n\ttcgen05.ld.sync.aligned.32x32b.x{ld}.b32 {{{list}}}, [%r27];\n\
         \ttcgen05.wait::ld.sync.aligned;\n"
    );
    s + &epilogue(ld)
}

/// Runs a [`pipe_kernel`] with its inputs: `inp` (shared memory's bytes) and `cells`.
fn run_pipe(src: &str, inp: &[u8], cells: &[u32], words: usize) -> Result<(Vec<u32>, Vec<Code>), Error> {
    let cells = cells.iter().flat_map(|w| w.to_le_bytes()).collect();
    run_with(src, &[inp.to_vec(), cells], words)
}

/// The bits of a small integer `v` (|v| <= 3) in a format whose magnitudes 0 to 3 are
/// `mags` and whose sign is `sign`.
fn small(v: i32, mags: [u8; 4], sign: u8) -> u8 {
    let mag = mags[v.unsigned_abs() as usize];
    if v < 0 {
        mag | sign
    } else {
        mag
    }
}

/// e4m3 bits (bias 7, 3 mantissa bits: 1 = 0x38, 2 = 0x40, 3 = 0x44).
fn e4m3(v: i32) -> u8 {
    small(v, [0x00, 0x38, 0x40, 0x44], 0x80)
}

/// e2m1 bits (bias 1, 1 mantissa bit: 1 = 0b010, 2 = 0b100, 3 = 0b101).
fn e2m1(v: i32) -> u8 {
    small(v, [0, 2, 4, 5], 8)
}

#[test]
fn a_block_scaled_mma_scales_each_block_by_its_factor_byte() -> Result<(), Error> {
    // M = 128, N = 16: A is 128 x 32 bytes at shared byte 0 (LBO 2048), B 16 x 32 bytes at
    // 4096 (LBO 256); A's factors at tensor-memory columns 0-3 (row r in lane r % 32 of every
    // quarter, column r / 32), B's at column 4; D at column 32.
    for fp4 in [false, true] {
        let (k, vec) = if fp4 { (64u32, 32u32) } else { (32, 32) };
        let blocks = k / vec;
        let a = |i: u32, k: u32| ((i + 2 * k) % 7) as i32 - 3;
        let b = |j: u32, k: u32| ((3 * j + k) % 5) as i32 - 2;
        // Factors 2^(e - 127): row i's block kb, column j's.
        let ea = |i: u32, kb: u32| 125 + (i + kb) % 5;
        let eb = |j: u32, kb: u32| 126 + (j + 2 * kb) % 3;
        let mut smem = vec![0u8; 4608];
        let put = |smem: &mut [u8], base: usize, lbo: u32, r: u32, kk: u32, v: i32| {
            if fp4 {
                let x = base + core_matrix_byte(r, kk / 2, lbo);
                smem[x] |= e2m1(v) << (4 * (kk % 2));
            } else {
                smem[base + core_matrix_byte(r, kk, lbo)] = e4m3(v);
            }
        };
        for i in 0..128 {
            for kk in 0..k {
                put(&mut smem, 0, 2048, i, kk, a(i, kk));
            }
        }
        for j in 0..16 {
            for kk in 0..k {
                put(&mut smem, 4096, 256, j, kk, b(j, kk));
            }
        }
        // Scale-factor ids: fp8 id 1 (one block: byte 1), fp4 id 2 (two blocks: bytes 2, 3);
        // the other bytes hold 0x7f (2^0), which a wrong byte would pick up.
        let id = if fp4 { 2 } else { 1 };
        let cell = |f: &dyn Fn(u32) -> u32| -> u32 {
            (0..4).fold(0u32, |c, byte| {
                let v = if byte >= id && byte < id + blocks {
                    f(byte - id)
                } else {
                    0x7f
                };
                c | v << (8 * byte)
            })
        };
        let mut cells = vec![0u32; 128 * 5];
        for lane in 0..128u32 {
            let l = lane % 32;
            for c in 0..4 {
                cells[(lane * 5 + c) as usize] = cell(&|kb| ea(l + 32 * c, kb));
            }
            cells[(lane * 5 + 4) as usize] = if l < 16 { cell(&|kb| eb(l, kb)) } else { 0 };
        }
        let (kind, types) = if fp4 {
            ("mxf4", (1 << 7) | (1 << 10))
        } else {
            ("mxf8f6f4", 0)
        };
        let idesc: u32 = (id << 4) | types | (2 << 17) | (1 << 23) | (8 << 24) | (id << 29);
        let mut issue = core_matrix_desc(22, 1, 2048);
        issue += "\tadd.u32 %r40, %r22, 4096;\n";
        issue += &core_matrix_desc(40, 2, 256);
        issue += &format!(
            "\tadd.u32 %r41, %r4, 32;\n\tadd.u32 %r42, %r4, 4;\n\tmov.u32 %r43, {idesc};\n\tsetp.eq.u32 %p5, %r1, 1;\n\
             \ttcgen05.mma.cta_group::1.kind::{kind}.block_scale.block32 [%r41], %rd1, %rd2, %r43, [%r4], [%r42], %p5;\n"
        );
        let src = pipe_kernel(9, 5, &issue, 32, 16);
        let (out, codes) = run_pipe(&src, &smem, &cells, 128 * 16)?;
        assert!(codes.is_empty(), "fp4 {fp4}: {codes:?}");
        for i in 0..128u32 {
            for j in 0..16u32 {
                let want: f64 = (0..k)
                    .map(|kk| {
                        let s =
                            2f64.powi(ea(i, kk / vec) as i32 - 127) * 2f64.powi(eb(j, kk / vec) as i32 - 127);
                        (a(i, kk) * b(j, kk)) as f64 * s
                    })
                    .sum();
                let got = f32::from_bits(out[(i * 16 + j) as usize]);
                assert_eq!(got as f64, want, "fp4 {fp4}, row {i}, column {j}");
            }
        }
    }
    Ok(())
}

#[test]
fn tcgen05_cp_lands_each_row_in_its_lanes() -> Result<(), Error> {
    // 128x256b from shared byte 0 (128 rows x 32 bytes, LBO 2048) into columns 0-7; then
    // 32x128b.warpx4 from byte 4096 (32 rows x 16 bytes) into columns 8-11 of every quarter;
    // then 128x128b of the first 16 bytes of the first copy's rows into columns 12-15.
    let smem: Vec<u8> = (0..4608u32).map(|x| (x * 7 + x / 256) as u8).collect();
    let mut issue = core_matrix_desc(22, 1, 2048);
    issue += "\tadd.u32 %r40, %r22, 4096;\n";
    issue += &core_matrix_desc(40, 2, 256);
    issue += "\ttcgen05.cp.cta_group::1.128x256b [%r4], %rd1;\n\tadd.u32 %r41, %r4, 8;\n\
              \ttcgen05.cp.cta_group::1.warpx4.32x128b [%r41], %rd2;\n\tadd.u32 %r42, %r4, 12;\n\
              \ttcgen05.cp.cta_group::1.128x128b [%r42], %rd1;\n";
    let src = pipe_kernel(9, 0, &issue, 0, 16);
    let (out, codes) = run_pipe(&src, &smem, &[0], 128 * 16)?;
    assert!(codes.is_empty(), "{codes:?}");
    let word = |x: usize| u32::from_le_bytes([smem[x], smem[x + 1], smem[x + 2], smem[x + 3]]);
    for lane in 0..128u32 {
        let at = |c: u32| out[(lane * 16 + c) as usize];
        for c in 0..8u32 {
            let want = word(core_matrix_byte(lane, 4 * c, 2048));
            assert_eq!(at(c), want, "lane {lane}, column {c}");
        }
        for c in 0..4u32 {
            let want = word(4096 + core_matrix_byte(lane % 32, 4 * c, 256));
            assert_eq!(at(8 + c), want, "lane {lane}, column {}", 8 + c);
            let want = word(core_matrix_byte(lane, 4 * c, 2048));
            assert_eq!(at(12 + c), want, "lane {lane}, column {}", 12 + c);
        }
    }
    Ok(())
}

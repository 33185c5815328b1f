//! tcgen05 on the simulated tensor pipe: MMA results against an f64 reference written here
//! (f16/bf16/tf32/fp8/fp4, K-major and MN-major B, every swizzle mode, M 64/128, A from tensor memory,
//! use_acc, f16 accumulators of kind::f16 and kind::f8f6f4, s8/u8 into s32 with kind::i8, block-scaled fp8/fp4 with ue8m0 and nvf4 with ue4m3 factors decoded here, the
//! scale buffers' hardware column counts), tcgen05.cp before an MMA that reads its destination,
//! and tcgen05.commit covering exactly the earlier operations.

mod common;
use bwsim_isa::launch::HostTensor;
use bwsim_sim::{AsyncKind, RunResult, What};
use common::*;
use half::{bf16, f16};

/// One MMA (twice with TWICE: the second accumulates) of TMA-loaded A [M, K] and B (stored
/// [N, K] K-major, or [K, N] MN-major), read back through registers.
const MMA: &str = include_str!("tiles/tcgen05/mma.tile");

/// An element as the tensor core reads it: f16/bf16 exactly, f32 as tf32 (the low 13
/// mantissa bits ignored).
fn operand(t: &HostTensor, i: u64) -> f64 {
    let b = t.get_bits(i);
    match t.dtype {
        bwsim_isa::DType::F16 => f16::from_bits(b as u16).to_f64(),
        bwsim_isa::DType::BF16 => bf16::from_bits(b as u16).to_f64(),
        bwsim_isa::DType::F32 => f32::from_bits(b as u32 & !0x1fff) as f64,
        bwsim_isa::DType::I8 => b as u8 as i8 as f64,
        bwsim_isa::DType::U8 => b as u8 as f64,
        _ => low_precision(t, i),
    }
}

/// out[i, j] = sum_k A[i, k] B(k, j), B(k, j) = b[j, k] (K-major) or b[k, j] (MN-major).
fn reference(a: &HostTensor, b: &HostTensor, b_kmajor: bool, times: f64) -> Vec<f64> {
    let (m, k) = (a.shape[0], a.shape[1]);
    let n = if b_kmajor { b.shape[0] } else { b.shape[1] };
    // B(kk, j) at its element index in `b`.
    let b_at = |kk: u64, j: u64| if b_kmajor { j * k + kk } else { kk * n + j };
    let dot = |i: u64, j: u64| -> f64 {
        (0..k)
            .map(|kk| operand(a, i * k + kk) * operand(b, b_at(kk, j)))
            .sum()
    };
    (0..m)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| times * dot(i, j))
        .collect()
}

fn check_mma(consts: &[(&str, &str)]) {
    let r = run(MMA, consts);
    assert_ok(MMA, &r);
    let inp = inputs(MMA, consts, 1);
    let b_kmajor = !consts.contains(&("B_KMAJOR", "false"));
    let times = if consts.contains(&("TWICE", "true")) {
        2.0
    } else {
        1.0
    };
    let want = reference(&inp[0], &inp[1], b_kmajor, times);
    let out = tensor(&r, "out");
    let got = values(out);
    // The accumulator's precision: f16 rounds each K step's sum (about 2^-11 of partial sums
    // of a few tens here); s32 is exact.
    let (atol, rtol) = match out.dtype {
        bwsim_isa::DType::F16 => (0.1, 1e-2),
        bwsim_isa::DType::I32 => (0.0, 0.0),
        _ => (1e-3, 1e-4),
    };
    if atol == 0.0 {
        assert_eq!(got, want, "{consts:?}: s32 results are exact");
        assert!(want.iter().any(|v| v.abs() > 1.0));
        return;
    }
    let w = worst(&got, &want, atol, rtol);
    assert!(w <= 1.0, "{consts:?}: worst error {w} of the tolerance");
    // Not trivially passing: the reference is far from zero.
    assert!(want.iter().any(|v| v.abs() > 1.0));
}

/// One test per case: `$test` runs `check_mma` with each list of constants in turn.
macro_rules! mma_tests {
    ($($test:ident: $([$($c:expr),*]),+;)*) => {
        $(
            #[test]
            fn $test() {
                $(check_mma(&[$($c),*]);)+
            }
        )*
    };
}

mma_tests! {
    f16_k_major_128x128x64_swizzle_128: [];
    f16_mn_major_b: [("B_KMAJOR", "false"), ("N", "64")], [("B_KMAJOR", "false"), ("N", "32")];
    bf16_m64_swizzle_64: [("DT", "bf16"), ("M", "64"), ("K", "32")];
    f16_n256_swizzle_32: [("N", "256"), ("K", "16")];
    tf32_ignores_the_low_mantissa_bits: [("DT", "f32"), ("K", "32"), ("N", "64")];
    fp8_and_fp4_unscaled_kind_f8f6f4:
        [("DT", "f8e4m3"), ("K", "128")],
        [("DT", "f8e5m2"), ("K", "64"), ("N", "64")],
        [("DT", "f4e2m1"), ("K", "128")];
}

/// The accumulators the PTX ISA gives each kind beside f32: kind::f16 and kind::f8f6f4 into
/// f16 (packed two to a TMEM cell), kind::i8 (s8, u8) into s32.
#[test]
fn f16_and_s32_accumulators() {
    check_mma(&[("ACC", "f16")]);
    check_mma(&[("ACC", "f16"), ("DT", "f8e4m3"), ("K", "128")]);
    check_mma(&[
        ("ACC", "f16"),
        ("DT", "f8e5m2"),
        ("K", "64"),
        ("N", "64"),
        ("TWICE", "true"),
    ]);
    check_mma(&[("ACC", "i32"), ("DT", "i8"), ("K", "128")]);
    check_mma(&[
        ("ACC", "i32"),
        ("DT", "u8"),
        ("K", "64"),
        ("B_KMAJOR", "false"),
        ("N", "64"),
    ]);
}

#[test]
fn a_from_tensor_memory() {
    check_mma(&[("A_TMEM", "true")]);
}

#[test]
fn use_acc_accumulates() {
    check_mma(&[("TWICE", "true")]);
}

/// How MMAs are computed changes no bit: rows split over threads, and results taken from a
/// memo shared by later runs, give the outputs, counters and trace of the plain run.
#[test]
fn memo_and_threads_change_no_bit() {
    use bwsim_sim::mma::{MmaExec, MmaMemo};
    use bwsim_sim::RunOptions;
    for (src, consts) in [
        (MMA, vec![("TWICE", "true")]),
        (MMA, vec![("DT", "f8e4m3"), ("K", "128")]),
        (SCALED, vec![("DT", "f4e2m1"), ("K", "256")]),
    ] {
        let plain = RunOptions {
            seed: 1,
            ..RunOptions::default()
        };
        let want = run_opts(src, &consts, None, &plain);
        assert_ok(src, &want);
        let memo = std::sync::Arc::new(MmaMemo::default());
        let fast = RunOptions {
            mma_exec: MmaExec {
                memo: Some(memo.clone()),
                threads: 3,
                ahead: false,
            },
            ..plain.clone()
        };
        for pass in 0..2 {
            let got = run_opts(src, &consts, None, &fast);
            assert_eq!(
                bits(tensor(&got, "out")),
                bits(tensor(&want, "out")),
                "{consts:?} pass {pass}"
            );
            assert_eq!(got.counters, want.counters, "{consts:?} pass {pass}");
            assert_eq!(
                got.trace.render(None),
                want.trace.render(None),
                "{consts:?} pass {pass}"
            );
        }
        // The second pass took every MMA from the memo.
        assert_eq!(memo.hits(), want.counters.mmas, "{consts:?}");
    }
}

/// MMAs computed ahead on another thread ([`bwsim_sim::mma::MmaExec::ahead`]) give the
/// outputs, counters and trace of the plain run, also when the operands change while the MMA
/// is in flight (then the result computed ahead must be dropped).
#[test]
fn computing_ahead_changes_no_bit() {
    use bwsim_sim::mma::MmaExec;
    use bwsim_sim::RunOptions;
    let ahead = |seed| RunOptions {
        seed,
        mma_exec: MmaExec {
            memo: None,
            threads: 2,
            ahead: true,
        },
        ..RunOptions::default()
    };
    let plain = |seed| RunOptions {
        seed,
        ..RunOptions::default()
    };
    for (src, consts) in [
        (MMA, vec![("TWICE", "true")]),
        (MMA, vec![("A_TMEM", "true"), ("K", "32")]),
        (SCALED, vec![("DT", "f4e2m1"), ("K", "256")]),
    ] {
        let want = run_opts(src, &consts, None, &plain(1));
        assert_ok(src, &want);
        let got = run_opts(src, &consts, None, &ahead(1));
        assert!(
            bits(tensor(&got, "out")) == bits(tensor(&want, "out")),
            "{consts:?}: outputs differ"
        );
        assert_eq!(got.counters, want.counters, "{consts:?}");
        assert_eq!(got.trace.render(None), want.trace.render(None), "{consts:?}");
    }
    // A racy kernel: A's buffer is reloaded with other data while the MMA may be in flight.
    let mut outs = std::collections::HashSet::new();
    for seed in 0..12 {
        let want = run_opts(OVERWRITTEN, &[], None, &plain(seed));
        // The checker reports the race; the run itself completes.
        assert_eq!(want.outcome, bwsim_sim::Outcome::Completed, "seed {seed}");
        let got = run_opts(OVERWRITTEN, &[], None, &ahead(seed));
        assert!(
            bits(tensor(&got, "out")) == bits(tensor(&want, "out")),
            "seed {seed}: outputs differ"
        );
        assert_eq!(got.trace.render(None), want.trace.render(None), "seed {seed}");
        outs.insert(bits(tensor(&want, "out")));
    }
    // Some schedules read the old A, some the new one (or a mix): the race is real.
    assert!(outs.len() > 1, "every schedule gave the same result");
}

/// One 128 x 128 x 64 MMA whose A buffer a second TMA load overwrites without waiting for it.
const OVERWRITTEN: &str = include_str!("tiles/tcgen05/overwritten.tile");

/// Block-scaled MMA (kind::mxf8f6f4 / mxf4 with ue8m0 factors, one per 32 K-elements, or
/// kind::mxf4nvf4 with ue4m3 factors per 16) with the scale factors written to tensor memory
/// through registers.
const SCALED: &str = include_str!("tiles/tcgen05/scaled.tile");

/// OCP MX element decodings, written here from the format tables.
fn low_precision(t: &HostTensor, i: u64) -> f64 {
    let b = t.get_bits(i) as u32;
    match t.dtype {
        bwsim_isa::DType::F8E4M3 => {
            assert_ne!(b & 0x7f, 0x7f, "randn draws no NaN");
            let (s, e, m) = (b >> 7, (b >> 3) & 0xf, b & 7);
            let mag = if e == 0 {
                m as f64 / 8.0 * 2f64.powi(-6)
            } else {
                (1.0 + m as f64 / 8.0) * 2f64.powi(e as i32 - 7)
            };
            if s == 1 {
                -mag
            } else {
                mag
            }
        }
        bwsim_isa::DType::F8E5M2 => f16::from_bits((b as u16) << 8).to_f64(),
        bwsim_isa::DType::F4E2M1 => {
            let mag = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0][(b & 7) as usize];
            if b & 8 != 0 {
                -mag
            } else {
                mag
            }
        }
        bwsim_isa::DType::UE8M0 => 2f64.powi(b as i32 - 127),
        // Unsigned e4m3: the magnitude of f8e4m3, no sign bit.
        bwsim_isa::DType::UE4M3 => {
            let (e, m) = ((b >> 3) & 0xf, b & 7);
            assert_ne!(b & 0x7f, 0x7f, "randint draws no NaN");
            if e == 0 {
                m as f64 / 8.0 * 2f64.powi(-6)
            } else {
                (1.0 + m as f64 / 8.0) * 2f64.powi(e as i32 - 7)
            }
        }
        d => panic!("not a block-scaled type: {d}"),
    }
}

/// Runs SCALED with `consts` and compares against the f64 reference: every product scaled by
/// the factors of its row's and column's K block of `sv` elements.
fn check_scaled(consts: &[(&str, &str)], sv: u64) {
    let r = run(SCALED, consts);
    assert_ok(SCALED, &r);
    let inp = inputs(SCALED, consts, 1);
    let (a, b, sfa, sfb) = (&inp[0], &inp[1], &inp[2], &inp[3]);
    let (m, k, n) = (a.shape[0], a.shape[1], b.shape[0]);
    let nb = k / sv;
    let mut want = Vec::new();
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0;
            for kk in 0..k {
                let scale = low_precision(sfa, i * nb + kk / sv) * low_precision(sfb, j * nb + kk / sv);
                s += low_precision(a, i * k + kk) * low_precision(b, j * k + kk) * scale;
            }
            want.push(s);
        }
    }
    let got = values(tensor(&r, "out"));
    let w = worst(&got, &want, 1e-3, 1e-4);
    assert!(w <= 1.0, "{consts:?}: worst error {w} of the tolerance");
    assert!(want.iter().any(|v| v.abs() > 1.0));
}

#[test]
fn block_scaled_fp8_and_fp4_against_an_f64_reference() {
    for dt in ["f8e4m3", "f8e5m2", "f4e2m1"] {
        check_scaled(&[("DT", dt)], 32);
    }
}

/// 8 K blocks per row: the factors fill two groups of cells (columns 0..4 and 4..8 of each
/// buffer, docs/hardware/tmem-scales.md).
#[test]
fn block_scaled_fp4_with_two_groups_of_factors() {
    check_scaled(&[("DT", "f4e2m1"), ("K", "256")], 32);
}

/// kind::mxf4nvf4: fp4 with ue4m3 factors per 16 K-elements (values 0.5 .. 1.75).
#[test]
fn block_scaled_nvf4_with_ue4m3_factors() {
    check_scaled(
        &[
            ("DT", "f4e2m1"),
            ("SF", "ue4m3"),
            ("SV", "16"),
            ("LO", "48"),
            ("HI", "63"),
        ],
        16,
    );
}

/// The plan gives scale-factor buffers the hardware's column count: ceil(rows / 32) columns per
/// group of four 8-bit factors, so B's factors start 4 columns after A's 128 rows
/// (docs/hardware/tmem-scales.md), and 8 factors per row take twice that.
#[test]
fn scale_buffers_take_the_hardware_columns() {
    for (k, cols) in [("128", 4u32), ("256", 8)] {
        let src = bwsim_isa::SourceFile::new("t.tile", SCALED);
        let kernel = bwsim_isa::parse(&src).expect("parses");
        let opts = bwsim_isa::verify::VerifyOptions {
            target: None,
            overrides: overrides(&[("DT", "f4e2m1"), ("K", k)]),
        };
        let (checked, diags) = bwsim_isa::verify::verify(&kernel, &opts);
        let checked = checked.unwrap_or_else(|| panic!("verifies: {diags:?}"));
        let tmem: Vec<(u32, u32)> = checked
            .allocs
            .iter()
            .filter(|a| matches!(a.kind, bwsim_isa::typeck::AllocKind::Tmem(_)))
            .map(|a| (a.offset, a.size))
            .collect();
        // acc (128 columns), then sfa, then sfb.
        assert_eq!(tmem, vec![(0, 128), (128, cols), (128 + cols, cols)], "K = {k}");
    }
}

/// D = A @ B + C: C arrives by TMA, tcgen05.cp puts it in the accumulator, and the MMA that
/// accumulates on it is issued right after with no wait (seed 10: the tensor pipe runs
/// tcgen05 operations in issue order). Then two MMAs with a commit after each.
const PIPE: &str = include_str!("tiles/tcgen05/pipe.tile");

/// The expected D for the inputs drawn with `seed`.
fn d_reference(seed: u64) -> Vec<f64> {
    let inp = inputs(PIPE, &[], seed);
    let (a, b, c) = (&inp[0], &inp[1], &inp[2]);
    reference(a, b, true, 1.0)
        .into_iter()
        .enumerate()
        .map(|(i, ab)| ab + f32::from_bits(c.get_bits(i as u64) as u32) as f64)
        .collect()
}

#[test]
fn cp_then_mma_runs_in_issue_order() {
    let want = d_reference(1);
    // A slow copy and a fast MMA: the MMA still sees the copied accumulator.
    let mut s = Scripted::default()
        .with(AsyncKind::Cp, &[1000])
        .with(AsyncKind::Mma, &[1, 1]);
    let r = run_sched(PIPE, &[], &mut s);
    assert_ok(PIPE, &r);
    let w = worst(&values(tensor(&r, "out")), &want, 1e-3, 1e-4);
    assert!(w <= 1.0, "worst error {w} of the tolerance");
    for seed in 0..6 {
        let r = run_seed(PIPE, &[], seed);
        assert_ok(PIPE, &r);
        let w = worst(&values(tensor(&r, "out")), &d_reference(seed), 1e-3, 1e-4);
        assert!(w <= 1.0, "seed {seed}: worst error {w}");
    }
}

/// A commit arrives once every EARLIER tcgen05 operation has completed, and does not wait for
/// later ones: with a slow second MMA, the first commit's barrier flips between the two MMAs'
/// completions, and the waiter on it proceeds before the second MMA is done.
#[test]
fn commit_covers_earlier_operations_only() {
    let mut s = Scripted::default()
        .with(AsyncKind::Cp, &[5])
        .with(AsyncKind::Mma, &[10, 2000]);
    let r = run_sched(PIPE, &[], &mut s);
    assert_ok(PIPE, &r);
    let ev = &r.trace.events;
    let completes: Vec<u64> = ev
        .iter()
        .filter(|e| {
            matches!(
                e.what,
                What::Complete {
                    op: "tcgen05.mma",
                    ..
                }
            )
        })
        .map(|e| e.time)
        .collect();
    let flips: Vec<(u32, u64)> = ev
        .iter()
        .filter_map(|e| match e.what {
            What::PhaseFlip { bar, .. } => Some((bar, e.time)),
            _ => None,
        })
        .collect();
    // Barrier 0 flips for the TMA; 1 and 2 for the commits, in that order.
    assert_eq!(flips.len(), 3, "{flips:?}");
    let (first_commit, second_commit) = (flips[1].1, flips[2].1);
    assert_eq!(completes.len(), 2);
    assert!(
        first_commit >= completes[0],
        "the commit arrived before the MMA it covers"
    );
    assert!(
        first_commit < completes[1],
        "the first commit waited for a later MMA"
    );
    assert!(second_commit >= completes[1]);
    let waited = ev
        .iter()
        .filter(|e| matches!(e.what, What::WaitDone { .. }))
        .map(|e| e.time)
        .nth(1)
        .expect("the wait on the first commit's barrier");
    assert!(
        waited < completes[1],
        "the waiter proceeded only after the later MMA"
    );
    let w = worst(&values(tensor(&r, "out")), &d_reference(1), 1e-3, 1e-4);
    assert!(w <= 1.0);
}

/// A CTA pair (cluster of 2) computes D [256, N] = A [256, K] B^T with cta_group::2: CTA r
/// loads A rows 128r.., B rows (N) (N/2)r.., the even CTA issues the MMA after `cluster.sync`,
/// the commit arrives on both CTAs' barrier, each reads back its 128 accumulator rows.
const PAIR: &str = include_str!("tiles/tcgen05/pair.tile");

/// Runs `src` with `consts` on the inputs of `seed` and asserts that it completes cleanly with
/// its `out` within 1e-3 + 1e-4 relative of `reference` of those inputs; the run.
fn run_against(
    src: &str,
    consts: &[(&str, &str)],
    seed: u64,
    reference: impl FnOnce(&[HostTensor]) -> Vec<f64>,
) -> RunResult {
    let r = run_seed(src, consts, seed);
    assert_ok(src, &r);
    let want = reference(&inputs(src, consts, seed));
    let w = worst(&values(tensor(&r, "out")), &want, 1e-3, 1e-4);
    assert!(w <= 1.0, "{consts:?}: worst error {w} of the tolerance");
    r
}

#[test]
fn cta_pair_mma_against_an_f64_reference() {
    for (n, seed) in [("128", 1), ("256", 2), ("32", 3)] {
        // Two clusters (grid 4) compute the same tile: both must be right.
        let r = run_against(PAIR, &[("N", n)], seed, |inp| {
            reference(&inp[0], &inp[1], true, 1.0)
        });
        // The pair's commit arrives on the barrier of both CTAs of each cluster.
        let commit_cta: Vec<u32> = r
            .trace
            .events
            .iter()
            .filter(|e| matches!(e.what, What::Arrive { .. }) && e.unit == bwsim_sim::Unit::Tc)
            .map(|e| e.cta)
            .collect();
        let mut sorted = commit_cta.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2, 3], "one commit arrival per CTA");
    }
}

#[test]
fn cluster_sync_holds_every_cta_until_all_arrive() {
    // Whichever CTA of a pair arrives first blocks until the other arrives.
    let r = run(PAIR, &[]);
    let arrived =
        |cta| cta_event_at(&r, cta, |w| matches!(w, What::Fence { op: "cluster.sync" })).expect("arrived");
    for (even, odd) in [(0, 1), (2, 3)] {
        let last = arrived(even).max(arrived(odd));
        for cta in [even, odd] {
            let passed = cta_event_at(&r, cta, |w| matches!(w, What::Resumed { on: "cluster.sync" }))
                .unwrap_or(arrived(cta));
            assert!(
                passed >= last,
                "CTA {cta} left cluster.sync at {passed} before its peer arrived at {last}"
            );
        }
    }
}

#[test]
fn cta_pair_operations_need_clusters_of_pairs() {
    let r = run(PAIR, &[("CLUSTER", "1")]);
    assert!(!r.ok());
    let d = r
        .diagnostics
        .iter()
        .find(|d| d.code == "cta-pair")
        .expect("cta-pair diagnostic");
    assert!(d.message.contains("even number of CTAs"), "{}", d.message);
}

/// Every pair of a cluster of 2, 4 or 8 CTAs computes its own D_p = A (B_p0 + B_p1)^T with
/// cta_group::2 MMAs; pair 0 multicasts A to every pair, completing on each pair's even CTA's
/// barrier; each pair's commit reaches every CTA (`tiles/tcgen05/pairs.tile`).
const PAIRS: &str = include_str!("tiles/tcgen05/pairs.tile");

/// The tile's output as computed here: out[gp * 256 + l, n] = sum over the two steps k and
/// j < 64 of A[c * 256 + l, j] * B[(gp * 2 + k) * N + n, j], gp the global pair, c its cluster.
fn pairs_reference(a: &HostTensor, b: &HostTensor, cluster: u64, n: u64) -> Vec<f64> {
    let mut out = vec![0.0; (1024 * n) as usize];
    for gp in 0..4 {
        let c = gp * 2 / cluster;
        for l in 0..256 {
            for col in 0..n {
                let mut s = 0.0;
                for k in 0..2 {
                    for j in 0..64 {
                        s += operand(a, (c * 256 + l) * 64 + j)
                            * operand(b, ((gp * 2 + k) * n + col) * 64 + j);
                    }
                }
                out[((gp * 256 + l) * n + col) as usize] = s;
            }
        }
    }
    out
}

#[test]
fn every_pair_of_a_cluster_computes_its_own_tile() {
    for (cluster, seed) in [("2", 1), ("4", 2), ("8", 3)] {
        let size = cluster.parse().expect("a number");
        let r = run_against(PAIRS, &[("CLUSTER", cluster)], seed, |inp| {
            pairs_reference(&inp[0], &inp[1], size, 128)
        });
        // Each pair's commit of each step arrives once on every CTA of its cluster.
        let pairs = cluster.parse::<usize>().unwrap() / 2;
        let mut per_cta = [0usize; 8];
        for e in r.trace.events.iter() {
            if matches!(e.what, What::Arrive { .. }) && e.unit == bwsim_sim::Unit::Tc {
                per_cta[e.cta as usize] += 1;
            }
        }
        assert_eq!(per_cta, [2 * pairs; 8], "cluster of {cluster}");
    }
}

#[test]
fn two_pairs_sharing_a_multicast_need_each_others_commits() {
    for cluster in ["4", "8"] {
        let found = explore(PAIRS, &[("CLUSTER", cluster)], 12);
        let msgs: Vec<String> = found.iter().map(|f| f.diagnostic.message.clone()).collect();
        assert!(found.is_empty(), "cluster of {cluster}: {msgs:?}");
    }
    // Commits to the pair only: pair 0 multicasts the next A into the other pairs while their
    // MMA may still read the previous one.
    let found = explore(PAIRS, &[("MCAST", "0")], 12);
    let (line, _) = line_col_of(PAIRS, "tma.load a_desc");
    let hit = found.iter().find(|f| {
        f.diagnostic.code.as_str() == "write-while-in-flight"
            && PAIRS[..f.diagnostic.primary.span.start as usize].lines().count() == line
    });
    assert!(
        hit.is_some(),
        "{:?}",
        found.iter().map(|f| &f.diagnostic.message).collect::<Vec<_>>()
    );
    let d = &hit.unwrap().diagnostic;
    let text = format!("{} {:?} {:?}", d.message, d.labels, d.notes);
    assert!(text.contains("rank"), "the finding names the CTAs' ranks: {text}");
}

/// Scale-factor buffers hold 8-bit factors: anything wider is a `tmem-layout` error.
#[test]
fn scale_buffers_must_hold_8_bit_factors() {
    for (dt, want) in [("f32", Some("tmem-layout")), ("ue8m0", None), ("ue4m3", None)] {
        let text = format!(
            "kernel k {{\n  target sm_100a\n  num_warps 4\n  let sa = tmem.alloc {dt}[128, 4], scales=true\n}}\n"
        );
        let src = bwsim_isa::SourceFile::new("t.tile", &text);
        let kernel = bwsim_isa::parse(&src).expect("parses");
        let (_, diags) = bwsim_isa::verify::verify(&kernel, &Default::default());
        let codes: Vec<&str> = diags.iter().map(|d| d.code.as_str()).collect();
        match want {
            Some(code) => assert!(codes.contains(&code), "{dt}: {codes:?}"),
            None => assert!(codes.is_empty(), "{dt}: {codes:?}"),
        }
    }
}

/// `tmem.reinterpret`: P (f16, packed two to a column) written over S (f32) lands in S's first
/// half of columns, the even element in the low 16 bits; S's other columns keep their values.
const REINTERPRET: &str = include_str!("tiles/tcgen05/reinterpret.tile");

#[test]
fn p_written_over_s_packs_two_f16_per_column() {
    let r = run_ok(REINTERPRET, &[]);
    let b = bits(tensor(&r, "out"));
    for row in 0..128u64 {
        for col in 0..64u64 {
            let got = b[(row * 64 + col) as usize];
            let want = if col < 32 {
                // Elements 2 col and 2 col + 1 of P's row, low half first.
                let lo = f16::from_f64((2 * col) as f64).to_bits() as u64;
                let hi = f16::from_f64((2 * col + 1) as f64).to_bits() as u64;
                lo | hi << 16
            } else {
                ((row * 64 + col) as f32).to_bits() as u64
            };
            assert_eq!(got, want, "row {row}, column {col}");
        }
    }
}

#[test]
fn a_reinterpret_larger_than_its_allocation_is_refused() {
    let src = REINTERPRET.replace(
        "tmem.reinterpret s_tmem, f16[128, 64]",
        "tmem.reinterpret s_tmem, f32[128, 128]",
    );
    let file = bwsim_isa::SourceFile::new("t.tile", src.as_str());
    let k = bwsim_isa::parse(&file).expect("parses");
    let env = bwsim_isa::consts::ConstEnv::new(&k, bwsim_isa::Target::Sm100a, &[]).expect("constants");
    let (_, d) = bwsim_isa::typeck::check(&k, env);
    assert!(
        d.iter()
            .any(|d| d.code == "tmem-reinterpret" && d.message.contains("needs 128 TMEM columns")),
        "{:?}",
        d.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
}

//! Every bundled kernel lowers for every target it lists, in its default configuration and in
//! the representative configurations of `bwsim_kernels::configs`, and the real ptxas
//! assembles the result with zero errors and zero warnings.
//!
//! ptxas comes from `BWSIM_PTXAS`, `PATH` or `.tools/py` (`bash scripts/test` installs it); a
//! machine without it fails here with the reason, it does not skip.

mod common;

use bwsim_backends::ptxas::{self, PtxasError};
use bwsim_isa::Target;

/// One (kernel, target, configuration) to assemble.
struct Job {
    kernel: &'static str,
    target: Target,
    consts: &'static [&'static str],
}

fn jobs() -> Vec<Job> {
    let mut jobs = Vec::new();
    for k in bwsim_kernels::all() {
        for t in common::targets(k.name) {
            jobs.push(Job {
                kernel: k.name,
                target: t,
                consts: &[],
            });
            for c in bwsim_kernels::configs::of(k.name) {
                jobs.push(Job {
                    kernel: k.name,
                    target: t,
                    consts: c.consts,
                });
            }
        }
    }
    jobs
}

fn assemble(j: &Job) -> Result<(), String> {
    let m = common::lower(j.kernel, j.target, j.consts)?;
    match ptxas::assemble(&m, true) {
        Ok(_) => Ok(()),
        Err(PtxasError::NotFound) => Err(PtxasError::NotFound.to_string()),
        Err(e) => {
            let detail = match &e {
                PtxasError::Rejected { messages, .. } => messages
                    .iter()
                    .map(|m| {
                        format!(
                            "\n    {} line {:?} ({}): {}",
                            if m.error { "error" } else { "warning" },
                            m.line,
                            m.op.as_deref().unwrap_or("?"),
                            m.text
                        )
                    })
                    .collect::<String>(),
                _ => String::new(),
            };
            Err(format!("{} {} {:?}: {e}{detail}", j.kernel, j.target, j.consts))
        }
    }
}

#[test]
fn every_kernel_and_configuration_assembles_cleanly() {
    // Fail loudly, once, when ptxas is missing.
    if let Err(e) = ptxas::ptxas_path() {
        panic!("{e}");
    }
    let jobs = jobs();
    // Every bundled kernel is covered, with its default configuration, for each target.
    for k in bwsim_kernels::all() {
        for t in common::targets(k.name) {
            assert!(
                jobs.iter()
                    .any(|j| j.kernel == k.name && j.target == t && j.consts.is_empty()),
                "{} {t} is not covered",
                k.name
            );
        }
    }
    let failures: Vec<String> =
        bwsim_isa::pool::map_ordered(&jobs, bwsim_isa::pool::threads(4), |_, j| assemble(j))
            .into_iter()
            .filter_map(Result::err)
            .collect();
    assert!(
        failures.is_empty(),
        "{} of {} kernel configurations failed to lower or assemble:\n{}",
        failures.len(),
        jobs.len(),
        failures.join("\n")
    );
    assert!(
        jobs.len() >= 60,
        "expected a representative sweep, got {} configurations",
        jobs.len()
    );
}

/// The verifier refuses tcgen05 and gather4 on sm_90a before anything is lowered.
#[test]
fn blackwell_only_kernels_are_refused_for_sm_90a() {
    let refused = |name: &str, code: &str| {
        let err = common::lower(name, Target::Sm90a, &[]).expect_err("sm_90a must be refused");
        assert!(err.contains("verifier rejected it"), "{name}: {err}");
        assert!(err.contains(code), "{name}: expected `{code}` in {err}");
    };
    refused("tcgen05_copy", "arch-tcgen05");
    refused("matmul_warp_specialized", "arch-tcgen05");
    refused("gemm_async", "arch-tcgen05");
    refused("async_gather", "arch-gather");
    refused("async_scatter", "arch-gather");

    // A kernel that lists both targets but uses tcgen05 unconditionally is refused too, by the
    // arch rule itself rather than by the target list.
    let src = "kernel k {\n  target sm_100a, sm_90a\n  num_warps 4\n  let t = tmem.alloc f32[128, 32]\n  let bar = mbar.alloc 1\n  mbar.init bar[0], 1\n  tcgen05.commit bar[0]\n}\n";
    let k = bwsim_isa::parser::parse(src).expect("parses");
    let (checked, diags) = bwsim_isa::verify::verify(
        &k,
        &bwsim_isa::verify::VerifyOptions {
            target: Some(Target::Sm90a),
            overrides: vec![],
        },
    );
    assert!(checked.is_none());
    assert!(diags.iter().any(|d| d.code == "arch-tcgen05"), "{diags:?}");
    assert!(diags.iter().all(|d| d.code != "arch-target"), "{diags:?}");
}

/// ptxas errors come back attached to the IR operation whose PTX they name.
#[test]
fn ptxas_errors_point_at_the_ir_operation() {
    let mut m = common::lower("elementwise_add_tma", Target::Sm90a, &[]).expect("lowers");
    // Corrupt the first TMA load line and check that the error maps back to `tma.load`.
    let idx = m
        .text
        .lines()
        .position(|l| l.contains("cp.async.bulk.tensor.2d.shared::cluster"))
        .expect("a TMA load");
    let mut lines: Vec<String> = m.text.lines().map(String::from).collect();
    lines[idx] = lines[idx].replace("cp.async.bulk.tensor.2d", "cp.async.bulk.tensor.7d");
    m.text = lines.join("\n") + "\n";
    let e = ptxas::assemble(&m, true).expect_err("the corrupted module must be rejected");
    let PtxasError::Rejected { messages, .. } = &e else {
        panic!("unexpected error {e}")
    };
    let first = messages.iter().find(|x| x.error).expect("an error line");
    assert_eq!(first.line, Some(idx + 1), "{messages:?}");
    assert_eq!(first.op.as_deref(), Some("tma.load"));
    let d = e.diagnostics(bwsim_isa::Span::new(0, 0));
    assert!(d
        .iter()
        .any(|d| d.code == "ptxas" && d.primary.span == first.span.unwrap_or_default()));
}

/// The cluster barrier's split halves, the cluster special registers and a remote mbarrier
/// arrival, and loads and stores of a peer CTA's shared memory lower for both targets and
/// assemble cleanly. A kernel with remote arrivals waits with a cluster-scope acquire (the
/// peer's arrival releases at cluster scope); one without keeps the default `.acquire.cta`.
#[test]
fn cluster_barriers_and_remote_arrivals_assemble() {
    let src = "kernel k {\n  target sm_100a, sm_90a\n  num_warps 4\n  param out: ptr(i32)\n  layout l = blocked([1], [32], [4], [0])\n  let bar = mbar.alloc 1\n  mbar.init bar[0], 1\n  fence.mbarrier_init\n  cluster.arrive relaxed=true\n  cluster.wait\n  let right = (cluster_rank() + 1) % cluster_size()\n  mbar.arrive bar[0], cta=right\n  mbar.wait bar[0], 0\n  cluster.arrive\n  cluster.wait\n  let offs = arange(0, 128, l)\n  global.store out, program_id(0) * 128 + offs, offs * 0 + cluster_rank()\n}\n";
    for target in [Target::Sm100a, Target::Sm90a] {
        let m = common::lower_source(src, target).expect("lowers");
        for want in [
            "barrier.cluster.arrive.relaxed.aligned",
            "barrier.cluster.arrive.release.aligned",
            "barrier.cluster.wait.acquire.aligned",
            "%cluster_ctarank",
            "%cluster_nctarank",
            "mapa.shared::cluster.u32",
            "mbarrier.arrive.release.cluster.shared::cluster.b64",
            "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64",
            ".explicitcluster",
        ] {
            assert!(m.text.contains(want), "{target}: no `{want}` in\n{}", m.text);
        }
        let local = common::lower_source(&src.replace(", cta=right", ""), target).expect("lowers");
        assert!(
            local.text.contains("mbarrier.try_wait.parity.shared::cta.b64")
                && !local.text.contains(".acquire.cluster"),
            "{target}: a kernel without remote arrivals keeps the default wait:\n{}",
            local.text
        );
        if let Err(e) = ptxas::assemble(&m, true) {
            panic!("{target}: {e}");
        }
    }
    // Distributed shared memory: each thread's addresses mapped into the peer CTA's window.
    let peer = src.replace(
        "  mbar.wait bar[0], 0\n",
        "  mbar.wait bar[0], 0\n  let buf = smem.alloc i32[128], plain\n  smem.store buf, arange(0, 128, l), cta=right\n  cluster.arrive\n  cluster.wait\n  let back = smem.load buf, layout=l, cta=right\n  global.store out, offs_back, back\n",
    ).replace("global.store out, offs_back", "global.store out, program_id(0) * 128 + arange(0, 128, l)");
    for target in [Target::Sm100a, Target::Sm90a] {
        let m = common::lower_source(&peer, target).expect("lowers");
        for want in ["st.shared::cluster.b32", "ld.shared::cluster.b32"] {
            assert!(m.text.contains(want), "{target}: no `{want}` in\n{}", m.text);
        }
        if let Err(e) = ptxas::assemble(&m, true) {
            panic!("{target}: {e}");
        }
    }
}

/// Four-lane fp8 arithmetic (`add4`, `mul4`, `fma4`) lowers for sm_100a to the `.rn` forms,
/// which ptxas assembles; sm_90a has no such instruction and the lowering says so.
#[test]
fn four_lane_fp8_arithmetic_is_sm100a_only() {
    let src = "kernel k {\n  target sm_100a, sm_90a\n  num_warps 4\n  param x: ptr(f8e4m3)\n  param z: ptr(f8e5m2)\n  param out: ptr(f8e5m2)\n  layout l = blocked([4], [32], [4], [0])\n  let offs = arange(0, 512, l)\n  let a = global.load x, offs\n  let c = global.load z, offs\n  let s = add4(a, a, f8e4m3)\n  let p = mul4(s, a, f8e4m3)\n  let r = fma4(p, a, c, f8e5m2)\n  let q = add4(a, c, f8e5m2)\n  global.store out, offs, add4(r, q, f8e5m2)\n}\n";
    let m = common::lower_source(src, Target::Sm100a).expect("lowers for sm_100a");
    for want in [
        "add.rn.e4m3x4.e4m3x4",
        "mul.rn.e4m3x4.e4m3x4.e4m3x4",
        "fma.rn.e5m2x4.e4m3x4.e4m3x4",
        "add.rn.e5m2x4.e4m3x4",
        "add.rn.e5m2x4.e5m2x4",
    ] {
        assert!(m.text.contains(want), "no `{want}` in\n{}", m.text);
    }
    if let Err(e) = ptxas::assemble(&m, true) {
        let detail = match &e {
            PtxasError::Rejected { messages, .. } => format!("{messages:?}"),
            _ => String::new(),
        };
        panic!("{e}: {detail}\n{}", m.text);
    }
    let e = common::lower_source(src, Target::Sm90a).expect_err("sm_90a has no four-lane fp8 arithmetic");
    let text = e.to_string();
    assert!(
        text.contains("add4") && text.contains("sm_100a only") && text.contains("sm_90a"),
        "{text}"
    );
}

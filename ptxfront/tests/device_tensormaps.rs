//! Tensor maps built on the device: Triton 3.9's PTX of tests/gluon/device_descriptors.py
//! (four groups of rows of a [130, 128] f32 matrix, each program building a tensor map of its
//! group's rows of x and of out with `tensormap.replace`, copying each to its global scratch
//! slot with `tensormap.cp_fenceproxy`, acquiring it with `fence.proxy.tensormap::generic`,
//! then loading, scaling and storing its rows through them). Compared with the kernel's
//! meaning computed here; the bug cases drop the acquires (`stale-tensormap` at the copies,
//! with the map's writes) and write a stride `tensormap.replace` does not take.

mod common;

use bwsim_isa::Code;
use bwsim_ptxfront::machine::{self, Options};
use bwsim_ptxfront::{compile, launch, Arg, Error, Launch, Program};
use common::*;

const ROWS: usize = 130;
const COLS: usize = 128;
const STARTS: [i32; 5] = [0, 32, 65, 97, 130];

/// A loaded kernel, its launch, its buffers, and the x and scales they hold.
struct Setup {
    p: Program,
    l: Launch,
    bufs: Vec<Vec<u8>>,
    x: Vec<f32>,
    scales: Vec<f32>,
}

fn setup(src: &str) -> Result<Setup, Error> {
    let p = compile(src, "grouped_scale_kernel")?;
    let x = randn(ROWS * COLS, 7);
    let scales = randn(4, 8);
    // x, out, starts, scales, N, the global scratch (one 256-byte slot per program: its two
    // maps), the profile scratch.
    let bufs = vec![
        f32_bytes(&x),
        vec![0; 4 * ROWS * COLS],
        i32_bytes(&STARTS),
        f32_bytes(&scales),
        vec![0; 4 * 256],
    ];
    let args = vec![
        Arg::Buffer(0),
        Arg::Buffer(1),
        Arg::Buffer(2),
        Arg::Buffer(3),
        Arg::U32(COLS as u32),
        Arg::Buffer(4),
        Arg::U64(0),
    ];
    let mut l = Launch::new([4, 1, 1], [128, 1, 1], args);
    l.dynamic_shared = launch::shared(src)?;
    Ok(Setup {
        p,
        l,
        bufs,
        x,
        scales,
    })
}

fn fixture() -> Result<String, Error> {
    triton_ptx(env!("CARGO_MANIFEST_DIR"), "device_descriptors", "sm_100a")
}

#[test]
fn each_program_copies_its_group_through_the_maps_it_built() -> Result<(), Error> {
    let Setup {
        p,
        l,
        mut bufs,
        x,
        scales,
    } = setup(&fixture()?)?;
    let o = machine::run(&p, &l, &mut bufs, &Options { seed: 1, check: true })?;
    assert!(o.findings.is_empty(), "{:?}", o.findings);
    let out = bytes_f32(&bufs[1]);
    for g in 0..4 {
        for r in STARTS[g] as usize..STARTS[g + 1] as usize {
            for c in 0..COLS {
                let want = x[r * COLS + c] * scales[g];
                assert_eq!(out[r * COLS + c].to_bits(), want.to_bits(), "row {r} col {c}");
            }
        }
    }
    Ok(())
}

#[test]
fn a_copy_through_a_map_not_acquired_is_stale() -> Result<(), Error> {
    let src: String = fixture()?
        .lines()
        .filter(|l| !l.contains("fence.proxy.tensormap::generic.acquire"))
        .map(|l| format!("{l}\n"))
        .collect();
    let Setup { p, l, bufs, .. } = setup(&src)?;
    let mut found: Vec<(String, String)> = machine::check(&p, &l, &bufs, 1)?
        .iter()
        .filter(|f| f.code == Code::StaleTensormap)
        .map(|f| (p.place(f.pc), p.place(f.with[0])))
        .collect();
    found.sort();
    found.dedup();
    // The load of x (line 43) through the map written at line 29, the store of out (line 51)
    // through the one written at line 31: as the TTGIR's check reports them.
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0].0.contains("device_descriptors.py:43") && found[0].1.contains("device_descriptors.py:29"),
        "{found:?}"
    );
    assert!(
        found[1].0.contains("device_descriptors.py:51") && found[1].1.contains("device_descriptors.py:31"),
        "{found:?}"
    );
    Ok(())
}

#[test]
fn a_stride_tensormap_replace_does_not_take_is_refused_at_the_copy() -> Result<(), Error> {
    // 100 bytes: not a multiple of 16.
    let src = fixture()?.replacen(
        "global_stride.shared::cta.b1024.b64 [ %rd16 + 0 ], 0x0, %rd21;",
        "global_stride.shared::cta.b1024.b64 [ %rd16 + 0 ], 0x0, 100;",
        1,
    );
    let Setup { p, l, mut bufs, .. } = setup(&src)?;
    let message = runtime_error(&p, &l, &mut bufs, "a map with a 100-byte stride");
    assert!(
        message.contains("invalid tensor map") && message.contains("byte stride 100"),
        "{message}"
    );
    Ok(())
}

/// The fixture with the interleave and fill-mode writes Triton 3.6 to 3.8 add after the
/// swizzle mode of each map, with the codes `interleave` and `fill`.
fn with_interleave_and_fill(interleave: u32, fill: u32) -> Result<String, Error> {
    let mut src = fixture()?;
    for reg in ["%rd16", "%rd19"] {
        let swizzle =
            format!("tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [ {reg} + 0 ], 0x3;");
        assert!(src.contains(&swizzle), "the fixture writes {swizzle}");
        src = src.replacen(
            &swizzle,
            &format!(
                "{swizzle}\n\ttensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [ {reg} + 0 ], {interleave};\n\ttensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [ {reg} + 0 ], {fill};"
            ),
            1,
        );
    }
    Ok(src)
}

#[test]
fn no_interleave_and_zero_fill_are_the_maps_copies_model() -> Result<(), Error> {
    // Codes 0 and 0 (what Triton writes): the copies run as without the writes.
    let Setup {
        p,
        l,
        mut bufs,
        x,
        scales,
    } = setup(&with_interleave_and_fill(0, 0)?)?;
    let o = machine::run(&p, &l, &mut bufs, &Options { seed: 1, check: true })?;
    assert!(o.findings.is_empty(), "{:?}", o.findings);
    let out = bytes_f32(&bufs[1]);
    let r = STARTS[0] as usize;
    assert_eq!(out[r * COLS].to_bits(), (x[r * COLS] * scales[0]).to_bits());
    // A 16-byte interleave (code 1) or NaN fill (code 1) is not modelled: the copy stops.
    for (interleave, fill, says) in [(1, 0, "interleave code 1"), (0, 1, "fill mode 1")] {
        let Setup { p, l, mut bufs, .. } = setup(&with_interleave_and_fill(interleave, fill)?)?;
        let message = runtime_error(&p, &l, &mut bufs, says);
        assert!(message.contains(says), "{message}");
    }
    Ok(())
}

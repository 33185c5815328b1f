//! Predicts every seed benchmark configuration with the timing model and prints the rows of
//! docs/timing.md's validation table (markdown), one `bwsim time` command per row; with
//! `sensitivity`, the table of how a few of those rows move with the L2 bandwidth, the
//! least certain figure of the chip tables.
//!
//! `cargo run --release -p bwsim-sim --example timing_table [-- h100|gb200|all|sensitivity]`
use bwsim_isa::consts::Override;
use bwsim_sim::chips::{self, Chip};
use bwsim_sim::timing::{time_source, TimeOptions};

struct Row {
    group: &'static str,
    kernel: &'static str,
    consts: Vec<(&'static str, String)>,
}

fn src(kernel: &str) -> String {
    let path = format!("{}/../kernels/tiles/{kernel}.tile", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn row(group: &'static str, kernel: &'static str, consts: &[(&'static str, i64)]) -> Row {
    Row {
        group,
        kernel,
        consts: consts.iter().map(|(n, v)| (*n, v.to_string())).collect(),
    }
}

fn rows(hopper: bool) -> Vec<Row> {
    let mut r = Vec::new();
    let mnk = [("M", 8192), ("N", 8192), ("K", 16384)];
    let ew = [
        ("XNUMEL", 32768),
        ("YNUMEL", 32768),
        ("XBLOCK", 64),
        ("YBLOCK", 128),
    ];
    // Tutorial 08: elementwise adds, 32768 x 32768 f32, XBLOCK 64, YBLOCK 128, 3 load buffers,
    // 1 store buffer, 4 warps.
    let mut c = ew.to_vec();
    c.extend([("NUM_BUFFERS", 3), ("NUM_WARPS", 4)]);
    r.push(row("elementwise add", "elementwise_add_tma", &c));
    let mut c = ew.to_vec();
    c.extend([
        ("NUM_LOAD_BUFFERS", 3),
        ("NUM_STORE_BUFFERS", 1),
        ("NUM_WARPS", 4),
    ]);
    r.push(row("elementwise add", "elementwise_add_ws", &c));
    // Tutorial 07: pipelined and persistent matmul, (BLOCK_K, buffers) x warps.
    for kernel in ["matmul_pipelined", "persistent_matmul"] {
        for (bk, nb) in [(128, 2), (64, 3), (64, 4)] {
            for w in [4, 8] {
                let mut c = mnk.to_vec();
                c.extend([("BLOCK_K", bk), ("NUM_BUFFERS", nb), ("NUM_WARPS", w)]);
                r.push(row("BLOCK_K / buffers / warps", kernel, &c));
            }
        }
    }
    // Tutorial 07: grouped scheduler, GROUP_SIZE_M 1..8.
    let (nb, w) = if hopper { (3, 8) } else { (4, 4) };
    for g in [1, 2, 4, 6, 8] {
        let mut c = mnk.to_vec();
        c.extend([
            ("NUM_BUFFERS", nb),
            ("NUM_WARPS", w),
            ("SCHEDULER", 1),
            ("GROUP_SIZE_M", g),
        ]);
        r.push(row("GROUP_SIZE_M", "persistent_matmul", &c));
    }
    // Tutorial 07: K sweep, nonpersistent / persistent / persistent pipelined; Hopper uses the
    // row-major scheduler, Blackwell the grouped one (8) and STEALB with 4 buffers.
    let sched = if hopper { 0 } else { 1 };
    for k in [512, 1024, 2048, 4096, 8192, 16384] {
        let base = [
            ("M", 8192),
            ("N", 8192),
            ("K", k),
            ("NUM_BUFFERS", nb),
            ("NUM_WARPS", w),
        ];
        r.push(row("K sweep", "matmul_pipelined", &base));
        let mut c = base.to_vec();
        c.extend([("SCHEDULER", sched), ("GROUP_SIZE_M", 8)]);
        r.push(row("K sweep", "persistent_matmul", &c));
        let mut c = c.clone();
        if !hopper {
            c.push(("STEALB", 1));
        }
        r.push(row("K sweep", "persistent_matmul_pipelined", &c));
        if !hopper {
            // Tutorial 08: warp-specialized, 4 buffers, SUBTILE_FACTOR 4, grouped(8).
            r.push(row(
                "K sweep",
                "matmul_warp_specialized",
                &[
                    ("M", 8192),
                    ("N", 8192),
                    ("K", k),
                    ("NUM_BUFFERS", 4),
                    ("SCHEDULER", 1),
                    ("GROUP_SIZE_M", 8),
                ],
            ));
        }
    }
    r
}

fn overrides(r: &Row) -> Vec<Override> {
    r.consts
        .iter()
        .map(|(n, v)| Override {
            name: n.to_string(),
            // STEALB is a bool constant.
            value: if *n == "STEALB" {
                (v == "1").to_string()
            } else {
                v.clone()
            },
        })
        .collect()
}

fn config(r: &Row) -> String {
    r.consts
        .iter()
        .filter(|(n, _)| !matches!(*n, "M" | "N" | "XNUMEL" | "YNUMEL"))
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn command(r: &Row, chip: &Chip) -> String {
    let consts: String = overrides(r)
        .iter()
        .map(|o| format!(" --const {}={}", o.name, o.value))
        .collect();
    format!(
        "`bwsim time {} --chip {}{} --timing-only`",
        r.kernel, chip.name, consts
    )
}

/// Time one row; print it, or return the diagnostics' first message.
fn print_row(chip: &Chip, r: &Row, note: &str) -> Option<String> {
    let opts = TimeOptions::new(chip);
    match time_source(&src(r.kernel), &overrides(r), &opts) {
        Ok(t) => {
            let rep = &t.report;
            let perf = match (rep.tflops, rep.tbps) {
                (Some(f), _) => format!("{f:.0} TFLOP/s"),
                (_, Some(b)) => format!("{b:.2} TB/s"),
                _ => String::new(),
            };
            let mut crit = rep.critical.split(" (").next().unwrap_or("").to_string();
            if crit.starts_with("latency") {
                crit = "latency".into();
            }
            if rep.needs.spills {
                // Hardware would spill the accumulator; the model does not time spills.
                crit.push_str(" (spills)");
            }
            println!(
                "| {}: {}{} | {} | {:.0} | {:.1} | {} | {:.0} % | {} | {} |",
                r.group,
                note,
                config(r),
                r.kernel,
                rep.cycles,
                rep.microseconds,
                perf,
                100.0 * rep.l2_hit_rate,
                crit,
                command(r, chip)
            );
            None
        }
        Err(d) => Some(d.first().map(|d| d.message.clone()).unwrap_or_default()),
    }
}

fn run(chip: &Chip) {
    let hopper = chip.name.starts_with('h');
    println!("\n### {}\n", chip.name);
    println!(
        "| configuration | kernel | cycles | time (µs) | TFLOP/s or TB/s | L2 hit | critical | command |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in rows(hopper) {
        let Some(err) = print_row(chip, &r, "") else {
            continue;
        };
        println!(
            "| {}: {} | {} | not timed: {} | | | | | {} |",
            r.group,
            config(&r),
            r.kernel,
            err,
            command(&r, chip)
        );
        // The grouped scheduler's next-tile arithmetic past the last tile divides by zero in
        // the persistent pipelined kernel; time the row-major order instead and say so.
        if r.consts.iter().any(|(n, v)| *n == "SCHEDULER" && v == "1") {
            let mut alt = Row {
                group: r.group,
                kernel: r.kernel,
                consts: r.consts.clone(),
            };
            for c in &mut alt.consts {
                if c.0 == "SCHEDULER" {
                    c.1 = "0".into();
                }
            }
            alt.consts.retain(|c| c.0 != "GROUP_SIZE_M");
            if let Some(e) = print_row(chip, &alt, "(substitute) ") {
                println!(
                    "| {}: (substitute) {} | {} | not timed: {e} | | | | | |",
                    r.group,
                    config(&alt),
                    r.kernel
                );
            }
        }
    }
}

/// A few rows of `rows`, timed with the chip's L2 bandwidth scaled: what calibrating that one
/// figure can change.
fn sensitivity(chip: &Chip) {
    let hopper = chip.name.starts_with('h');
    let pick = |r: &Row| {
        let has = |n: &str, v: &str| r.consts.iter().any(|(a, b)| *a == n && b == v);
        has("K", "16384")
            && (r.group == "GROUP_SIZE_M" && (has("GROUP_SIZE_M", "1") || has("GROUP_SIZE_M", "8"))
                || r.group == "BLOCK_K / buffers / warps"
                    && r.kernel == "matmul_pipelined"
                    && has("NUM_WARPS", if hopper { "8" } else { "4" })
                    && !has("NUM_BUFFERS", "3")
                || r.group == "K sweep" && r.kernel == "matmul_warp_specialized")
    };
    let scales = [1.0, 1.5, 2.0, 1e6];
    println!("\n### {}: L2 bandwidth sensitivity\n", chip.name);
    println!(
        "| configuration | kernel | {} |",
        scales
            .iter()
            .map(|&f| if f > 100.0 {
                "L2 unlimited".to_string()
            } else {
                format!("L2 x {f} ({:.0} B/cycle)", f * chip.l2_bytes_per_cycle)
            })
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|---|{}", "---|".repeat(scales.len()));
    for r in rows(hopper).iter().filter(|r| pick(r)) {
        let cells: Vec<String> = scales
            .iter()
            .map(|&f| {
                let c = Chip {
                    l2_bytes_per_cycle: f * chip.l2_bytes_per_cycle,
                    ..*chip
                };
                match time_source(&src(r.kernel), &overrides(r), &TimeOptions::new(&c)) {
                    Ok(t) => {
                        let rep = &t.report;
                        let crit = rep.critical.split(" (").next().unwrap_or("");
                        let crit = if crit.starts_with("latency") {
                            "latency"
                        } else {
                            crit
                        };
                        format!(
                            "{:.1} µs, {:.0} TFLOP/s, {}",
                            rep.microseconds,
                            rep.tflops.unwrap_or(0.0),
                            crit
                        )
                    }
                    Err(d) => format!(
                        "not timed: {}",
                        d.first().map(|d| d.message.as_str()).unwrap_or("")
                    ),
                }
            })
            .collect();
        println!(
            "| {}: {} | {} | {} |",
            r.group,
            config(r),
            r.kernel,
            cells.join(" | ")
        );
    }
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_else(|| "all".into());
    if which == "sensitivity" {
        sensitivity(&chips::H100);
        sensitivity(&chips::GB200);
        return;
    }
    for c in chips::CHIPS {
        if which == "all" && (c.name == "h100" || c.name == "gb200") || which == c.name {
            run(c);
        }
    }
}

//! Structural checks on the PTX of warp-specialized kernels: worker warps skip the code before
//! `warp_specialize`, so a register a worker reads must be written inside that worker's own
//! section (a value computed by the default partition reaches it through shared memory).

mod common;

use bwsim_isa::Target;
use std::collections::HashSet;

/// Registers (`%r12`) in a piece of PTX text.
fn regs(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '%'))
        .filter(|t| t.starts_with('%') && t.len() > 2 && t[1..].starts_with(['r', 'f', 'h', 'p']))
        .collect()
}

/// The registers an instruction writes: its first operand (or the `{...}` list of a load,
/// or the predicate of `elect.sync`), for the instructions that write one.
fn defs(ins: &str) -> Vec<&str> {
    let body = ins.trim().trim_end_matches(';');
    let body = match body.strip_prefix('@') {
        Some(r) => r.split_once(' ').map(|x| x.1).unwrap_or(r),
        None => body,
    };
    let Some((op, rest)) = body.split_once(' ') else {
        return vec![];
    };
    let writes = !(op.starts_with("st.")
        || op.starts_with("bra")
        || op.starts_with("bar.")
        || op.starts_with("cp.")
        || op.starts_with("fence")
        || op.starts_with("tcgen05.st")
        || op.starts_with("tcgen05.mma")
        || op.starts_with("tcgen05.cp")
        || op.starts_with("tcgen05.commit")
        || op.starts_with("tcgen05.dealloc")
        || op.starts_with("tcgen05.alloc")
        || op.starts_with("mbarrier.init")
        || op.starts_with("mbarrier.arrive")
        || op.starts_with("mbarrier.expect_tx")
        || op.starts_with("mbarrier.complete_tx")
        || op.starts_with("mbarrier.inval")
        || op.starts_with("setmaxnreg"));
    if !writes {
        return vec![];
    }
    let first = if rest.trim_start().starts_with('{') {
        rest.split('}').next().unwrap_or("")
    } else {
        rest.split(',').next().unwrap_or("")
    };
    regs(first)
}

fn check(kernel: &str, target: Target, consts: &[&str]) {
    let m = common::lower(kernel, target, consts).unwrap_or_else(|e| panic!("{e}"));
    let lines: Vec<&str> = m.text.lines().collect();
    // Worker sections: from a `partitionN:` label (N >= 1) to the next partition label or
    // the end of the kernel.
    let starts: Vec<(usize, bool)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("_partition") && l.ends_with(':'))
        .map(|(i, l)| (i, !l.contains("_partition0:")))
        .collect();
    assert!(
        starts.iter().filter(|s| s.1).count() >= 1,
        "{kernel}: no worker partitions"
    );
    for (k, &(start, worker)) in starts.iter().enumerate() {
        if !worker {
            continue;
        }
        let end = starts.get(k + 1).map(|s| s.0).unwrap_or(lines.len());
        let section = &lines[start..end];
        let defined: HashSet<&str> = section.iter().flat_map(|l| defs(l)).collect();
        for l in section {
            let d: HashSet<&str> = defs(l).into_iter().collect();
            for r in regs(l) {
                if l.trim_start().starts_with("//") || d.contains(r) {
                    continue;
                }
                assert!(
                    defined.contains(r),
                    "{kernel} {consts:?}: `{r}` is read in worker section `{}` but never written there: {l}",
                    lines[start]
                );
            }
        }
    }
}

#[test]
fn workers_read_only_what_they_compute_or_reload() {
    check("elementwise_add_ws", Target::Sm90a, &[]);
    check("elementwise_add_ws", Target::Sm100a, &["NUM_WARPS=8"]);
    check("matmul_warp_specialized", Target::Sm100a, &[]);
    check("matmul_warp_specialized", Target::Sm100a, &["SCHEDULER=1"]);
    check("matmul_accumulate", Target::Sm100a, &[]);
}

#[test]
fn the_checker_catches_a_leaked_register() {
    // The check itself: a section that reads a register written only before it fails.
    let defs_of = |s: &str| defs(s).into_iter().map(String::from).collect::<Vec<_>>();
    assert_eq!(defs_of("\tmov.b32 %r5, %r4;"), vec!["%r5"]);
    assert_eq!(
        defs_of("\t@%p1 st.shared.b32 [%r3+8], %r5;"),
        Vec::<String>::new()
    );
    assert_eq!(
        defs_of("\ttcgen05.ld.sync.aligned.32x32b.x2.b32 {%f0, %f1}, [%r2];"),
        vec!["%f0", "%f1"]
    );
    assert_eq!(defs_of("\telect.sync _|%p4, -1;"), vec!["%p4"]);
}

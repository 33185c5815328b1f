//! Trace snapshots: the event trace of every bundled kernel's default configuration at seed 0,
//! CTA 0's events, in the compact text form (`traces/kernels/NAME.snap`). A change that
//! reorders TMA loads, MMAs or barrier phases shows up here in review.

use bwsim_isa::launch;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::SourceFile;
use bwsim_sim::{RunOptions, Trace};

fn trace_of(name: &str) -> String {
    let k = bwsim_kernels::find(name).expect("bundled");
    let file = SourceFile::new(format!("{name}.tile"), k.source);
    let kernel = bwsim_isa::parse(&file).expect("parses");
    let (checked, d) = verify(&kernel, &VerifyOptions::default());
    let checked = checked.unwrap_or_else(|| panic!("{name} verifies: {d:?}"));
    let plan = launch::resolve(&checked, kernel.launch.as_ref().expect("launch")).expect("launch resolves");
    let inputs = launch::materialize(&plan, 0).expect("within the memory limit");
    let r = bwsim_sim::run(&checked, &plan, inputs, &RunOptions::default());
    assert!(r.ok(), "{name}: {:?} {:?}", r.outcome, r.diagnostics);
    let cta0 = Trace {
        agent_names: r.trace.agent_names.clone(),
        events: r.trace.events.iter().filter(|e| e.cta == 0).cloned().collect(),
    };
    let c = &r.counters;
    format!(
        "{name} (default configuration, seed 0): {} CTAs, {} steps, logical time {}, {} async ops, {} MMAs\n{} of {} events (CTA 0)\n\n{}",
        plan.num_ctas(),
        c.steps,
        c.time,
        c.async_ops,
        c.mmas,
        cta0.events.len(),
        r.trace.events.len(),
        cta0.render(Some(&file))
    )
}

#[test]
fn every_bundled_kernel_default_trace() {
    for k in bwsim_kernels::all() {
        let text = trace_of(k.name);
        insta::with_settings!({
            snapshot_path => "../../traces/kernels",
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(k.name, text);
        });
    }
}

/// The rendering is stable: the same seed gives the same text, another seed another schedule.
#[test]
fn traces_are_deterministic_for_a_seed() {
    assert_eq!(trace_of("matmul_accumulate"), trace_of("matmul_accumulate"));
}

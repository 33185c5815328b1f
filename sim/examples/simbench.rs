//! Times the simulator on `.tile` files: `cargo run --release -p bwsim-sim --example simbench -- FILE...`.
fn main() {
    for p in std::env::args().skip(1) {
        let src = match std::fs::read_to_string(&p) {
            Ok(s) => s,
            Err(e) => {
                println!("{p}: {e}");
                continue;
            }
        };
        let t = std::time::Instant::now();
        match bwsim_sim::run_source(&src, &[], 1) {
            Err(d) => println!("{p}: {} diagnostics", d.len()),
            Ok(r) => println!(
                "{p}: {:?} steps={} events={} {:?}",
                r.outcome,
                r.counters.steps,
                r.trace.events.len(),
                t.elapsed()
            ),
        }
    }
}

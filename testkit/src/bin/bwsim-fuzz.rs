//! The long fuzz run without libFuzzer: cases drawn from a seeded stream of random bytes go
//! through [`bwsim_testkit::oracle`], each on a worker thread watched for hangs. Every distinct
//! failure (panic location) is written to the output folder as the failing `.tile` input; a
//! hang is written too and ends the run. Prints throughput and the verdict histogram as it goes.
//!
//! ```text
//! bwsim-fuzz --minutes 30 --out fuzz-findings     # what scripts/fuzz runs
//! bwsim-fuzz --cases 2000 --seed 7 --source generated
//! bwsim-fuzz --replay fuzz-findings/panic-....bin # re-run one saved case
//! ```

use bwsim_testkit::oracle::{self, Budget};
use bwsim_testkit::{case_input, corpus, Source};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Args {
    minutes: Option<f64>,
    cases: Option<u64>,
    seed: u64,
    out: PathBuf,
    case_timeout: Duration,
    sources: Vec<Source>,
    replay: Option<PathBuf>,
    verbose: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: bwsim-fuzz [--minutes M | --cases N] [--seed S] [--out DIR] [--case-timeout SECS]\n\
         \x20                 [--source mutant|generated|mutated-generated|all] [--replay FILE] [--verbose]"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        minutes: None,
        cases: None,
        seed: 1,
        out: PathBuf::from("fuzz-findings"),
        case_timeout: Duration::from_secs(60),
        sources: vec![Source::Mutant, Source::Generated, Source::MutatedGenerated],
        replay: None,
        verbose: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| usage());
        match k.as_str() {
            "--minutes" => a.minutes = Some(v().parse().unwrap_or_else(|_| usage())),
            "--cases" => a.cases = Some(v().parse().unwrap_or_else(|_| usage())),
            "--seed" => a.seed = v().parse().unwrap_or_else(|_| usage()),
            "--out" => a.out = PathBuf::from(v()),
            "--case-timeout" => a.case_timeout = Duration::from_secs(v().parse().unwrap_or_else(|_| usage())),
            "--replay" => a.replay = Some(PathBuf::from(v())),
            "--verbose" => a.verbose = true,
            "--source" => {
                a.sources = match v().as_str() {
                    "mutant" => vec![Source::Mutant],
                    "generated" => vec![Source::Generated],
                    "mutated-generated" => vec![Source::MutatedGenerated],
                    "all" => a.sources.clone(),
                    _ => usage(),
                }
            }
            _ => usage(),
        }
    }
    a
}

/// The random bytes of case `i` of stream `seed` (splitmix64), 8 to 1024 long.
fn case_bytes(seed: u64, i: u64) -> Vec<u8> {
    let mut rng = bwsim_isa::launch::Rng::new(seed.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ i);
    let n = 8 + rng.below(1017) as usize;
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

fn main() {
    let args = parse_args();
    let seeds = Arc::new(corpus::seeds());
    // The panic hook records the last panic's location and message for the report.
    let last_panic: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    {
        let lp = last_panic.clone();
        std::panic::set_hook(Box::new(move |info| {
            let loc = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if let Ok(mut g) = lp.lock() {
                *g = Some(format!("{loc}: {msg}"));
            }
        }));
    }

    if let Some(path) = &args.replay {
        let Ok(data) = std::fs::read(path) else {
            eprintln!("cannot read {}", path.display());
            std::process::exit(2)
        };
        let name = path.to_string_lossy();
        let src = if name.contains("mutatedgenerated") {
            Source::MutatedGenerated
        } else if name.contains("generated") {
            Source::Generated
        } else {
            Source::Mutant
        };
        let input = case_input(src, &data, &seeds);
        println!("{}", String::from_utf8_lossy(&input));
        let v = oracle::check(&input, &Budget::default());
        println!("verdict: {v:?}");
        return;
    }

    let _ = std::fs::create_dir_all(&args.out);
    let start = Instant::now();
    let deadline = args.minutes.map(|m| start + Duration::from_secs_f64(m * 60.0));
    let mut hist: BTreeMap<String, u64> = BTreeMap::new();
    let mut findings: BTreeMap<String, u64> = BTreeMap::new();
    let mut last_report = Instant::now();
    let mut i: u64 = 0;
    let mut slowest = (Duration::ZERO, 0u64);
    loop {
        if args.cases.is_some_and(|n| i >= n) || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let source = args.sources[(i % args.sources.len() as u64) as usize];
        if args.verbose {
            eprintln!("case {i} ({source:?})");
        }
        let data = case_bytes(args.seed, i);
        let (tx, rx) = mpsc::channel();
        let seeds2 = seeds.clone();
        let data2 = data.clone();
        let t0 = Instant::now();
        let spawned = std::thread::Builder::new().stack_size(8 << 20).spawn(move || {
            let input = case_input(source, &data2, &seeds2);
            let r = std::panic::catch_unwind(|| oracle::check(&input, &Budget::default()));
            let _ = tx.send(r.map_err(|_| ()));
        });
        if spawned.is_err() {
            eprintln!("cannot spawn a worker thread");
            std::process::exit(3);
        }
        match rx.recv_timeout(args.case_timeout) {
            Ok(Ok(v)) => *hist.entry(format!("{v:?}")).or_default() += 1,
            Ok(Err(())) => {
                let what = last_panic
                    .lock()
                    .ok()
                    .and_then(|g| g.clone())
                    .unwrap_or_else(|| "unknown panic".into());
                let loc = what.split(": ").next().unwrap_or("").to_string();
                let n = findings.entry(loc.clone()).or_default();
                *n += 1;
                if *n == 1 {
                    let input = case_input(source, &data, &seeds);
                    let stem = format!("panic-{:?}-{}-{i}", source, args.seed).to_lowercase();
                    let _ = std::fs::write(args.out.join(format!("{stem}.tile")), &input);
                    let _ = std::fs::write(args.out.join(format!("{stem}.bin")), &data);
                    println!(
                        "FINDING case {i} ({source:?}): {what}\n  saved {}/{stem}.tile",
                        args.out.display()
                    );
                }
                *hist.entry("PANIC".into()).or_default() += 1;
            }
            Err(_) => {
                let input = case_input(source, &data, &seeds);
                let stem = format!("hang-{:?}-{}-{i}", source, args.seed).to_lowercase();
                let _ = std::fs::write(args.out.join(format!("{stem}.tile")), &input);
                let _ = std::fs::write(args.out.join(format!("{stem}.bin")), &data);
                println!(
                    "HANG case {i} ({source:?}): no result after {:?}; saved {}/{stem}.tile",
                    args.case_timeout,
                    args.out.display()
                );
                summary(i, start, &hist, &findings, slowest);
                std::process::exit(1);
            }
        }
        let dt = t0.elapsed();
        if dt > slowest.0 {
            slowest = (dt, i);
        }
        i += 1;
        if last_report.elapsed() > Duration::from_secs(60) {
            last_report = Instant::now();
            summary(i, start, &hist, &findings, slowest);
        }
    }
    summary(i, start, &hist, &findings, slowest);
    if !findings.is_empty() {
        std::process::exit(1);
    }
}

fn summary(
    cases: u64,
    start: Instant,
    hist: &BTreeMap<String, u64>,
    findings: &BTreeMap<String, u64>,
    slowest: (Duration, u64),
) {
    let secs = start.elapsed().as_secs_f64();
    println!(
        "[{:>7.0}s] {cases} cases, {:.1}/s, {} distinct panics; slowest case {} took {:.2}s",
        secs,
        cases as f64 / secs.max(1e-9),
        findings.len(),
        slowest.1,
        slowest.0.as_secs_f64()
    );
    let h: Vec<String> = hist.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!("  verdicts: {}", h.join(" "));
    for (loc, n) in findings {
        println!("  panic x{n} at {loc}");
    }
    let _ = std::io::stdout().flush();
}

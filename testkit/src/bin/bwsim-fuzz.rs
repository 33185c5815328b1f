//! The long fuzz run without libFuzzer: cases drawn from a seeded stream of random bytes go
//! through [`bwsim_testkit::oracle`], each on a worker thread watched for hangs. The sources
//! take turns: mutated `.tile` seeds, generated kernels, mutated generated kernels, and mutated
//! TTGIR of every supported Triton release with its launch sidecar. Every distinct failure
//! (panic location) is written to the output folder as the failing input (`.tile`, or `.ttgir`
//! with the sidecar after its marker line) and the bytes that drew it (`.bin`); a hang is
//! written too and ends the run. Prints throughput and the verdict histogram as it goes.
//!
//! ```text
//! bwsim-fuzz --minutes 30 --out fuzz-findings     # what scripts/fuzz runs
//! bwsim-fuzz --cases 2000 --seed 7 --source generated
//! bwsim-fuzz --minutes 5 --source ttgir
//! bwsim-fuzz --replay fuzz-findings/panic-....bin # re-run one saved case (also .tile, .ttgir)
//! bwsim-fuzz --export-ttgir-corpus fuzz/corpus/ttgir  # the libFuzzer `ttgir` target's seeds
//! ```

use bwsim_testkit::corpus::Corpus;
use bwsim_testkit::oracle::Budget;
use bwsim_testkit::{case, Case, Source, TtgirCase};
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
    export: Option<PathBuf>,
    verbose: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: bwsim-fuzz [--minutes M | --cases N] [--seed S] [--out DIR] [--case-timeout SECS]\n\
         \x20                 [--source mutant|generated|mutated-generated|ttgir|all] [--replay FILE] [--verbose]\n\
         \x20      bwsim-fuzz --export-ttgir-corpus DIR"
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
        sources: Source::ALL.to_vec(),
        replay: None,
        export: None,
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
            "--export-ttgir-corpus" => a.export = Some(PathBuf::from(v())),
            "--verbose" => a.verbose = true,
            "--source" => {
                a.sources = match v().as_str() {
                    "all" => Source::ALL.to_vec(),
                    name => vec![Source::from_name(name).unwrap_or_else(|| usage())],
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

/// The case a saved file stands for: a `.bin` is the bytes a source drew it from (the source
/// named in the file name, as bwsim-fuzz saves them), a `.ttgir` a TTGIR case (the sidecar after
/// its marker line), anything else `.tile` text.
fn replay_case(path: &std::path::Path, data: &[u8], corpus: &Corpus) -> Case {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match path.extension().and_then(|e| e.to_str()) {
        Some("bin") => {
            let source = [Source::MutatedGenerated, Source::Generated, Source::Ttgir]
                .into_iter()
                .find(|s| name.contains(s.name()) || name.contains(&s.name().replace('-', "")))
                .unwrap_or(Source::Mutant);
            case(source, data, corpus)
        }
        Some("ttgir") => Case::Ttgir(TtgirCase::from_bytes(data)),
        _ => Case::Tile(data.to_vec()),
    }
}

/// Write every TTGIR seed as a case file of the libFuzzer `ttgir` target (the text, then its
/// sidecar after the marker line), and a few inputs of its mutator mode (a 0 byte, then the
/// bytes the mutations draw from). Returns how many files it wrote.
fn export_ttgir(dir: &std::path::Path, corpus: &Corpus) -> std::io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    let mut n = 0;
    for s in &corpus.ttgir {
        let stem = std::path::Path::new(&s.name)
            .file_stem()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let c = TtgirCase::new(&s.text, s.launch.as_deref());
        std::fs::write(dir.join(format!("{}-{stem}.ttgir", s.release)), c.to_bytes())?;
        n += 1;
    }
    for i in 0..16u64 {
        let mut data = vec![0u8];
        data.extend(case_bytes(0x7467_6972, i).into_iter().take(64));
        std::fs::write(dir.join(format!("mutator-{i}.bin")), data)?;
        n += 1;
    }
    Ok(n)
}

fn main() {
    let args = parse_args();
    let seeds = Arc::new(Corpus::load());
    if let Some(dir) = &args.export {
        match export_ttgir(dir, &seeds) {
            Ok(n) => println!("{n} TTGIR cases written to {}", dir.display()),
            Err(e) => {
                eprintln!("cannot write {}: {e}", dir.display());
                std::process::exit(2)
            }
        }
        return;
    }

    if let Some(path) = &args.replay {
        let Ok(data) = std::fs::read(path) else {
            eprintln!("cannot read {}", path.display());
            std::process::exit(2)
        };
        let input = replay_case(path, &data, &seeds);
        match &input {
            Case::Tile(b) => println!("{}", String::from_utf8_lossy(b)),
            Case::Ttgir(c) => println!("{}", String::from_utf8_lossy(&c.to_bytes())),
        }
        let v = input.check(&Budget::default());
        println!("verdict: {v:?}");
        return;
    }

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
            let input = case(source, &data2, &seeds2);
            let r = std::panic::catch_unwind(|| input.check(&Budget::default()));
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
                // A distinct finding: where it panicked and what it said (numbers aside, so
                // that one oracle assertion on different diagnostics counts once per message).
                let (at, msg) = what.split_once(": ").unwrap_or((what.as_str(), ""));
                let msg: String = msg.chars().filter(|c| !c.is_ascii_digit()).take(120).collect();
                let loc = format!("{at}: {msg}");
                let n = findings.entry(loc.clone()).or_default();
                *n += 1;
                if *n == 1 {
                    let file = save_case(&args, "panic", source, &data, &seeds, i);
                    println!(
                        "FINDING case {i} ({source:?}): {what}\n  saved {}/{file}",
                        args.out.display()
                    );
                }
                *hist.entry("PANIC".into()).or_default() += 1;
            }
            Err(_) => {
                let file = save_case(&args, "hang", source, &data, &seeds, i);
                println!(
                    "HANG case {i} ({source:?}): no result after {:?}; saved {}/{file}",
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

/// Save case `i` of `source` in `args.out`: the input as `KIND-SOURCE-SEED-I.tile` (or
/// `.ttgir`) and the bytes it was drawn from as `KIND-SOURCE-SEED-I.bin`. Returns the input's
/// file name.
fn save_case(args: &Args, kind: &str, source: Source, data: &[u8], seeds: &Corpus, i: u64) -> String {
    let input = case(source, data, seeds);
    let stem = format!("{kind}-{}-{}-{i}", source.name(), args.seed);
    let file = format!("{stem}.{}", input.extension());
    let _ = std::fs::write(args.out.join(&file), input.to_bytes());
    let _ = std::fs::write(args.out.join(format!("{stem}.bin")), data);
    file
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

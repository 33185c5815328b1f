//! The real `bwsim` binary under the conditions of the process's surroundings rather than its
//! inputs: closed pipes, signals sent mid-run, full disks, unwritable destinations, unreadable,
//! empty and non-UTF-8 inputs, absurd options, and a missing, broken or too old ptxas.
//!
//! Every case asserts the exit status and the message, and that the process neither panicked
//! (exit 101, `panicked at`, a backtrace) nor hung: each child runs under a deadline and is
//! killed, failing the test, when it passes it.
//!
//! Unix only (pipes, signals, `/dev/full`, file modes). Tests that need an unprivileged user to
//! be refused (a `chmod 000` file) print why they are skipped when running as root, where file
//! modes do not stop reads or writes.
#![cfg(unix)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_bwsim");
/// Generous: the slowest case runs a debug build for a few seconds on a loaded machine.
const DEADLINE: Duration = Duration::from_secs(120);

struct Out {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Run `cmd` to completion under [`DEADLINE`], `on_start(pid)` called once it is running.
fn run_with(cmd: &mut Command, on_start: impl FnOnce(u32)) -> Out {
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("the command starts");
    let reader = |s: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut s) = s {
                let _ = s.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let so = reader(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let se = reader(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    on_start(child.id());
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Out {
        code: status.code(),
        stdout: so.join().expect("stdout reader"),
        stderr: se.join().expect("stderr reader"),
    }
}

fn bwsim(args: &[&str]) -> Out {
    run_with(Command::new(BIN).args(args), |_| {})
}

fn bwsim_env(args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut c = Command::new(BIN);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    run_with(&mut c, |_| {})
}

/// No panic, no backtrace, not exit 101; returns `out` for further checks.
fn clean(out: Out) -> Out {
    assert_ne!(out.code, Some(101), "exit 101 (a panic): {}", out.stderr);
    for bad in ["panicked", "RUST_BACKTRACE", "stack backtrace"] {
        assert!(!out.stderr.contains(bad), "`{bad}` on stderr:\n{}", out.stderr);
    }
    out
}

fn expect(out: Out, code: i32, needles: &[&str]) -> Out {
    let out = clean(out);
    assert_eq!(out.code, Some(code), "stderr:\n{}", out.stderr);
    for n in needles {
        assert!(out.stderr.contains(n), "`{n}` not on stderr:\n{}", out.stderr);
    }
    out
}

/// A fresh scratch directory for one test.
fn scratch(tag: &str) -> PathBuf {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bwsim-process-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("scratch paths are UTF-8")
}

/// True when file modes do not stop this process (root, or CAP_DAC_OVERRIDE).
fn modes_do_not_apply(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("probe");
    std::fs::write(&p, "x").expect("probe file");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    let readable = std::fs::File::open(&p).is_ok();
    let _ = std::fs::remove_file(&p);
    readable
}

// ----- closed pipes -----

/// Run bwsim with stdout (or stderr, when `stderr`) into a pipe whose reader has already gone
/// (`true` exits at once; bwsim starts after a pause), and return bwsim's own exit status and
/// its stderr (when stdout is the closed one).
fn into_closed_pipe(args: &[&str], stderr: bool) -> (i32, String) {
    let script = if stderr {
        // fd 3 is the test's stderr; bwsim's stderr goes to the pipe, its stdout nowhere.
        r#"{ sleep 0.3; "$0" "$@" 2>&1 >/dev/null; echo "status=$?" >&3; } 3>&2 | true"#
    } else {
        r#"{ sleep 0.3; "$0" "$@"; echo "status=$?" >&2; } | true"#
    };
    let out = clean(run_with(
        Command::new("sh").arg("-c").arg(script).arg(BIN).args(args),
        |_| {},
    ));
    let status = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("status="))
        .and_then(|v| v.trim().parse::<i32>().ok())
        .unwrap_or_else(|| panic!("no status line:\n{}", out.stderr));
    (status, out.stderr)
}

#[test]
fn a_closed_stdout_ends_every_command_quietly_with_its_own_status() {
    let cases: &[(&[&str], i32)] = &[
        (&["list"], 0),
        (&["list", "--json"], 0),
        (&["verify", "--rules"], 0),
        (&["fmt", "matmul_pipelined"], 0),
        (&["ptx", "elementwise_add_ws"], 0),
        (&["run", "elementwise_add_ws"], 0),
        (&["check", "elementwise_add_ws", "--seed", "0", "--trace"], 0),
        (
            &[
                "check",
                "tests/fail/missing_fence_store.tile",
                "--schedules",
                "2",
                "--json",
            ],
            1,
        ),
        (&["gpu", "--list"], 0),
    ];
    for (args, want) in cases {
        let (status, err) = into_closed_pipe(args, false);
        assert_eq!(status, *want, "bwsim {args:?}:\n{err}");
        assert!(
            !err.contains("error:"),
            "bwsim {args:?} reported an error:\n{err}"
        );
    }
}

#[test]
fn a_closed_stderr_ends_quietly_too() {
    // Diagnostics, the summary line and `error:` lines all go to stderr.
    let cases: &[(&[&str], i32)] = &[
        (
            &["check", "tests/fail/missing_fence_store.tile", "--schedules", "2"],
            1,
        ),
        (&["verify", "tests/fail/missing_fence_store.tile"], 0),
        (&["verify", "no/such/file.tile"], 2),
    ];
    for (args, want) in cases {
        let (status, err) = into_closed_pipe(args, true);
        assert_eq!(status, *want, "bwsim {args:?}:\n{err}");
    }
}

#[test]
fn a_full_stdout_is_an_error_naming_standard_output() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    let Ok(full) = full else {
        eprintln!("skipped: no /dev/full on this system");
        return;
    };
    let mut c = Command::new(BIN);
    c.arg("list").current_dir(env!("CARGO_MANIFEST_DIR"));
    let o = c.stdout(full).stderr(Stdio::piped()).output().expect("runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot write to standard output: No space left on device"),
        "{err}"
    );
}

// ----- signals -----

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(ok.success(), "kill {sig} {pid}");
}

/// `check` with far more schedules than it can finish, stopped by `sig` after `after`.
fn interrupted_check(sig: &str, after: Duration) -> Out {
    run_with(
        Command::new(BIN).args([
            "check",
            "tests/fail/missing_fence_store.tile",
            "--schedules",
            "1000000000",
            "--jobs",
            "2",
        ]),
        |pid| {
            std::thread::sleep(after);
            signal(pid, sig);
        },
    )
}

#[test]
fn sigint_during_check_prints_the_findings_so_far_and_exits_130() {
    let out = expect(
        interrupted_check("-INT", Duration::from_secs(2)),
        130,
        &[
            "error[missing-fence]",
            "replay: bwsim check tests/fail/missing_fence_store.tile --seed 0",
            "interrupted (SIGINT) after ",
            " of 1000000000 schedules (seeds 0..",
        ],
    );
    // The count is the schedules that ran: at least one, far fewer than asked.
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("interrupted (SIGINT) after "))
        .expect("the interrupted line");
    let n: u64 = line
        .split("after ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("a schedule count");
    assert!((1..1_000_000_000).contains(&n), "{line}");
    // The diagnostic counts the same schedules.
    assert!(
        out.stderr.contains(&format!("({n} of {n} schedules)")),
        "{}",
        out.stderr
    );
}

#[test]
fn sigterm_during_check_exits_143_with_json_findings() {
    let out = run_with(
        Command::new(BIN).args([
            "check",
            "tests/fail/missing_fence_store.tile",
            "--schedules",
            "1000000000",
            "--json",
        ]),
        |pid| {
            std::thread::sleep(Duration::from_secs(2));
            signal(pid, "-TERM");
        },
    );
    let out = expect(out, 143, &[]);
    let v: serde_json::Value = serde_json::from_str(out.stdout.trim()).expect("JSON on stdout");
    assert_eq!(v["interrupted"], "SIGTERM");
    assert_eq!(v["ok"], false);
    assert!(v["schedules"].as_u64().is_some_and(|n| n >= 1));
    assert_eq!(v["findings"][0]["seed"], 0);
}

/// A kernel that runs (practically) forever: 2^40 trips of a loop.
fn spin_kernel(dir: &Path) -> PathBuf {
    let p = dir.join("spin.tile");
    std::fs::write(
        &p,
        "kernel spin {\n  target sm_100a\n  num_warps 4\n  param out: ptr(f32)\n  \
         for t in 0..1099511627776 {\n    let x = full([32, 32], 1.0, f32, blocked([1, 1], [1, 32], [1, 4], [1, 0]))\n  }\n  \
         launch {\n    grid = [1]\n    tensor o: f32[32, 64] = zeros()\n    out = o\n    outputs = [o]\n  }\n}\n",
    )
    .expect("spin kernel");
    p
}

#[test]
fn a_signal_during_run_or_time_says_where_the_run_was() {
    let d = scratch("spin");
    let k = spin_kernel(&d);
    let trace = d.join("spin.trace");
    let out = run_with(
        Command::new(BIN).args(["run", s(&k), "--trace", s(&trace)]),
        |pid| {
            std::thread::sleep(Duration::from_millis(1500));
            signal(pid, "-INT");
        },
    );
    let out = expect(
        out,
        130,
        &["interrupted (SIGINT) after about ", "0 of 1 CTAs finished"],
    );
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(!trace.exists(), "no trace of an interrupted run");
    // The timing model (no functional run) and the functional run before it.
    for (args, what) in [
        (
            vec!["time", s(&k), "--chip", "b200", "--timing-only"],
            "in the timing model on",
        ),
        (vec!["time", s(&k), "--chip", "b200"], "simulated steps"),
    ] {
        let out = run_with(Command::new(BIN).args(&args), |pid| {
            std::thread::sleep(Duration::from_millis(1500));
            signal(pid, "-TERM");
        });
        expect(out, 143, &["interrupted (SIGTERM)", what]);
    }
}

// ----- outputs that cannot be written -----

#[test]
fn outputs_that_cannot_be_written_name_the_file_and_the_reason() {
    let d = scratch("outputs");
    let file = d.join("plain");
    std::fs::write(&file, "x").expect("file");
    let under_file = file.join("x.json");
    let missing = d.join("no/such/dir/k.ptx");
    let cases: Vec<(Vec<&str>, String, &str)> = vec![
        (
            vec!["run", "elementwise_add_ws", "--trace", "/dev/full"],
            "/dev/full".into(),
            "No space left on device",
        ),
        (
            vec!["run", "elementwise_add_ws", "--chrome", s(&d)],
            s(&d).into(),
            "it is a directory",
        ),
        (
            vec!["ptx", "elementwise_add_ws", "-o", s(&missing)],
            s(&missing).into(),
            "No such file or directory",
        ),
        (
            vec![
                "time",
                "elementwise_add_ws",
                "--chip",
                "b200",
                "--chrome",
                s(&under_file),
            ],
            s(&under_file).into(),
            "is not a directory",
        ),
    ];
    for (args, path, reason) in cases {
        expect(bwsim(&args), 2, &[&format!("cannot write `{path}`"), reason]);
    }
    assert!(!missing.exists() && !under_file.exists());
    // Nothing but the two files made here is left in the directory (no temporary files).
    let mut names: Vec<_> = std::fs::read_dir(&d)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["plain"]);
}

#[test]
fn unwritable_files_and_folders_are_refused_for_an_unprivileged_user() {
    use std::os::unix::fs::PermissionsExt;
    let d = scratch("perm");
    if modes_do_not_apply(&d) {
        eprintln!("skipped: running with privileges that ignore file modes (root), chmod cannot refuse");
        return;
    }
    let ro_dir = d.join("ro");
    std::fs::create_dir(&ro_dir).expect("dir");
    std::fs::set_permissions(&ro_dir, std::fs::Permissions::from_mode(0o555)).expect("chmod");
    let target = ro_dir.join("k.ptx");
    expect(
        bwsim(&["ptx", "elementwise_add_ws", "-o", s(&target)]),
        2,
        &[&format!("cannot write `{}`", s(&target)), "Permission denied"],
    );
    let ro_file = d.join("k.tile");
    misformatted_kernel(&ro_file, 0o444);
    expect(bwsim(&["fmt", "--write", s(&ro_file)]), 2, &["Permission denied"]);
    std::fs::set_permissions(&ro_dir, std::fs::Permissions::from_mode(0o755)).expect("chmod back");
}

#[test]
fn two_processes_writing_one_trace_never_interleave() {
    let d = scratch("race");
    let (a, b) = (d.join("a.txt"), d.join("b.txt"));
    for (seed, p) in [("1", &a), ("2", &b)] {
        expect(
            bwsim(&["run", "elementwise_add_ws", "--seed", seed, "--trace", s(p)]),
            0,
            &[],
        );
    }
    let (ta, tb) = (std::fs::read(&a).expect("a"), std::fs::read(&b).expect("b"));
    assert_ne!(
        ta, tb,
        "the two seeds must give different traces for this test to mean anything"
    );
    let shared = d.join("shared.txt");
    for _ in 0..2 {
        let spawn = |seed: &str| {
            Command::new(BIN)
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .args(["run", "elementwise_add_ws", "--seed", seed, "--trace", s(&shared)])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn")
        };
        let (mut p1, mut p2) = (spawn("1"), spawn("2"));
        assert!(p1.wait().expect("wait").success() && p2.wait().expect("wait").success());
        let got = std::fs::read(&shared).expect("shared");
        assert!(
            got == ta || got == tb,
            "the trace is neither run's ({} bytes)",
            got.len()
        );
    }
    let mut names: Vec<_> = std::fs::read_dir(&d)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["a.txt", "b.txt", "shared.txt"],
        "temporary files left behind"
    );
}

/// Writes tests/pass/tmem_leak_fixed.tile to `p` with one line misindented (what `bwsim fmt`
/// corrects), with file mode `mode`; the canonical text.
fn misformatted_kernel(p: &Path, mode: u32) -> String {
    use std::os::unix::fs::PermissionsExt;
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/pass/tmem_leak_fixed.tile"
    ))
    .expect("a kernel");
    std::fs::write(p, text.replace("  num_warps 4", "num_warps    4")).expect("file");
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
    text
}

#[test]
fn fmt_write_replaces_the_file_and_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let d = scratch("fmt");
    let p = d.join("k.tile");
    let text = misformatted_kernel(&p, 0o640);
    expect(bwsim(&["fmt", "--write", s(&p)]), 0, &[]);
    assert_eq!(std::fs::read_to_string(&p).expect("read"), text);
    assert_eq!(
        std::fs::metadata(&p).expect("stat").permissions().mode() & 0o777,
        0o640
    );
    assert_eq!(
        std::fs::read_dir(&d).expect("list").count(),
        1,
        "temporary files left behind"
    );
}

// ----- inputs -----

#[test]
fn unusable_inputs_are_refused_with_the_reason() {
    let d = scratch("inputs");
    let dir_tile = d.join("dir.tile");
    std::fs::create_dir(&dir_tile).expect("dir");
    let empty = d.join("empty.tile");
    std::fs::write(&empty, " \n\n").expect("file");
    let bad = d.join("bad.tile");
    std::fs::write(&bad, b"kernel k {\n  target \xff\xfe sm_100a\n}\n").expect("file");
    let bad_ttgir = d.join("bad.ttgir");
    std::fs::write(&bad_ttgir, b"module {\n\n  \xc3\x28\n}\n").expect("file");
    let empty_ttgir = d.join("empty.ttgir");
    std::fs::write(&empty_ttgir, "").expect("file");
    let cases: Vec<(Vec<&str>, Vec<String>)> = vec![
        (
            vec!["verify", s(&dir_tile)],
            vec![format!("`{}` is a directory", s(&dir_tile))],
        ),
        (vec!["run", s(&empty)], vec![format!("`{}` is empty", s(&empty))]),
        (
            vec!["check", s(&bad)],
            vec![
                format!("byte 0xff at {}:2:10 (offset 20)", s(&bad)),
                "not UTF-8".into(),
            ],
        ),
        (
            vec!["import", s(&bad_ttgir)],
            vec![format!("byte 0xc3 at {}:3:3 (offset 12)", s(&bad_ttgir))],
        ),
        (
            vec!["verify", s(&empty_ttgir)],
            vec![format!("`{}` is empty", s(&empty_ttgir))],
        ),
        (
            vec!["fmt", "no/such/kernel.tile"],
            vec!["no such file: `no/such/kernel.tile`".into()],
        ),
    ];
    for (args, needles) in cases {
        let n: Vec<&str> = needles.iter().map(String::as_str).collect();
        expect(bwsim(&args), 2, &n);
    }
}

#[test]
fn a_non_utf8_path_is_refused_as_such_and_works_for_outputs() {
    use std::os::unix::ffi::OsStrExt;
    let d = scratch("nonutf8");
    let name = std::ffi::OsStr::from_bytes(b"k\xff.tile");
    let p = d.join(name);
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pass/tmem_leak_fixed.tile"),
        &p,
    )
    .expect("copy");
    let out = clean(run_with(Command::new(BIN).arg("verify").arg(&p), |_| {}));
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("is not valid UTF-8"), "{}", out.stderr);
    // An output path needs no UTF-8.
    let out_path = d.join(std::ffi::OsStr::from_bytes(b"out\xfe.ptx"));
    let out = clean(run_with(
        Command::new(BIN)
            .args(["ptx", "elementwise_add_ws", "-o"])
            .arg(&out_path),
        |_| {},
    ));
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let ptx = std::fs::read_to_string(&out_path).expect("written");
    assert!(ptx.contains(".entry elementwise_add_ws"), "{ptx}");
}

#[test]
fn an_unreadable_file_names_the_reason() {
    use std::os::unix::fs::PermissionsExt;
    let d = scratch("unreadable");
    if modes_do_not_apply(&d) {
        eprintln!(
            "skipped: running with privileges that ignore file modes (root), chmod 000 cannot refuse a read"
        );
        return;
    }
    let p = d.join("k.tile");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pass/tmem_leak_fixed.tile"),
        &p,
    )
    .expect("copy");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).expect("chmod");
    expect(
        bwsim(&["verify", s(&p)]),
        2,
        &[&format!("cannot read `{}`", s(&p)), "Permission denied"],
    );
}

// ----- options -----

#[test]
fn absurd_options_are_refused_with_the_reason() {
    let k = "elementwise_add_ws";
    // Each command line, `K` standing for the kernel, with the reason it is refused for.
    let cases = [
        ("check K --jobs 0", "0 is not in 1..=1024"),
        ("check K --jobs 100000", "100000 is not in 1..=1024"),
        ("check K --schedules 0", "invalid value '0' for '--schedules <N>'"),
        ("run K --max-steps 0", "0 would stop every run before it starts"),
        (
            "check K --max-trace-events 0",
            "0 would stop every run before it starts",
        ),
        (
            "run K --max-wall-time 0s",
            "0 would stop every run before it starts",
        ),
        ("run K --max-memory 0", "0 bytes would refuse every launch"),
        (
            "run K --max-steps 99999999999999999999",
            "is too large (at most 18446744073709551615)",
        ),
        (
            "time K --chip b200 --lookahead inf",
            "`inf` is not a finite number >= 0",
        ),
        (
            "time K --chip b200 --lookahead=-1",
            "`-1` is not a finite number >= 0",
        ),
        ("gpu K --timeout 0", "0 is not in 1..=86400"),
        ("gpu K --time 4000000000", "4000000000 is not in 1..=100000"),
    ];
    for (line, msg) in cases {
        let args: Vec<&str> = line
            .split_whitespace()
            .map(|w| if w == "K" { k } else { w })
            .collect();
        expect(bwsim(&args), 2, &[msg]);
    }
    // More threads than schedules is no error: the surplus is not started.
    expect(
        bwsim(&["check", k, "--schedules", "2", "--jobs", "1024"]),
        0,
        &["2 schedules in", "on 2 threads"],
    );
}

// ----- ptxas -----

fn fake_ptxas(dir: &Path, name: &str, body: &str, mode: u32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).expect("script");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
    p
}

#[test]
fn a_missing_broken_or_old_ptxas_says_how_to_install_the_right_one() {
    let d = scratch("ptxas");
    let install = "python3 -m pip install --target .tools/py nvidia-cuda-nvcc==";
    let old = fake_ptxas(
        &d,
        "old-ptxas",
        "echo \"ptxas fatal   : Unsupported .version 8.8; current version is '8.4'\" >&2\nexit 255",
        0o755,
    );
    let crash = fake_ptxas(&d, "crash-ptxas", "kill -SEGV $$", 0o755);
    let noexec = fake_ptxas(&d, "noexec-ptxas", "exit 0", 0o644);
    let cubin = d.join("k.cubin");
    let missing = d.join("no-ptxas-here");
    let cases: Vec<(&Path, i32, Vec<String>)> = vec![
        (
            &missing,
            2,
            vec![format!("BWSIM_PTXAS is `{}`, which is not a file", s(&missing))],
        ),
        (&old, 1, vec!["Unsupported .version 8.8".into()]),
        (&crash, 1, vec!["SIGSEGV".into()]),
        (
            &noexec,
            2,
            vec![
                format!("cannot run ptxas `{}`", s(&noexec)),
                "Permission denied".into(),
            ],
        ),
    ];
    for (ptxas, code, needles) in cases {
        let mut n: Vec<&str> = needles.iter().map(String::as_str).collect();
        n.push(install);
        expect(
            bwsim_env(
                &["ptx", "elementwise_add_ws", "--cubin", s(&cubin)],
                &[("BWSIM_PTXAS", s(ptxas))],
            ),
            code,
            &n,
        );
        assert!(!cubin.exists(), "no cubin from a failed assembly");
    }
}

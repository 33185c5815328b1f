//! `--max-steps`, `--max-wall-time`, `--max-memory`, `--max-trace-events`: the resource limits
//! every command that launches a kernel takes. A subcommand adds them with
//! `#[command(flatten)] limits: LimitArgs` and layers them over the launch section's:
//! `plan.limits = args.limits.limits().or(plan.limits)` before `launch::materialize`, and the
//! same `Limits` in `RunOptions::limits`.

use bwsim_isa::limits::{self, Limits};
use clap::Args;
use std::time::Duration;

/// Resource limits from the command line (each overrides the launch section's `limit` line).
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct LimitArgs {
    /// Stop a run after N simulated steps [default: 200000000].
    #[arg(long, value_name = "N", value_parser = positive_count)]
    pub max_steps: Option<u64>,
    /// Stop a run after this much wall-clock time: `90s`, `10m`, `500ms` [default: none].
    #[arg(long, value_name = "TIME", value_parser = positive_duration)]
    pub max_wall_time: Option<Duration>,
    /// Refuse a launch whose global tensors need more: `4GiB`, `512MiB` [default: 8GiB].
    #[arg(long, value_name = "SIZE", value_parser = positive_bytes)]
    pub max_memory: Option<u64>,
    /// Stop a run whose trace reaches N events, keeping them [default: 20000000].
    #[arg(long, value_name = "N", value_parser = positive_count)]
    pub max_trace_events: Option<u64>,
}

/// A zero limit stops every run before it starts (or refuses every launch): never what was
/// meant, so it is refused with the reason rather than obeyed.
const ZERO: &str =
    "0 would stop every run before it starts; give at least 1 (or leave the flag out for the default)";

/// [`limits::parse_count`], refusing 0 and naming an overflow as such.
fn positive_count(s: &str) -> Result<u64, String> {
    let n = limits::parse_count(s).map_err(|e| {
        let digits = s.trim().chars().all(|c| c.is_ascii_digit() || c == '_');
        if digits && !s.trim().is_empty() {
            format!("`{}` is too large (at most {})", s.trim(), u64::MAX)
        } else {
            e.to_string()
        }
    })?;
    if n == 0 {
        return Err(ZERO.into());
    }
    Ok(n)
}

/// [`limits::parse_duration`], refusing a zero duration.
fn positive_duration(s: &str) -> Result<Duration, String> {
    let d = limits::parse_duration(s).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err(ZERO.into());
    }
    Ok(d)
}

/// [`limits::parse_bytes`], refusing 0 bytes.
fn positive_bytes(s: &str) -> Result<u64, String> {
    let b = limits::parse_bytes(s).map_err(|e| e.to_string())?;
    if b == 0 {
        return Err("0 bytes would refuse every launch; give a size such as `512MiB`".into());
    }
    Ok(b)
}

impl LimitArgs {
    /// The limits given on the command line (unset ones left to the launch section).
    pub fn limits(&self) -> Limits {
        Limits {
            steps: self.max_steps,
            wall_time: self.max_wall_time,
            memory: self.max_memory,
            trace_events: self.max_trace_events,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cmd {
        #[command(flatten)]
        limits: LimitArgs,
    }

    fn parse(args: &[&str]) -> Result<Limits, String> {
        let mut v = vec!["bwsim"];
        v.extend_from_slice(args);
        Cmd::try_parse_from(v)
            .map(|c| c.limits.limits())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn flags_parse_with_units() {
        let l = parse(&[
            "--max-steps",
            "1_000",
            "--max-wall-time",
            "90s",
            "--max-memory",
            "512MiB",
            "--max-trace-events",
            "77",
        ])
        .expect("parses");
        assert_eq!(
            l,
            Limits {
                steps: Some(1000),
                wall_time: Some(Duration::from_secs(90)),
                memory: Some(512 << 20),
                trace_events: Some(77),
            }
        );
        assert_eq!(parse(&[]).expect("parses"), Limits::default());
    }

    #[test]
    fn bad_values_are_refused_with_the_reason() {
        let e = parse(&["--max-memory", "4gigs"]).expect_err("refused");
        assert!(e.contains("unknown size unit `gigs`"), "{e}");
        let e = parse(&["--max-wall-time", "3d"]).expect_err("refused");
        assert!(e.contains("unknown time unit `d`"), "{e}");
        let e = parse(&["--max-steps=-5"]).expect_err("refused");
        assert!(e.contains("--max-steps"), "{e}");
        for zero in [
            ["--max-steps", "0"],
            ["--max-trace-events", "0"],
            ["--max-wall-time", "0ms"],
        ] {
            let e = parse(&zero).expect_err("refused");
            assert!(e.contains("0 would stop every run"), "{e}");
        }
        let e = parse(&["--max-memory", "0GiB"]).expect_err("refused");
        assert!(e.contains("0 bytes would refuse every launch"), "{e}");
        // 2^64 does not fit.
        let e = parse(&["--max-steps", "18446744073709551616"]).expect_err("refused");
        assert!(e.contains("too large (at most 18446744073709551615)"), "{e}");
        assert_eq!(
            parse(&["--max-steps", "18446744073709551615"]).map(|l| l.steps),
            Ok(Some(u64::MAX))
        );
    }

    #[test]
    fn command_line_overrides_the_launch_section() {
        let spec = Limits {
            steps: Some(10),
            memory: Some(1 << 30),
            ..Limits::default()
        };
        let cli = parse(&["--max-memory", "1KiB"]).expect("parses");
        let l = cli.or(spec);
        assert_eq!(l.memory, Some(1024));
        assert_eq!(l.steps, Some(10));
    }
}

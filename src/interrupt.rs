//! Ctrl-C (`SIGINT`) and `SIGTERM` for the commands that run for long: `check`, `run`, `time`.
//!
//! [`install`] replaces the default disposition (die at once, say nothing) with a flag, so the
//! command can stop where it is and say so:
//! - `check` explores schedules on worker threads that look at [`flag`] before taking the next
//!   seed: the schedules already running finish, the diagnostics found so far are printed with
//!   their replay seeds and the number of schedules explored;
//! - `run`, `time` and `check --seed` run one simulation that cannot stop half-way; a
//!   [`Watch`] prints where it was (steps, CTAs finished) and ends the process.
//!
//! The exit status is 128 + the signal number, as a shell reports a process killed by it:
//! 130 for `SIGINT`, 143 for `SIGTERM`. A second signal ends the process at once with the same
//! status, whatever it is doing.
//!
//! Commands that do not call [`install`] (`list`, `verify`, `fmt`, ...) keep the default
//! disposition: they are short, and write their output files whole or not at all.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

static REQUESTED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicUsize = AtomicUsize::new(0);

/// Catch `SIGINT` and `SIGTERM` from now on. A failure to install leaves the default behaviour
/// (the process dies on the signal), which is safe, so it is only reported.
pub fn install() {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGINT, SIGTERM};
        for sig in [SIGINT, SIGTERM] {
            let status = 128 + sig;
            // The shutdown goes first: on the second signal the flag is already set.
            let r = signal_hook::flag::register_conditional_shutdown(sig, status, &REQUESTED)
                .and_then(|_| signal_hook::flag::register_usize(sig, &SIGNAL, sig as usize))
                .and_then(|_| signal_hook::flag::register(sig, &REQUESTED));
            if let Err(e) = r {
                errln!("warning: cannot catch signal {sig}: {e}");
            }
        }
    }
}

/// The flag set by the first signal (what `check`'s workers poll).
pub fn flag() -> &'static AtomicBool {
    &REQUESTED
}

/// The signal that arrived, if one did: its name and the exit status to end with.
pub fn requested() -> Option<(&'static str, u8)> {
    if !REQUESTED.load(Ordering::SeqCst) {
        return None;
    }
    let sig = SIGNAL.load(Ordering::SeqCst);
    let name = match sig {
        2 => "SIGINT",
        15 => "SIGTERM",
        _ => "a signal",
    };
    Some((name, u8::try_from(128 + sig).unwrap_or(130)))
}

/// While alive, a thread that ends the process when a signal arrives, after printing the line
/// `what(signal name)` returns: where the work was.
pub struct Watch {
    stop: std::sync::Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    /// End the process on the signal, after printing `what(signal name)`.
    pub fn start(what: impl Fn(&str) -> String + Send + 'static) -> Watch {
        Watch::spawn(what, true)
    }

    /// Only print `what(signal name)` when the signal arrives (the work stops by itself, at its
    /// next look at [`flag`]).
    pub fn notice(what: impl Fn(&str) -> String + Send + 'static) -> Watch {
        Watch::spawn(what, false)
    }

    fn spawn(what: impl Fn(&str) -> String + Send + 'static, exit: bool) -> Watch {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if let Some((name, code)) = requested() {
                    errln!("{}", what(name));
                    if exit {
                        let _ = crate::output::finish();
                        std::process::exit(i32::from(code));
                    }
                    return;
                }
                std::thread::sleep(Duration::from_millis(25));
            }
        });
        Watch {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

//! Everything the command line writes: standard output, standard error and output files.
//!
//! **Standard streams.** `std`'s `println!` panics when a write fails, so `bwsim list | head -1`
//! used to end in exit 101 and a backtrace once `head` closed the pipe. Every command writes
//! through [`outln!`] / [`out!`] (stdout) and [`errln!`] (stderr) instead:
//! - a closed stdout (`EPIPE`) is remembered and every later write to it is skipped, so the
//!   command finishes quietly with its own exit status (0, or 1 for a FAIL): what
//!   `set -o pipefail` scripts want from `bwsim ... | head`;
//! - any other stdout failure (`> /dev/full`) is remembered too, and [`finish`] turns it into
//!   `error: cannot write to standard output: <OS reason>` and exit 2;
//! - stderr failures are ignored: there is nowhere left to report them.
//!
//! The alternative, restoring the default `SIGPIPE` disposition at startup, was not taken: it
//! needs `unsafe` (`libc::signal`), which the project keeps to the GPU runner; it kills the
//! process in the middle of whatever it is doing, including writing an output file; and it
//! ends in status 141, which `pipefail` scripts read as a failure. Rust ignores `SIGPIPE`, so
//! the write returns `EPIPE` and this module decides.
//!
//! **Output files.** [`write_file`] writes to a temporary file in the destination's directory
//! and renames it over the destination, so a failed write (a full disk, a killed process) never
//! leaves a truncated file that looks complete, and two processes writing the same path never
//! interleave: the last rename wins with a whole file. A destination that exists and is not a
//! regular file (`/dev/null`, `/dev/full`, a FIFO, `/dev/stdout`) is written in place: renaming
//! over a device is never what was meant.

use std::fmt;
use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// Stdout is fine.
const OPEN: u8 = 0;
/// The reader went away (`EPIPE`): skip every further write, quietly.
const CLOSED: u8 = 1;
/// Another error: skip every further write, and report it at the end.
const FAILED: u8 = 2;

static STDOUT: AtomicU8 = AtomicU8::new(OPEN);
static STDOUT_ERROR: Mutex<Option<String>> = Mutex::new(None);

/// Print to standard output; a closed pipe or a failed write never panics (see [`crate::output`]).
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::stdout_fmt(format_args!($($arg)*)) };
}

/// [`out!`] with a newline.
macro_rules! outln {
    () => { $crate::output::stdout_fmt(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::output::stdout_fmt(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprintln!` that ignores a closed or failing stderr instead of panicking.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::output::stderr_fmt(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprint!` that ignores a closed or failing stderr.
macro_rules! err {
    ($($arg:tt)*) => { $crate::output::stderr_fmt(format_args!($($arg)*)) };
}

/// Write to stdout unless an earlier write failed; remember the first failure.
pub fn stdout_fmt(args: fmt::Arguments<'_>) {
    if STDOUT.load(Ordering::Relaxed) != OPEN {
        return;
    }
    let mut o = io::stdout().lock();
    if let Err(e) = o.write_fmt(args) {
        record(e);
    }
}

/// Write to stderr; failures are dropped (there is nowhere to report them).
pub fn stderr_fmt(args: fmt::Arguments<'_>) {
    let _ = io::stderr().lock().write_fmt(args);
}

fn record(e: io::Error) {
    if e.kind() == ErrorKind::BrokenPipe {
        STDOUT.store(CLOSED, Ordering::Relaxed);
        return;
    }
    if STDOUT.swap(FAILED, Ordering::Relaxed) == OPEN {
        if let Ok(mut slot) = STDOUT_ERROR.lock() {
            *slot = Some(e.to_string());
        }
    }
}

/// True once the reader of stdout has gone away: long commands may stop producing output.
pub fn stdout_closed() -> bool {
    STDOUT.load(Ordering::Relaxed) == CLOSED
}

/// Flush stdout and say how writing to it went: `Err(reason)` for a failure other than a
/// closed pipe.
pub fn finish() -> Result<(), String> {
    if STDOUT.load(Ordering::Relaxed) == OPEN {
        if let Err(e) = io::stdout().lock().flush() {
            record(e);
        }
    }
    if STDOUT.load(Ordering::Relaxed) == FAILED {
        let reason = STDOUT_ERROR
            .lock()
            .ok()
            .and_then(|s| s.clone())
            .unwrap_or_else(|| "write failed".into());
        return Err(reason);
    }
    Ok(())
}

/// Why an output file could not be written: the path and the OS's reason.
#[derive(Debug)]
pub struct WriteError {
    pub path: PathBuf,
    pub reason: String,
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write `{}`: {}", self.path.display(), self.reason)
    }
}

impl From<WriteError> for crate::commands::CliError {
    fn from(e: WriteError) -> Self {
        crate::commands::CliError(e.to_string())
    }
}

/// Write `bytes` to `path` whole or not at all (see the module documentation).
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let fail = |reason: String| WriteError {
        path: path.to_path_buf(),
        reason,
    };
    let os = |e: io::Error| fail(e.to_string());
    // Follow a symbolic link: replace the file it points to, not the link.
    let target = match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    };
    let existing = std::fs::metadata(&target).ok();
    if let Some(m) = &existing {
        if m.is_dir() {
            return Err(fail("it is a directory".into()));
        }
        if !m.is_file() {
            // A device, a FIFO, a socket: write in place.
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .map_err(os)?;
            return f.write_all(bytes).and_then(|()| f.flush()).map_err(os);
        }
        // Would we be allowed to write it? (Renaming over a read-only file would bypass that.)
        std::fs::OpenOptions::new()
            .write(true)
            .open(&target)
            .map_err(os)?;
    }
    if target.as_os_str().is_empty() || target.file_name().is_none() {
        return Err(fail("not a file name".into()));
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    match std::fs::metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(fail(format!("`{}` is not a directory", dir.display()))),
        Err(e) => return Err(fail(format!("its directory `{}`: {e}", dir.display()))),
    }
    let mut b = tempfile::Builder::new();
    b.prefix(".bwsim-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // A new file gets the usual 0666 less the umask; a replaced one keeps its mode.
        let mode = existing
            .as_ref()
            .map_or(0o666, |m| m.permissions().mode() & 0o7777);
        b.permissions(std::fs::Permissions::from_mode(mode));
    }
    let mut tmp = b.tempfile_in(&dir).map_err(os)?;
    tmp.write_all(bytes).and_then(|()| tmp.flush()).map_err(os)?;
    tmp.as_file().sync_all().map_err(os)?;
    tmp.persist(&target).map_err(|e| os(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_replaced_whole_and_keeps_its_mode() {
        let d = tempfile::tempdir().expect("temp dir");
        let p = d.path().join("out.txt");
        std::fs::write(&p, "old contents, longer than the new ones").expect("seed file");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        }
        write_file(&p, b"new").expect("written");
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "new");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).expect("stat").permissions().mode() & 0o777;
            assert_eq!(mode, 0o640);
        }
        // Nothing but the file itself is left in the directory.
        let names: Vec<_> = std::fs::read_dir(d.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.txt")]);
    }

    #[test]
    fn a_directory_or_a_missing_folder_is_named_in_the_error() {
        let d = tempfile::tempdir().expect("temp dir");
        let e = write_file(d.path(), b"x").expect_err("a directory");
        assert!(e.to_string().ends_with("it is a directory"), "{e}");
        let p = d.path().join("no/such/dir/f.txt");
        let e = write_file(&p, b"x").expect_err("missing folder");
        assert!(e.to_string().contains("no/such/dir"), "{e}");
        assert!(!p.exists());
    }
}

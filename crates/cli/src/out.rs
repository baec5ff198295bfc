//! Printing that cannot panic: a closed pipe ends the command quietly, a failing stdout
//! (`> /dev/full`) is an error, and a failing stderr is ignored.

use std::io::Write;

/// Standard output was closed by its reader (`| head`): the command stops, successfully.
#[derive(Debug)]
pub struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stdout closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Writes `text` to stdout and flushes it.
pub fn stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::anyhow!("stdout: {e}")),
    }
}

/// Writes `text` and a newline to stdout.
pub fn stdout_line(text: &str) -> anyhow::Result<()> {
    stdout(&format!("{text}\n"))
}

/// Writes `text` and a newline to stderr; errors are ignored (there is nowhere to report them).
pub fn stderr_line(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
}

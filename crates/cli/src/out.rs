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
    let mut out = Stdout::new();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) => Err(out.error().unwrap_or_else(|| e.into())),
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

/// Lines that quote the inputs (a run report, notes naming files), each written with the
/// characters that would drive a terminal escaped ([`rocpd::printable`]).
pub fn stderr_lines(text: &str) {
    let mut err = std::io::stderr().lock();
    for line in text.lines() {
        let _ = writeln!(err, "{}", rocpd::printable(line));
    }
}

/// Standard output as a buffered writer that notes when its reader has gone (a closed
/// pipe), so the command can end quietly instead of reporting an error.
pub struct Stdout {
    inner: std::io::BufWriter<std::io::StdoutLock<'static>>,
    closed: bool,
    failed: Option<String>,
}

impl Stdout {
    pub fn new() -> Self {
        Stdout {
            inner: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
            closed: false,
            failed: None,
        }
    }

    /// The command's error if a write failed: [`StdoutClosed`] when the reader closed the
    /// pipe, else the first write error (`> /dev/full`); `None` when stdout never failed.
    pub fn error(&self) -> Option<anyhow::Error> {
        if self.closed {
            Some(StdoutClosed.into())
        } else {
            self.failed.as_ref().map(|e| anyhow::anyhow!("stdout: {e}"))
        }
    }

    fn note<T>(&mut self, r: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &r {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                self.closed = true;
            } else if self.failed.is_none() {
                self.failed = Some(e.to_string());
            }
        }
        r
    }
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let r = self.inner.write(buf);
        self.note(r)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.inner.flush();
        self.note(r)
    }
}

//! The one error type shared by readers, stages and writers, so that every failure names
//! the file and the place it concerns.

use std::path::PathBuf;

/// Result alias used across the project's libraries.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, and where.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input could not be read or is not what it should be.
    #[error("{}: {place}: {message}", file.display())]
    Input {
        /// The input file.
        file: PathBuf,
        /// Where in the file (table and row, line, byte offset, ...).
        place: String,
        /// What was expected and what was found.
        message: String,
    },
    /// An output could not be written.
    #[error("{}: {message}", file.display())]
    Output {
        /// The output file.
        file: PathBuf,
        /// What failed.
        message: String,
    },
    /// The request itself is wrong (bad option value, nothing to do, ...).
    #[error("{0}")]
    Usage(String),
    /// The run was cancelled (a signal, or a front's cancel request) and stopped without
    /// output. `signal` is the signal number, 0 when there was none.
    #[error("interrupted{}", if *signal > 0 { format!(" by signal {signal}") } else { String::new() })]
    Interrupted {
        /// The signal number, 0 for a cancel without a signal.
        signal: i32,
    },
    /// An internal Arrow error (a bug, or a schema mismatch between a reader and the model).
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
}

impl Error {
    /// Shorthand for [`Error::Input`].
    pub fn input(
        file: impl Into<PathBuf>,
        place: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Error::Input {
            file: file.into(),
            place: place.into(),
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::Output`].
    pub fn output(file: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        Error::Output {
            file: file.into(),
            message: message.to_string(),
        }
    }
}

/// A JSON value as SQLite's `json_extract` returns it, read as text: a string as it is,
/// `true`/`false` as `1`/`0`, a number, array or object as JSON text, null as none. The
/// direct readers give the `message` column this way, as the RocPD reader gets it from
/// `json_extract(extdata, '$.message')` on an imported database.
pub fn json_extract_text(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(if *b { "1" } else { "0" }.into()),
        other => Some(other.to_string()),
    }
}

/// A JSON value in a few words, for messages of the JSON readers ("the number 5",
/// "the string \"abc...\"", "an array").
pub fn describe_json(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => {
            let mut t: String = s.chars().take(40).collect();
            if t.len() < s.len() {
                t.push_str("...");
            }
            format!("the string {t:?}")
        }
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

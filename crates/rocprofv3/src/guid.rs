//! The guid of an imported run: a UUIDv7-shaped string derived deterministically from the
//! process the run holds, so that the same process given twice (a copy of its files, a
//! JSON file beside its gzipped copy, an object repeated) gets the same guid, and the
//! second is refused as a duplicate, as it should be; and two processes do not (D167).
//!
//! Inputs of the hash, in order:
//! - a JSON object whose `metadata` names a pid or a start time: `json`, then two hashes of
//!   the whole `metadata` value (`json_import::process_identity`): not the file's name,
//!   place, compression or layout, nor the object's index;
//! - any other JSON object: `json`, its index, then its file as a CSV file below;
//! - a CSV run: `csv`, then for each file in name order its name (not its directory), its size, its
//!   first 64 KiB, its last 64 KiB and 16 pieces of 4 KiB spread evenly between them. A
//!   run copied to another directory is the same process; one copied under other names
//!   is not told apart from a new one (the documentation samples of rocprofv3 hold the
//!   same file under two names, as two samples).
//!
//! Layout: the 48-bit time field is the process start in ms when known (JSON
//! `metadata.init_time`, if not negative), otherwise hash bits; the version nibble is 7
//! and the variant bits `10`; every other bit comes from two FNV-1a-64 hashes. A `rocpd
//! convert` CSV run whose rows carry one original guid keeps that guid.

use std::os::unix::fs::FileExt;
use std::path::Path;

use rocpd_model::hash::{fnv1a64, FNV_OFFSET, FNV_OFFSET_2};
use rocpd_model::{Error, Result};

use crate::{Run, RunSource};

/// How much of each end of a file is hashed.
const END_BYTES: u64 = 64 * 1024;
/// How many pieces of the middle are hashed, and their size.
const PIECES: u64 = 16;
const PIECE_BYTES: u64 = 4 * 1024;

/// The guid of `run`.
pub(crate) fn run_guid(run: &Run) -> Result<String> {
    if let RunSource::Csv { guid: Some(g), .. } = &run.source {
        // The guid becomes the table-name suffix; anything but hex digits and dashes would
        // make a database the RocPD reader rightly refuses, far from the cause.
        // It must also start with a hex digit: a leading dash would merge into the
        // suffix's own underscore (`-` → `_`), leaving `rocpd_metadata_` without a guid.
        let valid = g.len() <= 64
            && g.starts_with(|c: char| c.is_ascii_hexdigit())
            && g.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
        if !valid {
            let file = run.files.first().cloned().unwrap_or_default();
            let shown: String = g.chars().take(80).collect();
            return Err(Error::input(
                file,
                "column Guid",
                format!("{shown:?} is not a GUID (hex digits and dashes)"),
            ));
        }
        return Ok(g.clone());
    }
    let mut a = FNV_OFFSET;
    let mut b = FNV_OFFSET_2;
    let mut feed = |bytes: &[u8]| {
        a = fnv1a64(bytes, a);
        b = fnv1a64(bytes, b);
    };
    let mut start_ms = None;
    match &run.source {
        RunSource::Csv { .. } => {
            feed(b"csv");
            // In name order: the run's files come in the order they were given, and the
            // same run given in another order is the same process.
            let mut files: Vec<&std::path::PathBuf> = run.files.iter().collect();
            files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
            for path in files {
                feed_file(path, &mut feed)?;
            }
        }
        RunSource::Json {
            index,
            init_time,
            identity,
            ..
        } => {
            feed(b"json");
            // A negative start (bad input) has no place in the time field: hash bits then.
            start_ms = init_time.and_then(|t| u64::try_from(t / 1_000_000).ok());
            match identity {
                Some([x, y]) => {
                    feed(&x.to_le_bytes());
                    feed(&y.to_le_bytes());
                }
                None => {
                    feed(&(*index as u64).to_le_bytes());
                    for path in &run.files {
                        feed_file(path, &mut feed)?;
                    }
                }
            }
        }
    }
    Ok(format_uuid7(start_ms.unwrap_or(a >> 16), a, b))
}

/// Feeds `path`'s file name (not its directory), its size and the pieces of its content
/// the guid is made of: both ends, and [`PIECES`] pieces spread over the middle (rows
/// with their own timestamps, so two runs' files differ in every piece), read in place
/// without reading the whole file.
fn feed_file(path: &Path, feed: &mut impl FnMut(&[u8])) -> Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    feed(name.unwrap_or_default().as_bytes());
    let err = |e: std::io::Error| Error::input(path, "open", e.to_string());
    let f = std::fs::File::open(path).map_err(err)?;
    let len = f.metadata().map_err(err)?.len();
    feed(&len.to_le_bytes());
    let mut buf = Vec::new();
    let mut piece = |at: u64, size: u64| -> Result<()> {
        let size = size.min(len.saturating_sub(at));
        buf.resize(usize::try_from(size).unwrap_or(0), 0);
        f.read_exact_at(&mut buf, at).map_err(err)?;
        feed(&buf);
        Ok(())
    };
    piece(0, END_BYTES)?;
    if len > 2 * END_BYTES {
        let middle = len - 2 * END_BYTES;
        for k in 0..PIECES {
            // `middle * k / PIECES` without overflow: a file is far below 2^59 bytes.
            piece(END_BYTES + middle / PIECES * k, PIECE_BYTES)?;
        }
    }
    if len > END_BYTES {
        piece(len.saturating_sub(END_BYTES).max(END_BYTES), END_BYTES)?;
    }
    Ok(())
}

/// Formats a UUIDv7 from a 48-bit millisecond field and 74 bits taken from `a` and `b`.
fn format_uuid7(ms: u64, a: u64, b: u64) -> String {
    let ms = ms & 0xffff_ffff_ffff;
    let rand_a = a & 0x0fff;
    let rand_b = b & 0x3fff_ffff_ffff_ffff;
    let hi = (ms << 16) | 0x7000 | rand_a;
    let lo = 0x8000_0000_0000_0000 | rand_b;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        hi & 0xffff,
        lo >> 48,
        lo & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid7_shape() {
        let g = format_uuid7(
            0x0197_c1a2_3b4c,
            0x1234_5678_9abc_def0,
            0xffff_ffff_ffff_ffff,
        );
        assert_eq!(g.len(), 36);
        assert_eq!(&g[14..15], "7");
        assert!(matches!(&g[19..20], "8" | "9" | "a" | "b"));
        assert!(g.starts_with("0197c1a2-3b4c-7"));
    }
}

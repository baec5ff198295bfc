//! The guid of an imported run: a UUIDv7-shaped string derived deterministically from the
//! run, so that importing the same files twice gives the same guid (and merging the two
//! results is refused as a duplicate, as it should be).
//!
//! Inputs of the hash, in order: the format (`csv`/`json`); for each file its name (not
//! its directory), its size and its first 64 KiB; for JSON the process index; for
//! `rocpd convert` CSVs the guid filter. Layout: the 48-bit time field is the process
//! start in ms when known (JSON `metadata.init_time`, if not negative), otherwise hash bits; the version
//! nibble is 7 and the variant bits `10`; every other bit comes from two FNV-1a-64 hashes.
//! A `rocpd convert` CSV run whose rows carry one original guid keeps that guid.

use std::io::Read;

use rocpd_model::hash::{fnv1a64, FNV_OFFSET, FNV_OFFSET_2};
use rocpd_model::{Error, Result};

use crate::{Run, RunSource};

const HEAD_BYTES: u64 = 64 * 1024;

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
        RunSource::Csv { .. } => feed(b"csv"),
        RunSource::Json {
            index, init_time, ..
        } => {
            feed(b"json");
            feed(&(*index as u64).to_le_bytes());
            // A negative start (bad input) has no place in the time field: hash bits then.
            start_ms = init_time.and_then(|t| u64::try_from(t / 1_000_000).ok());
        }
    }
    for path in &run.files {
        let err = |e: std::io::Error| Error::input(path, "open", e.to_string());
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        feed(name.unwrap_or_default().as_bytes());
        let f = std::fs::File::open(path).map_err(err)?;
        let len = f.metadata().map_err(err)?.len();
        feed(&len.to_le_bytes());
        let mut head = Vec::new();
        f.take(HEAD_BYTES).read_to_end(&mut head).map_err(err)?;
        feed(&head);
    }
    Ok(format_uuid7(start_ms.unwrap_or(a >> 16), a, b))
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

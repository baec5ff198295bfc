//! Gzip-compressed CSV (`*.csv.gz`): recognised by content, grouped with the plain files of
//! its run, imported to the same rows as the plain file; corrupt data is an error naming
//! the file and the line.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use common::fixtures;
use rocpd_rocprofv3::{group_runs, import, sniff_file, unrecognised_reason, Detected, Run};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// The llama.cpp fixture's `decode_*` files copied to `dir`, those of `compress` gzipped
/// (`<name>.csv.gz`).
fn decode_run(dir: &Path, compress: &[&str]) -> Vec<PathBuf> {
    let src = fixtures().join("rocprofv3-csv-llamacpp");
    let mut out = Vec::new();
    for name in ["decode_hip_api_trace.csv", "decode_kernel_trace.csv"] {
        let bytes = std::fs::read(src.join(name)).unwrap();
        let path = if compress.contains(&name) {
            let p = dir.join(format!("{name}.gz"));
            std::fs::write(&p, gzip(&bytes)).unwrap();
            p
        } else {
            let p = dir.join(name);
            std::fs::write(&p, &bytes).unwrap();
            p
        };
        out.push(path);
    }
    out
}

fn rows_of(run: &Run) -> Vec<(String, u64)> {
    let dir = tempfile::tempdir().unwrap();
    let report = import(run, &dir.path().join("out.db"), &Default::default()).unwrap();
    report.rows
}

#[test]
fn a_gzipped_csv_set_imports_the_same_rows_as_the_plain_one() {
    let plain = tempfile::tempdir().unwrap();
    let packed = tempfile::tempdir().unwrap();
    let mixed = tempfile::tempdir().unwrap();
    decode_run(plain.path(), &[]);
    let files = decode_run(
        packed.path(),
        &["decode_hip_api_trace.csv", "decode_kernel_trace.csv"],
    );
    decode_run(mixed.path(), &["decode_kernel_trace.csv"]);
    assert!(matches!(
        sniff_file(&files[1]).unwrap(),
        Some(Detected::Csv(_))
    ));

    let want = {
        let runs = group_runs(&[plain.path().to_path_buf()]).unwrap();
        assert_eq!(runs.len(), 1);
        rows_of(&runs[0])
    };
    assert!(want
        .iter()
        .any(|(t, n)| t == "rocpd_kernel_dispatch" && *n == 144));
    for dir in [&packed, &mixed] {
        // One run of two files: `decode_kernel_trace.csv.gz` has the prefix `decode_`.
        let runs = group_runs(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(
            runs.len(),
            1,
            "{:?}",
            runs.iter().map(|r| &r.label).collect::<Vec<_>>()
        );
        assert_eq!(runs[0].files.len(), 2);
        assert_eq!(rows_of(&runs[0]), want);
    }
}

#[test]
fn a_truncated_gzip_csv_fails_naming_the_file_and_line_and_leaves_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let bytes =
        std::fs::read(fixtures().join("rocprofv3-csv-llamacpp/decode_kernel_trace.csv")).unwrap();
    let packed = gzip(&bytes);
    let path = dir.path().join("decode_kernel_trace.csv.gz");
    // Cut inside the compressed stream, well after the header.
    std::fs::write(&path, &packed[..packed.len() / 2]).unwrap();
    let runs = group_runs(std::slice::from_ref(&path)).unwrap();
    let dest = dir.path().join("out.db");
    let err = import(&runs[0], &dest, &Default::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("decode_kernel_trace.csv.gz"), "{err}");
    assert!(err.contains("line "), "{err}");
    assert!(!dest.exists());
}

#[test]
fn a_csv_gz_name_with_bad_content_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1_kernel_trace.csv.gz");
    // gzip magic, then garbage.
    let corrupt = [0x1f, 0x8b, 0x08, 0x00, 1, 2, 3, 4, 5, 6, 7];
    std::fs::write(&path, corrupt).unwrap();
    assert_eq!(sniff_file(&path).unwrap(), None);
    assert_eq!(
        unrecognised_reason(&path, &corrupt).as_deref(),
        Some("gzip-compressed, but the data is corrupt or truncated")
    );
    let not_trace = gzip(b"a,b,c\n1,2,3\n");
    std::fs::write(&path, &not_trace).unwrap();
    let why = unrecognised_reason(&path, &not_trace).unwrap();
    assert!(
        why.starts_with("gzip-compressed; CSV header lacks Kernel_Name"),
        "{why}"
    );
}

/// A `.gz` named as an input but cut in its first bytes is refused for its gzip data,
/// not as "not a rocprofv3 file"; a gzip file padded with zero bytes reads as `gzip -d`
/// reads it, and other bytes after the data are an error, never dropped.
#[test]
fn gzip_cut_early_padded_or_followed_by_junk() {
    let dir = tempfile::tempdir().unwrap();
    let bytes =
        std::fs::read(fixtures().join("rocprofv3-csv-llamacpp/decode_kernel_trace.csv")).unwrap();
    let packed = gzip(&bytes);
    let path = dir.path().join("decode_kernel_trace.csv.gz");
    std::fs::write(&path, &packed[..20]).unwrap();
    let err = group_runs(std::slice::from_ref(&path))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("decode_kernel_trace.csv.gz: gzip data: truncated or corrupt gzip data"),
        "{err}"
    );

    let plain = dir.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(plain.join("decode_kernel_trace.csv"), &bytes).unwrap();
    let expected = rows_of(&group_runs(&[plain]).unwrap()[0]);
    let mut padded = packed.clone();
    padded.extend([0u8; 512]);
    std::fs::write(&path, &padded).unwrap();
    let runs = group_runs(std::slice::from_ref(&path)).unwrap();
    assert_eq!(rows_of(&runs[0]), expected);

    let mut junk = packed.clone();
    junk.extend(b"\0\0trailing");
    std::fs::write(&path, &junk).unwrap();
    let runs = group_runs(std::slice::from_ref(&path)).unwrap();
    let err = import(&runs[0], &dir.path().join("out.db"), &Default::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("neither a gzip member nor zero padding"),
        "{err}"
    );
}

/// A gzip JSON file with junk after its data: the error names the byte of the
/// decompressed data, with no made-up line and column (a read error has none).
#[test]
fn a_gzip_json_read_error_has_no_line_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x_results.json.gz");
    let mut bytes = gzip(br#"{"rocprofiler-sdk-tool":[{"metadata":{"pid":5}}]}"#);
    bytes.extend(b"junk");
    std::fs::write(&path, &bytes).unwrap();
    let err = group_runs(std::slice::from_ref(&path))
        .unwrap_err()
        .to_string();
    assert!(err.contains("of the decompressed data"), "{err}");
    assert!(
        err.contains("neither a gzip member nor zero padding"),
        "{err}"
    );
    assert!(!err.contains("line 0"), "{err}");
}

/// A gzip JSON file whose first member holds only a few bytes (or none) is recognised as
/// JSON: the sniffing reads every member, as the reads do.
#[test]
fn a_gzip_json_split_into_members_is_recognised() {
    let dir = tempfile::tempdir().unwrap();
    let text = br#"{"rocprofiler-sdk-tool":[{"metadata":{"pid":5}}]}"#;
    for (name, cut) in [("small_results.json.gz", 10), ("empty_results.json.gz", 0)] {
        let mut bytes = gzip(&text[..cut]);
        bytes.extend(gzip(&text[cut..]));
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(sniff_file(&path).unwrap(), Some(Detected::Json), "{name}");
        assert_eq!(group_runs(std::slice::from_ref(&path)).unwrap().len(), 1);
    }
}

//! Seed inputs per target: the fixture files (capped in size, file names kept), small
//! databases and rocprofv3 files made with `rocpd-gen`, a few made here (MessagePack
//! versions of the hatchet JSON trees, chrome traces in the other layouts Proton writes,
//! databases written by the importers, a merged database), and `--corpus` files.
//! Also the dictionary of tokens (keys, column names) found in the seeds.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::input::{InFile, Input};
use crate::sqlmut;
use crate::targets::Target;

/// Seed files larger than this are cut (CSV to whole lines, JSON to fewer array
/// elements) or left out.
pub const MAX_SEED: usize = 1 << 20;
/// CSV seeds keep this many lines (header included).
const CSV_LINES: usize = 200;
/// Tokens kept in a dictionary.
const MAX_DICT: usize = 500;

/// One seed.
pub struct Seed {
    /// The files.
    pub input: Input,
    /// Where it came from, for messages.
    pub origin: String,
    /// The schema of a database seed (for SQL-level mutations).
    pub schema: Option<sqlmut::Schema>,
}

/// The seeds of one target.
pub struct Corpus {
    /// Seeds (never empty).
    pub seeds: Vec<Seed>,
    /// Tokens for insertions and replacements.
    pub dict: Vec<Vec<u8>>,
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, out);
        } else if p.is_file() {
            out.push(p);
        }
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".into())
}

/// The first `lines` lines of a CSV text.
pub fn first_lines(data: &[u8], lines: usize) -> Vec<u8> {
    let mut end = data.len();
    let mut seen = 0;
    for (i, &c) in data.iter().enumerate() {
        if c == b'\n' {
            seen += 1;
            if seen == lines {
                end = i + 1;
                break;
            }
        }
    }
    data[..end.min(MAX_SEED)].to_vec()
}

/// Keeps the first `keep` elements of every JSON array (string-aware, any depth), so a
/// large file becomes a small one of the same shape. Input that is not JSON is cut
/// wherever it stops making sense; the result is only a seed.
pub fn trim_arrays(data: &[u8], keep: usize) -> Vec<u8> {
    let keep = keep.max(1);
    let mut out = Vec::with_capacity(data.len().min(1 << 22));
    // Per open bracket: is it an array, and how many elements started so far.
    let mut stack: Vec<(bool, usize)> = Vec::new();
    // While skipping the rest of an array: the stack depth of that array.
    let mut skip: Option<usize> = None;
    let mut in_str = false;
    let mut esc = false;
    for &c in data {
        if in_str {
            if skip.is_none() {
                out.push(c);
            }
            if esc {
                esc = false;
            } else if c == b'\\' {
                esc = true;
            } else if c == b'"' {
                in_str = false;
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'[' | b'{' => stack.push((c == b'[', 1)),
            b']' | b'}' => {
                if skip == Some(stack.len()) {
                    skip = None;
                }
                stack.pop();
            }
            b',' => {
                if let Some(top) = stack.last_mut() {
                    if top.0 && skip.is_none() {
                        top.1 += 1;
                        if top.1 > keep {
                            skip = Some(stack.len());
                            continue;
                        }
                    }
                }
            }
            _ => {}
        }
        if skip.is_none() {
            out.push(c);
        }
    }
    out
}

/// MessagePack encoding of a JSON value (maps with string keys, as Proton writes).
pub fn to_msgpack(v: &serde_json::Value, out: &mut Vec<u8>) {
    use serde_json::Value;
    fn len_header(out: &mut Vec<u8>, n: usize, fix: u8, fix_max: usize, m16: u8, m32: u8) {
        if n <= fix_max {
            out.push(fix | n as u8);
        } else if n <= 0xffff {
            out.push(m16);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        } else {
            out.push(m32);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
    fn string(out: &mut Vec<u8>, s: &str) {
        let n = s.len();
        if n <= 31 {
            out.push(0xa0 | n as u8);
        } else if n <= 0xff {
            out.push(0xd9);
            out.push(n as u8);
        } else {
            len_header(out, n, 0, 0, 0xda, 0xdb);
        }
        out.extend_from_slice(s.as_bytes());
    }
    match v {
        Value::Null => out.push(0xc0),
        Value::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                if u < 128 {
                    out.push(u as u8);
                } else if u <= 0xff {
                    out.extend_from_slice(&[0xcc, u as u8]);
                } else if u <= 0xffff {
                    out.push(0xcd);
                    out.extend_from_slice(&(u as u16).to_be_bytes());
                } else if u <= 0xffff_ffff {
                    out.push(0xce);
                    out.extend_from_slice(&(u as u32).to_be_bytes());
                } else {
                    out.push(0xcf);
                    out.extend_from_slice(&u.to_be_bytes());
                }
            } else if let Some(i) = n.as_i64() {
                if i >= -32 {
                    out.push(i as i8 as u8);
                } else if i >= i64::from(i8::MIN) {
                    out.extend_from_slice(&[0xd0, i as i8 as u8]);
                } else if i >= i64::from(i16::MIN) {
                    out.push(0xd1);
                    out.extend_from_slice(&(i as i16).to_be_bytes());
                } else if i >= i64::from(i32::MIN) {
                    out.push(0xd2);
                    out.extend_from_slice(&(i as i32).to_be_bytes());
                } else {
                    out.push(0xd3);
                    out.extend_from_slice(&i.to_be_bytes());
                }
            } else {
                out.push(0xcb);
                out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_be_bytes());
            }
        }
        Value::String(s) => string(out, s),
        Value::Array(a) => {
            len_header(out, a.len(), 0x90, 15, 0xdc, 0xdd);
            for x in a {
                to_msgpack(x, out);
            }
        }
        Value::Object(m) => {
            len_header(out, m.len(), 0x80, 15, 0xde, 0xdf);
            for (k, x) in m {
                string(out, k);
                to_msgpack(x, out);
            }
        }
    }
}

/// Quoted strings that are object keys (`"name":`), up to 48 bytes, quotes included.
fn json_keys(data: &[u8], dict: &mut BTreeSet<Vec<u8>>) {
    let mut i = 0;
    while i < data.len() && dict.len() < MAX_DICT {
        if data[i] == b'"' {
            let mut j = i + 1;
            while j < data.len() && data[j] != b'"' {
                j += if data[j] == b'\\' { 2 } else { 1 };
            }
            if j >= data.len() {
                break;
            }
            let mut k = j + 1;
            while k < data.len() && data[k].is_ascii_whitespace() {
                k += 1;
            }
            if data.get(k) == Some(&b':') && j + 1 - i <= 48 {
                dict.insert(data[i..=j].to_vec());
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
}

/// Header fields and short words of the first lines of a CSV text.
fn csv_words(data: &[u8], dict: &mut BTreeSet<Vec<u8>>) {
    for line in data.split(|&c| c == b'\n').take(20) {
        for field in line.split(|&c| c == b',') {
            let f = field.strip_suffix(b"\r").unwrap_or(field);
            if !f.is_empty()
                && f.len() <= 48
                && f.iter()
                    .all(|c| c.is_ascii_alphanumeric() || b"_\" ".contains(c))
                && dict.len() < MAX_DICT
            {
                dict.insert(f.to_vec());
            }
        }
    }
}

fn gunzip(data: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(data)
        .read_to_end(&mut out)
        .context("decompressing")?;
    Ok(out)
}

/// Chrome traces in layouts the fixtures lack: a bare event array with begin/end pairs,
/// instants and counters; two concatenated documents; nanosecond units and string ids.
const CHROME_SEEDS: &[(&str, &str)] = &[
    (
        "array_begin_end.chrome_trace",
        r#"[{"name":"process_name","ph":"M","pid":1,"tid":1,"args":{"name":"P"}},
{"name":"outer","cat":"scope","ph":"B","pid":1,"tid":1,"ts":1.0},
{"name":"inner","cat":"scope","ph":"X","pid":1,"tid":1,"ts":2.0,"dur":3.0,"args":{"call_stack":["ROOT","outer","inner"]}},
{"name":"mark","ph":"i","s":"t","pid":1,"tid":1,"ts":4.5},
{"name":"bytes","ph":"C","pid":1,"tid":1,"ts":5.0,"args":{"v":7}},
{"name":"outer","cat":"scope","ph":"E","pid":1,"tid":1,"ts":9.0}]"#,
    ),
    (
        "two_documents.chrome_trace",
        r#"{"traceEvents":[{"name":"k1","cat":"kernel","ph":"X","pid":0,"tid":100,"ts":10,"dur":2}]}
{"traceEvents":[{"name":"k2","cat":"kernel","ph":"X","pid":0,"tid":101,"ts":11,"dur":2},{"name":"f","cat":"flow","ph":"s","id":3,"pid":0,"tid":0,"ts":9},{"name":"f","cat":"flow","ph":"f","bp":"e","id":3,"pid":0,"tid":101,"ts":11}]}"#,
    ),
    (
        "units_ns.chrome_trace",
        r#"{"displayTimeUnit":"ns","otherData":{"version":"3.9"},"traceEvents":[{"name":"thread_name","ph":"M","pid":"2","tid":"7","args":{"name":"GPU Stream 7"}},{"name":"a","ph":"X","pid":"2","tid":"7","ts":1.5,"dur":0.25},{"name":"b","ph":"X","pid":2,"tid":7,"ts":1e3,"dur":0}]}"#,
    ),
];

/// Small databases and rocprofv3 files made with `rocpd-gen` under `scratch`.
struct Generated {
    dbs: Vec<PathBuf>,
    csv_dirs: Vec<PathBuf>,
    jsons: Vec<PathBuf>,
}

fn generate(scratch: &Path, csv: bool, json: bool) -> Result<Generated> {
    let mut g = Generated {
        dbs: Vec::new(),
        csv_dirs: Vec::new(),
        jsons: Vec::new(),
    };
    let configs = [
        rocpd_gen::GenConfig {
            seed: 11,
            nodes: 1,
            processes: 1,
            gpus_per_node: 1,
            threads_per_process: 2,
            iterations: 1,
            odd_names: false,
            row_ids: false,
        },
        rocpd_gen::GenConfig {
            seed: 12,
            nodes: 1,
            processes: 1,
            gpus_per_node: 2,
            threads_per_process: 3,
            iterations: 2,
            odd_names: true,
            row_ids: false,
        },
    ];
    for (i, cfg) in configs.iter().enumerate() {
        let dir = scratch.join(format!("gen-{i}"));
        let _ = std::fs::remove_dir_all(&dir);
        let paths = rocpd_gen::generate(cfg, &dir).context("rocpd-gen")?;
        for db in paths {
            if csv {
                let (d, _) = rocpd_gen::export_csv(&db, &dir.join("csv")).context("CSV export")?;
                g.csv_dirs.push(d);
            }
            if json {
                let (p, _) =
                    rocpd_gen::export_json(&db, &dir.join("json")).context("JSON export")?;
                g.jsons.push(p);
            }
            g.dbs.push(db);
        }
    }
    Ok(g)
}

/// Classifies a `--corpus` file: the target it seeds, and its (capped) content.
fn classify(path: &Path, data: Vec<u8>) -> Option<(Target, Vec<u8>)> {
    let head = &data[..data.len().min(8192)];
    if rocpd_db::looks_like_sqlite(head) {
        return (data.len() <= 8 * MAX_SEED).then_some((Target::Db, data));
    }
    if data.starts_with(b"ROCPD-FUZZ-BUNDLE") {
        return Some((Target::Csv, data));
    }
    if let Some(kind) = rocpd_proton::sniff(path, head) {
        let t = match kind {
            rocpd_proton::ProtonKind::Tree => Target::HatchetJson,
            rocpd_proton::ProtonKind::TreeMsgpack => Target::HatchetMsgpack,
            rocpd_proton::ProtonKind::ChromeTrace => Target::ChromeTrace,
        };
        let data = if data.len() > MAX_SEED && t != Target::HatchetMsgpack {
            trim_arrays(&data, 16)
        } else {
            data
        };
        return (data.len() <= 4 * MAX_SEED).then_some((t, data));
    }
    match rocpd_rocprofv3::sniff(path, head) {
        Some(rocpd_rocprofv3::Detected::Json) => {
            let data = if data.starts_with(&[0x1f, 0x8b]) {
                gunzip(&data).ok()?
            } else {
                data
            };
            let data = if data.len() > MAX_SEED {
                trim_arrays(&data, 16)
            } else {
                data
            };
            Some((Target::Json, data))
        }
        Some(rocpd_rocprofv3::Detected::Csv(_)) => {
            Some((Target::Csv, first_lines(&data, CSV_LINES)))
        }
        None if path.extension().is_some_and(|e| e == "csv") => {
            Some((Target::Csv, first_lines(&data, CSV_LINES)))
        }
        None => None,
    }
}

/// Loads the seeds of `target`: fixtures under `fixtures`, generated inputs (made in
/// `scratch`), and the files under each of `extra`.
pub fn load(target: Target, fixtures: &Path, extra: &[PathBuf], scratch: &Path) -> Result<Corpus> {
    std::fs::create_dir_all(scratch)?;
    let mut seeds: Vec<Seed> = Vec::new();
    let mut dict = BTreeSet::new();
    let add = |seeds: &mut Vec<Seed>, origin: String, input: Input| {
        seeds.push(Seed {
            input,
            origin,
            schema: None,
        });
    };
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    match target {
        Target::Db => {
            let mut files = Vec::new();
            files_under(&fixtures.join("generated"), &mut files);
            files_under(&fixtures.join("rpd-legacy"), &mut files);
            let g = generate(scratch, true, true)?;
            files.extend(g.dbs.iter().cloned());
            // A merged database (two table sets) and databases the importers wrote.
            let merged = scratch.join("merged.db");
            let _ = std::fs::remove_file(&merged);
            if rocpd_db::merge(&g.dbs, &merged).is_ok() {
                files.push(merged);
            }
            let mut imported = 0;
            let mut import_csv = |paths: Vec<PathBuf>, files: &mut Vec<PathBuf>| {
                let Ok(runs) = rocpd_rocprofv3::group_runs(&paths) else {
                    return;
                };
                for run in runs.iter().take(2) {
                    let dest = scratch.join(format!("imported-{imported}.db"));
                    imported += 1;
                    let _ = std::fs::remove_file(&dest);
                    let opts = rocpd_rocprofv3::ImportOptions {
                        skip_bad_rows: true,
                    };
                    if rocpd_rocprofv3::import(run, &dest, &opts).is_ok() {
                        files.push(dest);
                    }
                }
            };
            import_csv(vec![g.csv_dirs[0].clone()], &mut files);
            import_csv(vec![g.jsons[1].clone()], &mut files);
            for (i, p) in [
                "proton/real_gpu/tritonbench_proton_cuda.hatchet",
                "proton/constructed/trace_kernels_v3.8_lanes_flows_CONSTRUCTED.chrome_trace",
            ]
            .iter()
            .enumerate()
            {
                let src = fixtures.join(p);
                let dest = scratch.join(format!("proton-{i}.db"));
                let _ = std::fs::remove_file(&dest);
                if let Ok(Some(kind)) = rocpd_proton::sniff_file(&src) {
                    if rocpd_proton::import(&src, kind, &dest).is_ok() {
                        files.push(dest);
                    }
                }
            }
            for p in files {
                let data = read(&p)?;
                if data.len() > 8 * MAX_SEED || !rocpd_db::looks_like_sqlite(&data) {
                    continue;
                }
                let schema = sqlmut::schema(&p).ok();
                seeds.push(Seed {
                    input: Input::single("input.db", data),
                    origin: p.display().to_string(),
                    schema,
                });
            }
        }
        Target::Csv => {
            let mut files = Vec::new();
            files_under(&fixtures.join("rocprofv3-csv-docs"), &mut files);
            files_under(&fixtures.join("rocprofv3-csv-llamacpp"), &mut files);
            let g = generate(scratch, true, false)?;
            let mut groups: Vec<Vec<PathBuf>> = Vec::new();
            for d in &g.csv_dirs {
                let mut set = Vec::new();
                files_under(d, &mut set);
                files.extend(set.iter().cloned());
                groups.push(set);
            }
            for prefix in ["decode_", "prefill_"] {
                let set: Vec<PathBuf> = files
                    .iter()
                    .filter(|p| file_name(p).starts_with(prefix))
                    .cloned()
                    .collect();
                groups.push(set);
            }
            for p in files
                .iter()
                .filter(|p| p.extension().is_some_and(|e| e == "csv"))
            {
                let data = first_lines(&read(p)?, CSV_LINES);
                csv_words(&data, &mut dict);
                add(
                    &mut seeds,
                    p.display().to_string(),
                    Input::single(file_name(p), data),
                );
            }
            // Whole runs (several files of one process read together).
            for set in groups.into_iter().filter(|s| s.len() > 1) {
                let mut files = Vec::new();
                for p in &set {
                    files.push(InFile {
                        name: file_name(p),
                        data: first_lines(&read(p)?, CSV_LINES / 2),
                    });
                }
                let origin = format!("run {}", set[0].parent().unwrap_or(&set[0]).display());
                add(&mut seeds, origin, Input { files });
            }
        }
        Target::Json => {
            let gz = fixtures.join("rocprofv3-json/908_results.json.gz");
            let whole = gunzip(&read(&gz)?)?;
            for keep in [3usize, 40] {
                let data = trim_arrays(&whole, keep);
                json_keys(&data, &mut dict);
                add(
                    &mut seeds,
                    format!("{} (arrays cut to {keep} elements)", gz.display()),
                    Input::single("908_results.json", data),
                );
            }
            drop(whole);
            let g = generate(scratch, false, true)?;
            for (i, p) in g.jsons.iter().enumerate() {
                let data = trim_arrays(&read(p)?, 50);
                json_keys(&data, &mut dict);
                // The first also with its tables after its records, which the direct
                // reader reads in a second walk (D108).
                if i == 0 {
                    const TABLES: [&str; 5] = [
                        "agents",
                        "counters",
                        "strings",
                        "code_objects",
                        "kernel_symbols",
                    ];
                    let late = std::str::from_utf8(&data)
                        .ok()
                        .and_then(|t| rocpd_gen::members_moved_last(t, &TABLES));
                    if let Some(late) = late {
                        add(
                            &mut seeds,
                            format!("{} (tables after the records)", p.display()),
                            Input::single(file_name(p), late.into_bytes()),
                        );
                    }
                }
                add(
                    &mut seeds,
                    p.display().to_string(),
                    Input::single(file_name(p), data),
                );
            }
        }
        Target::HatchetJson | Target::HatchetMsgpack | Target::ChromeTrace => {
            let mut files = Vec::new();
            files_under(&fixtures.join("proton"), &mut files);
            for p in &files {
                let data = read(p)?;
                let head = &data[..data.len().min(rocpd_proton::SNIFF_BYTES)];
                let Some(kind) = rocpd_proton::sniff(p, head) else {
                    continue;
                };
                use rocpd_proton::ProtonKind as K;
                match (target, kind) {
                    (Target::HatchetJson, K::Tree) | (Target::ChromeTrace, K::ChromeTrace) => {
                        json_keys(&data, &mut dict);
                        add(
                            &mut seeds,
                            p.display().to_string(),
                            Input::single(file_name(p), data),
                        );
                    }
                    (Target::HatchetMsgpack, K::TreeMsgpack) => {
                        add(
                            &mut seeds,
                            p.display().to_string(),
                            Input::single(file_name(p), data),
                        );
                    }
                    (Target::HatchetMsgpack, K::Tree) => {
                        // The same tree as MessagePack.
                        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&data) else {
                            continue;
                        };
                        let mut mp = Vec::new();
                        to_msgpack(&v, &mut mp);
                        let mut keys = BTreeSet::new();
                        json_keys(&data, &mut keys);
                        for k in keys {
                            let s = String::from_utf8_lossy(&k[1..k.len() - 1]).into_owned();
                            let mut enc = Vec::new();
                            to_msgpack(&serde_json::Value::String(s), &mut enc);
                            if dict.len() < MAX_DICT {
                                dict.insert(enc);
                            }
                        }
                        let stem = file_name(p);
                        let stem = stem.split('.').next().unwrap_or("tree");
                        add(
                            &mut seeds,
                            format!("{} (as MessagePack)", p.display()),
                            Input::single(format!("{stem}.hatchet_msgpack"), mp),
                        );
                    }
                    _ => {}
                }
            }
            if target == Target::ChromeTrace {
                for (name, text) in CHROME_SEEDS {
                    json_keys(text.as_bytes(), &mut dict);
                    add(
                        &mut seeds,
                        format!("built-in {name}"),
                        Input::single(*name, text.as_bytes().to_vec()),
                    );
                }
            }
        }
    }
    for dir in extra {
        let mut files = Vec::new();
        if dir.is_file() {
            files.push(dir.clone());
        } else {
            files_under(dir, &mut files);
        }
        for p in files {
            let Ok(data) = std::fs::read(&p) else {
                continue;
            };
            let Some((t, data)) = classify(&p, data) else {
                continue;
            };
            if t != target {
                continue;
            }
            let input = Input::decode(data, &file_name(&p)).map_err(anyhow::Error::msg)?;
            let schema = if t == Target::Db {
                sqlmut::schema(&p).ok()
            } else {
                None
            };
            seeds.push(Seed {
                input,
                origin: p.display().to_string(),
                schema,
            });
        }
    }
    anyhow::ensure!(!seeds.is_empty(), "no seeds for target {}", target.name());
    Ok(Corpus {
        seeds,
        dict: dict.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_keeps_json_valid() {
        let src = br#"{"a":[1,2,3,4],"b":[[1,2,3],{"c":"],["}],"d":"x,y"}"#;
        let t = trim_arrays(src, 2);
        let v: serde_json::Value = serde_json::from_slice(&t).unwrap();
        assert_eq!(v["a"], serde_json::json!([1, 2]));
        assert_eq!(v["b"][0], serde_json::json!([1, 2]));
        assert_eq!(v["b"][1]["c"], "],[");
        assert_eq!(v["d"], "x,y");
    }

    #[test]
    fn msgpack_of_a_small_tree() {
        let v = serde_json::json!([{"frame": {"name": "R"}, "n": -1, "x": 1.5, "big": 300}, {}]);
        let mut out = Vec::new();
        to_msgpack(&v, &mut out);
        assert_eq!(&out[..3], &[0x92, 0x84, 0xa3]);
        assert!(out.windows(3).any(|w| w == [0xcd, 0x01, 0x2c]));
        assert!(out.contains(&0xff)); // -1
    }

    #[test]
    fn first_lines_cuts_at_line_ends() {
        assert_eq!(first_lines(b"a\nb\nc\n", 2), b"a\nb\n");
        assert_eq!(first_lines(b"a\nb", 5), b"a\nb");
    }
}

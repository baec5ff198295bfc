//! Helpers shared by the CLI integration tests: generating inputs, running the binary,
//! decoding Perfetto output with the official schema (the `perfetto_protos` crate, not our
//! own message definitions) and computing expected counts with plain SQL on the inputs.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use perfetto_protos::trace::Trace;
use perfetto_protos::track_event::track_event::Type;
use protobuf::Message;

pub fn rocpd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocpd"))
        .args(args)
        .output()
        .expect("run rocpd")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn generate(dir: &Path, seed: u64, processes: u32, iterations: u32) -> Vec<PathBuf> {
    let cfg = rocpd_gen::GenConfig {
        seed,
        nodes: 2.min(processes),
        processes,
        gpus_per_node: 2,
        threads_per_process: 3,
        iterations,
        odd_names: true,
        row_ids: std::env::var_os("ROCPD_TEST_ROW_IDS").is_some(),
    };
    rocpd_gen::generate(&cfg, dir).expect("generate")
}

/// Blanks the required `agent_id` of one kernel dispatch of `db`, the first in `order`
/// (`ORDER BY ...`), so that reading fails at that row; returns the table and the row id.
pub fn break_a_dispatch(db: &Path, order: &str) -> (String, i64) {
    let c = rusqlite::Connection::open(db).unwrap();
    let kd: String = c
        .query_row(
            "SELECT name FROM sqlite_master WHERE name LIKE 'rocpd_kernel_dispatch_%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let id: i64 = c
        .query_row(
            &format!("SELECT id FROM \"{kd}\" {order} LIMIT 1"),
            [],
            |r| r.get(0),
        )
        .unwrap();
    c.execute_batch(&format!(
        "PRAGMA foreign_keys = OFF; PRAGMA ignore_check_constraints = ON; \
         UPDATE \"{kd}\" SET agent_id = '' WHERE id = {id}"
    ))
    .unwrap();
    (kd, id)
}

/// Converts `inputs` to `<out>/t_results.pftrace` and returns its path.
/// `text`, a generated rocprofv3 JSON file, with its first counter record's dispatch
/// ending a nanosecond after its kernel record's: the kernel record changes the row the
/// counter record made, so the direct reader leaves the file to the import (D90).
#[allow(dead_code)]
pub fn counter_record_moved(text: &str) -> String {
    let counters = text
        .find("\"counter_collection\":[{")
        .expect("counter records");
    let key = "\"end_timestamp\":";
    let at = counters + text[counters..].find(key).unwrap() + key.len();
    let digits = text[at..].find(|c: char| !c.is_ascii_digit()).unwrap();
    let end: i64 = text[at..at + digits].parse().unwrap();
    format!("{}{}{}", &text[..at], end + 1, &text[at + digits..])
}

pub fn convert(inputs: &[PathBuf], out: &Path, extra: &[&str]) -> PathBuf {
    let mut args: Vec<String> = vec!["convert".into(), "-q".into(), "-i".into()];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    args.extend(["-f", "pftrace", "-o", "t", "-d"].map(String::from));
    args.push(out.display().to_string());
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = rocpd(&refs);
    assert!(o.status.success(), "rocpd failed: {}", stderr(&o));
    out.join("t_results.pftrace")
}

#[derive(Debug, Default)]
pub struct Decoded {
    pub slices_by_category: BTreeMap<String, u64>,
    pub instants_by_category: BTreeMap<String, u64>,
    pub names_by_category: BTreeMap<String, BTreeSet<String>>,
    pub counter_samples: u64,
    pub track_names: BTreeSet<String>,
    pub counter_track_names: BTreeSet<String>,
    pub processes: BTreeMap<i32, String>,
    pub threads: BTreeSet<(i32, i32, String)>,
    pub flows: u64,
    pub annotation_names: BTreeSet<String>,
    /// Every slice and instant as (category, name, start), sorted: a multiset to compare.
    pub events: Vec<(String, String, u64)>,
    /// Names of the tracks that hold instants.
    pub instant_track_names: BTreeSet<String>,
    /// Every slice as (track name, slice name, start, duration), sorted.
    pub slices: Vec<(String, String, u64, u64)>,
    /// Every flow as the (track name, slice name, start) of its ends, each sorted, and the
    /// flows sorted: flow ids aside, which slices each arrow joins.
    pub flow_ends: Vec<Vec<(String, String, u64)>>,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Process,
    Thread,
    Counter,
    Plain,
}

/// Decodes a trace and checks the invariants Perfetto's importer relies on; panics with
/// the first violation.
pub fn decode(path: &Path) -> Decoded {
    let bytes = std::fs::read(path).expect("read trace");
    let trace = Trace::parse_from_bytes(&bytes).expect("a valid Trace message");
    let mut d = Decoded::default();
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut cats: HashMap<u64, String> = HashMap::new();
    let mut ann_names: HashMap<u64, String> = HashMap::new();
    let mut tracks: HashMap<u64, Kind> = HashMap::new();
    let mut track_name: HashMap<u64, String> = HashMap::new();
    let mut open: HashMap<u64, Vec<(u64, String)>> = HashMap::new();
    let mut flow_ends: HashMap<u64, Vec<(String, String, u64)>> = HashMap::new();
    let mut last_ts: HashMap<u64, u64> = HashMap::new();
    let mut flows: HashMap<u64, u32> = HashMap::new();
    let mut cleared = false;
    for (i, p) in trace.packet.iter().enumerate() {
        let seq = p.trusted_packet_sequence_id();
        assert_ne!(seq, 0, "packet {i} has no sequence id");
        let flags = p.sequence_flags();
        if flags & 1 != 0 {
            cleared = true;
            names.clear();
            cats.clear();
            ann_names.clear();
        }
        assert!(
            cleared,
            "packet {i} comes before the incremental state was cleared"
        );
        if let Some(data) = p.interned_data.as_ref() {
            for n in &data.event_names {
                names.insert(n.iid(), n.name().to_string());
            }
            for n in &data.event_categories {
                cats.insert(n.iid(), n.name().to_string());
            }
            for n in &data.debug_annotation_names {
                ann_names.insert(n.iid(), n.name().to_string());
            }
        }
        if p.has_track_descriptor() {
            let t = p.track_descriptor();
            let kind = if t.process.is_some() {
                let pd = &t.process;
                d.processes.insert(pd.pid(), pd.process_name().to_string());
                Kind::Process
            } else if t.thread.is_some() {
                let th = &t.thread;
                d.threads
                    .insert((th.pid(), th.tid(), th.thread_name().to_string()));
                d.track_names.insert(th.thread_name().to_string());
                Kind::Thread
            } else if t.counter.is_some() {
                d.counter_track_names.insert(t.name().to_string());
                Kind::Counter
            } else {
                d.track_names.insert(t.name().to_string());
                Kind::Plain
            };
            if t.has_parent_uuid() {
                assert!(
                    tracks.contains_key(&t.parent_uuid()),
                    "parent described after child"
                );
            }
            let label = if t.thread.is_some() {
                t.thread.thread_name().to_string()
            } else {
                t.name().to_string()
            };
            track_name.insert(t.uuid(), label);
            let prev = tracks.insert(t.uuid(), kind);
            assert!(
                prev.is_none_or(|k| k == kind),
                "track {} described twice differently",
                t.uuid()
            );
        }
        if p.has_track_event() {
            let e = p.track_event();
            let uuid = e.track_uuid();
            let kind = *tracks
                .get(&uuid)
                .unwrap_or_else(|| panic!("packet {i}: track {uuid} used before it is described"));
            let ts = p.timestamp();
            let last = last_ts.entry(uuid).or_insert(0);
            assert!(ts >= *last, "packet {i}: time goes back on track {uuid}");
            *last = ts;
            if e.type_() != Type::TYPE_SLICE_END && e.type_() != Type::TYPE_COUNTER {
                assert!(
                    flags & 2 != 0,
                    "packet {i} uses interned ids without SEQ_NEEDS_INCREMENTAL_STATE"
                );
            }
            let cat = e
                .category_iids
                .first()
                .map(|c| {
                    cats.get(c)
                        .unwrap_or_else(|| panic!("packet {i}: undefined category iid"))
                        .clone()
                })
                .unwrap_or_default();
            let name = if e.has_name_iid() {
                names
                    .get(&e.name_iid())
                    .unwrap_or_else(|| panic!("packet {i}: undefined name iid"))
                    .clone()
            } else {
                String::new()
            };
            for a in &e.debug_annotations {
                let n = ann_names
                    .get(&a.name_iid())
                    .unwrap_or_else(|| panic!("packet {i}: undefined annotation name iid"));
                d.annotation_names.insert(n.clone());
            }
            let on_track = track_name.get(&uuid).cloned().unwrap_or_default();
            for f in &e.flow_ids {
                *flows.entry(*f).or_default() += 1;
                flow_ends
                    .entry(*f)
                    .or_default()
                    .push((on_track.clone(), name.clone(), ts));
            }
            match e.type_() {
                Type::TYPE_SLICE_BEGIN => {
                    assert!(kind != Kind::Counter, "slice on a counter track");
                    open.entry(uuid).or_default().push((ts, name.clone()));
                    *d.slices_by_category.entry(cat.clone()).or_default() += 1;
                    d.events.push((cat.clone(), name.clone(), ts));
                    d.names_by_category.entry(cat).or_default().insert(name);
                }
                Type::TYPE_SLICE_END => {
                    let (begin, begun) = open
                        .get_mut(&uuid)
                        .and_then(|s| s.pop())
                        .unwrap_or_else(|| panic!("packet {i}: slice end without a begin"));
                    assert!(begin <= ts);
                    d.slices.push((on_track, begun, begin, ts - begin));
                }
                Type::TYPE_INSTANT => {
                    assert!(kind != Kind::Counter, "instant on a counter track");
                    *d.instants_by_category.entry(cat.clone()).or_default() += 1;
                    d.instant_track_names.insert(on_track.clone());
                    d.events.push((cat.clone(), name.clone(), ts));
                    d.names_by_category.entry(cat).or_default().insert(name);
                }
                Type::TYPE_COUNTER => {
                    assert!(
                        kind == Kind::Counter,
                        "counter value on a non-counter track"
                    );
                    d.counter_samples += 1;
                }
                other => panic!("packet {i}: unexpected event type {other:?}"),
            }
        }
    }
    for (uuid, stack) in open {
        assert!(stack.is_empty(), "track {uuid} has unterminated slices");
    }
    for (id, n) in &flows {
        assert!(*n >= 2, "flow {id} has only one end");
    }
    d.flows = flows.len() as u64;
    d.events.sort();
    d.slices.sort();
    d.flow_ends = flow_ends
        .into_values()
        .map(|mut ends| {
            ends.sort();
            ends
        })
        .collect();
    d.flow_ends.sort();
    d
}

/// Runs `rocpd convert` with `args` (after `convert -q`), asserting success.
pub fn convert_args(args: &[&str]) {
    let mut all = vec!["convert", "-q", "-f", "pftrace"];
    all.extend_from_slice(args);
    let o = rocpd(&all);
    assert!(o.status.success(), "rocpd {args:?} failed: {}", stderr(&o));
}

/// The bytes of the one Perfetto file `convert -f pftrace` writes of `input` into `out`
/// on `threads` threads.
pub fn pftrace_on_threads(input: &Path, out: &Path, threads: &str) -> Vec<u8> {
    convert_args(&[
        "-i",
        input.to_str().unwrap(),
        "--threads",
        threads,
        "-d",
        out.to_str().unwrap(),
    ]);
    let written = traces(out);
    assert_eq!(written.len(), 1, "{written:?}");
    std::fs::read(&written[0]).unwrap()
}

/// The `.pftrace` files in `dir`, sorted.
pub fn traces(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pftrace"))
        .collect();
    v.sort();
    v
}

/// Runs one SQL count per database and sums them; `{T}` in `sql` is replaced by the
/// suffixed name of the table `T` (e.g. `{rocpd_region}`).
pub fn sql_count(inputs: &[PathBuf], sql: &str) -> u64 {
    let mut total = 0;
    for p in inputs {
        let conn =
            rusqlite::Connection::open_with_flags(p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let mut q = sql.to_string();
        for base in [
            "rocpd_region",
            "rocpd_event",
            "rocpd_string",
            "rocpd_kernel_dispatch",
            "rocpd_memory_copy",
            "rocpd_memory_allocate",
            "rocpd_sample",
            "rocpd_track",
            "rocpd_info_node",
            "rocpd_info_kernel_symbol",
            "rocpd_info_process",
            "rocpd_info_thread",
        ] {
            q = q.replace(&format!("{{{base}}}"), &table(&conn, base));
        }
        total += conn.query_row(&q, [], |r| r.get::<_, i64>(0)).unwrap() as u64;
    }
    total
}

/// The suffixed name of `base` in a RocPD database (first table set).
fn table(conn: &rusqlite::Connection, base: &str) -> String {
    let suffix: String = conn
        .query_row(
            "SELECT substr(name, 16) FROM sqlite_master WHERE name LIKE 'rocpd\\_metadata\\_%' ESCAPE '\\'",
            [],
            |r| r.get(0),
        )
        .expect("metadata table");
    format!("\"{base}_{suffix}\"")
}

/// Category group as AMD's rocpd names it (written here independently of the crate's).
fn group(category: &str) -> &'static str {
    for (prefix, name) in [
        ("HIP_", "hip_api"),
        ("HSA_", "hsa_api"),
        ("MARKER_", "marker_api"),
        ("RCCL_", "rccl_api"),
        ("ROCDECODE_", "rocdecode_api"),
        ("ROCJPEG_", "rocjpeg_api"),
        ("KFD_", "kfd_events"),
    ] {
        if category.starts_with(prefix) {
            return name;
        }
    }
    "none"
}

/// Expected Perfetto slices and instants per category, by SQL on the inputs.
pub fn expected(inputs: &[PathBuf]) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let mut slices: BTreeMap<String, u64> = BTreeMap::new();
    let mut instants: BTreeMap<String, u64> = BTreeMap::new();
    for p in inputs {
        let conn =
            rusqlite::Connection::open_with_flags(p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let q = |sql: String| -> Vec<(String, u64)> {
            let mut st = conn.prepare(&sql).unwrap();
            st.query_map([], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                    r.get::<_, i64>(1)? as u64,
                ))
            })
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
        };
        let (ev, st) = (table(&conn, "rocpd_event"), table(&conn, "rocpd_string"));
        for (cat, n) in q(format!(
            "SELECT S.string, COUNT(*) FROM {} R LEFT JOIN {ev} E ON E.id = R.event_id LEFT JOIN {st} S ON S.id = E.category_id GROUP BY 1",
            table(&conn, "rocpd_region")
        )) {
            *slices.entry(group(&cat).into()).or_default() += n;
        }
        for (cat, n) in q(format!(
            "SELECT S.string, COUNT(*) FROM {} X LEFT JOIN {ev} E ON E.id = X.event_id LEFT JOIN {st} S ON S.id = E.category_id GROUP BY 1",
            table(&conn, "rocpd_sample")
        )) {
            *instants.entry(group(&cat).into()).or_default() += n;
        }
        for (name, base) in [
            ("kernel_dispatch", "rocpd_kernel_dispatch"),
            ("memory_copy", "rocpd_memory_copy"),
        ] {
            for (_, n) in q(format!("SELECT '', COUNT(*) FROM {}", table(&conn, base))) {
                *slices.entry(name.into()).or_default() += n;
            }
        }
        for (level, n) in q(format!(
            "SELECT level, COUNT(*) FROM {} GROUP BY 1",
            table(&conn, "rocpd_memory_allocate")
        )) {
            let cat = if level == "SCRATCH" {
                "scratch_memory"
            } else {
                "memory_allocation"
            };
            *slices.entry(cat.into()).or_default() += n;
        }
    }
    slices.retain(|_, n| *n > 0);
    instants.retain(|_, n| *n > 0);
    (slices, instants)
}

/// Number of distinct (database, internal correlation id) pairs linking an API call to at
/// least one kernel or copy: the number of flows expected.
pub fn expected_flows(inputs: &[PathBuf]) -> u64 {
    let mut total = 0;
    for p in inputs {
        let conn =
            rusqlite::Connection::open_with_flags(p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let ev = table(&conn, "rocpd_event");
        let sql = format!(
            "SELECT COUNT(DISTINCT E.stack_id) FROM (SELECT event_id FROM {k} UNION ALL SELECT event_id FROM {c}) T \
             JOIN {ev} E ON E.id = T.event_id \
             WHERE E.stack_id IN (SELECT E2.stack_id FROM {r} R JOIN {ev} E2 ON E2.id = R.event_id)",
            k = table(&conn, "rocpd_kernel_dispatch"),
            c = table(&conn, "rocpd_memory_copy"),
            r = table(&conn, "rocpd_region"),
        );
        total += conn.query_row(&sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64;
    }
    total
}

/// Every `.parquet` file under `dir` (not under `_` directories), recursively.
pub fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() && !name.starts_with('_') {
            out.extend(parquet_files(&p));
        } else if name.ends_with(".parquet") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Rows of a table, read from the files' own footers (a torn file fails to open).
pub fn parquet_rows(table: &Path) -> u64 {
    parquet_files(table)
        .iter()
        .map(|p| {
            let r =
                parquet::file::reader::SerializedFileReader::new(std::fs::File::open(p).unwrap())
                    .unwrap_or_else(|e| panic!("{} is not a whole Parquet file: {e}", p.display()));
            parquet::file::reader::FileReader::metadata(&r)
                .file_metadata()
                .num_rows() as u64
        })
        .sum()
}

/// Rows per canonical table of `inputs`, as `rocpd info --json` counts them.
pub fn info_rows(inputs: &[PathBuf]) -> BTreeMap<String, u64> {
    let mut args = vec!["info".to_string(), "--json".into(), "-i".into()];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = rocpd(&refs);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["rows"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
        .collect()
}

/// The name of the table `<base>_<uuid>` of the one table set in `c`'s database.
pub fn table_of(c: &rusqlite::Connection, base: &str) -> String {
    c.query_row(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?1 ESCAPE '\\'",
        [format!("{}\\_%", base.replace('_', "\\_"))],
        |r| r.get(0),
    )
    .unwrap()
}

//! Real conversions: RocPD databases → OTF2 archives, checked by an independent parse (and
//! by `otf2-print` from Debian's `otf2-tools` when it is installed).

mod otf2_reader;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use rocpd_db::Database;
use rocpd_model::{Catalog, Table};
use rocpd_otf2::{Otf2Options, Otf2Sink};
use rocpd_pipeline::{BatchStream, OutputReport, Sink, TimeMerge};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/generated");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "db"))
        .collect();
    v.sort();
    v
}

/// Feeds every table of `dbs`, merged in time order, into `sink`; returns the rows read per
/// table. With `stop_after`, stops after that many chunks without finishing.
fn feed(dbs: &[PathBuf], sink: &mut dyn Sink, stop_after: Option<usize>) -> BTreeMap<Table, u64> {
    let dbs: Vec<Database> = dbs.iter().map(|p| Database::open(p).unwrap()).collect();
    let mut cat = Catalog::default();
    for db in &dbs {
        cat.extend(db.catalog(cat.sources.len() as u32).unwrap());
    }
    sink.begin(&Arc::new(cat)).unwrap();
    let mut queries = Vec::new();
    let mut first = 0u32;
    for db in &dbs {
        queries.extend(
            db.queries(first, 300, &rocpd_model::Projection::all().without("args"))
                .unwrap(),
        );
        first += db.table_sets().len() as u32;
    }
    let mut streams: Vec<Box<dyn BatchStream + '_>> = Vec::new();
    for q in &mut queries {
        streams.push(Box::new(q.stream().unwrap()));
    }
    let mut merge = TimeMerge::new(streams);
    let mut rows = BTreeMap::new();
    let mut n = 0;
    while let Some(chunk) = merge.next_chunk().unwrap() {
        for (t, k) in chunk.rows_per_table() {
            *rows.entry(t).or_default() += k as u64;
        }
        sink.write(&chunk).unwrap();
        n += 1;
        if stop_after == Some(n) {
            break;
        }
    }
    rows
}

fn convert(
    dbs: &[PathBuf],
    anchor: &Path,
    opts: Otf2Options,
) -> (OutputReport, BTreeMap<Table, u64>) {
    let mut sink = Box::new(Otf2Sink::new(anchor, opts));
    let rows = feed(dbs, sink.as_mut(), None);
    let mut reports = sink.finish().unwrap();
    assert_eq!(reports.len(), 1);
    (reports.remove(0), rows)
}

fn otf2_print() -> Option<PathBuf> {
    let ok = Command::new("otf2-print")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some(PathBuf::from("otf2-print"))
    } else {
        eprintln!(
            "note: otf2-print not on PATH (Debian otf2-tools); skipping the reference reader check"
        );
        None
    }
}

/// `otf2-print --silent -Werror` must succeed without complaints; then the full listing's
/// ENTER, LEAVE and METRIC lines are counted.
fn reference_check(anchor: &Path) -> Option<(u64, u64, u64)> {
    let bin = otf2_print()?;
    let out = Command::new(&bin)
        .args(["--silent", "-Werror"])
        .arg(anchor)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "otf2-print failed: {stderr}");
    assert!(!stderr.contains("error"), "otf2-print complained: {stderr}");
    let mut child = Command::new(&bin)
        .arg(anchor)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut enter, mut leave, mut metric) = (0, 0, 0);
    use std::io::BufRead;
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).split(b'\n') {
        let line = line.unwrap();
        if line.starts_with(b"ENTER ") {
            enter += 1;
        } else if line.starts_with(b"LEAVE ") {
            leave += 1;
        } else if line.starts_with(b"METRIC ") {
            metric += 1;
        }
    }
    assert!(child.wait().unwrap().success());
    Some((enter, leave, metric))
}

/// Checks an archive against the rows that went in; returns the parse.
fn check(
    anchor: &Path,
    rows: &BTreeMap<Table, u64>,
) -> (otf2_reader::Archive, otf2_reader::Events) {
    let stem = anchor.file_stem().unwrap().to_str().unwrap();
    let dir = anchor.parent().unwrap();
    assert!(anchor.is_file());
    assert!(dir.join(format!("{stem}.def")).is_file());
    assert!(dir.join(stem).is_dir());
    let ar = otf2_reader::read(anchor);
    let ev = otf2_reader::events(anchor, &ar);

    let count = |f: &dyn Fn(&str, u8, u8) -> bool| -> u64 {
        ev.enters
            .iter()
            .filter(|((c, p, r), _)| f(c, *p, *r))
            .map(|(_, n)| n)
            .sum()
    };
    let rows_of = |t: Table| rows.get(&t).copied().unwrap_or(0);
    const SAMPLING: u8 = 21;
    assert_eq!(
        count(&|c, _, _| c == "kernel_dispatch"),
        rows_of(Table::KernelDispatch)
    );
    assert_eq!(
        count(&|c, _, r| c == "memory_copy" && r == 30),
        rows_of(Table::MemoryCopy)
    );
    assert_eq!(
        count(&|c, _, _| c == "memory_allocation" || c == "scratch_memory"),
        rows_of(Table::MemoryAllocation)
    );
    assert_eq!(count(&|_, p, _| p == SAMPLING), rows_of(Table::Sample));
    assert_eq!(
        count(&|c, p, _| c == "marker_api" && p != SAMPLING),
        rows_of(Table::Marker)
    );
    let slices: u64 = [
        Table::Region,
        Table::Marker,
        Table::Sample,
        Table::KernelDispatch,
        Table::MemoryCopy,
        Table::MemoryAllocation,
    ]
    .iter()
    .map(|&t| rows_of(t))
    .sum();
    let enters: u64 = ev.enters.values().sum();
    assert_eq!(enters, slices);
    assert_eq!(ev.leaves, slices);
    let pmc = rows_of(Table::PmcValue);
    assert!(ev.metrics <= pmc);
    assert_eq!(ev.metrics == 0, pmc == 0);

    // Definitions: each accelerator and process once, every name unique within its kind.
    let mut names: Vec<_> = ar
        .groups
        .values()
        .map(|g| (g.0.clone(), g.1, g.2))
        .collect();
    names.sort();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before, "a location group defined twice");

    if let Some((e, l, m)) = reference_check(anchor) {
        assert_eq!(
            (e, l, m),
            (enters, ev.leaves, ev.metrics),
            "otf2-print listing"
        );
    }
    (ar, ev)
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn fixtures_convert_to_a_valid_archive() {
    let out = tempfile::tempdir().unwrap();
    let anchor = out.path().join("out_results.otf2");
    let (report, rows) = convert(&fixtures(), &anchor, Otf2Options::default());
    let (ar, ev) = check(&anchor, &rows);

    // Only the archive is left: anchor, definitions, event directory.
    let names: Vec<String> = files(out.path())
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["out_results", "out_results.def", "out_results.otf2"]
    );
    assert_eq!(report.path, anchor);
    let total: u64 = rows.values().sum();
    assert_eq!(report.rows.values().sum::<u64>(), total);
    let on_disk: u64 = walk(out.path())
        .iter()
        .map(|p| p.metadata().unwrap().len())
        .sum();
    assert_eq!(report.bytes, on_disk);

    // Clock in ns; three processes on two hosts; each GPU once per host.
    assert_eq!(ar.clock.0, 1_000_000_000);
    let hosts: Vec<_> = ar.nodes.values().filter(|n| n.1 == "node").collect();
    assert_eq!(hosts.len(), 2);
    let processes = ar.groups.values().filter(|g| g.1 == 1).count();
    assert_eq!(processes, 3);
    let accelerators: Vec<_> = ar.groups.values().filter(|g| g.1 == 2).collect();
    assert!(!accelerators.is_empty());
    assert!(accelerators.len() <= 4, "{accelerators:?}");
    // Location names follow rocpd's; overlapping kernels got extra locations.
    let loc_names: Vec<&str> = ar.locations.iter().map(|(_, l)| l.name.as_str()).collect();
    assert!(loc_names.iter().any(|n| n.starts_with("Thread ")));
    assert!(loc_names
        .iter()
        .any(|n| n.starts_with("Compute on GPU Agent-")));
    assert!(loc_names.iter().any(|n| n.contains(", Copy to ")));
    assert!(loc_names.iter().any(|n| n.contains("(overlap 1)")));
    assert!(report.notes.iter().any(|n| n.contains("overlap")));
    for (_, l) in &ar.locations {
        let group_type = ar.groups[&l.group].1;
        if l.name.starts_with("Compute on") {
            assert_eq!((l.kind, group_type), (2, 2), "{}", l.name);
        } else if l.name.starts_with("Thread ") && !l.name.contains("Copy") {
            assert_eq!((l.kind, group_type), (1, 1), "{}", l.name);
        }
    }
    // Region roles.
    let roles: std::collections::BTreeSet<u8> = ar.regions.values().map(|r| r.role).collect();
    for r in [1, 30, 35, 36] {
        assert!(roles.contains(&r), "role {r} missing: {roles:?}");
    }
    // ROCTx ranges are named by their message.
    assert!(ar
        .regions
        .values()
        .any(|r| r.paradigm == 1 && !r.name.starts_with("roctx")));
    assert!(ar.metric_classes > 0);
    assert_eq!(ar.metric_members, ar.metric_classes);
    assert!(ev.chunks as usize >= ar.locations.len());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in files(dir) {
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_larger_trace_spills_buffers_and_gives_the_same_archive() {
    let data = tempfile::tempdir().unwrap();
    let cfg = rocpd_gen::GenConfig {
        seed: 3,
        nodes: 1,
        processes: 2,
        gpus_per_node: 2,
        threads_per_process: 3,
        iterations: 2500,
        odd_names: true,
        row_ids: std::env::var_os("ROCPD_TEST_ROW_IDS").is_some(),
    };
    let dbs = rocpd_gen::generate(&cfg, data.path()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let big = out.path().join("big.otf2");
    let small = out.path().join("small.otf2");
    let (r1, rows) = convert(&dbs, &big, Otf2Options::default());
    let (r2, _) = convert(&dbs, &small, Otf2Options { buffer_bytes: 4096 });
    let (ar, ev) = check(&small, &rows);
    assert!(
        r2.notes.iter().any(|n| n.contains("appended")),
        "{:?}",
        r2.notes
    );
    assert_eq!(r1.bytes, r2.bytes);
    // Several chunks in at least one location, and byte-identical files either way.
    let largest = ar
        .locations
        .iter()
        .map(|(id, _)| {
            std::fs::metadata(otf2_reader::event_file(&small, *id))
                .unwrap()
                .len()
        })
        .max()
        .unwrap();
    assert!(
        ev.chunks as usize > ar.locations.len(),
        "no location needed a second chunk (largest {largest})"
    );
    for (id, _) in &ar.locations {
        let a = std::fs::read(otf2_reader::event_file(&big, *id)).unwrap();
        let b = std::fs::read(otf2_reader::event_file(&small, *id)).unwrap();
        assert!(a == b, "location {id} differs with small buffers");
    }
    assert_eq!(
        std::fs::read(big.with_extension("def")).unwrap().len(),
        std::fs::read(small.with_extension("def")).unwrap().len()
    );
}

#[test]
fn a_dropped_sink_leaves_nothing() {
    let out = tempfile::tempdir().unwrap();
    let anchor = out.path().join("sub").join("x.otf2");
    {
        let mut sink = Otf2Sink::new(&anchor, Otf2Options { buffer_bytes: 512 });
        feed(&fixtures(), &mut sink, Some(3));
        assert!(!files(&out.path().join("sub")).is_empty());
    }
    assert!(files(&out.path().join("sub")).is_empty());
}

#[test]
fn an_existing_archive_is_refused() {
    let out = tempfile::tempdir().unwrap();
    let anchor = out.path().join("a.otf2");
    std::fs::create_dir(out.path().join("a")).unwrap();
    let mut sink = Otf2Sink::new(&anchor, Otf2Options::default());
    let err = sink.begin(&Arc::new(Catalog::default())).unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    let mut sink = Otf2Sink::new(&out.path().join("b.trace"), Otf2Options::default());
    assert!(sink.begin(&Arc::new(Catalog::default())).is_err());
}

#[test]
fn an_empty_stream_gives_a_valid_empty_archive() {
    let out = tempfile::tempdir().unwrap();
    let anchor = out.path().join("empty.otf2");
    let mut sink = Box::new(Otf2Sink::new(&anchor, Otf2Options::default()));
    sink.begin(&Arc::new(Catalog::default())).unwrap();
    sink.finish().unwrap();
    check(&anchor, &BTreeMap::new());
}

enum V {
    U(u32),
    I(i64),
    F(f64),
    S(&'static str),
}

/// One batch of `table` with the given rows (named values; every other column null).
fn batch(table: Table, rows: &[&[(&str, V)]]) -> rocpd_model::EventBatch {
    use rocpd_model::{BatchBuilder, ColumnBuilder};
    let mut b = BatchBuilder::new(table, rows.len());
    for row in rows {
        for (i, spec) in table.columns().iter().enumerate() {
            let v = row.iter().find(|(n, _)| *n == spec.name).map(|(_, v)| v);
            match (b.column(i), v) {
                (ColumnBuilder::U32(c), Some(V::U(x))) => c.append_value(*x),
                (ColumnBuilder::I64(c), Some(V::I(x))) => c.append_value(*x),
                (ColumnBuilder::F64(c), Some(V::F(x))) => c.append_value(*x),
                (ColumnBuilder::Str(c), Some(V::S(x))) => c.append_value(x),
                (ColumnBuilder::Str(c), None) if !spec.nullable => c.append_value(""),
                (ColumnBuilder::I64(c), None) if !spec.nullable => c.append_value(0),
                (c, None) => c.push_null(),
                (_, Some(_)) => panic!("wrong type for {}", spec.name),
            }
        }
        b.end_row();
    }
    rocpd_model::EventBatch {
        table,
        batch: b.finish().unwrap(),
    }
}

#[test]
fn overlaps_ties_zero_and_negative_durations_stay_nested_and_ordered() {
    use V::*;
    let region = |start: i64, end: i64, name: &'static str| -> Vec<(&'static str, V)> {
        vec![
            ("source", U(0)),
            ("pid", I(1)),
            ("tid", I(1)),
            ("start", I(start)),
            ("end", I(end)),
            ("name", S(name)),
            ("category", S("HIP_RUNTIME_API")),
        ]
    };
    let rows = [
        region(-50, -10, "negative_time"),
        region(100, 200, "a"),
        region(120, 110, "ends_before_it_starts"),
        region(150, 250, "overlaps_a"),
        region(200, 200, "zero_at_end_of_a"),
    ];
    let rows: Vec<&[(&str, V)]> = rows.iter().map(|r| r.as_slice()).collect();
    let kernel = |id: i64| -> Vec<(&'static str, V)> {
        vec![
            ("source", U(0)),
            ("pid", I(1)),
            ("tid", I(1)),
            ("start", I(300)),
            ("end", I(400)),
            ("agent_id", I(7)),
            ("queue_id", I(9)),
            ("dispatch_id", I(id)),
            ("kernel_name", S("k")),
            ("event_id", I(id)),
        ]
    };
    let kernels = [kernel(1), kernel(2)];
    let kernels: Vec<&[(&str, V)]> = kernels.iter().map(|r| r.as_slice()).collect();
    let pmc = |event: i64, value: f64| -> Vec<(&'static str, V)> {
        vec![
            ("source", U(0)),
            ("pid", I(1)),
            ("start", I(300)),
            ("end", I(400)),
            ("pmc_id", I(1)),
            ("counter_name", S("SQ_WAVES")),
            ("value", F(value)),
            ("agent_id", I(7)),
            ("dispatch_id", I(event)),
            ("event_id", I(event)),
        ]
    };
    let pmcs = [pmc(1, 1.0), pmc(1, 2.0), pmc(2, 5.0)];
    let pmcs: Vec<&[(&str, V)]> = pmcs.iter().map(|r| r.as_slice()).collect();
    let chunk = rocpd_pipeline::Chunk {
        batches: vec![
            batch(Table::Region, &rows),
            batch(Table::KernelDispatch, &kernels),
            batch(Table::PmcValue, &pmcs),
        ],
    };

    let out = tempfile::tempdir().unwrap();
    let anchor = out.path().join("edge.otf2");
    let mut sink = Box::new(Otf2Sink::new(&anchor, Otf2Options::default()));
    sink.begin(&Arc::new(Catalog::default())).unwrap();
    sink.write(&chunk).unwrap();
    let report = sink.finish().unwrap().remove(0);
    let rows_in: BTreeMap<Table, u64> = [
        (Table::Region, 5),
        (Table::KernelDispatch, 2),
        (Table::PmcValue, 3),
    ]
    .into_iter()
    .collect();
    let (ar, ev) = check(&anchor, &rows_in);
    let names: Vec<&str> = ar.locations.iter().map(|(_, l)| l.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Thread 1",
            "Thread 1 (overlap 1)",
            "Compute on UNK Agent-7, Queue 0 (pid 1)"
        ]
    );
    assert_eq!(
        ev.metrics, 2,
        "dimension instances of one (event, counter) are summed"
    );
    assert_eq!(ar.clock.1, 0, "negative timestamps are written as 0");
    let notes = report.notes.join("\n");
    assert!(
        notes.contains("1 events ended before they started"),
        "{notes}"
    );
    assert!(
        notes.contains("2 events had negative timestamps"),
        "{notes}"
    );
    assert!(notes.contains("1 slices overlapped"), "{notes}");
}

/// Split outputs are several sinks writing archives side by side in one directory.
#[test]
fn archives_written_side_by_side_stay_independent() {
    let out = tempfile::tempdir().unwrap();
    let fx = fixtures();
    let a = out.path().join("out_part-001_results.otf2");
    let b = out.path().join("out_part-002_results.otf2");
    let (_, rows_a) = convert(&fx[..1], &a, Otf2Options { buffer_bytes: 1024 });
    let (_, rows_b) = convert(&fx[1..], &b, Otf2Options { buffer_bytes: 1024 });
    check(&a, &rows_a);
    check(&b, &rows_b);
    assert_eq!(files(out.path()).len(), 6);

    // The same anchor twice at once: the first to finish wins, the second fails cleanly.
    let c = out.path().join("same.otf2");
    let mut first = Box::new(Otf2Sink::new(&c, Otf2Options::default()));
    let mut second = Box::new(Otf2Sink::new(&c, Otf2Options::default()));
    let rows = feed(&fx[..1], first.as_mut(), None);
    feed(&fx[..1], second.as_mut(), None);
    first.finish().unwrap();
    let err = second.finish().unwrap_err();
    assert!(err.to_string().contains("not replaced"), "{err}");
    check(&c, &rows);
    assert_eq!(files(out.path()).len(), 9, "{:?}", files(out.path()));
}

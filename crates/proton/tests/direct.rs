//! The direct Proton readers against their database: `import` writes what a reader reads
//! through the one RocPD writer (`rocpd_db::RocpdSink`), and every column of every region,
//! the catalog, span and counts read back from that database equal what the reader gave,
//! however its sort spills. (The importer's own writer, which these tests compared with
//! before, is gone; `real.rs`, `hostile.rs` and `chrome_stream.rs` keep the values it
//! wrote.)

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use rocpd_model::{Catalog, Projection, Table};
use rocpd_pipeline::{SortOptions, Source, StreamOptions};
use rocpd_proton::{ChromeTraceSource, ProtonKind, ProtonSource};
use serde_json::Value;

/// Every region of `source`, in one batch.
fn regions(source: &dyn Source, batch_rows: usize) -> RecordBatch {
    let options = StreamOptions {
        projection: Projection::all(),
        batch_rows,
        tables: None,
    };
    let mut prepared = source.prepare(0, &options).unwrap();
    let mut batches = Vec::new();
    for p in prepared.iter_mut() {
        if p.table() != Table::Region {
            continue;
        }
        let mut s = p.open().unwrap();
        while let Some(b) = s.next_batch().unwrap() {
            batches.push(b);
        }
    }
    arrow_select::concat::concat_batches(&Table::Region.schema(), &batches).unwrap()
}

/// The catalog without what names the file read (a temporary database, or the trace).
fn comparable(mut c: Catalog) -> String {
    for s in &mut c.sources {
        s.path = PathBuf::new();
        s.format = String::new();
    }
    serde_json::to_string(&c).unwrap()
}

fn same_as_imported(file: &Path, sort: SortOptions) {
    let kind = rocpd_proton::sniff_file(file).unwrap().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let db_path = tmp.path().join("imported.db");
    let report = rocpd_proton::import(file, kind, &db_path).unwrap();
    let db = rocpd_db::Database::open(&db_path).unwrap();
    let direct = ProtonSource::open(file, kind)
        .unwrap()
        .with_sort_options(sort);
    assert_eq!(direct.kind(), kind);
    assert_eq!(direct.notes(), report.notes, "{}", file.display());
    assert_eq!(direct.guid(), report.guid);
    assert_eq!(
        comparable(db.catalog(0).unwrap()),
        comparable(direct.catalog(0).unwrap())
    );
    assert_eq!(
        Source::event_span(&db).unwrap(),
        direct.event_span().unwrap()
    );
    let counts: Vec<_> = Source::count_rows(&db)
        .unwrap()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
    let direct_counts: Vec<_> = direct
        .count_rows()
        .unwrap()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect();
    assert_eq!(counts, direct_counts, "{}", file.display());
    let (a, b) = (regions(&db, 7), regions(&direct, 5));
    assert_eq!(a.num_rows(), b.num_rows());
    for (i, col) in Table::Region.columns().iter().enumerate() {
        if col.name == "event_extdata" && kind == ProtonKind::ChromeTrace {
            // The same JSON object; `"document": 0` may sit elsewhere among the keys.
            let text = |batch: &RecordBatch, r: usize| -> Option<Value> {
                use arrow_array::cast::AsArray;
                use arrow_array::Array;
                let c = batch.column(i).as_string::<i32>();
                (!c.is_null(r)).then(|| serde_json::from_str(c.value(r)).unwrap())
            };
            for r in 0..a.num_rows() {
                assert_eq!(text(&a, r), text(&b, r), "{}: row {r}", file.display());
            }
            continue;
        }
        assert!(
            a.column(i).to_data() == b.column(i).to_data(),
            "{}: column {}: {:?} against {:?}",
            file.display(),
            col.name,
            a.column(i).slice(0, a.num_rows().min(3)),
            b.column(i).slice(0, b.num_rows().min(3))
        );
    }
}

#[test]
fn every_chrome_fixture_reads_as_its_imported_database() {
    let mut files = Vec::new();
    for dir in [
        "generated_cpu",
        "constructed",
        "real_gpu",
        "triton_test_fixtures",
    ] {
        let d = Path::new("../../fixtures/proton").join(dir);
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.to_string_lossy().ends_with(".chrome_trace") {
                files.push(p);
            }
        }
    }
    assert!(files.len() >= 5, "{files:?}");
    for f in &files {
        same_as_imported(f, SortOptions::default());
    }
}

#[test]
fn every_tree_fixture_reads_as_its_imported_database() {
    let mut files = Vec::new();
    for dir in [
        "generated_cpu",
        "constructed",
        "real_gpu",
        "triton_test_fixtures",
    ] {
        let d = Path::new("../../fixtures/proton").join(dir);
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let kind = rocpd_proton::sniff_file(&p).unwrap();
            if matches!(kind, Some(ProtonKind::Tree | ProtonKind::TreeMsgpack)) {
                files.push(p);
            }
        }
    }
    assert!(files.len() >= 25, "{files:?}");
    assert!(files
        .iter()
        .any(|f| f.to_string_lossy().ends_with(".hatchet_msgpack")));
    for f in &files {
        same_as_imported(f, SortOptions::default());
    }
}

#[test]
fn a_deep_tree_with_single_children_reads_as_imported_even_when_spilled() {
    // Every node has one child of its own width: parent and child tie on start and end,
    // the child ends first in the file, and the parent must still come first (id order).
    // Siblings at the bottom give the sorter something to reorder.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("deep.hatchet");
    let mut leaves = Vec::new();
    for k in 0..400 {
        leaves.push(format!(
            r#"{{"frame":{{"name":"leaf{k}","type":"function"}},"metrics":{{"time (ns)":{},"count":1}},"children":[]}}"#,
            k % 9 + 1
        ));
    }
    let mut node = format!(
        r#"{{"frame":{{"name":"bottom","type":"function"}},"metrics":{{"count":2}},"children":[{}]}}"#,
        leaves.join(",")
    );
    for d in 0..300 {
        node = format!(
            r#"{{"frame":{{"name":"level{d}","type":"function"}},"metrics":{{"count":1}},"children":[{node}]}}"#
        );
    }
    std::fs::write(
        &file,
        format!(r#"[{node},{{"HIP":{{"0":{{"arch":"gfx942"}},"1":{{"arch":"gfx942"}}}}}}]"#),
    )
    .unwrap();
    same_as_imported(&file, SortOptions::default());
    let spill = tmp.path().join("spill");
    std::fs::create_dir(&spill).unwrap();
    same_as_imported(
        &file,
        SortOptions {
            memory_bytes: 1,
            batch_rows: 8192,
            spill_dir: Some(spill.clone()),
        },
    );
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);
}

#[test]
fn a_bad_tree_is_refused_when_opened_with_the_importers_message() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, text, place) in [
        (
            "cut.hatchet",
            r#"[{"frame":{"name":"a"},"children":[{"frame""#,
            "byte",
        ),
        (
            "huge.hatchet",
            r#"[{"frame":{"name":"a"},"metrics":{"time (ns)":9223372036854775807},"children":[{"frame":{"name":"b"},"metrics":{"time (ns)":9223372036854775807}}]}]"#,
            "node",
        ),
        (
            "devices.hatchet",
            r#"[{"frame":{"name":"a"},"metrics":{"count":1}},{"HIP":[1]}]"#,
            "device metadata",
        ),
    ] {
        let file = tmp.path().join(name);
        std::fs::write(&file, text).unwrap();
        let direct = ProtonSource::open(&file, ProtonKind::Tree)
            .err()
            .unwrap()
            .to_string();
        let imported = rocpd_proton::import(&file, ProtonKind::Tree, &tmp.path().join("x.db"))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(direct, imported);
        assert!(direct.contains(name) && direct.contains(place), "{direct}");
    }
}

/// A frame name whose bytes are not UTF-8 is refused, as JSON and as MessagePack, at its
/// byte, by the direct reader and the import alike (it was replaced by U+FFFD silently).
#[test]
fn a_name_that_is_not_utf8_is_refused_at_its_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let mut json = br#"[{"frame":{"name":"a"#.to_vec();
    json.extend_from_slice(b"\xff\"},\"metrics\":{},\"children\":[]},{}]");
    let mut msgpack = vec![0x92, 0x83, 0xa5];
    msgpack.extend_from_slice(b"frame");
    msgpack.extend_from_slice(&[0x81, 0xa4]);
    msgpack.extend_from_slice(b"name");
    msgpack.extend_from_slice(&[0xa2, b'a', 0xff, 0xa7]);
    msgpack.extend_from_slice(b"metrics");
    msgpack.extend_from_slice(&[0x80, 0xa8]);
    msgpack.extend_from_slice(b"children");
    msgpack.extend_from_slice(&[0x90, 0x80]);
    for (name, bytes, at, kind) in [
        ("j.hatchet", json, 20, ProtonKind::Tree),
        ("m.hatchet_msgpack", msgpack, 16, ProtonKind::TreeMsgpack),
    ] {
        let file = tmp.path().join(name);
        std::fs::write(&file, &bytes).unwrap();
        assert_eq!(bytes[at], 0xff);
        assert_eq!(rocpd_proton::sniff_file(&file).unwrap(), Some(kind));
        let direct = ProtonSource::open(&file, kind).err().unwrap().to_string();
        let imported = rocpd_proton::import(&file, kind, &tmp.path().join("x.db"))
            .err()
            .unwrap()
            .to_string();
        assert_eq!(direct, imported);
        assert!(
            direct.contains(name)
                && direct.contains(&format!("byte {at}"))
                && direct.contains("not valid UTF-8"),
            "{direct}"
        );
    }
}

#[test]
fn late_bases_documents_names_and_disorder_read_as_imported_even_when_spilled() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("t.chrome_trace");
    // Two documents. The first: events out of time order, a thread named after its events,
    // a message argument, and its baseTimeNanoseconds after its events (moving them). The
    // second: a base before its events, a string pid and tid, metadata whose arguments
    // nest other names, and arguments that are not objects (a describing pass parses
    // only `args.name`; it must find the same names).
    let mut first = Vec::new();
    for k in 0..300 {
        let ts = (k * 37 % 300) as f64 * 1.5;
        first.push(format!(
            r#"{{"ph":"X","name":"k{}","cat":"kernel","pid":1,"tid":{},"ts":{ts},"dur":{},"args":{{"message":"m{k}","n":{k}}}}}"#,
            k % 7,
            k % 3,
            k % 5
        ));
    }
    first.push(
        r#"{"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"named late"}}"#.into(),
    );
    let doc1 = format!(
        r#"{{"traceEvents":[{}],"baseTimeNanoseconds":5000}}"#,
        first.join(",")
    );
    let doc2 = r#"{"baseTimeNanoseconds":100,"traceEvents":[{"ph":"X","name":"s","cat":"scope","pid":"dev","tid":"w0","ts":3.25,"dur":1},{"ph":"X","name":"t","pid":2,"tid":9,"ts":0.5,"dur":0},{"ph":"M","name":"thread_name","pid":"dev","tid":"w0","args":{"a":[1,{"name":"inner"}],"name":"worker zero","z":{"name":3}}},{"ph":"M","name":"process_name","pid":2,"args":["name","p"]},{"ph":"M","name":"process_name","pid":1,"args":{"name":"first","name":"named twice"}},{"ph":"X","name":"u","pid":2,"tid":9,"ts":0.75,"dur":1,"args":"text"},{"ph":"X","name":"v","pid":2,"tid":9,"ts":1,"dur":1,"args":[{"name":"x"},2]}]}"#;
    // More documents whose bases follow their events, one of them twice (the second
    // moves the events again): each region must take only its own document's shifts.
    let late = |k: usize, bases: &str| {
        format!(
            r#"{{"traceEvents":[{{"ph":"X","name":"d{k}a","pid":3,"tid":1,"ts":{k}.0,"dur":2}},{{"ph":"X","name":"d{k}b","pid":3,"tid":1,"ts":0.25,"dur":1}}],{bases}}}"#
        )
    };
    let more: Vec<String> = (0..6)
        .map(|k| match k {
            2 => late(k, r#""baseTimeNanoseconds":700,"baseTimeNanoseconds":-40"#),
            _ => late(k, &format!(r#""baseTimeNanoseconds":{}"#, 1000 * k)),
        })
        .collect();
    std::fs::write(&file, format!("{doc1}\n{doc2}\n{}\n", more.join("\n"))).unwrap();
    same_as_imported(&file, SortOptions::default());
    // A budget of one byte: every batch goes to disk and the runs are merged back.
    let spill = tmp.path().join("spill");
    std::fs::create_dir(&spill).unwrap();
    same_as_imported(
        &file,
        SortOptions {
            memory_bytes: 1,
            batch_rows: 8192,
            spill_dir: Some(spill.clone()),
        },
    );
    assert_eq!(
        std::fs::read_dir(&spill).unwrap().count(),
        0,
        "run files removed"
    );
}

#[test]
fn a_bad_trace_is_refused_when_opened_with_the_importers_message() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.chrome_trace");
    std::fs::write(
        &file,
        r#"{"traceEvents":[{"ph":"X","name":"a","ts":"soon"}]}"#,
    )
    .unwrap();
    let direct = ChromeTraceSource::open(&file).err().unwrap().to_string();
    let imported = rocpd_proton::import(&file, ProtonKind::ChromeTrace, &tmp.path().join("x.db"))
        .err()
        .unwrap()
        .to_string();
    assert_eq!(direct, imported);
    assert!(
        direct.contains("bad.chrome_trace") && direct.contains("event 0"),
        "{direct}"
    );
}

/// A trace or tree changed between the describing read and the stream fails the stream
/// with an error naming the file, not fewer or other regions; put back as it was, it
/// reads the same again (D163).
#[test]
fn a_file_changed_after_opening_fails_its_stream() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = Path::new("../../fixtures/proton/generated_cpu");
    let mut tried = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let from = e.unwrap().path();
        let Some(kind) = rocpd_proton::sniff_file(&from).unwrap() else {
            continue;
        };
        let path = tmp.path().join(from.file_name().unwrap());
        std::fs::copy(&from, &path).unwrap();
        let source = ProtonSource::open(&path, kind).unwrap();
        let all = regions(&source, 64);
        let original = std::fs::read(&path).unwrap();
        let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
        // One more byte of white space: still a valid file, yet changed.
        let mut longer = original.clone();
        longer.push(b'\n');
        std::fs::write(&path, &longer).unwrap();
        let options = StreamOptions {
            projection: Projection::all(),
            batch_rows: 64,
            tables: None,
        };
        let mut prepared = source.prepare(0, &options).unwrap();
        let e = match prepared[0].open() {
            Ok(_) => panic!("{}: the changed file streamed", path.display()),
            Err(e) => e.to_string(),
        };
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            e.contains(&name) && e.contains("whole file: changed while being converted"),
            "{e}"
        );
        drop(prepared);
        std::fs::write(&path, &original).unwrap();
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(modified).unwrap();
        assert_eq!(regions(&source, 64), all, "{name}");
        tried.insert(format!("{kind:?}"));
    }
    assert_eq!(tried.len(), 3, "kinds tried: {tried:?}");
}

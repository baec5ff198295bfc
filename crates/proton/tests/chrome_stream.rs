//! The chrome trace reader streams: what a later part of the file decides (names, a second
//! document, a base time after the events) still applies to the events read before it.

use std::path::Path;

use rocpd_proton::{import, ProtonKind};
use rusqlite::Connection;

fn import_text(dir: &Path, name: &str, text: &str) -> Result<Connection, String> {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    let dest = dir.join(format!("{name}.db"));
    import(&p, ProtonKind::ChromeTrace, &dest).map_err(|e| e.to_string())?;
    Ok(Connection::open(&dest).unwrap())
}

fn rows(c: &Connection, sql: &str) -> Vec<String> {
    let mut st = c.prepare(sql).unwrap();
    let n = st.column_count();
    st.query_map([], |r| {
        Ok((0..n)
            .map(|i| match r.get_ref(i).unwrap() {
                rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                rusqlite::types::ValueRef::Null => "NULL".into(),
                other => format!("{other:?}"),
            })
            .collect::<Vec<_>>()
            .join("|"))
    })
    .unwrap()
    .map(|r| r.unwrap())
    .collect()
}

const REGIONS: &str = "SELECT R.start, R.\"end\", R.tid, json_extract(E.extdata, '$.document') \
     FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id ORDER BY R.id";

#[test]
fn a_base_time_after_the_events_applies_to_them_as_one_before_would() {
    let d = tempfile::tempdir().unwrap();
    let events = r#"[{"ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1, "name": "a"},
                     {"ph": "X", "ts": 5, "dur": 1, "pid": 1, "tid": 1, "name": "b"}]"#;
    let before = format!(r#"{{"baseTimeNanoseconds": 1000000, "traceEvents": {events}}}"#);
    let after = format!(r#"{{"traceEvents": {events}, "baseTimeNanoseconds": 1000000}}"#);
    let a = import_text(d.path(), "before.chrome_trace", &before).unwrap();
    let b = import_text(d.path(), "after.chrome_trace", &after).unwrap();
    let want = rows(&a, REGIONS);
    assert_eq!(want, ["1001000|1003000|1|NULL", "1005000|1006000|1|NULL"]);
    assert_eq!(rows(&b, REGIONS), want);
    // A late base that pushes an event past the 64-bit range is refused, naming the
    // document, and leaves no database.
    let late = r#"{"traceEvents": [{"ph": "X", "ts": 9223372036854000, "dur": 1}],
                   "baseTimeNanoseconds": 9223372036854775000}"#;
    let e = import_text(d.path(), "late.chrome_trace", late).unwrap_err();
    assert!(
        e.contains("late.chrome_trace") && e.contains("document 0"),
        "{e}"
    );
    assert!(e.contains("baseTimeNanoseconds"), "{e}");
    assert!(!d.path().join("late.chrome_trace.db").exists());
}

#[test]
fn every_document_of_a_multi_document_file_is_numbered_and_a_single_one_is_not() {
    let d = tempfile::tempdir().unwrap();
    let doc = |tid: i64, ts: i64| {
        format!(
            r#"{{"traceEvents": [{{"ph": "X", "ts": {ts}, "dur": 1, "pid": 1, "tid": {tid}, "name": "k", "cat": "kernel"}}]}}"#
        )
    };
    let multi = format!("{}\n{}\n{}", doc(7, 1), doc(8, 2), doc(9, 3));
    let c = import_text(d.path(), "multi.chrome_trace", &multi).unwrap();
    assert_eq!(
        rows(&c, REGIONS),
        ["1000|2000|7|0", "2000|3000|8|1", "3000|4000|9|2"]
    );
    let one = import_text(d.path(), "one.chrome_trace", &doc(7, 1)).unwrap();
    assert_eq!(rows(&one, REGIONS), ["1000|2000|7|NULL"]);
}

#[test]
fn names_given_after_the_events_still_name_their_threads_and_processes() {
    let d = tempfile::tempdir().unwrap();
    let text = r#"{"traceEvents": [
        {"ph": "X", "ts": 1, "dur": 1, "pid": 3, "tid": 4, "name": "k"},
        {"ph": "X", "ts": 2, "dur": 1, "pid": 3, "tid": 5, "name": "k", "cat": "kernel"},
        {"ph": "M", "name": "thread_name", "pid": 3, "tid": 4, "args": {"name": "worker"}},
        {"ph": "M", "name": "process_name", "pid": 3, "args": {"name": "trainer"}}]}"#;
    let c = import_text(d.path(), "names.chrome_trace", text).unwrap();
    assert_eq!(
        rows(&c, "SELECT tid, name FROM rocpd_info_thread ORDER BY tid"),
        ["4|worker", "5|GPU Stream 5"]
    );
    assert_eq!(
        rows(&c, "SELECT pid, command FROM rocpd_info_process"),
        ["3|trainer"]
    );
}

#[test]
fn a_syntax_error_names_the_byte_it_is_at() {
    let d = tempfile::tempdir().unwrap();
    let text = r#"{"traceEvents": [{"ph": "X", "ts": 1,]}"#;
    let at = text.find(",]").unwrap() + 1;
    let e = import_text(d.path(), "bad.chrome_trace", text).unwrap_err();
    assert!(e.contains(&format!("byte {at}")), "{at}: {e}");
    // Cut short: the offset is the end of the file.
    let cut = &text[..20];
    let e = import_text(d.path(), "cut.chrome_trace", cut).unwrap_err();
    assert!(e.contains(&format!("byte {}", cut.len())), "{e}");
}

#[test]
fn many_late_bases_and_events_between_them_give_each_event_the_last_base() {
    let d = tempfile::tempdir().unwrap();
    let ev = |ts: i64, tid: i64| {
        format!(r#"{{"ph": "X", "ts": {ts}, "dur": 1, "pid": 1, "tid": {tid}, "name": "k"}}"#)
    };
    // Keys given again with no event between them are one shift; an event read after a
    // key carries that base and moves by the later ones only.
    let mut doc0 = format!(r#"{{"traceEvents": [{}]"#, ev(1, 1));
    for base in 1..=2000 {
        doc0.push_str(&format!(r#", "baseTimeNanoseconds": {base}"#));
    }
    doc0.push_str(&format!(
        r#", "traceEvents": [{}], "baseTimeNanoseconds": 7000}}"#,
        ev(2, 2)
    ));
    let doc1 = format!(
        r#"{{"traceEvents": [{}], "baseTimeNanoseconds": 10, "baseTimeNanoseconds": 20}}"#,
        ev(1, 3)
    );
    let c = import_text(d.path(), "bases.chrome_trace", &format!("{doc0}\n{doc1}")).unwrap();
    assert_eq!(
        rows(&c, REGIONS),
        ["8000|9000|1|0", "9000|10000|2|0", "1020|2020|3|1"]
    );
}

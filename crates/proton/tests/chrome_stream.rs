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
    assert!(
        e.contains(&format!("byte {at}, document 0, event 0:")),
        "{at}: {e}"
    );
    // Cut short: the offset is the end of the file.
    let cut = &text[..20];
    let e = import_text(d.path(), "cut.chrome_trace", cut).unwrap_err();
    assert!(
        e.contains(&format!("byte {}, document 0, event 0:", cut.len())),
        "{e}"
    );
    // In a later event of a later document, that event is named; past the events, only
    // the byte.
    let ev = r#"{"ph": "X", "ts": 1, "dur": 1, "pid": 1, "tid": 1, "name": "k"}"#;
    let text = format!(
        "{{\"traceEvents\": [{ev}]}}\n{{\"traceEvents\": [{ev}, {ev}, {{\"ph\": \"X\" \"ts\": 2}}]}}"
    );
    let at = text.find(r#" "ts": 2"#).unwrap() + 1;
    let e = import_text(d.path(), "later.chrome_trace", &text).unwrap_err();
    assert!(
        e.contains(&format!("byte {at}, document 1, event 2:")),
        "{at}: {e}"
    );
    let text = format!(r#"{{"traceEvents": [{ev}], "other": [1,]}}"#);
    let at = text.find(",]").unwrap() + 1;
    let e = import_text(d.path(), "after.chrome_trace", &text).unwrap_err();
    assert!(e.contains(&format!("byte {at}:")), "{at}: {e}");
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

#[test]
fn processes_never_share_a_pid_and_a_missing_pid_is_pid_zero() {
    let d = tempfile::tempdir().unwrap();
    let x = |pid: &str, tid: &str| {
        format!(r#"{{"ph": "X", "ts": 1, "dur": 1, {pid} {tid} "name": "k"}}"#)
    };
    let trace = |events: &[String]| format!(r#"{{"traceEvents": [{}]}}"#, events.join(","));
    let pids = |c: &Connection| rows(c, "SELECT pid, tid FROM rocpd_region ORDER BY id");
    // A string pid's synthetic pid and a numeric pid of the same value, in both orders.
    let a = x(r#""pid": "kern Core0 CTA0","#, r#""tid": 1,"#);
    let b = x(r#""pid": 1000001,"#, r#""tid": 2,"#);
    let c = import_text(d.path(), "ab.chrome_trace", &trace(&[a.clone(), b.clone()])).unwrap();
    assert_eq!(pids(&c), ["1000001|1", "1000002|2"]);
    let c = import_text(d.path(), "ba.chrome_trace", &trace(&[b, a])).unwrap();
    assert_eq!(pids(&c), ["1000001|2", "1000002|1"]);
    // No pid is pid 0, whichever comes first; `-0` is 0 too.
    let none = x("", r#""tid": 0,"#);
    let zero = x(r#""pid": 0,"#, r#""tid": 0,"#);
    let minus = x(r#""pid": -0,"#, r#""tid": 0,"#);
    for (name, events) in [
        (
            "n0.chrome_trace",
            [none.clone(), zero.clone(), minus.clone()],
        ),
        ("0n.chrome_trace", [zero, minus, none]),
    ] {
        let c = import_text(d.path(), name, &trace(&events)).unwrap();
        assert_eq!(pids(&c), ["0|0", "0|0", "0|0"], "{name}");
    }
}

#[test]
fn whole_microsecond_times_are_exact_past_two_to_the_53_nanoseconds() {
    let d = tempfile::tempdir().unwrap();
    let text = r#"{"traceEvents": [
        {"ph": "X", "ts": 1700000000000001, "dur": 3, "pid": 1, "tid": 1, "name": "k"},
        {"ph": "X", "ts": 1700000000000003.5, "dur": 0.25, "pid": 1, "tid": 1, "name": "k"}]}"#;
    let c = import_text(d.path(), "epoch.chrome_trace", text).unwrap();
    assert_eq!(
        rows(&c, "SELECT start, \"end\" FROM rocpd_region ORDER BY id"),
        [
            "1700000000000001000|1700000000000004000",
            // A float: rounded through f64 as before (within 128 ns at this size).
            "1700000000000003584|1700000000000003834"
        ]
    );
}

#[test]
fn made_up_phases_are_counted_as_one_kind() {
    let d = tempfile::tempdir().unwrap();
    let mut events: Vec<String> = (0..500)
        .map(|i| format!(r#"{{"ph": "Z{i}", "ts": 1}}"#))
        .collect();
    events.push(r#"{"ph": "i", "ts": 1}"#.into());
    events.push(r#"{"ph": "X", "ts": 1, "dur": 1, "pid": 1, "tid": 1, "name": "k"}"#.into());
    let p = d.path().join("phases.chrome_trace");
    std::fs::write(&p, format!(r#"{{"traceEvents": [{}]}}"#, events.join(","))).unwrap();
    let report = import(&p, ProtonKind::ChromeTrace, &d.path().join("phases.db")).unwrap();
    let ignored: Vec<&String> = report
        .notes
        .iter()
        .filter(|n| n.contains("ignored"))
        .collect();
    assert_eq!(ignored.len(), 2, "{:?}", report.notes);
    assert!(
        ignored
            .iter()
            .any(|n| n.contains("500 events with a ph of no known phase")),
        "{ignored:?}"
    );
    assert!(
        ignored.iter().any(|n| n.contains("1 events with ph \"i\"")),
        "{ignored:?}"
    );
}

#[test]
fn a_name_or_category_that_is_not_text_is_refused() {
    let d = tempfile::tempdir().unwrap();
    for (i, field) in [r#""name": 123"#, r#""cat": ["kernel"]"#]
        .iter()
        .enumerate()
    {
        let text = format!(
            r#"{{"traceEvents": [{{"ph": "X", "ts": 1, "dur": 1, "pid": 1, "tid": 1, {field}}}]}}"#
        );
        let e = import_text(d.path(), &format!("t{i}.chrome_trace"), &text).unwrap_err();
        let key = &field[..field.find(':').unwrap()];
        assert!(e.contains(key) && e.contains("expected a string"), "{e}");
        assert!(e.contains("event 0"), "{e}");
    }
}

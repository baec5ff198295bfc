//! `.chrome_trace` (Proton trace mode) → regions on their pid/tid, streaming.
//!
//! The file is read once, through serde_json's reader-based deserializer with visitors
//! over each document and its `traceEvents` array: one event is held at a time (as a small
//! `Value`), never the file or the document, so memory does not grow with the trace. What
//! the whole file decides is settled at the end, in the database being written: thread
//! and process names (`ph: "M"` events may come after the events they name), the
//! `document` field of the first document's events (known to be needed once a second
//! document starts), and a `baseTimeNanoseconds` that follows its document's events.

use rocpd_model::tracked::{ReadLimit, TrackedReader};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::io::{BufRead, BufReader};
use std::path::Path;

use rocpd_model::{Error, Result};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::pull::VALUE_BYTES;

/// Where the regions of a chrome trace go: the RocPD writer of an import, or the direct
/// reader (`crate::direct`), which reads the file twice and applies on its second pass
/// what its first learned (times moved by a late base, the first document's number).
pub(crate) trait RegionOut {
    /// One complete event, with its event id [`RegionOut::next_event_id`]; `ext` is the
    /// event's extdata object.
    fn put_region(&mut self, r: &Region<'_>, ext: Map<String, Value>) -> Result<()>;
    /// The id the next region gets (ids count up from 1 in file order).
    fn next_event_id(&self) -> i64;
    /// Adds `delta` to the times of the regions with ids `from..to`; `false` (nothing
    /// changed) when a time would leave the signed 64-bit range.
    fn shift_regions(&mut self, from: i64, to: i64, delta: i64) -> Result<bool>;
    /// Gives the regions with ids below `end` the extdata field `"document": 0`.
    fn mark_document_zero(&mut self, end: i64) -> Result<()>;
    /// A new JSON document of the file starts (its regions follow).
    fn begin_document(&mut self) {}
}

/// A complete event as a region, its extdata aside.
pub(crate) struct Region<'a> {
    pub pid: i64,
    pub tid: i64,
    pub start: i64,
    pub end: i64,
    pub name: &'a str,
    pub category: &'a str,
}

/// The key a pid or tid is known by: numbers by their value (`-0` is `0`), a missing one
/// as `0`, strings as themselves.
fn key_of(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "0".into(),
        Some(Value::String(s)) => format!("s:{s}"),
        Some(other) => match int_of(other) {
            Ok(i) => i.to_string(),
            Err(_) => other.to_string(),
        },
    }
}

/// The phases of the Trace Event Format; any other `ph` is counted as one kind, so that
/// a file of made-up phases cannot make a note (and a map entry) per event.
const PHASES: &[&str] = &[
    "B", "E", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "O", "N", "D", "S", "T", "p", "F",
    "R", "c", "(", ")", "",
];

/// A number as a time in µs: an integer exactly (times since the epoch pass 2^53 ns), a
/// float rounded to whole nanoseconds; `None` when it does not fit `i64` ns.
fn us_value_to_ns(v: &Value) -> Option<i64> {
    match v.as_i64() {
        Some(us) => us.checked_mul(1000),
        None => us_to_ns(v.as_f64()?),
    }
}

/// An optional text field of an event: absent or `null` is empty, anything but a string
/// an error message.
fn text_field<'v>(ev: &'v Value, key: &str) -> std::result::Result<&'v str, String> {
    match ev.get(key) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!(
            "\"{key}\": expected a string, found {}",
            describe(other)
        )),
    }
}

pub(crate) use rocpd_model::describe_json as describe;

/// 2^63 as a float: an `i64` is strictly inside ±2^63.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// A numeric id or time: an integer within `i64`, or an integral float strictly inside
/// ±2^63. Anything else is an error message (nothing wraps or saturates).
fn int_of(v: &Value) -> std::result::Result<i64, String> {
    let Value::Number(n) = v else {
        return Err(format!("expected a number, found {}", describe(v)));
    };
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f > -TWO_63 && f < TWO_63 => Ok(f as i64),
        Some(f) if f.fract() == 0.0 || n.as_u64().is_some() => {
            Err(format!("{n} does not fit a signed 64-bit integer"))
        }
        _ => Err(format!("expected an integer, found {n}")),
    }
}

/// Microseconds (a float) as whole nanoseconds, rounded; `None` when they do not fit `i64`.
fn us_to_ns(us: f64) -> Option<i64> {
    let ns = (us * 1000.0).round();
    (ns.is_finite() && ns > -TWO_63 && ns < TWO_63).then_some(ns as i64)
}

/// A pid or tid: a number (integral, within `i64`), a string, or absent / `null`
/// (`None` for the last three).
fn id_of(v: Option<&Value>, what: &str) -> std::result::Result<Option<i64>, String> {
    match v {
        None | Some(Value::Null) | Some(Value::String(_)) => Ok(None),
        Some(x @ Value::Number(_)) => int_of(x).map(Some).map_err(|m| format!("\"{what}\": {m}")),
        Some(other) => Err(format!(
            "\"{what}\": expected a number or a string, found {}",
            describe(other)
        )),
    }
}

/// A thread as first seen: what its name defaults to when no `thread_name` names it.
struct SeenThread {
    pid: i64,
    pid_key: String,
    tid_key: String,
    /// `GPU Stream N` (a kernel event) or `Thread N`.
    fallback: String,
}

/// Everything one import keeps between events: ids, names, counts. Bounded by the number
/// of distinct processes and threads, not by the number of events.
struct Trace<'a> {
    path: &'a Path,
    w: &'a mut dyn RegionOut,
    pids: HashMap<String, i64>,
    pid_names: HashMap<String, String>,
    tids: HashMap<(String, String), i64>,
    tid_names: HashMap<(String, String), String>,
    taken: HashSet<i64>,
    /// Pids given so far, numeric or synthetic.
    pids_taken: HashSet<i64>,
    next_pid: i64,
    next_tid: i64,
    threads: BTreeMap<i64, SeenThread>,
    ignored: BTreeMap<String, u64>,
    written: u64,
    negative_durations: u64,
    /// The document being read (0-based).
    doc: usize,
    /// Its `baseTimeNanoseconds`, once read.
    base: i64,
    /// The first event id of the current document, and whether its events were read.
    doc_first_event: i64,
    doc_events_seen: bool,
    /// The index of the event being read in its `traceEvents` array, while one is: a
    /// syntax error serde reports names it beside the byte.
    at_event: Option<usize>,
    /// Our own error, raised inside a visitor (serde's error only says "stop").
    failed: Option<Error>,
    /// The reader's bound on one event, key or base time (see [`Trace::bounded`]).
    limit: ReadLimit,
}

impl Trace<'_> {
    fn fail<E: de::Error>(&mut self, place: String, message: impl Into<String>) -> E {
        self.failed = Some(Error::input(self.path, place, message.into()));
        E::custom("stopped")
    }

    fn keep<T, E: de::Error>(&mut self, r: Result<T>) -> std::result::Result<T, E> {
        r.map_err(|e| {
            self.failed = Some(e);
            E::custom("stopped")
        })
    }

    /// One value read by serde (an event, a key, a base time), bounded to
    /// [`VALUE_BYTES`]: an event is held whole as a `Value`, which costs several times
    /// its text, so one giant string must not be read whole.
    fn bounded<T>(&self, read: impl FnOnce() -> T) -> T {
        self.limit.bounded(VALUE_BYTES as u64, read)
    }

    fn doc_place(&self) -> String {
        format!("document {}", self.doc)
    }

    /// One element of a `traceEvents` array.
    fn event(&mut self, ev: Value, ei: usize) -> Result<()> {
        let path = self.path;
        let place = || format!("document {}, event {ei}", self.doc);
        if !ev.is_object() {
            return Err(Error::input(
                path,
                place(),
                format!("expected an event object, found {}", describe(&ev)),
            ));
        }
        let ph = match ev.get("ph") {
            None => "",
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(Error::input(
                    path,
                    place(),
                    format!("\"ph\": expected a string, found {}", describe(other)),
                ))
            }
        };
        if ph == "M" {
            let name = ev.pointer("/args/name").and_then(Value::as_str);
            let (pk, tk) = (key_of(ev.get("pid")), key_of(ev.get("tid")));
            match (ev.get("name").and_then(Value::as_str), name) {
                (Some("process_name"), Some(n)) => {
                    self.pid_names.insert(pk, n.to_string());
                }
                (Some("thread_name"), Some(n)) => {
                    self.tid_names.insert((pk, tk), n.to_string());
                }
                _ => {}
            }
            return Ok(());
        }
        if ph != "X" {
            let what = if PHASES.contains(&ph) {
                format!("ph \"{ph}\"")
            } else {
                "a ph of no known phase".to_string()
            };
            *self.ignored.entry(what).or_default() += 1;
            return Ok(());
        }
        // The arguments move into the region's extdata, not copied.
        let mut ev = ev;
        let args = ev.as_object_mut().and_then(|o| o.remove("args"));
        let ts_value = match ev.get("ts") {
            Some(v @ Value::Number(_)) => v.clone(),
            _ => {
                return Err(Error::input(
                    path,
                    place(),
                    "complete event without a numeric \"ts\"",
                ))
            }
        };
        let ts = ts_value.as_f64().unwrap_or(0.0);
        let dur_value = match ev.get("dur") {
            None | Some(Value::Null) => Value::from(0),
            Some(v @ Value::Number(_)) => v.clone(),
            Some(v) => {
                return Err(Error::input(
                    path,
                    place(),
                    format!("\"dur\": expected a number, found {}", describe(v)),
                ))
            }
        };
        // A negative duration (clock skew) becomes 0; the notes count them.
        let dur_value = if dur_value.as_f64().is_some_and(|d| d < 0.0) {
            self.negative_durations += 1;
            Value::from(0)
        } else {
            dur_value
        };
        let dur = dur_value.as_f64().unwrap_or(0.0);
        let name = text_field(&ev, "name").map_err(|m| Error::input(path, place(), m))?;
        let cat = text_field(&ev, "cat").map_err(|m| Error::input(path, place(), m))?;
        let ts_ns = us_value_to_ns(&ts_value).ok_or_else(|| {
            Error::input(
                path,
                place(),
                format!("\"ts\": {ts} µs does not fit a signed 64-bit nanosecond time"),
            )
        })?;
        let dur_ns = us_value_to_ns(&dur_value).ok_or_else(|| {
            Error::input(
                path,
                place(),
                format!("\"dur\": {dur} µs does not fit a signed 64-bit nanosecond time"),
            )
        })?;
        let base = self.base;
        let start = base.checked_add(ts_ns).ok_or_else(|| {
            Error::input(
                path,
                place(),
                format!(
                    "start time baseTimeNanoseconds {base} + ts {ts_ns} ns does not fit a signed 64-bit integer"
                ),
            )
        })?;
        let end = start.checked_add(dur_ns).ok_or_else(|| {
            Error::input(
                path,
                place(),
                format!("end time {start} + dur {dur_ns} ns does not fit a signed 64-bit integer"),
            )
        })?;
        // A missing pid is pid 0 (a missing tid still gets a synthetic one, below).
        let num_pid = id_of(ev.get("pid"), "pid")
            .map_err(|m| Error::input(path, place(), m))?
            .or(match ev.get("pid") {
                None | Some(Value::Null) => Some(0),
                _ => None,
            });
        let num_tid = id_of(ev.get("tid"), "tid").map_err(|m| Error::input(path, place(), m))?;
        let pk = key_of(ev.get("pid"));
        let tk = key_of(ev.get("tid"));
        let string_pid = matches!(ev.get("pid"), Some(Value::String(_)));
        let pid = match self.pids.get(&pk) {
            Some(p) => *p,
            None => {
                // As for tids: a synthetic pid skips the numeric ones seen, and a numeric
                // pid a synthetic one took first gets one of its own; two processes
                // never share a pid.
                let p = match num_pid {
                    Some(p) if !string_pid && !self.pids_taken.contains(&p) => p,
                    _ => loop {
                        self.next_pid = self.next_pid.checked_add(1).ok_or_else(|| {
                            Error::input(path, place(), "too many synthetic pids")
                        })?;
                        if !self.pids_taken.contains(&self.next_pid) {
                            break self.next_pid;
                        }
                    },
                };
                self.pids_taken.insert(p);
                self.pids.insert(pk.clone(), p);
                p
            }
        };
        let tid_key = (pk, tk);
        let tid = match self.tids.get(&tid_key) {
            Some(t) => *t,
            None => {
                let t = match num_tid {
                    Some(t)
                        if !self.taken.contains(&t)
                            && !matches!(ev.get("tid"), Some(Value::String(_))) =>
                    {
                        t
                    }
                    _ => {
                        while self.taken.contains(&self.next_tid) {
                            self.next_tid = self.next_tid.checked_add(1).ok_or_else(|| {
                                Error::input(path, place(), "too many synthetic tids")
                            })?;
                        }
                        self.next_tid
                    }
                };
                self.taken.insert(t);
                self.tids.insert(tid_key.clone(), t);
                let fallback = if cat == "kernel" {
                    format!("GPU Stream {}", num_tid.unwrap_or(0))
                } else {
                    format!("Thread {}", num_tid.unwrap_or(0))
                };
                let (pid_key, tid_key) = tid_key;
                self.threads.insert(
                    t,
                    SeenThread {
                        pid,
                        pid_key,
                        tid_key,
                        fallback,
                    },
                );
                t
            }
        };
        let category = if string_pid {
            "PROTON_INTRA_KERNEL".to_string()
        } else if matches!(cat, "scope" | "metric" | "kernel") {
            format!("PROTON_{}", cat.to_ascii_uppercase())
        } else {
            "PROTON_TRACE".to_string()
        };
        let mut ext = match args {
            Some(Value::Object(m)) => m,
            Some(other) => {
                let mut m = Map::new();
                m.insert("args".into(), other);
                m
            }
            None => Map::new(),
        };
        ext.insert("cat".into(), cat.into());
        ext.insert("ts_us".into(), ts.into());
        ext.insert("dur_us".into(), dur.into());
        if let Some(p @ Value::String(_)) = ev.get("pid") {
            ext.insert("source_pid".into(), p.clone());
        }
        if let Some(t @ Value::String(_)) = ev.get("tid") {
            ext.insert("source_tid".into(), t.clone());
        }
        // Documents after the first are numbered here; the first one's events get theirs
        // once a second document shows the file has several (`finish_documents`).
        if self.doc > 0 {
            ext.insert("document".into(), self.doc.into());
        }
        let region = Region {
            pid,
            tid,
            start,
            end,
            name,
            category: &category,
        };
        self.w.put_region(&region, ext)?;
        self.written += 1;
        Ok(())
    }

    /// A document's `baseTimeNanoseconds`: checked, and applied to the events of the
    /// document already written when it follows them.
    fn set_base(&mut self, v: &Value) -> Result<()> {
        let base = match v {
            Value::Null => 0,
            v => int_of(v).map_err(|m| {
                Error::input(
                    self.path,
                    self.doc_place(),
                    format!("\"baseTimeNanoseconds\": {m}"),
                )
            })?,
        };
        if self.doc_events_seen {
            let (from, to) = (self.doc_first_event, self.w.next_event_id());
            let shift = base.checked_sub(self.base);
            let ok = match shift {
                Some(d) => self.w.shift_regions(from, to, d)?,
                None => false,
            };
            if !ok {
                return Err(Error::input(
                    self.path,
                    self.doc_place(),
                    format!(
                        "baseTimeNanoseconds {base} (after the events) moves their times out of the signed 64-bit range"
                    ),
                ));
            }
        }
        self.base = base;
        Ok(())
    }

    /// Starts document `doc`; at the second, the first document's events get their number.
    fn begin_document(&mut self) -> Result<()> {
        if self.doc == 1 {
            let end = self.w.next_event_id();
            self.w.mark_document_zero(end)?;
        }
        self.w.begin_document();
        self.base = 0;
        self.doc_first_event = self.w.next_event_id();
        self.doc_events_seen = false;
        Ok(())
    }
}

/// A document: an object with a `traceEvents` array, or an array of events.
struct DocSeed<'t, 'a>(&'t mut Trace<'a>);

impl<'de> DeserializeSeed<'de> for DocSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// The shape of a value that is not what a place expects, for messages.
fn found<E: de::Error>(t: &mut Trace<'_>, place: String, prefix: &str, what: String) -> E {
    t.fail(place, format!("{prefix}{what}"))
}

const DOC_SHAPE: &str =
    "a chrome trace document must be an object with a \"traceEvents\" array or an array of events, found ";

macro_rules! refuse_scalars {
    ($place:expr, $prefix:expr) => {
        fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<(), E> {
            let p = $place(&*self.0);
            Err(found(self.0, p, $prefix, describe(&Value::Bool(v))))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<(), E> {
            let p = $place(&*self.0);
            Err(found(self.0, p, $prefix, describe(&Value::from(v))))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<(), E> {
            let p = $place(&*self.0);
            Err(found(self.0, p, $prefix, describe(&Value::from(v))))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<(), E> {
            let p = $place(&*self.0);
            Err(found(self.0, p, $prefix, describe(&Value::from(v))))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<(), E> {
            let p = $place(&*self.0);
            Err(found(self.0, p, $prefix, describe(&Value::from(v))))
        }
        fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
            let p = $place(&*self.0);
            Err(found(self.0, p, $prefix, "null".into()))
        }
    };
}

impl<'de> Visitor<'de> for DocSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a chrome trace document")
    }

    refuse_scalars!(Trace::doc_place, DOC_SHAPE);

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<(), A::Error> {
        read_events(self.0, seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let t = self.0;
        let mut had_events = false;
        while let Some(key) = t.bounded(|| map.next_key::<String>())? {
            match key.as_str() {
                "traceEvents" => {
                    map.next_value_seed(EventsSeed(t))?;
                    had_events = true;
                }
                "baseTimeNanoseconds" => {
                    let v: Value = t.bounded(|| map.next_value())?;
                    let r = t.set_base(&v);
                    t.keep(r)?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !had_events {
            let p = t.doc_place();
            return Err(t.fail(
                p,
                "expected a \"traceEvents\" array of events, found an object without one",
            ));
        }
        Ok(())
    }
}

/// The value of a `traceEvents` key: an array of events.
struct EventsSeed<'t, 'a>(&'t mut Trace<'a>);

impl<'de> DeserializeSeed<'de> for EventsSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of events")
    }

    refuse_scalars!(
        Trace::doc_place,
        "\"traceEvents\": expected an array of events, found "
    );

    fn visit_map<A: MapAccess<'de>>(self, _map: A) -> std::result::Result<(), A::Error> {
        let p = self.0.doc_place();
        Err(self.0.fail(
            p,
            "\"traceEvents\": expected an array of events, found an object",
        ))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<(), A::Error> {
        read_events(self.0, seq)
    }
}

/// Every event of an array, one at a time.
fn read_events<'de, A: SeqAccess<'de>>(
    t: &mut Trace<'_>,
    mut seq: A,
) -> std::result::Result<(), A::Error> {
    let mut ei = 0usize;
    t.at_event = Some(ei);
    while let Some(ev) = t.bounded(|| seq.next_element::<Value>())? {
        t.doc_events_seen = true;
        let r = t.event(ev, ei);
        t.keep(r)?;
        ei += 1;
        t.at_event = Some(ei);
    }
    t.at_event = None;
    Ok(())
}

/// What a pass over a chrome trace found besides its regions.
#[derive(Clone)]
pub(crate) struct TraceRead {
    /// Every thread as (pid, tid, name), by tid.
    pub threads: Vec<(i64, i64, String)>,
    /// Every process by pid, with its name.
    pub processes: BTreeMap<i64, String>,
    /// Remarks for the report.
    pub notes: Vec<String>,
}

/// The extdata of a process of a chrome trace.
pub(crate) fn process_extdata(file_name: &str) -> String {
    serde_json::json!({"source_format": "proton-chrome-trace", "file": file_name}).to_string()
}

/// Reads a chrome trace once, giving its regions to `w`.
pub(crate) fn read(path: &Path, file_name: &str, w: &mut dyn RegionOut) -> Result<TraceRead> {
    let mut notes = Vec::new();
    let io = |place: String, e: std::io::Error| Error::input(path, place, e.to_string());
    let file = std::fs::File::open(path).map_err(|e| io("open".into(), e))?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    // A UTF-8 byte-order mark is skipped (offsets in messages still count it).
    let bom = {
        let head = reader.fill_buf().map_err(|e| io("byte 0".into(), e))?;
        if head.starts_with(&[0xEF, 0xBB, 0xBF]) {
            3
        } else {
            0
        }
    };
    reader.consume(bom);
    let limit = ReadLimit::default();
    let mut tracked = TrackedReader::new(reader).with_limit(limit.clone());
    let mut t = Trace {
        path,
        w,
        pids: HashMap::new(),
        pid_names: HashMap::new(),
        tids: HashMap::new(),
        tid_names: HashMap::new(),
        taken: HashSet::new(),
        pids_taken: HashSet::new(),
        next_pid: 1_000_000,
        next_tid: 1 << 24,
        threads: BTreeMap::new(),
        ignored: BTreeMap::new(),
        written: 0,
        negative_durations: 0,
        doc: 0,
        base: 0,
        doc_first_event: 0,
        doc_events_seen: false,
        at_event: None,
        failed: None,
        limit: limit.clone(),
    };
    // Several JSON documents may be concatenated (3.5–3.7: one per stream).
    let failure = {
        let mut de = serde_json::Deserializer::from_reader(&mut tracked);
        loop {
            match de.end() {
                Ok(()) => break None,
                Err(e) if e.is_io() => break Some(e),
                // Not at the end: another document follows.
                Err(_) => {}
            }
            t.begin_document()?;
            let r = DocSeed(&mut t).deserialize(&mut de);
            if let Some(e) = t.failed.take() {
                return Err(e);
            }
            if let Err(e) = r {
                break Some(e);
            }
            t.doc += 1;
        }
    };
    if let Some(e) = failure {
        let off = if e.is_eof() {
            tracked.consumed()
        } else {
            tracked
                .offset_of(e.line() as u64, e.column() as u64)
                .unwrap_or(tracked.consumed())
        };
        let message = if e.is_io() && limit.tripped() {
            format!(
                "an event, key or base time larger than {} MiB, the limit of one value",
                VALUE_BYTES >> 20
            )
        } else {
            e.to_string()
        };
        let byte = off + bom as u64;
        let place = match t.at_event {
            Some(ei) => format!("byte {byte}, document {}, event {ei}", t.doc),
            None => format!("byte {byte}"),
        };
        return Err(Error::input(path, place, message));
    }
    let docs = t.doc;
    if docs == 0 {
        notes.push(format!("{file_name}: empty chrome trace (no events)"));
    }
    let names_of = |t: &Trace<'_>, th: &SeenThread| {
        let key = (th.pid_key.clone(), th.tid_key.clone());
        let tname = t
            .tid_names
            .get(&key)
            .cloned()
            .or_else(|| th.tid_key.strip_prefix("s:").map(str::to_string))
            .unwrap_or_else(|| th.fallback.clone());
        let pname = t
            .pid_names
            .get(&th.pid_key)
            .cloned()
            .or_else(|| th.pid_key.strip_prefix("s:").map(str::to_string))
            .unwrap_or_else(|| file_name.to_string());
        (tname, pname)
    };
    let mut procs: BTreeMap<i64, String> = BTreeMap::new();
    let mut threads = Vec::with_capacity(t.threads.len());
    for (tid, th) in &t.threads {
        let (tname, pname) = names_of(&t, th);
        threads.push((th.pid, *tid, tname));
        procs.entry(th.pid).or_insert(pname);
    }
    notes.push(format!(
        "{file_name}: {} complete (X) events written as regions",
        t.written
    ));
    if t.negative_durations > 0 {
        notes.push(format!(
            "{file_name}: {} complete events with a negative \"dur\" written with duration 0",
            t.negative_durations
        ));
    }
    for (what, n) in &t.ignored {
        notes.push(format!(
            "{file_name}: {n} events with {what} ignored (flows, instants, ...)"
        ));
    }
    Ok(TraceRead {
        threads,
        processes: procs,
        notes,
    })
}

//! Writing packets on one trusted sequence, with interning of event names, categories and
//! debug-annotation names.
//!
//! The first packet clears the sequence's incremental state; every packet that uses an
//! interned id says it needs that state. The interning tables are bounded: when they grow
//! past a limit (traces with millions of distinct ROCTx messages), the state is cleared
//! again and the tables start afresh, so memory does not grow with trace length.
//!
//! Event and counter packets, one per row, are encoded by hand into buffers the encoder
//! keeps, in the field order of the generated (prost) encoder, so the bytes are the same
//! as its (a test decodes and encodes them again with it); the encoder built the nested
//! messages and computed each one's length several times. Descriptors and the interned
//! data, which are few, go through prost. Writing a row allocates nothing once the buffers
//! have grown, and annotation names, literals, are found by address (D138).

use std::fmt::Write as _;
use std::io::Write;

use rocpd_model::hash::FastMap;

use prost::Message;

use crate::proto::{
    InternedData, InternedString, TracePacket, TrackDescriptor, SEQ_INCREMENTAL_STATE_CLEARED,
    SEQ_NEEDS_INCREMENTAL_STATE,
};

const SEQUENCE_ID: u32 = 1;

/// Bytes an interned string costs beyond its text (see [`Table::intern`]).
const INTERN_OVERHEAD: usize = 80;

#[derive(Default)]
struct Table {
    ids: FastMap<String, u64>,
    bytes: usize,
}

impl Table {
    fn intern(&mut self, s: &str, out: &mut Vec<InternedString>) -> u64 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.ids.len() as u64 + 1;
        self.ids.insert(s.to_string(), id);
        // What an entry really costs: the text's allocation (rounded up, with its
        // allocator header) and the map's slot (a `String`, the id, a control byte, and
        // the spare room of a table that doubles). Counted as 32 before, 700,000 distinct
        // names held about twice the limit (D132).
        self.bytes += s.len() + INTERN_OVERHEAD;
        out.push(InternedString {
            iid: Some(id),
            name: Some(s.to_string()),
        });
        id
    }
}

/// The debug annotations of one event, before interning: names are literals, text values
/// are copied into one reused string, so building them allocates nothing per row.
#[derive(Default)]
pub struct Annotations {
    items: Vec<(&'static str, Ann)>,
    text: String,
}

#[derive(Clone, Copy)]
enum Ann {
    U(u64),
    I(i64),
    /// A range of `Annotations::text`.
    S(usize, usize),
}

/// No annotations (slice ends).
pub static NO_ANNOTATIONS: Annotations = Annotations {
    items: Vec::new(),
    text: String::new(),
};

impl Annotations {
    /// Removes every annotation, keeping the buffers.
    pub fn clear(&mut self) {
        self.items.clear();
        self.text.clear();
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// An unsigned integer.
    pub fn u(&mut self, name: &'static str, v: u64) {
        self.items.push((name, Ann::U(v)));
    }

    /// A signed integer.
    pub fn i(&mut self, name: &'static str, v: i64) {
        self.items.push((name, Ann::I(v)));
    }

    /// Text.
    pub fn s(&mut self, name: &'static str, v: &str) {
        let a = self.text.len();
        self.text.push_str(v);
        self.items.push((name, Ann::S(a, self.text.len())));
    }

    /// Formatted text, written straight into the buffer.
    pub fn fmt(&mut self, name: &'static str, args: std::fmt::Arguments<'_>) {
        let a = self.text.len();
        self.text.write_fmt(args).expect("a String takes any text");
        self.items.push((name, Ann::S(a, self.text.len())));
    }
}

/// Writes packets to `W`, counting bytes.
pub struct Encoder {
    names: Table,
    categories: Table,
    annotation_names: Table,
    pending: InternedData,
    /// The encoded track event of the packet being written.
    event: Vec<u8>,
    /// The encoded interned data of the packet being written.
    interned: Vec<u8>,
    /// The interned names of the annotations of the event being written.
    annotation_iids: Vec<u64>,
    /// Annotation names by address: they are `&'static str` literals, a few dozen, met on
    /// nearly every event, so their ids are found without hashing their text. Cleared
    /// with the tables, whose ids it repeats.
    static_names: FastMap<(usize, usize), u64>,
    cleared: bool,
    limit_bytes: usize,
    buf: Vec<u8>,
    /// Bytes written so far.
    pub written: u64,
}

impl Encoder {
    /// An encoder whose interning tables may hold about `limit_bytes` of strings.
    pub fn new(limit_bytes: usize) -> Self {
        Encoder {
            names: Table::default(),
            categories: Table::default(),
            annotation_names: Table::default(),
            pending: InternedData::default(),
            event: Vec::with_capacity(512),
            interned: Vec::new(),
            annotation_iids: Vec::new(),
            static_names: FastMap::default(),
            cleared: false,
            limit_bytes,
            buf: Vec::with_capacity(4096),
            written: 0,
        }
    }

    fn maybe_reset(&mut self) {
        let used = self.names.bytes + self.categories.bytes + self.annotation_names.bytes;
        if used > self.limit_bytes {
            self.names = Table::default();
            self.categories = Table::default();
            self.annotation_names = Table::default();
            self.static_names.clear();
            self.cleared = false;
        }
    }

    /// The sequence flags of the next packet: the first clears the incremental state, and
    /// one that uses interned ids says it needs that state.
    fn sequence_flags(&mut self, interned: bool) -> u32 {
        let mut flags = 0;
        if !self.cleared {
            flags |= SEQ_INCREMENTAL_STATE_CLEARED;
            self.cleared = true;
        }
        if interned {
            flags |= SEQ_NEEDS_INCREMENTAL_STATE;
        }
        flags
    }

    /// Writes the packet in `self.buf` and counts its bytes.
    fn emit(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        out.write_all(&self.buf)?;
        self.written += self.buf.len() as u64;
        Ok(())
    }

    /// Writes a packet that uses no interned id (descriptors) through prost.
    fn write_packet(&mut self, out: &mut impl Write, p: &mut TracePacket) -> std::io::Result<()> {
        p.trusted_packet_sequence_id = Some(SEQUENCE_ID);
        let flags = self.sequence_flags(false);
        if flags != 0 {
            p.sequence_flags = Some(flags);
        }
        // A trace is `repeated TracePacket packet = 1`: key 0x0a, length, message.
        self.buf.clear();
        key_varint(&mut self.buf, 0x0a, p.encoded_len() as u64);
        p.encode(&mut self.buf).expect("Vec has room");
        self.emit(out)
    }

    /// Writes a track descriptor.
    pub fn descriptor(&mut self, out: &mut impl Write, d: TrackDescriptor) -> std::io::Result<()> {
        let mut p = TracePacket {
            track_descriptor: Some(d),
            ..Default::default()
        };
        self.write_packet(out, &mut p)
    }

    /// Writes a track event at `ts` whose name, category and annotation names are interned.
    #[allow(clippy::too_many_arguments)]
    pub fn event(
        &mut self,
        out: &mut impl Write,
        ts: i64,
        track: u64,
        kind: i32,
        name: Option<&str>,
        category: Option<&str>,
        annotations: &Annotations,
        flow: Option<u64>,
    ) -> std::io::Result<()> {
        self.maybe_reset();
        // Interned in this order (name, category, annotation names), which gives the ids.
        let name_iid = name.map(|n| self.names.intern(n, &mut self.pending.event_names));
        let category_iid = category.map(|c| {
            self.categories
                .intern(c, &mut self.pending.event_categories)
        });
        self.annotation_iids.clear();
        for (k, _) in &annotations.items {
            let at = (k.as_ptr() as usize, k.len());
            let iid = match self.static_names.get(&at) {
                Some(&iid) => iid,
                None => {
                    let iid = self
                        .annotation_names
                        .intern(k, &mut self.pending.debug_annotation_names);
                    self.static_names.insert(at, iid);
                    iid
                }
            };
            self.annotation_iids.push(iid);
        }
        let ev = &mut self.event;
        ev.clear();
        if let Some(c) = category_iid {
            key_varint(ev, 0x18, c);
        }
        for ((_, v), &iid) in annotations.items.iter().zip(&self.annotation_iids) {
            let value_len = match *v {
                Ann::U(u) => 1 + varint_len(u),
                Ann::I(i) => 1 + varint_len(i as u64),
                Ann::S(from, to) => 1 + varint_len((to - from) as u64) + (to - from),
            };
            key_varint(ev, 0x22, (1 + varint_len(iid) + value_len) as u64);
            key_varint(ev, 0x08, iid);
            match *v {
                Ann::U(u) => key_varint(ev, 0x18, u),
                Ann::I(i) => key_varint(ev, 0x20, i as u64),
                Ann::S(from, to) => {
                    key_varint(ev, 0x32, (to - from) as u64);
                    ev.extend_from_slice(&annotations.text.as_bytes()[from..to]);
                }
            }
        }
        key_varint(ev, 0x48, i64::from(kind) as u64);
        if let Some(n) = name_iid {
            key_varint(ev, 0x50, n);
        }
        key_varint(ev, 0x58, track);
        if let Some(f) = flow {
            ev.extend_from_slice(&[0xf9, 0x02]);
            ev.extend_from_slice(&f.to_le_bytes());
        }
        let interned = name.is_some() || category.is_some() || !annotations.is_empty();
        self.write_event_packet(out, ts, interned)
    }

    /// Writes a counter value.
    pub fn counter(
        &mut self,
        out: &mut impl Write,
        ts: i64,
        track: u64,
        value: CounterValue,
    ) -> std::io::Result<()> {
        let ev = &mut self.event;
        ev.clear();
        key_varint(
            ev,
            0x48,
            i64::from(crate::proto::event_type::COUNTER) as u64,
        );
        key_varint(ev, 0x58, track);
        match value {
            // Field 30 (varint) and field 44 (fixed64): two-byte keys.
            CounterValue::Int(v) => {
                ev.extend_from_slice(&[0xf0, 0x01]);
                prost::encoding::encode_varint(v as u64, ev);
            }
            CounterValue::Double(v) => {
                ev.extend_from_slice(&[0xe1, 0x02]);
                ev.extend_from_slice(&v.to_le_bytes());
            }
        }
        self.write_event_packet(out, ts, false)
    }

    /// Writes a `TracePacket` of the track event encoded in `self.event`, fields in the
    /// order prost writes them (by field number), so the bytes are those of the
    /// generated encoder: timestamp (8), sequence id (10), track event (11), interned data
    /// (12, when `interned` and any is pending), sequence flags (13).
    fn write_event_packet(
        &mut self,
        out: &mut impl Write,
        ts: i64,
        interned: bool,
    ) -> std::io::Result<()> {
        let flags = self.sequence_flags(interned);
        self.interned.clear();
        if interned {
            let data = &mut self.pending;
            if !(data.event_names.is_empty()
                && data.event_categories.is_empty()
                && data.debug_annotation_names.is_empty())
            {
                data.encode(&mut self.interned).expect("Vec has room");
                data.event_names.clear();
                data.event_categories.clear();
                data.debug_annotation_names.clear();
            }
        }
        let ts = ts.max(0) as u64;
        let (ev, int) = (self.event.len(), self.interned.len());
        let mut len = 1 + varint_len(ts) + 1 + varint_len(u64::from(SEQUENCE_ID));
        len += 1 + varint_len(ev as u64) + ev;
        if int > 0 {
            len += 1 + varint_len(int as u64) + int;
        }
        if flags != 0 {
            len += 1 + varint_len(u64::from(flags));
        }
        let buf = &mut self.buf;
        buf.clear();
        key_varint(buf, 0x0a, len as u64);
        key_varint(buf, 0x40, ts);
        key_varint(buf, 0x50, u64::from(SEQUENCE_ID));
        key_varint(buf, 0x5a, ev as u64);
        buf.extend_from_slice(&self.event);
        if int > 0 {
            key_varint(buf, 0x62, int as u64);
            buf.extend_from_slice(&self.interned);
        }
        if flags != 0 {
            key_varint(buf, 0x68, u64::from(flags));
        }
        self.emit(out)
    }
}

/// A one-byte key (field number below 16) and a varint.
fn key_varint(buf: &mut Vec<u8>, key: u8, v: u64) {
    buf.push(key);
    prost::encoding::encode_varint(v, buf);
}

fn varint_len(v: u64) -> usize {
    prost::encoding::encoded_len_varint(v)
}

/// A counter sample's value.
#[derive(Debug, Clone, Copy)]
pub enum CounterValue {
    /// Integer (bytes).
    Int(i64),
    /// Floating point (PMC values).
    Double(f64),
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::proto::event_type;

    /// The packets of a trace: each `0x0a`, its length, its bytes.
    fn packets(mut trace: &[u8]) -> Vec<&[u8]> {
        let mut out = Vec::new();
        while !trace.is_empty() {
            assert_eq!(trace[0], 0x0a);
            trace = &trace[1..];
            let len = prost::encoding::decode_varint(&mut trace).unwrap() as usize;
            out.push(&trace[..len]);
            trace = &trace[len..];
        }
        out
    }

    /// What one written packet should say, with names as text.
    #[derive(Debug, PartialEq)]
    struct Seen {
        ts: u64,
        track: u64,
        kind: i32,
        name: Option<String>,
        category: Option<String>,
        annotations: Vec<(String, String)>,
        flow: Vec<u64>,
        int: Option<i64>,
        double: Option<f64>,
    }

    /// Events and counters written by hand decode with the generated (prost) decoder to
    /// what was written, names resolved through the interned data as a reader does it
    /// (with the tables cleared and started again past the limit), and each packet's bytes
    /// are the ones prost's encoder gives for the decoded packet: the fields are in its
    /// order, lengths included.
    #[test]
    fn written_packets_decode_to_what_was_written_and_encode_alike() {
        // A small limit: the tables are cleared many times.
        let mut enc = Encoder::new(400);
        let mut trace = Vec::new();
        let mut ann = Annotations::default();
        let mut wanted = Vec::new();
        for i in 0u64..300 {
            let ts = i as i64 * 1_000 - 2_000;
            let track = 100 + i % 7;
            ann.clear();
            if i % 3 != 0 {
                ann.u("size", i << (i % 60));
                ann.i("delta", -(i as i64) * 1_000_003);
                ann.s("args", &"ab\u{e9}".repeat((i % 90) as usize));
                ann.fmt("id", format_args!("{}-{}", i, i * 7));
            }
            let name = (i % 4 != 1).then(|| format!("kernel_{}", i % 41));
            let category = (i % 5 != 2).then(|| format!("cat{}", i % 3));
            let flow = (i % 6 == 0).then_some(u64::MAX - i);
            let kind = [event_type::SLICE_BEGIN, event_type::SLICE_END][(i % 2) as usize];
            enc.event(
                &mut trace,
                ts,
                track,
                kind,
                name.as_deref(),
                category.as_deref(),
                &ann,
                flow,
            )
            .unwrap();
            wanted.push(Seen {
                ts: ts.max(0) as u64,
                track,
                kind,
                name,
                category,
                annotations: ann
                    .items
                    .iter()
                    .map(|(k, v)| {
                        let v = match *v {
                            Ann::U(u) => format!("u{u}"),
                            Ann::I(x) => format!("i{x}"),
                            Ann::S(a, b) => format!("s{}", &ann.text[a..b]),
                        };
                        (k.to_string(), v)
                    })
                    .collect(),
                flow: flow.into_iter().collect(),
                int: None,
                double: None,
            });
            if i % 4 == 0 {
                let value = if i % 8 == 0 {
                    CounterValue::Int(-(i as i64) * 3)
                } else {
                    CounterValue::Double(i as f64 / 3.0)
                };
                enc.counter(&mut trace, ts, 9, value).unwrap();
                let (int, double) = match value {
                    CounterValue::Int(v) => (Some(v), None),
                    CounterValue::Double(v) => (None, Some(v)),
                };
                wanted.push(Seen {
                    ts: ts.max(0) as u64,
                    track: 9,
                    kind: event_type::COUNTER,
                    name: None,
                    category: None,
                    annotations: Vec::new(),
                    flow: Vec::new(),
                    int,
                    double,
                });
            }
        }
        assert_eq!(enc.written, trace.len() as u64);
        let (mut names, mut categories, mut ann_names) =
            (HashMap::new(), HashMap::new(), HashMap::new());
        let mut clears = 0;
        let mut seen = Vec::new();
        for bytes in packets(&trace) {
            let p = TracePacket::decode(bytes).unwrap();
            assert_eq!(p.encode_to_vec(), bytes);
            assert_eq!(p.trusted_packet_sequence_id, Some(SEQUENCE_ID));
            let flags = p.sequence_flags.unwrap_or(0);
            if flags & SEQ_INCREMENTAL_STATE_CLEARED != 0 {
                clears += 1;
                names.clear();
                categories.clear();
                ann_names.clear();
            }
            if let Some(d) = &p.interned_data {
                for (table, list) in [
                    (&mut names, &d.event_names),
                    (&mut categories, &d.event_categories),
                    (&mut ann_names, &d.debug_annotation_names),
                ] {
                    for s in list {
                        let new = table.insert(s.iid.unwrap(), s.name.clone().unwrap());
                        assert!(new.is_none(), "an id interned twice");
                    }
                }
            }
            let e = p.track_event.unwrap();
            let uses_ids = e.name_iid.is_some()
                || !e.category_iids.is_empty()
                || !e.debug_annotations.is_empty();
            assert_eq!(flags & SEQ_NEEDS_INCREMENTAL_STATE != 0, uses_ids);
            let text = |t: &HashMap<u64, String>, iid: u64| t.get(&iid).cloned().unwrap();
            seen.push(Seen {
                ts: p.timestamp.unwrap(),
                track: e.track_uuid.unwrap(),
                kind: e.r#type.unwrap(),
                name: e.name_iid.map(|n| text(&names, n)),
                category: e.category_iids.first().map(|&c| text(&categories, c)),
                annotations: e
                    .debug_annotations
                    .iter()
                    .map(|a| {
                        let v = match (a.uint_value, a.int_value, &a.string_value) {
                            (Some(u), None, None) => format!("u{u}"),
                            (None, Some(x), None) => format!("i{x}"),
                            (None, None, Some(s)) => format!("s{s}"),
                            other => panic!("{other:?}"),
                        };
                        (text(&ann_names, a.name_iid.unwrap()), v)
                    })
                    .collect(),
                flow: e.flow_ids,
                int: e.counter_value,
                double: e.double_counter_value,
            });
        }
        assert_eq!(seen, wanted);
        assert!(clears > 5, "{clears}");
    }
}

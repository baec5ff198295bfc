//! Writing packets on one trusted sequence, with interning of event names, categories and
//! debug-annotation names.
//!
//! The first packet clears the sequence's incremental state; every packet that uses an
//! interned id says it needs that state. The interning tables are bounded: when they grow
//! past a limit (traces with millions of distinct ROCTx messages), the state is cleared
//! again and the tables start afresh, so memory does not grow with trace length.
//!
//! Events are encoded from buffers the encoder keeps (the track event, its annotations and
//! their strings), so writing a row allocates nothing once the buffers have grown.

use std::fmt::Write as _;
use std::io::Write;

use rocpd_model::hash::FastMap;

use prost::Message;

use crate::proto::{
    DebugAnnotation, InternedData, InternedString, TracePacket, TrackDescriptor, TrackEvent,
    SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE,
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
    /// The track event of the last packet, kept for its buffers.
    event: TrackEvent,
    /// Strings of earlier annotations, reused for the next ones.
    spare: Vec<String>,
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
            event: TrackEvent::default(),
            spare: Vec::new(),
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
            self.cleared = false;
        }
    }

    fn write_packet(
        &mut self,
        out: &mut impl Write,
        p: &mut TracePacket,
        interned: bool,
    ) -> std::io::Result<()> {
        p.trusted_packet_sequence_id = Some(SEQUENCE_ID);
        let mut flags = 0;
        if !self.cleared {
            flags |= SEQ_INCREMENTAL_STATE_CLEARED;
            self.cleared = true;
        }
        if interned {
            flags |= SEQ_NEEDS_INCREMENTAL_STATE;
            let data = std::mem::take(&mut self.pending);
            if !(data.event_names.is_empty()
                && data.event_categories.is_empty()
                && data.debug_annotation_names.is_empty())
            {
                p.interned_data = Some(data);
            }
        }
        if flags != 0 {
            p.sequence_flags = Some(flags);
        }
        // A trace is `repeated TracePacket packet = 1`: key 0x0a, length, message.
        self.buf.clear();
        self.buf.push(0x0a);
        prost::encoding::encode_varint(p.encoded_len() as u64, &mut self.buf);
        p.encode(&mut self.buf).expect("Vec has room");
        out.write_all(&self.buf)?;
        self.written += self.buf.len() as u64;
        Ok(())
    }

    /// Writes a track descriptor.
    pub fn descriptor(&mut self, out: &mut impl Write, d: TrackDescriptor) -> std::io::Result<()> {
        let mut p = TracePacket {
            track_descriptor: Some(d),
            ..Default::default()
        };
        self.write_packet(out, &mut p, false)
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
        // The previous event's buffers, cleared; its annotation strings go back to the pool.
        let mut ev = std::mem::take(&mut self.event);
        ev.category_iids.clear();
        ev.flow_ids.clear();
        for a in ev.debug_annotations.drain(..) {
            self.spare.extend(a.string_value);
        }
        ev.r#type = Some(kind);
        ev.track_uuid = Some(track);
        ev.name_iid = None;
        ev.counter_value = None;
        ev.double_counter_value = None;
        if let Some(n) = name {
            ev.name_iid = Some(self.names.intern(n, &mut self.pending.event_names));
        }
        if let Some(c) = category {
            ev.category_iids.push(
                self.categories
                    .intern(c, &mut self.pending.event_categories),
            );
        }
        for (k, v) in &annotations.items {
            let mut a = DebugAnnotation {
                name_iid: Some(
                    self.annotation_names
                        .intern(k, &mut self.pending.debug_annotation_names),
                ),
                ..Default::default()
            };
            match *v {
                Ann::U(u) => a.uint_value = Some(u),
                Ann::I(i) => a.int_value = Some(i),
                Ann::S(from, to) => {
                    let mut s = self.spare.pop().unwrap_or_default();
                    s.clear();
                    s.push_str(&annotations.text[from..to]);
                    a.string_value = Some(s);
                }
            }
            ev.debug_annotations.push(a);
        }
        ev.flow_ids.extend(flow);
        let mut p = TracePacket {
            timestamp: Some(ts.max(0) as u64),
            track_event: Some(ev),
            ..Default::default()
        };
        let interned = name.is_some() || category.is_some() || !annotations.is_empty();
        let written = self.write_packet(out, &mut p, interned);
        self.event = p.track_event.take().unwrap_or_default();
        written
    }

    /// Writes a counter value.
    pub fn counter(
        &mut self,
        out: &mut impl Write,
        ts: i64,
        track: u64,
        value: CounterValue,
    ) -> std::io::Result<()> {
        let mut ev = TrackEvent {
            r#type: Some(crate::proto::event_type::COUNTER),
            track_uuid: Some(track),
            ..Default::default()
        };
        match value {
            CounterValue::Int(v) => ev.counter_value = Some(v),
            CounterValue::Double(v) => ev.double_counter_value = Some(v),
        }
        let mut p = TracePacket {
            timestamp: Some(ts.max(0) as u64),
            track_event: Some(ev),
            ..Default::default()
        };
        self.write_packet(out, &mut p, false)
    }
}

/// A counter sample's value.
#[derive(Debug, Clone, Copy)]
pub enum CounterValue {
    /// Integer (bytes).
    Int(i64),
    /// Floating point (PMC values).
    Double(f64),
}

//! Writing packets on one trusted sequence, with interning of event names, categories and
//! debug-annotation names.
//!
//! The first packet clears the sequence's incremental state; every packet that uses an
//! interned id says it needs that state. The interning tables are bounded: when they grow
//! past a limit (traces with millions of distinct ROCTx messages), the state is cleared
//! again and the tables start afresh, so memory does not grow with trace length.

use std::collections::HashMap;
use std::io::Write;

use prost::Message;

use crate::proto::{
    DebugAnnotation, InternedData, InternedString, TracePacket, TrackDescriptor, TrackEvent,
    SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE,
};

const SEQUENCE_ID: u32 = 1;

#[derive(Default)]
struct Table {
    ids: HashMap<String, u64>,
    bytes: usize,
}

impl Table {
    fn intern(&mut self, s: &str, out: &mut Vec<InternedString>) -> u64 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.ids.len() as u64 + 1;
        self.ids.insert(s.to_string(), id);
        self.bytes += s.len() + 32;
        out.push(InternedString {
            iid: Some(id),
            name: Some(s.to_string()),
        });
        id
    }
}

/// An annotation value before interning.
pub enum Value<'a> {
    /// Unsigned integer.
    U(u64),
    /// Signed integer.
    I(i64),
    /// Text.
    S(&'a str),
    /// Owned text.
    Owned(String),
}

/// Writes packets to `W`, counting bytes.
pub struct Encoder {
    names: Table,
    categories: Table,
    annotation_names: Table,
    pending: InternedData,
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
        mut p: TracePacket,
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
        let p = TracePacket {
            track_descriptor: Some(d),
            ..Default::default()
        };
        self.write_packet(out, p, false)
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
        annotations: &[(&str, Value<'_>)],
        flow: Option<u64>,
    ) -> std::io::Result<()> {
        self.maybe_reset();
        let mut ev = TrackEvent {
            r#type: Some(kind),
            track_uuid: Some(track),
            ..Default::default()
        };
        if let Some(n) = name {
            ev.name_iid = Some(self.names.intern(n, &mut self.pending.event_names));
        }
        if let Some(c) = category {
            ev.category_iids.push(
                self.categories
                    .intern(c, &mut self.pending.event_categories),
            );
        }
        for (k, v) in annotations {
            let mut a = DebugAnnotation {
                name_iid: Some(
                    self.annotation_names
                        .intern(k, &mut self.pending.debug_annotation_names),
                ),
                ..Default::default()
            };
            match v {
                Value::U(u) => a.uint_value = Some(*u),
                Value::I(i) => a.int_value = Some(*i),
                Value::S(s) => a.string_value = Some(s.to_string()),
                Value::Owned(s) => a.string_value = Some(s.clone()),
            }
            ev.debug_annotations.push(a);
        }
        ev.flow_ids.extend(flow);
        let p = TracePacket {
            timestamp: Some(ts.max(0) as u64),
            track_event: Some(ev),
            ..Default::default()
        };
        let interned = name.is_some() || category.is_some() || !annotations.is_empty();
        self.write_packet(out, p, interned)
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
        let p = TracePacket {
            timestamp: Some(ts.max(0) as u64),
            track_event: Some(ev),
            ..Default::default()
        };
        self.write_packet(out, p, false)
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

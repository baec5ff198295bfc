//! The OTF2 byte encoding: compressed integers, records, chunk headers and the anchor file.
//!
//! Learnt from the reference implementation (OTF2 3.x, `src/OTF2_Buffer.h`,
//! `src/OTF2_Buffer.c`, `src/OTF2_AnchorFile.c`, `src/OTF2_*Writer_inc.c`); the layout is
//! written down in `formats/otf2/README.md`. Everything is little endian (the chunk
//! headers say so with the endianness byte `0x42`).

use std::io::{self, Write};

/// Internal buffer record: end of the used part of a chunk (the rest is padding).
pub const END_OF_CHUNK: u8 = 0;
/// Internal buffer record: end of the buffer (last byte of a file's records).
pub const END_OF_BUFFER: u8 = 1;
/// Internal buffer record: end of the file.
pub const END_OF_FILE: u8 = 2;
/// Internal buffer record: chunk header.
pub const CHUNK_HEADER: u8 = 3;
/// Internal buffer record: timestamp of the following events.
pub const TIMESTAMP: u8 = 5;
/// Internal buffer record: attribute list of the following event.
pub const ATTRIBUTE_LIST: u8 = 6;
/// Endianness byte of a little-endian buffer.
pub const LITTLE_ENDIAN: u8 = 0x42;
/// Size of a chunk header of a chunked buffer (type, endianness, first and last event).
pub const CHUNK_HEADER_SIZE: u64 = 18;
/// Offset of the "last event" field in a chunk header.
pub const CHUNK_HEADER_LAST_EVENT: u64 = 10;
/// Size of a timestamp record (type byte + 8 bytes).
pub const TIMESTAMP_SIZE: u64 = 9;
/// Bytes kept free at the end of every chunk: an `END_OF_CHUNK` byte, or the
/// `END_OF_FILE` + `END_OF_BUFFER` pair that closes the last chunk.
pub const CHUNK_RESERVE: u64 = 2;
/// Smallest chunk size the reference reader accepts.
pub const CHUNK_SIZE_MIN: u64 = 256 * 1024;
/// Largest chunk size the reference reader accepts.
pub const CHUNK_SIZE_MAX: u64 = 16 * 1024 * 1024;

/// Event record ids.
pub mod event {
    /// `Enter`: region (u32).
    pub const ENTER: u8 = 12;
    /// `Leave`: region (u32).
    pub const LEAVE: u8 = 13;
    /// `Metric`: metric (u32), count (u8), count × (type u8, value u64).
    pub const METRIC: u8 = 31;
}

/// Global definition record ids.
pub mod def {
    /// `ClockProperties`.
    pub const CLOCK_PROPERTIES: u8 = 5;
    /// `String`.
    pub const STRING: u8 = 10;
    /// `Attribute`.
    pub const ATTRIBUTE: u8 = 11;
    /// `SystemTreeNode`.
    pub const SYSTEM_TREE_NODE: u8 = 12;
    /// `LocationGroup`.
    pub const LOCATION_GROUP: u8 = 13;
    /// `Location`.
    pub const LOCATION: u8 = 14;
    /// `Region`.
    pub const REGION: u8 = 15;
    /// `MetricMember`.
    pub const METRIC_MEMBER: u8 = 19;
    /// `MetricClass`.
    pub const METRIC_CLASS: u8 = 20;
}

/// `OTF2_Type` values.
pub mod ty {
    /// 64-bit signed integer.
    pub const INT64: u8 = 8;
    /// 64-bit float.
    pub const DOUBLE: u8 = 10;
    /// Reference to a `String` definition.
    pub const STRING: u8 = 11;
}

/// The undefined 32-bit reference (`OTF2_UNDEFINED_UINT32`).
pub const UNDEFINED_U32: u32 = u32::MAX;
/// The undefined 64-bit value (`OTF2_UNDEFINED_UINT64`, e.g. `OTF2_UNDEFINED_TIMESTAMP`).
pub const UNDEFINED_U64: u64 = u64::MAX;

/// Number of significant little-endian bytes of `v` (at least 1).
fn significant_bytes(v: u64) -> usize {
    (8 - (v.leading_zeros() as usize) / 8).max(1)
}

/// Appends a compressed `uint32`: 0 and `u32::MAX` as one byte, else a length byte
/// (1..=4) followed by that many little-endian bytes.
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    if v == 0 || v == u32::MAX {
        out.push(v as u8);
        return;
    }
    let n = significant_bytes(v as u64);
    out.push(n as u8);
    out.extend_from_slice(&v.to_le_bytes()[..n]);
}

/// Appends a compressed `uint64`: 0 and `u64::MAX` as one byte, else a length byte
/// (1..=8) followed by that many little-endian bytes.
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    if v == 0 || v == u64::MAX {
        out.push(v as u8);
        return;
    }
    let n = significant_bytes(v);
    out.push(n as u8);
    out.extend_from_slice(&v.to_le_bytes()[..n]);
}

/// Appends a compressed `int64`: 0 as one byte, a positive value like an unsigned one, a
/// negative value as length byte 8 and all eight bytes.
pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    if v == 0 {
        out.push(0);
    } else if v > 0 {
        let n = significant_bytes(v as u64);
        out.push(n as u8);
        out.extend_from_slice(&v.to_le_bytes()[..n]);
    } else {
        out.push(8);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Appends a NUL-terminated string (interior NULs are dropped: OTF2 strings are C strings).
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend(s.bytes().filter(|&b| b != 0));
    out.push(0);
}

/// Appends a record with a length field: the type byte, the length of `data` (one byte
/// below 255, else `0xff` and a full `u64`), then `data`.
pub fn put_record(out: &mut Vec<u8>, kind: u8, data: &[u8]) {
    out.push(kind);
    if data.len() < 255 {
        out.push(data.len() as u8);
    } else {
        out.push(0xff);
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    }
    out.extend_from_slice(data);
}

/// Appends the header of a chunk of a chunked buffer (event and definition files).
pub fn put_chunk_header(out: &mut Vec<u8>, first_event: u64, last_event: u64) {
    out.push(CHUNK_HEADER);
    out.push(LITTLE_ENDIAN);
    out.extend_from_slice(&first_event.to_le_bytes());
    out.extend_from_slice(&last_event.to_le_bytes());
}

/// A definition file (global or per location): chunks of `chunk_size` bytes, each with a
/// header (first event 1, last event 0, as the reference writes for definitions) and padded
/// with `END_OF_CHUNK`; the last chunk ends after `END_OF_FILE`, `END_OF_BUFFER`.
pub struct DefFile<W: Write> {
    out: W,
    chunk_size: u64,
    used: u64,
    written: u64,
    records: u64,
}

impl<W: Write> DefFile<W> {
    /// Starts the file with the first chunk header.
    pub fn new(mut out: W, chunk_size: u64) -> io::Result<Self> {
        let mut h = Vec::with_capacity(CHUNK_HEADER_SIZE as usize);
        put_chunk_header(&mut h, 1, 0);
        out.write_all(&h)?;
        Ok(DefFile {
            out,
            chunk_size,
            used: CHUNK_HEADER_SIZE,
            written: CHUNK_HEADER_SIZE,
            records: 0,
        })
    }

    /// Appends one complete record (type, length, data), starting a new chunk when it does
    /// not fit in the current one.
    pub fn record(&mut self, rec: &[u8]) -> io::Result<()> {
        let len = rec.len() as u64;
        if CHUNK_HEADER_SIZE + len + CHUNK_RESERVE > self.chunk_size {
            return Err(io::Error::other(format!(
                "a definition record of {len} bytes does not fit in a chunk"
            )));
        }
        if self.used + len + CHUNK_RESERVE > self.chunk_size {
            let pad = (self.chunk_size - self.used) as usize;
            self.out.write_all(&vec![END_OF_CHUNK; pad])?;
            let mut h = Vec::with_capacity(CHUNK_HEADER_SIZE as usize);
            put_chunk_header(&mut h, 1, 0);
            self.out.write_all(&h)?;
            self.written += pad as u64 + CHUNK_HEADER_SIZE;
            self.used = CHUNK_HEADER_SIZE;
        }
        self.out.write_all(rec)?;
        self.used += len;
        self.written += len;
        self.records += 1;
        Ok(())
    }

    /// Number of records written.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Closes the buffer; returns the writer and the file size.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        self.out.write_all(&[END_OF_FILE, END_OF_BUFFER])?;
        self.out.flush()?;
        Ok((self.out, self.written + 2))
    }
}

/// The contents of an anchor file (`<name>.otf2`).
pub struct Anchor<'a> {
    /// Chunk size of the event files.
    pub event_chunk_size: u64,
    /// Chunk size of the definition files.
    pub def_chunk_size: u64,
    /// Number of locations.
    pub locations: u64,
    /// Number of global definition records.
    pub global_defs: u64,
    /// Machine name.
    pub machine: &'a str,
    /// Creator (tool name and version).
    pub creator: &'a str,
    /// Free-text description.
    pub description: &'a str,
    /// Properties (name, value).
    pub properties: &'a [(String, String)],
    /// Trace identifier (non-zero).
    pub trace_id: u64,
}

/// Anchor file format version (3: with properties, trace id, snapshot and thumbnail counts).
const ANCHOR_FORMAT: u8 = 3;
/// Trace format version of OTF2 2.x and 3.x.
const TRACE_FORMAT: u8 = 2;
/// The OTF2 version the archive claims: 3.0.0, the oldest release with every record and
/// field written here (accelerator location groups, `creatingLocationGroup`, HIP paradigm,
/// realtime timestamp in the clock properties).
const VERSION: [u8; 3] = [3, 0, 0];
/// `OTF2_SUBSTRATE_POSIX`.
const SUBSTRATE_POSIX: u8 = 1;
/// `OTF2_COMPRESSION_NONE`.
const COMPRESSION_NONE: u8 = 1;

impl Anchor<'_> {
    /// The bytes of the anchor file: an unchunked buffer.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![CHUNK_HEADER, LITTLE_ENDIAN];
        put_str(&mut out, "OTF2");
        out.push(ANCHOR_FORMAT);
        out.push(TRACE_FORMAT);
        out.extend_from_slice(&VERSION);
        out.extend_from_slice(&self.event_chunk_size.to_le_bytes());
        out.extend_from_slice(&self.def_chunk_size.to_le_bytes());
        out.push(SUBSTRATE_POSIX);
        out.push(COMPRESSION_NONE);
        out.extend_from_slice(&self.locations.to_le_bytes());
        out.extend_from_slice(&self.global_defs.to_le_bytes());
        put_str(&mut out, self.machine);
        put_str(&mut out, self.creator);
        put_str(&mut out, self.description);
        out.extend_from_slice(&(self.properties.len() as u32).to_le_bytes());
        for (name, value) in self.properties {
            put_str(&mut out, name);
            put_str(&mut out, value);
        }
        out.extend_from_slice(&self.trace_id.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes()); // snapshots
        out.extend_from_slice(&0u32.to_le_bytes()); // thumbnails
        out.extend_from_slice(&[END_OF_FILE, END_OF_BUFFER, END_OF_CHUNK]);
        out
    }
}

/// The bytes of an (empty) local definition file `<name>/<location>.def`: the reference
/// reader opens one per location and reports an error when it is missing.
pub fn empty_local_defs() -> Vec<u8> {
    let mut out = Vec::with_capacity(20);
    put_chunk_header(&mut out, 1, 0);
    out.extend_from_slice(&[END_OF_FILE, END_OF_BUFFER]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32b(v: u32) -> Vec<u8> {
        let mut o = Vec::new();
        put_u32(&mut o, v);
        o
    }
    fn u64b(v: u64) -> Vec<u8> {
        let mut o = Vec::new();
        put_u64(&mut o, v);
        o
    }
    fn i64b(v: i64) -> Vec<u8> {
        let mut o = Vec::new();
        put_i64(&mut o, v);
        o
    }

    #[test]
    fn compressed_integers_match_the_reference_encoding() {
        assert_eq!(u32b(0), [0]);
        assert_eq!(u32b(u32::MAX), [0xff]);
        assert_eq!(u32b(1), [1, 1]);
        assert_eq!(u32b(0xff), [1, 0xff]);
        assert_eq!(u32b(0x100), [2, 0, 1]);
        assert_eq!(u32b(0x0100_0000), [4, 0, 0, 0, 1]);
        assert_eq!(u64b(1_000_000_000), [4, 0x00, 0xca, 0x9a, 0x3b]);
        assert_eq!(u64b(1000), [2, 0xe8, 0x03]);
        assert_eq!(u64b(u64::MAX), [0xff]);
        assert_eq!(u64b(u64::MAX - 1).len(), 9);
        assert_eq!(i64b(0), [0]);
        assert_eq!(i64b(5), [1, 5]);
        assert_eq!(
            i64b(-1),
            [8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
    }

    #[test]
    fn records_use_a_long_length_from_255_bytes() {
        let mut o = Vec::new();
        put_record(&mut o, 10, &[7; 254]);
        assert_eq!(&o[..2], &[10, 254]);
        let mut o = Vec::new();
        put_record(&mut o, 10, &[7; 255]);
        assert_eq!(&o[..2], &[10, 0xff]);
        assert_eq!(&o[2..10], &255u64.to_le_bytes());
        assert_eq!(o.len(), 10 + 255);
    }

    #[test]
    fn the_anchor_has_the_reference_layout() {
        let a = Anchor {
            event_chunk_size: 1 << 20,
            def_chunk_size: 4 << 20,
            locations: 1,
            global_defs: 22,
            machine: "",
            creator: "",
            description: "",
            properties: &[],
            trace_id: 0x1f8b_61b9_6bd3_bbee,
        };
        let b = a.encode();
        // Same bytes as the reference library writes for these values, except the version.
        let mut expect = vec![0x03, 0x42, b'O', b'T', b'F', b'2', 0, 3, 2, 3, 0, 0];
        expect.extend_from_slice(&(1u64 << 20).to_le_bytes());
        expect.extend_from_slice(&(4u64 << 20).to_le_bytes());
        expect.extend_from_slice(&[1, 1]);
        expect.extend_from_slice(&1u64.to_le_bytes());
        expect.extend_from_slice(&22u64.to_le_bytes());
        expect.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0]);
        expect.extend_from_slice(&0x1f8b_61b9_6bd3_bbeeu64.to_le_bytes());
        expect.extend_from_slice(&[0; 8]);
        expect.extend_from_slice(&[2, 1, 0]);
        assert_eq!(b, expect);
        assert_eq!(b.len(), 72);
    }

    #[test]
    fn definition_files_are_chunked_and_padded() {
        let mut f = DefFile::new(Vec::new(), 64).unwrap();
        let mut rec = Vec::new();
        put_record(&mut rec, def::STRING, &[1; 28]);
        f.record(&rec).unwrap(); // 18 + 30 = 48
        f.record(&rec).unwrap(); // 48 + 30 + 2 > 64: new chunk at 64
        let (bytes, size) = f.finish().unwrap();
        assert_eq!(size as usize, bytes.len());
        assert_eq!(bytes.len(), 64 + 18 + 30 + 2);
        assert_eq!(&bytes[48..64], &[0; 16]);
        assert_eq!(&bytes[64..66], &[CHUNK_HEADER, LITTLE_ENDIAN]);
        assert_eq!(&bytes[bytes.len() - 2..], &[END_OF_FILE, END_OF_BUFFER]);
        assert!(DefFile::new(Vec::new(), 64)
            .unwrap()
            .record(&[0; 50])
            .is_err());
    }
}

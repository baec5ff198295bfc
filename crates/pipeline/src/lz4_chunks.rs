//! The compression of sort run files: the Arrow IPC stream of a run, cut into chunks of
//! at most [`CHUNK`] bytes, each compressed on its own as one LZ4 block (D105).
//!
//! A chunk on disk is its compressed length and its raw length (two little-endian `u32`)
//! followed by the compressed bytes. The writer and the reader each keep one raw and one
//! compressed buffer of about [`CHUNK`] bytes for their whole life.
//!
//! Arrow's own LZ4 option compresses every buffer of every batch as an LZ4 frame, and
//! reading one back set up a frame decoder that zeroed a 64 KiB block: runs are read
//! back in batches of about a thousand rows, whose buffers are a few KiB, so a direct
//! JSON read spent more time zeroing those blocks than decompressing.

use std::io::{self, Read, Write};

/// Raw bytes per chunk.
pub(crate) const CHUNK: usize = 32 << 10;

/// Writes the LZ4 chunks of what is written to it into `W`. [`ChunkWriter::finish`]
/// writes the last, partial chunk; dropping the writer without it loses that chunk.
pub(crate) struct ChunkWriter<W: Write> {
    inner: W,
    raw: Vec<u8>,
    packed: Vec<u8>,
}

impl<W: Write> ChunkWriter<W> {
    pub fn new(inner: W) -> Self {
        ChunkWriter {
            inner,
            raw: Vec::with_capacity(CHUNK),
            packed: vec![0; lz4_flex::block::get_maximum_output_size(CHUNK)],
        }
    }

    fn write_chunk(&mut self) -> io::Result<()> {
        if self.raw.is_empty() {
            return Ok(());
        }
        let n = lz4_flex::block::compress_into(&self.raw, &mut self.packed)
            .map_err(|e| io::Error::other(format!("LZ4: {e}")))?;
        // Both lengths are at most a little over CHUNK, far below u32::MAX.
        let header = [
            (n as u32).to_le_bytes(),
            (self.raw.len() as u32).to_le_bytes(),
        ];
        self.inner.write_all(&header.concat())?;
        self.inner.write_all(&self.packed[..n])?;
        self.raw.clear();
        Ok(())
    }

    /// Writes the last chunk, flushes, and gives the inner writer back.
    pub fn finish(mut self) -> io::Result<W> {
        self.write_chunk()?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for ChunkWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = CHUNK - self.raw.len();
        let n = buf.len().min(room);
        self.raw.extend_from_slice(&buf[..n]);
        if self.raw.len() == CHUNK {
            self.write_chunk()?;
        }
        Ok(n)
    }

    /// Only the inner writer: a chunk is cut when it is full or at `finish`, so that
    /// Arrow's flushes after every batch do not make small chunks.
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Reads back what a [`ChunkWriter`] wrote.
pub(crate) struct ChunkReader<R: Read> {
    inner: R,
    raw: Vec<u8>,
    /// The unread part of `raw`.
    at: usize,
    len: usize,
    packed: Vec<u8>,
}

impl<R: Read> ChunkReader<R> {
    pub fn new(inner: R) -> Self {
        ChunkReader {
            inner,
            raw: vec![0; CHUNK],
            at: 0,
            len: 0,
            packed: vec![0; lz4_flex::block::get_maximum_output_size(CHUNK)],
        }
    }

    /// Reads the next chunk into `raw`; `false` at the end of the input.
    fn next_chunk(&mut self) -> io::Result<bool> {
        let mut header = [0u8; 8];
        let mut got = 0;
        while got < header.len() {
            match self.inner.read(&mut header[got..])? {
                0 if got == 0 => return Ok(false),
                0 => return Err(corrupt("a chunk header cut short")),
                n => got += n,
            }
        }
        let [a, b, c, d, e, f, g, h] = header;
        let packed_len = u32::from_le_bytes([a, b, c, d]) as usize;
        let raw_len = u32::from_le_bytes([e, f, g, h]) as usize;
        if raw_len == 0 || raw_len > CHUNK || packed_len > self.packed.len() {
            return Err(corrupt("a chunk of impossible length"));
        }
        self.inner.read_exact(&mut self.packed[..packed_len])?;
        let n = lz4_flex::block::decompress_into(&self.packed[..packed_len], &mut self.raw)
            .map_err(|e| corrupt(&format!("LZ4: {e}")))?;
        if n != raw_len {
            return Err(corrupt("a chunk of another length than its header says"));
        }
        self.at = 0;
        self.len = n;
        Ok(true)
    }
}

fn corrupt(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("damaged sort run: {what}"),
    )
}

impl<R: Read> Read for ChunkReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.len && !self.next_chunk()? {
            return Ok(0);
        }
        let n = buf.len().min(self.len - self.at);
        buf[..n].copy_from_slice(&self.raw[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packed(data: &[u8], pieces: usize) -> Vec<u8> {
        let mut w = ChunkWriter::new(Vec::new());
        for part in data.chunks(pieces.max(1)) {
            w.write_all(part).unwrap();
            w.flush().unwrap();
        }
        w.finish().unwrap()
    }

    fn unpacked(file: &[u8], step: usize) -> io::Result<Vec<u8>> {
        let mut r = ChunkReader::new(file);
        let mut out = Vec::new();
        let mut buf = vec![0; step];
        loop {
            let n = r.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    #[test]
    fn what_is_written_reads_back_whatever_the_write_and_read_sizes() {
        // Compressible and not: a counter's bytes, then pseudo-random ones.
        let mut data: Vec<u8> = (0..3 * CHUNK as u32 + 77)
            .flat_map(|i| (i / 7).to_le_bytes())
            .collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        data.extend((0..CHUNK + 5).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        }));
        for (pieces, step) in [
            (1, 1),
            (100, 4096),
            (CHUNK, CHUNK),
            (1 << 20, 7),
            (data.len(), 1 << 20),
        ] {
            let file = packed(&data, pieces);
            assert_eq!(unpacked(&file, step).unwrap(), data, "{pieces} {step}");
        }
        assert!(packed(&data, 4096).len() < data.len(), "it compresses");
        assert!(packed(&[], 1).is_empty());
        assert!(unpacked(&[], 9).unwrap().is_empty());
    }

    #[test]
    fn a_damaged_file_is_an_error_not_a_panic() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 1000).to_le_bytes())
            .collect();
        let file = packed(&data, 4096);
        for cut in [1, 7, 8, 20, file.len() / 2, file.len() - 1] {
            assert!(unpacked(&file[..cut], 4096).is_err(), "cut at {cut}");
        }
        let mut bad = file.clone();
        bad[4..8].copy_from_slice(&(CHUNK as u32 + 1).to_le_bytes());
        assert!(unpacked(&bad, 4096).is_err());
        let mut bad = file.clone();
        bad[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(unpacked(&bad, 4096).is_err());
        // Flipped bytes inside the compressed data: an error or other bytes, never a panic.
        for at in (8..file.len()).step_by(997) {
            let mut bad = file.clone();
            bad[at] ^= 0xa5;
            let _ = unpacked(&bad, 4096);
        }
    }
}

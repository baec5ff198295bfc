//! Long texts kept once while a [`crate::RunSorter`] sorts a table's rows (D155).
//!
//! A text column value of [`LONG_TEXT`] bytes or more (a kernel name of megabytes that a
//! JSON file holds once and every dispatch of the kernel carries) made each sorted row
//! that large: the sorter's memory budget held a few rows, so it wrote thousands of tiny
//! runs, merged them in passes over gigabytes, and read them back in batches of dozens of
//! such rows at once (833 MB and 97 s for a 7 MiB name on 5,450 dispatches).
//!
//! Before a batch is sorted, each such value is written once to an anonymous temporary
//! file (equal texts once: a later equal text is found by its length and ends and
//! compared whole) and replaced in the batch by a reference: NUL, `R` and the text's
//! place, 34 bytes. A shorter value that itself starts with NUL is kept in the row behind
//! NUL and `E`, so in a sorted batch every value starting with NUL is one of the two and
//! no input text can pass for a reference. On the way out the references are replaced
//! by their texts again, in batches cut so that the texts they carry stay near
//! [`BATCH_BYTES`]. The texts most recently used are kept in memory up to
//! [`CACHE_BYTES`], so a name carried by every row is read from the file once.

use std::collections::VecDeque;
use std::hash::Hasher;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::DataType;
use rocpd_model::hash::{FastHasher, FastMap};
use rocpd_model::{Error, Result, BATCH_BYTES};

use crate::append_file::AppendFile;

/// Values of this many bytes or more are kept once, outside the sorted rows.
pub(crate) const LONG_TEXT: usize = 64 << 10;

/// Bytes of texts kept in memory (the most recently stored or read).
pub(crate) const CACHE_BYTES: usize = 16 << 20;

/// Bytes of a reference: NUL, `R`, the offset and the length as 16 hex digits each.
const REF_BYTES: usize = 34;

/// Bytes counted for each text in memory beside the text: its entries in the cache.
const CACHED_OVERHEAD: usize = 64;

/// Stored texts with the same length and ends compared whole, at most: a crafted input
/// of many texts alike at both ends costs this many comparisons each, then is stored
/// again.
const MAX_CANDIDATES: usize = 4;

/// Bytes at each end of a text that its lookup key hashes.
const KEY_ENDS: usize = 4096;

/// What a value starting with NUL holds in a sorted batch.
enum Coded {
    /// A text in the file: (offset, length).
    Stored(u64, u64),
    /// An input value that started with NUL, behind NUL and `E`.
    Escaped,
}

fn coded(value: &[u8]) -> Option<Coded> {
    match value {
        [0, b'E', ..] => Some(Coded::Escaped),
        [0, b'R', ..] => parse_reference(value).map(|(o, l)| Coded::Stored(o, l)),
        _ => None,
    }
}

/// Whether any value of `strings` is changed on the way in (stored or escaped), from
/// the offsets alone (a null slot with bytes may say yes; the rebuild keeps it null).
fn any_changed(strings: &StringArray) -> bool {
    let data = strings.value_data();
    strings.value_offsets().windows(2).any(|w| {
        let (a, b) = (w[0].max(0) as usize, w[1].max(0) as usize);
        b.saturating_sub(a) >= LONG_TEXT || (b > a && data.get(a) == Some(&0))
    })
}

/// The lookup key of a text: its length and a hash of its ends.
fn key_of(text: &[u8]) -> (u64, u64) {
    let mut h = FastHasher::default();
    h.write(&text[..text.len().min(KEY_ENDS)]);
    h.write(&text[text.len().saturating_sub(KEY_ENDS)..]);
    (text.len() as u64, h.finish())
}

fn reference(offset: u64, len: u64) -> String {
    format!("\0R{offset:016x}{len:016x}")
}

/// The (offset, length) of a reference, `None` for any other value.
fn parse_reference(value: &[u8]) -> Option<(u64, u64)> {
    if value.len() != REF_BYTES || !value.starts_with(b"\0R") {
        return None;
    }
    let hex = |b: &[u8]| u64::from_str_radix(std::str::from_utf8(b).ok()?, 16).ok();
    Some((hex(&value[2..18])?, hex(&value[18..34])?))
}

/// The long texts of one sorter, in an anonymous file created on first use.
pub(crate) struct LongTexts {
    file: AppendFile,
    /// Stored texts by lookup key: their offsets.
    index: FastMap<(u64, u64), Vec<u64>>,
    /// Texts in memory by offset, the order they came in, and their bytes.
    cache: FastMap<u64, Arc<[u8]>>,
    order: VecDeque<u64>,
    cache_bytes: usize,
    /// Whether any value was changed on the way in (stored or escaped).
    changed: bool,
}

impl LongTexts {
    /// A store whose file goes to `dir` (`None`: the system's temporary directory).
    pub(crate) fn new(dir: Option<&Path>) -> Self {
        LongTexts {
            file: AppendFile::new(dir, "long texts of a sort"),
            index: FastMap::default(),
            cache: FastMap::default(),
            order: VecDeque::new(),
            cache_bytes: 0,
            changed: false,
        }
    }

    fn remember(&mut self, offset: u64, text: Arc<[u8]>) {
        let cost = text.len() + CACHED_OVERHEAD;
        if cost > CACHE_BYTES {
            return;
        }
        if self.cache.insert(offset, text).is_none() {
            self.cache_bytes += cost;
            self.order.push_back(offset);
        }
        while self.cache_bytes > CACHE_BYTES {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(t) = self.cache.remove(&old) {
                self.cache_bytes -= t.len() + CACHED_OVERHEAD;
            }
        }
    }

    /// The text at `offset` of `len` bytes, from memory or the file.
    fn text(&mut self, offset: u64, len: u64) -> Result<Arc<[u8]>> {
        if let Some(t) = self.cache.get(&offset) {
            return Ok(t.clone());
        }
        let text: Arc<[u8]> = self.file.read(offset, len)?.into();
        self.remember(offset, text.clone());
        Ok(text)
    }

    /// Stores `text` (or finds it stored) and gives its reference.
    fn store(&mut self, text: &[u8]) -> Result<String> {
        let key = key_of(text);
        let len = text.len() as u64;
        let candidates: Vec<u64> = self
            .index
            .get(&key)
            .map(|v| v.iter().rev().take(MAX_CANDIDATES).copied().collect())
            .unwrap_or_default();
        for offset in candidates {
            if *self.text(offset, len)? == *text {
                return Ok(reference(offset, len));
            }
        }
        let offset = self.file.append(text)?;
        self.index.entry(key).or_default().push(offset);
        self.remember(offset, Arc::from(text));
        Ok(reference(offset, len))
    }

    /// `batch` with its long texts (and texts starting with NUL) replaced by references.
    pub(crate) fn encode(&mut self, batch: RecordBatch) -> Result<RecordBatch> {
        let mut columns: Option<Vec<ArrayRef>> = None;
        for (i, column) in batch.columns().iter().enumerate() {
            if column.data_type() != &DataType::Utf8 {
                continue;
            }
            let strings = column.as_string::<i32>();
            if !any_changed(strings) {
                continue;
            }
            self.changed = true;
            let mut b = StringBuilder::with_capacity(strings.len(), strings.len() * REF_BYTES);
            for v in strings.iter() {
                match v {
                    Some(v) if v.len() >= LONG_TEXT => b.append_value(self.store(v.as_bytes())?),
                    Some(v) if v.starts_with('\0') => b.append_value(format!("\0E{v}")),
                    other => b.append_option(other),
                }
            }
            columns.get_or_insert_with(|| batch.columns().to_vec())[i] = Arc::new(b.finish());
        }
        match columns {
            None => Ok(batch),
            Some(c) => Ok(RecordBatch::try_new(batch.schema(), c)?),
        }
    }

    /// The first rows of `batch` with their references replaced by the texts, as many
    /// as keep the texts near [`BATCH_BYTES`] (at least one), and the rows left.
    pub(crate) fn decode(
        &mut self,
        batch: RecordBatch,
    ) -> Result<(RecordBatch, Option<RecordBatch>)> {
        if !self.changed {
            return Ok((batch, None));
        }
        let text_columns: Vec<usize> = (0..batch.num_columns())
            .filter(|&i| batch.column(i).data_type() == &DataType::Utf8)
            .collect();
        // The bytes of the texts each row gets back, and where the batch is cut.
        let mut rows = batch.num_rows();
        let mut bytes = 0usize;
        let mut any = false;
        for r in 0..batch.num_rows() {
            let mut row_bytes = 0usize;
            for &i in &text_columns {
                let strings = batch.column(i).as_string::<i32>();
                if strings.is_valid(r) {
                    match coded(strings.value(r).as_bytes()) {
                        Some(Coded::Stored(_, len)) => {
                            any = true;
                            row_bytes = row_bytes
                                .saturating_add(usize::try_from(len).unwrap_or(usize::MAX));
                        }
                        Some(Coded::Escaped) => any = true,
                        None => {}
                    }
                }
            }
            if r > 0 && bytes.saturating_add(row_bytes) > BATCH_BYTES {
                rows = r;
                break;
            }
            bytes = bytes.saturating_add(row_bytes);
        }
        if !any {
            return Ok((batch, None));
        }
        let rest = (rows < batch.num_rows()).then(|| batch.slice(rows, batch.num_rows() - rows));
        let head = batch.slice(0, rows);
        let mut columns = head.columns().to_vec();
        for &i in &text_columns {
            let strings: &StringArray = head.column(i).as_string::<i32>();
            if !strings.iter().flatten().any(|v| v.starts_with('\0')) {
                continue;
            }
            let mut b = StringBuilder::with_capacity(strings.len(), bytes.min(BATCH_BYTES * 2));
            for v in strings.iter() {
                match v.map(|v| (v, coded(v.as_bytes()))) {
                    Some((_, Some(Coded::Stored(offset, len)))) => {
                        let text = self.text(offset, len)?;
                        // Stored texts came from UTF-8 strings, whole.
                        let text = std::str::from_utf8(&text).map_err(|_| {
                            Error::Usage("internal: a long text is not UTF-8".into())
                        })?;
                        b.append_value(text);
                    }
                    // What follows NUL and `E` is the rest of a UTF-8 string.
                    Some((v, Some(Coded::Escaped))) => b.append_value(&v[2..]),
                    Some((v, None)) if v.starts_with('\0') => {
                        return Err(Error::Usage(
                            "internal: a sorted text starts with NUL but is no reference".into(),
                        ))
                    }
                    Some((v, None)) => b.append_value(v),
                    None => b.append_null(),
                }
            }
            columns[i] = Arc::new(b.finish());
        }
        Ok((RecordBatch::try_new(head.schema(), columns)?, rest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use arrow_schema::{Field, Schema};

    fn batch(texts: &[Option<&str>]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, false),
            Field::new("t", DataType::Utf8, true),
        ]));
        let n = Int64Array::from((0..texts.len() as i64).collect::<Vec<_>>());
        let t = StringArray::from(texts.to_vec());
        RecordBatch::try_new(schema, vec![Arc::new(n), Arc::new(t)]).unwrap()
    }

    fn texts(b: &RecordBatch) -> Vec<Option<String>> {
        b.column(1)
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(str::to_string))
            .collect()
    }

    #[test]
    fn long_texts_and_texts_starting_with_nul_go_out_once_and_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let long = "L".repeat(LONG_TEXT);
        let other = format!("{}x", "L".repeat(LONG_TEXT - 1));
        let fake = reference(0, 5);
        let values = [
            Some(long.as_str()),
            Some("short"),
            None,
            Some(long.as_str()),
            Some(other.as_str()),
            Some("\0"),
            Some(fake.as_str()),
            Some(""),
        ];
        let mut store = LongTexts::new(Some(dir.path()));
        let encoded = store.encode(batch(&values)).unwrap();
        let e = texts(&encoded);
        assert!(e.iter().flatten().all(|v| v.len() < LONG_TEXT));
        assert_eq!(e[0], e[3], "equal texts share one place");
        assert_ne!(e[0], e[4], "texts alike at both ends are told apart");
        assert_eq!(e[1].as_deref(), Some("short"));
        // Stored once each: the two long texts; the NUL-led ones stay in the rows.
        assert_eq!(store.file.len() as usize, 2 * LONG_TEXT);
        assert_eq!(e[5].as_deref(), Some("\0E\0"));
        let (decoded, rest) = store.decode(encoded).unwrap();
        assert!(rest.is_none());
        let want: Vec<Option<String>> = values.iter().map(|v| v.map(str::to_string)).collect();
        assert_eq!(texts(&decoded), want);
        // Nothing stored: batches pass untouched.
        let mut empty = LongTexts::new(Some(dir.path()));
        let plain = batch(&[Some("a"), None]);
        assert_eq!(empty.encode(plain.clone()).unwrap(), plain);
        assert_eq!(empty.decode(plain.clone()).unwrap().0, plain);
        assert!(empty.file.is_empty(), "no file without a long text");
        // Many distinct short NUL-led values: none stored, nothing kept in memory.
        let many: Vec<String> = (0..10_000).map(|i| format!("\0{i}")).collect();
        let values: Vec<Option<&str>> = many.iter().map(|s| Some(s.as_str())).collect();
        let mut store = LongTexts::new(Some(dir.path()));
        let encoded = store.encode(batch(&values)).unwrap();
        let (back, rest) = store.decode(encoded).unwrap();
        assert!(rest.is_none());
        let want: Vec<Option<String>> = many.iter().cloned().map(Some).collect();
        assert_eq!(texts(&back), want);
        assert_eq!(
            (store.file.len(), store.index.len(), store.cache.len()),
            (0, 0, 0)
        );
    }

    #[test]
    fn decoded_batches_are_cut_near_the_batch_bytes_and_texts_read_back_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        // Distinct texts of 3 MiB: more than the cache holds, so most come from the file.
        let many: Vec<String> = (0..8)
            .map(|i| format!("{i}{}", "t".repeat((3 << 20) - 1)))
            .collect();
        let values: Vec<Option<&str>> = many.iter().map(|s| Some(s.as_str())).collect();
        let mut store = LongTexts::new(Some(dir.path()));
        let encoded = store.encode(batch(&values)).unwrap();
        assert!(store.cache_bytes <= CACHE_BYTES);
        let mut out = Vec::new();
        let mut next = Some(encoded);
        while let Some(b) = next {
            let (head, rest) = store.decode(b).unwrap();
            assert!(head.num_rows() >= 1);
            let bytes: usize = texts(&head).iter().flatten().map(String::len).sum();
            assert!(bytes <= BATCH_BYTES, "{bytes}");
            out.extend(texts(&head));
            next = rest;
        }
        let want: Vec<Option<String>> = many.iter().cloned().map(Some).collect();
        assert_eq!(out, want);
        // One row larger than the batch bytes still comes out, alone.
        let huge = "h".repeat(BATCH_BYTES + 1);
        let encoded = store.encode(batch(&[Some(&huge), Some("s")])).unwrap();
        let (head, rest) = store.decode(encoded).unwrap();
        assert_eq!(head.num_rows(), 1);
        assert_eq!(texts(&head)[0].as_deref(), Some(huge.as_str()));
        assert_eq!(texts(&rest.unwrap())[0].as_deref(), Some("s"));
    }
}

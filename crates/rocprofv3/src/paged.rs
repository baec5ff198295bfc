//! Fixed-size records keyed by dense integer ids (correlation ids count up from 1), kept
//! in pages of [`SLOTS`] ids of which only a bounded number stay in memory: the others
//! wait in an anonymous temporary file (gone when the map is dropped, by a signal too).
//!
//! A direct rocprofv3 source keeps here what it knows by id (D101): the describing pass
//! its flow groups and fill entries by correlation id and a JSON object's dispatch checks
//! by dispatch id; the PMC stream the facts of the dispatches with counter values; a JSON
//! stream the references of its `strings` texts. They used to be vectors and hash maps,
//! the parts of a direct source's memory that grew with the trace. Reads and updates go
//! by id, in the order the files give them, which is close to id order: a page is
//! loaded, used for a while and written back once if it changed.
//!
//! While the describing pass runs, one thread owns the map and updates it. Then
//! [`PagedMap::seal`] writes every page out (when any was written out before) and the
//! map is shared by the streams, each looking records up through its own small
//! [`PageCache`].
//!
//! A page a quarter full or less goes to the file compressed as one LZ4 block: pages of
//! scattered ids are mostly empty slots, and a long trace's flow groups, a few dozen
//! kernels to a page of 512 ids, took as much file as the input did (D141). Fuller pages
//! go raw.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rocpd_model::hash::FastMap;
use rocpd_model::{Error, Result};

/// Pages written to a file by every map of the process so far (tests check that a
/// small memory limit did send pages out).
static PAGES_WRITTEN: AtomicU64 = AtomicU64::new(0);

/// See [`PAGES_WRITTEN`].
pub fn pages_written() -> u64 {
    PAGES_WRITTEN.load(Ordering::Relaxed)
}

/// Ids per page.
pub(crate) const SLOTS: usize = 512;

/// A record of fixed size. The default value is an empty slot: [`PagedMap::get_mut`]
/// and [`PagedMap::lookup`] give none for it.
pub(crate) trait Slot: Copy + Default + PartialEq {
    /// Bytes a record takes in the file.
    const BYTES: usize;
    /// Writes the record into `out` (`BYTES` long).
    fn put(&self, out: &mut [u8]);
    /// Reads a record [`Slot::put`] wrote.
    fn take(bytes: &[u8]) -> Self;
}

/// Writes `values` from the start of `out`, 8 little-endian bytes each (for
/// [`Slot::put`]).
pub(crate) fn put_i64s(out: &mut [u8], values: &[i64]) {
    for (v, o) in values.iter().zip(out.chunks_exact_mut(8)) {
        o.copy_from_slice(&v.to_le_bytes());
    }
}

/// The `N` bytes of a record at `at` (for [`Slot::take`]).
pub(crate) fn bytes_at<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&b[at..at + N]);
    out
}

/// Where a page written out lies in the file: its bytes (compressed, or raw when `len` is
/// a raw page's size) at `at`, `len` of the `room` it has there (a page written again
/// goes back to its place while it fits).
#[derive(Debug, Clone, Copy)]
struct Place {
    at: u64,
    room: u32,
    len: u32,
}

/// A page in memory.
struct Resident<V> {
    slots: Box<[V]>,
    /// When it was last used (the map's clock).
    used: u64,
    /// Whether the file's copy (if any) is older.
    dirty: bool,
}

/// How much of the map may stay in memory and how far ids may scatter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PageLimits {
    /// Pages kept in memory while the map is built.
    pub resident: usize,
    /// Pages in all; past it the caller refuses.
    pub total: usize,
}

/// Pages past which ids must be dense: each page at least [`MIN_PER_PAGE`] records on
/// average (an entry made per record), or the file within a share of the input that
/// named the ids ([`PagedMap::allow_input_bytes`], D120).
const DENSE_AFTER: usize = 256;
const MIN_PER_PAGE: usize = 16;

/// Records by id; see the module documentation.
pub(crate) struct PagedMap<V: Slot> {
    resident: FastMap<i64, Resident<V>>,
    /// Where each page written out lies in the file.
    written: FastMap<i64, Place>,
    file: Option<Mutex<File>>,
    file_end: u64,
    limits: PageLimits,
    clock: u64,
    /// Calls of [`PagedMap::entry`].
    entries: usize,
    /// Where the file goes (the system's temporary directory).
    dir: PathBuf,
    /// What the records are, for errors.
    what: &'static str,
    /// Bytes of file allowed for pages of scattered ids, from the size of the input
    /// the ids come from (D120); all for ids dense by construction.
    input_bytes: u64,
}

impl<V: Slot> PagedMap<V> {
    pub(crate) fn new(limits: PageLimits, what: &'static str) -> Self {
        PagedMap {
            resident: FastMap::default(),
            written: FastMap::default(),
            file: None,
            file_end: 0,
            limits: PageLimits {
                resident: limits.resident.max(1),
                total: limits.total,
            },
            clock: 0,
            entries: 0,
            dir: std::env::temp_dir(),
            what,
            input_bytes: 0,
        }
    }

    /// Takes pages of ids too scattered for the records-per-page rule while the file
    /// would stay within `bytes`, a share of the size of the input that names the ids: a
    /// run whose kernels are few among many ids has few records a page but many bytes
    /// of input behind each (D120).
    pub(crate) fn allow_input_bytes(&mut self, bytes: u64) {
        self.input_bytes = bytes;
    }

    /// The bytes of input allowed (see [`PagedMap::allow_input_bytes`]).
    #[cfg(test)]
    pub(crate) fn input_allowance(&self) -> u64 {
        self.input_bytes
    }

    /// A map for ids that are dense by construction (ranks `0..n`): a new page is
    /// refused only past [`PageLimits::total`], however few records the pages made so far
    /// hold, since a page's ids may first come in any order.
    pub(crate) fn for_dense_ids(limits: PageLimits, what: &'static str) -> Self {
        PagedMap {
            input_bytes: u64::MAX,
            ..PagedMap::new(limits, what)
        }
    }

    /// Whether no record was ever added.
    pub(crate) fn is_empty(&self) -> bool {
        self.resident.is_empty() && self.written.is_empty()
    }

    /// Pages in all, in memory or written out.
    pub(crate) fn pages(&self) -> usize {
        self.written.len()
            + self
                .resident
                .keys()
                .filter(|p| !self.written.contains_key(p))
                .count()
    }

    /// Whether anything went to the file.
    #[cfg(test)]
    pub(crate) fn spilled(&self) -> bool {
        self.file.is_some()
    }

    /// The record of `id`, created empty when its page is new: `None` when a new page
    /// would pass [`PageLimits::total`] or the ids scatter (more than [`DENSE_AFTER`]
    /// pages, fewer than [`MIN_PER_PAGE`] calls a page, and a file of one more page
    /// past the bytes [`PagedMap::allow_input_bytes`] allows).
    pub(crate) fn entry(&mut self, id: i64) -> Result<Option<&mut V>> {
        let (page, slot) = split(id);
        self.entries = self.entries.saturating_add(1);
        if !self.resident.contains_key(&page) && !self.written.contains_key(&page) {
            let pages = self.pages();
            let page_bytes = (SLOTS * V::BYTES) as u64;
            // The file as it is (compressed pages, D141), and every page in memory and
            // the new one as if written raw: what the file may grow to before the next
            // page is asked for (D142). The pages the map keeps in memory are allowed
            // beside the input's share: they cost no disk until written out, and once
            // they are, the file stays within the share and one page (D149).
            let in_memory = (self.resident.len() as u64).saturating_add(1);
            let memory = (self.limits.resident as u64)
                .saturating_add(1)
                .saturating_mul(page_bytes);
            let past_input = self
                .file_end
                .saturating_add(in_memory.saturating_mul(page_bytes))
                > self.input_bytes.saturating_add(memory);
            let sparse = pages >= DENSE_AFTER
                && pages.saturating_mul(MIN_PER_PAGE) > self.entries
                && past_input;
            if pages >= self.limits.total || sparse {
                return Ok(None);
            }
        }
        let p = self.load(page, true)?.expect("a new page is created");
        p.dirty = true;
        Ok(Some(&mut p.slots[slot]))
    }

    /// The record of `id` to change, if it is not empty.
    pub(crate) fn get_mut(&mut self, id: i64) -> Result<Option<&mut V>> {
        self.existing(id, true)
    }

    /// The record of `id`, if it is not empty, leaving its page unchanged (a page only
    /// read is not written out again).
    pub(crate) fn get(&mut self, id: i64) -> Result<Option<V>> {
        Ok(self.existing(id, false)?.map(|v| *v))
    }

    /// The record of `id` if not empty, its page marked changed when `change` is set.
    fn existing(&mut self, id: i64, change: bool) -> Result<Option<&mut V>> {
        let (page, slot) = split(id);
        let Some(p) = self.load(page, false)? else {
            return Ok(None);
        };
        if p.slots[slot] == V::default() {
            return Ok(None);
        }
        p.dirty |= change;
        Ok(Some(&mut p.slots[slot]))
    }

    /// Page `page` in memory: read back from the file, or (with `create`) new.
    fn load(&mut self, page: i64, create: bool) -> Result<Option<&mut Resident<V>>> {
        self.clock += 1;
        let clock = self.clock;
        if !self.resident.contains_key(&page) {
            let slots = match self.written.get(&page) {
                Some(&place) => self.read_page(place)?,
                None if create => vec![V::default(); SLOTS].into_boxed_slice(),
                None => return Ok(None),
            };
            if self.resident.len() >= self.limits.resident {
                self.evict()?;
            }
            self.resident.insert(
                page,
                Resident {
                    slots,
                    used: clock,
                    dirty: false,
                },
            );
        }
        let p = self.resident.get_mut(&page).expect("just loaded");
        p.used = clock;
        Ok(Some(p))
    }

    /// Writes the least recently used page out (if changed) and drops it from memory.
    fn evict(&mut self) -> Result<()> {
        match self.resident.iter().min_by_key(|(_, p)| p.used) {
            Some((&page, _)) => self.retire(page),
            None => Ok(()),
        }
    }

    /// Drops page `page` from memory, writing it out first unless the file holds it as
    /// it is.
    fn retire(&mut self, page: i64) -> Result<()> {
        let Some(p) = self.resident.remove(&page) else {
            return Ok(());
        };
        if p.dirty || !self.written.contains_key(&page) {
            if let Err(e) = self.write_page(page, &p.slots) {
                // Kept, so that the map still says what it was told.
                self.resident.insert(page, p);
                return Err(e);
            }
        }
        Ok(())
    }

    fn write_page(&mut self, page: i64, slots: &[V]) -> Result<()> {
        let mut bytes = vec![0u8; SLOTS * V::BYTES];
        for (v, out) in slots.iter().zip(bytes.chunks_exact_mut(V::BYTES)) {
            v.put(out);
        }
        // A page more than a quarter full goes raw: it would compress little, for the
        // time of compressing it (dense ids, the common case). A compressed page is
        // always shorter than a raw one, which is how a read tells them apart.
        let filled = slots.iter().filter(|v| **v != V::default()).count();
        let packed = if filled * 4 > SLOTS {
            bytes
        } else {
            let packed = lz4_flex::block::compress(&bytes);
            if packed.len() < bytes.len() {
                packed
            } else {
                bytes
            }
        };
        // A page is at most 512 records of a few dozen bytes: far below u32::MAX.
        let len = u32::try_from(packed.len()).map_err(|e| self.fail(std::io::Error::other(e)))?;
        if self.file.is_none() {
            let file = tempfile::tempfile_in(&self.dir).map_err(|e| self.fail(e))?;
            self.file = Some(Mutex::new(file));
        }
        let (place, end) = match self.written.get(&page) {
            Some(&p) if len <= p.room => (Place { len, ..p }, self.file_end),
            // New, or grown past its room: at the end, the old room left unused. A page
            // that moves gets twice its old room (at most the largest a page can take),
            // so one that grows moves a few times and the file stays within about twice
            // its pages, whatever order the pages come and go in.
            old => {
                let most = lz4_flex::block::get_maximum_output_size(SLOTS * V::BYTES);
                let doubled = old.map_or(0, |p| p.room.saturating_mul(2));
                let room = doubled
                    .min(u32::try_from(most).unwrap_or(u32::MAX))
                    .max(len);
                let at = self.file_end;
                (Place { at, room, len }, at + u64::from(room))
            }
        };
        let file = self.file.as_ref().expect("created above");
        let written = {
            let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
            f.seek(SeekFrom::Start(place.at))
                .and_then(|_| f.write_all(&packed))
        };
        written.map_err(|e| self.fail(e))?;
        // Noted once written: after a failed write the map still finds what it had.
        self.written.insert(page, place);
        self.file_end = end;
        PAGES_WRITTEN.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn read_page(&self, place: Place) -> Result<Box<[V]>> {
        read_page(self.file.as_ref(), place).map_err(|e| self.fail(e))
    }

    fn fail(&self, e: std::io::Error) -> Error {
        Error::output(
            &self.dir,
            format!("cannot keep {} in a temporary file: {e}", self.what),
        )
    }

    /// Ends the building: when any page was written out, every page changed since is
    /// written too and the memory given back, so that lookups share one file; else the
    /// pages stay in memory, shared as they are.
    pub(crate) fn seal(&mut self) -> Result<()> {
        if self.file.is_none() {
            return Ok(());
        }
        let pages: Vec<i64> = self.resident.keys().copied().collect();
        for page in pages {
            self.retire(page)?;
        }
        self.resident.shrink_to_fit();
        Ok(())
    }

    /// The record of `id`, if not empty, without changing the map: from the pages in
    /// memory, else through `cache`.
    pub(crate) fn lookup(&self, id: i64, cache: &mut PageCache<V>) -> Result<Option<V>> {
        let (page, slot) = split(id);
        let v = self.with_page(page, cache, |slots| slots[slot])?;
        Ok(v.filter(|v| *v != V::default()))
    }

    /// `f` of the records of page `page` (empty ones too), if it has any, without
    /// changing the map: from memory, else through `cache`.
    pub(crate) fn with_page<R>(
        &self,
        page: i64,
        cache: &mut PageCache<V>,
        f: impl FnOnce(&[V]) -> R,
    ) -> Result<Option<R>> {
        if let Some(p) = self.resident.get(&page) {
            return Ok(Some(f(&p.slots)));
        }
        let Some(&place) = self.written.get(&page) else {
            return Ok(None);
        };
        cache.clock += 1;
        if let Some((_, used, slots)) = cache.pages.iter_mut().find(|(p, _, _)| *p == page) {
            *used = cache.clock;
            return Ok(Some(f(slots)));
        }
        let slots = self.read_page(place)?;
        let out = f(&slots);
        if cache.pages.len() >= CACHED_PAGES {
            let oldest = (0..cache.pages.len())
                .min_by_key(|&i| cache.pages[i].1)
                .expect("full");
            cache.pages.swap_remove(oldest);
        }
        cache.pages.push((page, cache.clock, slots));
        Ok(Some(out))
    }

    /// Calls `f` with every record that is not empty, in id order.
    pub(crate) fn for_each(&self, mut f: impl FnMut(i64, V)) -> Result<()> {
        let mut pages: Vec<i64> = self
            .resident
            .keys()
            .chain(self.written.keys())
            .copied()
            .collect();
        pages.sort_unstable();
        pages.dedup();
        for page in pages {
            let slots = match (self.resident.get(&page), self.written.get(&page)) {
                (Some(p), _) => p.slots.clone(),
                (None, Some(&place)) => self.read_page(place)?,
                (None, None) => continue,
            };
            for (i, v) in slots.iter().enumerate() {
                if *v != V::default() {
                    f(page * SLOTS as i64 + i as i64, *v);
                }
            }
        }
        Ok(())
    }

    /// Every record that is not empty, in id order (for tests).
    #[cfg(test)]
    pub(crate) fn records(&self) -> Vec<(i64, V)> {
        let mut out = Vec::new();
        self.for_each(|id, v| out.push((id, v))).expect("readable");
        out
    }
}

/// Pages a [`PageCache`] keeps.
const CACHED_PAGES: usize = 4;

/// A reader's few pages of a sealed [`PagedMap`] that went to a file.
pub(crate) struct PageCache<V> {
    pages: Vec<(i64, u64, Box<[V]>)>,
    clock: u64,
}

impl<V> Default for PageCache<V> {
    fn default() -> Self {
        PageCache {
            pages: Vec::new(),
            clock: 0,
        }
    }
}

/// 64 ids' bits, the record of a [`PagedIds`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Bits(u64);

impl Slot for Bits {
    const BYTES: usize = 8;
    fn put(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.0.to_le_bytes());
    }
    fn take(bytes: &[u8]) -> Self {
        Bits(u64::from_le_bytes(bytes_at(bytes, 0)))
    }
}

/// A set of ids as bits in a [`PagedMap`]: [`PagedIds::PAGE_IDS`] ids a page (4 KiB), a
/// bounded number of pages in memory and the others in the map's file, so that the
/// set's memory does not grow with the spread of the ids (D140). One thread builds it,
/// ids coming close to their order (the describing pass's region and text ids); once
/// [`PagedIds::seal`]ed, streams ask it through caches of their own.
pub(crate) struct PagedIds {
    words: PagedMap<Bits>,
    /// Built by [`PagedIds::seal`], for [`PagedIds::rank`]: each page with ids, in order.
    ranks: Vec<PageRanks>,
    /// Ids in all, once sealed.
    len: i64,
}

/// How many of a [`PagedIds`]' ids lie below a page, and below each of its blocks of
/// [`PagedIds::BLOCK_IDS`] within it: a rank then adds up at most 64 words of bits.
/// 48 bytes a page, 6 MiB at the most pages a map may have.
struct PageRanks {
    page: i64,
    below: i64,
    blocks: [u32; PagedIds::BLOCKS],
}

impl PagedIds {
    /// Ids a page.
    pub(crate) const PAGE_IDS: i64 = 64 * SLOTS as i64;
    /// Bytes a page, raw.
    pub(crate) const PAGE_BYTES: u64 = (SLOTS * Bits::BYTES) as u64;
    /// Ids a block (see [`PageRanks`]).
    pub(crate) const BLOCK_IDS: i64 = 4096;
    /// Blocks a page.
    const BLOCKS: usize = (Self::PAGE_IDS / Self::BLOCK_IDS) as usize;

    pub(crate) fn new(limits: PageLimits, what: &'static str) -> Self {
        PagedIds {
            words: PagedMap::new(limits, what),
            ranks: Vec::new(),
            len: 0,
        }
    }

    /// See [`PagedMap::allow_input_bytes`].
    pub(crate) fn allow_input_bytes(&mut self, bytes: u64) {
        self.words.allow_input_bytes(bytes);
    }

    /// Adds `id`: `Some(false)` when it was there, `None` when its page is refused
    /// (the ids scatter past the map's rules; see [`PagedMap::entry`]).
    pub(crate) fn insert(&mut self, id: i64) -> Result<Option<bool>> {
        let Some(word) = self.words.entry(id.div_euclid(64))? else {
            return Ok(None);
        };
        let mask = 1u64 << id.rem_euclid(64);
        let new = word.0 & mask == 0;
        word.0 |= mask;
        Ok(Some(new))
    }

    /// Ends the building (see [`PagedMap::seal`]) and numbers the ids for
    /// [`PagedIds::rank`].
    pub(crate) fn seal(&mut self) -> Result<()> {
        self.words.seal()?;
        let mut ranks: Vec<PageRanks> = Vec::new();
        let mut len = 0i64;
        let words_a_block = Self::BLOCK_IDS / 64;
        self.words.for_each(|word, bits| {
            let page = word.div_euclid(SLOTS as i64);
            if ranks.last().is_none_or(|r| r.page != page) {
                ranks.push(PageRanks {
                    page,
                    below: len,
                    blocks: [0; Self::BLOCKS],
                });
            }
            let r = ranks.last_mut().expect("pushed");
            let n = bits.0.count_ones();
            // The blocks after this word's count it as below them.
            let block = word.rem_euclid(SLOTS as i64) / words_a_block;
            for later in &mut r.blocks[block as usize + 1..] {
                *later += n;
            }
            len += i64::from(n);
        })?;
        self.ranks = ranks;
        self.len = len;
        Ok(())
    }

    /// How many ids the set has (once sealed).
    pub(crate) fn len(&self) -> i64 {
        self.len
    }

    /// The rank of `id` among the set's ids (0 for the smallest) if the set has it, once
    /// sealed; the page it lies in through `cache` when it is not in memory.
    pub(crate) fn rank(&self, id: i64, cache: &mut PageCache<Bits>) -> Result<Option<i64>> {
        let page = id.div_euclid(Self::PAGE_IDS);
        let Ok(i) = self.ranks.binary_search_by_key(&page, |r| r.page) else {
            return Ok(None);
        };
        let r = &self.ranks[i];
        let at = id.rem_euclid(Self::PAGE_IDS) as usize;
        let (word, mask) = (at / 64, 1u64 << (at % 64));
        let words_a_block = Self::BLOCK_IDS as usize / 64;
        let first = word - word % words_a_block;
        let within = self.words.with_page(page, cache, |words| {
            (words[word].0 & mask != 0).then(|| {
                let before: u32 = words[first..word].iter().map(|w| w.0.count_ones()).sum();
                before + (words[word].0 & (mask - 1)).count_ones()
            })
        })?;
        let block = r.blocks[word / words_a_block];
        Ok(within
            .flatten()
            .map(|n| r.below + i64::from(block) + i64::from(n)))
    }

    /// Whether `id` was added.
    #[cfg(test)]
    pub(crate) fn contains(&mut self, id: i64) -> Result<bool> {
        let mask = 1u64 << id.rem_euclid(64);
        Ok(self
            .words
            .get(id.div_euclid(64))?
            .is_some_and(|w| w.0 & mask != 0))
    }

    /// Pages in all, in memory or written out.
    #[cfg(test)]
    pub(crate) fn pages(&self) -> usize {
        self.words.pages()
    }
}

/// The page of `id` and its slot in it.
fn split(id: i64) -> (i64, usize) {
    let n = SLOTS as i64;
    (id.div_euclid(n), id.rem_euclid(n) as usize)
}

fn read_page<V: Slot>(file: Option<&Mutex<File>>, place: Place) -> std::io::Result<Box<[V]>> {
    let file = file.ok_or_else(|| std::io::Error::other("no file"))?;
    let mut packed = vec![0u8; place.len as usize];
    {
        let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
        f.seek(SeekFrom::Start(place.at))?;
        f.read_exact(&mut packed)?;
    }
    let raw = SLOTS * V::BYTES;
    let bytes = if packed.len() == raw {
        packed
    } else {
        let mut bytes = vec![0u8; raw];
        match lz4_flex::block::decompress_into(&packed, &mut bytes) {
            Ok(n) if n == raw => {}
            _ => return Err(std::io::Error::other("a page of the file is damaged")),
        }
        bytes
    };
    Ok(bytes.chunks_exact(V::BYTES).map(V::take).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, Default, PartialEq)]
    struct Pair(u32, i64);

    impl Slot for Pair {
        const BYTES: usize = 12;
        fn put(&self, out: &mut [u8]) {
            out[..4].copy_from_slice(&self.0.to_le_bytes());
            out[4..12].copy_from_slice(&self.1.to_le_bytes());
        }
        fn take(b: &[u8]) -> Self {
            Pair(
                u32::from_le_bytes(b[..4].try_into().unwrap()),
                i64::from_le_bytes(b[4..12].try_into().unwrap()),
            )
        }
    }

    /// Updates that go back and forth over more pages than stay in memory give what a
    /// map in memory gives, before and after sealing, through several caches.
    #[test]
    fn pages_written_out_read_back_as_they_were() {
        let mut map = PagedMap::<Pair>::new(
            PageLimits {
                resident: 2,
                total: 64,
            },
            "pairs",
        );
        let mut want = std::collections::BTreeMap::new();
        // Ids up and down over 10 pages, negative ones too, each touched several times.
        let ids: Vec<i64> = (0..4000)
            .map(|i: i64| ((i * 7919) % 5000) - 200)
            .chain((0..300).rev())
            .collect();
        for (n, &id) in ids.iter().enumerate() {
            let v = map.entry(id).unwrap().unwrap();
            v.0 += 1;
            v.1 = v.1.max(n as i64);
            let w = want.entry(id).or_insert(Pair::default());
            w.0 += 1;
            w.1 = w.1.max(n as i64);
        }
        assert!(map.spilled(), "10 pages with 2 in memory");
        // get_mut changes only records that are there.
        assert!(map.get_mut(10_000).unwrap().is_none());
        assert!(map.get_mut(4_801).unwrap().is_none(), "an empty slot");
        map.get_mut(5).unwrap().unwrap().1 = -1;
        want.get_mut(&5).unwrap().1 = -1;
        // Reading a record leaves its page as the file has it.
        let page_of = |id: i64| split(id).0;
        for id in [4_700, 4_200, 3_700] {
            assert_eq!(map.get(id).unwrap(), want.get(&id).copied());
            assert!(!map.resident[&page_of(id)].dirty, "{id}");
        }
        assert_eq!(map.get(4_801).unwrap(), None);
        let got: Vec<(i64, Pair)> = map.records();
        assert_eq!(got, want.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>());
        map.seal().unwrap();
        assert_eq!(map.resident.len(), 0);
        let (mut a, mut b) = (PageCache::default(), PageCache::default());
        for &id in ids.iter().rev() {
            let cache = if id % 2 == 0 { &mut a } else { &mut b };
            assert_eq!(map.lookup(id, cache).unwrap(), want.get(&id).copied());
        }
        assert_eq!(map.lookup(9_999, &mut a).unwrap(), None);
    }

    /// A map that never passed its memory stays there, and a new page past the total is
    /// refused.
    #[test]
    fn a_small_map_stays_in_memory_and_the_total_is_kept() {
        let mut map = PagedMap::<Pair>::new(
            PageLimits {
                resident: 4,
                total: 3,
            },
            "pairs",
        );
        for id in [1, 600, 1100] {
            map.entry(id).unwrap().unwrap().0 = 1;
        }
        assert!(map.entry(2000).unwrap().is_none());
        // Past DENSE_AFTER pages, ids one a page are refused once a page is written out
        // when no input allows them.
        let mut sparse = PagedMap::<Pair>::new(
            PageLimits {
                resident: 4,
                total: 1 << 20,
            },
            "pairs",
        );
        let refused = (0..1000).find(|&i| sparse.entry(i * SLOTS as i64).unwrap().is_none());
        assert_eq!(refused, Some(DENSE_AFTER as i64));
        // Unless the file stays within the input's bytes (D120): 12-byte pairs, 6 KiB
        // a page, an input of 300 pages. Pages of one record each compress to little
        // (D141), so the file stays far within it (D142)...
        let limits = PageLimits {
            resident: 4,
            total: 1 << 20,
        };
        let mut large = PagedMap::<Pair>::new(limits, "pairs");
        large.allow_input_bytes(300 * 12 * SLOTS as u64);
        let refused = (0..1000).find(|&i| large.entry(i * SLOTS as i64).unwrap().is_none());
        assert_eq!(refused, None);
        // ...while a smaller input's allowance is kept: the pages in memory are allowed
        // beside it (D149), so a new page is refused once the file alone passes it, by
        // at most the page written out last.
        let mut small = PagedMap::<Pair>::new(limits, "pairs");
        let allowance = 20 * 12 * SLOTS as u64;
        small.allow_input_bytes(allowance);
        let refused = (0..100_000).find(|&i| small.entry(i * SLOTS as i64).unwrap().is_none());
        let n = refused.expect("refused");
        let page_bytes = 12 * SLOTS as u64;
        assert!(
            n > 300,
            "{n}: compressed pages count for less than raw ones"
        );
        assert!(
            small.file_end > allowance && small.file_end <= allowance + page_bytes,
            "{}",
            small.file_end
        );
        // A map of dense ids takes them all, up to its total.
        let mut dense = PagedMap::<Pair>::for_dense_ids(
            PageLimits {
                resident: 4,
                total: 1000,
            },
            "pairs",
        );
        let refused = (0..1001).find(|&i| dense.entry(i * SLOTS as i64).unwrap().is_none());
        assert_eq!(refused, Some(1000));
        assert!(map.entry(1101).unwrap().is_some(), "an existing page");
        map.seal().unwrap();
        assert!(!map.spilled());
        assert_eq!(map.pages(), 3);
        let mut cache = PageCache::default();
        assert_eq!(map.lookup(600, &mut cache).unwrap(), Some(Pair(1, 0)));
        assert_eq!(map.lookup(601, &mut cache).unwrap(), None);
    }

    /// A page written small, then filled with records that compress badly, moves to the
    /// end of the file; written small again, it goes back into its larger room. Every
    /// record reads back as written, and a mostly empty page takes far less file than
    /// its raw size.
    #[test]
    fn compressed_pages_move_when_they_grow() {
        let limits = PageLimits {
            resident: 1,
            total: 64,
        };
        let mut map = PagedMap::<Pair>::new(limits, "pairs");
        map.entry(3).unwrap().unwrap().0 = 1;
        map.entry(SLOTS as i64).unwrap().unwrap().0 = 1; // page 0 goes out
        let small = map.written[&0];
        assert!((small.len as usize) < SLOTS * Pair::BYTES / 20, "{small:?}");
        let noisy = |i: i64| {
            Pair(
                i as u32 ^ 0x9e37_79b9,
                i.wrapping_mul(0x2545_f491_4f6c_dd1d),
            )
        };
        for i in 0..SLOTS as i64 {
            *map.entry(i).unwrap().unwrap() = noisy(i);
        }
        map.entry(SLOTS as i64 * 2).unwrap().unwrap().0 = 1; // page 0 out again
        let grown = map.written[&0];
        assert!(
            grown.at > small.at && grown.len > small.room,
            "{small:?} {grown:?}"
        );
        for i in 0..SLOTS as i64 {
            assert_eq!(map.get(i).unwrap(), Some(noisy(i)));
        }
        for i in 1..SLOTS as i64 {
            *map.get_mut(i).unwrap().unwrap() = Pair(0, 0);
        }
        map.entry(SLOTS as i64 * 3).unwrap().unwrap().0 = 1; // page 0 out, small
        let back = map.written[&0];
        assert_eq!((back.at, back.room), (grown.at, grown.room));
        assert_eq!(map.get(0).unwrap(), Some(noisy(0)));
        assert_eq!(map.get(1).unwrap(), None);
        map.seal().unwrap();
        let mut cache = PageCache::default();
        assert_eq!(map.lookup(0, &mut cache).unwrap(), Some(noisy(0)));
        assert_eq!(
            map.lookup(SLOTS as i64, &mut cache).unwrap(),
            Some(Pair(1, 0))
        );

        // Two pages taking turns in one page of memory, each growing by a record at
        // every turn: each moves a few times, not at every turn (found by review).
        let mut map = PagedMap::<Pair>::new(limits, "pairs");
        for i in 0..SLOTS as i64 {
            for page in [0, 1] {
                *map.entry(page * SLOTS as i64 + i).unwrap().unwrap() = noisy(i + page);
            }
        }
        let raw = (2 * SLOTS * Pair::BYTES) as u64;
        assert!(
            map.file_end <= 4 * raw,
            "{} bytes for two pages",
            map.file_end
        );
        for i in 0..2 * SLOTS as i64 {
            let want = noisy(i % SLOTS as i64 + i / SLOTS as i64);
            assert_eq!(map.get(i).unwrap(), Some(want), "{i}");
        }
    }

    /// A set of ids spread over many more pages than stay in memory answers as a set in
    /// memory does, negative ids and the ends of `i64` included, and scattered ids one a
    /// page are refused past the dense rule as a map's records are.
    #[test]
    fn paged_ids_answer_as_a_set_in_memory() {
        let limits = PageLimits {
            resident: 2,
            total: 1 << 20,
        };
        let mut ids = PagedIds::new(limits, "ids");
        let mut want = std::collections::BTreeSet::new();
        let spread: Vec<i64> = (0..20_000)
            .map(|i: i64| (i * 104_729) % 900_000 - 1_000)
            .chain([i64::MIN, i64::MAX, -1, 0, 63, 64])
            .collect();
        for &id in spread.iter().chain(spread.iter().step_by(7)) {
            assert_eq!(ids.insert(id).unwrap(), Some(want.insert(id)), "{id}");
        }
        assert!(
            ids.words.spilled(),
            "pages past the two in memory go to the file"
        );
        for id in (-2_000..901_000)
            .step_by(37)
            .chain([i64::MIN, i64::MAX, i64::MIN + 1])
        {
            assert_eq!(ids.contains(id).unwrap(), want.contains(&id), "{id}");
        }
        let mut sparse = PagedIds::new(limits, "ids");
        let refused = (0..1_000).find(|&i| sparse.insert(i * 40_000).unwrap().is_none());
        assert_eq!(refused, Some(DENSE_AFTER as i64));
        assert_eq!(sparse.pages(), DENSE_AFTER);
    }
}

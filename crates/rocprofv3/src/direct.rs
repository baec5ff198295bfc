//! rocprofv3 CSV runs and JSON process objects read directly as a [`Source`], with no
//! temporary database.
//!
//! The input is read by the importer's own parsers (`crate::csv_import`'s row parsers,
//! `crate::json_import`'s record readers), which write through a [`RowSink`]: the
//! importer's sink is the database writer, this module's are two passes. A JSON object's
//! record sections play the part of a CSV run's files (API calls, kernel dispatches,
//! copies, allocations, counters), numbered by their place in the object.
//!
//! 1. **Describing** (when the run is opened): every file once, with the API files last,
//!    keeping what the catalog, counts and span need and what the database's joins would
//!    give each row later: per internal correlation id of a kernel or copy, the flow
//!    group's counts and time extremes (what the RocPD reader's links table holds), and
//!    per correlation id of a row without a thread, the thread of the API call that
//!    carries it (what the importer's `fill_threads` copies into such rows). API files go
//!    last so those entries exist when the calls arrive: nothing per API call is kept.
//!    Counter rows are described as the import writes them: the counters, the dispatches
//!    they make when the kernel trace lacks them, the threads they give dispatches that
//!    have none, and which dispatches have values. A JSON object is read twice here: every
//!    section but the API calls, then the API calls alone.
//! 2. **Streaming** (one stream per table, opened on a decode thread): the files of the
//!    tables a read builds again (a JSON object's sections of those tables, the others
//!    skipped unparsed),
//!    each row built into Arrow batches of the columns the run reads, with the ids the
//!    import would give (event ids counted in import order from each file's first, copy
//!    and allocation ids counted per table) and sorted by (start, end desc, id) through a
//!    [`RunSorter`]: rocprofv3 writes a row when its event ends. The PMC stream reads the
//!    kernel trace first, keeping the facts of each dispatch with values ([`Fact`]), then
//!    joins each counter value to its dispatch's facts as the RocPD reader's query does.
//!    Reads are planned by [`plan_reads`] (D161): a CSV run's, a read per table, but two
//!    tables whose rows come from the same files ([`PAIRS`]: regions and markers,
//!    counter values and dispatches) in one; a JSON object's, at most one per thread,
//!    every table in one on one thread. A read builds all its tables at once, and the
//!    streams of its other tables take their rows from it ([`ReadAhead`]).
//!
//! What is kept by id (flow groups by correlation id, the checks of dispatches JSON
//! counter records make; PMC facts and JSON texts by the rank of their id among the ids
//! the describing pass saw, D119, D121) lies in a [`PagedMap`]: pages of 512 ids, a few
//! megabytes of them in memory and the rest in an anonymous temporary file, so that
//! memory does not grow with the trace (D101).
//!
//! Some runs are imported after all, because what the import does to them needs the
//! database or passes the direct reader's bounds: rows given the next free id for a
//! taken one (D110, D112, D113) when they scatter as no paged map keeps them (D131); more
//! than 67M ids of one kind (the id sets' bound, which every paged map and
//! [`MAX_COUNTED`] follow, D128); correlation ids that scatter (fewer than 16 kernels or
//! copies per 512 ids, and pages written out past 1.5 times the input's size, D120, D149);
//! counter values in a run of more than 65,535
//! agents, processes or event categories (D122). (A taken id with no larger one left is
//! the import's error at that row, and the describing pass reports it the same, D126.)
//! JSON objects also when two kernel
//! records share a dispatch id beside counter records, when a kernel record completing a
//! dispatch a counter record made gives it any other column than the counter record
//! did, or completes it twice (the import overwrites the row; the streams wrote what was
//! described), or when `metadata` is given again after records with another node or
//! process (D118). (Any number of distinct `strings` texts reads directly: a stream keeps
//! those past its memory in a file, D121, D125.)
//! [`DirectRunSource::open`] says `None` for those. An error is not a reason: after a
//! describing read fails on the input, the input is read once more as the import reads
//! it, through a describer, and its first error returned (D115, D116; the records the
//! import holds back for later tables wait in memory, then in a temporary file, D126).
//! Rows that come before the tables they need are read in later walks, and their events
//! numbered after the others', as the import holds them back (D108).
//!
//! The pipeline opens a source's streams one after another on one decode thread: so with
//! two or more threads the first stream opened makes every read, side by side, one per
//! thread at a time, and the others take their sorted rows from it. On one thread a
//! stream makes the read of its table when it is opened, on the calling thread.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use arrow_array::RecordBatch;
use rocpd_model::hash::{FastMap, FastSet};
use rocpd_model::{
    Agent, BatchBuilder, Catalog, CodeObject, ColumnBuilder, Error, KernelSymbol, Node, Pmc,
    Process, Projection, Queue, Result, SourceInfo, Table, Thread,
};
use rocpd_pipeline::{
    AppendFile, BatchStream, FileStamps, PreparedStream, RunSorter, SortOptions, SortedRuns,
    Source, StageDrop, StreamOptions,
};

use crate::csv_import::{self, CsvPlan};
use crate::db::{
    handle_name, Agents, AllocRow, CodeObjectRow, CopyRow, DispatchRow, EventRow, FoundDispatch,
    KernelSymbolRow, NodeRow, PmcRow, ProcessRow,
};
use crate::json_import::{self, Kinds, Spans, Wanted};
use crate::paged::{bytes_at, put_i64s, Bits, PageCache, PageLimits, PagedIds, PagedMap, Slot};
use crate::sink::{Deferred, RowSink, Texts};
use crate::{CsvKind, ImportOptions, ImportReport, Run};

/// The most dispatches with counter values the PMC stream keeps the facts of (64 bytes
/// each, by their rank among those dispatches, in pages mostly on disk; D101, D119): as
/// many as the set of counted dispatch ids may hold (D128). Their file, up to 4 GiB, stays
/// under the size of the counter rows that name them (one row of 100 bytes or more per
/// dispatch and counter).
pub const MAX_COUNTED: usize = MAX_ID_PAGES * 4096;

/// The most pages of 4,096 ids each set of ids may use (512 bytes a page); a run whose
/// ids scatter more is imported.
const MAX_ID_PAGES: usize = 1 << 14;

/// A set of ids in pages of 4,096 bits: dense ids (correlation and dispatch ids count up)
/// cost a bit each.
#[derive(Default, PartialEq)]
struct IdSet {
    pages: FastMap<i64, Box<[u64; 64]>>,
}

/// The page of an [`IdSet`] an id lies in, and its bit there.
fn id_bit(id: i64) -> (i64, usize) {
    (id.div_euclid(4096), id.rem_euclid(4096) as usize)
}

impl IdSet {
    /// Adds `id`; `Some(false)` when it was there, `None` past the page budget.
    fn insert(&mut self, id: i64) -> Option<bool> {
        let (page, bit) = id_bit(id);
        if !self.pages.contains_key(&page) && self.pages.len() >= MAX_ID_PAGES {
            return None;
        }
        let words = self.pages.entry(page).or_insert_with(|| Box::new([0; 64]));
        let (w, mask) = (bit / 64, 1u64 << (bit % 64));
        let new = words[w] & mask == 0;
        words[w] |= mask;
        Some(new)
    }

    fn contains(&self, id: i64) -> bool {
        let (page, bit) = id_bit(id);
        self.pages
            .get(&page)
            .is_some_and(|words| words[bit / 64] & (1u64 << (bit % 64)) != 0)
    }

    fn remove(&mut self, id: i64) {
        let (page, bit) = id_bit(id);
        if let Some(words) = self.pages.get_mut(&page) {
            words[bit / 64] &= !(1u64 << (bit % 64));
        }
    }
}

/// A set of ids [`Ranks`] numbers: an [`IdSet`] in memory, or [`PagedIds`] mostly on
/// disk (D140), which numbers its ids once, when sealed.
trait RankSet {
    /// What a user of the ranks builds once (an [`IdSet`]'s count below each page).
    type Index;
    /// What looking ids up keeps between calls.
    type Cache: Default;
    fn index(&self) -> Result<Self::Index>;
    /// How many ids the set has.
    fn len(&self, index: &Self::Index) -> i64;
    /// The rank of `id` (0 for the smallest), if the set has it.
    fn rank(&self, index: &Self::Index, id: i64, cache: &mut Self::Cache) -> Result<Option<i64>>;
}

impl RankSet for IdSet {
    /// The number of ids below each page, and the ids in all.
    type Index = (FastMap<i64, i64>, i64);
    type Cache = ();
    fn index(&self) -> Result<Self::Index> {
        let mut pages: Vec<(i64, &[u64; 64])> =
            self.pages.iter().map(|(p, w)| (*p, &**w)).collect();
        pages.sort_unstable_by_key(|(p, _)| *p);
        let mut below = FastMap::default();
        let mut len = 0i64;
        for (page, words) in pages {
            below.insert(page, len);
            len += words.iter().map(|w| i64::from(w.count_ones())).sum::<i64>();
        }
        Ok((below, len))
    }
    fn len(&self, index: &Self::Index) -> i64 {
        index.1
    }
    fn rank(&self, index: &Self::Index, id: i64, _: &mut ()) -> Result<Option<i64>> {
        let (page, bit) = id_bit(id);
        let (Some(words), Some(below)) = (self.pages.get(&page), index.0.get(&page)) else {
            return Ok(None);
        };
        let (word, mask) = (bit / 64, 1u64 << (bit % 64));
        if words[word] & mask == 0 {
            return Ok(None);
        }
        let before: u32 = words[..word].iter().map(|w| w.count_ones()).sum();
        let within = (words[word] & (mask - 1)).count_ones();
        Ok(Some(below + i64::from(before + within)))
    }
}

impl RankSet for PagedIds {
    type Index = ();
    type Cache = PageCache<Bits>;
    fn index(&self) -> Result<()> {
        Ok(())
    }
    fn len(&self, _: &()) -> i64 {
        PagedIds::len(self)
    }
    fn rank(&self, _: &(), id: i64, cache: &mut PageCache<Bits>) -> Result<Option<i64>> {
        PagedIds::rank(self, id, cache)
    }
}

// A page of an [`IdSet`] is a block of [`PagedIds`]: ranks add up at most 64 words.
const _: () = assert!(PagedIds::BLOCK_IDS == 4096 && PagedIds::PAGE_IDS % 4096 == 0);

/// Each id of a set numbered by its rank among them (0 for the smallest): keys `0..len`
/// for a [`PagedMap`], dense however the ids scatter (D119).
struct Ranks<'a, S: RankSet> {
    set: &'a S,
    index: S::Index,
    cache: S::Cache,
    len: i64,
}

impl<'a, S: RankSet> Ranks<'a, S> {
    fn new(set: &'a S) -> Result<Self> {
        let index = set.index()?;
        let len = set.len(&index);
        Ok(Ranks {
            set,
            index,
            cache: S::Cache::default(),
            len,
        })
    }

    /// The rank of `id`, if the set has it.
    fn rank(&mut self, id: i64) -> Result<Option<i64>> {
        self.set.rank(&self.index, id, &mut self.cache)
    }
}

/// Records of the ids of a set, kept by their rank among them (D119, D121): the page map
/// is dense by construction, so it never refuses a page and needs no overflow, however
/// the ids scatter.
struct RankedMap<'a, S: RankSet, V: Slot> {
    ranks: Ranks<'a, S>,
    map: PagedMap<V>,
    what: &'static str,
}

impl<'a, S: RankSet, V: Slot> RankedMap<'a, S, V> {
    /// Records of the ids in `ids`, `resident` pages of them in memory.
    fn new(ids: &'a S, resident: usize, what: &'static str) -> Result<Self> {
        let ranks = Ranks::new(ids)?;
        let total = usize::try_from(ranks.len)
            .unwrap_or(usize::MAX)
            .div_ceil(crate::paged::SLOTS);
        let map = PagedMap::for_dense_ids(PageLimits { resident, total }, what);
        Ok(RankedMap { ranks, map, what })
    }

    /// The record of `id`, to set. An id the set lacks is an internal error: the streams
    /// read what the describing pass saw.
    fn entry(&mut self, id: i64) -> Result<&mut V> {
        let what = self.what;
        let missing = || Error::Usage(format!("internal: {what} of an id not described"));
        let rank = self.ranks.rank(id)?.ok_or_else(missing)?;
        self.map.entry(rank)?.ok_or_else(missing)
    }

    /// The record of `id`, if it was set.
    fn get(&mut self, id: i64) -> Result<Option<V>> {
        match self.ranks.rank(id)? {
            Some(rank) => self.map.get(rank),
            None => Ok(None),
        }
    }
}

/// What the database's joins give the rows of one internal correlation id.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Group {
    /// Kernels and copies carrying it.
    targets: u32,
    /// API calls (and markers) carrying it.
    sources: u32,
    first_start: i64,
    last_start: i64,
    first_end: i64,
    last_end: i64,
}

impl Group {
    /// Adds a row's times (call before counting the row).
    fn add(&mut self, start: i64, end: i64) {
        self.widen([start, start, end, end]);
    }

    /// Takes in the starts and ends `[first_start, last_start, first_end, last_end]` of
    /// rows not counted yet; the first ones set them.
    fn widen(&mut self, [fs, ls, fe, le]: [i64; 4]) {
        if self.targets + self.sources == 0 {
            (
                self.first_start,
                self.last_start,
                self.first_end,
                self.last_end,
            ) = (fs, ls, fe, le);
        } else {
            self.first_start = self.first_start.min(fs);
            self.last_start = self.last_start.max(ls);
            self.first_end = self.first_end.min(fe);
            self.last_end = self.last_end.max(le);
        }
    }

    /// The flow aggregates, for a group with both ends (the only ones the links hold).
    fn flows(&self) -> Option<[i64; 4]> {
        (self.targets > 0 && self.sources > 0).then_some([
            self.first_start,
            self.last_start,
            self.first_end,
            self.last_end,
        ])
    }
}

impl Slot for Group {
    const BYTES: usize = 40;
    fn put(&self, out: &mut [u8]) {
        out[..4].copy_from_slice(&self.targets.to_le_bytes());
        out[4..8].copy_from_slice(&self.sources.to_le_bytes());
        let times = [
            self.first_start,
            self.last_start,
            self.first_end,
            self.last_end,
        ];
        put_i64s(&mut out[8..], &times);
    }
    fn take(b: &[u8]) -> Self {
        let u = |i| u32::from_le_bytes(bytes_at(b, i));
        let t = |i| i64::from_le_bytes(bytes_at(b, i));
        Group {
            targets: u(0),
            sources: u(4),
            first_start: t(8),
            last_start: t(16),
            first_end: t(24),
            last_end: t(32),
        }
    }
}

/// Pages of paged maps kept in memory instead of the defaults below; 0 for the defaults.
static PAGES_IN_MEMORY: AtomicUsize = AtomicUsize::new(0);

/// Sets how many pages each paged map (flow groups, fill entries, counter threads, PMC
/// facts, dispatch checks, text references, region and text ids) keeps in memory; 0 for
/// the defaults. Tests: 1 writes nearly every page out and reads it back.
#[doc(hidden)]
pub fn set_pages_in_memory(pages: usize) {
    PAGES_IN_MEMORY.store(pages, Ordering::Relaxed);
}

static TEXTS_IN_MEMORY_SET: AtomicUsize = AtomicUsize::new(0);

/// Sets how many distinct texts each JSON stream keeps in memory; 0 for the default.
/// Tests: 1 sends nearly every text to the stream's file (D125).
#[doc(hidden)]
pub fn set_texts_in_memory(texts: usize) {
    TEXTS_IN_MEMORY_SET.store(texts, Ordering::Relaxed);
}

/// Pages a paged map may have in all: as many ids as an [`IdSet`] may hold (67M), so
/// that a map never refuses dense ids the id sets take (D128).
const MAX_MAP_PAGES: usize = MAX_ID_PAGES * 4096 / crate::paged::SLOTS;

// A map holds every id an id set does.
const _: () = assert!(MAX_MAP_PAGES * crate::paged::SLOTS >= MAX_ID_PAGES * 4096);
// The set of counted dispatches, which refuses ids past its pages, bounds their facts.
const _: () = assert!(MAX_COUNTED >= MAX_ID_PAGES * 4096);

/// `default` pages in memory, or the test's setting; at most [`MAX_MAP_PAGES`] in all.
fn page_limits(default: usize) -> PageLimits {
    let set = PAGES_IN_MEMORY.load(Ordering::Relaxed);
    PageLimits {
        resident: if set == 0 { default } else { set },
        total: MAX_MAP_PAGES,
    }
}

/// Flow-group pages (20 KiB each) the describing pass keeps in memory: 4 MiB, about
/// 100,000 correlation ids; the rest wait in a temporary file (D101).
const GROUP_PAGES_IN_MEMORY: usize = 200;

/// Pages of region ids (4 KiB, 32,768 ids each) the describing pass keeps in memory:
/// 1 MiB, 8M ids (D140).
const ID_PAGES_IN_MEMORY: usize = 256;

/// The file the region and text ids may each take whatever the input's size: 64 MiB, as
/// many pages as the [`IdSet`] they were kept in took in memory (D140).
const ID_FILE_BYTES: u64 = MAX_ID_PAGES as u64 * PagedIds::PAGE_BYTES;

// Each page of an [`IdSet`] lies within one page of [`PagedIds`], so the allowance above
// takes every set of ids the [`IdSet`] took (asserted with the ranks' blocks above).

/// Pages of fill entries (4.5 KiB each) the describing pass keeps in memory: 1 MiB.
const FILL_PAGES_IN_MEMORY: usize = 224;

/// A row without a thread takes the thread of the API call whose region id is its
/// correlation id (the import's `fill_threads`): by correlation id, whether such a row
/// exists and, once the API call is read, its thread.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct FillEntry {
    wanted: bool,
    tid: Option<i64>,
}

impl Slot for FillEntry {
    const BYTES: usize = 9;
    fn put(&self, out: &mut [u8]) {
        out[0] = u8::from(self.wanted) | (u8::from(self.tid.is_some()) << 1);
        put_i64s(&mut out[1..], &[self.tid.unwrap_or(0)]);
    }
    fn take(b: &[u8]) -> Self {
        FillEntry {
            wanted: b[0] & 1 != 0,
            tid: (b[0] & 2 != 0).then(|| i64::from_le_bytes(bytes_at(b, 1))),
        }
    }
}

/// The row id the import gives a row whose id an earlier row took (D110, D112), in a
/// paged map (D131).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct MovedId(Option<i64>);

impl Slot for MovedId {
    const BYTES: usize = 9;
    fn put(&self, out: &mut [u8]) {
        out[0] = u8::from(self.0.is_some());
        put_i64s(&mut out[1..], &[self.0.unwrap_or(0)]);
    }
    fn take(b: &[u8]) -> Self {
        MovedId((b[0] != 0).then(|| i64::from_le_bytes(bytes_at(b, 1))))
    }
}

/// Where a moved row lies while it is described, before event ids are known: its file
/// (or section) and its event's ordinal in it. Ordinals are dense within a file, so the
/// map's pages fill; `None` past 2^40 events in a file.
fn moved_key(file: usize, ordinal: i64) -> Option<i64> {
    let file = i64::try_from(file).ok().filter(|&f| f < 1 << 22)?;
    (0..1 << 40)
        .contains(&ordinal)
        .then_some(file << 40 | ordinal)
}

/// The id `moved` gives the row of event `event_id`, if it moved, through `pages`.
fn moved_id(
    moved: &PagedMap<MovedId>,
    pages: &mut PageCache<MovedId>,
    event_id: i64,
) -> Result<Option<i64>> {
    Ok(moved.lookup(event_id, pages)?.and_then(|m| m.0))
}

/// The (file, ordinal) of a [`moved_key`].
fn moved_place(key: i64) -> (usize, i64) {
    ((key >> 40) as usize, key & ((1 << 40) - 1))
}

/// Pages of dispatch checks (4.5 KiB each) a JSON object's describing pass keeps in
/// memory, for the dispatches counter records made and, at two threads, the kernel
/// records read beside: 1 MiB each, 114,688 dispatch ids (D101).
const CHECK_PAGES_IN_MEMORY: usize = 224;

/// Pages of PMC facts (32 KiB each) a PMC stream keeps in memory: 4 MiB, 65,536
/// dispatch ids (D101).
const FACT_PAGES_IN_MEMORY: usize = 128;

/// What the kernel record completing a dispatch a JSON counter record made must repeat:
/// [`made_check`], in a page of a [`PagedMap`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Check {
    check: u64,
    made: bool,
}

impl Check {
    fn of(check: u64) -> Self {
        Check { check, made: true }
    }
}

impl Slot for Check {
    const BYTES: usize = 9;
    fn put(&self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.check.to_le_bytes());
        out[8] = u8::from(self.made);
    }
    fn take(b: &[u8]) -> Self {
        Check {
            check: u64::from_le_bytes(bytes_at(b, 0)),
            made: b[8] != 0,
        }
    }
}

/// The most bytes of held-back JSON records [`json_import_error`] keeps in memory to
/// parse after its walk, as the import does; the rest wait in a temporary file (D126).
const MAX_HELD_BYTES: usize = 32 << 20;

/// The digits of a held record's length in its temporary file.
const HELD_LENGTH_DIGITS: u32 = 8;

/// Records the import's walk held back for tables after them: the first
/// [`MAX_HELD_BYTES`] in memory, the others appended to a temporary file, each as its
/// length in [`HELD_LENGTH_DIGITS`] hex digits, then its section, place and JSON text
/// joined by NULs (neither a section code nor a place has one). Sequence numbers count
/// from 1 in the order held: memory first, then the file.
#[derive(Default)]
struct Held {
    records: Vec<Deferred>,
    bytes: usize,
    spill: Option<TextSpill>,
    /// Records in the file.
    spilled: i64,
    /// The sequence number and file offset of the next record a sequential read of the
    /// file takes (the walk replays its records in order, twice).
    cursor: (i64, u64),
}

impl Held {
    fn add(&mut self, section: &str, place: &str, json: &str) -> Result<()> {
        // All the record costs, not its text alone: a held `0` has a longer place.
        let cost = std::mem::size_of::<Deferred>() + section.len() + place.len() + json.len();
        let bytes = self.bytes.saturating_add(cost);
        if self.spill.is_none() && bytes <= MAX_HELD_BYTES {
            self.bytes = bytes;
            let seq = i64::try_from(self.records.len()).unwrap_or(i64::MAX - 1) + 1;
            self.records.push(Deferred {
                seq,
                section: section.to_string(),
                place: place.to_string(),
                json: json.to_string(),
            });
            return Ok(());
        }
        let body = [section, place, json].join("\0");
        let len = u32::try_from(body.len())
            .map_err(|_| Error::Usage("internal: a held record of 4 GiB or more".into()))?;
        let spill = self.spill.get_or_insert_with(TextSpill::new);
        spill.append(&format!("{len:08x}"))?;
        spill.append(&body)?;
        self.spilled += 1;
        Ok(())
    }

    /// Up to `limit` records after sequence number `after`, in order.
    fn after(&mut self, after: i64, limit: usize) -> Result<Vec<Deferred>> {
        let kept = i64::try_from(self.records.len()).unwrap_or(i64::MAX);
        let mut out = Vec::new();
        let mut next = after.max(0).saturating_add(1);
        while out.len() < limit && next <= kept {
            // `next` is in 1..=kept.
            out.push(self.records[(next - 1) as usize].clone());
            next += 1;
        }
        let Some(spill) = &self.spill else {
            return Ok(out);
        };
        if out.len() == limit || next > kept + self.spilled {
            return Ok(out);
        }
        // Where record `next` lies: after the last one read, else found from the start.
        let mut at = if self.cursor.0 == next {
            self.cursor.1
        } else {
            let mut at = 0;
            for _ in kept + 1..next {
                at += Self::frame_len(spill, at)?;
            }
            at
        };
        while out.len() < limit && next <= kept + self.spilled {
            let len = Self::frame_len(spill, at)? - u64::from(HELD_LENGTH_DIGITS);
            let body_ref = TextRef {
                at: at + u64::from(HELD_LENGTH_DIGITS) + 1,
                len: u32::try_from(len).map_err(|_| Self::bad())?,
            };
            let body = spill.read(body_ref)?;
            let mut parts = body.splitn(3, '\0');
            let (Some(section), Some(place), Some(json)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(Self::bad());
            };
            out.push(Deferred {
                seq: next,
                section: section.to_string(),
                place: place.to_string(),
                json: json.to_string(),
            });
            at += u64::from(HELD_LENGTH_DIGITS) + len;
            next += 1;
        }
        self.cursor = (next, at);
        Ok(out)
    }

    /// The bytes of the file's record at offset `at`, its length digits included.
    fn frame_len(spill: &TextSpill, at: u64) -> Result<u64> {
        let digits = spill.read(TextRef {
            at: at + 1,
            len: HELD_LENGTH_DIGITS,
        })?;
        let len = u64::from_str_radix(&digits, 16).map_err(|_| Self::bad())?;
        Ok(u64::from(HELD_LENGTH_DIGITS) + len)
    }

    fn bad() -> Error {
        Error::Usage("internal: a held record's file is not as written".into())
    }
}

/// A taken id after the largest id: [`Describe::note_taken`] fails such a row first, as
/// the import does (D126), so this refusal is only a guard.
const NO_ID_LEFT: &str = "no id left for a row with a taken id";

/// The row id the import gives a row whose id an earlier row took (D110, D112): the next
/// id of its `AUTOINCREMENT` table, one past `max` (the largest so far, or 0), itself
/// taken from then on. The row is noted in `moved` by its `place` (file or section, event
/// ordinal in it). `Err` says why the run is left to the import instead.
fn move_taken(
    ids: &mut impl RowIds,
    max: i64,
    moved: &mut PagedMap<MovedId>,
    place: Option<(usize, i64)>,
) -> std::result::Result<i64, &'static str> {
    let Some((file, ordinal)) = place else {
        return Err("a row with a taken id outside any file");
    };
    let Some(next) = max.checked_add(1) else {
        return Err(NO_ID_LEFT);
    };
    let key =
        moved_key(file, ordinal).ok_or("more events in a file than the direct reader numbers")?;
    ids.take(next)?;
    match moved.entry(key) {
        Ok(Some(slot)) => *slot = MovedId(Some(next)),
        Ok(None) => return Err("rows with a taken id too scattered"),
        Err(_) => return Err("a temporary file failed"),
    }
    Ok(next)
}

/// The row ids a table has so far, for [`move_taken`].
trait RowIds {
    /// Adds `id`; `Err` says why the run is left to the import instead.
    fn take(&mut self, id: i64) -> std::result::Result<(), &'static str>;
}

impl RowIds for IdSet {
    fn take(&mut self, id: i64) -> std::result::Result<(), &'static str> {
        self.insert(id).map(|_| ()).ok_or("ids too scattered")
    }
}

impl RowIds for PagedIds {
    fn take(&mut self, id: i64) -> std::result::Result<(), &'static str> {
        insert_paged(self, id)?
            .map(|_| ())
            .ok_or("ids too scattered")
    }
}

/// [`PagedIds::insert`], a temporary file that fails being the refusal it is: the run
/// is left to the import, as for any failure not the input's.
fn insert_paged(ids: &mut PagedIds, id: i64) -> std::result::Result<Option<bool>, &'static str> {
    ids.insert(id).map_err(|_| "a temporary file failed")
}

/// Whether a category names a marker table row (SQLite's `LIKE 'MARKER\_%'`, which
/// ignores ASCII case).
fn is_marker(category: &str) -> bool {
    category
        .as_bytes()
        .get(..7)
        .is_some_and(|p| p.eq_ignore_ascii_case(b"MARKER_"))
}

/// The canonical tables whose streams read each kind's files (none for kinds with no
/// rows of a table). Counter files make dispatches the kernel trace lacks; the PMC stream
/// reads the kernel trace for the times and places of the dispatches its values belong
/// to.
fn tables_reading(kind: CsvKind) -> &'static [Table] {
    match kind {
        CsvKind::Api => &[Table::Region, Table::Marker],
        CsvKind::KernelTrace | CsvKind::CounterCollection => {
            &[Table::KernelDispatch, Table::PmcValue]
        }
        CsvKind::MemoryCopy => &[Table::MemoryCopy],
        CsvKind::MemoryAllocation | CsvKind::ScratchMemory => &[Table::MemoryAllocation],
        _ => &[],
    }
}

/// What the describing pass learned.
struct Description {
    /// Where a JSON object's large values lie in the file (see `json_import::scan_process`).
    json_spans: Vec<(u64, u64)>,
    counts: BTreeMap<Table, u64>,
    span: Option<(i64, i64)>,
    pid_spans: BTreeMap<i64, (i64, i64)>,
    processes: BTreeSet<i64>,
    threads: BTreeSet<(i64, i64)>,
    queues: BTreeSet<i64>,
    streams: BTreeSet<i64>,
    agents: Agents,
    /// Kernel symbols by id, with the pid they were written with (the first wins).
    symbols: BTreeMap<i64, (i64, KernelSymbolRow)>,
    /// The first event id of each file of the plan (import order).
    first_event: Vec<i64>,
    /// The region ids the import gives API rows whose correlation id an earlier row took,
    /// by event id (sealed once described; D131).
    moved_regions: PagedMap<MovedId>,
    /// The same of kernel rows whose dispatch id an earlier row took (D112).
    moved_dispatches: PagedMap<MovedId>,
    /// Flow groups of kernels and copies by correlation id (sealed once described).
    groups: PagedMap<Group>,
    /// The correlation ids of rows without a thread (copies, allocations, old dispatches),
    /// sorted, with the thread of the API call whose region id each is (the import's
    /// `fill_threads`).
    fills: PagedMap<FillEntry>,
    /// Input left out on purpose (stats, PC sampling), as the import reports it.
    ignored: Vec<String>,
    /// Lines skipped as bad (`skip_bad_rows`), and the reasons the import lists for them.
    skipped_rows: u64,
    skipped: Vec<String>,
    /// The counters by id, with the pid they were written with.
    pmcs: BTreeMap<i64, (i64, PmcRow)>,
    /// The dispatch ids of the kernel trace files (counter rows find them written).
    traced: IdSet,
    /// Threads counter rows give dispatches that had none, by dispatch id (the import's
    /// `set_dispatch_tid`), paged as the fill entries are (D101, D127).
    counter_tids: PagedMap<FillEntry>,
    /// The dispatches with timed counter values: the PMC stream keeps their facts.
    counted: IdSet,
    /// How many.
    counted_dispatches: usize,
    /// Counter values of events without time (no dispatch to place them at).
    untimed_pmc: u64,
    /// Dispatches (with time) counter rows made: none, and the dispatch stream need not
    /// read the counter files.
    made_by_counters: u64,
    /// Whether a JSON counter record joined a dispatch an earlier one made: only then
    /// does the PMC stream look up the facts of the dispatches counter records make.
    made_joined: bool,
    /// The JSON kernel record sections (bit `n`: the object's `n`th record section) that
    /// made no event: every record in them completed a dispatch a counter record made,
    /// so the dispatch stream need not read them.
    completing_sections: u64,
    /// The node (CSV: from the plan; JSON: from `metadata`).
    node: Option<NodeRow>,
    /// The pid of the run's rows.
    pid: i64,
    /// The node id of every row.
    nid: i64,
    /// Process details (JSON `metadata`) by pid.
    process_rows: BTreeMap<i64, ProcessRow>,
    /// Code objects (JSON) by id, with the pid they were written with (the first wins).
    code_objects: BTreeMap<i64, (i64, CodeObjectRow)>,
    /// Dispatches JSON counter records made that a later kernel record completes: the
    /// streams skip that kernel record, as its columns are the counter record's.
    completed: IdSet,
    /// The ids of the marker texts and of the region names (external correlation ids):
    /// the streams keep the texts by rank among them (D121).
    marker_text_ids: PagedIds,
    external_text_ids: PagedIds,
}

/// What the describing pass keeps of a dispatch a JSON counter record made (rocprofv3's
/// order makes one per counted dispatch, so it is 8 bytes): a hash of every column the
/// kernel record completing it may set, with the event's correlation ids. The kernel
/// record must hash the same: then the streams write the row when the counter record
/// makes it, as the import leaves it once the kernel record has overwritten it. The
/// chance that a kernel record that changes something hashes the same is 2^-64.
fn made_check(d: &DispatchRow, internal: Option<i64>, external: Option<i64>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    (d, internal, external).hash(&mut h);
    h.finish()
}

/// The describing pass's sink.
struct Describe {
    d: Description,
    /// The key of the category hashes (random, so that no file can make categories
    /// collide on purpose).
    category_key: std::collections::hash_map::RandomState,
    /// Hashes (keyed by `category_key`) of the events' distinct categories, up to one more
    /// than a PMC fact can index: 8 bytes each whatever the category's length.
    categories: FastSet<u64>,
    /// The stack id of the event just made (the next row's).
    stack: Option<i64>,
    /// The external correlation id of the event just made.
    external: Option<i64>,
    marker: bool,
    /// Region ids written: correlation ids, which every call rocprofv3 intercepts takes
    /// (traced or not), so they may spread far past the rows; paged (D140).
    region_ids: PagedIds,
    /// The largest region id written, or 0: the table is `AUTOINCREMENT`, whose next free
    /// id is one past the larger of its largest id and its sequence, which starts at 0.
    region_max: i64,
    /// API rows whose correlation id an earlier one took, by (file or section, event
    /// ordinal in it; [`moved_key`]), with the id the import gives them instead, paged
    /// (D131).
    moved_regions: PagedMap<MovedId>,
    /// The largest dispatch row id written, or 0, and the kernel rows moved as above.
    dispatch_max: i64,
    moved_dispatches: PagedMap<MovedId>,
    /// Dispatch ids written with time, from kernel traces and counter rows.
    dispatch_ids: IdSet,
    /// Of those, the ones without a thread yet.
    threadless: IdSet,
    /// Dispatch ids of counter rows without time.
    untimed: IdSet,
    /// The dispatch the counter row being read belongs to, and whether it has time.
    current: Option<(i64, bool)>,
    /// The plan index and kind of the file being read.
    file: Option<usize>,
    kind: Option<CsvKind>,
    /// Events of each file of the plan.
    file_events: Vec<i64>,
    /// The kind of each file (or JSON record section) read so far, by index.
    file_kinds: Vec<Option<CsvKind>>,
    /// Why the run must be imported instead, once known.
    refused: Option<&'static str>,
    /// Whether a read failed on an error of the input (not a refusal, not a temporary
    /// file): the import would report an error, which [`json_import_error`] looks for.
    input_failed: bool,
    /// Where a read met a JSON value past the cap of one value (D147), as (file, place):
    /// that error is the run's, with no read in the import's order, whose serde reads
    /// keep the cap only give or take one buffer.
    too_large: Option<(PathBuf, String)>,
    /// The records the import's walk held back for tables after them, kept by
    /// [`json_import_error`]'s read only.
    held: Option<Held>,
    /// Whether the import may stop at a row read so far for want of an id, where the
    /// describing pass cannot tell (an id whose page was not kept, or a JSON kernel record
    /// the import may take as completing a dispatch, when no larger id is left;
    /// [`Describe::note_taken`]): no input error found later is then known to be its first.
    import_fails_first: bool,
    /// Whether a JSON object is read.
    json: bool,
    /// The dispatches a JSON object's counter records made, by dispatch id: the
    /// [`made_check`] the kernel record that completes one must repeat.
    made: PagedMap<Check>,
    /// Whether this read has made an event (a JSON object's node and process must come
    /// first: the rows before them carry others).
    seen_event: bool,
    /// The record sections (by place) read after the others, as the import reads them
    /// when they come before the tables they need (D108): their events are numbered
    /// after every other section's.
    late: BTreeSet<usize>,
    /// Whether a counter record made an event (kernel records read later look for the
    /// dispatches it made).
    counter_events: bool,
    /// Told of the first dispatch a counter record makes, for a speculating describer
    /// on another thread (taken then).
    counters_seen: Option<Arc<CounterSignal>>,
    /// Set when this describer reads only the kernel records, beside another reading the
    /// rest (see [`Speculation`]).
    speculation: Option<Speculation>,
    /// How a JSON object's first read went ([`describe_kernels_beside`]).
    first_read: FirstRead,
}

/// The ways a JSON object's first describing read can go (D99).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FirstRead {
    /// One thread, every section in the file's order.
    InOrder,
    /// The kernel records on a second thread, taken in as they were read.
    Beside,
    /// The kernel records read again after the rest.
    KernelsAgain,
}

/// What the main describer of a JSON object tells the one reading its kernel records
/// beside it: whether a counter record has made a dispatch, and whether its read ended.
#[derive(Default)]
struct CounterSignal {
    /// (a counter record made a dispatch, the read ended)
    state: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl CounterSignal {
    fn set(&self, counted: bool) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if counted {
            state.0 = true;
        } else {
            state.1 = true;
        }
        self.changed.notify_all();
    }

    /// Waits until a counter record made a dispatch (`true`) or the read ended without
    /// one (`false`).
    fn wait(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while !state.0 && !state.1 {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.0
    }
}

/// Tells a [`CounterSignal`] that the read has ended when dropped, whatever way it ends.
struct Ended(Arc<CounterSignal>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// What a describer that reads a JSON object's kernel records beside the main describer
/// (which reads the counter records) keeps. It takes every kernel record as completing a
/// dispatch a counter record made, as rocprofv3's files with counter collection on
/// every dispatch have it, and keeps each record's [`made_check`] for the main
/// describer to compare; anything else makes the read be done again in order.
struct Speculation {
    /// The main describer's [`Describe::counters_seen`]. At its first kernel record this
    /// reader waits until the main one has made a dispatch from a counter record or has
    /// ended its read; in the second case there are no counter records to complete (most
    /// files) and this read stops at once.
    signal: Arc<CounterSignal>,
    /// What the signal said, once waited for.
    counted: Option<bool>,
    /// The check of every kernel record, by dispatch id.
    completions: PagedMap<Check>,
    /// Whether two kernel records named one dispatch.
    twice: bool,
    /// The agents and the number of kernel symbols when the first kernel section began:
    /// a kernel record that adds either would have added it to the main describer's too.
    before: Option<(Agents, usize)>,
}

impl Describe {
    fn refuse(&mut self, why: &'static str) {
        self.refused.get_or_insert(why);
    }

    /// Why the import, not this describer, must read the run, if it knows: the read
    /// refused, or the import may stop for want of an id where this read cannot tell.
    fn why_imported(&self) -> Option<&'static str> {
        self.refused
            .or_else(|| self.import_fails_first.then_some(MAY_RUN_OUT))
    }

    /// Checks a row id `inserted` into a table whose largest id so far is `max`: a taken
    /// id with no larger one left is the import's error at this row, however else the
    /// row is refused, and the readers place it in the input as the import's readers do
    /// (D123, D126). An id whose page was not kept (`None`) may be taken: the import
    /// may then stop there, so no input error found later is known to be its first (D115).
    fn note_taken(&mut self, inserted: Option<bool>, max: i64) -> Result<()> {
        if max != i64::MAX {
            return Ok(());
        }
        match inserted {
            Some(false) => Err(Error::Usage(crate::db::NO_ID_LEFT.into())),
            None => {
                self.import_fails_first = true;
                Ok(())
            }
            Some(true) => Ok(()),
        }
    }

    /// The check of the dispatch a JSON counter record made, if one did. A temporary
    /// file that fails leaves the object to the import.
    fn made(&mut self, dispatch_id: i64) -> Option<u64> {
        match self.made.get(dispatch_id) {
            Ok(found) => found.map(|c| c.check),
            Err(_) => {
                self.refuse("a temporary file failed");
                None
            }
        }
    }

    fn timed(&mut self, table: Table, pid: i64, start: i64, end: i64) {
        *self.d.counts.entry(table).or_insert(0) += 1;
        let span = |s: Option<(i64, i64)>| {
            Some(s.map_or((start, end), |(a, b)| (a.min(start), b.max(end))))
        };
        self.d.span = span(self.d.span);
        let p = self.d.pid_spans.get(&pid).copied();
        if let Some(s) = span(p) {
            self.d.pid_spans.insert(pid, s);
        }
    }

    /// A kernel or copy: counted in the flow group of its correlation id, and a fill
    /// entry when it has no thread.
    fn target(&mut self, start: i64, end: i64, threadless: bool) -> Result<()> {
        let Some(s) = self.stack else {
            return Ok(());
        };
        match self.d.groups.entry(s)? {
            Some(g) => {
                g.add(start, end);
                g.targets = g.targets.saturating_add(1);
            }
            None => self.refuse("correlation ids too scattered"),
        }
        if threadless {
            self.fill(s)?;
        }
        Ok(())
    }

    /// A row without a thread that takes its API call's: a fill entry for its id.
    fn fill(&mut self, s: i64) -> Result<()> {
        match self.d.fills.entry(s)? {
            Some(f) => f.wanted = true,
            None => self.refuse("correlation ids too scattered"),
        }
        Ok(())
    }

    fn queue_stream(&mut self, queue: Option<i64>, stream: Option<i64>) {
        self.d.queues.extend(queue);
        self.d.streams.extend(stream);
    }
}

impl RowSink for Describe {
    fn agents(&mut self) -> &mut Agents {
        &mut self.d.agents
    }
    fn set_node(&mut self, node: NodeRow) {
        // Rows before it would carry another node id; the same node again changes nothing.
        if self.json && self.seen_event && self.d.node.as_ref() != Some(&node) {
            self.refuse("metadata after records");
        }
        self.d.node = Some(node);
    }
    fn thread(&mut self, pid: i64, tid: Option<i64>) {
        self.d.pid = pid;
        self.d.processes.insert(pid);
        if let Some(t) = tid {
            self.d.threads.insert((pid, t));
        }
    }
    fn string(&mut self, _s: &str) -> Result<i64> {
        Ok(0)
    }
    fn event(&mut self, e: &EventRow<'_>) -> Result<i64> {
        self.seen_event = true;
        if self.categories.len() <= usize::from(u16::MAX) {
            let hash = std::hash::BuildHasher::hash_one(&self.category_key, e.category);
            self.categories.insert(hash);
        }
        if let Some(n) = self.file.and_then(|i| self.file_events.get_mut(i)) {
            *n += 1;
        }
        self.stack = e.stack_id;
        self.external = e.correlation_id;
        self.marker = is_marker(e.category);
        if self.kind == Some(CsvKind::CounterCollection) {
            self.counter_events = true;
        }
        if self.speculation.is_some() {
            self.refuse("a kernel record that does not complete a dispatch");
        }
        Ok(0)
    }
    fn region(
        &mut self,
        id: i64,
        pid: i64,
        tid: i64,
        start: i64,
        end: i64,
        _name_id: i64,
        _event_id: i64,
    ) -> Result<()> {
        self.thread(pid, Some(tid));
        // The import writes a row whose id is taken with the next id SQLite gives (D110):
        // the streams give it the same, found by its event.
        let mut written = id;
        let inserted = insert_paged(&mut self.region_ids, id).unwrap_or_else(|why| {
            self.refuse(why);
            None
        });
        self.note_taken(inserted, self.region_max)?;
        match inserted {
            Some(true) => {}
            Some(false) if self.refused.is_some() => {}
            Some(false) => {
                let place = self.place();
                let moved = &mut self.moved_regions;
                match move_taken(&mut self.region_ids, self.region_max, moved, place) {
                    Ok(next) => written = next,
                    Err(why) => self.refuse(why),
                }
            }
            None => self.refuse("correlation ids too scattered"),
        }
        self.region_max = self.region_max.max(written);
        let table = if self.marker {
            Table::Marker
        } else {
            Table::Region
        };
        self.timed(table, pid, start, end);
        if let Some(s) = self.stack {
            if let Some(g) = self.d.groups.get_mut(s)? {
                g.add(start, end);
                g.sources = g.sources.saturating_add(1);
            }
        }
        // The import fills a row without a thread from the region whose id is the row's
        // stack id, whatever the region's own: a moved row fills those of its new id.
        if let Some(f) = self.d.fills.get_mut(written)? {
            f.tid.get_or_insert(tid);
        }
        Ok(())
    }
    fn dispatch(&mut self, d: &DispatchRow, _event_id: i64) -> Result<()> {
        self.thread(d.pid, d.tid);
        self.queue_stream(Some(d.queue_id), Some(d.stream_id));
        let mut written = d.dispatch_id;
        let inserted = self.dispatch_ids.insert(d.dispatch_id);
        // A JSON kernel record once counter records made events (timed dispatches or
        // not): the import may complete the row its dispatch id names (an update, found
        // by review of D126) rather than insert one, so no id need be left for it; the
        // import decides.
        let may_complete =
            self.json && self.kind == Some(CsvKind::KernelTrace) && self.counter_events;
        if may_complete && inserted != Some(true) && self.dispatch_max == i64::MAX {
            self.import_fails_first = true;
        } else {
            self.note_taken(inserted, self.dispatch_max)?;
        }
        match inserted {
            Some(true) => {}
            Some(false) if self.refused.is_some() => {}
            // A kernel trace row, or a JSON kernel record: its dispatch id is looked up
            // only by counter rows or records, which a run with moved rows may not have
            // (checked once described), so the row id the import gives it is all that
            // changes (D112, D113).
            Some(false) if self.kind == Some(CsvKind::KernelTrace) => {
                let place = self.place();
                let moved = &mut self.moved_dispatches;
                match move_taken(&mut self.dispatch_ids, self.dispatch_max, moved, place) {
                    Ok(next) => written = next,
                    Err(why) => self.refuse(why),
                }
            }
            Some(false) => self.refuse("two kernel rows with one dispatch id"),
            None => self.refuse("dispatch ids too scattered"),
        }
        self.dispatch_max = self.dispatch_max.max(written);
        let from_trace = self.kind == Some(CsvKind::KernelTrace);
        if self.kind == Some(CsvKind::CounterCollection) {
            self.d.made_by_counters += 1;
            if let Some(signal) = self.counters_seen.take() {
                signal.set(true);
            }
            if self.json {
                let check = made_check(d, self.stack, self.external);
                match self.made.entry(d.dispatch_id)? {
                    Some(slot) => *slot = Check::of(check),
                    None => self.refuse("dispatch ids too scattered"),
                }
            }
        }
        // Counter rows find a dispatch by the row id the import gave it, which is its
        // dispatch id unless an earlier row took that (D117).
        if from_trace && self.d.traced.insert(written).is_none() {
            self.refuse("dispatch ids too scattered");
        }
        if d.tid.is_none() && self.threadless.insert(written).is_none() {
            self.refuse("dispatch ids too scattered");
        }
        self.current = Some((written, true));
        self.timed(Table::KernelDispatch, d.pid, d.start, d.end);
        self.target(d.start, d.end, d.tid.is_none())
    }
    fn copy(&mut self, c: &CopyRow, _event_id: i64) -> Result<()> {
        self.thread(c.pid, c.tid);
        self.queue_stream(c.queue_id, c.stream_id);
        self.timed(Table::MemoryCopy, c.pid, c.start, c.end);
        self.target(c.start, c.end, c.tid.is_none())
    }
    fn alloc(&mut self, a: &AllocRow, _event_id: i64) -> Result<()> {
        self.thread(a.pid, a.tid);
        self.queue_stream(a.queue_id, a.stream_id);
        self.timed(Table::MemoryAllocation, a.pid, a.start, a.end);
        if let (None, Some(s)) = (a.tid, self.stack) {
            self.fill(s)?;
        }
        Ok(())
    }
    fn kernel_symbol(&mut self, pid: i64, k: &KernelSymbolRow) -> Result<()> {
        // The first row of an id stays, but a table's row replaces one made up for a
        // record before it, as in the import.
        let keep = self
            .d
            .symbols
            .get(&k.id)
            .is_some_and(|(_, old)| !old.is_synthesized() || k.is_synthesized());
        if !keep {
            self.d.symbols.insert(k.id, (pid, k.clone()));
        }
        Ok(())
    }
    fn has_kernel(&self, id: i64) -> bool {
        self.d.symbols.contains_key(&id)
    }
    fn pmc(&mut self, pid: i64, p: &PmcRow) -> Result<()> {
        self.d.pmcs.entry(p.id).or_insert_with(|| (pid, p.clone()));
        Ok(())
    }
    fn pmc_event(&mut self, _event_id: i64, _pmc_id: i64, _value: f64) -> Result<()> {
        match self.current {
            Some((dispatch, true)) => {
                *self.d.counts.entry(Table::PmcValue).or_insert(0) += 1;
                // The set holds at most `MAX_COUNTED` ids, so the facts' bound holds too.
                match self.d.counted.insert(dispatch) {
                    Some(true) => self.d.counted_dispatches += 1,
                    Some(false) => {}
                    None => self.refuse("dispatch ids too scattered"),
                }
            }
            _ => self.d.untimed_pmc += 1,
        }
        Ok(())
    }
    fn find_dispatch(&mut self, dispatch_id: i64) -> Result<Option<FoundDispatch>> {
        if let Some(sp) = self.speculation.as_mut() {
            if !*sp.counted.get_or_insert_with(|| sp.signal.wait()) {
                // Stops the read; the caller reads the kernel records again in order and
                // never shows this.
                return Err(Error::Usage("no counter records to complete".into()));
            }
            return Ok(Some(FoundDispatch {
                event_id: Some(0),
                stack_id: None,
                tid: Some(0),
            }));
        }
        if self.made(dispatch_id).is_some() {
            if self.kind == Some(CsvKind::CounterCollection) {
                self.d.made_joined = true;
            }
            // A second counter record of the dispatch joins it; a kernel record completes
            // it ([`RowSink::completes`]).
            self.current = Some((dispatch_id, true));
            return Ok(Some(FoundDispatch {
                event_id: Some(0),
                stack_id: None,
                tid: None,
            }));
        }
        if !self.dispatch_ids.contains(dispatch_id) {
            return Ok(None);
        }
        self.current = Some((dispatch_id, true));
        // The caller only asks whether the dispatch has a thread yet.
        let tid = (!self.threadless.contains(dispatch_id)).then_some(0);
        Ok(Some(FoundDispatch {
            event_id: Some(0),
            stack_id: None,
            tid,
        }))
    }
    fn set_dispatch_tid(&mut self, dispatch_id: i64, pid: i64, tid: i64) -> Result<()> {
        self.thread(pid, Some(tid));
        if self.threadless.contains(dispatch_id) {
            match self.d.counter_tids.entry(dispatch_id)? {
                Some(e) => e.tid = Some(tid),
                None => self.refuse("dispatch ids too scattered"),
            }
            self.threadless.remove(dispatch_id);
        }
        Ok(())
    }
    fn untimed_event(&mut self, dispatch_id: i64) -> Result<Option<i64>> {
        if !self.untimed.contains(dispatch_id) {
            return Ok(None);
        }
        self.current = Some((dispatch_id, false));
        Ok(Some(0))
    }
    fn remember_untimed(&mut self, dispatch_id: i64, _event_id: i64) -> Result<()> {
        if self.untimed.insert(dispatch_id).is_none() {
            self.refuse("dispatch ids too scattered");
        }
        self.current = Some((dispatch_id, false));
        Ok(())
    }
    fn begin_file(&mut self, index: Option<usize>, kind: CsvKind) -> Result<()> {
        (self.file, self.kind) = (index, Some(kind));
        self.current = None;
        // A JSON object's sections are counted as they come.
        if let Some(i) = index {
            self.note_section(i, kind);
        }
        if let Some(sp) = self.speculation.as_mut() {
            sp.before
                .get_or_insert_with(|| (self.d.agents.clone(), self.d.symbols.len()));
        }
        Ok(())
    }
    fn set_process(&mut self, pid: i64, row: ProcessRow) {
        // The same process again changes nothing; another pid than the rows' so far (even
        // one seen before) would give the rows after it another process.
        let changed = self.d.process_rows.get(&pid) != Some(&row) || pid != self.d.pid;
        if self.json && self.seen_event && changed {
            self.refuse("metadata after records");
        }
        self.d.processes.insert(pid);
        self.d.process_rows.insert(pid, row);
    }
    fn code_object(&mut self, pid: i64, c: &CodeObjectRow) -> Result<()> {
        self.d
            .code_objects
            .entry(c.id)
            .or_insert_with(|| (pid, c.clone()));
        Ok(())
    }
    fn completes(&mut self, dispatch_id: i64, _: &FoundDispatch, _: Option<i64>) -> bool {
        if self.speculation.is_some() {
            return true;
        }
        // Any kernel record of such a dispatch: one the import would not let complete it
        // (another correlation id) fails the check below, and the object is imported.
        self.made(dispatch_id).is_some()
    }
    fn update_dispatch(
        &mut self,
        d: &DispatchRow,
        internal: Option<i64>,
        external: Option<i64>,
    ) -> Result<()> {
        let check = made_check(d, internal, external);
        match self.speculation.as_mut() {
            Some(sp) => match sp.completions.entry(d.dispatch_id)? {
                Some(slot) => {
                    sp.twice |= slot.made;
                    *slot = Check::of(check);
                }
                None => self.refuse("dispatch ids too scattered"),
            },
            None => self.complete(d.dispatch_id, check),
        }
        Ok(())
    }
    fn has_pmc(&self, id: i64) -> bool {
        self.d.pmcs.contains_key(&id)
    }
    fn put_text(&mut self, which: Texts, id: i64, _text: &str) -> Result<()> {
        let ids = match which {
            Texts::Marker => &mut self.d.marker_text_ids,
            Texts::External => &mut self.d.external_text_ids,
        };
        match insert_paged(ids, id) {
            Ok(Some(_)) => {}
            Ok(None) => self.refuse("text ids too scattered"),
            Err(why) => self.refuse(why),
        }
        // Any number of distinct texts: the streams keep those past their memory in a
        // file (D125).
        Ok(())
    }
    fn text(&mut self, _which: Texts, _id: i64) -> Result<Option<String>> {
        Ok(None)
    }
    fn defer(&mut self, section: &str, place: &str, json: &str) -> Result<()> {
        // The scanning walk reads what comes before the tables it needs in a later walk
        // (D108) and never defers; the import's walk does, in [`json_import_error`],
        // which keeps them to parse after the walk as the import does.
        self.refuse("records before the tables they need");
        match &mut self.held {
            Some(held) => held.add(section, place, json),
            None => Ok(()),
        }
    }
    fn late_sections(&mut self, ordinals: &[usize]) {
        self.late.extend(ordinals);
    }
    fn deferred(&mut self, after: i64, limit: usize) -> Result<Vec<Deferred>> {
        match &mut self.held {
            Some(held) => held.after(after, limit),
            None => Ok(Vec::new()),
        }
    }
}

impl Describe {
    /// A kernel record completes the dispatch `dispatch_id` a counter record made; its
    /// columns give `check` ([`made_check`]).
    fn complete(&mut self, dispatch_id: i64, check: u64) {
        // The import's row keeps the counter record's event and takes the kernel
        // record's columns; the description and the streams took the counter record's.
        let Some(made) = self.made(dispatch_id) else {
            self.refuse("a kernel record completing an unknown dispatch");
            return;
        };
        // Equal, its thread, queue and stream are the counter record's, described then.
        if check != made {
            self.refuse("a kernel record that moves the dispatch its counter record made");
        }
        match self.d.completed.insert(dispatch_id) {
            Some(true) => {}
            // The import updates its row again; the streams write it once, when first
            // completed.
            Some(false) => self.refuse("a dispatch completed by two kernel records"),
            None => self.refuse("dispatch ids too scattered"),
        }
    }

    /// Notes that file (or JSON record section) `index` is of `kind`.
    fn note_section(&mut self, index: usize, kind: CsvKind) {
        if index >= self.file_events.len() {
            self.file_events.resize(index + 1, 0);
        }
        if index >= self.file_kinds.len() {
            self.file_kinds.resize(index + 1, None);
        }
        self.file_kinds[index] = Some(kind);
    }

    /// A describer of a JSON process object in the file at `path`, whose sections add to
    /// the counts as they come.
    fn for_json(path: &Path) -> Self {
        let mut d = Describe::new(0);
        d.json = true;
        d.allow_input_bytes(file_bytes(path));
        d
    }

    /// The size of the input described: the maps by correlation id may take pages of
    /// ids too scattered for their records-per-page rule while their files stay within
    /// twice that together, 1.5 times for the flow groups (20 KiB a page) and half for
    /// the fill entries (4.5 KiB). The import such a run went to writes a database of
    /// 1.2 to 1.5 times the input, and SQLite's sort files beside it (D120).
    fn allow_input_bytes(&mut self, bytes: u64) {
        self.d
            .groups
            .allow_input_bytes(bytes.saturating_add(bytes / 2));
        self.d.fills.allow_input_bytes(bytes / 2);
        self.d.counter_tids.allow_input_bytes(bytes / 2);
        self.moved_regions.allow_input_bytes(bytes / 2);
        // As many pages as the sets in memory took before (D140), or half the input.
        let ids = (bytes / 2).max(ID_FILE_BYTES);
        self.region_ids.allow_input_bytes(ids);
        self.d.marker_text_ids.allow_input_bytes(ids);
        self.d.external_text_ids.allow_input_bytes(ids);
        self.moved_dispatches.allow_input_bytes(bytes / 2);
    }

    /// A describer of the CSV run `plan`, allowed the bytes of the files the import reads
    /// (not those of PC sampling or statistics).
    fn for_csv(plan: &CsvPlan) -> Self {
        let mut d = Describe::new(plan.files.len());
        let imported = plan.files.iter().filter(|(_, kind)| kind.is_imported());
        let bytes = imported.map(|(f, _)| file_bytes(f));
        d.allow_input_bytes(bytes.fold(0, u64::saturating_add));
        d
    }

    /// The file (or section) being read and the ordinal of its last event in it.
    fn place(&self) -> Option<(usize, i64)> {
        let file = self.file?;
        Some((file, *self.file_events.get(file)?))
    }

    /// Whether a read into this describer leaves the run to the import: it failed or
    /// refused something. Bad rows skipped do not: the streams skip the same (D109, D111).
    /// Notes whether the read failed on the input ([`Describe::input_failed`]).
    fn failed(&mut self, read: &Result<()>) -> bool {
        self.input_failed |= matches!(read, Err(Error::Input { .. }));
        if let Err(Error::Input {
            file,
            place,
            message,
        }) = read
        {
            if message == crate::json_scan::TOO_LARGE && self.too_large.is_none() {
                self.too_large = Some((file.clone(), place.clone()));
            }
        }
        read.is_err() || self.refused.is_some()
    }

    /// A describer of `files` files (or sections, which add to the count as they come).
    fn new(files: usize) -> Self {
        Describe {
            category_key: Default::default(),
            categories: FastSet::default(),
            d: Description {
                json_spans: Vec::new(),
                counts: BTreeMap::new(),
                span: None,
                pid_spans: BTreeMap::new(),
                processes: BTreeSet::new(),
                threads: BTreeSet::new(),
                queues: BTreeSet::new(),
                streams: BTreeSet::new(),
                agents: Agents::default(),
                symbols: BTreeMap::new(),
                first_event: Vec::new(),
                moved_regions: PagedMap::for_dense_ids(
                    page_limits(FILL_PAGES_IN_MEMORY),
                    "moved region ids",
                ),
                moved_dispatches: PagedMap::for_dense_ids(
                    page_limits(FILL_PAGES_IN_MEMORY),
                    "moved dispatch ids",
                ),
                groups: PagedMap::new(page_limits(GROUP_PAGES_IN_MEMORY), "flow groups"),
                fills: PagedMap::new(page_limits(FILL_PAGES_IN_MEMORY), "fill entries"),
                ignored: Vec::new(),
                skipped_rows: 0,
                skipped: Vec::new(),
                pmcs: BTreeMap::new(),
                traced: IdSet::default(),
                counter_tids: PagedMap::new(
                    page_limits(FILL_PAGES_IN_MEMORY),
                    "threads given by counter rows",
                ),
                counted: IdSet::default(),
                counted_dispatches: 0,
                untimed_pmc: 0,
                made_by_counters: 0,
                completing_sections: 0,
                made_joined: false,
                node: None,
                pid: 0,
                nid: 0,
                process_rows: BTreeMap::new(),
                code_objects: BTreeMap::new(),
                completed: IdSet::default(),
                marker_text_ids: PagedIds::new(page_limits(ID_PAGES_IN_MEMORY), "marker text ids"),
                external_text_ids: PagedIds::new(
                    page_limits(ID_PAGES_IN_MEMORY),
                    "region name ids",
                ),
            },
            stack: None,
            external: None,
            marker: false,
            region_ids: PagedIds::new(page_limits(ID_PAGES_IN_MEMORY), "region ids"),
            region_max: 0,
            moved_regions: PagedMap::new(page_limits(FILL_PAGES_IN_MEMORY), "moved rows"),
            dispatch_max: 0,
            moved_dispatches: PagedMap::new(page_limits(FILL_PAGES_IN_MEMORY), "moved rows"),
            dispatch_ids: IdSet::default(),
            threadless: IdSet::default(),
            untimed: IdSet::default(),
            current: None,
            file: None,
            kind: None,
            file_events: vec![0; files],
            file_kinds: vec![None; files],
            refused: None,
            input_failed: false,
            too_large: None,
            import_fails_first: false,
            held: None,
            json: false,
            made: PagedMap::new(
                page_limits(CHECK_PAGES_IN_MEMORY),
                "counter-made dispatches",
            ),
            seen_event: false,
            late: BTreeSet::new(),
            counter_events: false,
            counters_seen: None,
            speculation: None,
            first_read: FirstRead::InOrder,
        }
    }

    /// A describer of the counter files, run beside this one's read of the API files: it
    /// takes the dispatches read so far (the API files' rows need them not) and a copy
    /// of the agents, and knows nothing else.
    fn for_counters(&mut self, plan: &CsvPlan) -> Self {
        let mut c = Describe::for_csv(plan);
        c.d.agents = self.d.agents.clone();
        c.dispatch_ids = std::mem::take(&mut self.dispatch_ids);
        c.threadless = std::mem::take(&mut self.threadless);
        c
    }

    /// Takes in what a counter describer learned; `false` (taking nothing) when its rows
    /// made dispatches, which the API files' read must have seen (their flow groups and
    /// threads).
    fn absorb_counters(&mut self, c: Describe) -> bool {
        let made = c.d.made_by_counters > 0
            || !c.d.groups.is_empty()
            || !c.d.fills.is_empty()
            || !c.d.symbols.is_empty()
            || c.d.span.is_some();
        if made {
            return false;
        }
        for (table, n) in c.d.counts {
            *self.d.counts.entry(table).or_insert(0) += n;
        }
        self.d.processes.extend(c.d.processes);
        self.d.threads.extend(c.d.threads);
        self.d.agents = c.d.agents;
        self.d.pmcs = c.d.pmcs;
        self.d.counter_tids = c.d.counter_tids;
        self.d.counted = c.d.counted;
        self.d.counted_dispatches += c.d.counted_dispatches;
        self.d.untimed_pmc += c.d.untimed_pmc;
        for (mine, theirs) in self.file_events.iter_mut().zip(c.file_events) {
            *mine += theirs;
        }
        if let Some(why) = c.refused {
            self.refuse(why);
        }
        true
    }
}

/// The size of the file at `path` (0 when it cannot be read: the maps by id then keep
/// to their records-per-page rule alone).
fn file_bytes(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// What a describing pass gives: the description and the run's report, or why the run is
/// imported instead.
type Described = std::result::Result<(Describe, ImportReport), &'static str>;

/// Why a run whose describing read failed, not on its input and not by a refusal (a
/// temporary file), is imported.
const NOT_THE_INPUT: &str = "a describing read failed on something other than the input";

/// Why a run is imported whose describing read met an error its read in the import's
/// order does not (the import then reports what it meets).
const NOT_IN_ORDER: &str = "an error the describing read met and the import's order did not";

/// Why a run is imported when the import may run out of ids where the direct reader
/// cannot tell (D126).
const MAY_RUN_OUT: &str = "the import may run out of ids where the direct reader cannot tell";

/// The describing pass over `plan` (see the module documentation); `Err(why)` when the
/// run must be imported. With `threads` of two or more, the counter files are read beside
/// the API files, unless their rows make dispatches (then the run is described again,
/// in order).
fn describe_run(plan: &CsvPlan, opts: &ImportOptions, threads: usize) -> Result<Described> {
    // API files last: the groups of their calls exist by then. No kind's rows depend on
    // the API files' (the import reads them second only by convention). The others keep
    // the import's order, in one read as the import does: counter rows find the kernel
    // trace's dispatches and kernel names.
    let (apis, targets): (Vec<_>, Vec<_>) = plan
        .files
        .iter()
        .cloned()
        .partition(|(_, k)| *k == CsvKind::Api);
    let (counters, others): (Vec<_>, Vec<_>) = targets
        .iter()
        .cloned()
        .partition(|(_, k)| *k == CsvKind::CounterCollection);
    // Without a kernel trace, counter rows make every dispatch: the API files' read must
    // see them, so the run is read in order at once.
    let traced = others.iter().any(|(_, k)| *k == CsvKind::KernelTrace);
    // Each file has its own report, merged in the plan's order at the end: skipped lines
    // are listed as the import lists them, whatever order the files were read in.
    if threads >= 2 && traced && !counters.is_empty() && !apis.is_empty() {
        let mut describe = Describe::for_csv(plan);
        let mut reports = BTreeMap::new();
        let read = csv_import::read_files(plan, &others, &mut describe, opts, &mut reports);
        if describe.failed(&read) {
            return csv_import_error(plan, opts, [read], describe.refused);
        }
        let mut side = describe.for_counters(plan);
        let mut side_reports = BTreeMap::new();
        let (side_read, api_read) = std::thread::scope(|scope| {
            let helper = scope.spawn(|| {
                csv_import::read_files(plan, &counters, &mut side, opts, &mut side_reports)
            });
            let api = csv_import::read_files(plan, &apis, &mut describe, opts, &mut reports);
            let side = helper
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (side, api)
        });
        if side.failed(&side_read) || api_read.is_err() {
            let why = side.refused.or(describe.refused);
            return csv_import_error(plan, opts, [side_read, api_read], why);
        }
        if describe.absorb_counters(side) {
            reports.extend(side_reports);
            if describe.failed(&api_read) {
                return Ok(Err(describe.refused.unwrap_or(NOT_THE_INPUT)));
            }
            return Ok(Ok((describe, crate::merged_reports(reports))));
        }
    }
    let mut describe = Describe::for_csv(plan);
    let mut reports = BTreeMap::new();
    for files in [targets, apis] {
        let read = csv_import::read_files(plan, &files, &mut describe, opts, &mut reports);
        if describe.failed(&read) {
            return csv_import_error(plan, opts, [read], describe.refused);
        }
    }
    Ok(Ok((describe, crate::merged_reports(reports))))
}

/// After a describing read of a CSV run failed with `reads` (one or two reads' results):
/// the error the import reports, if one of them is an error of the run's input (D115).
///
/// The describing reads take the files in another order than the import (the API files
/// last, the counter files beside them), so the first error they meet may not be the
/// import's. Reading the files again in the import's order, through a describer, stops at
/// the import's: the same row parsers on the same files in the same order, and the
/// describer answers their lookups (dispatches, kernels, counters) as the database does.
/// `Ok(Err(why))` (the run is imported, which reports what it finds) when no read failed
/// on the input (a refusal, `refused`, or a temporary file) or the ordered read finds no
/// input error.
fn csv_import_error<const N: usize>(
    plan: &CsvPlan,
    opts: &ImportOptions,
    reads: [Result<()>; N],
    refused: Option<&'static str>,
) -> Result<Described> {
    let why = refused.unwrap_or(NOT_THE_INPUT);
    let input_error = |r: &Result<()>| match r {
        Err(Error::Input { file, .. }) => plan.files.iter().any(|(p, _)| p == file),
        _ => false,
    };
    if !reads.iter().any(input_error) {
        return Ok(Err(why));
    }
    let mut ordered = Describe::for_csv(plan);
    let mut report = ImportReport::default();
    let read = csv_import::read_files(plan, &plan.files, &mut ordered, opts, &mut report);
    if input_error(&read) && !ordered.import_fails_first {
        read?;
    }
    // The ordered read's own refusals (it has no allowance for scattered ids) are not
    // the run's.
    let found = ordered.import_fails_first.then_some(MAY_RUN_OUT);
    Ok(Err(refused.or(found).unwrap_or(NOT_IN_ORDER)))
}

/// The kinds of JSON record sections the describing pass reads first: all but the API
/// calls, which need the flow groups of the others.
const JSON_TARGETS: &[CsvKind] = &[
    CsvKind::KernelTrace,
    CsvKind::MemoryCopy,
    CsvKind::MemoryAllocation,
    CsvKind::ScratchMemory,
    CsvKind::CounterCollection,
    CsvKind::Stats,
];

/// An empty report that keeps skip reasons by place: the reads take a JSON object's
/// sections in another order than the import, and the reasons are put in its order at the
/// end (D111).
fn keyed_report() -> ImportReport {
    ImportReport {
        ordered: Some(Default::default()),
        ..Default::default()
    }
}

/// What the describing pass's last read takes: the API calls alone.
const API_READ: Wanted = Wanted {
    records: Some(Kinds::of(&[CsvKind::Api])),
    catalog: false,
    marker_texts: false,
    external_texts: false,
    ..Wanted::ALL
};

/// The describing pass's read of the API calls of process object `index`, made ahead into
/// a recording (D139): `None` when the recording cannot stand for the read (it failed,
/// skipped or ignored anything, or made a call the recorder does not keep), and the
/// caller reads them itself.
fn record_api_calls(
    path: &Path,
    index: usize,
    places: &[(u64, u64)],
    opts: &ImportOptions,
) -> Option<crate::recorded::Recording> {
    let mut recorder = crate::recorded::Recorder::new()?;
    let mut report = keyed_report();
    let read = json_import::scan_process(
        path,
        index,
        &API_READ,
        false,
        Spans::Jump(places),
        &mut recorder,
        opts,
        &mut report,
    );
    // The read in place adds nothing to the report either.
    (read.is_ok() && report == keyed_report()).then_some(())?;
    recorder.finish()
}

/// The describing pass over process object `index` of a rocprofv3 JSON file, in two
/// reads: every section but the API calls, then the API calls (the flow groups exist by
/// then). With `threads` of two or more, the first read's kernel records are read on a
/// second thread beside the rest ([`Speculation`]). The first read jumps over the
/// values the pre-scan noted in `known` that it does not parse or check, such as the API
/// calls' sections (D136), and checks the rest of the file unless the first object's
/// read has (D137). `Err(why)` when the object must be imported.
fn describe_json(
    path: &Path,
    index: usize,
    known: &crate::JsonPlaces,
    opts: &ImportOptions,
    threads: usize,
) -> Result<Described> {
    let places = known.spans_in(path);
    // The first object's read checks the whole file; a later object's, unless the first
    // has (D137).
    let check_rest = index == 0 || !known.checked(path);
    let described = describe_json_with(path, index, places, check_rest, opts, threads)?;
    if index == 0 && described.is_ok() {
        known.set_checked(path);
    }
    Ok(described)
}

/// [`describe_json`] with the places to jump over and whether the first read checks the
/// rest of the file.
fn describe_json_with(
    path: &Path,
    index: usize,
    places: &[(u64, u64)],
    check_rest: bool,
    opts: &ImportOptions,
    threads: usize,
) -> Result<Described> {
    let mut describe = Describe::for_json(path);
    let mut report = keyed_report();
    let mut spans = Vec::new();
    let first = Wanted {
        records: Some(Kinds::of(JSON_TARGETS)),
        // The API calls are checked by the last read, which parses them all.
        parsed_later: &[CsvKind::Api],
        ..Wanted::ALL
    };
    // Between them the reads check the whole file (any error leaves the object to the
    // import, which reports it with its place): the first every value it skips but the
    // sections a later read parses.
    let mut in_order = threads < 2;
    // The API calls' read, made ahead on the helper thread (D139).
    let mut recorded = None;
    if !in_order {
        let side_by_side = describe_kernels_beside(
            path,
            index,
            (places, check_rest),
            opts,
            &mut describe,
            &mut spans,
            &mut recorded,
        );
        match side_by_side {
            Beside::Failed => return json_import_error(path, index, opts, &describe),
            Beside::Done(r) => {
                report = r;
                report.ordered = Some(Default::default());
            }
            Beside::InOrder => {
                (describe, report, spans) = (Describe::for_json(path), keyed_report(), Vec::new());
                in_order = true;
            }
        }
    }
    // The first read in order if it was not done beside, then the API calls once the
    // groups are merged.
    let reads = [(in_order.then_some(first), true), (Some(API_READ), false)];
    for (wanted, strict) in reads {
        let Some(wanted) = wanted else { continue };
        if !strict {
            describe.seen_event = false;
            if let Some(recording) = recorded.take() {
                let read = recording.replay(path, &mut describe);
                if describe.failed(&read) {
                    return json_import_error(path, index, opts, &describe);
                }
                continue;
            }
        }
        // The first read notes where the large values lie; the API calls' read jumps over
        // those it skips.
        let places = if strict {
            Spans::Note(&mut spans, places, check_rest)
        } else {
            Spans::Jump(&spans)
        };
        let read = json_import::scan_process(
            path,
            index,
            &wanted,
            strict,
            places,
            &mut describe,
            opts,
            &mut report,
        );
        if describe.failed(&read) {
            return json_import_error(path, index, opts, &describe);
        }
    }
    describe.d.json_spans = spans;
    if let Some(ordered) = report.ordered.take() {
        ordered.into_report(&mut report);
    }
    Ok(Ok((describe, report)))
}

/// How [`describe_kernels_beside`] ended.
enum Beside {
    /// The object must be imported.
    Failed,
    /// `describe` holds what the first read in order would have given.
    Done(ImportReport),
    /// Nothing is known: read in order.
    InOrder,
}

/// After a describing read of a JSON object failed (into `failed`): the error the import
/// reports, if the object has one (D116).
///
/// The describing reads use the byte scanner, the import serde's reader, and they word a
/// broken document differently; the reads also take the sections in another order. So
/// the object is read once more the way the import reads it (`json_import::read_process`,
/// the import's own walk, in document order), through a describer instead of the
/// database: its first error is the import's, word for word. Records the walk holds
/// back for a table after them are parsed once the whole document has been walked, from
/// the import's database, here from [`Held`]. When the failure was not the input's (a
/// refusal, a temporary file), the object is left to the import (`Ok(Err(why))`). An error
/// the walk itself meets comes before theirs either way.
fn json_import_error(
    path: &Path,
    index: usize,
    opts: &ImportOptions,
    failed: &Describe,
) -> Result<Described> {
    if let Some((file, place)) = &failed.too_large {
        return Err(Error::input(
            file,
            place.clone(),
            crate::json_scan::TOO_LARGE,
        ));
    }
    if !failed.input_failed {
        return Ok(Err(failed.why_imported().unwrap_or(NOT_THE_INPUT)));
    }
    let why = failed.why_imported().unwrap_or(NOT_IN_ORDER);
    let mut ordered = Describe::for_json(path);
    ordered.held = Some(Held::default());
    let mut report = ImportReport::default();
    let read =
        json_import::read_process(path, index, &Wanted::ALL, &mut ordered, opts, &mut report);
    match read {
        Err(e @ Error::Input { .. }) if !ordered.import_fails_first => Err(e),
        // This walk holds records back, which refuses: only its want of ids tells more.
        _ if ordered.import_fails_first && failed.refused.is_none() => Ok(Err(MAY_RUN_OUT)),
        _ => Ok(Err(why)),
    }
}

/// The first describing read of a JSON object on two threads: `describe` reads every
/// section but the API calls and the kernel records (strictly, noting `spans`), while a
/// speculating describer reads the kernel records. When every kernel record completed
/// a dispatch a counter record made, with the same columns, in a kernel section after
/// every counter section, and added no agent or kernel symbol, what the speculation kept
/// is taken in and the result is the read in order's. When the kernel records are
/// something else (no counter records: the speculation stops at its first record), they
/// are read again into `describe`, after the rest, which gives the same unless a kernel
/// section comes before a counter section: then the whole read is done in order. Both
/// jump over the values at `places` they do not read.
fn describe_kernels_beside(
    path: &Path,
    index: usize,
    (places, check_rest): (&[(u64, u64)], bool),
    opts: &ImportOptions,
    describe: &mut Describe,
    spans: &mut Vec<(u64, u64)>,
    recorded: &mut Option<crate::recorded::Recording>,
) -> Beside {
    const KERNELS: &[CsvKind] = &[CsvKind::KernelTrace];
    // [`JSON_TARGETS`] but the kernel records.
    const REST: &[CsvKind] = &[
        CsvKind::MemoryCopy,
        CsvKind::MemoryAllocation,
        CsvKind::ScratchMemory,
        CsvKind::CounterCollection,
        CsvKind::Stats,
    ];
    let main = Wanted {
        records: Some(Kinds::of(REST)),
        parsed_later: &[CsvKind::Api, CsvKind::KernelTrace],
        ..Wanted::ALL
    };
    let kernels = Wanted {
        records: Some(Kinds::of(KERNELS)),
        marker_texts: false,
        external_texts: false,
        counters_made: true,
        ..Wanted::ALL
    };
    let signal = Arc::new(CounterSignal::default());
    describe.counters_seen = Some(Arc::clone(&signal));
    let mut side = Describe::for_json(path);
    side.speculation = Some(Speculation {
        signal: Arc::clone(&signal),
        counted: None,
        completions: PagedMap::new(page_limits(CHECK_PAGES_IN_MEMORY), "kernel records"),
        twice: false,
        before: None,
    });
    let mut report = ImportReport::default();
    let mut side_report = ImportReport::default();
    let (read, side_read) = std::thread::scope(|scope| {
        let helper = scope.spawn(|| {
            let (side, report) = (&mut side, &mut side_report);
            // First the API calls, which the main thread would read alone after the rest
            // (D139): ahead of the kernel records, because without counter records those
            // wait for the main thread's read to end.
            let apis = record_api_calls(path, index, places, opts);
            let read = json_import::scan_process(
                path,
                index,
                &kernels,
                false,
                Spans::Jump(places),
                side,
                opts,
                report,
            );
            (read, crate::json_scan::jumps_here(), apis)
        });
        let ended = Ended(signal);
        let places = Spans::Note(spans, places, check_rest);
        let read = json_import::scan_process(
            path,
            index,
            &main,
            true,
            places,
            describe,
            opts,
            &mut report,
        );
        drop(ended);
        let (side, jumps, apis) = helper
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        crate::json_scan::add_jumps(jumps);
        *recorded = apis;
        (read, side)
    });
    describe.counters_seen = None;
    if describe.failed(&read) {
        return Beside::Failed;
    }
    if report.skipped_rows > 0 || side_report.skipped_rows > 0 {
        // Bad records skipped: reads in order list them as the import does (D111).
        return Beside::InOrder;
    }
    if !describe.late.is_empty() || !side.late.is_empty() {
        // Sections read after the others (D108): the order checks below go by place in
        // the file, which is then not the order of the reads.
        return Beside::InOrder;
    }
    // The last counter section with records; a kernel section before it would have been
    // read before them in order.
    let last_counters = (0..describe.file_kinds.len()).rev().find(|&i| {
        describe.file_kinds[i] == Some(CsvKind::CounterCollection)
            && describe.file_events.get(i).is_some_and(|n| *n > 0)
    });
    let kernel_sections = |d: &Describe| -> Vec<usize> {
        (0..d.file_kinds.len())
            .filter(|&i| d.file_kinds[i] == Some(CsvKind::KernelTrace))
            .collect()
    };
    let in_order_after = |sections: &[usize]| match last_counters {
        Some(c) => sections.iter().all(|&k| k > c),
        None => true,
    };
    if !side.failed(&side_read) {
        if let Some(sp) = side.speculation.take() {
            let unchanged = sp.before.as_ref().is_none_or(|(agents, symbols)| {
                *agents == side.d.agents && *symbols == side.d.symbols.len()
            });
            let sections = kernel_sections(&side);
            let completions = sp.completions;
            let mut all_made = true;
            let listed = completions.for_each(|id, _| {
                all_made &= describe.made(id).is_some();
            });
            if listed.is_ok() && unchanged && all_made && in_order_after(&sections) {
                let completed = completions.for_each(|id, c| describe.complete(id, c.check));
                if completed.is_err() {
                    return Beside::Failed;
                }
                if sp.twice {
                    describe.refuse("a dispatch completed by two kernel records");
                }
                for i in sections {
                    describe.note_section(i, CsvKind::KernelTrace);
                }
                describe.first_read = FirstRead::Beside;
                return Beside::Done(report);
            }
        }
    }
    // Read the kernel records again, now after the rest, as they would be in order.
    describe.seen_event = false;
    let again = Wanted {
        records: Some(Kinds::of(KERNELS)),
        catalog: false,
        marker_texts: false,
        external_texts: false,
        counters_made: describe.counter_events,
        ..Wanted::ALL
    };
    let places = Spans::Jump(spans);
    let read = json_import::scan_process(
        path,
        index,
        &again,
        false,
        places,
        describe,
        opts,
        &mut report,
    );
    if describe.failed(&read) {
        return Beside::Failed;
    }
    if report.skipped_rows > 0 || !in_order_after(&kernel_sections(describe)) {
        return Beside::InOrder;
    }
    describe.first_read = FirstRead::KernelsAgain;
    Beside::Done(report)
}

/// The kernel record sections among the first 64 (by index, `kinds` and `events` as
/// the describing pass counted them) in which no record made an event: each completed a
/// dispatch a counter record made, whose row the counter record gives. In rocprofv3's
/// files with counter collection on every dispatch, that is the whole kernel section,
/// which the dispatch stream would otherwise parse again only to skip every record.
fn completing_sections(kinds: &[Option<CsvKind>], events: &[i64]) -> u64 {
    let mut mask = 0u64;
    for (i, (kind, n)) in kinds.iter().zip(events).enumerate().take(64) {
        if *kind == Some(CsvKind::KernelTrace) && *n == 0 {
            mask |= 1 << i;
        }
    }
    mask
}

/// What a direct source reads.
#[derive(Clone)]
enum Input {
    /// The files of a CSV run.
    Csv(Box<CsvPlan>),
    /// Process object `index` of a JSON file.
    Json { path: PathBuf, index: usize },
}

/// The record sections of a JSON object that hold `table`'s rows (`made`: counter
/// records made dispatches).
fn json_kinds(table: Table, made: bool) -> &'static [CsvKind] {
    match table {
        Table::Region | Table::Marker => &[CsvKind::Api],
        Table::KernelDispatch if made => &[CsvKind::KernelTrace, CsvKind::CounterCollection],
        Table::KernelDispatch => &[CsvKind::KernelTrace],
        Table::MemoryCopy => &[CsvKind::MemoryCopy],
        Table::MemoryAllocation => &[CsvKind::MemoryAllocation, CsvKind::ScratchMemory],
        // In document order: counter records join the facts of the dispatches kernel
        // records made before them, or make them.
        Table::PmcValue => &[CsvKind::KernelTrace, CsvKind::CounterCollection],
        _ => &[],
    }
}

/// A rocprofv3 CSV run or JSON process object opened as a source: described, ready to
/// stream. A clone is the same source opened again without reading the input.
#[derive(Clone)]
pub struct DirectRunSource {
    run: Run,
    input: Input,
    guid: String,
    opts: ImportOptions,
    desc: Arc<Description>,
    sort: SortOptions,
    /// Threads the streams may be read on together.
    threads: usize,
    /// The files the streams read, as they were before the describing read: each stream
    /// read checks them before and after (D163).
    stamps: FileStamps,
}

impl DirectRunSource {
    /// Reads the run once to describe it. `Ok(None)` when the run must be imported
    /// instead (see the module documentation). An error is the one the import would
    /// report, word for word, found without it (D115, D116).
    pub fn open(run: &Run, opts: &ImportOptions) -> Result<Option<Self>> {
        Self::open_on(run, opts, 2)
    }

    /// [`DirectRunSource::open`] on at most `threads` threads: with two or more, a run's
    /// counter files are described beside its API files, and its streams' tables are
    /// read side by side when the first is opened.
    pub fn open_on(run: &Run, opts: &ImportOptions, threads: usize) -> Result<Option<Self>> {
        Ok(Self::open_or_why(run, opts, threads)?.ok())
    }

    /// [`DirectRunSource::open_on`], saying why when the run must be imported: a short
    /// phrase ("dispatch ids too scattered", ...) for the user's report.
    pub fn open_or_why(
        run: &Run,
        opts: &ImportOptions,
        threads: usize,
    ) -> Result<std::result::Result<Self, &'static str>> {
        // The import's first step, and so its error when the guid is bad.
        let guid = crate::guid::run_guid(run)?;
        // Taken before the describing read, so that a change during it is caught too;
        // a file that changed explains whatever error a read met (D163).
        let (input, described, stamps) = match &run.source {
            crate::RunSource::Csv { .. } => {
                let plan = csv_import::plan(run);
                let stamps = FileStamps::of(plan.files.iter().map(|(p, _)| p.as_path()))?;
                let described =
                    describe_run(&plan, opts, threads).map_err(|e| stamps.explain(e))?;
                (Input::Csv(Box::new(plan)), described, stamps)
            }
            crate::RunSource::Json { index, places, .. } => {
                let Some(path) = run.files.first() else {
                    return Ok(Err("a JSON run without its file"));
                };
                let stamps = FileStamps::of([path.as_path()])?;
                let described = describe_json(path, *index, places, opts, threads)
                    .map_err(|e| stamps.explain(e))?;
                let (path, index) = (path.clone(), *index);
                (Input::Json { path, index }, described, stamps)
            }
        };
        let (describe, report) = match described {
            Ok(d) => d,
            Err(why) => return Ok(Err(why)),
        };
        let mut describe = describe;
        let events = std::mem::take(&mut describe.file_events);
        let mut d = describe.d;
        if matches!(input, Input::Json { .. }) {
            d.completing_sections = completing_sections(&describe.file_kinds, &events);
        }
        // Event ids in the import's order: the sections read where they stand, then the
        // late ones, each in file order.
        d.first_event = vec![0; events.len()];
        let mut next = 1i64;
        for late in [false, true] {
            for (i, n) in events.iter().enumerate() {
                if describe.late.contains(&i) == late {
                    d.first_event[i] = next;
                    next = next.saturating_add(*n);
                }
            }
        }
        // The moved rows by event id, now that the files' first events are known. Both maps
        // hold the same records; a file's run of moves may straddle one more page here.
        let first_event = &d.first_event;
        for (from, to) in [
            (&describe.moved_regions, &mut d.moved_regions),
            (&describe.moved_dispatches, &mut d.moved_dispatches),
        ] {
            let mut failed: Option<&'static str> = None;
            from.for_each(|key, m| {
                let Some(id) = m.0.filter(|_| failed.is_none()) else {
                    return;
                };
                let (file, ordinal) = moved_place(key);
                let first = first_event.get(file).copied().unwrap_or(1);
                // Both from counts of rows read, so far below overflow.
                let event = first.saturating_add(ordinal - 1);
                match to.entry(event) {
                    Ok(Some(slot)) => *slot = MovedId(Some(id)),
                    Ok(None) => failed = Some("rows with a taken id too scattered"),
                    // As when describing ([`move_taken`]): the import may yet manage.
                    Err(_) => failed = Some("a temporary file failed"),
                }
            })?;
            match failed {
                Some(why) => return Ok(Err(why)),
                None => to.seal()?,
            }
        }
        // JSON counter records find their dispatch by the row id the import moved, and
        // kernel records complete what counter records made by it (D113): an object with
        // both is left to the import. A counter section counts even without records:
        // cheaper to leave such a rare object to the import than to tell the two apart.
        // CSV counter rows are read by row id (D117).
        let counted = match &input {
            Input::Csv(_) => false,
            Input::Json { .. } => describe
                .file_kinds
                .contains(&Some(CsvKind::CounterCollection)),
        };
        if !d.moved_dispatches.is_empty() && counted {
            return Ok(Err(
                "kernel records with a taken dispatch id beside counter records",
            ));
        }
        // A PMC fact keeps its dispatch's agent, pid and category as 2-byte indexes: a run
        // with more distinct ones (only a crafted one) is left to the import.
        let index = usize::from(u16::MAX);
        let many_agents = d.agents.rows().nth(index).is_some();
        if d.counted_dispatches > 0
            && (many_agents || d.processes.len() > index || describe.categories.len() > index)
        {
            return Ok(Err(
                "counter values in a run of more than 65,535 agents, processes or categories",
            ));
        }
        // The threads the import fills in from the API calls.
        let pid = match &input {
            Input::Csv(plan) => plan.pid,
            Input::Json { .. } => d.pid,
        };
        let mut filled = Vec::new();
        d.fills
            .for_each(|_, f| filled.extend(f.tid.map(|t| (pid, t))))?;
        d.threads.extend(filled);
        d.fills.seal()?;
        let mut report = report;
        crate::say_unlisted(&mut report);
        d.ignored = report.ignored;
        d.skipped_rows = report.skipped_rows;
        d.skipped = report.skipped;
        d.nid = d
            .node
            .as_ref()
            .map_or_else(|| NodeRow::from_hostname(None).id, |n| n.id);
        d.counter_tids.seal()?;
        d.groups.seal()?;
        d.marker_text_ids.seal()?;
        d.external_text_ids.seal()?;
        Ok(Ok(DirectRunSource {
            run: run.clone(),
            input,
            guid,
            opts: opts.clone(),
            desc: Arc::new(d),
            sort: SortOptions::default(),
            threads: threads.max(1),
            stamps,
        }))
    }

    /// The same source with its streams sorted under `options` (memory budget, where run
    /// files go).
    pub fn with_sort_options(mut self, options: SortOptions) -> Self {
        self.sort = options;
        self
    }

    /// The run it reads.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// Input read but left out on purpose, as the import's report says it.
    pub fn ignored(&self) -> &[String] {
        &self.desc.ignored
    }

    /// Why lines were skipped as bad (with [`ImportOptions::skip_bad_rows`]), as the
    /// import's report lists them.
    pub fn skipped(&self) -> &[String] {
        &self.desc.skipped
    }

    /// Lines lost as bad, as the import's report counts them.
    pub fn skipped_rows(&self) -> u64 {
        self.desc.skipped_rows
    }

    /// The guid of the run (the import's).
    pub fn guid(&self) -> &str {
        &self.guid
    }

    /// The files of the rows of any of `tables`, in `plan`'s order (import order).
    fn files_of(&self, plan: &CsvPlan, tables: &[Table]) -> Vec<(PathBuf, CsvKind)> {
        let reads = |kind: CsvKind, table: Table| {
            let counters = kind == CsvKind::CounterCollection;
            tables_reading(kind).contains(&table)
                && !(counters && table == Table::KernelDispatch && self.desc.made_by_counters == 0)
        };
        plan.files
            .iter()
            .filter(|(_, kind)| tables.iter().any(|&t| reads(*kind, t)))
            .cloned()
            .collect()
    }

    /// The rows of `table` the description counted.
    fn described_rows(&self, table: Table) -> u64 {
        self.desc.counts.get(&table).copied().unwrap_or(0)
    }

    /// Reads the files of `tables` into `sink` (a read of [`plan_reads`]: the files, or a
    /// JSON object's sections, of any of them, in import order), in one read as the
    /// import does (counter rows find the kernel trace's kernel names); each file's
    /// events count from its first event id.
    /// Reads `tables` into `sink`, checking that the run's files are as they were
    /// described, before the read and after it (D163).
    fn read_table(&self, tables: &[Table], sink: &mut Rows<'_>) -> Result<()> {
        self.stamps
            .around(|| self.read_table_unchecked(tables, sink))
    }

    fn read_table_unchecked(&self, tables: &[Table], sink: &mut Rows<'_>) -> Result<()> {
        let mut report = ImportReport::default();
        let any = |wanted: &[Table]| tables.iter().any(|t| wanted.contains(t));
        match &self.input {
            Input::Csv(plan) => {
                let files = self.files_of(plan, tables);
                csv_import::read_files(plan, &files, sink, &self.opts, &mut report)
            }
            Input::Json { path, index } => {
                let made = self.desc.made_by_counters > 0;
                // Every section of the tables read: a table's rows come only from its
                // own sections.
                let records = tables
                    .iter()
                    .map(|&t| Kinds::of(json_kinds(t, made)))
                    .fold(Kinds::default(), Kinds::union);
                let wanted = Wanted {
                    records: Some(records),
                    catalog: false,
                    marker_texts: any(&[Table::Region, Table::Marker]),
                    external_texts: any(&[Table::KernelDispatch, Table::MemoryCopy]),
                    parsed_later: &[],
                    // They give no row to either table that reads kernel records.
                    passed: if any(&[Table::KernelDispatch, Table::PmcValue]) {
                        self.desc.completing_sections
                    } else {
                        0
                    },
                    // The counter records it reads make the dispatches.
                    counters_made: false,
                };
                let opts = &self.opts;
                let places = Spans::Jump(&self.desc.json_spans);
                json_import::scan_process(
                    path,
                    *index,
                    &wanted,
                    false,
                    places,
                    sink,
                    opts,
                    &mut report,
                )
            }
        }
    }

    /// The sorted rows of `tables` (a read of [`plan_reads`]), in one read.
    fn read_sorted(
        &self,
        tables: &[Table],
        first_source: u32,
        options: &StreamOptions,
    ) -> Result<Vec<(Table, SortedRuns)>> {
        let mut rows = Rows::new(self, tables, first_source, options)?;
        self.read_table(tables, &mut rows)?;
        rows.finish()
    }

    /// The sorted rows of every read's tables, on up to [`DirectRunSource::threads`]
    /// threads, the largest reads (by the described row counts) first. An error is that
    /// of the first failed read in `reads` order, whatever the timing.
    fn read_side_by_side(
        &self,
        reads: &[Vec<Table>],
        first_source: u32,
        options: &StreamOptions,
    ) -> Result<HashMap<Table, SortedRuns>> {
        // One worker reads on the calling thread: a thread of its own would gain nothing,
        // and its allocations would stay in a malloc arena of their own (about 10 MiB
        // more peak memory on one thread, measured).
        if self.threads.min(reads.len()) <= 1 {
            let mut runs = HashMap::new();
            for read in reads {
                runs.extend(self.read_sorted(read, first_source, options)?);
            }
            return Ok(runs);
        }
        let rows_of =
            |read: &Vec<Table>| -> u64 { read.iter().map(|&t| self.described_rows(t)).sum() };
        let mut order: Vec<usize> = (0..reads.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(rows_of(&reads[i])));
        let next = std::sync::atomic::AtomicUsize::new(0);
        type Read = Option<Result<Vec<(Table, SortedRuns)>>>;
        let done: Vec<Mutex<Read>> = reads.iter().map(|_| Mutex::new(None)).collect();
        let work = || loop {
            let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(&i) = order.get(k) else {
                break;
            };
            let got = self.read_sorted(&reads[i], first_source, options);
            *done[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(got);
        };
        // The calling thread is one of the workers: each thread spawned allocates in a
        // malloc arena of its own, which keeps what it freed (D164).
        std::thread::scope(|scope| {
            let work = &work;
            for _ in 1..self.threads.min(reads.len()) {
                scope.spawn(work);
            }
            work();
        });
        let mut runs = HashMap::new();
        for d in done {
            match d.into_inner().unwrap_or_else(|p| p.into_inner()) {
                Some(Ok(read)) => runs.extend(read),
                Some(Err(e)) => return Err(e),
                None => return Err(lost()),
            }
        }
        Ok(runs)
    }
}

impl Source for DirectRunSource {
    fn path(&self) -> &Path {
        self.run
            .files
            .first()
            .map_or(Path::new(""), PathBuf::as_path)
    }

    fn source_count(&self) -> usize {
        1
    }

    fn catalog(&self, first_source: u32) -> Result<Catalog> {
        let source = first_source;
        let d = &self.desc;
        let unknown = NodeRow::from_hostname(None);
        let node = d.node.as_ref().unwrap_or(&unknown);
        let nid = node.id;
        let mut c = Catalog::default();
        c.sources.push(SourceInfo {
            path: self.path().to_path_buf(),
            format: match self.input {
                Input::Csv(_) => "rocprofv3-csv".into(),
                Input::Json { .. } => "rocprofv3-json".into(),
            },
            guid: self.guid.clone(),
            uuid: rocpd_schema::uuid_suffix(&self.guid),
            schema_version: "3".into(),
            imported_from: self.run.files.clone(),
        });
        c.nodes.push(Node {
            source,
            id: nid,
            hash: Some(node.hash),
            machine_id: Some(node.machine_id.clone()),
            hostname: node.hostname.clone(),
            system_name: node.system_name.clone(),
            release: node.release.clone(),
            version: node.version.clone(),
            hardware_name: node.hardware_name.clone(),
            domain_name: node.domain_name.clone(),
        });
        let no_row = ProcessRow::default();
        for pid in &d.processes {
            let span = d.pid_spans.get(pid);
            let p = d.process_rows.get(pid).unwrap_or(&no_row);
            c.processes.push(Process {
                source,
                id: *pid,
                nid,
                ppid: p.ppid,
                pid: *pid,
                init: p.init,
                fini: p.fini,
                start: p.init.or(span.map(|s| s.0)),
                end: p.fini.or(span.map(|s| s.1)),
                command: p.command.clone(),
                environment: Some(p.environment.clone().unwrap_or_else(|| "{}".into())),
                extdata: Some(p.extdata.clone().unwrap_or_else(|| "{}".into())),
            });
        }
        // By thread id; the same tid in two processes keeps the first (the import's key).
        let mut threads: BTreeMap<i64, i64> = BTreeMap::new();
        for (pid, tid) in &d.threads {
            threads.entry(*tid).or_insert(*pid);
        }
        for (tid, pid) in threads {
            c.threads.push(Thread {
                source,
                id: tid,
                nid,
                ppid: None,
                pid,
                tid,
                name: None,
                start: None,
                end: None,
                extdata: Some("{}".into()),
            });
        }
        let main_pid = d.processes.iter().next().copied();
        let mut agents = d.agents.clone();
        agents.finish();
        for a in agents.rows() {
            c.agents.push(Agent {
                source,
                id: a.id,
                nid,
                pid: Some(main_pid.unwrap_or(0)),
                agent_type: a.agent_type.unwrap_or("UNK").to_string(),
                absolute_index: a.absolute_index,
                logical_index: a.logical_index,
                type_index: a.type_index,
                uuid: a.uuid,
                name: a.name.clone(),
                model_name: a.model_name.clone(),
                vendor_name: a.vendor_name.clone(),
                product_name: a.product_name.clone(),
                user_name: a.user_name.clone(),
                extdata: Some(a.extdata.clone().unwrap_or_else(|| "{}".into())),
            });
        }
        for (ids, dest, word) in [
            (&d.queues, &mut c.queues, "Queue"),
            (&d.streams, &mut c.streams, "Stream"),
        ] {
            for id in ids {
                dest.push(Queue {
                    source,
                    id: *id,
                    nid,
                    pid: main_pid,
                    name: Some(handle_name(word, *id)),
                    extdata: Some("{}".into()),
                });
            }
        }
        let mut code_objects = BTreeSet::new();
        for (id, (pid, k)) in &d.symbols {
            code_objects.insert(k.code_object_id);
            c.kernel_symbols.push(KernelSymbol {
                source,
                id: *id,
                nid,
                pid: Some(*pid),
                code_object_id: Some(k.code_object_id),
                kernel_name: k.kernel_name.clone(),
                display_name: k.display_name.clone(),
                kernel_object: k.kernel_object,
                kernarg_segment_size: k.kernarg_segment_size,
                kernarg_segment_alignment: k.kernarg_segment_alignment,
                group_segment_size: k.group_segment_size,
                private_segment_size: k.private_segment_size,
                sgpr_count: k.sgpr_count,
                arch_vgpr_count: k.arch_vgpr_count,
                accum_vgpr_count: k.accum_vgpr_count,
                extdata: Some(k.extdata.clone().unwrap_or_else(|| "{}".into())),
            });
        }
        for (id, (pid, o)) in &d.code_objects {
            c.code_objects.push(CodeObject {
                source,
                id: *id,
                nid,
                pid: Some(*pid),
                agent_id: o.agent_id,
                uri: o.uri.clone(),
                load_base: o.load_base,
                load_size: o.load_size,
                load_delta: o.load_delta,
                storage_type: o.storage_type.map(str::to_string),
                extdata: Some(o.extdata.clone().unwrap_or_else(|| "{}".into())),
            });
        }
        // The import writes a code object for every other one the symbols name (CSV
        // files describe none).
        for id in code_objects
            .into_iter()
            .filter(|id| !d.code_objects.contains_key(id))
        {
            c.code_objects.push(CodeObject {
                source,
                id,
                nid,
                pid: Some(main_pid.unwrap_or(0)),
                agent_id: None,
                uri: None,
                load_base: None,
                load_size: None,
                load_delta: None,
                storage_type: None,
                extdata: Some(crate::db::SYNTHESIZED.into()),
            });
        }
        c.code_objects.sort_by_key(|o| o.id);
        for (id, (pid, p)) in &d.pmcs {
            c.pmcs.push(Pmc {
                source,
                id: *id,
                nid,
                pid: Some(*pid),
                agent_id: p.agent_id,
                target_arch: p.target_arch.map(str::to_string),
                event_code: None,
                instance_id: Some(0),
                name: p.name.clone(),
                symbol: Some(p.name.clone()),
                description: p.description.clone(),
                long_description: Some(String::new()),
                component: Some("rocm".into()),
                units: Some(String::new()),
                value_type: Some("ABS".into()),
                block: p.block.clone(),
                expression: p.expression.clone(),
                is_constant: p.is_constant,
                is_derived: p.is_derived,
                extdata: Some(p.extdata.clone().unwrap_or_else(|| "{}".into())),
            });
        }
        Ok(c)
    }

    fn event_span(&self) -> Result<Option<(i64, i64)>> {
        Ok(self.desc.span)
    }

    fn marker_path(&self) -> &Path {
        // A CSV run's markers are in its marker API trace (any API file may hold some).
        let Input::Csv(plan) = &self.input else {
            return self.path();
        };
        let apis = || plan.files.iter().filter(|(_, k)| *k == CsvKind::Api);
        apis()
            .find(|(p, _)| crate::is_marker_trace(p))
            .or_else(|| apis().next())
            .map_or_else(|| self.path(), |(p, _)| p.as_path())
    }

    fn find_marker(&self, text: &str) -> Result<Vec<(i64, i64)>> {
        // In file order, as the database's query finds them.
        let mut sink = Rows::new(self, &[], 0, &StreamOptions::default())?;
        sink.find = Some((text.to_string(), Vec::new()));
        self.read_table(&[Table::Marker], &mut sink)?;
        Ok(sink.find.map(|(_, found)| found).unwrap_or_default())
    }

    fn count_rows(&self) -> Result<Vec<(Table, u64)>> {
        Ok(Table::ALL
            .iter()
            .map(|&t| (t, self.described_rows(t)))
            .collect())
    }

    fn dropped(&self) -> Result<Vec<StageDrop>> {
        let untimed = self.desc.untimed_pmc;
        Ok(if untimed > 0 {
            vec![StageDrop {
                stage: rocpd_pipeline::UNTIMED_PMC.into(),
                rows: [(Table::PmcValue.name(), untimed)].into_iter().collect(),
            }]
        } else {
            Vec::new()
        })
    }

    fn stream_count(&self) -> usize {
        self.desc.counts.values().filter(|n| **n > 0).count()
    }

    fn prepare(
        &self,
        first_source: u32,
        options: &StreamOptions,
    ) -> Result<Vec<Box<dyn PreparedStream + '_>>> {
        let has = |t: Table| self.described_rows(t) > 0 && options.wants(t);
        let tables: Vec<Table> = Table::ALL.into_iter().filter(|t| has(*t)).collect();
        let whole = matches!(self.input, Input::Json { .. });
        let reads = plan_reads(&tables, self.threads, whole, |t| self.described_rows(t));
        let ahead = (tables.len() >= 2).then(|| {
            Arc::new(Mutex::new(ReadAhead {
                reads,
                runs: HashMap::new(),
            }))
        });
        let mut out: Vec<Box<dyn PreparedStream + '_>> = Vec::new();
        for &table in &tables {
            out.push(Box::new(Prepared {
                source: self,
                table,
                first_source,
                options: options.clone(),
                ahead: ahead.clone(),
            }));
        }
        Ok(out)
    }
}

/// The reads that give the rows of `tables`' streams on `threads` threads (`whole`: each
/// read is a pass over the whole input, as a JSON object's reads are, which scan or jump
/// past the sections they do not parse; `rows`: a table's described row count). A read
/// per table, the two tables of a pair in one (D161); but an input read whole is read
/// once per thread at most, its tables spread over the reads by their rows, the largest
/// first each to the read with the fewest (on one thread, one read for every stream).
fn plan_reads(
    tables: &[Table],
    threads: usize,
    whole: bool,
    rows: impl Fn(Table) -> u64,
) -> Vec<Vec<Table>> {
    let both = |p: &[Table; 2]| tables.contains(&p[0]) && tables.contains(&p[1]);
    let mut units: Vec<Vec<Table>> = Vec::new();
    for &t in tables {
        match PAIRS.iter().find(|p| p.contains(&t) && both(p)) {
            Some(pair) if pair[0] == t => units.push(pair.to_vec()),
            Some(_) => {}
            None => units.push(vec![t]),
        }
    }
    let reads = threads.max(1);
    if !whole || units.len() <= reads {
        return units;
    }
    let rows_of = |u: &Vec<Table>| u.iter().map(|&t| rows(t)).fold(0u64, u64::saturating_add);
    // Stable: equal units keep the tables' order.
    units.sort_by_key(|u| std::cmp::Reverse(rows_of(u)));
    let mut bins: Vec<(u64, Vec<Table>)> = vec![(0, Vec::new()); reads];
    for u in units {
        let fewest = bins.iter_mut().min_by_key(|(n, _)| *n);
        if let Some((n, read)) = fewest {
            *n = n.saturating_add(rows_of(&u));
            read.extend(u);
        }
    }
    bins.into_iter()
        .map(|(_, read)| read)
        .filter(|read| !read.is_empty())
        .collect()
}

/// Tables whose rows come from the same files, read in one read when both streams are
/// wanted: the API calls give regions and markers; the kernel trace and counter files
/// give dispatches and, joined to the dispatches' facts, counter values (D161).
const PAIRS: [[Table; 2]; 2] = [
    [Table::Region, Table::Marker],
    [Table::PmcValue, Table::KernelDispatch],
];

/// The reads of a source's streams' tables, made when a stream first needs one: all of
/// them side by side by the first stream opened on two or more threads; on one, the read
/// of the stream's table (and of those read with it).
struct ReadAhead {
    /// The reads not made yet ([`plan_reads`]). A read taken from here and failed is not
    /// made again: a stream whose rows are not in `runs` reads them itself.
    reads: Vec<Vec<Table>>,
    runs: HashMap<Table, SortedRuns>,
}

struct Prepared<'a> {
    source: &'a DirectRunSource,
    table: Table,
    first_source: u32,
    options: StreamOptions,
    ahead: Option<Arc<Mutex<ReadAhead>>>,
}

impl PreparedStream for Prepared<'_> {
    fn table(&self) -> Table {
        self.table
    }

    fn open(&mut self) -> Result<Box<dyn BatchStream + '_>> {
        let s = self.source;
        if let Some(ahead) = &self.ahead {
            // The lock is held while the input is read: a stream opened meanwhile on
            // another thread waits for its rows instead of reading them again.
            let mut ahead = ahead.lock().unwrap_or_else(|p| p.into_inner());
            if !ahead.runs.contains_key(&self.table) {
                let reads: Vec<Vec<Table>> = if s.threads >= 2 {
                    std::mem::take(&mut ahead.reads)
                } else {
                    let mine = ahead.reads.iter().position(|r| r.contains(&self.table));
                    mine.map(|i| ahead.reads.remove(i)).into_iter().collect()
                };
                if !reads.is_empty() {
                    let runs = s.read_side_by_side(&reads, self.first_source, &self.options)?;
                    ahead.runs.extend(runs);
                }
            }
            if let Some(runs) = ahead.runs.remove(&self.table) {
                return Ok(Box::new(runs));
            }
        }
        let read = s.read_sorted(&[self.table], self.first_source, &self.options)?;
        let (_, runs) = read.into_iter().next().ok_or_else(lost)?;
        Ok(Box::new(runs))
    }
}

/// A stream's rows went missing between the streams of a read (a bug, not bad input).
fn lost() -> Error {
    Error::Usage("internal: the direct rocprofv3 reader lost a table's rows".into())
}

/// What a column of a row is filled with.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fill {
    Source,
    Id,
    Nid,
    Pid,
    Tid,
    Start,
    End,
    Name,
    Message,
    Launched,
    FlowFirstStart,
    FlowLastStart,
    FlowFirstEnd,
    FlowLastEnd,
    AgentId,
    KernelId,
    DispatchId,
    QueueId,
    StreamId,
    KernelName,
    PrivateSegment,
    GroupSegment,
    Workgroup(usize),
    Grid(usize),
    HasLauncher,
    DstAgent,
    SrcAgent,
    Size,
    AllocType,
    Level,
    Address,
    Category,
    EventId,
    StackId,
    ParentStackId,
    EventExtdata,
    Extdata,
    EmptyObject,
    PmcId,
    CounterName,
    Value,
    CorrelationId,
    RegionName,
    DstAddress,
    SrcAddress,
    Null,
}

fn fills(table: Table, projection: &Projection) -> Vec<Fill> {
    table
        .columns()
        .iter()
        .map(|c| {
            let fill = match c.name {
                "source" => Fill::Source,
                "id" => Fill::Id,
                "nid" => Fill::Nid,
                "pid" => Fill::Pid,
                "tid" => Fill::Tid,
                "start" => Fill::Start,
                "end" => Fill::End,
                "name" => Fill::Name,
                "message" => Fill::Message,
                "launched" => Fill::Launched,
                "flow_first_start" => Fill::FlowFirstStart,
                "flow_last_start" => Fill::FlowLastStart,
                "flow_first_end" => Fill::FlowFirstEnd,
                "flow_last_end" => Fill::FlowLastEnd,
                "agent_id" => Fill::AgentId,
                "kernel_id" => Fill::KernelId,
                "dispatch_id" => Fill::DispatchId,
                "queue_id" => Fill::QueueId,
                "stream_id" => Fill::StreamId,
                "kernel_name" => Fill::KernelName,
                "private_segment_size" => Fill::PrivateSegment,
                "group_segment_size" => Fill::GroupSegment,
                "workgroup_x" => Fill::Workgroup(0),
                "workgroup_y" => Fill::Workgroup(1),
                "workgroup_z" => Fill::Workgroup(2),
                "grid_x" => Fill::Grid(0),
                "grid_y" => Fill::Grid(1),
                "grid_z" => Fill::Grid(2),
                "has_launcher" => Fill::HasLauncher,
                "dst_agent_id" => Fill::DstAgent,
                "src_agent_id" => Fill::SrcAgent,
                "size" => Fill::Size,
                "type" => Fill::AllocType,
                "level" => Fill::Level,
                "address" => Fill::Address,
                "category" => Fill::Category,
                "event_id" => Fill::EventId,
                "stack_id" => Fill::StackId,
                "parent_stack_id" => Fill::ParentStackId,
                "event_extdata" => Fill::EventExtdata,
                "extdata" => Fill::Extdata,
                "call_stack" | "line_info" => Fill::EmptyObject,
                "pmc_id" => Fill::PmcId,
                "counter_name" => Fill::CounterName,
                "value" => Fill::Value,
                // CSV files have none of these four; JSON objects do.
                "correlation_id" => Fill::CorrelationId,
                "region_name" => Fill::RegionName,
                "dst_address" => Fill::DstAddress,
                "src_address" => Fill::SrcAddress,
                // args: neither has them.
                _ => Fill::Null,
            };
            if c.nullable && !projection.fills_in(table, c.name) {
                Fill::Null
            } else {
                fill
            }
        })
        .collect()
}

/// The event made just before its row.
#[derive(Default)]
struct Pending {
    category: String,
    stack_id: Option<i64>,
    parent_stack_id: Option<i64>,
    correlation_id: Option<i64>,
    extdata: Option<String>,
}

/// One row's values, whichever table it belongs to.
#[derive(Default)]
struct Values<'a> {
    id: i64,
    pid: i64,
    tid: Option<i64>,
    start: i64,
    end: i64,
    name: &'a str,
    agent_id: Option<i64>,
    kernel_id: i64,
    dispatch_id: i64,
    queue_id: Option<i64>,
    stream_id: Option<i64>,
    kernel_name: &'a str,
    private_segment: Option<i64>,
    group_segment: Option<i64>,
    workgroup: [i64; 3],
    grid: [i64; 3],
    dst_agent: Option<i64>,
    src_agent: Option<i64>,
    size: Option<i64>,
    alloc_type: &'a str,
    level: Option<&'a str>,
    address: Option<i64>,
    extdata: Option<&'a str>,
    event_id: i64,
    pmc_id: i64,
    counter_name: &'a str,
    value: f64,
    region_name: Option<&'a str>,
    dst_address: Option<i64>,
    src_address: Option<i64>,
}

/// What a counter value takes from the dispatch it belongs to, as the RocPD reader joins
/// it in: 64 bytes, the small sets of agents, pids and categories kept once. (The
/// external correlation id is kept in the fact: interned, the distinct ids grew in memory
/// with the counted dispatches, found by a review of D119.)
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Fact {
    dispatch_id: i64,
    event_id: i64,
    start: i64,
    end: i64,
    tid: i64,
    /// The event's stack id, which is also its parent stack id (the CSV import gives a
    /// dispatch's event its correlation id as both).
    stack: i64,
    /// The event's external correlation id (JSON objects carry one).
    correlation: i64,
    agent: u16,
    pid: u16,
    category: u16,
    /// [`Fact::HAS_TID`], [`Fact::HAS_STACK`], [`Fact::HAS_CORRELATION`].
    flags: u8,
}

// The budget of [`MAX_COUNTED`] counts on it.
const _: () = assert!(std::mem::size_of::<Fact>() == 64);

impl Fact {
    const HAS_TID: u8 = 1;
    const HAS_STACK: u8 = 2;
    const HAS_CORRELATION: u8 = 4;
    /// Set on every fact: a page's empty slots have no flags.
    const PRESENT: u8 = 8;

    fn tid(&self) -> Option<i64> {
        (self.flags & Fact::HAS_TID != 0).then_some(self.tid)
    }

    fn stack(&self) -> Option<i64> {
        (self.flags & Fact::HAS_STACK != 0).then_some(self.stack)
    }
}

impl Slot for Fact {
    const BYTES: usize = 64;
    fn put(&self, out: &mut [u8]) {
        let wide = [
            self.dispatch_id,
            self.event_id,
            self.start,
            self.end,
            self.tid,
            self.stack,
            self.correlation,
        ];
        put_i64s(out, &wide);
        out[56..58].copy_from_slice(&self.agent.to_le_bytes());
        out[58..60].copy_from_slice(&self.pid.to_le_bytes());
        out[60..62].copy_from_slice(&self.category.to_le_bytes());
        out[62] = self.flags;
    }
    fn take(b: &[u8]) -> Self {
        let w = |i| i64::from_le_bytes(bytes_at(b, i));
        let h = |i| u16::from_le_bytes(bytes_at(b, i));
        Fact {
            dispatch_id: w(0),
            event_id: w(8),
            start: w(16),
            end: w(24),
            tid: w(32),
            stack: w(40),
            correlation: w(48),
            agent: h(56),
            pid: h(58),
            category: h(60),
            flags: b[62],
        }
    }
}

/// A dispatch's facts as a row gives them.
struct NewFact<'a> {
    /// What the fact is found by: the dispatch's row id (its dispatch id unless taken).
    row_id: i64,
    dispatch_id: i64,
    event_id: i64,
    start: i64,
    end: i64,
    tid: Option<i64>,
    stack: Option<i64>,
    correlation: Option<i64>,
    agent_id: i64,
    pid: i64,
    category: &'a str,
}

/// The facts of the dispatches with counter values, for the PMC stream, by dispatch id:
/// those of the kernel trace and those the counter rows make (a kernel trace's fact wins
/// over a counter row's of the same dispatch), a few pages in memory (D101). They are
/// kept by the dispatch's rank among the dispatches the description counted, so that
/// the pages are full however the ids scatter (D119).
struct Facts<'a> {
    /// By the dispatches with counter values the description counted.
    by_rank: RankedMap<'a, IdSet, Fact>,
    /// Whether the facts of dispatches counter rows make are kept: always for CSV runs,
    /// whose later counter rows join them; for JSON objects only when a counter record
    /// joins a dispatch another made ([`Description::made_joined`]); otherwise nothing
    /// looks them up again and they would take 64 bytes per counted dispatch.
    keep_created: bool,
    agents: Interned<i64>,
    pids: Interned<i64>,
    categories: Interned<String>,
}

/// Values by a 2-byte index (agents, pids and categories of one run: few, and the
/// describing pass leaves a run with more than 2^16 of any to the import).
struct Interned<T> {
    values: Vec<T>,
    index: FastMap<T, u16>,
}

impl<T> Default for Interned<T> {
    fn default() -> Self {
        Interned {
            values: Vec::new(),
            index: FastMap::default(),
        }
    }
}

impl<T: std::hash::Hash + Eq + Clone> Interned<T> {
    /// The index of `value`, added if new.
    fn of<Q>(&mut self, value: &Q) -> Result<u16>
    where
        T: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ToOwned<Owned = T> + ?Sized,
    {
        if let Some(&i) = self.index.get(value) {
            return Ok(i);
        }
        let i = u16::try_from(self.values.len()).map_err(|_| too_many())?;
        self.values.push(value.to_owned());
        self.index.insert(value.to_owned(), i);
        Ok(i)
    }

    fn get(&self, i: u16) -> Option<&T> {
        self.values.get(usize::from(i))
    }
}

fn too_many() -> Error {
    Error::Usage("internal: too many distinct dispatch facts".into())
}

impl<'a> Facts<'a> {
    /// Facts of the dispatches `counted` has, `resident` pages of them in memory.
    fn new(counted: &'a IdSet, resident: usize, keep_created: bool) -> Result<Self> {
        Ok(Facts {
            by_rank: RankedMap::new(counted, resident, "PMC facts")?,
            keep_created,
            agents: Interned::default(),
            pids: Interned::default(),
            categories: Interned::default(),
        })
    }

    /// Keeps the facts of `f`, a dispatch the description counted.
    fn add(&mut self, f: NewFact<'_>, created: bool) -> Result<Fact> {
        let fact = Fact {
            dispatch_id: f.dispatch_id,
            event_id: f.event_id,
            start: f.start,
            end: f.end,
            tid: f.tid.unwrap_or(0),
            stack: f.stack.unwrap_or(0),
            correlation: f.correlation.unwrap_or(0),
            agent: self.agents.of(&f.agent_id)?,
            pid: self.pids.of(&f.pid)?,
            category: self.categories.of(f.category)?,
            flags: u8::from(f.tid.is_some()) * Fact::HAS_TID
                + u8::from(f.stack.is_some()) * Fact::HAS_STACK
                + u8::from(f.correlation.is_some()) * Fact::HAS_CORRELATION
                + Fact::PRESENT,
        };
        if created && !self.keep_created {
            return Ok(fact);
        }
        let slot = self.by_rank.entry(f.row_id)?;
        if !created || *slot == Fact::default() {
            *slot = fact;
        }
        Ok(fact)
    }

    fn get(&mut self, dispatch_id: i64) -> Result<Option<Fact>> {
        self.by_rank.get(dispatch_id)
    }

    fn correlation_of(&self, f: Fact) -> Option<i64> {
        (f.flags & Fact::HAS_CORRELATION != 0).then_some(f.correlation)
    }

    fn category(&self, f: Fact) -> &str {
        self.categories.get(f.category).map_or("", String::as_str)
    }

    fn pid(&self, f: Fact) -> i64 {
        self.pids.get(f.pid).copied().unwrap_or_default()
    }

    fn agent(&self, f: Fact) -> i64 {
        self.agents.get(f.agent).copied().unwrap_or_default()
    }
}

/// Distinct texts a stream keeps in memory, and their bytes (counted twice: the list and
/// its index hold a copy each); a text past them goes to the stream's [`TextSpill`]
/// (D125).
const TEXTS_IN_MEMORY: usize = 1 << 17;
const TEXT_BYTES_IN_MEMORY: usize = 16 << 20;

/// The length a [`TextRef`] gives a text kept in memory.
const IN_MEMORY: u32 = u32::MAX;

/// A text of a [`TextTable`]: none (all zero); one of the distinct texts in memory (`at`
/// its index plus one, `len` [`IN_MEMORY`]); or one in the spill file (`at` its offset
/// plus one, `len` its bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct TextRef {
    at: u64,
    len: u32,
}

impl Slot for TextRef {
    const BYTES: usize = 12;
    fn put(&self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.at.to_le_bytes());
        out[8..].copy_from_slice(&self.len.to_le_bytes());
    }
    fn take(b: &[u8]) -> Self {
        TextRef {
            at: u64::from_le_bytes(bytes_at(b, 0)),
            len: u32::from_le_bytes(bytes_at(b, 8)),
        }
    }
}

/// Pages of text references (6 KiB each) a stream keeps in memory per text table.
const TEXT_PAGES_IN_MEMORY: usize = 128;

/// The texts a [`TextTable`] does not keep in memory (and the held records of [`Held`]),
/// in an [`AppendFile`] and read back by their [`TextRef`]. A text table's texts all come
/// from the input, so its file is smaller than the input.
struct TextSpill {
    file: AppendFile,
}

impl TextSpill {
    fn new() -> Self {
        TextSpill {
            file: AppendFile::new(None, "texts"),
        }
    }

    fn append(&mut self, text: &str) -> Result<TextRef> {
        let len = u32::try_from(text.len())
            .ok()
            .filter(|&l| l != IN_MEMORY)
            .ok_or_else(|| Error::Usage("internal: a text of 4 GiB or more".into()))?;
        // Places count from 1: a zero `at` is no text.
        let at = self
            .file
            .append(text.as_bytes())?
            .checked_add(1)
            .ok_or_else(|| Error::Usage("internal: text file offset".into()))?;
        Ok(TextRef { at, len })
    }

    fn read(&self, r: TextRef) -> Result<String> {
        let bad = || Error::Usage("internal: a text reference past the texts kept".into());
        let offset = r.at.checked_sub(1).ok_or_else(bad)?;
        String::from_utf8(self.file.read(offset, u64::from(r.len))?).map_err(|_| bad())
    }
}

/// A JSON object's `strings` texts by (table, id), as a stream keeps them: each distinct
/// text once, and by id its index in a paged map (D101). rocprofv3 writes a marker's
/// message once per call, so the same few texts come back for every iteration of a
/// loop; by id they took 90 bytes each, a fifth of a 3M-event file's peak. The maps are
/// keyed by the id's rank among the ids the description saw, so their pages are full
/// however the ids scatter (D121). Past [`TEXTS_IN_MEMORY`] distinct texts or
/// [`TEXT_BYTES_IN_MEMORY`], new texts go to a [`TextSpill`] (D125).
struct TextTable<'a> {
    distinct: Vec<String>,
    index: FastMap<String, u32>,
    /// Bytes of `distinct` and `index` together.
    bytes: usize,
    spill: TextSpill,
    marker: RankedMap<'a, PagedIds, TextRef>,
    external: RankedMap<'a, PagedIds, TextRef>,
    /// Distinct texts and bytes kept in memory, at most.
    max_texts: usize,
    max_bytes: usize,
}

impl<'a> TextTable<'a> {
    /// Texts of the ids in `marker` and `external`.
    fn new(marker: &'a PagedIds, external: &'a PagedIds) -> Result<Self> {
        let resident = page_limits(TEXT_PAGES_IN_MEMORY).resident;
        Ok(TextTable {
            distinct: Vec::new(),
            index: FastMap::default(),
            bytes: 0,
            spill: TextSpill::new(),
            marker: RankedMap::new(marker, resident, "marker texts")?,
            external: RankedMap::new(external, resident, "region names")?,
            max_texts: match TEXTS_IN_MEMORY_SET.load(Ordering::Relaxed) {
                0 => TEXTS_IN_MEMORY,
                set => set,
            },
            max_bytes: TEXT_BYTES_IN_MEMORY,
        })
    }

    fn map(&mut self, which: Texts) -> &mut RankedMap<'a, PagedIds, TextRef> {
        match which {
            Texts::Marker => &mut self.marker,
            Texts::External => &mut self.external,
        }
    }

    fn put(&mut self, which: Texts, id: i64, text: &str) -> Result<()> {
        let found = match self.index.get(text) {
            Some(&at) => TextRef {
                at: u64::from(at),
                len: IN_MEMORY,
            },
            None => {
                let bytes = self.bytes.saturating_add(text.len().saturating_mul(2));
                if self.distinct.len() < self.max_texts && bytes <= self.max_bytes {
                    let at = u32::try_from(self.distinct.len() + 1)
                        .map_err(|_| Error::Usage("internal: too many texts".into()))?;
                    self.distinct.push(text.to_string());
                    self.index.insert(text.to_string(), at);
                    self.bytes = bytes;
                    TextRef {
                        at: u64::from(at),
                        len: IN_MEMORY,
                    }
                } else {
                    self.spill.append(text)?
                }
            }
        };
        *self.map(which).entry(id)? = found;
        Ok(())
    }

    fn get(&mut self, which: Texts, id: i64) -> Result<Option<String>> {
        match self.map(which).get(id)? {
            None => Ok(None),
            Some(r) if r.len == IN_MEMORY => Ok(usize::try_from(r.at)
                .ok()
                .and_then(|at| self.distinct.get(at.checked_sub(1)?))
                .cloned()),
            Some(r) => self.spill.read(r).map(Some),
        }
    }
}

/// One table's rows being built and sorted.
struct TableOut {
    table: Table,
    fills: Vec<Fill>,
    builder: BatchBuilder,
    sorter: RunSorter,
}

/// What a table's output held after it settled at a section's start, for tests.
#[cfg(test)]
#[derive(Debug, Clone, Copy)]
struct Settled {
    table: Table,
    building: usize,
    spills: u64,
    held: usize,
}

#[cfg(test)]
thread_local! {
    static SETTLED: std::cell::RefCell<Vec<Settled>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl TableOut {
    /// Hands the rows built so far to the sorter and lets it write what it holds to disk
    /// if it wrote some before: the input that fed this table paused (a file or section
    /// ended), and otherwise a part-filled batch and a part of the sort budget would stay
    /// held through every later section, as much as where the table's length fell made
    /// it (D162).
    fn settle(&mut self) -> Result<()> {
        if !self.builder.is_empty() {
            let batch = self.builder.finish()?;
            self.sorter.push(batch)?;
        }
        self.sorter.settle()
    }
}

/// `message` as the database's `json_extract(extdata, '$.message')` gives it. A string
/// member of an object is read in place (borrowed where it has no escapes); anything
/// else (another type, a repeated member, text that is not an object) goes through a
/// whole `serde_json::Value`, as it always did. The one difference: members other than
/// `message` are skipped unchecked, so an object whose other members `Value` would
/// refuse (a number past `f64`, a lone surrogate escape) still gives its message. The
/// extdata read here is written by serde_json (`message_extdata`, the JSON reader).
fn message_of(extdata: Option<&str>) -> Option<Cow<'_, str>> {
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default)]
        message: Option<Cow<'a, str>>,
    }
    let text = extdata?;
    // A struct also reads from an array; only an object has members.
    if text.trim_start().starts_with('{') {
        if let Ok(Message { message: Some(m) }) = serde_json::from_str::<Message<'_>>(text) {
            return Some(m);
        }
    }
    let ext = serde_json::from_str::<serde_json::Value>(text).ok()?;
    rocpd_model::json_extract_text(ext.get("message")?).map(Cow::Owned)
}

/// The streaming pass's sink: the rows of one table (or of the two tables of the API
/// files) into sorted batches, or, for a marker search, the matching markers' times.
struct Rows<'a> {
    source: &'a DirectRunSource,
    first_source: u32,
    agents: Agents,
    names: Vec<String>,
    name_ids: FastMap<String, i64>,
    next_event: i64,
    next_copy: i64,
    next_alloc: i64,
    pending: Pending,
    outs: Vec<TableOut>,
    /// A marker search: the text, and the (start, end) of each marker carrying it.
    find: Option<(String, Vec<(i64, i64)>)>,
    /// The kind of the file being read.
    kind: Option<CsvKind>,
    /// Dispatch ids counter rows made, with time and without, so far.
    created: IdSet,
    untimed: IdSet,
    /// The facts of the dispatch the counter row being read belongs to, if it has time.
    current: Option<Fact>,
    /// The id of the next counter value.
    next_pmc: i64,
    /// The PMC stream's dispatch facts.
    facts: Option<Facts<'a>>,
    /// A buffer for a counter value's event columns.
    pmc_event: Pending,
    /// The JSON `strings` texts this stream reads (D121, D125).
    texts: TextTable<'a>,
    /// The pages of flow groups and fill entries this stream read last.
    group_pages: PageCache<Group>,
    fill_pages: PageCache<FillEntry>,
    /// The page of threads given by counter rows this stream read last.
    counter_tid_pages: PageCache<FillEntry>,
    /// The pages of moved region and dispatch ids this stream read last (D131).
    moved_region_pages: PageCache<MovedId>,
    moved_dispatch_pages: PageCache<MovedId>,
    /// A row's names while it is pushed ([`Rows::scratch_names`]).
    scratch: String,
}

impl<'a> Rows<'a> {
    fn new(
        source: &'a DirectRunSource,
        tables: &[Table],
        first_source: u32,
        options: &StreamOptions,
    ) -> Result<Self> {
        let mut sort = source.sort.clone();
        sort.batch_rows = options.batch_rows;
        Ok(Rows {
            source,
            first_source,
            agents: source.desc.agents.clone(),
            names: Vec::new(),
            name_ids: FastMap::default(),
            next_event: 1,
            next_copy: 1,
            next_alloc: 1,
            pending: Pending::default(),
            outs: tables
                .iter()
                .map(|&table| TableOut {
                    table,
                    fills: fills(table, &options.projection),
                    builder: BatchBuilder::new(table, options.batch_rows.max(1)),
                    sorter: RunSorter::new(table, sort.clone()),
                })
                .collect(),
            find: None,
            kind: None,
            created: IdSet::default(),
            untimed: IdSet::default(),
            current: None,
            next_pmc: 1,
            facts: tables
                .contains(&Table::PmcValue)
                .then(|| {
                    Facts::new(
                        &source.desc.counted,
                        page_limits(FACT_PAGES_IN_MEMORY).resident,
                        !matches!(source.input, Input::Json { .. }) || source.desc.made_joined,
                    )
                })
                .transpose()?,
            pmc_event: Pending::default(),
            texts: TextTable::new(&source.desc.marker_text_ids, &source.desc.external_text_ids)?,
            group_pages: PageCache::default(),
            fill_pages: PageCache::default(),
            counter_tid_pages: PageCache::default(),
            moved_region_pages: PageCache::default(),
            moved_dispatch_pages: PageCache::default(),
            scratch: String::new(),
        })
    }

    /// Every table's rows, sorted.
    fn finish(self) -> Result<Vec<(Table, SortedRuns)>> {
        let mut done = Vec::with_capacity(self.outs.len());
        for mut o in self.outs {
            if !o.builder.is_empty() {
                let b = o.builder.finish()?;
                o.sorter.push(b)?;
            }
            done.push((o.table, o.sorter.finish()?));
        }
        Ok(done)
    }

    /// The output of `table`'s rows, if this pass builds them.
    fn out_of(&self, table: Table) -> Option<usize> {
        self.outs.iter().position(|o| o.table == table)
    }

    fn name(&self, id: i64) -> &str {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.names.get(i))
            .map_or("", String::as_str)
    }

    /// The thread a row without one gets from the API call of its correlation id.
    fn filled(&mut self, tid: Option<i64>) -> Result<Option<i64>> {
        if tid.is_some() {
            return Ok(tid);
        }
        let Some(s) = self.pending.stack_id else {
            return Ok(None);
        };
        let found = self.source.desc.fills.lookup(s, &mut self.fill_pages)?;
        Ok(found.and_then(|f| f.tid))
    }

    fn group(&mut self) -> Result<Option<Group>> {
        let Some(s) = self.pending.stack_id else {
            return Ok(None);
        };
        self.source.desc.groups.lookup(s, &mut self.group_pages)
    }

    /// The row id the import gives the dispatch of event `event_id`, if its dispatch id
    /// was taken (D112).
    fn moved_dispatch(&mut self, event_id: i64) -> Result<Option<i64>> {
        let d = &self.source.desc;
        moved_id(
            &d.moved_dispatches,
            &mut self.moved_dispatch_pages,
            event_id,
        )
    }

    /// The region id the import gives the API call of event `event_id`, if its
    /// correlation id was taken (D110).
    fn moved_region(&mut self, event_id: i64) -> Result<Option<i64>> {
        let d = &self.source.desc;
        moved_id(&d.moved_regions, &mut self.moved_region_pages, event_id)
    }

    /// The texts of name ids `name` and `region` (either may be absent) one after the
    /// other in the kept buffer, taken out of `self` so that they may be pushed (the names
    /// are borrowed from `self`), and where the first ends. Put it back in `scratch` once
    /// pushed: rows then allocate no name.
    fn scratch_names(&mut self, name: Option<i64>, region: Option<i64>) -> (String, usize) {
        let mut names = std::mem::take(&mut self.scratch);
        names.clear();
        if let Some(id) = name {
            names.push_str(self.name(id));
        }
        let split = names.len();
        if let Some(id) = region {
            names.push_str(self.name(id));
        }
        (names, split)
    }

    /// A kernel dispatch row, if this stream writes them.
    fn push_dispatch(&mut self, d: &DispatchRow, tid: Option<i64>, event_id: i64) -> Result<()> {
        let Some(k) = self.out_of(Table::KernelDispatch) else {
            return Ok(());
        };
        let desc = &self.source.desc;
        let symbol = desc.symbols.get(&d.kernel_id).map(|(_, k)| k);
        let kernel_name = symbol
            .and_then(|k| k.display_name.as_deref().filter(|n| !n.is_empty()))
            .or_else(|| symbol.and_then(|k| k.kernel_name.as_deref()))
            .unwrap_or("");
        let id = self.moved_dispatch(event_id)?.unwrap_or(d.dispatch_id);
        let (region_name, _) = self.scratch_names(None, d.region_name_id);
        let pushed = self.push(
            k,
            &Values {
                id,
                pid: d.pid,
                tid,
                start: d.start,
                end: d.end,
                agent_id: Some(d.agent_id),
                kernel_id: d.kernel_id,
                dispatch_id: d.dispatch_id,
                queue_id: Some(d.queue_id),
                stream_id: Some(d.stream_id),
                kernel_name,
                private_segment: d.private_segment_size,
                group_segment: d.group_segment_size,
                workgroup: d.workgroup,
                grid: d.grid,
                extdata: d.extdata.as_deref(),
                region_name: d.region_name_id.map(|_| region_name.as_str()),
                event_id,
                ..Default::default()
            },
        );
        self.scratch = region_name;
        pushed
    }

    fn push(&mut self, k: usize, v: &Values<'_>) -> Result<()> {
        // Only groups with both ends are in the links the database joins.
        let table = self.outs[k].table;
        let group = if table.has_flows() {
            self.group()?
        } else {
            None
        };
        let linked = group.filter(|g| g.flows().is_some());
        let flows = linked.as_ref().and_then(Group::flows);
        let launched = linked.map_or(0, |g| i64::from(g.targets));
        let message = if self.outs[k].fills.contains(&Fill::Message) {
            message_of(self.pending.extdata.as_deref())
        } else {
            None
        };
        let nid = self.source.desc.nid;
        let p = &self.pending;
        let flow = |k: usize| flows.map(|f| f[k]);
        let out = &mut self.outs[k];
        for (i, fill) in out.fills.iter().enumerate() {
            let b = out.builder.column(i);
            match (fill, b) {
                (Fill::Source, ColumnBuilder::U32(x)) => x.append_value(self.first_source),
                (Fill::Id, ColumnBuilder::I64(x)) => x.append_value(v.id),
                (Fill::Nid, ColumnBuilder::I64(x)) => x.append_value(nid),
                (Fill::Pid, ColumnBuilder::I64(x)) => x.append_value(v.pid),
                (Fill::Tid, ColumnBuilder::I64(x)) => x.append_option(v.tid),
                (Fill::Start, ColumnBuilder::I64(x)) => x.append_value(v.start),
                (Fill::End, ColumnBuilder::I64(x)) => x.append_value(v.end),
                (Fill::Name, ColumnBuilder::Str(x)) => x.append_value(v.name),
                (Fill::Message, ColumnBuilder::Str(x)) => x.append_option(message.as_deref()),
                (Fill::Launched, ColumnBuilder::I64(x)) => x.append_value(launched),
                (Fill::FlowFirstStart, ColumnBuilder::I64(x)) => x.append_option(flow(0)),
                (Fill::FlowLastStart, ColumnBuilder::I64(x)) => x.append_option(flow(1)),
                (Fill::FlowFirstEnd, ColumnBuilder::I64(x)) => x.append_option(flow(2)),
                (Fill::FlowLastEnd, ColumnBuilder::I64(x)) => x.append_option(flow(3)),
                (Fill::AgentId, ColumnBuilder::I64(x)) => x.append_option(v.agent_id),
                (Fill::KernelId, ColumnBuilder::I64(x)) => x.append_value(v.kernel_id),
                (Fill::DispatchId, ColumnBuilder::I64(x)) => x.append_value(v.dispatch_id),
                (Fill::QueueId, ColumnBuilder::I64(x)) => x.append_option(v.queue_id),
                (Fill::StreamId, ColumnBuilder::I64(x)) => x.append_option(v.stream_id),
                (Fill::KernelName, ColumnBuilder::Str(x)) => x.append_value(v.kernel_name),
                (Fill::PrivateSegment, ColumnBuilder::I64(x)) => x.append_option(v.private_segment),
                (Fill::GroupSegment, ColumnBuilder::I64(x)) => x.append_option(v.group_segment),
                (Fill::Workgroup(k), ColumnBuilder::I64(x)) => x.append_value(v.workgroup[*k]),
                (Fill::Grid(k), ColumnBuilder::I64(x)) => x.append_value(v.grid[*k]),
                (Fill::HasLauncher, ColumnBuilder::Bool(x)) => x.append_value(flows.is_some()),
                (Fill::DstAgent, ColumnBuilder::I64(x)) => x.append_option(v.dst_agent),
                (Fill::SrcAgent, ColumnBuilder::I64(x)) => x.append_option(v.src_agent),
                (Fill::Size, ColumnBuilder::I64(x)) => x.append_option(v.size),
                (Fill::AllocType, ColumnBuilder::Str(x)) => x.append_value(v.alloc_type),
                (Fill::Level, ColumnBuilder::Str(x)) => x.append_option(v.level),
                (Fill::Address, ColumnBuilder::I64(x)) => x.append_option(v.address),
                (Fill::Category, ColumnBuilder::Str(x)) => x.append_value(&p.category),
                (Fill::EventId, ColumnBuilder::I64(x)) => x.append_value(v.event_id),
                (Fill::StackId, ColumnBuilder::I64(x)) => x.append_option(p.stack_id),
                (Fill::ParentStackId, ColumnBuilder::I64(x)) => x.append_option(p.parent_stack_id),
                (Fill::EventExtdata, ColumnBuilder::Str(x)) => {
                    x.append_value(p.extdata.as_deref().unwrap_or("{}"))
                }
                (Fill::Extdata, ColumnBuilder::Str(x)) => x.append_value(v.extdata.unwrap_or("{}")),
                (Fill::EmptyObject, ColumnBuilder::Str(x)) => x.append_value("{}"),
                (Fill::PmcId, ColumnBuilder::I64(x)) => x.append_value(v.pmc_id),
                (Fill::CounterName, ColumnBuilder::Str(x)) => x.append_value(v.counter_name),
                (Fill::Value, ColumnBuilder::F64(x)) => x.append_value(v.value),
                (Fill::CorrelationId, ColumnBuilder::I64(x)) => x.append_option(p.correlation_id),
                (Fill::RegionName, ColumnBuilder::Str(x)) => x.append_option(v.region_name),
                (Fill::DstAddress, ColumnBuilder::I64(x)) => x.append_option(v.dst_address),
                (Fill::SrcAddress, ColumnBuilder::I64(x)) => x.append_option(v.src_address),
                (_, other) => other.push_null(),
            }
        }
        out.builder.end_row();
        if out.builder.is_full() {
            let batch: RecordBatch = out.builder.finish()?;
            out.sorter.push(batch)?;
        }
        Ok(())
    }
}

impl RowSink for Rows<'_> {
    fn agents(&mut self) -> &mut Agents {
        &mut self.agents
    }
    fn set_node(&mut self, _node: NodeRow) {}
    fn thread(&mut self, _pid: i64, _tid: Option<i64>) {}
    fn string(&mut self, s: &str) -> Result<i64> {
        if let Some(id) = self.name_ids.get(s) {
            return Ok(*id);
        }
        let id = self.names.len() as i64;
        self.names.push(s.to_string());
        self.name_ids.insert(s.to_string(), id);
        Ok(id)
    }
    fn event(&mut self, e: &EventRow<'_>) -> Result<i64> {
        let id = self.next_event;
        self.next_event += 1;
        self.pending.category.clear();
        self.pending.category.push_str(e.category);
        self.pending.stack_id = e.stack_id;
        self.pending.parent_stack_id = e.parent_stack_id;
        self.pending.correlation_id = e.correlation_id;
        self.pending.extdata.clone_from(&e.extdata);
        Ok(id)
    }
    fn region(
        &mut self,
        id: i64,
        pid: i64,
        tid: i64,
        start: i64,
        end: i64,
        name_id: i64,
        event_id: i64,
    ) -> Result<()> {
        let marker = is_marker(&self.pending.category);
        if let Some((text, _)) = &self.find {
            let carries = match message_of(self.pending.extdata.as_deref()) {
                Some(m) => m == *text,
                None => self.name(name_id) == text,
            };
            if let (true, Some((_, found))) = (marker && carries, &mut self.find) {
                found.push((start, end));
            }
            return Ok(());
        }
        let table = if marker { Table::Marker } else { Table::Region };
        let Some(k) = self.out_of(table) else {
            return Ok(());
        };
        let id = self.moved_region(event_id)?.unwrap_or(id);
        let (name, _) = self.scratch_names(Some(name_id), None);
        let pushed = self.push(
            k,
            &Values {
                id,
                pid,
                tid: Some(tid),
                start,
                end,
                name: &name,
                event_id,
                ..Default::default()
            },
        );
        self.scratch = name;
        pushed
    }
    fn dispatch(&mut self, d: &DispatchRow, event_id: i64) -> Result<()> {
        // What counter rows find the dispatch by: the row id the import gave it (D117).
        let row_id = self.moved_dispatch(event_id)?.unwrap_or(d.dispatch_id);
        let desc = &self.source.desc;
        // A dispatch in a counter file is one a counter row made.
        let created = self.kind == Some(CsvKind::CounterCollection);
        if created {
            self.created.insert(row_id);
        }
        // A thread a counter row gave, else the API call's (the import's order).
        let tid = match d.tid {
            Some(t) => Some(t),
            None => desc
                .counter_tids
                .lookup(row_id, &mut self.counter_tid_pages)?
                .and_then(|e| e.tid),
        };
        let tid = self.filled(tid)?;
        if let Some(facts) = &mut self.facts {
            if desc.counted.contains(row_id) {
                let p = &self.pending;
                debug_assert_eq!(p.stack_id, p.parent_stack_id);
                let fact = facts.add(
                    NewFact {
                        row_id,
                        dispatch_id: d.dispatch_id,
                        event_id,
                        start: d.start,
                        end: d.end,
                        tid,
                        stack: p.stack_id,
                        correlation: p.correlation_id,
                        agent_id: d.agent_id,
                        pid: d.pid,
                        category: &p.category,
                    },
                    created,
                )?;
                self.current = Some(fact);
            }
        }
        // A dispatch a JSON counter record made is written now, with the counter record's
        // columns: the kernel record completing it has the same (`made_check`).
        self.push_dispatch(d, tid, event_id)
    }
    fn copy(&mut self, c: &CopyRow, event_id: i64) -> Result<()> {
        let id = self.next_copy;
        self.next_copy += 1;
        let Some(k) = self.out_of(Table::MemoryCopy) else {
            return Ok(());
        };
        let tid = self.filled(c.tid)?;
        let (names, split) = self.scratch_names(Some(c.name_id), c.region_name_id);
        let (name, region_name) = names.split_at(split);
        let pushed = self.push(
            k,
            &Values {
                id,
                pid: c.pid,
                tid,
                start: c.start,
                end: c.end,
                name,
                dst_agent: c.dst_agent_id,
                src_agent: c.src_agent_id,
                size: Some(c.size),
                queue_id: c.queue_id,
                stream_id: c.stream_id,
                extdata: c.extdata.as_deref(),
                region_name: c.region_name_id.map(|_| region_name),
                dst_address: c.dst_address,
                src_address: c.src_address,
                event_id,
                ..Default::default()
            },
        );
        self.scratch = names;
        pushed
    }
    fn alloc(&mut self, a: &AllocRow, event_id: i64) -> Result<()> {
        let id = self.next_alloc;
        self.next_alloc += 1;
        let Some(k) = self.out_of(Table::MemoryAllocation) else {
            return Ok(());
        };
        let tid = self.filled(a.tid)?;
        self.push(
            k,
            &Values {
                id,
                pid: a.pid,
                tid,
                start: a.start,
                end: a.end,
                agent_id: a.agent_id,
                alloc_type: a.kind.unwrap_or(""),
                level: a.level,
                address: a.address,
                size: Some(a.size),
                queue_id: a.queue_id,
                stream_id: a.stream_id,
                extdata: a.extdata.as_deref(),
                event_id,
                ..Default::default()
            },
        )
    }
    fn kernel_symbol(&mut self, _pid: i64, _k: &KernelSymbolRow) -> Result<()> {
        Ok(())
    }
    fn has_kernel(&self, id: i64) -> bool {
        self.source.desc.symbols.contains_key(&id)
    }
    fn pmc(&mut self, _pid: i64, _p: &PmcRow) -> Result<()> {
        Ok(())
    }
    fn pmc_event(&mut self, _event_id: i64, pmc_id: i64, value: f64) -> Result<()> {
        let id = self.next_pmc;
        self.next_pmc += 1;
        let (Some(k), Some(f)) = (self.out_of(Table::PmcValue), self.current) else {
            // Not this stream's, or a value without time: the RocPD reader drops it too.
            return Ok(());
        };
        let desc = &self.source.desc;
        let counter_name = desc.pmcs.get(&pmc_id).map_or("", |(_, p)| p.name.as_str());
        let Some(facts) = &self.facts else {
            return Ok(());
        };
        // The row's event columns are its dispatch's event's.
        let mut event = std::mem::take(&mut self.pmc_event);
        event.category.clear();
        event.category.push_str(facts.category(f));
        event.stack_id = f.stack();
        event.parent_stack_id = f.stack();
        event.correlation_id = facts.correlation_of(f);
        event.extdata = None;
        let pid = facts.pid(f);
        let agent_id = facts.agent(f);
        std::mem::swap(&mut self.pending, &mut event);
        let pushed = self.push(
            k,
            &Values {
                id,
                pid,
                tid: f.tid(),
                start: f.start,
                end: f.end,
                agent_id: Some(agent_id),
                dispatch_id: f.dispatch_id,
                event_id: f.event_id,
                pmc_id,
                counter_name,
                value,
                extdata: Some("{}"),
                ..Default::default()
            },
        );
        std::mem::swap(&mut self.pending, &mut event);
        self.pmc_event = event;
        pushed
    }
    fn find_dispatch(&mut self, dispatch_id: i64) -> Result<Option<FoundDispatch>> {
        let traced = self.source.desc.traced.contains(dispatch_id);
        if !traced && !self.created.contains(dispatch_id) {
            self.current = None;
            return Ok(None);
        }
        self.current = match self.facts.as_mut() {
            Some(f) => f.get(dispatch_id)?,
            None => None,
        };
        // A thread: the ones counter rows give are in the description already.
        Ok(Some(FoundDispatch {
            event_id: Some(0),
            stack_id: None,
            tid: Some(0),
        }))
    }
    fn set_dispatch_tid(&mut self, _dispatch_id: i64, _pid: i64, _tid: i64) -> Result<()> {
        Ok(())
    }
    fn untimed_event(&mut self, dispatch_id: i64) -> Result<Option<i64>> {
        self.current = None;
        Ok(self.untimed.contains(dispatch_id).then_some(0))
    }
    fn remember_untimed(&mut self, dispatch_id: i64, _event_id: i64) -> Result<()> {
        self.untimed.insert(dispatch_id);
        self.current = None;
        Ok(())
    }
    fn set_process(&mut self, _pid: i64, _row: ProcessRow) {}
    fn code_object(&mut self, _pid: i64, _c: &CodeObjectRow) -> Result<()> {
        Ok(())
    }
    fn completes(
        &mut self,
        dispatch_id: i64,
        _found: &FoundDispatch,
        _internal: Option<i64>,
    ) -> bool {
        // What the describing pass decided; a dispatch is completed at most once.
        self.created.contains(dispatch_id) && self.source.desc.completed.contains(dispatch_id)
    }
    fn update_dispatch(&mut self, _: &DispatchRow, _: Option<i64>, _: Option<i64>) -> Result<()> {
        // Its row was written with the counter record's columns, the same.
        Ok(())
    }
    fn has_pmc(&self, id: i64) -> bool {
        self.source.desc.pmcs.contains_key(&id)
    }
    fn put_text(&mut self, which: Texts, id: i64, text: &str) -> Result<()> {
        self.texts.put(which, id, text)
    }
    fn text(&mut self, which: Texts, id: i64) -> Result<Option<String>> {
        self.texts.get(which, id)
    }
    fn defer(&mut self, _section: &str, _place: &str, _json: &str) -> Result<()> {
        // The scanning walk never defers (D108).
        Err(lost())
    }
    fn deferred(&mut self, _after: i64, _limit: usize) -> Result<Vec<Deferred>> {
        Ok(Vec::new())
    }
    fn begin_file(&mut self, index: Option<usize>, kind: CsvKind) -> Result<()> {
        // The rows of the file or section before are all pushed: what each table holds
        // goes to its sorter, and to disk where the sorter already wrote some (D162).
        for o in &mut self.outs {
            o.settle()?;
        }
        #[cfg(test)]
        SETTLED.with(|s| {
            s.borrow_mut().extend(self.outs.iter().map(|o| Settled {
                table: o.table,
                building: o.builder.len(),
                spills: o.sorter.stats().spills,
                held: o.sorter.held_bytes(),
            }))
        });
        self.kind = Some(kind);
        let first = index.and_then(|i| self.source.desc.first_event.get(i));
        self.next_event = first.copied().unwrap_or(1);
        self.current = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CSV run's maps are allowed the bytes of the files the import reads, not those of
    /// PC sampling or statistics files beside them (D120).
    #[test]
    fn the_input_rule_counts_only_imported_files() {
        let tmp = tempfile::tempdir().unwrap();
        let docs = Path::new("../../fixtures/rocprofv3-csv-docs");
        let mut imported = 0;
        for (name, from) in [
            ("1_kernel_trace.csv", "kernel_trace.csv"),
            ("1_hip_api_trace.csv", "hip_runtime_trace.csv"),
            ("1_pc_sampling_host_trap.csv", "pc_sampling_host_trap.csv"),
            ("1_kernel_stats.csv", "hip_api_stats.csv"),
        ] {
            let text = std::fs::read(docs.join(from)).unwrap();
            if !name.contains("sampling") && !name.contains("stats") {
                imported += text.len() as u64;
            }
            std::fs::write(tmp.path().join(name), text).unwrap();
        }
        let mut runs = crate::group_runs(&[tmp.path().to_path_buf()]).unwrap();
        assert_eq!(runs.len(), 1);
        let plan = csv_import::plan(&runs.remove(0));
        assert_eq!(plan.files.len(), 4, "{:?}", plan.files);
        let d = Describe::for_csv(&plan);
        assert_eq!(d.d.groups.input_allowance(), imported + imported / 2);
        assert_eq!(d.d.fills.input_allowance(), imported / 2);
        let json = tmp.path().join("x_results.json");
        std::fs::write(&json, vec![b' '; 3000]).unwrap();
        assert_eq!(Describe::for_json(&json).d.groups.input_allowance(), 4500);
    }

    /// A CSV run: a table a read but for the two of a pair, which read their files once
    /// between them. A JSON object: at most a read per thread, the tables spread by their
    /// rows (D161).
    #[test]
    fn reads_are_planned_per_thread_count() {
        use Table::*;
        let all = [
            Region,
            Marker,
            KernelDispatch,
            MemoryCopy,
            MemoryAllocation,
            PmcValue,
        ];
        let rows = |t: Table| match t {
            Region => 500,
            Marker => 100,
            KernelDispatch => 200,
            PmcValue => 300,
            MemoryCopy => 50,
            _ => 10,
        };
        let per_table = vec![
            vec![Region, Marker],
            vec![MemoryCopy],
            vec![MemoryAllocation],
            vec![PmcValue, KernelDispatch],
        ];
        // CSV: a table (or pair) a read, whatever the threads.
        for threads in [1, 2, 8] {
            assert_eq!(plan_reads(&all, threads, false, rows), per_table);
        }
        // JSON: one read on one thread; on two, the regions and markers (600 rows) in
        // one, the rest (560) in the other; on four or more, a table (or pair) a read.
        let one = plan_reads(&all, 1, true, rows);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].len(), all.len());
        assert!(all.iter().all(|t| one[0].contains(t)));
        assert_eq!(
            plan_reads(&all, 2, true, rows),
            vec![
                vec![Region, Marker],
                vec![PmcValue, KernelDispatch, MemoryCopy, MemoryAllocation]
            ]
        );
        assert_eq!(
            plan_reads(&all, 3, true, rows),
            vec![
                vec![Region, Marker],
                vec![PmcValue, KernelDispatch],
                vec![MemoryCopy, MemoryAllocation]
            ]
        );
        assert_eq!(plan_reads(&all, 4, true, rows), per_table);
        // A pair with one table wanted reads it alone.
        assert_eq!(
            plan_reads(&[Marker, KernelDispatch, MemoryCopy], 4, true, rows),
            vec![vec![Marker], vec![KernelDispatch], vec![MemoryCopy]]
        );
        assert_eq!(
            plan_reads(&[PmcValue], 2, false, rows),
            vec![vec![PmcValue]]
        );
    }

    /// A marker's message read in place is what the whole `Value` gave, for every shape
    /// of extdata.
    #[test]
    fn messages_read_in_place_as_through_a_value() {
        let by_value = |text: Option<&str>| -> Option<String> {
            let ext = serde_json::from_str::<serde_json::Value>(text?).ok()?;
            rocpd_model::json_extract_text(ext.get("message")?)
        };
        for text in [
            None,
            Some(""),
            Some("{}"),
            Some(r#"{"message":"plain"}"#),
            Some(r#"  {"size": 3, "message": "with \"quotes\" and \u00e9"}"#),
            Some(r#"{"message":""}"#),
            Some(r#"{"message":null}"#),
            Some(r#"{"message":7}"#),
            Some(r#"{"message":true}"#),
            Some(r#"{"message":{"a":[1,2]}}"#),
            Some(r#"{"message":"first","message":"second"}"#),
            Some(r#"["message"]"#),
            Some(r#"{"message":"x"} trailing"#),
            Some("not json"),
        ] {
            assert_eq!(
                message_of(text).map(Cow::into_owned),
                by_value(text),
                "{text:?}"
            );
        }
    }

    /// Held records past the memory kept read back from their file in order, whether the
    /// reads follow each other, start again, or skip ahead; texts with NULs, newlines and
    /// multi-byte characters come back whole.
    #[test]
    fn held_records_past_memory_read_back_in_order() {
        let mut held = Held::default();
        let big = "x".repeat(MAX_HELD_BYTES);
        let record = |i: i64| -> (String, String, String) {
            let json = match i {
                1 => big.clone(),
                i if i % 3 == 0 => format!("{{\"a\": \"µ\\n{i}\"}}\n"),
                i => format!("[{i}, \"\0\"]"),
            };
            (
                format!("s{}", i % 4),
                format!("buffer_records.x[{i}]"),
                json,
            )
        };
        for i in 0..40 {
            let (section, place, json) = record(i);
            held.add(&section, &place, &json).unwrap();
        }
        // The first fits, the second passes the memory kept: it and all after are filed.
        assert_eq!((held.records.len(), held.spilled), (1, 39));
        let expect = |d: &Deferred| {
            let (section, place, json) = record(d.seq - 1);
            assert_eq!((&d.section, &d.place, &d.json), (&section, &place, &json));
        };
        for pass in 0..2 {
            let mut after = 0;
            loop {
                let chunk = held.after(after, 7).unwrap();
                let Some(last) = chunk.last() else { break };
                for (k, d) in chunk.iter().enumerate() {
                    assert_eq!(d.seq, after + 1 + k as i64, "pass {pass}");
                    expect(d);
                }
                after = last.seq;
            }
            assert_eq!(after, 40);
        }
        for from in [35, 3, 0, 39, 1, 17] {
            let chunk = held.after(from, 4).unwrap();
            assert_eq!(chunk.first().map(|d| d.seq), Some(from + 1));
            chunk.iter().for_each(expect);
        }
        assert!(held.after(40, 4).unwrap().is_empty());
    }

    /// Kernel sections with no event are passed over; others, and other kinds, are not;
    /// sections from the 64th on never are.
    #[test]
    fn only_eventless_kernel_sections_are_passed_over() {
        let (k, c, a) = (
            Some(CsvKind::KernelTrace),
            Some(CsvKind::CounterCollection),
            Some(CsvKind::Api),
        );
        assert_eq!(
            completing_sections(&[c, a, k, None, k, a], &[5, 9, 0, 0, 3, 0]),
            1 << 2
        );
        let mut kinds = vec![a; 70];
        kinds[63] = k;
        kinds[66] = k;
        assert_eq!(completing_sections(&kinds, &[0; 70]), 1 << 63);
    }

    /// What a JSON object's describing pass learned that the streams use, comparable.
    fn learned(d: &Describe) -> String {
        let x = &d.d;
        format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {} {} {:?} {:?} {:?} {:?} {:?} {:?} {} {:?} {:?}",
            x.counts,
            x.span,
            x.threads,
            x.groups.records(),
            x.fills.records(),
            x.counter_tids.records(),
            d.file_events,
            d.file_kinds,
            x.made_by_counters,
            x.counted_dispatches,
            x.queues,
            x.symbols.keys().collect::<Vec<_>>(),
            x.node,
            x.process_rows,
            x.processes,
            x.pid_spans,
            d.categories.len(),
            d.late,
            d.refused,
        )
    }

    /// A generated one-process trace as a rocprofv3 JSON file under `dir`.
    fn generated_json(dir: &Path, seed: u64, iterations: u32) -> std::path::PathBuf {
        let cfg = rocpd_gen::GenConfig {
            seed,
            processes: 1,
            iterations,
            ..Default::default()
        };
        let dbs = rocpd_gen::generate(&cfg, &dir.join("gen")).unwrap();
        rocpd_gen::export_json(&dbs[0], &dir.join("json"))
            .unwrap()
            .0
    }

    /// Once a section or file ends, no table holds a part-built batch, and a table whose
    /// rows already went to disk holds none in memory either: what the read holds through
    /// later sections does not depend on where each table's length fell (D162).
    #[test]
    fn tables_hold_nothing_past_their_section_once_spilled() {
        let tmp = tempfile::tempdir().unwrap();
        let json = generated_json(tmp.path(), 5, 300);
        let runs = crate::group_runs(&[json]).unwrap();
        let source = DirectRunSource::open_on(&runs[0], &ImportOptions::default(), 1)
            .unwrap()
            .unwrap()
            .with_sort_options(SortOptions {
                memory_bytes: 64 << 10,
                spill_dir: Some(tmp.path().to_path_buf()),
                ..Default::default()
            });
        SETTLED.with(|s| s.borrow_mut().clear());
        let tables = [
            Table::Region,
            Table::Marker,
            Table::KernelDispatch,
            Table::MemoryCopy,
            Table::MemoryAllocation,
        ];
        let options = StreamOptions::default();
        let read = source.read_sorted(&tables, 0, &options).unwrap();
        assert_eq!(read.len(), tables.len());
        let settled = SETTLED.with(|s| s.take());
        for s in &settled {
            assert_eq!(s.building, 0, "{s:?}");
            if s.spills > 0 {
                assert_eq!(s.held, 0, "{s:?}");
            }
        }
        assert!(
            settled
                .iter()
                .any(|s| s.table == Table::Region && s.spills > 0),
            "the API calls never spilled: {settled:?}"
        );
    }

    /// In a file of several process objects, the first object's describing read checks
    /// the whole file as JSON and says so in the file's places; later objects' reads then
    /// pass over the rest unchecked (D137). A later object read without that (the first
    /// not read, or it failed) checks the file itself, so it fails as its import does.
    #[test]
    fn later_objects_of_a_json_file_trust_the_first_objects_check() {
        let tmp = tempfile::tempdir().unwrap();
        let json = generated_json(tmp.path(), 9, 20);
        let one = std::fs::read_to_string(&json).unwrap();
        let text = rocpd_gen::objects_repeated(&one, 3, 100).unwrap();
        // A colon missing in the last object's last record: brace counting passes over it.
        let at = text.rfind("\"thread_id\":").unwrap();
        let broken = format!("{}\"thread_id\" {}", &text[..at], &text[at + 12..]);
        let opts = ImportOptions::default();
        let fails = |read: Result<Described>| match read {
            Err(e @ Error::Input { .. }) => {
                let e = e.to_string();
                assert!(
                    e.contains("invalid JSON") && e.contains("byte offset"),
                    "{e}"
                );
            }
            Err(e) => panic!("{e}"),
            Ok(Err(why)) => panic!("imported: {why}"),
            Ok(Ok(_)) => panic!("read"),
        };
        for threads in [1, 2] {
            let good = tmp.path().join("good_results.json");
            std::fs::write(&good, &text).unwrap();
            let places = crate::json_import::prescan(&good).unwrap().places;
            // A later object first: it checks the file itself, and says nothing.
            describe_json(&good, 2, &places, &opts, threads)
                .unwrap()
                .unwrap();
            assert!(!places.checked(&good));
            describe_json(&good, 0, &places, &opts, threads)
                .unwrap()
                .unwrap();
            assert!(places.checked(&good));

            let bad = tmp.path().join("bad_results.json");
            std::fs::write(&bad, &broken).unwrap();
            let places = crate::json_import::prescan(&bad).unwrap().places;
            // Every object's read fails, the first's included, and nothing is noted.
            for index in [1, 0, 1, 2] {
                fails(describe_json(&bad, index, &places, &opts, threads));
            }
            assert!(!places.checked(&bad));
            // Had the first object's read checked the file, the middle object would be
            // read without a look at the last; the last still meets its own error.
            places.set_checked(&bad);
            describe_json(&bad, 1, &places, &opts, threads)
                .unwrap()
                .unwrap();
            fails(describe_json(&bad, 2, &places, &opts, threads));
            // Places of another file (this one rewritten) are not trusted.
            std::fs::write(&bad, format!("{broken} ")).unwrap();
            fails(describe_json(&bad, 1, &places, &opts, threads));
        }
    }

    /// The first describing read on two threads takes each of its ways: the kernel
    /// records beside the rest when counter records made their dispatches (rocprofv3's
    /// order), again after the rest when there are no counter records, and the whole
    /// read in order when the kernel records come first. Each learns what the read in
    /// order on one thread learns.
    #[test]
    fn json_kernel_records_are_described_beside_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        // Over 2,048 dispatch ids: several pages of them.
        let json = generated_json(tmp.path(), 5, 250);
        let text = std::fs::read_to_string(&json).unwrap();
        // Without counter records: the section emptied.
        let key = "\"counter_collection\":";
        let at = text.find(&format!("{key}[{{")).unwrap() + key.len();
        let mut values =
            serde_json::Deserializer::from_str(&text[at..]).into_iter::<serde::de::IgnoredAny>();
        values.next().unwrap().unwrap();
        let end = at + values.byte_offset();
        let uncounted = tmp.path().join("uncounted_results.json");
        std::fs::write(&uncounted, format!("{}[]{}", &text[..at], &text[end..])).unwrap();
        // Kernel records first: the two record objects swapped.
        let callbacks = text.rfind("\"callback_records\":").unwrap();
        let buffers = text.rfind(",\"buffer_records\":").unwrap();
        let tail = text.len() - "}]}".len();
        let kernels_first = tmp.path().join("kernels_first_results.json");
        let swapped = format!(
            "{}{},{}{}",
            &text[..callbacks],
            &text[buffers + 1..tail],
            &text[callbacks..buffers],
            &text[tail..]
        );
        std::fs::write(&kernels_first, swapped).unwrap();
        let opts = ImportOptions::default();
        // With every paged map in memory, then with one page of each in memory (the
        // setting is the process's: other tests meanwhile read through the file too,
        // which must not change what they read).
        let ways = [
            (&json, FirstRead::Beside),
            (&uncounted, FirstRead::KernelsAgain),
            (&kernels_first, FirstRead::InOrder),
        ];
        for (pages, (path, way)) in [0, 1].into_iter().flat_map(|p| ways.map(|w| (p, w))) {
            set_pages_in_memory(pages);
            let written = crate::paged::pages_written();
            let replays = || crate::recorded::REPLAYS.with(|n| n.get());
            let before = replays();
            let (two, _) = describe_json_with(path, 0, &[], true, &opts, 2)
                .unwrap()
                .expect("direct");
            // On two threads the API calls were read ahead by the helper and replayed
            // (D139); on one, read in place: both learn the same.
            assert_eq!(replays(), before + 1, "{way:?}");
            let (one, _) = describe_json_with(path, 0, &[], true, &opts, 1)
                .unwrap()
                .expect("direct");
            assert_eq!(replays(), before + 1, "{way:?}");
            assert_eq!((two.first_read, one.first_read), (way, FirstRead::InOrder));
            assert_eq!(learned(&two), learned(&one), "{way:?}");
            // With the pre-scan's places the first read jumps over the sections it does
            // not parse, and learns the same (D136).
            let prescanned = crate::json_import::prescan(path).unwrap().places;
            let places = prescanned.spans_in(path);
            for threads in [2, 1] {
                let jumps = || crate::json_scan::JUMPS.with(|n| n.get());
                let before = jumps();
                let (plain, _) = describe_json_with(path, 0, &[], true, &opts, threads)
                    .unwrap()
                    .unwrap();
                let plain_jumps = jumps() - before;
                let (jumped, _) = describe_json_with(path, 0, places, true, &opts, threads)
                    .unwrap()
                    .expect("direct");
                let places_jumps = jumps() - before - plain_jumps;
                assert_eq!(learned(&jumped), learned(&plain), "{way:?} {threads}");
                assert_eq!(jumped.first_read, plain.first_read);
                assert_eq!(jumped.d.json_spans, plain.d.json_spans);
                // Beside, this thread passes over the kernel records and the helper over
                // the counter records (each over 1 MiB); the API calls' sections are
                // smaller than a jump here.
                if threads == 2 && way == FirstRead::Beside {
                    assert!(
                        places_jumps >= plain_jumps + 2,
                        "{places_jumps} {plain_jumps}"
                    );
                }
            }
            assert!(two.d.completed == one.d.completed, "{way:?}");
            let completed = (0..10_000).filter(|&i| one.d.completed.contains(i)).count();
            let kernels = one.d.counts.get(&Table::KernelDispatch).copied();
            // Every kernel record completes a counter-made dispatch in rocprofv3's order,
            // so the streams pass over the kernel section (D98); in the others it has rows.
            let passed = completing_sections(&two.file_kinds, &two.file_events);
            assert_eq!(
                passed,
                completing_sections(&one.file_kinds, &one.file_events)
            );
            match way {
                FirstRead::Beside => {
                    assert_eq!(Some(completed as u64), kernels);
                    assert_eq!(passed.count_ones(), 1);
                }
                _ => {
                    assert_eq!(completed, 0);
                    assert_eq!(passed, 0);
                }
            }
            assert!(kernels > Some(20), "{kernels:?}");
            if pages == 1 && way == FirstRead::Beside {
                // Counter-made dispatches and the kernel records read beside, over pages.
                assert!(crate::paged::pages_written() > written + 4);
            }
        }
        set_pages_in_memory(0);
    }

    /// The describing pass takes any number of distinct texts (D125): an object of
    /// 2^19 and more (the bound of D121, past which it was imported) is read directly.
    #[test]
    fn the_describing_pass_takes_any_number_of_distinct_texts() {
        let mut d = Describe::for_json(Path::new("no such file"));
        for i in 0..(1i64 << 19) + 100 {
            d.put_text(Texts::External, i, &format!("kernel {i}"))
                .unwrap();
        }
        assert!(d.refused.is_none());
    }

    /// Texts past the memory of a [`TextTable`] go to its spill file and come back the
    /// same, in memory or written out, mixed with texts kept in memory (D125).
    #[test]
    fn texts_past_the_memory_kept_come_back_from_a_file() {
        let n = 40_000i64;
        let marker = paged_id_set(0..n);
        let external = paged_id_set(0..10i64);
        let mut t = TextTable::new(&marker, &external).unwrap();
        (t.max_texts, t.max_bytes) = (100, 1_000_000);
        let text = |i: i64| {
            if i % 3 == 0 {
                format!("step {}", i % 90)
            } else {
                // Long enough that the file is written several times over.
                format!("message {i} {}", "é".repeat((i % 50) as usize))
            }
        };
        for i in 0..n {
            t.put(Texts::Marker, i, &text(i)).unwrap();
        }
        t.put(Texts::External, 3, "").unwrap();
        assert_eq!(t.distinct.len(), 100);
        let file = &t.spill.file;
        assert!(file.on_disk() > 0);
        assert!(file.len() > file.on_disk());
        for i in (0..n).rev() {
            assert_eq!(t.get(Texts::Marker, i).unwrap(), Some(text(i)), "{i}");
        }
        assert_eq!(t.get(Texts::External, 3).unwrap().as_deref(), Some(""));
        assert_eq!(t.get(Texts::External, 4).unwrap(), None);
        // The byte bound holds too: one text over it goes to the file.
        let mut t = TextTable::new(&marker, &external).unwrap();
        t.max_bytes = 10;
        t.put(Texts::Marker, 0, "abc").unwrap();
        t.put(Texts::Marker, 1, "abcdef").unwrap();
        assert_eq!(t.distinct, ["abc"]);
        assert_eq!(t.get(Texts::Marker, 1).unwrap().as_deref(), Some("abcdef"));
    }

    /// Texts come back by table and id, each distinct text kept once, also for ids that
    /// scatter one a page (kept by rank among the ids, D121, over pages written out).
    #[test]
    fn texts_are_found_by_table_and_id_and_kept_once() {
        // More marker ids than the pages kept in memory take (128 of 512).
        let n = 70_000i64;
        let marker = paged_id_set((0..n).map(|i| i * 512));
        let external = paged_id_set(0..300i64);
        let mut t = TextTable::new(&marker, &external).unwrap();
        for i in 0..n {
            let text = if i % 2 == 0 { "even" } else { "odd" };
            t.put(Texts::Marker, i * 512, text).unwrap();
        }
        for i in 0..300i64 {
            t.put(Texts::External, i, "name").unwrap();
        }
        // A later text of an id replaces the earlier.
        t.put(Texts::Marker, 512, "again").unwrap();
        assert_eq!(t.distinct, ["even", "odd", "name", "again"]);
        assert_eq!(t.marker.map.pages(), 137);
        for i in 0..n {
            let want = match i {
                1 => "again",
                _ if i % 2 == 0 => "even",
                _ => "odd",
            };
            assert_eq!(
                t.get(Texts::Marker, i * 512).unwrap().as_deref(),
                Some(want)
            );
            assert_eq!(t.get(Texts::Marker, i * 512 + 1).unwrap(), None);
        }
        for i in 0..300i64 {
            assert_eq!(t.get(Texts::External, i).unwrap().as_deref(), Some("name"));
        }
        assert_eq!(t.get(Texts::External, 300).unwrap(), None);
        // A text of an id the description did not see has no place.
        assert!(t.put(Texts::External, 300, "late").is_err());
    }

    /// An id set of `ids`.
    fn id_set(ids: impl IntoIterator<Item = i64>) -> IdSet {
        let mut set = IdSet::default();
        for id in ids {
            assert_eq!(set.insert(id), Some(true));
        }
        set
    }

    /// [`id_set`] in pages, one kept in memory while built, then sealed (D140).
    fn paged_id_set(ids: impl IntoIterator<Item = i64>) -> PagedIds {
        let limits = PageLimits {
            resident: 1,
            total: 1 << 20,
        };
        let mut set = PagedIds::new(limits, "ids");
        for id in ids {
            assert_eq!(set.insert(id).unwrap(), Some(true));
        }
        set.seal().unwrap();
        set
    }

    fn new_fact(dispatch_id: i64, event_id: i64) -> NewFact<'static> {
        NewFact {
            row_id: dispatch_id,
            dispatch_id,
            event_id,
            start: 0,
            end: 0,
            tid: None,
            stack: None,
            correlation: Some(dispatch_id * 5),
            agent_id: dispatch_id % 4,
            pid: 7,
            category: "KERNEL_DISPATCH",
        }
    }

    /// Ranks number a set's ids from 0 in ascending order, whatever their pages.
    #[test]
    fn ranks_number_the_ids_in_order() {
        let ids: Vec<i64> = [-4097, -1, 0, 1, 63, 64, 65, 4095, 4096, 1 << 40]
            .into_iter()
            .chain((0..300).map(|i| 9000 + i * 7))
            .collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        // Inserted out of order.
        fn check<S: RankSet>(set: &S, sorted: &[i64]) {
            let mut ranks = Ranks::new(set).unwrap();
            assert_eq!(ranks.len, sorted.len() as i64);
            for (rank, id) in sorted.iter().enumerate() {
                assert_eq!(ranks.rank(*id).unwrap(), Some(rank as i64), "id {id}");
            }
            for absent in [-2, 2, 62, 9001, 1 << 41, i64::MIN, i64::MAX] {
                assert_eq!(ranks.rank(absent).unwrap(), None, "id {absent}");
            }
        }
        check(&id_set(ids.iter().rev().copied()), &sorted);
        // The same in pages on disk, one in memory while built (D140).
        check(&paged_id_set(ids.iter().rev().copied()), &sorted);
    }

    /// Facts are found by dispatch id over pages written out and read back, with their
    /// interned columns, however the ids scatter (they are kept by rank, D119); a kernel
    /// trace's fact wins over a counter row's of the same dispatch, whichever comes
    /// first; counter rows' facts are kept only when asked.
    #[test]
    fn facts_are_found_by_dispatch_and_the_kernel_trace_wins() {
        // Dispatch ids 1..3000 and 600 ids a page apart (one page each before D119: past
        // 256 pages such ids were kept in memory, not paged).
        let ids: Vec<i64> = (1..3000)
            .chain((0..600).map(|k| 1 << 30 | k << 12))
            .collect();
        let counted = id_set(ids.iter().copied());
        let mut f = Facts::new(&counted, 1, true).unwrap();
        // Made by counter rows when divisible by 3 (an odd event id), the others by the
        // kernel trace, in descending order.
        for &id in ids.iter().rev() {
            f.add(new_fact(id, id * 2 + i64::from(id % 3 == 0)), id % 3 == 0)
                .unwrap();
        }
        // Both for dispatches 10 and 2010: the trace's, before and after the counter
        // row's.
        for (traced, made) in [(10, 12), (2010, 2012)] {
            f.add(new_fact(traced, -1), true).unwrap();
            f.add(new_fact(made, -made), false).unwrap();
        }
        assert_eq!(
            f.by_rank.map.pages(),
            ids.len().div_ceil(crate::paged::SLOTS)
        );
        for &id in &ids {
            let got = f.get(id).unwrap().unwrap();
            let want = match id {
                12 | 2012 => -id,
                _ => id * 2 + i64::from(id % 3 == 0),
            };
            assert_eq!((got.dispatch_id, got.event_id), (id, want));
            assert_eq!(f.correlation_of(got), Some(id * 5));
            assert_eq!((f.agent(got), f.pid(got)), (id % 4, 7));
        }
        assert!(f.get(3000).unwrap().is_none() && f.get(0).unwrap().is_none());
        // A dispatch the description did not count has no place.
        assert!(f.add(new_fact(3001, 1), false).is_err());
        let counted = id_set([4, 5]);
        let mut f = Facts::new(&counted, 64, false).unwrap();
        f.add(new_fact(4, 8), true).unwrap();
        f.add(new_fact(5, 10), false).unwrap();
        assert!(f.get(4).unwrap().is_none());
        assert_eq!(f.get(5).unwrap().map(|x| x.event_id), Some(10));
    }
}

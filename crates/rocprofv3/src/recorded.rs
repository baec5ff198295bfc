//! The describing pass's read of a JSON object's API calls, made ahead on the helper
//! thread and replayed later (D139).
//!
//! The describing pass reads the API calls last, once the flow groups the other records
//! make exist, on one thread. But what that read hands its sink does not depend on the
//! describer: the API call records ask the describer nothing whose answer depends on what
//! it knows (`string`, `event` and `text` answer the same for every describer). So the
//! helper thread, once done with the kernel records, reads the API calls into a
//! [`Recorder`], which writes each call it receives to an anonymous temporary file; the
//! main thread then replays the calls into the describer, in the same order, instead of
//! parsing the records itself.
//!
//! A recording is only used whole: any call an API read does not make (a dispatch, an
//! agent, a lookup whose answer could differ) or a failed write spoils it, and the caller
//! then reads the API calls itself.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use rocpd_model::{Error, Result};

use crate::db::{
    Agents, AllocRow, CodeObjectRow, CopyRow, DispatchRow, EventRow, FoundDispatch,
    KernelSymbolRow, NodeRow, PmcRow, ProcessRow,
};
use crate::sink::{Deferred, RowSink, Texts};
use crate::CsvKind;

#[cfg(test)]
thread_local! {
    /// Recordings replayed on this thread, for the tests of when they are.
    pub(crate) static REPLAYS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The tags of the recorded calls.
const BEGIN_FILE: u8 = 1;
const NODE: u8 = 2;
const PROCESS: u8 = 3;
const THREAD: u8 = 4;
const EVENT: u8 = 5;
const REGION: u8 = 6;
const LATE: u8 = 7;
/// Written last: a recording without it did not read back whole.
const END: u8 = 8;

/// Distinct event categories a recording keeps; past them it is spoiled (the API kinds
/// rocprofv3 writes are a handful, a crafted file may give every record its own).
const MAX_CATEGORIES: usize = 1 << 12;

/// Every kind a section can have, for the file-begin call's byte.
const KINDS: [CsvKind; 9] = [
    CsvKind::AgentInfo,
    CsvKind::Api,
    CsvKind::KernelTrace,
    CsvKind::MemoryCopy,
    CsvKind::MemoryAllocation,
    CsvKind::ScratchMemory,
    CsvKind::CounterCollection,
    CsvKind::PcSampling,
    CsvKind::Stats,
];

/// A sink that records the calls of an API calls' read (see the module documentation).
pub(crate) struct Recorder {
    out: Option<BufWriter<File>>,
    /// Event categories and their indexes in the recording.
    categories: rocpd_model::hash::FastMap<String, usize>,
    /// The node and process rows of `metadata`, by their index in the recording.
    nodes: Vec<NodeRow>,
    processes: Vec<ProcessRow>,
    /// A call the recording cannot stand for was made, or a write failed (a cell: the
    /// lookups that spoil it take `&self`).
    spoiled: std::cell::Cell<bool>,
    /// Handed out if asked for, which spoils the recording.
    agents: Agents,
}

impl Recorder {
    /// A recorder writing to a new anonymous temporary file; `None` if none can be made.
    pub fn new() -> Option<Recorder> {
        let file = tempfile::tempfile().ok()?;
        Some(Recorder {
            out: Some(BufWriter::with_capacity(64 << 10, file)),
            categories: Default::default(),
            nodes: Vec::new(),
            processes: Vec::new(),
            spoiled: std::cell::Cell::new(false),
            agents: Agents::default(),
        })
    }

    fn put(&mut self, bytes: &[u8]) {
        if let Some(out) = self.out.as_mut() {
            if out.write_all(bytes).is_err() {
                self.spoiled.set(true);
            }
        }
    }

    fn put_i64(&mut self, v: i64) {
        self.put(&v.to_le_bytes());
    }

    fn put_opt(&mut self, v: Option<i64>) {
        match v {
            Some(v) => {
                self.put(&[1]);
                self.put_i64(v);
            }
            None => self.put(&[0]),
        }
    }

    fn put_index(&mut self, i: usize) {
        self.put_i64(i64::try_from(i).unwrap_or(i64::MAX));
    }

    fn spoil(&self) {
        self.spoiled.set(true);
    }

    /// Stops the read once the recording is spoiled: it will not be used.
    fn going(&self) -> Result<()> {
        if self.spoiled.get() {
            return Err(Error::Usage("a spoiled recording".into()));
        }
        Ok(())
    }

    /// The recording, to replay; `None` if it is spoiled.
    pub fn finish(mut self) -> Option<Recording> {
        self.put(&[END]);
        let out = self.out.take()?;
        if self.spoiled.get() {
            return None;
        }
        let mut file = out.into_inner().ok()?;
        file.seek(SeekFrom::Start(0)).ok()?;
        Some(Recording {
            input: BufReader::with_capacity(64 << 10, file),
            categories: by_index(self.categories),
            nodes: self.nodes,
            processes: self.processes,
        })
    }
}

/// The categories of a recording in the order of their indexes.
fn by_index(categories: rocpd_model::hash::FastMap<String, usize>) -> Vec<String> {
    let mut list: Vec<(usize, String)> = categories.into_iter().map(|(c, i)| (i, c)).collect();
    list.sort_unstable();
    list.into_iter().map(|(_, c)| c).collect()
}

/// The calls a [`Recorder`] received, to replay into another sink.
pub(crate) struct Recording {
    input: BufReader<File>,
    categories: Vec<String>,
    nodes: Vec<NodeRow>,
    processes: Vec<ProcessRow>,
}

/// A recording that does not read back as written: its temporary file failed.
fn lost(e: impl std::fmt::Display) -> Error {
    Error::Usage(format!(
        "the recorded API calls could not be read back: {e}"
    ))
}

impl Recording {
    fn byte(&mut self) -> Result<u8> {
        let mut b = [0u8; 1];
        self.input.read_exact(&mut b).map_err(lost)?;
        Ok(b[0])
    }

    fn i64(&mut self) -> Result<i64> {
        let mut b = [0u8; 8];
        self.input.read_exact(&mut b).map_err(lost)?;
        Ok(i64::from_le_bytes(b))
    }

    fn opt(&mut self) -> Result<Option<i64>> {
        match self.byte()? {
            0 => Ok(None),
            1 => self.i64().map(Some),
            _ => Err(lost("a bad option")),
        }
    }

    fn index(&mut self) -> Result<usize> {
        usize::try_from(self.i64()?).map_err(lost)
    }

    /// Makes every recorded call on `out`, in order; stops at the first error a call
    /// gives, as the read would have. A call's error is placed as the read places it
    /// (a taken id with none left names the record's place: here the file's API calls).
    ///
    /// A recording that fails to read back (its temporary file) stops the replay with an
    /// error that is not the input's, `out` half fed: the caller then leaves the object to
    /// the import, as for any failure not the input's.
    pub fn replay(mut self, path: &std::path::Path, out: &mut dyn RowSink) -> Result<()> {
        #[cfg(test)]
        REPLAYS.with(|n| n.set(n.get() + 1));
        let placed = |e: Error| crate::db::placed(e, path, "the API calls");
        loop {
            match self.byte()? {
                END => return Ok(()),
                BEGIN_FILE => {
                    let index = self.opt()?.and_then(|i| usize::try_from(i).ok());
                    let kind = KINDS
                        .get(self.index()?)
                        .copied()
                        .ok_or_else(|| lost("a bad kind"))?;
                    out.begin_file(index, kind)?;
                }
                NODE => {
                    let i = self.index()?;
                    let node = self.nodes.get(i).cloned();
                    out.set_node(node.ok_or_else(|| lost("a bad node"))?);
                }
                PROCESS => {
                    let pid = self.i64()?;
                    let i = self.index()?;
                    let row = self.processes.get(i).cloned();
                    out.set_process(pid, row.ok_or_else(|| lost("a bad process"))?);
                }
                THREAD => {
                    let pid = self.i64()?;
                    let tid = self.opt()?;
                    out.thread(pid, tid);
                }
                EVENT => {
                    let category = self.index()?;
                    let stack_id = self.opt()?;
                    let parent_stack_id = self.opt()?;
                    let correlation_id = self.opt()?;
                    let category = self
                        .categories
                        .get(category)
                        .ok_or_else(|| lost("a bad category"))?;
                    out.event(&EventRow {
                        category,
                        stack_id,
                        parent_stack_id,
                        correlation_id,
                        extdata: None,
                    })
                    .map_err(placed)?;
                }
                REGION => {
                    let [id, pid, tid, start, end] = [(); 5].map(|_| self.i64());
                    out.region(id?, pid?, tid?, start?, end?, 0, 0)
                        .map_err(placed)?;
                }
                LATE => {
                    let n = self.index()?;
                    let ordinals = (0..n).map(|_| self.index()).collect::<Result<Vec<_>>>()?;
                    out.late_sections(&ordinals);
                }
                _ => return Err(lost("a bad tag")),
            }
        }
    }
}

/// The calls an API calls' read makes are recorded; every other spoils the recording.
impl RowSink for Recorder {
    fn agents(&mut self) -> &mut Agents {
        self.spoil();
        &mut self.agents
    }
    fn set_node(&mut self, node: NodeRow) {
        self.put(&[NODE]);
        self.put_index(self.nodes.len());
        self.nodes.push(node);
    }
    fn thread(&mut self, pid: i64, tid: Option<i64>) {
        self.put(&[THREAD]);
        self.put_i64(pid);
        self.put_opt(tid);
    }
    fn string(&mut self, _s: &str) -> Result<i64> {
        // As the describer answers.
        Ok(0)
    }
    fn event(&mut self, e: &EventRow<'_>) -> Result<i64> {
        self.going()?;
        if e.extdata.is_some() {
            // The describer's `text` gives none, so neither does the read; only another
            // sink's answer would.
            self.spoil();
        }
        let category = match self.categories.get(e.category) {
            Some(&i) => i,
            None if self.categories.len() >= MAX_CATEGORIES => {
                self.spoil();
                0
            }
            None => {
                let i = self.categories.len();
                self.categories.insert(e.category.to_string(), i);
                i
            }
        };
        self.put(&[EVENT]);
        self.put_index(category);
        self.put_opt(e.stack_id);
        self.put_opt(e.parent_stack_id);
        self.put_opt(e.correlation_id);
        // As the describer answers.
        Ok(0)
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
        self.going()?;
        if (name_id, event_id) != (0, 0) {
            self.spoil();
        }
        self.put(&[REGION]);
        for v in [id, pid, tid, start, end] {
            self.put_i64(v);
        }
        Ok(())
    }
    fn dispatch(&mut self, _d: &DispatchRow, _event_id: i64) -> Result<()> {
        self.spoil();
        Ok(())
    }
    fn copy(&mut self, _c: &CopyRow, _event_id: i64) -> Result<()> {
        self.spoil();
        Ok(())
    }
    fn alloc(&mut self, _a: &AllocRow, _event_id: i64) -> Result<()> {
        self.spoil();
        Ok(())
    }
    fn kernel_symbol(&mut self, _pid: i64, _k: &KernelSymbolRow) -> Result<()> {
        self.spoil();
        Ok(())
    }
    fn has_kernel(&self, _id: i64) -> bool {
        self.spoil();
        false
    }
    fn pmc(&mut self, _pid: i64, _p: &PmcRow) -> Result<()> {
        self.spoil();
        Ok(())
    }
    fn pmc_event(&mut self, _event_id: i64, _pmc_id: i64, _value: f64) -> Result<()> {
        self.spoil();
        Ok(())
    }
    fn find_dispatch(&mut self, _dispatch_id: i64) -> Result<Option<FoundDispatch>> {
        self.spoil();
        Ok(None)
    }
    fn set_dispatch_tid(&mut self, _dispatch_id: i64, _pid: i64, _tid: i64) -> Result<()> {
        self.spoil();
        Ok(())
    }
    fn untimed_event(&mut self, _dispatch_id: i64) -> Result<Option<i64>> {
        self.spoil();
        Ok(None)
    }
    fn remember_untimed(&mut self, _dispatch_id: i64, _event_id: i64) -> Result<()> {
        self.spoil();
        Ok(())
    }
    fn set_process(&mut self, pid: i64, row: ProcessRow) {
        self.put(&[PROCESS]);
        self.put_i64(pid);
        self.put_index(self.processes.len());
        self.processes.push(row);
    }
    fn code_object(&mut self, _pid: i64, _c: &CodeObjectRow) -> Result<()> {
        self.spoil();
        Ok(())
    }
    fn completes(
        &mut self,
        _dispatch_id: i64,
        _found: &FoundDispatch,
        _internal: Option<i64>,
    ) -> bool {
        self.spoil();
        false
    }
    fn update_dispatch(
        &mut self,
        _d: &DispatchRow,
        _internal: Option<i64>,
        _external: Option<i64>,
    ) -> Result<()> {
        self.spoil();
        Ok(())
    }
    fn has_pmc(&self, _id: i64) -> bool {
        self.spoil();
        false
    }
    fn put_text(&mut self, _which: Texts, _id: i64, _text: &str) -> Result<()> {
        self.spoil();
        Ok(())
    }
    fn text(&mut self, _which: Texts, _id: i64) -> Result<Option<String>> {
        // As the describer answers.
        Ok(None)
    }
    fn defer(&mut self, _section: &str, _place: &str, _json: &str) -> Result<()> {
        self.spoil();
        Ok(())
    }
    fn deferred(&mut self, _after: i64, _limit: usize) -> Result<Vec<Deferred>> {
        // Every read asks at its end; nothing was deferred (that spoils), and the
        // describing pass holds none.
        Ok(Vec::new())
    }
    fn begin_file(&mut self, index: Option<usize>, kind: CsvKind) -> Result<()> {
        let Some(k) = KINDS.iter().position(|&x| x == kind) else {
            self.spoil();
            return Ok(());
        };
        self.put(&[BEGIN_FILE]);
        self.put_opt(index.map(|i| i64::try_from(i).unwrap_or(i64::MAX)));
        self.put_index(k);
        Ok(())
    }
    fn late_sections(&mut self, ordinals: &[usize]) {
        self.put(&[LATE]);
        self.put_index(ordinals.len());
        for &o in ordinals {
            self.put_index(o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(r: Recording) -> Vec<u8> {
        let mut input = r.input;
        let mut out = Vec::new();
        input.read_to_end(&mut out).unwrap();
        out
    }

    /// Calls of every kind an API read makes, through a recording and replayed into a
    /// second recorder, record alike; a call an API read does not make spoils it.
    #[test]
    fn a_recording_replays_its_calls_and_other_calls_spoil_it() {
        let calls = |r: &mut dyn RowSink| {
            r.set_node(NodeRow::from_hostname(Some("node-7")));
            r.set_process(42, ProcessRow::default());
            r.begin_file(Some(3), CsvKind::Api).unwrap();
            r.begin_file(None, CsvKind::Stats).unwrap();
            for i in 0..1000i64 {
                let category = ["HIP_RUNTIME_API", "MARKER_CORE_API"][(i % 2) as usize];
                r.event(&EventRow {
                    category,
                    stack_id: Some(i),
                    parent_stack_id: (i % 3 == 0).then_some(i - 1),
                    correlation_id: (i % 5 == 0).then_some(-i),
                    extdata: None,
                })
                .unwrap();
                r.region(i, 42, 43, i * 10, i64::MAX - i, 0, 0).unwrap();
                r.thread(42, (i % 7 != 0).then_some(i));
            }
            r.late_sections(&[1, 5, 9]);
        };
        let mut first = Recorder::new().unwrap();
        calls(&mut first);
        let mut second = Recorder::new().unwrap();
        let path = std::path::Path::new("x.json");
        first.finish().unwrap().replay(path, &mut second).unwrap();
        let mut third = Recorder::new().unwrap();
        calls(&mut third);
        let (a, b) = (
            bytes(second.finish().unwrap()),
            bytes(third.finish().unwrap()),
        );
        assert!(a.len() > 50_000);
        assert_eq!(a, b);

        let spoilers: [&dyn Fn(&mut Recorder); 6] = [
            &|r| r.dispatch(&DispatchRow::default(), 0).unwrap(),
            &|r| {
                r.agents();
            },
            &|r| {
                r.has_kernel(1);
            },
            &|r| r.defer("x", "y", "{}").unwrap(),
            &|r| r.region(1, 1, 1, 1, 1, 7, 0).unwrap(),
            &|r| {
                r.event(&EventRow {
                    category: "MARKER_CORE_API",
                    stack_id: None,
                    parent_stack_id: None,
                    correlation_id: None,
                    extdata: Some("{}".into()),
                })
                .unwrap();
            },
        ];
        for spoil in spoilers {
            let mut r = Recorder::new().unwrap();
            calls(&mut r);
            spoil(&mut r);
            assert!(r.finish().is_none());
        }
        // Once spoiled, the read is stopped.
        let mut r = Recorder::new().unwrap();
        r.agents();
        assert!(r.region(1, 1, 1, 1, 1, 0, 0).is_err());

        // A recording cut short (its end lost) fails to replay, with an error not the
        // input's.
        let mut r = Recorder::new().unwrap();
        calls(&mut r);
        let cut = r.finish().unwrap();
        let len = cut.input.get_ref().metadata().unwrap().len();
        cut.input.get_ref().set_len(len - 1).unwrap();
        let mut sink = Recorder::new().unwrap();
        let e = cut.replay(path, &mut sink).unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{e}");

        // Many distinct categories spoil a recording.
        let mut r = Recorder::new().unwrap();
        fn event(category: &str) -> EventRow<'_> {
            EventRow {
                category,
                stack_id: None,
                parent_stack_id: None,
                correlation_id: None,
                extdata: None,
            }
        }
        let mut stopped = false;
        for i in 0..=MAX_CATEGORIES {
            stopped |= r.event(&event(&format!("KIND_{i}"))).is_err();
        }
        assert!(r.event(&event("KIND_0")).is_err() || stopped);
        assert!(r.finish().is_none());
    }
}

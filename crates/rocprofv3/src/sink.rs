//! Where the importers' rows go: [`RowSink`], written once by the CSV row parsers and the
//! JSON record readers, and implemented twice, by the database writer
//! ([`crate::db::Out`]) and by the direct reader's passes (`crate::direct`), so both see
//! the same rows, ids and errors.
//!
//! A rule the parsers keep: a row or record checks every field it reads before its first
//! lookup here (`find_dispatch`, `completes`, `untimed_event`, `has_kernel`, `has_pmc`,
//! `text`), and no answer of a lookup turns into an input error. The two sinks answer
//! some lookups differently when the direct reader has refused a run (a page budget
//! passed), and the direct reader finds the import's first error by reading the input
//! again through its own sink (D115, D116): that is its error only while the answers
//! cannot decide which error comes first.

use rocpd_model::Result;

use crate::db::{
    Agents, AllocRow, CodeObjectRow, CopyRow, DispatchRow, EventRow, FoundDispatch,
    KernelSymbolRow, NodeRow, Out, PmcRow, ProcessRow,
};
use crate::CsvKind;

/// The two text tables of a rocprofv3 JSON object's `strings`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Texts {
    /// `marker_api`: marker messages by correlation id.
    Marker,
    /// `correlation_id.external`: region names by external correlation id.
    External,
}

/// A JSON record kept until the tables it needs are read.
#[derive(Debug, Clone)]
pub(crate) struct Deferred {
    pub seq: i64,
    pub section: String,
    pub place: String,
    pub json: String,
}

/// The rows of one run, as the importer makes them. The methods mirror [`Out`]'s: see
/// there for what each writes.
pub(crate) trait RowSink {
    fn agents(&mut self) -> &mut Agents;
    fn set_node(&mut self, node: NodeRow);
    fn thread(&mut self, pid: i64, tid: Option<i64>);
    fn string(&mut self, s: &str) -> Result<i64>;
    fn event(&mut self, e: &EventRow<'_>) -> Result<i64>;
    #[allow(clippy::too_many_arguments)]
    fn region(
        &mut self,
        id: i64,
        pid: i64,
        tid: i64,
        start: i64,
        end: i64,
        name_id: i64,
        event_id: i64,
    ) -> Result<()>;
    fn dispatch(&mut self, d: &DispatchRow, event_id: i64) -> Result<()>;
    fn copy(&mut self, c: &CopyRow, event_id: i64) -> Result<()>;
    fn alloc(&mut self, a: &AllocRow, event_id: i64) -> Result<()>;
    fn kernel_symbol(&mut self, pid: i64, k: &KernelSymbolRow) -> Result<()>;
    fn has_kernel(&self, id: i64) -> bool;

    // Counter rows look up, create or update the dispatch they belong to.
    fn pmc(&mut self, pid: i64, p: &PmcRow) -> Result<()>;
    fn pmc_event(&mut self, event_id: i64, pmc_id: i64, value: f64) -> Result<()>;
    fn find_dispatch(&mut self, dispatch_id: i64) -> Result<Option<FoundDispatch>>;
    fn set_dispatch_tid(&mut self, dispatch_id: i64, pid: i64, tid: i64) -> Result<()>;
    fn untimed_event(&mut self, dispatch_id: i64) -> Result<Option<i64>>;
    fn remember_untimed(&mut self, dispatch_id: i64, event_id: i64) -> Result<()>;

    // What only JSON objects give: process details, code objects, dispatches counter
    // records made before their kernel record, texts and deferred records.
    fn set_process(&mut self, pid: i64, row: ProcessRow);
    fn code_object(&mut self, pid: i64, c: &CodeObjectRow) -> Result<()>;
    /// Whether a kernel record (`internal`: its correlation id) completes `found`, the
    /// dispatch a counter record made: the dispatch's event has that correlation id.
    fn completes(
        &mut self,
        _dispatch_id: i64,
        found: &FoundDispatch,
        internal: Option<i64>,
    ) -> bool {
        found.event_id.is_some() && found.stack_id == internal
    }
    /// The kernel record (`internal` and `external`: its correlation ids) of a dispatch a
    /// counter record made: the row takes its columns and keeps the counter record's
    /// event.
    fn update_dispatch(
        &mut self,
        d: &DispatchRow,
        internal: Option<i64>,
        external: Option<i64>,
    ) -> Result<()>;
    fn has_pmc(&self, id: i64) -> bool;
    fn put_text(&mut self, which: Texts, id: i64, text: &str) -> Result<()>;
    fn text(&mut self, which: Texts, id: i64) -> Result<Option<String>>;
    fn defer(&mut self, section: &str, place: &str, json: &str) -> Result<()>;
    fn deferred(&mut self, after: i64, limit: usize) -> Result<Vec<Deferred>>;

    /// Called before the rows of each file: `index` is the file's in the plan (`None` for
    /// a file the plan does not list), `kind` its kind.
    fn begin_file(&mut self, _index: Option<usize>, _kind: CsvKind) -> Result<()> {
        Ok(())
    }

    /// The record sections of a JSON object (by their place in it) that came before the
    /// tables they need, read after every other section (D108).
    fn late_sections(&mut self, _ordinals: &[usize]) {}
}

impl RowSink for Out<'_> {
    fn agents(&mut self) -> &mut Agents {
        &mut self.agents
    }
    fn set_node(&mut self, node: NodeRow) {
        Out::set_node(self, node)
    }
    fn thread(&mut self, pid: i64, tid: Option<i64>) {
        Out::thread(self, pid, tid)
    }
    fn string(&mut self, s: &str) -> Result<i64> {
        Out::string(self, s)
    }
    fn event(&mut self, e: &EventRow<'_>) -> Result<i64> {
        Out::event(self, e)
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
        Out::region(self, id, pid, tid, start, end, name_id, event_id)
    }
    fn dispatch(&mut self, d: &DispatchRow, event_id: i64) -> Result<()> {
        Out::dispatch(self, d, event_id)
    }
    fn copy(&mut self, c: &CopyRow, event_id: i64) -> Result<()> {
        Out::copy(self, c, event_id)
    }
    fn alloc(&mut self, a: &AllocRow, event_id: i64) -> Result<()> {
        Out::alloc(self, a, event_id)
    }
    fn kernel_symbol(&mut self, pid: i64, k: &KernelSymbolRow) -> Result<()> {
        Out::kernel_symbol(self, pid, k)
    }
    fn has_kernel(&self, id: i64) -> bool {
        Out::has_kernel(self, id)
    }
    fn pmc(&mut self, pid: i64, p: &PmcRow) -> Result<()> {
        Out::pmc(self, pid, p)
    }
    fn pmc_event(&mut self, event_id: i64, pmc_id: i64, value: f64) -> Result<()> {
        Out::pmc_event(self, event_id, pmc_id, value)
    }
    fn find_dispatch(&mut self, dispatch_id: i64) -> Result<Option<FoundDispatch>> {
        Out::find_dispatch(self, dispatch_id)
    }
    fn set_dispatch_tid(&mut self, dispatch_id: i64, pid: i64, tid: i64) -> Result<()> {
        Out::set_dispatch_tid(self, dispatch_id, pid, tid)
    }
    fn untimed_event(&mut self, dispatch_id: i64) -> Result<Option<i64>> {
        Out::untimed_event(self, dispatch_id)
    }
    fn remember_untimed(&mut self, dispatch_id: i64, event_id: i64) -> Result<()> {
        Out::remember_untimed(self, dispatch_id, event_id)
    }
    fn set_process(&mut self, pid: i64, row: ProcessRow) {
        Out::set_process(self, pid, row)
    }
    fn code_object(&mut self, pid: i64, c: &CodeObjectRow) -> Result<()> {
        Out::code_object(self, pid, c)
    }
    fn update_dispatch(&mut self, d: &DispatchRow, _: Option<i64>, _: Option<i64>) -> Result<()> {
        Out::update_dispatch(self, d)
    }
    fn has_pmc(&self, id: i64) -> bool {
        Out::has_pmc(self, id)
    }
    fn put_text(&mut self, which: Texts, id: i64, text: &str) -> Result<()> {
        Out::put_text(self, which, id, text)
    }
    fn text(&mut self, which: Texts, id: i64) -> Result<Option<String>> {
        Out::text(self, which, id)
    }
    fn defer(&mut self, section: &str, place: &str, json: &str) -> Result<()> {
        Out::defer(self, section, place, json)
    }
    fn deferred(&mut self, after: i64, limit: usize) -> Result<Vec<Deferred>> {
        Out::deferred(self, after, limit)
    }
}

//! Where the CSV importer's rows go: [`RowSink`], written once by the row parsers and
//! implemented twice, by the database writer ([`crate::db::Out`]) and by the direct
//! reader's passes (`crate::direct`), so both see the same rows, ids and errors.

use rocpd_model::Result;

use crate::db::{
    Agents, AllocRow, CopyRow, DispatchRow, EventRow, FoundDispatch, KernelSymbolRow, NodeRow, Out,
    PmcRow,
};
use crate::CsvKind;

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

    /// Called before the rows of each file: `index` is the file's in the plan (`None` for
    /// a file the plan does not list), `kind` its kind.
    fn begin_file(&mut self, _index: Option<usize>, _kind: CsvKind) {}
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
}

//! Where the CSV importer's rows go: [`RowSink`], written once by the row parsers and
//! implemented twice, by the database writer ([`crate::db::Out`]) and by the direct
//! reader's passes (`crate::direct`), so both see the same rows, ids and errors.

use rocpd_model::Result;

use crate::db::{
    Agents, AllocRow, CopyRow, DispatchRow, EventRow, FoundDispatch, KernelSymbolRow, NodeRow, Out,
    PmcRow,
};

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

    // Counter rows update or look up dispatches already written: only the database can
    // take them (the direct reader leaves runs with counter files to the import), so a
    // sink without a database refuses them.
    fn pmc(&mut self, _pid: i64, _p: &PmcRow) -> Result<()> {
        Err(counter_rows())
    }
    fn pmc_event(&mut self, _event_id: i64, _pmc_id: i64, _value: f64) -> Result<()> {
        Err(counter_rows())
    }
    fn find_dispatch(&self, _dispatch_id: i64) -> Result<Option<FoundDispatch>> {
        Err(counter_rows())
    }
    fn set_dispatch_tid(&mut self, _dispatch_id: i64, _pid: i64, _tid: i64) -> Result<()> {
        Err(counter_rows())
    }
    fn untimed_event(&self, _dispatch_id: i64) -> Result<Option<i64>> {
        Err(counter_rows())
    }
    fn remember_untimed(&mut self, _dispatch_id: i64, _event_id: i64) -> Result<()> {
        Err(counter_rows())
    }
}

/// The error of counter rows reaching a sink without a database (a bug, not bad input).
fn counter_rows() -> rocpd_model::Error {
    rocpd_model::Error::Usage("internal: counter rows reached a sink without a database".into())
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
    fn find_dispatch(&self, dispatch_id: i64) -> Result<Option<FoundDispatch>> {
        Out::find_dispatch(self, dispatch_id)
    }
    fn set_dispatch_tid(&mut self, dispatch_id: i64, pid: i64, tid: i64) -> Result<()> {
        Out::set_dispatch_tid(self, dispatch_id, pid, tid)
    }
    fn untimed_event(&self, dispatch_id: i64) -> Result<Option<i64>> {
        Out::untimed_event(self, dispatch_id)
    }
    fn remember_untimed(&mut self, dispatch_id: i64, event_id: i64) -> Result<()> {
        Out::remember_untimed(self, dispatch_id, event_id)
    }
}

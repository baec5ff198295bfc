//! `counter_collection.csv`: one row per (kernel dispatch, counter), the values of the
//! counter's records (dimension instances) summed, with the dispatch's kernel columns.
//!
//! A counter value streams at the time of its dispatch, in a table of its own, so the
//! values of one dispatch and the dispatch itself may arrive in either order and, when
//! many events start at the same nanosecond, in consecutive chunks. Values are therefore
//! summed in a pending map keyed by time, and the dispatches' columns are kept for the
//! same while: every row of a later chunk starts at or after the latest start of the
//! current one, so at the end of a chunk everything that started before that latest start
//! is complete and is written, in time order. What stays pending is the events of the
//! last start time of a chunk: bounded by the trace's concurrency, not its length.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use rocpd_model::hash::{FastMap, FastSet};
use rocpd_model::{Catalog, CatalogIndex, Error, Result};

use crate::text::{shortest, Line};

/// (start, end descending, source, dispatch id, counter id): the file's row order.
type Key = (i64, Reverse<i64>, u32, i64, i64);

/// What a counter row needs of its kernel dispatch.
#[derive(Debug, Clone)]
pub(crate) struct Dispatch {
    pub start: i64,
    pub row_id: i64,
    pub end: i64,
    /// The row id of another dispatch with the same id and times, if one came: counter
    /// values of either cannot be told apart (an error only if a counter value asks).
    pub twin: Option<i64>,
    pub queue_id: Option<i64>,
    pub kernel_id: i64,
    pub kernel_name: Arc<str>,
    pub grid: [Option<i64>; 3],
    pub workgroup: [Option<i64>; 3],
    pub lds: Option<i64>,
    pub scratch: Option<i64>,
}

/// One (dispatch, counter) being summed.
#[derive(Debug)]
struct Sum {
    value: f64,
    rows: u64,
    agent: Option<i64>,
    pid: Option<i64>,
    tid: Option<i64>,
    correlation: Option<i64>,
    name: Arc<str>,
}

/// One counter value row of the stream.
pub(crate) struct Value<'a> {
    pub source: u32,
    pub start: i64,
    pub end: i64,
    pub dispatch: i64,
    pub pmc_id: i64,
    pub value: Option<f64>,
    pub agent: Option<i64>,
    pub pid: Option<i64>,
    pub tid: Option<i64>,
    pub correlation: Option<i64>,
    pub name: Option<&'a str>,
}

/// The pending sums and the dispatches they may still need.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Whether the inputs define any counter (otherwise dispatches are not kept).
    pub enabled: bool,
    /// By (source, dispatch id, start, end): a counter value has its dispatch's times, so
    /// two dispatches given one id (a crafted or merged input) keep their own values.
    dispatches: FastMap<(u32, i64, i64, i64), Dispatch>,
    pending: BTreeMap<Key, Sum>,
    /// Kernel and counter names, each kept once: a dispatch or sum takes a reference
    /// rather than a copy, so rows allocate no name. Bounded by the distinct names.
    names: FastSet<Arc<str>>,
}

/// `name` from `names`, added the first time it is met.
fn intern(names: &mut FastSet<Arc<str>>, name: &str) -> Arc<str> {
    if let Some(n) = names.get(name) {
        return n.clone();
    }
    let n: Arc<str> = Arc::from(name);
    names.insert(n.clone());
    n
}

/// A product of sizes in 128 bits: three 64-bit factors may still not fit.
fn product(xs: &[Option<i64>; 3]) -> Option<Option<i128>> {
    let mut p: i128 = 1;
    for x in xs {
        match x {
            Some(x) => p = p.checked_mul(*x as i128)?,
            None => return Some(None),
        }
    }
    Some(Some(p))
}

impl Counters {
    /// `name`, shared with every earlier use of it.
    pub fn name(&mut self, name: &str) -> Arc<str> {
        intern(&mut self.names, name)
    }

    /// Remembers a dispatch that counter rows may refer to. A second dispatch with the
    /// same id and times is noted on the first ([`Dispatch::twin`]).
    pub fn dispatch(&mut self, source: u32, dispatch_id: i64, d: Dispatch) {
        if self.enabled {
            let key = (source, dispatch_id, d.start, d.end);
            match self.dispatches.get_mut(&key) {
                Some(first) if first.row_id != d.row_id => {
                    first.twin.get_or_insert(d.row_id);
                }
                _ => {
                    self.dispatches.insert(key, d);
                }
            }
        }
    }

    /// Adds one counter value.
    pub fn add(&mut self, v: Value<'_>) {
        let key = (v.start, Reverse(v.end), v.source, v.dispatch, v.pmc_id);
        let names = &mut self.names;
        let s = self.pending.entry(key).or_insert_with(|| Sum {
            value: 0.0,
            rows: 0,
            agent: v.agent,
            pid: v.pid,
            tid: v.tid,
            correlation: v.correlation,
            name: intern(names, v.name.unwrap_or("")),
        });
        s.value += v.value.unwrap_or(0.0);
        s.rows += 1;
    }

    /// Writes every sum that started before `bound` (all with `None`) through `emit` (the
    /// line, and the number of counter values it sums), in time order, and forgets the
    /// dispatches that started before it.
    pub fn flush(
        &mut self,
        bound: Option<i64>,
        catalog: &Catalog,
        index: &CatalogIndex,
        labels: &dyn Fn(u32, Option<i64>, &mut Line),
        line: &mut Line,
        emit: &mut dyn FnMut(&[u8], u64) -> Result<()>,
    ) -> Result<()> {
        let done = match bound {
            None => std::mem::take(&mut self.pending),
            Some(b) => {
                let later = self
                    .pending
                    .split_off(&(b, Reverse(i64::MAX), 0, i64::MIN, i64::MIN));
                std::mem::replace(&mut self.pending, later)
            }
        };
        for ((start, Reverse(end), source, dispatch_id, _), s) in done {
            let d = self.dispatches.get(&(source, dispatch_id, start, end));
            if let Some((d, twin)) = d.and_then(|d| d.twin.map(|t| (d, t))) {
                return Err(Error::input(
                    &catalog.sources[source as usize].path,
                    format!("kernel dispatch row ids {} and {twin}", d.row_id),
                    format!(
                        "two dispatches with dispatch id {dispatch_id} and the same start and end: counter_collection.csv cannot tell their counter values apart"
                    ),
                ));
            }
            let symbol = d
                .and_then(|d| index.kernel_symbol(source, d.kernel_id))
                .map(|i| &catalog.kernel_symbols[i]);
            line.start();
            line.text(&catalog.sources[source as usize].guid);
            line.int(s.correlation.unwrap_or(0));
            line.int(dispatch_id);
            labels(source, s.agent, line);
            line.opt_int(d.and_then(|d| d.queue_id));
            line.opt_int(s.pid);
            line.opt_int(s.tid);
            let sizes = |d: &Dispatch, xs: &[Option<i64>; 3], what: &str, line: &mut Line| {
                match product(xs) {
                    Some(Some(p)) => line.int(p),
                    Some(None) => line.empty(),
                    None => {
                        return Err(Error::input(
                            &catalog.sources[source as usize].path,
                            format!("kernel dispatch row id {}", d.row_id),
                            format!(
                                "the {what} size {} does not fit in 128 bits",
                                xs.map(|x| x.unwrap_or(0).to_string()).join(" x ")
                            ),
                        ));
                    }
                }
                Ok(())
            };
            match d {
                Some(d) => {
                    sizes(d, &d.grid, "grid", line)?;
                    line.int(d.kernel_id);
                    line.text(&d.kernel_name);
                    sizes(d, &d.workgroup, "workgroup", line)?;
                    line.opt_int(d.lds);
                    line.opt_int(d.scratch);
                }
                None => {
                    // The dispatch was left out (a filter on kernels): its columns are empty.
                    line.empty();
                    line.empty();
                    line.text("");
                    line.empty();
                    line.empty();
                    line.empty();
                }
            }
            line.opt_int(symbol.and_then(|k| k.arch_vgpr_count));
            line.opt_int(symbol.and_then(|k| k.accum_vgpr_count));
            line.opt_int(symbol.and_then(|k| k.sgpr_count));
            line.text(&s.name);
            line.raw(&shortest(s.value));
            line.int(start);
            line.int(end);
            emit(line.finish(), s.rows)?;
        }
        match bound {
            None => self.dispatches.clear(),
            Some(b) => self.dispatches.retain(|_, d| d.start >= b),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_multiply_without_overflow() {
        assert_eq!(product(&[Some(2), Some(3), Some(4)]), Some(Some(24)));
        assert_eq!(product(&[Some(2), None, Some(4)]), Some(None));
        assert_eq!(
            product(&[Some(i64::MAX), Some(i64::MAX), Some(1)]),
            Some(Some(i64::MAX as i128 * i64::MAX as i128))
        );
        assert_eq!(product(&[Some(i64::MAX), Some(i64::MAX), Some(4)]), None);
    }
}

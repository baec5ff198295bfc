//! The time window (`--start`, `--end`, `--inclusive`, `--keep-launches`).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use arrow_array::Array;
use rocpd_model::hash::FastMap;
use rocpd_model::{col, Catalog, EventBatch, Result, Table};
use rocpd_pipeline::{Chunk, Stage, TableCounts};

use crate::flows::{self, Group, GroupColumns};

/// Keeps the events in `[start, end]` (ns).
///
/// With `fully_inside` (rocpd's `--inclusive true`, its default) an event is kept only if
/// it lies wholly in the window; otherwise every event that overlaps the window is kept.
/// With `keep_groups`, an API call and the kernels and copies it launched are kept or
/// dropped together: the whole group is kept when its time span meets the window, so a
/// window never shows a kernel without its launch or the reverse.
#[derive(Debug)]
pub struct Window {
    start: i64,
    end: i64,
    fully_inside: bool,
    keep_groups: bool,
    dropped: TableCounts,
    flows_cut: u64,
    /// With `keep_groups`: whether each kernel dispatch of the chunk being decided was
    /// kept, by (source, event id). Its counter values share its times and so its chunk,
    /// and follow it: a dispatch kept for its launch keeps them too.
    dispatches: FastMap<(u32, i64), bool>,
}

impl Window {
    /// A window over `[start, end]`.
    pub fn new(start: i64, end: i64, fully_inside: bool, keep_groups: bool) -> Self {
        Window {
            start,
            end,
            fully_inside,
            keep_groups,
            dropped: TableCounts::new(),
            flows_cut: 0,
            dispatches: FastMap::default(),
        }
    }

    /// Starts a chunk: the dispatches of the last one are no longer met.
    pub(crate) fn start_chunk(&mut self) {
        self.dispatches.clear();
    }

    /// The decisions for the rows of `b` (and which kept rows lose their flow markers),
    /// `group_of(r)` giving row `r`'s flow group, or `None` when the row is to be seen
    /// outside any. Kernel dispatches are noted, counter values follow theirs (with
    /// `keep_groups`); decide a chunk's dispatch batches before its counter batches.
    pub(crate) fn decide_batch(
        &mut self,
        b: &EventBatch,
        rows: impl Iterator<Item = usize>,
        group_of: impl Fn(usize) -> Option<crate::flows::Group>,
        mut out: impl FnMut(usize, bool, bool),
    ) {
        let starts = b.batch.column(col::START).as_primitive::<Int64Type>();
        let ends = b.batch.column(col::END).as_primitive::<Int64Type>();
        let follow = self.keep_groups && matches!(b.table, Table::KernelDispatch | Table::PmcValue);
        let keys = follow.then(|| {
            let sources = b.batch.column(col::SOURCE).as_primitive::<UInt32Type>();
            let events = b
                .batch
                .column(b.table.column_index("event_id"))
                .as_primitive::<Int64Type>();
            (sources, events)
        });
        let key =
            |r: usize| keys.and_then(|(s, e)| (!e.is_null(r)).then(|| (s.value(r), e.value(r))));
        for r in rows {
            let key = key(r);
            let followed = key
                .filter(|_| b.table == Table::PmcValue)
                .and_then(|k| self.dispatches.get(&k).copied());
            let (k, c) = match followed {
                Some(k) => (k, false),
                None => self.decide(starts.value(r), ends.value(r), group_of(r)),
            };
            if let Some(key) = key.filter(|_| b.table == Table::KernelDispatch) {
                self.dispatches.insert(key, k);
            }
            out(r, k, c);
        }
    }

    fn keeps(&self, s: i64, e: i64) -> bool {
        if self.fully_inside {
            s >= self.start && e <= self.end
        } else {
            s <= self.end && e >= self.start
        }
    }

    /// Whether a row `[s, e]` in flow group `group` is kept, and whether a kept row
    /// loses its flow markers (its group is not kept whole).
    pub(crate) fn decide(&self, s: i64, e: i64, group: Option<Group>) -> (bool, bool) {
        match group {
            Some(g) if self.keep_groups => {
                (g.first_start <= self.end && g.last_end >= self.start, false)
            }
            Some(g) => {
                let row = self.keeps(s, e);
                // Every member of the group is kept iff the extreme members are.
                let all = if self.fully_inside {
                    g.first_start >= self.start && g.last_end <= self.end
                } else {
                    g.last_start <= self.end && g.first_end >= self.start
                };
                (row, row && !all)
            }
            None => (self.keeps(s, e), false),
        }
    }

    /// Counts `removed` rows of `table` dropped, and `cut` rows that lost flow markers.
    pub(crate) fn count(&mut self, table: &'static str, removed: u64, cut: u64) {
        if removed > 0 {
            *self.dropped.entry(table).or_default() += removed;
        }
        self.flows_cut += cut;
    }
}

impl Stage for Window {
    /// With `keep_groups`, counter values follow their dispatches' decisions: a run that
    /// wants counter values must read the dispatches through the window too.
    fn needs_every_table(&self) -> bool {
        self.keep_groups
    }

    fn projection(&self) -> rocpd_model::Projection {
        // Rules and windows read names, ids and times, never the JSON text columns.
        rocpd_model::Projection::without_json_text()
    }

    fn name(&self) -> String {
        format!(
            "window [{}, {}] ns ({})",
            self.start,
            self.end,
            if self.fully_inside {
                "events wholly inside"
            } else {
                "events overlapping"
            }
        )
    }

    fn begin(&mut self, _catalog: &Arc<Catalog>) -> Result<()> {
        Ok(())
    }

    fn apply(&mut self, chunk: Chunk) -> Result<Chunk> {
        self.start_chunk();
        let mut kept: Vec<Option<EventBatch>> = vec![None; chunk.batches.len()];
        for i in crate::filter::Filter::order(&chunk) {
            let b = &chunk.batches[i];
            let groups = GroupColumns::new(b);
            let n = b.batch.num_rows();
            let mut keep = Vec::with_capacity(n);
            let mut cut = Vec::with_capacity(n);
            self.decide_batch(
                b,
                0..n,
                |r| groups.get(r),
                |_, k, c| {
                    keep.push(k);
                    cut.push(c);
                },
            );
            let removed = keep.iter().filter(|&&k| !k).count() as u64;
            let cuts = cut.iter().filter(|&&c| c).count() as u64;
            self.count(b.table.name(), removed, cuts);
            let cleared = flows::clear(b, &cut)?;
            let rows = flows::select(&cleared, &keep)?;
            if rows.batch.num_rows() > 0 {
                kept[i] = Some(rows);
            }
        }
        Ok(Chunk {
            batches: kept.into_iter().flatten().collect(),
        })
    }

    fn dropped(&self) -> TableCounts {
        self.dropped.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inclusive_means_wholly_inside_and_otherwise_overlap() {
        let w = Window::new(100, 200, true, false);
        assert!(w.keeps(100, 200) && !w.keeps(90, 150) && !w.keeps(150, 210));
        let w = Window::new(100, 200, false, false);
        assert!(
            w.keeps(90, 150)
                && w.keeps(150, 210)
                && w.keeps(50, 300)
                && !w.keeps(201, 300)
                && !w.keeps(0, 99)
        );
    }
}

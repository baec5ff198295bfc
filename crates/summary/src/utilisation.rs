//! GPU utilisation over time: per GPU agent, the fraction of each of N equal time bins in
//! which at least one kernel or copy ran, computed while events stream by.
//!
//! Memory is one counter per (agent, bin), whatever the trace length. Busy time is the
//! union of the agent's intervals, not their sum: kernels and copies are visited in start
//! order (a merge over the chunk's kernel and copy batches; chunks themselves come in time
//! order), so each agent only needs the end of what it already counted. A copy counts for
//! each GPU among its source and destination agents. Agents are identified by host and
//! the agent's absolute index, so processes sharing a GPU add to one timeline.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rocpd_model::hash::FastMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use arrow_array::{Array, Int64Array};
use rocpd_model::{col, Catalog, Table};
use rocpd_pipeline::Chunk;
use serde::Serialize;

/// The utilisation timeline of one GPU agent.
#[derive(Debug, Clone, Serialize)]
pub struct AgentTimeline {
    /// `host · GPU n (product)`.
    pub label: String,
    /// Busy fraction (0 to 1) of each bin.
    pub busy: Vec<f64>,
}

/// Utilisation timelines of every GPU agent that ran something.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Utilisation {
    /// The time span the bins divide, ns.
    pub span: Option<(i64, i64)>,
    /// Number of bins.
    pub bins: usize,
    /// One timeline per GPU agent, in label order.
    pub agents: Vec<AgentTimeline>,
}

struct Slot {
    label: String,
    /// End of the time already counted (intervals come in start order).
    covered_until: i64,
    busy_ns: Vec<u64>,
}

/// Accumulates [`Utilisation`] from chunks.
pub(crate) struct Tracker {
    lo: i64,
    /// Span length, `hi - lo + 1`, in i128 (an i64 difference can overflow).
    len: i128,
    bins: usize,
    /// (source, agent id) → slot, or `None` for an agent that is not a GPU.
    agents: FastMap<(u32, i64), Option<usize>>,
    /// (host, agent key) → slot, so that processes sharing a GPU share a timeline.
    physical: FastMap<(String, i64), usize>,
    slots: Vec<Slot>,
}

impl Tracker {
    pub(crate) fn new(span: (i64, i64), bins: usize) -> Self {
        let (lo, hi) = span;
        Tracker {
            lo,
            len: (hi as i128 - lo as i128).max(0) + 1,
            bins: bins.max(1),
            agents: FastMap::default(),
            physical: FastMap::default(),
            slots: Vec::new(),
        }
    }

    /// Start of bin `k` (k = bins gives the end of the span).
    fn bin_start(&self, k: usize) -> i128 {
        self.lo as i128 + self.len * k as i128 / self.bins as i128
    }

    fn bin_of(&self, t: i128) -> usize {
        let off = (t - self.lo as i128).clamp(0, self.len - 1);
        ((off * self.bins as i128) / self.len) as usize
    }

    fn slot(&mut self, catalog: &Catalog, source: u32, agent: i64) -> Option<usize> {
        if let Some(s) = self.agents.get(&(source, agent)) {
            return *s;
        }
        let found = catalog
            .agents
            .iter()
            .find(|a| a.source == source && a.id == agent);
        let slot = match found {
            Some(a) if a.agent_type.eq_ignore_ascii_case("GPU") => {
                let host = catalog
                    .nodes
                    .iter()
                    .find(|n| n.source == source && n.id == a.nid)
                    .and_then(|n| n.hostname.clone())
                    .unwrap_or_default();
                let key = a.absolute_index.unwrap_or(a.id);
                let next = self.slots.len();
                let slot = *self.physical.entry((host.clone(), key)).or_insert(next);
                if slot == next {
                    let n = a.type_index.or(a.logical_index).unwrap_or(a.id);
                    let product = a
                        .product_name
                        .as_deref()
                        .or(a.name.as_deref())
                        .unwrap_or("");
                    let host = if host.is_empty() { "?" } else { host.as_str() };
                    self.slots.push(Slot {
                        label: format!("{host} · GPU {n} {product}").trim_end().to_string(),
                        covered_until: i64::MIN,
                        busy_ns: vec![0; self.bins],
                    });
                }
                Some(slot)
            }
            _ => None,
        };
        self.agents.insert((source, agent), slot);
        slot
    }

    /// Counts `[start, end)` as busy on `slot`, leaving out what is already counted.
    fn add(&mut self, slot: usize, start: i64, end: i64) {
        let s = &mut self.slots[slot];
        let from = start.max(s.covered_until);
        if end <= from {
            return;
        }
        s.covered_until = end;
        let (from, to) = (from as i128, end as i128);
        let (first, last) = (self.bin_of(from), self.bin_of(to - 1));
        for k in first..=last {
            let a = from.max(self.bin_start(k));
            let b = to.min(self.bin_start(k + 1));
            if b > a {
                let busy = &mut self.slots[slot].busy_ns[k];
                *busy = busy.saturating_add(u64::try_from(b - a).unwrap_or(u64::MAX));
            }
        }
    }

    pub(crate) fn write(&mut self, catalog: &Catalog, chunk: &Chunk) {
        // A merge over the kernel and copy batches, by start time.
        let picked: Vec<usize> = (0..chunk.batches.len())
            .filter(|&i| {
                matches!(
                    chunk.batches[i].table,
                    Table::KernelDispatch | Table::MemoryCopy
                )
            })
            .collect();
        let starts: Vec<&Int64Array> = picked
            .iter()
            .map(|&i| chunk.batches[i].batch.column(col::START).as_primitive())
            .collect();
        let mut heap: BinaryHeap<Reverse<(i64, usize, usize)>> = starts
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty())
            .map(|(j, s)| Reverse((s.value(0), j, 0)))
            .collect();
        while let Some(Reverse((start, j, r))) = heap.pop() {
            if r + 1 < starts[j].len() {
                heap.push(Reverse((starts[j].value(r + 1), j, r + 1)));
            }
            let eb = &chunk.batches[picked[j]];
            let b = &eb.batch;
            let end = b.column(col::END).as_primitive::<Int64Type>().value(r);
            let source = b.column(col::SOURCE).as_primitive::<UInt32Type>().value(r);
            let agent_col = |name: &str| {
                let c = b
                    .column(eb.table.column_index(name))
                    .as_primitive::<Int64Type>();
                c.is_valid(r).then(|| c.value(r))
            };
            let agents = match eb.table {
                Table::KernelDispatch => [agent_col("agent_id"), None],
                _ => [agent_col("src_agent_id"), agent_col("dst_agent_id")],
            };
            for a in agents.into_iter().flatten() {
                if let Some(slot) = self.slot(catalog, source, a) {
                    self.add(slot, start, end);
                }
            }
        }
    }

    pub(crate) fn finish(self) -> Utilisation {
        let widths: Vec<i128> = (0..self.bins)
            .map(|k| self.bin_start(k + 1) - self.bin_start(k))
            .collect();
        let mut agents: Vec<AgentTimeline> = self
            .slots
            .into_iter()
            .map(|s| AgentTimeline {
                label: s.label,
                busy: s
                    .busy_ns
                    .iter()
                    .zip(&widths)
                    .map(|(&b, &w)| (b as f64 / w.max(1) as f64).min(1.0))
                    .collect(),
            })
            .collect();
        agents.sort_by(|a, b| a.label.cmp(&b.label));
        let hi = self.lo as i128 + self.len - 1;
        Utilisation {
            span: Some((self.lo, hi as i64)),
            bins: self.bins,
            agents,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker_with_slot() -> Tracker {
        let mut t = Tracker::new((0, 99), 10);
        t.slots.push(Slot {
            label: "g".into(),
            covered_until: i64::MIN,
            busy_ns: vec![0; 10],
        });
        t
    }

    #[test]
    fn overlapping_intervals_count_once_and_split_across_bins() {
        let mut t = tracker_with_slot();
        t.add(0, 5, 25); // bins 0 (5), 1 (10), 2 (5)
        t.add(0, 10, 20); // inside what is counted: nothing
        t.add(0, 22, 31); // 25..31: bin 2 (5), bin 3 (1)
        let u = t.finish();
        let busy = &u.agents[0].busy;
        assert_eq!(&busy[..4], &[0.5, 1.0, 1.0, 0.1]);
        assert!(busy[4..].iter().all(|&b| b == 0.0));
    }

    #[test]
    fn the_widest_span_does_not_overflow() {
        let mut t = Tracker::new((i64::MIN, i64::MAX), 4);
        t.slots.push(Slot {
            label: "g".into(),
            covered_until: i64::MIN,
            busy_ns: vec![0; 4],
        });
        t.add(0, i64::MIN, i64::MAX);
        let u = t.finish();
        assert!(
            u.agents[0].busy.iter().all(|&b| b > 0.99),
            "{:?}",
            u.agents[0].busy
        );
    }
}

//! [`Select`]: the filter and the time window as one pass over each batch.
//!
//! Run one after the other, [`Filter`] and [`Window`] each compute a mask, rebuild the
//! flow columns and copy the kept rows. `Select` decides every row with both (the window
//! seeing a row as the filter leaves it: a row whose flow markers the filter removed is
//! no longer in a flow group), then rebuilds the flow columns once and copies the kept
//! rows once. Its output, and the drops it reports, equal Filter then Window.
//!
//! The report names each stage with the rows it dropped, and a [`Stage`] has one name:
//! [`Select::stages`] returns `Select` (named and counted as the filter: rows the filter
//! drops) followed by a pass-through stage named and counted as the window (rows the
//! filter keeps and the window drops).

use std::sync::{Arc, Mutex};

use rocpd_model::{Catalog, EventBatch, Result};
use rocpd_pipeline::{Chunk, Stage, TableCounts};

use crate::flows::{self, GroupColumns};
use crate::{Filter, FilterRule, Window};

/// The filter and the window in one pass (see the module documentation).
pub struct Select {
    filter: Filter,
    window: Arc<Mutex<Window>>,
    /// Reused masks: the filter's decision, then the combined one.
    filter_keep: Vec<bool>,
    filter_cut: Vec<bool>,
    keep: Vec<bool>,
    cut: Vec<bool>,
}

/// The window's line in the report: passes chunks through, reports the window's drops.
struct WindowTally {
    window: Arc<Mutex<Window>>,
}

impl Select {
    /// The stages that apply `rules` (when there are any) and then `window` (when there
    /// is one): a [`Filter`] or a [`Window`] alone, or a `Select` and its window tally.
    pub fn stages(rules: Vec<FilterRule>, window: Option<Window>) -> Vec<Box<dyn Stage>> {
        match (rules.is_empty(), window) {
            (true, None) => Vec::new(),
            (true, Some(w)) => vec![Box::new(w)],
            (false, None) => vec![Box::new(Filter::new(rules))],
            (false, Some(w)) => {
                let window = Arc::new(Mutex::new(w));
                vec![
                    Box::new(Select {
                        filter: Filter::new(rules),
                        window: window.clone(),
                        filter_keep: Vec::new(),
                        filter_cut: Vec::new(),
                        keep: Vec::new(),
                        cut: Vec::new(),
                    }),
                    Box::new(WindowTally { window }),
                ]
            }
        }
    }

    fn select_batch(
        &mut self,
        b: &EventBatch,
        now: i64,
        window: &mut Window,
    ) -> Result<Option<EventBatch>> {
        self.filter
            .decide(b, now, &mut self.filter_keep, &mut self.filter_cut);
        let groups = GroupColumns::new(b);
        let n = b.batch.num_rows();
        self.keep.clear();
        self.keep.resize(n, false);
        self.cut.clear();
        self.cut.resize(n, false);
        let (mut removed, mut cuts) = (0, 0);
        let (filter_keep, filter_cut) = (&self.filter_keep, &self.filter_cut);
        let (keep, cut) = (&mut self.keep, &mut self.cut);
        window.decide_batch(
            b,
            (0..n).filter(|&r| filter_keep[r]),
            // The filter cleared this row's markers: the window sees it outside any group.
            |r| if filter_cut[r] { None } else { groups.get(r) },
            |r, k, c| {
                removed += u64::from(!k);
                cuts += u64::from(c);
                keep[r] = k;
                cut[r] = filter_cut[r] || c;
            },
        );
        window.count(b.table.name(), removed, cuts);
        let kept = flows::select(&flows::clear(b, &self.cut)?, &self.keep)?;
        Ok((kept.batch.num_rows() > 0).then_some(kept))
    }
}

impl Stage for Select {
    fn projection(&self) -> rocpd_model::Projection {
        // Rules and windows read names, ids and times, never the JSON text columns.
        rocpd_model::Projection::without_json_text()
    }

    fn name(&self) -> String {
        self.filter.name()
    }

    fn needs_every_table(&self) -> bool {
        self.filter.needs_every_table()
            || self
                .window
                .lock()
                .is_ok_and(|w| rocpd_pipeline::Stage::needs_every_table(&*w))
    }

    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
        self.filter.begin(catalog)
    }

    fn apply(&mut self, chunk: Chunk) -> Result<Chunk> {
        let now = self.filter.start_chunk(&chunk);
        let window = self.window.clone();
        let mut window = window
            .lock()
            .expect("the window is not shared across a panic");
        window.start_chunk();
        let mut kept: Vec<Option<EventBatch>> = vec![None; chunk.batches.len()];
        for i in Filter::order(&chunk) {
            kept[i] = self.select_batch(&chunk.batches[i], now, &mut window)?;
        }
        Ok(Chunk {
            batches: kept.into_iter().flatten().collect(),
        })
    }

    fn dropped(&self) -> TableCounts {
        self.filter.dropped()
    }
}

impl Stage for WindowTally {
    fn projection(&self) -> rocpd_model::Projection {
        // Rules and windows read names, ids and times, never the JSON text columns.
        rocpd_model::Projection::without_json_text()
    }

    fn name(&self) -> String {
        self.window.lock().expect("not poisoned").name()
    }

    fn apply(&mut self, chunk: Chunk) -> Result<Chunk> {
        Ok(chunk)
    }

    fn dropped(&self) -> TableCounts {
        self.window.lock().expect("not poisoned").dropped()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocpd_model::{BatchBuilder, ColumnBuilder, Table};

    /// A small deterministic generator (64-bit LCG).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % n
        }
    }

    /// One row: (table, start, end, stack id, pid, tid, agent, name, flow members
    /// (launched / has_launcher), group aggregates).
    struct Row {
        table: Table,
        start: i64,
        end: i64,
        stack: i64,
        pid: i64,
        tid: i64,
        agent: i64,
        name: &'static str,
        launched: i64,
        group: Option<[i64; 4]>,
    }

    fn batch(table: Table, rows: &[&Row]) -> EventBatch {
        let mut b = BatchBuilder::new(table, rows.len());
        for row in rows {
            for (i, spec) in table.columns().iter().enumerate() {
                let g = row.group;
                let agg = |k: usize| g.map(|g| g[k]);
                let int: Option<i64> = match spec.name {
                    "id" => Some(row.stack * 10 + row.start),
                    "nid" => Some(0),
                    "pid" => Some(row.pid),
                    "tid" => Some(row.tid),
                    "start" => Some(row.start),
                    "end" => Some(row.end),
                    "stack_id" => Some(row.stack),
                    "agent_id" | "dst_agent_id" | "src_agent_id" => Some(row.agent),
                    "launched" => Some(row.launched),
                    "flow_first_start" => agg(0),
                    "flow_last_start" => agg(1),
                    "flow_first_end" => agg(2),
                    "flow_last_end" => agg(3),
                    _ => None,
                };
                let text = match spec.name {
                    "category" => Some(match table {
                        Table::Region => "HIP_RUNTIME_API",
                        Table::KernelDispatch => "KERNEL_DISPATCH",
                        _ => "MEMORY_COPY",
                    }),
                    "name" | "kernel_name" => Some(row.name),
                    _ => None,
                };
                match b.column(i) {
                    ColumnBuilder::U32(c) => c.append_value(0),
                    ColumnBuilder::I64(c) => match int {
                        Some(v) => c.append_value(v),
                        None if spec.nullable => c.append_null(),
                        None => c.append_value(0),
                    },
                    ColumnBuilder::Str(c) => match text {
                        Some(v) => c.append_value(v),
                        None if spec.nullable => c.append_null(),
                        None => c.append_value(""),
                    },
                    ColumnBuilder::Bool(c) => match spec.name {
                        "has_launcher" => c.append_value(row.launched > 0),
                        _ if spec.nullable => c.append_null(),
                        _ => c.append_value(false),
                    },
                    ColumnBuilder::F64(c) => c.append_value(0.0),
                }
            }
            b.end_row();
        }
        EventBatch {
            table,
            batch: b.finish().unwrap(),
        }
    }

    /// Flow groups of an API call and up to three kernels or copies, in time order,
    /// cut into chunks of `per_chunk` rows.
    fn chunks(rng: &mut Rng, groups: usize, per_chunk: usize) -> Vec<Chunk> {
        let names = ["k_gemm", "k_copy", "hipLaunchKernel", "hipMemcpy"];
        let mut rows = Vec::new();
        for g in 0..groups as i64 {
            let s0 = g * 50 + rng.next(40) as i64;
            let targets = rng.next(4) as usize;
            let mut members = vec![(Table::Region, s0, s0 + 1 + rng.next(30) as i64)];
            for _ in 0..targets {
                let s = s0 + 1 + rng.next(80) as i64;
                let t = if rng.next(3) == 0 {
                    Table::MemoryCopy
                } else {
                    Table::KernelDispatch
                };
                members.push((t, s, s + rng.next(60) as i64));
            }
            let group = (targets > 0).then(|| {
                let m = |f: fn(&(Table, i64, i64)) -> i64| members.iter().map(f);
                [
                    m(|x| x.1).min().unwrap(),
                    m(|x| x.1).max().unwrap(),
                    m(|x| x.2).min().unwrap(),
                    m(|x| x.2).max().unwrap(),
                ]
            });
            for (i, &(table, start, end)) in members.iter().enumerate() {
                rows.push(Row {
                    table,
                    start,
                    end,
                    stack: g,
                    pid: 1 + rng.next(2) as i64,
                    tid: 10 + rng.next(3) as i64,
                    agent: rng.next(3) as i64,
                    name: names[rng.next(4) as usize],
                    launched: if i == 0 { targets as i64 } else { 1 },
                    group,
                });
            }
        }
        rows.sort_by_key(|r| r.start);
        rows.chunks(per_chunk)
            .map(|part| Chunk {
                batches: [Table::Region, Table::KernelDispatch, Table::MemoryCopy]
                    .into_iter()
                    .filter_map(|t| {
                        let rs: Vec<&Row> = part.iter().filter(|r| r.table == t).collect();
                        (!rs.is_empty()).then(|| batch(t, &rs))
                    })
                    .collect(),
            })
            .collect()
    }

    fn run(
        mut stages: Vec<Box<dyn Stage>>,
        input: &[Chunk],
    ) -> (Vec<Chunk>, Vec<(String, TableCounts)>) {
        let catalog = Arc::new(Catalog::default());
        for s in &mut stages {
            s.begin(&catalog).unwrap();
        }
        let mut out = Vec::new();
        for c in input {
            let mut c = c.clone();
            for s in &mut stages {
                c = s.apply(c).unwrap();
            }
            out.push(c);
        }
        let drops = stages.iter().map(|s| (s.name(), s.dropped())).collect();
        (out, drops)
    }

    #[test]
    fn select_equals_filter_then_window() {
        let rule_sets: &[&[(&str, bool)]] = &[
            &[("kind=kernel,api", true)],
            &[("kind=kernel", false)],
            &[("category=hip_api", false)],
            &[("name=^k_", true)],
            &[("pid=1", true), ("agent=2", false)],
            &[("tid=11", false)],
        ];
        let windows = [
            (200, 1200, true, false),
            (200, 1200, false, false),
            (300, 900, false, true),
            (300, 900, true, true),
        ];
        let mut rng = Rng(7);
        let mut compared = 0;
        for (n, rules) in rule_sets.iter().enumerate() {
            for &(start, end, inside, groups) in &windows {
                let input = chunks(&mut rng, 40, 7 + n * 5);
                let rules: Vec<FilterRule> = rules
                    .iter()
                    .map(|(t, inc)| FilterRule::parse(t, *inc).unwrap())
                    .collect();
                let window = || Window::new(start, end, inside, groups);
                let two: Vec<Box<dyn Stage>> =
                    vec![Box::new(Filter::new(rules.clone())), Box::new(window())];
                let (a, da) = run(two, &input);
                let (b, db) = run(Select::stages(rules, Some(window())), &input);
                assert_eq!(da, db, "drops and stage names");
                assert_eq!(a.len(), b.len());
                for (x, y) in a.iter().zip(&b) {
                    assert_eq!(x.batches.len(), y.batches.len());
                    for (p, q) in x.batches.iter().zip(&y.batches) {
                        assert_eq!(p.table, q.table);
                        assert_eq!(p.batch, q.batch, "rows and flow columns");
                    }
                }
                compared += 1;
                // The inputs are varied enough to drop rows and cut flows.
                assert!(da.iter().all(|(_, d)| d.values().sum::<u64>() > 0) || da.len() < 2);
            }
        }
        assert_eq!(compared, rule_sets.len() * windows.len());
    }

    #[test]
    fn stages_without_rules_or_window_are_the_single_stages() {
        let w = || Some(Window::new(0, 10, true, false));
        assert_eq!(Select::stages(Vec::new(), None).len(), 0);
        assert_eq!(Select::stages(Vec::new(), w()).len(), 1);
        let rules = vec![FilterRule::parse("pid=1", true).unwrap()];
        assert_eq!(Select::stages(rules.clone(), None).len(), 1);
        let both = Select::stages(rules, w());
        assert!(both[0].name().starts_with("filter") && both[1].name().starts_with("window"));
    }
}

//! Turning model batches into dataset rows: sorting a chunk's batches of one table,
//! resolving names through the catalog and splitting rows by partition.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::StringDictionaryBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type};
use arrow_array::{
    Array, ArrayRef, DictionaryArray, Int64Array, RecordBatch, StringArray, UInt32Array,
};
use arrow_select::concat::concat_batches;
use arrow_select::take::take_record_batch;
use rocpd_model::naming::{allocation_operation, output_category};
use rocpd_model::{col, AgentIndexMode, Catalog, CatalogIndex, Result, Table};

use crate::schema::{arrow_schema, layout, Src};
use crate::PartitionKey;

/// Value of a hive partition whose key is NULL (the Hive/Spark/DuckDB convention).
pub(crate) const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// Catalog lookups with small caches of the strings they produce.
pub(crate) struct Resolver {
    cat: Arc<Catalog>,
    idx: CatalogIndex,
    agent_labels: HashMap<(u32, i64), String>,
}

/// One partition's share of a batch: its relative directory (`""` without partitioning)
/// and the rows, in order.
pub(crate) struct Part {
    pub dir: String,
    pub batch: RecordBatch,
}

impl Resolver {
    pub(crate) fn new(cat: Arc<Catalog>) -> Self {
        let idx = CatalogIndex::new(&cat);
        Resolver {
            cat,
            idx,
            agent_labels: HashMap::new(),
        }
    }

    pub(crate) fn catalog(&self) -> &Catalog {
        &self.cat
    }

    pub(crate) fn guid(&self, source: u32) -> &str {
        self.cat
            .sources
            .get(source as usize)
            .map(|s| s.guid.as_str())
            .unwrap_or("")
    }

    pub(crate) fn hostname(&self, source: u32, nid: Option<i64>) -> Option<&str> {
        let i = self.idx.node(source, nid?)?;
        self.cat.nodes[i].hostname.as_deref()
    }

    /// `Agent <n>` (rocpd's default, relative numbering); `Agent <id>` for an agent the
    /// catalog does not know.
    pub(crate) fn agent_label(&mut self, source: u32, id: i64) -> &str {
        let (cat, idx) = (&self.cat, &self.idx);
        self.agent_labels.entry((source, id)).or_insert_with(|| {
            let (label, n) = match idx.agent(source, id) {
                Some(i) => cat.agents[i].label(AgentIndexMode::Relative),
                None => ("Agent".into(), id),
            };
            format!("{label} {n}")
        })
    }

    /// Converts a (sorted) model batch into the dataset layout of `table`.
    pub(crate) fn convert(&mut self, table: Table, batch: &RecordBatch) -> Result<RecordBatch> {
        let n = batch.num_rows();
        let source = batch.column(col::SOURCE).as_primitive::<UInt32Type>();
        let i64col = |name: &str| {
            batch
                .column(table.column_index(name))
                .as_primitive::<Int64Type>()
        };
        let strcol = |name: &str| batch.column(table.column_index(name)).as_string::<i32>();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(layout(table).len());
        for c in layout(table) {
            let array: ArrayRef = match c.from {
                Src::Model(name) => batch.column(table.column_index(name)).clone(),
                Src::ModelDict(name) => {
                    let s = strcol(name);
                    dict(n, (0..n).map(|r| s.is_valid(r).then(|| s.value(r))))
                }
                Src::Guid => {
                    let s = source.values();
                    dict(n, s.iter().map(|&src| Some(self.guid(src))))
                }
                Src::Duration => {
                    let (s, e) = (i64col("start").values(), i64col("end").values());
                    Arc::new(Int64Array::from_iter_values(
                        s.iter().zip(e.iter()).map(|(s, e)| e.saturating_sub(*s)),
                    ))
                }
                Src::Name => self.names(table, batch),
                Src::CategoryGroup => {
                    let cat = strcol("category");
                    let level = (table == Table::MemoryAllocation).then(|| strcol("level"));
                    dict(
                        n,
                        (0..n).map(|r| {
                            let raw = cat.is_valid(r).then(|| cat.value(r));
                            let level = level.and_then(|l| l.is_valid(r).then(|| l.value(r)));
                            Some(category_group(table, raw, level))
                        }),
                    )
                }
                Src::Hostname => {
                    let nid = i64col("nid");
                    dict(
                        n,
                        (0..n).map(|r| {
                            let nid = nid.is_valid(r).then(|| nid.value(r));
                            self.hostname(source.value(r), nid)
                        }),
                    )
                }
                Src::ProcessRow | Src::ThreadRow => {
                    let thread = c.from == Src::ThreadRow;
                    let os = i64col(if thread { "tid" } else { "pid" });
                    let (cat, idx) = (&self.cat, &self.idx);
                    Arc::new(Int64Array::from_iter((0..n).map(|r| {
                        let os = os.is_valid(r).then(|| os.value(r))?;
                        let src = source.value(r);
                        if thread {
                            idx.thread(src, os).map(|i| cat.threads[i].id)
                        } else {
                            idx.process(src, os).map(|i| cat.processes[i].id)
                        }
                    })))
                }
                Src::Agent(id_col) => {
                    let ids = i64col(id_col);
                    let mut b = StringDictionaryBuilder::<Int32Type>::with_capacity(n, 16, 256);
                    for r in 0..n {
                        if ids.is_valid(r) {
                            b.append_value(self.agent_label(source.value(r), ids.value(r)));
                        } else {
                            b.append_null();
                        }
                    }
                    Arc::new(b.finish())
                }
            };
            columns.push(array);
        }
        Ok(RecordBatch::try_new(arrow_schema(table), columns)?)
    }

    fn names(&self, table: Table, batch: &RecordBatch) -> ArrayRef {
        fn get(a: &StringArray, r: usize) -> Option<&str> {
            a.is_valid(r).then(|| a.value(r))
        }
        let n = batch.num_rows();
        let s = |name: &str| batch.column(table.column_index(name)).as_string::<i32>();
        match table {
            Table::Region | Table::Marker | Table::Sample => {
                let (name, msg) = (s("name"), s("message"));
                dict(
                    n,
                    (0..n).map(|r| {
                        get(msg, r)
                            .filter(|m| !m.is_empty())
                            .or_else(|| get(name, r))
                    }),
                )
            }
            Table::MemoryCopy => {
                let name = s("name");
                dict(n, (0..n).map(|r| get(name, r)))
            }
            Table::KernelDispatch => {
                let name = s("kernel_name");
                dict(n, (0..n).map(|r| get(name, r)))
            }
            Table::PmcValue => {
                let name = s("counter_name");
                dict(n, (0..n).map(|r| get(name, r)))
            }
            Table::MemoryAllocation => {
                let (kind, level) = (s("type"), s("level"));
                let mut b = StringDictionaryBuilder::<Int32Type>::with_capacity(n, 8, 256);
                let mut last: Option<(_, std::borrow::Cow<'static, str>)> = None;
                for r in 0..n {
                    let key = (get(kind, r).unwrap_or(""), get(level, r));
                    if last.as_ref().is_none_or(|(k, _)| *k != key) {
                        last = Some((key, allocation_operation(key.0, key.1)));
                    }
                    b.append_value(&last.as_ref().expect("set above").1);
                }
                Arc::new(b.finish())
            }
        }
    }

    /// Splits a converted batch by partition (rows keep their order within each part).
    /// `model` is the model batch the rows were converted from (for `source`, `nid`, `pid`).
    pub(crate) fn partition(
        &self,
        keys: &[PartitionKey],
        model: &RecordBatch,
        converted: RecordBatch,
    ) -> Result<Vec<Part>> {
        if keys.is_empty() {
            return Ok(vec![Part {
                dir: String::new(),
                batch: converted,
            }]);
        }
        let source = model.column(col::SOURCE).as_primitive::<UInt32Type>();
        let nid = model.column(col::NID).as_primitive::<Int64Type>();
        let pid = model.column(col::PID).as_primitive::<Int64Type>();
        let opt = |a: &Int64Array, r: usize| a.is_valid(r).then(|| a.value(r));
        // (source, nid, pid) -> group; directories of different keys may coincide.
        let mut by_key: HashMap<(u32, Option<i64>, Option<i64>), usize> = HashMap::new();
        let mut by_dir: HashMap<String, usize> = HashMap::new();
        let mut groups: Vec<(String, Vec<u32>)> = Vec::new();
        for r in 0..model.num_rows() {
            let key = (source.value(r), opt(nid, r), opt(pid, r));
            let g = match by_key.get(&key) {
                Some(&g) => g,
                None => {
                    let dir = self.partition_dir(keys, key.0, key.1, key.2);
                    let g = *by_dir.entry(dir.clone()).or_insert_with(|| {
                        groups.push((dir, Vec::new()));
                        groups.len() - 1
                    });
                    by_key.insert(key, g);
                    g
                }
            };
            groups[g].1.push(r as u32);
        }
        if groups.len() == 1 {
            let (dir, _) = groups.pop().expect("one group");
            return Ok(vec![Part {
                dir,
                batch: converted,
            }]);
        }
        groups
            .into_iter()
            .map(|(dir, rows)| {
                let batch = take_record_batch(&converted, &UInt32Array::from(rows))?;
                Ok(Part { dir, batch })
            })
            .collect()
    }

    fn partition_dir(
        &self,
        keys: &[PartitionKey],
        source: u32,
        nid: Option<i64>,
        pid: Option<i64>,
    ) -> String {
        keys.iter()
            .map(|k| match k {
                PartitionKey::Node => format!(
                    "node={}",
                    self.hostname(source, nid)
                        .filter(|h| !h.is_empty())
                        .map(escape_partition_value)
                        .unwrap_or_else(|| HIVE_NULL.into())
                ),
                PartitionKey::Pid => format!(
                    "pid={}",
                    pid.map(|p| p.to_string())
                        .unwrap_or_else(|| HIVE_NULL.into())
                ),
            })
            .collect::<Vec<_>>()
            .join("/")
    }
}

/// Concatenates one table's batches of a chunk and sorts the rows by (`start`,
/// `end` descending); the sort is stable, so ties keep stream order.
pub(crate) fn sorted(table: Table, batches: &[&RecordBatch]) -> Result<RecordBatch> {
    let batch = match batches {
        [one] => (*one).clone(),
        _ => concat_batches(&table.schema(), batches.iter().copied())?,
    };
    let starts = batch
        .column(col::START)
        .as_primitive::<Int64Type>()
        .values();
    let ends = batch.column(col::END).as_primitive::<Int64Type>().values();
    let ordered = (1..batch.num_rows()).all(|i| {
        (starts[i - 1], std::cmp::Reverse(ends[i - 1])) <= (starts[i], std::cmp::Reverse(ends[i]))
    });
    if ordered {
        return Ok(batch);
    }
    let mut order: Vec<u32> = (0..batch.num_rows() as u32).collect();
    order.sort_by_key(|&i| (starts[i as usize], std::cmp::Reverse(ends[i as usize])));
    Ok(take_record_batch(&batch, &UInt32Array::from(order))?)
}

/// The `category_group` of a row.
pub(crate) fn category_group(table: Table, raw: Option<&str>, level: Option<&str>) -> &'static str {
    let short = output_category(raw.unwrap_or(""));
    if short != "none" {
        return short;
    }
    match table {
        Table::KernelDispatch => "kernel_dispatch",
        Table::MemoryCopy => "memory_copy",
        Table::MemoryAllocation if level == Some("SCRATCH") => "scratch_memory",
        Table::MemoryAllocation => "memory_allocation",
        Table::PmcValue => "counter_collection",
        Table::Region | Table::Marker | Table::Sample => "none",
    }
}

/// Escapes a hive partition value: bytes other than ASCII letters, digits, `.`, `-` and
/// `_` become `%XX` (so `/`, `=` and control characters cannot change the layout).
pub(crate) fn escape_partition_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    if out.starts_with('.') {
        // A leading dot would make readers treat the directory as hidden.
        out.replace_range(0..1, "%2E");
    }
    out
}

/// A dictionary-encoded string array from optional values.
fn dict<'a>(n: usize, values: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    let mut b = StringDictionaryBuilder::<Int32Type>::with_capacity(n, 16, 1024);
    for v in values {
        b.append_option(v);
    }
    let a: DictionaryArray<Int32Type> = b.finish();
    Arc::new(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_values_are_escaped() {
        assert_eq!(escape_partition_value("node-01.example"), "node-01.example");
        assert_eq!(escape_partition_value("a/b=c d"), "a%2Fb%3Dc%20d");
        assert_eq!(escape_partition_value(".hidden"), "%2Ehidden");
    }

    #[test]
    fn category_groups_fall_back_per_table() {
        assert_eq!(
            category_group(Table::Region, Some("HIP_RUNTIME_API_EXT"), None),
            "hip_api"
        );
        assert_eq!(
            category_group(Table::KernelDispatch, None, None),
            "kernel_dispatch"
        );
        assert_eq!(
            category_group(Table::MemoryAllocation, None, Some("SCRATCH")),
            "scratch_memory"
        );
        assert_eq!(category_group(Table::Region, None, None), "none");
    }
}

//! Keeping flows whole: removing the flow markers of rows whose flow group does not reach
//! one output complete.
//!
//! A flow group is the API call(s) and the kernels and copies that share an internal
//! correlation id. Readers mark its members (`launched` on API calls, `has_launcher` on
//! kernels and copies) and give each member the group's time aggregates
//! (`flow_first_start`, `flow_last_start`, `flow_first_end`, `flow_last_end`). A stage
//! that can separate members calls [`clear`] on the members it keeps, with the same
//! decision for all of them, so no output holds one end of a flow only.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, BooleanArray, Int64Array, RecordBatch};
use rocpd_model::{EventBatch, Result, Table};

/// The time aggregates of a row's flow group, if it is in a two-ended group.
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// Earliest start.
    pub first_start: i64,
    /// Latest start.
    pub last_start: i64,
    /// Earliest end.
    pub first_end: i64,
    /// Latest end.
    pub last_end: i64,
}

/// Reads the flow-group aggregates of every row of a batch.
pub struct GroupColumns<'a> {
    cols: Option<[&'a Int64Array; 4]>,
}

impl<'a> GroupColumns<'a> {
    /// The aggregates of `b` (none for tables without flows).
    pub fn new(b: &'a EventBatch) -> Self {
        if !b.table.has_flows() {
            return GroupColumns { cols: None };
        }
        let c = |n: &str| {
            b.batch
                .column(b.table.column_index(n))
                .as_primitive::<Int64Type>()
        };
        GroupColumns {
            cols: Some([
                c("flow_first_start"),
                c("flow_last_start"),
                c("flow_first_end"),
                c("flow_last_end"),
            ]),
        }
    }

    /// The group of row `r`, if any.
    pub fn get(&self, r: usize) -> Option<Group> {
        let [a, b, c, d] = self.cols?;
        a.is_valid(r).then(|| Group {
            first_start: a.value(r),
            last_start: b.value(r),
            first_end: c.value(r),
            last_end: d.value(r),
        })
    }
}

/// Returns `b` with the flow markers of the rows flagged in `clear` removed (`launched`
/// 0, `has_launcher` false, group aggregates null).
pub fn clear(b: &EventBatch, clear: &[bool]) -> Result<EventBatch> {
    if !b.table.has_flows() || !clear.iter().any(|&c| c) {
        return Ok(b.clone());
    }
    let t = b.table;
    let mut columns = b.batch.columns().to_vec();
    let marker = match t {
        Table::Region | Table::Marker => "launched",
        _ => "has_launcher",
    };
    let mi = t.column_index(marker);
    columns[mi] = match t {
        Table::Region | Table::Marker => {
            let a = columns[mi].as_primitive::<Int64Type>();
            Arc::new(
                (0..a.len())
                    .map(|r| {
                        if clear[r] {
                            Some(0)
                        } else {
                            a.is_valid(r).then(|| a.value(r))
                        }
                    })
                    .collect::<Int64Array>(),
            )
        }
        _ => {
            let a = columns[mi].as_boolean();
            Arc::new(
                (0..a.len())
                    .map(|r| {
                        if clear[r] {
                            Some(false)
                        } else {
                            a.is_valid(r).then(|| a.value(r))
                        }
                    })
                    .collect::<BooleanArray>(),
            )
        }
    };
    for name in [
        "flow_first_start",
        "flow_last_start",
        "flow_first_end",
        "flow_last_end",
    ] {
        let i = t.column_index(name);
        let a = columns[i].as_primitive::<Int64Type>();
        columns[i] = Arc::new(
            (0..a.len())
                .map(|r| {
                    if clear[r] || a.is_null(r) {
                        None
                    } else {
                        Some(a.value(r))
                    }
                })
                .collect::<Int64Array>(),
        );
    }
    Ok(EventBatch {
        table: t,
        batch: RecordBatch::try_new(b.batch.schema(), columns)?,
    })
}

/// Keeps the rows of `b` flagged in `keep`.
pub fn select(b: &EventBatch, keep: &[bool]) -> Result<EventBatch> {
    if keep.iter().all(|&k| k) {
        return Ok(b.clone());
    }
    let mask = BooleanArray::from(keep.to_vec());
    Ok(EventBatch {
        table: b.table,
        batch: arrow_select::filter::filter_record_batch(&b.batch, &mask)?,
    })
}

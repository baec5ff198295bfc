//! The columns the OTF2 writer reads from a batch, looked up by name once per batch.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt32Type};
use arrow_array::{
    Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array,
};
use rocpd_model::Table;

/// Typed views of one batch's columns; a column its table lacks is `None`.
pub(crate) struct Cols<'a> {
    pub source: &'a UInt32Array,
    pub nid: &'a Int64Array,
    pub pid: &'a Int64Array,
    pub tid: &'a Int64Array,
    pub start: &'a Int64Array,
    pub end: &'a Int64Array,
    pub category: &'a StringArray,
    pub stack_id: &'a Int64Array,
    pub event_id: &'a Int64Array,
    pub name: Option<&'a StringArray>,
    pub message: Option<&'a StringArray>,
    pub track_id: Option<&'a Int64Array>,
    pub agent_id: Option<&'a Int64Array>,
    pub queue_id: Option<&'a Int64Array>,
    pub dispatch_id: Option<&'a Int64Array>,
    pub kernel_name: Option<&'a StringArray>,
    pub dst_agent_id: Option<&'a Int64Array>,
    pub size: Option<&'a Int64Array>,
    pub kind: Option<&'a StringArray>,
    pub level: Option<&'a StringArray>,
    pub pmc_id: Option<&'a Int64Array>,
    pub counter_name: Option<&'a StringArray>,
    pub value: Option<&'a Float64Array>,
}

impl<'a> Cols<'a> {
    pub fn new(b: &'a RecordBatch, t: Table) -> Self {
        let col =
            |name: &str| -> Option<&'a ArrayRef> { t.column_position(name).map(|i| b.column(i)) };
        let i64s = |name: &str| col(name).map(|c| c.as_primitive::<Int64Type>());
        let strs = |name: &str| col(name).map(|c| c.as_string::<i32>());
        let must = |name: &str| i64s(name).expect("common column");
        Cols {
            source: b.column(0).as_primitive::<UInt32Type>(),
            nid: must("nid"),
            pid: must("pid"),
            tid: must("tid"),
            start: must("start"),
            end: must("end"),
            category: strs("category").expect("event column"),
            stack_id: must("stack_id"),
            event_id: must("event_id"),
            name: strs("name"),
            message: strs("message"),
            track_id: i64s("track_id"),
            agent_id: i64s("agent_id"),
            queue_id: i64s("queue_id"),
            dispatch_id: i64s("dispatch_id"),
            kernel_name: strs("kernel_name"),
            dst_agent_id: i64s("dst_agent_id"),
            size: i64s("size"),
            kind: strs("type"),
            level: strs("level"),
            pmc_id: i64s("pmc_id"),
            counter_name: strs("counter_name"),
            value: col("value").map(|c| c.as_primitive::<Float64Type>()),
        }
    }
}

/// The integer at row `r` of an optional column, `None` where absent or null.
pub(crate) fn int(a: Option<&Int64Array>, r: usize) -> Option<i64> {
    a.filter(|a| a.is_valid(r)).map(|a| a.value(r))
}

/// The text at row `r` of an optional column, `None` where absent or null.
pub(crate) fn text(a: Option<&StringArray>, r: usize) -> Option<&str> {
    a.filter(|a| a.is_valid(r)).map(|a| a.value(r))
}

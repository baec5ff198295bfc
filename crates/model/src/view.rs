//! Typed, per-batch access to the columns writers read: every column is looked up by
//! name once per batch, not once per row. Shared by the Perfetto and OTF2 writers.

use crate::Table;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt32Type};
use arrow_array::{
    Array, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array,
};

/// The Int64 column `name` of table `t` in `b`.
///
/// Panics if the batch does not have the model's schema for `t` (batches of a
/// [`crate::Table`] stream always do).
pub fn i64s<'a>(b: &'a RecordBatch, t: Table, name: &str) -> &'a Int64Array {
    b.column(t.column_index(name)).as_primitive::<Int64Type>()
}
/// The Utf8 column `name` of table `t` in `b`; panics as [`i64s`] does.
pub fn strs<'a>(b: &'a RecordBatch, t: Table, name: &str) -> &'a StringArray {
    b.column(t.column_index(name)).as_string::<i32>()
}

/// The integer at `r`, or `None` where null.
pub fn oi(a: &Int64Array, r: usize) -> Option<i64> {
    a.is_valid(r).then(|| a.value(r))
}
/// The text at `r`, or `None` where null.
pub fn os(a: &StringArray, r: usize) -> Option<&str> {
    a.is_valid(r).then(|| a.value(r))
}

/// Typed references to the columns the writer reads, looked up once per batch; a column
/// the batch's table does not have is `None`.
#[allow(missing_docs)]
pub struct Cols<'a> {
    pub source: &'a UInt32Array,
    pub nid: &'a Int64Array,
    pub pid: &'a Int64Array,
    pub tid: &'a Int64Array,
    pub start: &'a Int64Array,
    pub end: &'a Int64Array,
    pub category: &'a StringArray,
    pub stack_id: &'a Int64Array,
    pub parent_stack_id: &'a Int64Array,
    pub event_id: &'a Int64Array,
    pub name: Option<&'a StringArray>,
    pub message: Option<&'a StringArray>,
    pub args: Option<&'a StringArray>,
    pub launched: Option<&'a Int64Array>,
    pub track_id: Option<&'a Int64Array>,
    pub agent_id: Option<&'a Int64Array>,
    pub queue_id: Option<&'a Int64Array>,
    pub stream_id: Option<&'a Int64Array>,
    pub kernel_id: Option<&'a Int64Array>,
    pub dispatch_id: Option<&'a Int64Array>,
    pub kernel_name: Option<&'a StringArray>,
    pub region_name: Option<&'a StringArray>,
    pub private_segment_size: Option<&'a Int64Array>,
    pub group_segment_size: Option<&'a Int64Array>,
    pub workgroup: [Option<&'a Int64Array>; 3],
    pub grid: [Option<&'a Int64Array>; 3],
    pub has_launcher: Option<&'a BooleanArray>,
    pub dst_agent_id: Option<&'a Int64Array>,
    pub src_agent_id: Option<&'a Int64Array>,
    pub size: Option<&'a Int64Array>,
    pub kind: Option<&'a StringArray>,
    pub level: Option<&'a StringArray>,
    pub address: Option<&'a Int64Array>,
    pub pmc_id: Option<&'a Int64Array>,
    pub counter_name: Option<&'a StringArray>,
    pub value: Option<&'a Float64Array>,
}

impl<'a> Cols<'a> {
    /// Looks up every column of `b` (a batch of table `t`).
    pub fn new(b: &'a RecordBatch, t: Table) -> Self {
        let at = |name: &str| t.column_position(name).map(|i| b.column(i));
        let i = |name: &str| at(name).map(|c| c.as_primitive::<Int64Type>());
        let s = |name: &str| at(name).map(|c| c.as_string::<i32>());
        Cols {
            source: b
                .column(t.column_index("source"))
                .as_primitive::<UInt32Type>(),
            nid: i64s(b, t, "nid"),
            pid: i64s(b, t, "pid"),
            tid: i64s(b, t, "tid"),
            start: i64s(b, t, "start"),
            end: i64s(b, t, "end"),
            category: strs(b, t, "category"),
            stack_id: i64s(b, t, "stack_id"),
            parent_stack_id: i64s(b, t, "parent_stack_id"),
            event_id: i64s(b, t, "event_id"),
            name: s("name"),
            message: s("message"),
            args: s("args"),
            launched: i("launched"),
            track_id: i("track_id"),
            agent_id: i("agent_id"),
            queue_id: i("queue_id"),
            stream_id: i("stream_id"),
            kernel_id: i("kernel_id"),
            dispatch_id: i("dispatch_id"),
            kernel_name: s("kernel_name"),
            region_name: s("region_name"),
            private_segment_size: i("private_segment_size"),
            group_segment_size: i("group_segment_size"),
            workgroup: [i("workgroup_x"), i("workgroup_y"), i("workgroup_z")],
            grid: [i("grid_x"), i("grid_y"), i("grid_z")],
            has_launcher: at("has_launcher").map(|c| c.as_boolean()),
            dst_agent_id: i("dst_agent_id"),
            src_agent_id: i("src_agent_id"),
            size: i("size"),
            kind: s("type"),
            level: s("level"),
            address: i("address"),
            pmc_id: i("pmc_id"),
            counter_name: s("counter_name"),
            value: at("value").map(|c| c.as_primitive::<Float64Type>()),
        }
    }
}

/// The value of an optional integer column at `r`.
pub fn gi(a: Option<&Int64Array>, r: usize) -> Option<i64> {
    a.and_then(|a| oi(a, r))
}

/// The value of an optional text column at `r`.
pub fn gs(a: Option<&StringArray>, r: usize) -> Option<&str> {
    a.and_then(|a| os(a, r))
}

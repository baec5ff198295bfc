//! Typed, per-batch access to the columns the writer reads (looked up once per batch, not
//! per row).

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt32Type};
use arrow_array::{
    Array, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array,
};
use rocpd_model::Table;

pub(crate) fn i64s<'a>(b: &'a RecordBatch, t: Table, name: &str) -> &'a Int64Array {
    b.column(t.column_index(name)).as_primitive::<Int64Type>()
}
pub(crate) fn f64s<'a>(b: &'a RecordBatch, t: Table, name: &str) -> &'a Float64Array {
    b.column(t.column_index(name)).as_primitive::<Float64Type>()
}
pub(crate) fn strs<'a>(b: &'a RecordBatch, t: Table, name: &str) -> &'a StringArray {
    b.column(t.column_index(name)).as_string::<i32>()
}
pub(crate) fn bools<'a>(b: &'a RecordBatch, t: Table, name: &str) -> &'a BooleanArray {
    b.column(t.column_index(name)).as_boolean()
}
pub(crate) fn u32s<'a>(b: &'a RecordBatch, t: Table, name: &str) -> &'a UInt32Array {
    b.column(t.column_index(name)).as_primitive::<UInt32Type>()
}

/// The value at `r`, or `None` where null.
pub(crate) fn get<A: Array, T>(a: &A, r: usize, f: impl Fn(&A, usize) -> T) -> Option<T> {
    a.is_valid(r).then(|| f(a, r))
}

pub(crate) fn oi(a: &Int64Array, r: usize) -> Option<i64> {
    get(a, r, |a, r| a.value(r))
}
pub(crate) fn os(a: &StringArray, r: usize) -> Option<&str> {
    a.is_valid(r).then(|| a.value(r))
}

/// Columns every table has.
pub(crate) struct Common<'a> {
    pub source: &'a UInt32Array,
    pub pid: &'a Int64Array,
    pub tid: &'a Int64Array,
    pub start: &'a Int64Array,
    pub end: &'a Int64Array,
    pub category: &'a StringArray,
    pub stack_id: &'a Int64Array,
    pub parent_stack_id: &'a Int64Array,
}

impl<'a> Common<'a> {
    pub fn new(b: &'a RecordBatch, t: Table) -> Self {
        Common {
            source: u32s(b, t, "source"),
            pid: i64s(b, t, "pid"),
            tid: i64s(b, t, "tid"),
            start: i64s(b, t, "start"),
            end: i64s(b, t, "end"),
            category: strs(b, t, "category"),
            stack_id: i64s(b, t, "stack_id"),
            parent_stack_id: i64s(b, t, "parent_stack_id"),
        }
    }
}

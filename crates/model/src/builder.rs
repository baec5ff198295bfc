//! Row-by-row construction of batches of a canonical table, for readers.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, UInt32Builder,
};
use arrow_array::{ArrayRef, RecordBatch};

use crate::{ColumnKind, Result, Table};

/// The builder of one column.
#[derive(Debug)]
pub enum ColumnBuilder {
    /// `UInt32`
    U32(UInt32Builder),
    /// `Int64`
    I64(Int64Builder),
    /// `Float64`
    F64(Float64Builder),
    /// `Boolean`
    Bool(BooleanBuilder),
    /// `Utf8`
    Str(StringBuilder),
}

impl ColumnBuilder {
    fn new(kind: ColumnKind, capacity: usize) -> Self {
        match kind {
            ColumnKind::U32 => ColumnBuilder::U32(UInt32Builder::with_capacity(capacity)),
            ColumnKind::I64 => ColumnBuilder::I64(Int64Builder::with_capacity(capacity)),
            ColumnKind::F64 => ColumnBuilder::F64(Float64Builder::with_capacity(capacity)),
            ColumnKind::Bool => ColumnBuilder::Bool(BooleanBuilder::with_capacity(capacity)),
            ColumnKind::Str => {
                ColumnBuilder::Str(StringBuilder::with_capacity(capacity, capacity * 16))
            }
        }
    }

    /// Appends a null.
    pub fn push_null(&mut self) {
        match self {
            ColumnBuilder::U32(b) => b.append_null(),
            ColumnBuilder::I64(b) => b.append_null(),
            ColumnBuilder::F64(b) => b.append_null(),
            ColumnBuilder::Bool(b) => b.append_null(),
            ColumnBuilder::Str(b) => b.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            ColumnBuilder::U32(b) => Arc::new(b.finish()),
            ColumnBuilder::I64(b) => Arc::new(b.finish()),
            ColumnBuilder::F64(b) => Arc::new(b.finish()),
            ColumnBuilder::Bool(b) => Arc::new(b.finish()),
            ColumnBuilder::Str(b) => Arc::new(b.finish()),
        }
    }
}

/// Bytes of string data one batch holds by default before it counts as full.
///
/// Besides bounding memory when values are large (1 MB strings), it keeps every string
/// column far below the 2 GiB that Arrow's 32-bit offsets can address: a batch is closed
/// as soon as it passes the budget, so a column holds at most the budget plus one value
/// (SQLite's own limit on a value is 1 GB).
pub const BATCH_BYTES: usize = 8 << 20;

/// Builds batches of one table, a row at a time: fill every column, then [`end_row`].
/// A batch is full at `capacity` rows or at its byte budget, whichever comes first.
///
/// [`end_row`]: BatchBuilder::end_row
#[derive(Debug)]
pub struct BatchBuilder {
    table: Table,
    columns: Vec<ColumnBuilder>,
    rows: usize,
    capacity: usize,
    byte_budget: usize,
}

impl BatchBuilder {
    /// A builder for `table` sized for `capacity` rows per batch.
    pub fn new(table: Table, capacity: usize) -> Self {
        let columns = table
            .columns()
            .iter()
            .map(|c| ColumnBuilder::new(c.kind, capacity))
            .collect();
        BatchBuilder {
            table,
            columns,
            rows: 0,
            capacity,
            byte_budget: BATCH_BYTES,
        }
    }

    /// The same builder with a byte budget of `bytes` (at least one row is always taken).
    pub fn with_byte_budget(mut self, bytes: usize) -> Self {
        self.byte_budget = bytes.max(1);
        self
    }

    /// Bytes of string data in the current batch.
    pub fn string_bytes(&self) -> usize {
        self.columns
            .iter()
            .map(|c| match c {
                ColumnBuilder::Str(b) => b.values_slice().len(),
                _ => 0,
            })
            .sum()
    }

    /// The table being built.
    pub fn table(&self) -> Table {
        self.table
    }

    /// The builder of column `i`.
    pub fn column(&mut self, i: usize) -> &mut ColumnBuilder {
        &mut self.columns[i]
    }

    /// Marks the current row complete.
    pub fn end_row(&mut self) {
        self.rows += 1;
    }

    /// Rows built so far in the current batch.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether the current batch has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Whether the current batch reached its row capacity or its byte budget.
    pub fn is_full(&self) -> bool {
        self.rows >= self.capacity || (self.rows > 0 && self.string_bytes() >= self.byte_budget)
    }

    /// Finishes the current batch (validated against the table's schema) and starts a new one.
    pub fn finish(&mut self) -> Result<RecordBatch> {
        let arrays = self.columns.iter_mut().map(ColumnBuilder::finish).collect();
        self.rows = 0;
        Ok(RecordBatch::try_new(self.table.schema(), arrays)?)
    }
}

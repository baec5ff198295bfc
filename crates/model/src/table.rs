//! The canonical event tables and their fixed Arrow schemas.
//!
//! Each table is described once, as a list of [`ColumnSpec`]s; the Arrow schema, the
//! readers' column order and the documentation all follow from that list. Every table
//! starts with the same seven [`COMMON_COLUMNS`] (see [`crate::col`]) so that stages can
//! route and window any batch without knowing its table.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// Version of the event model; bumped whenever a column is added, removed or changes type.
pub const MODEL_VERSION: &str = "2";

/// The kinds of value a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// Arrow `UInt32`.
    U32,
    /// Arrow `Int64` (ids, timestamps in ns, sizes in bytes).
    I64,
    /// Arrow `Float64`.
    F64,
    /// Arrow `Boolean`.
    Bool,
    /// Arrow `Utf8`.
    Str,
}

impl ColumnKind {
    fn data_type(self) -> DataType {
        match self {
            ColumnKind::U32 => DataType::UInt32,
            ColumnKind::I64 => DataType::Int64,
            ColumnKind::F64 => DataType::Float64,
            ColumnKind::Bool => DataType::Boolean,
            ColumnKind::Str => DataType::Utf8,
        }
    }
}

/// One column of a canonical table.
#[derive(Debug, Clone, Copy)]
pub struct ColumnSpec {
    /// Column name.
    pub name: &'static str,
    /// Value type.
    pub kind: ColumnKind,
    /// Whether the column may hold nulls.
    pub nullable: bool,
    /// One line of documentation (units, meaning).
    pub doc: &'static str,
}

const fn c(name: &'static str, kind: ColumnKind, nullable: bool, doc: &'static str) -> ColumnSpec {
    ColumnSpec {
        name,
        kind,
        nullable,
        doc,
    }
}

use ColumnKind::{Bool, Str, F64, I64, U32};

/// Columns every table starts with, in this order.
pub const COMMON_COLUMNS: &[ColumnSpec] = &[
    c("source", U32, false, "index of the input source in the catalog (which database / file and process set)"),
    c("id", I64, false, "row id in the source table (RocPD: region id = internal correlation id, dispatch id, ...); never renumbered"),
    c("nid", I64, true, "node id (rocpd_info_node.id)"),
    c("pid", I64, true, "process id: the OS pid (RocPD readers resolve the schema's reference to rocpd_info_process.id)"),
    c("tid", I64, true, "thread id: the OS tid of the thread that issued the event (RocPD readers resolve the reference to rocpd_info_thread.id)"),
    c("start", I64, false, "start timestamp, ns, profiler clock (CLOCK_BOOTTIME)"),
    c("end", I64, false, "end timestamp, ns; equals start for instants"),
];

/// Columns describing the shared event metadata (RocPD `rocpd_event`) and the row's own
/// `extdata`; every table ends with them.
const EVENT_COLUMNS: &[ColumnSpec] = &[
    c(
        "category",
        Str,
        true,
        "event category as the profiler names it (HIP_RUNTIME_API_EXT, KERNEL_DISPATCH, ...)",
    ),
    c("event_id", I64, true, "rocpd_event.id"),
    c(
        "stack_id",
        I64,
        true,
        "internal correlation id (rocpd_event.stack_id)",
    ),
    c(
        "parent_stack_id",
        I64,
        true,
        "ancestor correlation id (rocpd_event.parent_stack_id)",
    ),
    c(
        "correlation_id",
        I64,
        true,
        "external correlation id (rocpd_event.correlation_id)",
    ),
    c(
        "call_stack",
        Str,
        true,
        "rocpd_event.call_stack (JSON text)",
    ),
    c("line_info", Str, true, "rocpd_event.line_info (JSON text)"),
    c(
        "event_extdata",
        Str,
        true,
        "rocpd_event.extdata (JSON text)",
    ),
    c("extdata", Str, true, "the row's own extdata (JSON text)"),
];

/// Time aggregates of the row's flow group: the API calls and the kernels/copies that
/// share its internal correlation id. Stages that cut by time use them so both ends of a
/// flow make the same decision; null when the row is in no group with both ends.
const FLOW_COLUMNS: &[ColumnSpec] = &[
    c(
        "flow_first_start",
        I64,
        true,
        "earliest start in the row's flow group, ns",
    ),
    c(
        "flow_last_start",
        I64,
        true,
        "latest start in the row's flow group, ns",
    ),
    c(
        "flow_first_end",
        I64,
        true,
        "earliest end in the row's flow group, ns",
    ),
    c(
        "flow_last_end",
        I64,
        true,
        "latest end in the row's flow group, ns",
    ),
];

const REGION_COLUMNS: &[ColumnSpec] = &[
    c("name", Str, false, "API function or range name"),
    c("message", Str, true, "ROCTx message (event extdata `message`), if any"),
    c("args", Str, true, "function arguments as a JSON array of {position,type,name,value}"),
    c("launched", I64, true, "number of kernel dispatches and memory copies that share this call's internal correlation id (flow targets); null when unknown"),
];

const SAMPLE_COLUMNS: &[ColumnSpec] = &[
    c("track_id", I64, true, "rocpd_track.id"),
    c("name", Str, false, "track name"),
    c(
        "message",
        Str,
        true,
        "ROCTx message (event extdata `message`), if any",
    ),
];

const KERNEL_COLUMNS: &[ColumnSpec] = &[
    c("agent_id", I64, false, "GPU agent id (rocpd_info_agent.id)"),
    c("kernel_id", I64, false, "kernel symbol id (rocpd_info_kernel_symbol.id)"),
    c("dispatch_id", I64, false, "dispatch id"),
    c("queue_id", I64, true, "HSA queue handle (rocpd_info_queue.id)"),
    c("stream_id", I64, true, "HIP stream handle (rocpd_info_stream.id)"),
    c("kernel_name", Str, false, "kernel display name (resolved from the kernel symbol)"),
    c("region_name", Str, true, "enclosing ROCTx range name (for --kernel-rename)"),
    c("private_segment_size", I64, true, "scratch bytes per work-item (dispatch)"),
    c("group_segment_size", I64, true, "LDS bytes (dispatch)"),
    c("workgroup_x", I64, true, "workgroup size x"),
    c("workgroup_y", I64, true, "workgroup size y"),
    c("workgroup_z", I64, true, "workgroup size z"),
    c("grid_x", I64, true, "grid size x"),
    c("grid_y", I64, true, "grid size y"),
    c("grid_z", I64, true, "grid size z"),
    c("has_launcher", Bool, true, "whether an API call with the same internal correlation id exists (flow source); null when unknown"),
];

const COPY_COLUMNS: &[ColumnSpec] = &[
    c(
        "name",
        Str,
        false,
        "copy operation (MEMORY_COPY_HOST_TO_DEVICE, ...)",
    ),
    c("dst_agent_id", I64, true, "destination agent id"),
    c("dst_address", I64, true, "destination address"),
    c("src_agent_id", I64, true, "source agent id"),
    c("src_address", I64, true, "source address"),
    c("size", I64, true, "bytes copied"),
    c("queue_id", I64, true, "queue handle"),
    c("stream_id", I64, true, "stream handle"),
    c("region_name", Str, true, "enclosing ROCTx range name"),
    c(
        "has_launcher",
        Bool,
        true,
        "whether an API call with the same internal correlation id exists; null when unknown",
    ),
];

const ALLOC_COLUMNS: &[ColumnSpec] = &[
    c("type", Str, false, "ALLOC, FREE, REALLOC or RECLAIM"),
    c("level", Str, true, "REAL, VIRTUAL or SCRATCH"),
    c("agent_id", I64, true, "agent id (null for frees)"),
    c("address", I64, true, "address"),
    c("size", I64, true, "bytes"),
    c("queue_id", I64, true, "queue handle"),
    c("stream_id", I64, true, "stream handle"),
];

const PMC_COLUMNS: &[ColumnSpec] = &[
    c("pmc_id", I64, false, "counter id (rocpd_info_pmc.id)"),
    c("counter_name", Str, true, "counter name (resolved)"),
    c(
        "value",
        F64,
        true,
        "counter value (one record; dimension instances are not summed)",
    ),
    c("agent_id", I64, true, "agent of the counter"),
    c(
        "dispatch_id",
        I64,
        true,
        "kernel dispatch the value belongs to, if any",
    ),
];

/// The canonical event tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Table {
    /// CPU-side API calls and ranges (HIP, HSA, RCCL, ...), not markers.
    Region,
    /// ROCTx / marker ranges (regions whose category starts with `MARKER_`).
    Marker,
    /// Instants on a track.
    Sample,
    /// GPU kernel dispatches.
    KernelDispatch,
    /// Memory copies.
    MemoryCopy,
    /// Memory allocations, frees and scratch-memory events.
    MemoryAllocation,
    /// Performance-counter values.
    PmcValue,
}

impl Table {
    /// Every table, in a fixed order.
    pub const ALL: [Table; 7] = [
        Table::Region,
        Table::Marker,
        Table::Sample,
        Table::KernelDispatch,
        Table::MemoryCopy,
        Table::MemoryAllocation,
        Table::PmcValue,
    ];

    /// The table named `v`: its [`Table::name`] or a word users say for it (`kernel`,
    /// `kernels`, `api`, `copy`, `counter`, ...), ignoring case. The filter's `kind=` and
    /// the Python package's `events(table)` both take these words.
    pub fn from_name(v: &str) -> Option<Table> {
        Some(match v.to_ascii_lowercase().as_str() {
            "region" | "regions" | "api" | "apis" => Table::Region,
            "marker" | "markers" => Table::Marker,
            "sample" | "samples" => Table::Sample,
            "kernel" | "kernels" | "kernel_dispatch" | "kernel_dispatches" => Table::KernelDispatch,
            "copy" | "copies" | "memory_copy" | "memory_copies" => Table::MemoryCopy,
            "allocation" | "allocations" | "memory_allocation" | "memory_allocations" => {
                Table::MemoryAllocation
            }
            "counter" | "counters" | "pmc" | "pmcs" | "pmc_value" | "pmc_values" => Table::PmcValue,
            _ => return None,
        })
    }

    /// The table's name (as used in reports and file names).
    pub fn name(self) -> &'static str {
        match self {
            Table::Region => "region",
            Table::Marker => "marker",
            Table::Sample => "sample",
            Table::KernelDispatch => "kernel_dispatch",
            Table::MemoryCopy => "memory_copy",
            Table::MemoryAllocation => "memory_allocation",
            Table::PmcValue => "pmc_value",
        }
    }

    fn specific_columns(self) -> &'static [ColumnSpec] {
        match self {
            Table::Region | Table::Marker => REGION_COLUMNS,
            Table::Sample => SAMPLE_COLUMNS,
            Table::KernelDispatch => KERNEL_COLUMNS,
            Table::MemoryCopy => COPY_COLUMNS,
            Table::MemoryAllocation => ALLOC_COLUMNS,
            Table::PmcValue => PMC_COLUMNS,
        }
    }

    /// Whether rows of this table can be ends of flows (API calls and markers launching
    /// kernels and copies; kernels and copies).
    pub fn has_flows(self) -> bool {
        matches!(
            self,
            Table::Region | Table::Marker | Table::KernelDispatch | Table::MemoryCopy
        )
    }

    /// All columns of the table, in schema order.
    pub fn columns(self) -> &'static [ColumnSpec] {
        static COLUMNS: OnceLock<Vec<Vec<ColumnSpec>>> = OnceLock::new();
        let all = COLUMNS.get_or_init(|| {
            Table::ALL
                .iter()
                .map(|t| {
                    let mut v = COMMON_COLUMNS.to_vec();
                    v.extend_from_slice(t.specific_columns());
                    if t.has_flows() {
                        v.extend_from_slice(FLOW_COLUMNS);
                    }
                    v.extend_from_slice(EVENT_COLUMNS);
                    v
                })
                .collect()
        });
        &all[self as usize]
    }

    /// Position of a column by name, if the table has it.
    pub fn column_position(self, name: &str) -> Option<usize> {
        self.columns().iter().position(|c| c.name == name)
    }

    /// Position of a column a user named, or a usage error that lists the table's columns.
    pub fn find_column(self, name: &str) -> crate::Result<usize> {
        let columns = self.columns();
        columns.iter().position(|c| c.name == name).ok_or_else(|| {
            let known: Vec<&str> = columns.iter().map(|c| c.name).collect();
            crate::Error::Usage(format!(
                "table {} has no column {name:?}; its columns are {}",
                self.name(),
                known.join(", ")
            ))
        })
    }

    /// Position of a column by name. Panics on an unknown name: column names are fixed
    /// by the model, so a miss is a programming error.
    pub fn column_index(self, name: &str) -> usize {
        self.columns()
            .iter()
            .position(|c| c.name == name)
            .unwrap_or_else(|| panic!("table {} has no column {name}", self.name()))
    }

    /// The table's Arrow schema (shared; built once).
    pub fn schema(self) -> SchemaRef {
        static SCHEMAS: OnceLock<Vec<SchemaRef>> = OnceLock::new();
        let all = SCHEMAS.get_or_init(|| {
            Table::ALL
                .iter()
                .map(|t| {
                    let fields: Vec<Field> = t
                        .columns()
                        .iter()
                        .map(|c| Field::new(c.name, c.kind.data_type(), c.nullable))
                        .collect();
                    let meta = HashMap::from([
                        ("rocpd.table".to_string(), t.name().to_string()),
                        ("rocpd.model_version".to_string(), MODEL_VERSION.to_string()),
                    ]);
                    Arc::new(Schema::new_with_metadata(fields, meta))
                })
                .collect()
        });
        all[self as usize].clone()
    }
}

/// A record batch of one canonical table. Rows are sorted by (`start`, `end` descending).
#[derive(Debug, Clone)]
pub struct EventBatch {
    /// Which table the rows belong to.
    pub table: Table,
    /// The rows, in [`Table::schema`] layout.
    pub batch: RecordBatch,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_starts_with_the_common_columns_and_has_unique_names() {
        for t in Table::ALL {
            let cols = t.columns();
            for (i, common) in COMMON_COLUMNS.iter().enumerate() {
                assert_eq!(cols[i].name, common.name, "{}", t.name());
            }
            let mut names: Vec<_> = cols.iter().map(|c| c.name).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), cols.len(), "duplicate column in {}", t.name());
            assert_eq!(t.schema().fields().len(), cols.len());
            assert_eq!(t.schema().field(crate::col::START).name(), "start");
        }
    }
}

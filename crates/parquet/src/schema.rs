//! The Parquet dataset's event-table layouts, derived from the model's column lists.
//!
//! Every event table's columns are declared once here ([`layout`]): where each value
//! comes from (a model column, or a name resolved through the catalog), its Arrow type,
//! nullability and documentation. The Arrow schema ([`arrow_schema`]) and the column
//! tables of `formats/parquet/README.md` ([`markdown`]) follow from that list.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use rocpd_model::{Table, COMMON_COLUMNS, MODEL_VERSION};

/// Version of the Parquet dataset layout (column names, types, file layout). Bumped
/// whenever a column is added, removed, renamed or changes type.
pub const SCHEMA_VERSION: &str = "3";

/// Key-value metadata key holding [`SCHEMA_VERSION`] in every file.
pub const SCHEMA_VERSION_KEY: &str = "rocpd.parquet_schema_version";

/// Where an output column's values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Src {
    /// The source's `guid` (from the catalog, by the model's `source` index).
    Guid,
    /// A model column, copied unchanged (same Arrow type).
    Model(&'static str),
    /// A model string column, stored dictionary-encoded.
    ModelDict(&'static str),
    /// `end - start`.
    Duration,
    /// The resolved display name (per table).
    Name,
    /// The short category (`rocpd_model::naming::output_category`).
    CategoryGroup,
    /// The node's hostname (catalog node by `(source, nid)`).
    Hostname,
    /// The label of the agent whose id is in the given model column.
    Agent(&'static str),
    /// The `rocpd_info_process.id` row of the event's process (catalog by `(source, pid)`).
    ProcessRow,
    /// The `rocpd_info_thread.id` row of the event's thread (catalog by `(source, tid)`).
    ThreadRow,
}

/// One column of an event table of the dataset.
#[derive(Debug, Clone)]
pub(crate) struct OutColumn {
    pub name: &'static str,
    pub from: Src,
    pub data_type: DataType,
    pub nullable: bool,
    pub doc: String,
}

/// Arrow type of the resolved string columns.
pub(crate) fn dict_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// The directory (table) name of a model table in the dataset.
pub fn table_dir(table: Table) -> &'static str {
    match table {
        Table::Region => "api_calls",
        Table::Marker => "markers",
        Table::Sample => "samples",
        Table::KernelDispatch => "kernels",
        Table::MemoryCopy => "memory_copies",
        Table::MemoryAllocation => "memory_allocations",
        Table::PmcValue => "pmc_values",
    }
}

/// Position of `start_ns` in every event table (leaf column index, for `sorting_columns`).
pub(crate) const START_NS: usize = 5;

/// What the `name` column holds, per table.
fn name_doc(table: Table) -> &'static str {
    match table {
        Table::Region | Table::Marker => {
            "name as rocpd shows it: the ROCTx message when the row has a non-empty one, else the API function or range name (model `name`)"
        }
        Table::Sample => {
            "name as rocpd shows it: the ROCTx message when the row has a non-empty one, else the track name (model `name`)"
        }
        Table::KernelDispatch => "kernel display name (model `kernel_name`)",
        Table::MemoryCopy => "copy operation, e.g. MEMORY_COPY_HOST_TO_DEVICE (model `name`)",
        Table::MemoryAllocation => {
            "operation derived from `type` and `level` (MEMORY_ALLOCATION_ALLOCATE, MEMORY_ALLOCATION_FREE, SCRATCH_MEMORY_ALLOC, MEMORY_ALLOCATION_VMEM_ALLOCATE, ...)"
        }
        Table::PmcValue => "counter name (model `counter_name`)",
    }
}

fn category_doc(table: Table) -> &'static str {
    match table {
        Table::Region | Table::Marker | Table::Sample => {
            "short category of `category` (hip_api, hsa_api, marker_api, rccl_api, ...; `none` when unknown or NULL)"
        }
        Table::KernelDispatch => {
            "short category of `category`; `kernel_dispatch` when that gives `none`"
        }
        Table::MemoryCopy => "short category of `category`; `memory_copy` when that gives `none`",
        Table::MemoryAllocation => {
            "short category of `category`; when that gives `none`: `scratch_memory` for level SCRATCH, else `memory_allocation`"
        }
        Table::PmcValue => {
            "short category of `category`; `counter_collection` when that gives `none`"
        }
    }
}

/// The model column replaced by the resolved `name` column (same values), if any.
fn replaced_by_name(table: Table) -> Option<&'static str> {
    match table {
        Table::MemoryCopy => Some("name"),
        Table::KernelDispatch => Some("kernel_name"),
        Table::PmcValue => Some("counter_name"),
        _ => None,
    }
}

/// The agent-label columns of a table: (output name, model id column).
fn agent_columns(table: Table) -> &'static [(&'static str, &'static str)] {
    match table {
        Table::KernelDispatch | Table::MemoryAllocation | Table::PmcValue => {
            &[("agent", "agent_id")]
        }
        Table::MemoryCopy => &[("src_agent", "src_agent_id"), ("dst_agent", "dst_agent_id")],
        _ => &[],
    }
}

fn model_spec(table: Table, name: &str) -> &'static rocpd_model::ColumnSpec {
    &table.columns()[table.column_index(name)]
}

fn model_type(table: Table, name: &str) -> DataType {
    table
        .schema()
        .field(table.column_index(name))
        .data_type()
        .clone()
}

fn build_layout(table: Table) -> Vec<OutColumn> {
    let mut v = Vec::new();
    let model = |name: &'static str, out: &'static str, doc_prefix: &str| OutColumn {
        name: out,
        from: Src::Model(name),
        data_type: model_type(table, name),
        nullable: model_spec(table, name).nullable,
        doc: format!("{doc_prefix}{}", model_spec(table, name).doc),
    };
    let dict = |name: &'static str, from: Src, nullable: bool, doc: String| OutColumn {
        name,
        from,
        data_type: dict_type(),
        nullable,
        doc,
    };
    v.push(dict(
        "guid",
        Src::Guid,
        false,
        "global id of the input source (a UUID; the `sources` table); ids are unique only together with it".into(),
    ));
    for c in &COMMON_COLUMNS[1..5] {
        v.push(model(c.name, c.name, ""));
    }
    v.push(model("start", "start_ns", "model `start`: "));
    v.push(model("end", "end_ns", "model `end`: "));
    v.push(OutColumn {
        name: "duration_ns",
        from: Src::Duration,
        data_type: DataType::Int64,
        nullable: false,
        doc: "`end_ns - start_ns`, ns (0 for instants; negative when the source has an end before its start; saturated at the Int64 range when the difference does not fit)".into(),
    });
    let name_nullable = table == Table::PmcValue;
    v.push(dict(
        "name",
        Src::Name,
        name_nullable,
        name_doc(table).into(),
    ));
    v.push(dict(
        "category_group",
        Src::CategoryGroup,
        false,
        category_doc(table).into(),
    ));
    v.push(dict(
        "hostname",
        Src::Hostname,
        true,
        "hostname of the node (`nodes.parquet` row of `nid`); NULL when unknown".into(),
    ));
    for (name, from, what, os) in [
        ("process_id", Src::ProcessRow, "rocpd_info_process", "pid"),
        ("thread_id", Src::ThreadRow, "rocpd_info_thread", "tid"),
    ] {
        v.push(OutColumn {
            name,
            from,
            data_type: DataType::Int64,
            nullable: true,
            doc: format!(
                "row id of the event's `{what}` row (what the RocPD schema's `{os}` references hold; `{os}` is the OS id); NULL when the input has no such row"
            ),
        });
    }
    for &(out, id_col) in agent_columns(table) {
        v.push(dict(
            out,
            Src::Agent(id_col),
            model_spec(table, id_col).nullable,
            format!(
                "label of agent `{id_col}`: `Agent <n>` with n = logical index, else absolute index, else the id (rocpd's default agent numbering){}",
                if model_spec(table, id_col).nullable {
                    format!("; NULL when `{id_col}` is NULL")
                } else {
                    String::new()
                }
            ),
        ));
    }
    for c in &table.columns()[COMMON_COLUMNS.len()..] {
        if replaced_by_name(table) == Some(c.name) {
            continue;
        }
        if c.name == "name" {
            // Region, marker, sample: the model's name stays available as `operation`.
            v.push(dict(
                "operation",
                Src::ModelDict("name"),
                c.nullable,
                format!("model `name`: {}", c.doc),
            ));
            continue;
        }
        v.push(model(c.name, c.name, ""));
    }
    debug_assert_eq!(v[START_NS].name, "start_ns");
    v
}

/// The columns of a dataset event table, in file order.
pub(crate) fn layout(table: Table) -> &'static [OutColumn] {
    static ALL: OnceLock<Vec<Vec<OutColumn>>> = OnceLock::new();
    &ALL.get_or_init(|| Table::ALL.iter().map(|&t| build_layout(t)).collect())[table as usize]
}

/// The Arrow schema of a dataset event table (with `rocpd.*` metadata).
pub fn arrow_schema(table: Table) -> SchemaRef {
    static ALL: OnceLock<Vec<SchemaRef>> = OnceLock::new();
    ALL.get_or_init(|| {
        Table::ALL
            .iter()
            .map(|&t| {
                let fields: Vec<Field> = layout(t)
                    .iter()
                    .map(|c| Field::new(c.name, c.data_type.clone(), c.nullable))
                    .collect();
                Arc::new(Schema::new_with_metadata(fields, table_metadata(t)))
            })
            .collect()
    })[table as usize]
        .clone()
}

/// The columns stored in a table's files: all of [`arrow_schema`] except `omit` (columns
/// whose value is in the hive partition path instead). Returns the file schema and, for
/// each of its columns, its position in [`arrow_schema`].
pub(crate) fn file_schema(table: Table, omit: &[&str]) -> (SchemaRef, Vec<usize>) {
    let full = arrow_schema(table);
    let keep: Vec<usize> = (0..full.fields().len())
        .filter(|&i| !omit.contains(&full.field(i).name().as_str()))
        .collect();
    let schema = full.project(&keep).expect("valid projection");
    (Arc::new(schema), keep)
}

/// The `rocpd.*` metadata of an event table's files.
pub(crate) fn table_metadata(table: Table) -> HashMap<String, String> {
    HashMap::from([
        (SCHEMA_VERSION_KEY.to_string(), SCHEMA_VERSION.to_string()),
        ("rocpd.table".to_string(), table_dir(table).to_string()),
        ("rocpd.model_table".to_string(), table.name().to_string()),
        ("rocpd.model_version".to_string(), MODEL_VERSION.to_string()),
    ])
}

fn type_name(t: &DataType) -> &'static str {
    match t {
        DataType::Int64 => "Int64",
        DataType::Float64 => "Float64",
        DataType::Boolean => "Boolean",
        DataType::Utf8 => "Utf8",
        DataType::Dictionary(..) => "Dictionary(Int32, Utf8)",
        _ => "other",
    }
}

/// Markdown column table of one event table (used to keep the format document in step).
pub fn markdown(table: Table) -> String {
    let mut s =
        String::from("| # | Column | Arrow type | Nullable | Meaning |\n|---|---|---|---|---|\n");
    for (i, c) in layout(table).iter().enumerate() {
        s.push_str(&format!(
            "| {i} | `{}` | {} | {} | {} |\n",
            c.name,
            type_name(&c.data_type),
            if c.nullable { "yes" } else { "no" },
            c.doc.replace('|', "\\|")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_unique_and_keep_every_model_column() {
        for t in Table::ALL {
            let l = layout(t);
            let mut names: Vec<_> = l.iter().map(|c| c.name).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), l.len(), "{}", t.name());
            assert_eq!(l[START_NS].name, "start_ns");
            for c in t.columns() {
                let kept = l
                    .iter()
                    .any(|o| matches!(o.from, Src::Model(n) | Src::ModelDict(n) if n == c.name));
                let replaced = replaced_by_name(t) == Some(c.name) || c.name == "source";
                assert!(kept || replaced, "{}: {} is lost", t.name(), c.name);
            }
        }
    }

    /// The column tables of `formats/parquet/README.md` are generated from the layouts;
    /// run with `ROCPD_BLESS=1` to rewrite them after a change.
    #[test]
    fn format_document_lists_every_column() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../formats/parquet/README.md"
        );
        let mut doc = std::fs::read_to_string(path).expect("formats/parquet/README.md");
        let bless = std::env::var_os("ROCPD_BLESS").is_some();
        for t in Table::ALL {
            let begin = format!("<!-- columns:{} -->\n", table_dir(t));
            let end = format!("<!-- /columns:{} -->", table_dir(t));
            let b = doc.find(&begin).unwrap_or_else(|| panic!("no {begin}")) + begin.len();
            let e = doc[b..].find(&end).unwrap_or_else(|| panic!("no {end}")) + b;
            let want = markdown(t);
            if bless {
                doc.replace_range(b..e, &want);
            } else {
                assert_eq!(
                    doc[b..e],
                    want,
                    "{} columns differ from the document; rerun with ROCPD_BLESS=1",
                    table_dir(t)
                );
            }
        }
        if bless {
            std::fs::write(path, doc).unwrap();
        }
    }
}

//! The dimension tables: one small part file per catalog list and run, written at
//! `finish` into the table's directory (`processes/part-<run>-00000.parquet`).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use rocpd_model::{AgentIndexMode, Catalog, CatalogIndex, Result};

use crate::schema::{SCHEMA_VERSION, SCHEMA_VERSION_KEY};

/// A dimension table being built column by column.
pub(crate) struct Dim {
    /// The table's name (its directory in the dataset).
    pub name: &'static str,
    fields: Vec<Field>,
    columns: Vec<ArrayRef>,
}

impl Dim {
    fn new(name: &'static str) -> Self {
        Dim {
            name,
            fields: Vec::new(),
            columns: Vec::new(),
        }
    }

    fn i64<T>(mut self, name: &str, rows: &[T], f: impl Fn(&T) -> Option<i64>) -> Self {
        let a = Int64Array::from_iter(rows.iter().map(f));
        self.fields.push(Field::new(name, DataType::Int64, true));
        self.columns.push(Arc::new(a));
        self
    }

    fn str<'a, T: 'a>(
        mut self,
        name: &str,
        rows: &'a [T],
        f: impl Fn(&'a T) -> Option<&'a str>,
    ) -> Self {
        let a = StringArray::from_iter(rows.iter().map(f));
        self.fields.push(Field::new(name, DataType::Utf8, true));
        self.columns.push(Arc::new(a));
        self
    }

    /// Required (non-null) integer column.
    fn req<T>(mut self, name: &str, rows: &[T], f: impl Fn(&T) -> i64) -> Self {
        let a = Int64Array::from_iter_values(rows.iter().map(f));
        self.fields.push(Field::new(name, DataType::Int64, false));
        self.columns.push(Arc::new(a));
        self
    }

    /// Required (non-null) string column.
    fn req_str<T>(mut self, name: &str, rows: &[T], f: impl Fn(&T) -> String) -> Self {
        let a = StringArray::from_iter_values(rows.iter().map(f));
        self.fields.push(Field::new(name, DataType::Utf8, false));
        self.columns.push(Arc::new(a));
        self
    }

    pub(crate) fn batch(&self) -> Result<RecordBatch> {
        let meta = HashMap::from([
            (SCHEMA_VERSION_KEY.to_string(), SCHEMA_VERSION.to_string()),
            ("rocpd.table".to_string(), self.name.to_string()),
        ]);
        let schema = Arc::new(Schema::new_with_metadata(self.fields.clone(), meta));
        Ok(RecordBatch::try_new(schema, self.columns.clone())?)
    }
}

/// The dimension tables' names (their directories), in the order they are written.
pub const DIMENSION_TABLES: [&str; 10] = [
    "sources",
    "nodes",
    "processes",
    "threads",
    "agents",
    "queues",
    "streams",
    "kernel_symbols",
    "code_objects",
    "pmc_info",
];

/// The dimension table `name` of `cat` ([`DIMENSION_TABLES`]) as the dataset holds it,
/// or `None` for an unknown name.
pub fn dimension_table(cat: &Catalog, name: &str) -> Option<Result<RecordBatch>> {
    dimension_tables(cat)
        .into_iter()
        .find(|d| d.name == name)
        .map(|d| d.batch())
}

/// Every dimension table of the catalog, in the order they are written.
pub(crate) fn dimension_tables(cat: &Catalog) -> Vec<Dim> {
    let idx = CatalogIndex::new(cat);
    let guid = |s: u32| {
        cat.sources
            .get(s as usize)
            .map(|x| x.guid.clone())
            .unwrap_or_default()
    };
    let host = |s: u32, nid: i64| -> Option<&str> {
        idx.node(s, nid)
            .and_then(|i| cat.nodes[i].hostname.as_deref())
    };

    let sources = Dim::new("sources")
        .req_str("guid", &cat.sources, |r| r.guid.clone())
        .req_str("uuid", &cat.sources, |r| r.uuid.clone())
        .req_str("path", &cat.sources, |r| r.path.display().to_string())
        .req_str("format", &cat.sources, |r| r.format.clone())
        .req_str("schema_version", &cat.sources, |r| r.schema_version.clone());

    let r = &cat.nodes;
    let nodes = Dim::new("nodes")
        .req_str("guid", r, |x| guid(x.source))
        .req("id", r, |x| x.id)
        .i64("hash", r, |x| x.hash)
        .str("machine_id", r, |x| x.machine_id.as_deref())
        .str("hostname", r, |x| x.hostname.as_deref())
        .str("system_name", r, |x| x.system_name.as_deref())
        .str("release", r, |x| x.release.as_deref())
        .str("version", r, |x| x.version.as_deref())
        .str("hardware_name", r, |x| x.hardware_name.as_deref())
        .str("domain_name", r, |x| x.domain_name.as_deref());

    let r = &cat.processes;
    let processes = Dim::new("processes")
        .req_str("guid", r, |x| guid(x.source))
        .req("id", r, |x| x.id)
        .req("nid", r, |x| x.nid)
        .str("hostname", r, |x| host(x.source, x.nid))
        .i64("ppid", r, |x| x.ppid)
        .req("pid", r, |x| x.pid)
        .i64("init", r, |x| x.init)
        .i64("fini", r, |x| x.fini)
        .i64("start", r, |x| x.start)
        .i64("end", r, |x| x.end)
        .str("command", r, |x| x.command.as_deref())
        .str("environment", r, |x| x.environment.as_deref())
        .str("extdata", r, |x| x.extdata.as_deref());

    let r = &cat.threads;
    let threads = Dim::new("threads")
        .req_str("guid", r, |x| guid(x.source))
        .req("id", r, |x| x.id)
        .req("nid", r, |x| x.nid)
        .str("hostname", r, |x| host(x.source, x.nid))
        .i64("ppid", r, |x| x.ppid)
        .req("pid", r, |x| x.pid)
        .req("tid", r, |x| x.tid)
        .str("name", r, |x| x.name.as_deref())
        .i64("start", r, |x| x.start)
        .i64("end", r, |x| x.end)
        .str("extdata", r, |x| x.extdata.as_deref());

    let r = &cat.agents;
    let agents = Dim::new("agents")
        .req_str("guid", r, |x| guid(x.source))
        .req("id", r, |x| x.id)
        .req("nid", r, |x| x.nid)
        .str("hostname", r, |x| host(x.source, x.nid))
        .i64("pid", r, |x| x.pid)
        .req_str("label", r, |x| {
            let (l, n) = x.label(AgentIndexMode::Relative);
            format!("{l} {n}")
        })
        .req_str("type", r, |x| x.agent_type.clone())
        .i64("absolute_index", r, |x| x.absolute_index)
        .i64("logical_index", r, |x| x.logical_index)
        .i64("type_index", r, |x| x.type_index)
        .i64("uuid", r, |x| x.uuid)
        .str("name", r, |x| x.name.as_deref())
        .str("model_name", r, |x| x.model_name.as_deref())
        .str("vendor_name", r, |x| x.vendor_name.as_deref())
        .str("product_name", r, |x| x.product_name.as_deref())
        .str("user_name", r, |x| x.user_name.as_deref())
        .str("extdata", r, |x| x.extdata.as_deref());

    let queue_like = |name: &'static str, r: &[rocpd_model::Queue]| {
        Dim::new(name)
            .req_str("guid", r, |x| guid(x.source))
            .req("id", r, |x| x.id)
            .req("nid", r, |x| x.nid)
            .str("hostname", r, |x| host(x.source, x.nid))
            .i64("pid", r, |x| x.pid)
            .str("name", r, |x| x.name.as_deref())
            .str("extdata", r, |x| x.extdata.as_deref())
    };
    let queues = queue_like("queues", &cat.queues);
    let streams = queue_like("streams", &cat.streams);

    let r = &cat.kernel_symbols;
    let kernel_symbols = Dim::new("kernel_symbols")
        .req_str("guid", r, |x| guid(x.source))
        .req("id", r, |x| x.id)
        .req("nid", r, |x| x.nid)
        .str("hostname", r, |x| host(x.source, x.nid))
        .i64("pid", r, |x| x.pid)
        .i64("code_object_id", r, |x| x.code_object_id)
        .str("kernel_name", r, |x| x.kernel_name.as_deref())
        .str("display_name", r, |x| x.display_name.as_deref())
        .i64("kernel_object", r, |x| x.kernel_object)
        .i64("kernarg_segment_size", r, |x| x.kernarg_segment_size)
        .i64("kernarg_segment_alignment", r, |x| {
            x.kernarg_segment_alignment
        })
        .i64("group_segment_size", r, |x| x.group_segment_size)
        .i64("private_segment_size", r, |x| x.private_segment_size)
        .i64("sgpr_count", r, |x| x.sgpr_count)
        .i64("arch_vgpr_count", r, |x| x.arch_vgpr_count)
        .i64("accum_vgpr_count", r, |x| x.accum_vgpr_count)
        .str("extdata", r, |x| x.extdata.as_deref());

    let r = &cat.code_objects;
    let code_objects = Dim::new("code_objects")
        .req_str("guid", r, |x| guid(x.source))
        .req("id", r, |x| x.id)
        .req("nid", r, |x| x.nid)
        .str("hostname", r, |x| host(x.source, x.nid))
        .i64("pid", r, |x| x.pid)
        .i64("agent_id", r, |x| x.agent_id)
        .str("uri", r, |x| x.uri.as_deref())
        .i64("load_base", r, |x| x.load_base)
        .i64("load_size", r, |x| x.load_size)
        .i64("load_delta", r, |x| x.load_delta)
        .str("storage_type", r, |x| x.storage_type.as_deref())
        .str("extdata", r, |x| x.extdata.as_deref());

    let r = &cat.pmcs;
    let pmc_info = Dim::new("pmc_info")
        .req_str("guid", r, |x| guid(x.source))
        .req("id", r, |x| x.id)
        .req("nid", r, |x| x.nid)
        .str("hostname", r, |x| host(x.source, x.nid))
        .i64("pid", r, |x| x.pid)
        .i64("agent_id", r, |x| x.agent_id)
        .str("target_arch", r, |x| x.target_arch.as_deref())
        .i64("event_code", r, |x| x.event_code)
        .i64("instance_id", r, |x| x.instance_id)
        .req_str("name", r, |x| x.name.clone())
        .str("symbol", r, |x| x.symbol.as_deref())
        .str("description", r, |x| x.description.as_deref())
        .str("long_description", r, |x| x.long_description.as_deref())
        .str("component", r, |x| x.component.as_deref())
        .str("units", r, |x| x.units.as_deref())
        .str("value_type", r, |x| x.value_type.as_deref())
        .str("block", r, |x| x.block.as_deref())
        .str("expression", r, |x| x.expression.as_deref())
        .i64("is_constant", r, |x| x.is_constant)
        .i64("is_derived", r, |x| x.is_derived)
        .str("extdata", r, |x| x.extdata.as_deref());

    vec![
        sources,
        nodes,
        processes,
        threads,
        agents,
        queues,
        streams,
        kernel_symbols,
        code_objects,
        pmc_info,
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_names_are_the_tables_written() {
        let cat = rocpd_model::Catalog::default();
        let names: Vec<&str> = super::dimension_tables(&cat)
            .iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, super::DIMENSION_TABLES);
        assert!(super::dimension_table(&cat, "processes").is_some());
        assert!(super::dimension_table(&cat, "widgets").is_none());
    }
}

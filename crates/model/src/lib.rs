//! The common event model every reader produces and every writer consumes.
//!
//! Events travel as Arrow [`RecordBatch`](arrow_array::RecordBatch)es, each tagged with the
//! canonical [`Table`] it belongs to; every table has one fixed, versioned schema
//! ([`Table::schema`]). Small dimension data (sources, nodes, processes, threads, agents,
//! queues, streams, kernel symbols, code objects, PMC definitions) travels once, ahead of
//! the events, in a [`Catalog`]. The column-by-column specification is in
//! `formats/model/README.md`.

#![warn(missing_docs)]

mod builder;
mod catalog;
mod error;
pub mod hash;
pub mod lanes;
pub mod naming;
mod projection;
mod table;
pub mod tracked;
pub mod view;

pub use builder::{BatchBuilder, ColumnBuilder, BATCH_BYTES};
pub use catalog::{
    Agent, AgentIndexMode, Catalog, CatalogIndex, CodeObject, KernelSymbol, Node, Pmc, Process,
    Queue, SourceInfo, Stream, Thread,
};
pub use error::{describe_json, json_extract_text, Error, Result};
pub use projection::{Projection, JSON_TEXT_COLUMNS};
pub use table::{ColumnKind, ColumnSpec, EventBatch, Table, COMMON_COLUMNS, MODEL_VERSION};

/// Column positions shared by every table (see [`COMMON_COLUMNS`]).
pub mod col {
    /// Index of the input source (into [`crate::Catalog::sources`]).
    pub const SOURCE: usize = 0;
    /// Row id in the source table.
    pub const ID: usize = 1;
    /// Node id.
    pub const NID: usize = 2;
    /// Process id (OS pid).
    pub const PID: usize = 3;
    /// Thread id (OS tid).
    pub const TID: usize = 4;
    /// Start timestamp, ns.
    pub const START: usize = 5;
    /// End timestamp, ns (equal to start for instants).
    pub const END: usize = 6;
}

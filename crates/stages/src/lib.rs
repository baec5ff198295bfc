//! The stages between readers and writers: [`Filter`] (by kind, category, name, node,
//! process, thread, agent), [`Window`] (a time range), and [`SplitSink`], which routes
//! events to one child sink per key (time part, process, node or agent). [`Select`] is
//! the filter and the window in one pass.
//!
//! Every stage counts what it removes. All of them keep flow arrows whole: a flow is
//! written only when every member of its group (the API call and the kernels and copies
//! sharing its internal correlation id) reaches the same output; otherwise the kept
//! members lose their flow markers ([`flows`]).

#![warn(missing_docs)]

pub mod filter;
pub mod flows;
pub mod select;
pub mod split;
pub mod time;
pub mod window;

pub use filter::{Filter, FilterRule};
pub use select::Select;
pub use split::{DeferredCommits, KeyFilter, SplitKey, SplitMode, SplitSink};
pub use window::Window;

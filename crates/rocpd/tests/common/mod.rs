//! Helpers shared by the facade's test binaries.

pub mod counting;

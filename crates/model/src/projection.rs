//! Projection: which columns of the canonical tables a reader fills.
//!
//! A stream keeps every table's full schema (so writers' typed views and the Arrow schema
//! never change), but a column left out of the projection is all null and its value is
//! never read, parsed or copied. Writers declare what they read; a run asks its readers
//! for the union.

use std::collections::BTreeSet;

use crate::Table;

/// The JSON text columns: large, rarely read, and the costliest to build.
pub const JSON_TEXT_COLUMNS: [&str; 5] = [
    "call_stack",
    "line_info",
    "event_extdata",
    "extdata",
    "args",
];

/// Which nullable columns a stream fills. Non-nullable columns are always filled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Projection {
    /// Column names left null (in every table that has them).
    skipped: BTreeSet<&'static str>,
}

impl Projection {
    /// Every column.
    pub fn all() -> Self {
        Projection::default()
    }

    /// Every column but the JSON text columns ([`JSON_TEXT_COLUMNS`]).
    pub fn without_json_text() -> Self {
        Projection {
            skipped: JSON_TEXT_COLUMNS.into_iter().collect(),
        }
    }

    /// Only the columns of `table` named in `columns` (and the non-nullable ones, which
    /// are always filled); other tables' columns are filled. An unknown name is refused.
    pub fn only<S: AsRef<str>>(table: Table, columns: &[S]) -> crate::Result<Self> {
        for c in columns {
            table.find_column(c.as_ref())?;
        }
        let specs = table.columns();
        let skipped = specs
            .iter()
            .filter(|s| s.nullable && !columns.iter().any(|c| c.as_ref() == s.name))
            .map(|s| s.name)
            .collect();
        Ok(Projection { skipped })
    }

    /// This projection, also filling `column`.
    pub fn with(mut self, column: &str) -> Self {
        self.skipped.retain(|c| *c != column);
        self
    }

    /// This projection, leaving `column` null (ignored for a non-nullable column).
    pub fn without(mut self, column: &'static str) -> Self {
        let nullable = Table::ALL
            .iter()
            .any(|t| t.columns().iter().any(|c| c.name == column && c.nullable));
        if nullable {
            self.skipped.insert(column);
        }
        self
    }

    /// What two consumers need together: a column is filled when either fills it.
    pub fn union(&self, other: &Projection) -> Projection {
        Projection {
            skipped: self.skipped.intersection(&other.skipped).copied().collect(),
        }
    }

    /// Whether the stream fills `column`.
    pub fn fills(&self, column: &str) -> bool {
        !self.skipped.contains(column)
    }

    /// The columns left null, in name order.
    pub fn skipped(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.skipped.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_fills_what_either_side_fills() {
        let a = Projection::without_json_text();
        let b = Projection::without_json_text().with("args");
        let u = a.union(&b);
        assert!(u.fills("args"));
        assert!(!u.fills("extdata"));
        assert!(a.union(&Projection::all()).fills("extdata"));
    }

    #[test]
    fn only_fills_the_named_and_required_columns() {
        let p = Projection::only(Table::KernelDispatch, &["kernel_name", "grid_x"]).unwrap();
        assert!(p.fills("grid_x"));
        assert!(p.fills("start"), "required columns are always filled");
        assert!(!p.fills("extdata") && !p.fills("grid_y"));
        assert!(Projection::only(Table::KernelDispatch, &["colour"]).is_err());
    }

    #[test]
    fn required_columns_cannot_be_skipped() {
        let p = Projection::all().without("start").without("message");
        assert!(p.fills("start"));
        assert!(!p.fills("message"));
    }
}

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

/// A row's columns that come from its event (`rocpd_event`) rather than the row itself,
/// besides the JSON text: what a timeline writer that shows counter values as counter
/// tracks does not read of them.
const EVENT_LINK_COLUMNS: [&str; 4] = ["category", "stack_id", "parent_stack_id", "correlation_id"];

/// Which nullable columns a stream fills, table by table. Non-nullable columns are always
/// filled.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Projection {
    /// (table, column) pairs left null. A name with no pair for a table is filled there.
    skipped: BTreeSet<(Table, &'static str)>,
}

/// The nullable columns named `column`, one pair per table that has it.
fn nullable_in(column: &str) -> impl Iterator<Item = (Table, &'static str)> + '_ {
    Table::ALL.iter().filter_map(move |t| {
        t.columns()
            .iter()
            .find(|c| c.name == column && c.nullable)
            .map(|c| (*t, c.name))
    })
}

impl Projection {
    /// Every column.
    pub fn all() -> Self {
        Projection::default()
    }

    /// Every column but the JSON text columns ([`JSON_TEXT_COLUMNS`]).
    pub fn without_json_text() -> Self {
        JSON_TEXT_COLUMNS
            .into_iter()
            .fold(Projection::all(), |p, c| p.without(c))
    }

    /// Only the columns of `table` named in `columns` (and the non-nullable ones, which
    /// are always filled); other tables' columns are filled. An unknown name is refused.
    pub fn only<S: AsRef<str>>(table: Table, columns: &[S]) -> crate::Result<Self> {
        for c in columns {
            table.find_column(c.as_ref())?;
        }
        let skipped = table
            .columns()
            .iter()
            .filter(|s| s.nullable && !columns.iter().any(|c| c.as_ref() == s.name))
            .map(|s| (table, s.name))
            .collect();
        Ok(Projection { skipped })
    }

    /// This projection, also filling `column` in every table.
    pub fn with(mut self, column: &str) -> Self {
        self.skipped.retain(|(_, c)| *c != column);
        self
    }

    /// This projection, leaving `column` null in every table (ignored where it is not
    /// nullable).
    pub fn without(mut self, column: &str) -> Self {
        self.skipped.extend(nullable_in(column));
        self
    }

    /// This projection, leaving `column` null in `table` only (ignored where it is not
    /// nullable): a writer that shows a table without some of its columns.
    pub fn without_in(mut self, table: Table, column: &str) -> Self {
        self.skipped
            .extend(nullable_in(column).filter(|(t, _)| *t == table));
        self
    }

    /// This projection, leaving the event columns (`category`, `stack_id`, `parent_stack_id`, `correlation_id`) null in `table`.
    pub fn without_event_columns_in(self, table: Table) -> Self {
        EVENT_LINK_COLUMNS
            .into_iter()
            .fold(self, |p, c| p.without_in(table, c))
    }

    /// What two consumers need together: a column is filled when either fills it.
    pub fn union(&self, other: &Projection) -> Projection {
        Projection {
            skipped: self.skipped.intersection(&other.skipped).copied().collect(),
        }
    }

    /// Whether the stream of `table` fills `column`.
    pub fn fills_in(&self, table: Table, column: &str) -> bool {
        // The set is covariant: as a set of shorter-lived names it takes `column` as is.
        let skipped: &BTreeSet<(Table, &str)> = &self.skipped;
        !skipped.contains(&(table, column))
    }

    /// Whether the stream of some table that has `column` fills it (a reader that
    /// computes a value once for several tables asks this).
    pub fn fills(&self, column: &str) -> bool {
        let mut tables = Table::ALL
            .iter()
            .filter(|t| t.columns().iter().any(|c| c.name == column))
            .peekable();
        // A name no table has is "filled": nothing to leave out.
        tables.peek().is_none() || tables.any(|t| self.fills_in(*t, column))
    }

    /// The (table, column) pairs left null, in table and name order.
    pub fn skipped(&self) -> impl Iterator<Item = (Table, &'static str)> + '_ {
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
        assert!(!p.fills_in(Table::KernelDispatch, "extdata") && !p.fills("grid_y"));
        // Other tables keep every column: their streams are not the one asked about.
        assert!(p.fills_in(Table::Region, "extdata") && p.fills("extdata"));
        assert!(Projection::only(Table::KernelDispatch, &["colour"]).is_err());
    }

    #[test]
    fn a_column_left_out_of_one_table_stays_in_the_others() {
        let p = Projection::all().without_in(Table::PmcValue, "category");
        assert!(!p.fills_in(Table::PmcValue, "category"));
        assert!(p.fills_in(Table::KernelDispatch, "category"));
        assert!(p.fills("category"), "some table still fills it");
        let none = Table::ALL
            .iter()
            .fold(Projection::all(), |p, t| p.without_in(*t, "category"));
        assert!(!none.fills("category"));
        assert_eq!(none, Projection::all().without("category"));
        let counters = Projection::all().without_event_columns_in(Table::PmcValue);
        for c in ["category", "stack_id", "parent_stack_id", "correlation_id"] {
            assert!(!counters.fills_in(Table::PmcValue, c) && counters.fills_in(Table::Region, c));
        }
        assert!(counters.fills_in(Table::PmcValue, "event_id"));
        // The union fills it where either side does.
        let u = p.union(&Projection::all().without_in(Table::Region, "category"));
        assert_eq!(u, Projection::all());
    }

    #[test]
    fn required_columns_cannot_be_skipped() {
        let p = Projection::all().without("start").without("message");
        assert!(p.fills("start"));
        assert!(!p.fills("message"));
    }
}

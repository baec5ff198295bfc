//! Process and thread references, resolved to the OS ids.
//!
//! The schema makes the `pid` column of every table but `rocpd_info_process` a reference
//! to `rocpd_info_process.id`, and every `tid` column but `rocpd_info_thread`'s a
//! reference to `rocpd_info_thread.id`; the OS ids are `rocpd_info_process.pid` and
//! `rocpd_info_thread.tid`. rocprofv3 writes row id = OS id, so most files need no
//! translation; a database whose ids differ (the schema allows it, a merge tool may
//! renumber) would otherwise show row ids where users expect the pids `rocpd info`
//! prints. The model carries OS ids everywhere (D38); the row ids stay in the catalog
//! (`Process::id`, `Thread::id`).
//!
//! A reference with no info row is kept as it is: it is the only id there is, and for
//! rocprofv3 files it is the OS id.

use rocpd_model::hash::FastMap;

/// One table set's `id → OS id` maps, holding only the entries where the two differ.
#[derive(Debug, Default, Clone)]
pub(crate) struct Ids {
    processes: FastMap<i64, i64>,
    threads: FastMap<i64, i64>,
}

impl Ids {
    /// Maps from `(row id, OS id)` pairs of the process and thread tables.
    pub(crate) fn new(
        processes: impl IntoIterator<Item = (i64, i64)>,
        threads: impl IntoIterator<Item = (i64, i64)>,
    ) -> Ids {
        fn differing(pairs: impl IntoIterator<Item = (i64, i64)>) -> FastMap<i64, i64> {
            pairs.into_iter().filter(|(id, os)| id != os).collect()
        }
        Ids {
            processes: differing(processes),
            threads: differing(threads),
        }
    }

    /// Whether every reference already is the OS id.
    pub(crate) fn is_identity(&self) -> bool {
        self.processes.is_empty() && self.threads.is_empty()
    }

    /// The OS pid of a process reference.
    pub(crate) fn pid(&self, reference: i64) -> i64 {
        self.processes.get(&reference).copied().unwrap_or(reference)
    }

    /// The OS tid of a thread reference.
    pub(crate) fn tid(&self, reference: i64) -> i64 {
        self.threads.get(&reference).copied().unwrap_or(reference)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_map_to_os_ids_and_unknown_ones_stay() {
        let ids = Ids::new([(1, 40000), (2, 2)], [(1, 40000), (2, 40001)]);
        assert!(!ids.is_identity());
        assert_eq!(ids.pid(1), 40000);
        assert_eq!(ids.pid(2), 2);
        assert_eq!(ids.pid(7), 7);
        assert_eq!(ids.tid(2), 40001);
        assert!(Ids::new([(5, 5)], [(6, 6)]).is_identity());
    }
}

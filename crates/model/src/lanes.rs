//! Lanes: placing slices that overlap without nesting on extra tracks of their key.
//!
//! Timeline formats (Perfetto tracks, OTF2 locations) require that slices on one track
//! nest. Real data does not always: async ranges, kernels overlapping on one queue. A key
//! (a thread, a stream, a queue) therefore owns a group of lanes; a slice goes to the
//! first lane of its key on which it nests, or to a new lane. Slices arrive in start
//! order and their ends are closed by the caller in end order, so a lane's open slices
//! are a stack and a slice nests on a lane when it ends no later than the lane's top.
//!
//! [`Lanes`] keeps the grouping and the open stacks; what a lane is in the output (a
//! track uuid, an event file) stays with the writer, indexed by the same lane number.

use std::hash::Hash;

use crate::hash::FastMap;

/// Where a slice goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// An existing lane.
    Lane(usize),
    /// A new lane, number `n` of its key (0 for the key's first); the caller creates its
    /// output track, then registers it with [`Lanes::add`].
    New(usize),
}

/// The lanes of every key, with the open slices of each lane (their end, and `V`, what
/// the writer needs at the end: an OTF2 region, or nothing).
#[derive(Debug)]
pub struct Lanes<K, V = ()> {
    groups: FastMap<K, Vec<usize>>,
    open: Vec<Vec<(i64, V)>>,
    extra_slices: u64,
}

impl<K: Hash + Eq + Clone, V> Default for Lanes<K, V> {
    fn default() -> Self {
        Lanes {
            groups: FastMap::default(),
            open: Vec::new(),
            extra_slices: 0,
        }
    }
}

impl<K: Hash + Eq + Clone, V> Lanes<K, V> {
    /// No lanes.
    pub fn new() -> Self {
        Self::default()
    }

    /// The first lane of `key` on which a slice ending at `end` nests, or a new one.
    /// Slices put on any lane but a key's first are counted ([`Lanes::extra_slices`]).
    pub fn place(&mut self, key: &K, end: i64) -> Slot {
        match self.groups.get(key) {
            Some(group) => {
                for (n, &l) in group.iter().enumerate() {
                    if self.open[l].last().is_none_or(|&(top, _)| top >= end) {
                        if n > 0 {
                            self.extra_slices += 1;
                        }
                        return Slot::Lane(l);
                    }
                }
                self.extra_slices += 1;
                Slot::New(group.len())
            }
            None => Slot::New(0),
        }
    }

    /// The first lane of `key`, if it has one (for instants, which always nest).
    pub fn first(&self, key: &K) -> Option<usize> {
        self.groups.get(key).and_then(|g| g.first()).copied()
    }

    /// Lanes `key` has.
    pub fn count(&self, key: &K) -> usize {
        self.groups.get(key).map_or(0, Vec::len)
    }

    /// Adds a lane to `key`'s group; returns its lane number (lanes are numbered in the
    /// order they are added, over all keys).
    pub fn add(&mut self, key: &K) -> usize {
        let lane = self.open.len();
        self.open.push(Vec::new());
        match self.groups.get_mut(key) {
            Some(g) => g.push(lane),
            None => {
                self.groups.insert(key.clone(), vec![lane]);
            }
        }
        lane
    }

    /// Opens a slice ending at `end` on `lane`.
    pub fn open(&mut self, lane: usize, end: i64, v: V) {
        self.open[lane].push((end, v));
    }

    /// Closes the innermost open slice of `lane`.
    pub fn close(&mut self, lane: usize) -> Option<(i64, V)> {
        self.open[lane].pop()
    }

    /// Lanes over all keys.
    pub fn lanes(&self) -> usize {
        self.open.len()
    }

    /// Lanes beyond each key's first.
    pub fn extra_lanes(&self) -> usize {
        self.open.len() - self.groups.len()
    }

    /// Slices put on a lane other than their key's first.
    pub fn extra_slices(&self) -> u64 {
        self.extra_slices
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_slices_share_a_lane_and_overlapping_ones_get_another() {
        let mut l: Lanes<u32> = Lanes::new();
        assert_eq!(l.place(&7, 100), Slot::New(0));
        let a = l.add(&7);
        l.open(a, 100, ());
        // [10, 50] nests in [0, 100].
        assert_eq!(l.place(&7, 50), Slot::Lane(a));
        l.open(a, 50, ());
        // [20, 80] overlaps [10, 50] without nesting: a second lane.
        assert_eq!(l.place(&7, 80), Slot::New(1));
        let b = l.add(&7);
        l.open(b, 80, ());
        assert_eq!((l.extra_slices(), l.extra_lanes()), (1, 1));
        assert_eq!(l.close(a), Some((50, ())));
        // Nests on the first lane again.
        assert_eq!(l.place(&7, 90), Slot::Lane(a));
        assert_eq!(l.first(&7), Some(a));
        assert_eq!((l.count(&7), l.count(&8), l.lanes()), (2, 0, 2));
    }
}

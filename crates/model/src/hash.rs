//! Hashing for keys the program makes itself: a fast non-cryptographic [`FastHasher`]
//! for interning tables and track maps, and FNV-1a 64 ([`fnv1a64`]), the stable hash
//! behind guids, track uuids and node ids.
//!
//! The maps of the writers and stages are keyed by ids and names from the traces being
//! converted and are looked up once or more per row; SipHash, the standard library's
//! default, protects against adversarial keys at a cost per lookup that shows on such hot
//! paths. A crafted trace could at worst make one conversion slower, which is no
//! concern for a local tool. FNV-1a is kept separately because its values are written
//! into outputs (guids, uuids) and must never change.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a 64 offset basis.
pub const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// A second offset basis, for a second, independent 64 bits of one input (guids).
pub const FNV_OFFSET_2: u64 = 0x6c62_272e_07bb_0142;
/// FNV-1a 64 prime.
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64 of `bytes`, starting from `state` ([`FNV_OFFSET`] for a fresh hash; a
/// previous result to continue one, so a hash can be fed in pieces).
pub fn fnv1a64(bytes: &[u8], state: u64) -> u64 {
    bytes
        .iter()
        .fold(state, |h, b| (h ^ u64::from(*b)).wrapping_mul(FNV_PRIME))
}

/// A multiply-rotate hasher over 64-bit words: a few instructions per word, no
/// protection against chosen keys (see the module documentation).
#[derive(Debug, Default, Clone, Copy)]
pub struct FastHasher {
    h: u64,
}

/// An odd constant with well-spread bits (from the golden ratio), the multiplier.
const SEED: u64 = 0x9e37_79b9_7f4a_7c15;

impl FastHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.h = (self.h.rotate_left(5) ^ w).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            // The length tells "ab" from "ab\0".
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The product's best-mixed bits are the high ones; the table indexes by the low.
        self.h.rotate_left(26)
    }
}

/// Builds [`FastHasher`]s.
pub type FastBuild = BuildHasherDefault<FastHasher>;
/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, FastBuild>;
/// A `HashSet` with [`FastHasher`].
pub type FastSet<K> = HashSet<K, FastBuild>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    #[test]
    fn fnv1a64_matches_the_published_test_vectors() {
        assert_eq!(fnv1a64(b"", FNV_OFFSET), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a", FNV_OFFSET), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar", FNV_OFFSET), 0x8594_4171_f739_67e8);
        // Fed in pieces equals fed at once.
        assert_eq!(
            fnv1a64(b"bar", fnv1a64(b"foo", FNV_OFFSET)),
            fnv1a64(b"foobar", FNV_OFFSET)
        );
    }

    fn hash<T: Hash>(t: &T) -> u64 {
        FastBuild::default().hash_one(t)
    }

    #[test]
    fn fast_hasher_tells_near_keys_apart() {
        assert_ne!(hash(&"ab"), hash(&"ab\0"));
        assert_ne!(hash(&(1u32, 2i64)), hash(&(2u32, 1i64)));
        assert_ne!(hash(&"abcdefgh"), hash(&"abcdefgi"));
        let mut m: FastMap<(u32, i64), usize> = FastMap::default();
        for i in 0..10_000 {
            m.insert((i as u32 % 7, i), i as usize);
        }
        assert_eq!(m.len(), 10_000);
        assert_eq!(m[&(3, 10)], 10);
    }
}

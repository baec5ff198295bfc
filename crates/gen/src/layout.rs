//! The generated cluster: which nodes exist, which processes run where, and
//! their stable identities (hostnames, machine ids, node ids, pids, guids,
//! base timestamps). Everything here is a pure function of the config, so
//! each process database can be written independently (and in parallel).

use crate::rng::{mix64, Rng};
use crate::GenConfig;

/// Base of the BOOTTIME-like clock all timestamps start from (ns).
pub const BASE_TS: i64 = 5_000_000_000_000;

/// One node of the generated cluster.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Node index `0..nodes`.
    pub index: u32,
    /// `rocpd_info_node.id`: a 32-bit hash of the machine id.
    pub id: i64,
    /// `rocpd_info_node.hash`: a 63-bit hash of the machine id.
    pub hash: i64,
    /// 32 lowercase hex digits (like `/etc/machine-id`).
    pub machine_id: String,
    /// `node-00`, `node-01`, …
    pub hostname: String,
    /// Kernel release.
    pub release: String,
    /// Kernel version string.
    pub version: String,
}

/// One profiled process (one output database).
#[derive(Debug, Clone)]
pub struct ProcInfo {
    /// Global rank `0..processes`.
    pub rank: u32,
    /// Index of the node it runs on.
    pub node: u32,
    /// Rank among the processes of its node.
    pub local_rank: u32,
    /// OS pid, unique across the whole generated set.
    pub pid: i64,
    /// Parent pid (the per-node launcher).
    pub ppid: i64,
    /// UUIDv7-looking guid of the database.
    pub guid: String,
    /// First timestamp of the process's activity (ns).
    pub base_ts: i64,
}

/// FNV-1a 64-bit hash of a byte string.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// All nodes of the configuration.
pub fn nodes(cfg: &GenConfig) -> Vec<NodeInfo> {
    (0..cfg.nodes)
        .map(|index| {
            let mut rng = Rng::new(cfg.seed, 0x6e6f_6465_0000 + u64::from(index));
            let machine_id = rng.hex(32);
            let h = fnv1a64(machine_id.as_bytes()) % (i64::MAX as u64);
            NodeInfo {
                index,
                id: (h % u64::from(u32::MAX)) as i64,
                hash: h as i64,
                machine_id,
                hostname: format!("node-{index:02}"),
                release: "6.8.0-49-generic".to_string(),
                version: format!(
                    "#49~22.04.1-Ubuntu SMP PREEMPT_DYNAMIC Wed Nov {:2} 17:42:15 UTC 2024",
                    1 + index % 28
                ),
            }
        })
        .collect()
}

/// A UUIDv7-looking guid derived from the seed and pid.
fn guid(seed: u64, pid: i64, rank: u32) -> String {
    let mut rng = Rng::new(seed, 0x6775_6964_0000_0000 ^ pid as u64);
    // 48-bit unix-ms timestamp around mid 2025, varying with the seed and
    // increasing with the rank.
    let ms: u64 = 0x0197_c1a2_0000 + (mix64(seed) % 0x10_0000) * 0x10 + u64::from(rank) * 7;
    let rand_a = rng.below(0x1000);
    let variant = 0x8 + rng.below(4);
    let rand_b = rng.below(0x1000);
    let node = rng.next_u64() & 0xffff_ffff_ffff;
    format!(
        "{:08x}-{:04x}-7{:03x}-{:x}{:03x}-{:012x}",
        ms >> 16,
        ms & 0xffff,
        rand_a,
        variant,
        rand_b,
        node
    )
}

/// All processes of the configuration: rank `k` runs on node `k % nodes`
/// with pid `4000 + 37 k`.
pub fn processes(cfg: &GenConfig) -> Vec<ProcInfo> {
    (0..cfg.processes)
        .map(|rank| {
            let node = rank % cfg.nodes;
            let pid = 4000 + 37 * i64::from(rank);
            let mut rng = Rng::new(cfg.seed, 0x7473_0000 + u64::from(rank));
            ProcInfo {
                rank,
                node,
                local_rank: rank / cfg.nodes,
                pid,
                ppid: 3900 + i64::from(node),
                guid: guid(cfg.seed, pid, rank),
                // Processes start staggered by ~1.5 ms so they overlap.
                base_ts: BASE_TS + i64::from(rank) * 1_500_000 + rng.range(0, 500_000),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_look_like_uuid_v7_and_differ() {
        let cfg = GenConfig {
            processes: 5,
            nodes: 2,
            ..GenConfig::default()
        };
        let ps = processes(&cfg);
        let mut seen = std::collections::BTreeSet::new();
        for p in &ps {
            let g = &p.guid;
            assert_eq!(g.len(), 36, "{g}");
            let parts: Vec<_> = g.split('-').collect();
            assert_eq!(
                parts.iter().map(|s| s.len()).collect::<Vec<_>>(),
                [8, 4, 4, 4, 12]
            );
            assert!(parts[2].starts_with('7'));
            assert!(matches!(parts[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'));
            assert!(g.starts_with("0197") || g.starts_with("0198"), "{g}");
            assert!(seen.insert(g.clone()));
        }
        assert_eq!(ps[3].node, 1);
        assert_eq!(ps[3].local_rank, 1);
        let other = processes(&GenConfig {
            seed: 2,
            ..cfg.clone()
        });
        assert_ne!(other[0].guid, ps[0].guid);
        let ns = nodes(&cfg);
        assert_eq!(ns[1].hostname, "node-01");
        assert!(ns[0].id >= 0 && ns[0].id < i64::from(u32::MAX));
        assert_ne!(ns[0].machine_id, ns[1].machine_id);
    }
}

//! End-to-end checks of generated databases: determinism, SQLite integrity
//! and foreign keys, API ↔ GPU-activity correlation, linear scaling, odd
//! names, naming and overwrite refusal.

use rocpd_gen::{generate, table_row_counts, GenConfig};
use rocpd_schema::{table_name, uuid_suffix, TABLES};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn open(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap()
}

/// Every row of every table, in id order, as text.
fn dump(path: &Path) -> String {
    let conn = open(path);
    let mut out = String::new();
    for t in TABLES {
        writeln!(out, "## {t}").unwrap();
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM \"{t}\" ORDER BY id"))
            .unwrap();
        let n = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..n {
                match row.get_ref(i).unwrap() {
                    ValueRef::Null => out.push_str("NULL"),
                    ValueRef::Integer(v) => write!(out, "{v}").unwrap(),
                    ValueRef::Real(v) => write!(out, "{v:?}").unwrap(),
                    ValueRef::Text(v) => write!(out, "{:?}", String::from_utf8_lossy(v)).unwrap(),
                    ValueRef::Blob(v) => write!(out, "{v:?}").unwrap(),
                }
                out.push('|');
            }
            out.push('\n');
        }
    }
    out
}

fn small(seed: u64) -> GenConfig {
    GenConfig {
        seed,
        nodes: 2,
        processes: 3,
        gpus_per_node: 2,
        threads_per_process: 4,
        iterations: 12,
        odd_names: true,
        row_ids: false,
    }
}

fn gen(cfg: &GenConfig) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let paths = generate(cfg, dir.path()).unwrap();
    (dir, paths)
}

fn total_rows(paths: &[PathBuf]) -> u64 {
    paths
        .iter()
        .flat_map(|p| table_row_counts(p).unwrap())
        .map(|(_, n)| n)
        .sum()
}

fn scalar(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn deterministic_for_a_seed_and_different_across_seeds() {
    let (_a, pa) = gen(&small(7));
    let (_b, pb) = gen(&small(7));
    let (_c, pc) = gen(&small(8));
    assert_eq!(pa.len(), 3);
    for (x, y) in pa.iter().zip(&pb) {
        assert_eq!(x.file_name(), y.file_name());
        assert_eq!(dump(x), dump(y), "{}", x.display());
        assert_eq!(std::fs::read(x).unwrap(), std::fs::read(y).unwrap());
    }
    for (x, z) in pa.iter().zip(&pc) {
        assert_eq!(x.file_name(), z.file_name());
        assert_ne!(dump(x), dump(z));
    }
}

#[test]
fn integrity_foreign_keys_and_metadata() {
    let (_d, paths) = gen(&small(3));
    let names: Vec<_> = paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "node-00_4000_results.db",
            "node-01_4037_results.db",
            "node-00_4074_results.db"
        ]
    );
    let mut guids = Vec::new();
    for p in &paths {
        let conn = open(p);
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
        let mut stmt = conn.prepare("PRAGMA foreign_key_check").unwrap();
        let violations: Vec<String> = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert!(violations.is_empty(), "{}: {violations:?}", p.display());
        // Metadata and suffixed table names agree.
        let meta: Vec<(String, String)> = conn
            .prepare("SELECT tag, value FROM rocpd_metadata ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(meta[0], ("schema_version".into(), "3".into()));
        let guid = meta[2].1.clone();
        assert_eq!(meta[1].1, uuid_suffix(&guid));
        for t in TABLES {
            let n = scalar(
                &conn,
                &format!(
                    "SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name='{}'",
                    table_name(t, &guid)
                ),
            );
            assert_eq!(n, 1, "{t}");
        }
        let other_guids = scalar(
            &conn,
            &format!("SELECT COUNT(*) FROM rocpd_event WHERE guid != '{guid}'"),
        );
        assert_eq!(other_guids, 0);
        // Process id = pid, main thread tid = pid, nid matches the node.
        let pid = scalar(&conn, "SELECT pid FROM rocpd_info_process");
        assert_eq!(scalar(&conn, "SELECT id FROM rocpd_info_process"), pid);
        assert_eq!(
            scalar(
                &conn,
                &format!("SELECT COUNT(*) FROM rocpd_info_thread WHERE tid = {pid}")
            ),
            1
        );
        assert_eq!(
            scalar(&conn, "SELECT nid FROM rocpd_info_process"),
            scalar(&conn, "SELECT id FROM rocpd_info_node")
        );
        guids.push(guid);
    }
    guids.sort();
    guids.dedup();
    assert_eq!(guids.len(), 3);
}

#[test]
fn gpu_activity_correlates_to_api_regions() {
    let (_d, paths) = gen(&small(5));
    for p in &paths {
        let conn = open(p);
        let kernels = scalar(&conn, "SELECT COUNT(*) FROM rocpd_kernel_dispatch");
        assert!(kernels > 50);
        // Every dispatch has a hipLaunchKernel region with id == stack_id,
        // on the same thread, starting before the kernel.
        let orphans = scalar(
            &conn,
            "SELECT COUNT(*) FROM rocpd_kernel_dispatch k
             JOIN rocpd_event e ON e.id = k.event_id
             LEFT JOIN rocpd_region r ON r.id = e.stack_id AND r.tid = k.tid AND r.start <= k.start
             LEFT JOIN rocpd_string s ON s.id = r.name_id
             WHERE r.id IS NULL OR s.string != 'hipLaunchKernel' OR e.parent_stack_id != r.id",
        );
        assert_eq!(orphans, 0, "{}", p.display());
        // Every copy has a hipMemcpy/hipMemcpyAsync region.
        let copies = scalar(&conn, "SELECT COUNT(*) FROM rocpd_memory_copy");
        assert!(copies > 5);
        let orphans = scalar(
            &conn,
            "SELECT COUNT(*) FROM rocpd_memory_copy c
             JOIN rocpd_event e ON e.id = c.event_id
             LEFT JOIN rocpd_region r ON r.id = e.stack_id
             LEFT JOIN rocpd_string s ON s.id = r.name_id
             WHERE r.id IS NULL OR s.string NOT IN ('hipMemcpy', 'hipMemcpyAsync')",
        );
        assert_eq!(orphans, 0, "{}", p.display());
        // Every API launch has exactly one dispatch.
        let launches = scalar(
            &conn,
            "SELECT COUNT(*) FROM rocpd_region r JOIN rocpd_string s ON s.id = r.name_id
             WHERE s.string = 'hipLaunchKernel'",
        );
        assert_eq!(launches, kernels);
        // Every allocation row correlates to an API region.
        let orphans = scalar(
            &conn,
            "SELECT COUNT(*) FROM rocpd_memory_allocate a
             JOIN rocpd_event e ON e.id = a.event_id
             LEFT JOIN rocpd_region r ON r.id = e.stack_id
             WHERE r.id IS NULL",
        );
        assert_eq!(orphans, 0);
        // One event per region, sample, dispatch, copy and allocation.
        let rows = scalar(
            &conn,
            "SELECT (SELECT COUNT(*) FROM rocpd_region) + (SELECT COUNT(*) FROM rocpd_sample)
             + (SELECT COUNT(*) FROM rocpd_kernel_dispatch) + (SELECT COUNT(*) FROM rocpd_memory_copy)
             + (SELECT COUNT(*) FROM rocpd_memory_allocate)",
        );
        assert_eq!(rows, scalar(&conn, "SELECT COUNT(*) FROM rocpd_event"));
        // Realistic shapes: durations, ties, overlaps, zero-length records.
        assert_eq!(
            scalar(
                &conn,
                "SELECT COUNT(*) FROM rocpd_region WHERE \"end\" < start"
            ),
            0
        );
        assert!(
            scalar(
                &conn,
                "SELECT COUNT(*) FROM rocpd_region WHERE \"end\" = start"
            ) >= 1
        );
        assert!(
            scalar(
                &conn,
                "SELECT COUNT(*) FROM rocpd_kernel_dispatch WHERE \"end\" = start"
            ) >= 1
        );
        assert_eq!(
            scalar(
                &conn,
                "SELECT COUNT(*) FROM rocpd_kernel_dispatch
                 WHERE \"end\" - start > 5000000 OR (\"end\" != start AND \"end\" - start < 5000)"
            ),
            0
        );
        // Kernels on one queue: some exact ties and some partial overlaps.
        let ties = scalar(
            &conn,
            "SELECT COUNT(*) FROM rocpd_kernel_dispatch a JOIN rocpd_kernel_dispatch b
             ON a.queue_id = b.queue_id AND a.id < b.id AND a.start = b.start AND a.\"end\" = b.\"end\"",
        );
        assert!(ties >= 1, "{}", p.display());
        let partial = scalar(
            &conn,
            "SELECT COUNT(*) FROM rocpd_kernel_dispatch a JOIN rocpd_kernel_dispatch b
             ON a.queue_id = b.queue_id AND a.id < b.id
             AND b.start > a.start AND b.start < a.\"end\" AND b.\"end\" > a.\"end\"",
        );
        assert!(partial >= 1, "{}", p.display());
        // ROCTx start/stop ranges overlap without nesting on one thread.
        let overlapping = scalar(
            &conn,
            "SELECT COUNT(*) FROM rocpd_region a JOIN rocpd_region b
             ON a.tid = b.tid AND b.start > a.start AND b.start < a.\"end\" AND b.\"end\" > a.\"end\"",
        );
        assert!(overlapping >= 1);
        // Rows are not stored in start order.
        assert!(
            scalar(
                &conn,
                "SELECT COUNT(*) FROM rocpd_region a JOIN rocpd_region b ON b.id = a.id + 1
                 WHERE b.start < a.start"
            ) > 0
        );
        // PMC values for every dispatch.
        assert_eq!(
            scalar(
                &conn,
                "SELECT COUNT(*) FROM rocpd_kernel_dispatch k
                 WHERE NOT EXISTS (SELECT 1 FROM rocpd_pmc_event p WHERE p.event_id = k.event_id)"
            ),
            0
        );
        // The rocprof-sys style track: no thread, pid set, periodic samples.
        assert!(
            scalar(
                &conn,
                "SELECT COUNT(*) FROM rocpd_sample s JOIN rocpd_track t ON t.id = s.track_id
                 WHERE t.tid IS NULL AND t.pid IS NOT NULL"
            ) >= 5
        );
    }
}

#[test]
fn rows_scale_linearly_with_iterations() {
    let base = GenConfig {
        iterations: 15,
        odd_names: false,
        ..small(11)
    };
    let (_a, pa) = gen(&base);
    let (_b, pb) = gen(&GenConfig {
        iterations: 150,
        ..base.clone()
    });
    let (ra, rb) = (total_rows(&pa), total_rows(&pb));
    let ratio = rb as f64 / ra as f64;
    assert!((8.5..=11.0).contains(&ratio), "{ra} -> {rb}: x{ratio:.2}");
}

#[test]
fn odd_names_only_when_enabled() {
    let query = "SELECT COUNT(*) FROM (
        SELECT display_name AS s FROM rocpd_info_kernel_symbol
        UNION ALL SELECT string FROM rocpd_string
        UNION ALL SELECT extdata FROM rocpd_event)
        WHERE s LIKE '%\"%' ESCAPE '\\' OR instr(s, char(10)) OR instr(s, char(9)) OR s LIKE '%核%'";
    let (_a, odd) = gen(&GenConfig {
        processes: 1,
        ..small(2)
    });
    let conn = open(&odd[0]);
    assert!(scalar(&conn, query) > 5);
    for probe in ["\n", "\t", "\"", "核", "µ", ","] {
        let n: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM rocpd_info_kernel_symbol WHERE instr(display_name, ?1)",
                [probe],
                |r| r.get(0),
            )
            .unwrap();
        assert!(n > 0, "no display name with {probe:?}");
    }
    assert!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM rocpd_info_kernel_symbol WHERE display_name = ''"
        ) > 0
    );
    assert!(
        scalar(
            &conn,
            "SELECT MAX(length(display_name)) FROM rocpd_info_kernel_symbol"
        ) >= 1900
    );
    let (_b, plain) = gen(&GenConfig {
        processes: 1,
        odd_names: false,
        ..small(2)
    });
    let conn = open(&plain[0]);
    let plain_query = query.replace("SELECT extdata FROM rocpd_event", "SELECT '' ");
    assert_eq!(scalar(&conn, &plain_query), 0);
    let cmd: String = conn
        .query_row("SELECT command FROM rocpd_info_process", [], |r| r.get(0))
        .unwrap();
    assert!(!cmd.contains('"'));
}

#[test]
fn refuses_to_overwrite_and_rejects_bad_configs() {
    let cfg = GenConfig {
        processes: 1,
        iterations: 2,
        ..GenConfig::default()
    };
    let (dir, paths) = gen(&cfg);
    let before = std::fs::read(&paths[0]).unwrap();
    let err = generate(&cfg, dir.path()).unwrap_err();
    assert!(format!("{err:#}").contains("refusing to overwrite"));
    assert_eq!(std::fs::read(&paths[0]).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1);
    for bad in [
        GenConfig {
            threads_per_process: 1,
            ..cfg.clone()
        },
        GenConfig {
            nodes: 0,
            ..cfg.clone()
        },
        GenConfig {
            gpus_per_node: 0,
            ..cfg.clone()
        },
        GenConfig {
            processes: 0,
            ..cfg.clone()
        },
    ] {
        assert!(generate(&bad, dir.path()).is_err());
    }
}

#[test]
fn minimal_config_works() {
    let (_d, paths) = gen(&GenConfig {
        seed: 9,
        nodes: 1,
        processes: 1,
        gpus_per_node: 1,
        threads_per_process: 2,
        iterations: 3,
        odd_names: false,
        row_ids: false,
    });
    let conn = open(&paths[0]);
    let violations = scalar(&conn, "SELECT COUNT(*) FROM pragma_foreign_key_check");
    assert_eq!(violations, 0);
    assert!(scalar(&conn, "SELECT COUNT(*) FROM rocpd_kernel_dispatch") > 0);
}

#[test]
fn committed_fixture_matches_the_generator() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/generated");
    let (_d, paths) = gen(&GenConfig {
        seed: 7,
        nodes: 2,
        processes: 3,
        gpus_per_node: 2,
        threads_per_process: 3,
        iterations: 8,
        odd_names: true,
        row_ids: false,
    });
    for p in &paths {
        let committed = fixture.join(p.file_name().unwrap());
        assert!(committed.exists(), "missing {}", committed.display());
        assert!(
            dump(p) == dump(&committed),
            "{} differs from the generator's output; regenerate fixtures/generated \
             (see its README.md)",
            committed.display()
        );
    }
}

/// The binary's `--csv` and `--json` flags each write their export beside the databases;
/// `--json` was once accepted and ignored.
#[test]
fn binary_writes_the_csv_and_json_exports_it_is_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("gen");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_rocpd-gen"))
        .args([
            "--processes",
            "1",
            "--iterations",
            "2",
            "--csv",
            "--json",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let stdout = String::from_utf8(status.stdout).unwrap();
    let json: Vec<PathBuf> = std::fs::read_dir(out.join("json"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(json.len(), 1, "{json:?}");
    let text = std::fs::read_to_string(&json[0]).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(value["rocprofiler-sdk-tool"].is_array(), "{text:.200}");
    assert!(stdout.contains("records as JSON"), "{stdout}");
    let host = std::fs::read_dir(out.join("csv"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(std::fs::read_dir(host).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with("_kernel_trace.csv")));
}

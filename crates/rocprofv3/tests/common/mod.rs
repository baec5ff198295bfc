//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rocpd_rocprofv3::{group_runs, import, ImportOptions, ImportReport, Run};

/// The repository's `fixtures/` directory.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// One imported run.
pub struct Imported {
    pub run: Run,
    pub db: PathBuf,
    pub report: ImportReport,
    _dir: tempfile::TempDir,
}

impl Imported {
    /// Rows per reader table (`region`, `marker`, `kernel_dispatch`, ...).
    pub fn reader_counts(&self) -> HashMap<&'static str, u64> {
        let db = rocpd_db::Database::open(&self.db).expect("open imported database");
        db.count_rows()
            .expect("count rows")
            .into_iter()
            .map(|(t, n)| (t.name(), n))
            .collect()
    }

    /// Streams every table through the reader (all columns, as the pipeline reads them)
    /// and returns the rows per table; checks the catalog reads too.
    pub fn stream_all(&self) -> HashMap<&'static str, u64> {
        use rocpd_pipeline::BatchStream;
        let db = rocpd_db::Database::open(&self.db).expect("open imported database");
        let cat = db.catalog(0).expect("catalog");
        assert_eq!(cat.sources.len(), 1);
        assert_eq!(cat.sources[0].guid, self.report.guid);
        let mut out = HashMap::new();
        for mut q in db
            .queries(0, 1024, &rocpd_model::Projection::all())
            .expect("queries")
        {
            let table = q.table().name();
            let mut s = q.stream().expect("stream");
            let mut n = 0;
            while let Some(b) = s
                .next_batch()
                .unwrap_or_else(|e| panic!("{}: {table}: {e}", self.run.label))
            {
                n += b.num_rows() as u64;
            }
            *out.entry(table).or_insert(0) += n;
        }
        out
    }

    /// A connection to the imported database.
    pub fn conn(&self) -> rusqlite::Connection {
        rusqlite::Connection::open_with_flags(&self.db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open")
    }

    /// The first column of the first row of `sql`.
    pub fn one<T: rusqlite::types::FromSql>(&self, sql: &str) -> T {
        self.conn()
            .query_row(sql, [], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Checks the foreign keys and the integrity of the database.
    pub fn check_integrity(&self) {
        let c = self.conn();
        let fk: Vec<String> = c
            .prepare("PRAGMA foreign_key_check")
            .unwrap()
            .query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            fk.is_empty(),
            "{}: foreign key violations in {fk:?}",
            self.run.label
        );
        let ok: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }
}

/// Imports one run into a fresh temporary directory.
pub fn import_run(run: &Run, opts: &ImportOptions) -> rocpd_model::Result<Imported> {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("run.db");
    let report = import(run, &db, opts)?;
    Ok(Imported {
        run: run.clone(),
        db,
        report,
        _dir: dir,
    })
}

/// Groups `paths` and imports every run (default options).
pub fn import_all(paths: &[PathBuf]) -> Vec<Imported> {
    let runs = group_runs(paths).expect("group runs");
    runs.iter()
        .map(|r| {
            import_run(r, &ImportOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", r.label))
        })
        .collect()
}

/// Imports `paths`, which must form exactly one run.
pub fn import_one(paths: &[PathBuf]) -> Imported {
    let mut all = import_all(paths);
    assert_eq!(all.len(), 1, "expected one run");
    all.remove(0)
}

/// The records of a CSV file, read independently of the importer with the csv crate:
/// (lower-cased header, records).
pub fn csv_records(path: &Path) -> (Vec<String>, Vec<csv::StringRecord>) {
    let mut rdr = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .unwrap();
    let header = rdr
        .headers()
        .unwrap()
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    let recs = rdr.records().collect::<Result<Vec<_>, _>>().unwrap();
    (header, recs)
}

/// Writes `files` (name, content) into a new temporary directory.
pub fn write_dir(files: &[(&str, &str)]) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (name, content) in files {
        let p = dir.path().join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, content).unwrap();
        paths.push(p);
    }
    (dir, paths)
}

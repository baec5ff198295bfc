//! rocpd packages as inputs: a `.rpdb` folder read through its `index.yaml` (a list, a
//! single file, wildcards), an index given directly, and the refusals: bad YAML, an entry
//! naming nothing. A package converts to exactly what its databases do given directly.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Databases of a 3-process run in `dir`, in a fixed order.
fn databases(dir: &Path, seed: u64) -> Vec<PathBuf> {
    let mut dbs = generate(dir, seed, 3, 4);
    dbs.sort();
    dbs
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_str().unwrap().to_string()
}

/// The input files `rocpd info` reads for `-i args`, canonical.
fn files_read(args: &[&Path]) -> Vec<PathBuf> {
    let mut a: Vec<&str> = vec!["info", "--json", "-i"];
    a.extend(args.iter().map(|p| p.to_str().unwrap()));
    let o = rocpd(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| std::fs::canonicalize(f.as_str().unwrap()).unwrap())
        .collect()
}

fn canonical(ps: &[PathBuf]) -> Vec<PathBuf> {
    ps.iter()
        .map(|p| std::fs::canonicalize(p).unwrap())
        .collect()
}

/// The index AMD's `rocpd package` writes (PyYAML's layout) for `files`.
fn amd_index(files: &[String]) -> String {
    let mut s = String::from("rocprofiler-sdk:\n  rocpd:\n    files:\n");
    for f in files {
        s.push_str(&format!("    - {f}\n"));
    }
    s.push_str("    path: .\n    rocpd_package_version: '1.0'\n");
    s
}

#[test]
fn an_rpdb_folder_converts_like_its_databases_given_directly() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("run.rpdb");
    let dbs = databases(&pkg, 41);
    // Listed in reverse: the index's order is the order read.
    let listed: Vec<String> = dbs.iter().rev().map(|p| file_name(p)).collect();
    std::fs::write(pkg.join("index.yaml"), amd_index(&listed)).unwrap();
    let reversed: Vec<PathBuf> = dbs.iter().rev().cloned().collect();
    assert_eq!(files_read(&[&pkg]), canonical(&reversed));
    let direct = std::fs::read(convert(&reversed, &tmp.path().join("direct"), &[])).unwrap();
    let packaged = std::fs::read(convert(
        std::slice::from_ref(&pkg),
        &tmp.path().join("packaged"),
        &[],
    ))
    .unwrap();
    assert!(!direct.is_empty());
    assert!(direct == packaged, "the package converts differently");
}

#[test]
fn wildcards_a_single_file_and_an_index_given_directly() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("w.rpdb");
    let dbs = databases(&pkg.join("dbs"), 42);
    // Wildcards (in a flow list, quoted), each entry's matches in sorted order.
    std::fs::write(
        pkg.join("index.yaml"),
        "# written by hand\nrocprofiler-sdk:\n  rocpd:\n    rocpd_package_version: \"1.0\"\n    path: dbs\n    files: ['node-01_*.db', node-00_*]  # node 1 first\n",
    )
    .unwrap();
    let node = |n: &str| -> Vec<PathBuf> {
        dbs.iter()
            .filter(|p| file_name(p).starts_with(n))
            .cloned()
            .collect()
    };
    let want: Vec<PathBuf> = [node("node-01_"), node("node-00_")].concat();
    assert_eq!(want.len(), 3);
    assert_ne!(
        want, dbs,
        "the index's order differs from a directory walk's"
    );
    assert_eq!(files_read(&[&pkg]), canonical(&want));
    // One file, as a plain scalar; the index given directly, elsewhere than the databases.
    let other = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&other).unwrap();
    let index = other.join("one.yml");
    std::fs::write(
        &index,
        format!(
            "rocprofiler-sdk:\n  rocpd:\n    files: ../w.rpdb/dbs/{}\n",
            file_name(&dbs[1])
        ),
    )
    .unwrap();
    assert_eq!(files_read(&[&index]), canonical(&dbs[1..2]));
    // An absolute entry, and the index beside it: read once each.
    let abs = other.join("abs.yaml");
    std::fs::write(
        &abs,
        format!(
            "rocprofiler-sdk:\n  rocpd:\n    files:\n      - {}\n      - '{}'\n",
            dbs[0].display(),
            dbs[1].display()
        ),
    )
    .unwrap();
    assert_eq!(files_read(&[&abs, &index]), canonical(&dbs[0..2]));
    // A .rpdb folder without an index is read like any directory.
    let bare = tmp.path().join("bare.rpdb");
    let bare_dbs = databases(&bare, 43);
    assert_eq!(files_read(&[&bare]), canonical(&bare_dbs));
}

/// Runs a conversion of `input` that must fail, and checks nothing was written.
fn refused(input: &Path, out: &Path) -> String {
    let o = rocpd(&[
        "convert",
        "-q",
        "-i",
        input.to_str().unwrap(),
        "-f",
        "pftrace",
        "-d",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        !out.exists() || std::fs::read_dir(out).unwrap().next().is_none(),
        "partial output in {out:?}"
    );
    stderr(&o)
}

#[test]
fn bad_indexes_and_entries_naming_nothing_are_refused_with_file_and_place() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("bad.rpdb");
    let dbs = databases(&pkg, 44);
    let index = pkg.join("index.yaml");
    let out = tmp.path().join("out");
    let shown = index.display().to_string();
    for (text, place, words) in [
        (
            "rocprofiler-sdk:\n  rocpd:\n    files: &dbs [a.db]\n".to_string(),
            "line 3",
            "anchors",
        ),
        (
            "rocprofiler-sdk:\n  rocpd:\n    files:\n    - a.db\n   - b.db\n".into(),
            "line 5",
            "",
        ),
        (
            format!(
                "rocprofiler-sdk:\n  rocpd:\n    files:\n    - {}\n    - missing.db\n",
                file_name(&dbs[0])
            ),
            "line 5",
            "files entry \"missing.db\": no such file",
        ),
        (
            "rocprofiler-sdk:\n  rocpd:\n    files: 'nothing-*.db'\n".into(),
            "line 3",
            "files entry \"nothing-*.db\": no file matches this pattern",
        ),
        (
            "rocprofiler-sdk:\n  rocpd: {files: a.db}\n".into(),
            "line 2",
            "flow mappings",
        ),
        ("tool: x\n".into(), "line 1", "not a rocpd package index"),
    ] {
        std::fs::write(&index, &text).unwrap();
        for input in [&pkg, &index] {
            let e = refused(input, &out);
            assert!(
                e.contains(&format!("{shown}: {place}: ")) && e.contains(words),
                "{text:?}: {e}"
            );
        }
    }
}

/// A package index is an input like the files it lists: no output may replace it (a
/// `--report` named as the index was written over it).
#[test]
fn no_output_replaces_a_package_index() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("p.rpdb");
    let dbs = databases(&pkg, 43);
    let listed: Vec<String> = dbs.iter().map(|p| file_name(p)).collect();
    let index = pkg.join("index.yaml");
    let text = amd_index(&listed);
    std::fs::write(&index, &text).unwrap();
    let (i, p) = (index.to_str().unwrap(), pkg.to_str().unwrap());
    let out = tmp.path().join("out");
    let o = out.to_str().unwrap();
    for args in [
        vec!["convert", "-i", p, "-f", "pftrace", "-d", o, "--report", i],
        vec!["convert", "-i", i, "-f", "csv", "-d", o, "--report", i],
        vec!["merge", "-i", i, "-d", o, "--report", i],
    ] {
        let r = rocpd(&args);
        assert_eq!(r.status.code(), Some(1), "{args:?}: {}", stderr(&r));
        assert!(stderr(&r).contains("index.yaml"), "{}", stderr(&r));
        assert_eq!(std::fs::read_to_string(&index).unwrap(), text, "{args:?}");
    }
    // The package still opens.
    assert_eq!(files_read(&[&pkg]).len(), dbs.len());
}

/// A wildcard entry in a package whose directory's path is not UTF-8 is refused with why
/// (it said "no file matches" of a file that was there); named entries still read.
#[cfg(unix)]
#[test]
fn a_wildcard_entry_in_a_directory_not_named_in_utf8_says_why() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join(std::ffi::OsStr::from_bytes(b"p\xff.rpdb"));
    let dbs = databases(&pkg, 45);
    let index = pkg.join("index.yaml");
    // The index's path is not UTF-8: passed as it is.
    let info = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_rocpd"))
            .args(["info", "-i"])
            .arg(&index)
            .output()
            .unwrap()
    };
    std::fs::write(&index, "rocprofiler-sdk:\n  rocpd:\n    files: ['*.db']\n").unwrap();
    let o = info();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("line 3"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not; list the files by name"),
        "{}",
        stderr(&o)
    );
    let listed: Vec<String> = dbs.iter().map(|p| file_name(p)).collect();
    std::fs::write(&index, amd_index(&listed)).unwrap();
    let o = info();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// An input named directly that is a link to nothing says so, not "no such file".
#[cfg(unix)]
#[test]
fn a_dead_link_named_as_input_says_what_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let link = tmp.path().join("gone.db");
    std::os::unix::fs::symlink(tmp.path().join("nowhere.db"), &link).unwrap();
    let o = rocpd(&["info", "-i", link.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("gone.db: a link that leads to no file (dead, or a loop)"),
        "{}",
        stderr(&o)
    );
}

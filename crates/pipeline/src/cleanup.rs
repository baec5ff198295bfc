//! Cancellation and the temporary paths of a run, so that an interrupted run (Ctrl-C,
//! SIGTERM, a Python `KeyboardInterrupt`) stops between chunks and leaves no partial file.
//!
//! A front (the CLI's signal handler, the Python binding) calls [`request_cancel`]; the
//! driver checks [`check_cancelled`] after every chunk and the run ends with
//! [`Error::Interrupted`], whose unwinding removes temporaries as any error does. Every
//! writer and reader that creates a temporary file or directory holds a [`Registered`] for
//! it, so a front that cannot wait for the run to unwind (a reader stuck in one long SQLite
//! statement) can still remove them all with [`remove_registered`] before it exits.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Condvar, Mutex};

use rocpd_model::{Error, Result};

/// 0: not cancelled; otherwise the signal number (or -1 for a cancel without a signal).
static CANCELLED: AtomicI32 = AtomicI32::new(0);
static REGISTERED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
/// How many commits are in progress ([`Committing`]); [`remove_registered`] waits until
/// none is, and holds the lock while it removes, so that none starts meanwhile. A count
/// rather than a held lock, so that a commit may hold one over several (a split's parts).
static COMMITTING: Mutex<usize> = Mutex::new(0);
static COMMITS_ENDED: Condvar = Condvar::new();
/// Whether an output shared with other runs was committed ([`Committing::done`]).
static COMMITTED_SHARED: AtomicBool = AtomicBool::new(false);

/// While this lives, [`remove_registered`] waits: a writer whose commit takes several
/// steps (a Delta dataset's logs, one table after another, then its run description)
/// holds it over them, so that a forced exit cannot remove the run's staging area between
/// two steps and leave the run half in the dataset. The steps are renames and small
/// writes; a front that must exit at once still can (SIGKILL).
pub struct Committing {
    _private: (),
}

impl Drop for Committing {
    fn drop(&mut self) {
        let mut n = COMMITTING.lock().unwrap_or_else(|e| e.into_inner());
        *n = n.saturating_sub(1);
        if *n == 0 {
            COMMITS_ENDED.notify_all();
        }
    }
}

impl Committing {
    /// The commit went through: a front exiting on a signal says the output stays (it
    /// cannot be taken back) instead of implying the run left nothing.
    pub fn done(self) {
        COMMITTED_SHARED.store(true, Ordering::SeqCst);
    }
}

/// Whether this process committed an output shared with other runs (a dataset appended
/// to), which a forced exit leaves in place.
pub fn committed_shared() -> bool {
    COMMITTED_SHARED.load(Ordering::SeqCst)
}

/// Starts a commit ([`Committing`]). Never call [`remove_registered`] on the thread that
/// holds one.
pub fn committing() -> Committing {
    *COMMITTING.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    Committing { _private: () }
}

/// Asks every running conversion to stop at its next check; `signal` is recorded for the
/// exit status (0 for "no signal").
pub fn request_cancel(signal: i32) {
    let code = if signal == 0 { -1 } else { signal };
    let _ = CANCELLED.compare_exchange(0, code, Ordering::SeqCst, Ordering::SeqCst);
}

/// The signal that cancelled the run (`Some(0)` for a cancel without a signal).
pub fn cancelled_by() -> Option<i32> {
    match CANCELLED.load(Ordering::SeqCst) {
        0 => None,
        -1 => Some(0),
        s => Some(s),
    }
}

/// Clears a cancel request (a front that runs several conversions in one process, such as
/// the Python binding, calls it before each).
pub fn reset_cancel() {
    CANCELLED.store(0, Ordering::SeqCst);
}

/// `Err(Error::Interrupted)` once a cancel was requested.
pub fn check_cancelled() -> Result<()> {
    match cancelled_by() {
        None => Ok(()),
        Some(signal) => Err(Error::Interrupted { signal }),
    }
}

/// A temporary path known to the process-wide list while this value lives. It does not
/// remove the path itself: its owner does (on commit by renaming, on drop by deleting).
#[derive(Debug)]
pub struct Registered(PathBuf);

impl Registered {
    /// Registers `path` (a file or a directory).
    pub fn new(path: &Path) -> Self {
        if let Ok(mut set) = REGISTERED.lock() {
            set.insert(path.to_path_buf());
        }
        Registered(path.to_path_buf())
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Ok(mut set) = REGISTERED.lock() {
            set.remove(&self.0);
        }
    }
}

/// The cleaners the live [`RegisteredCleaner`] values stand for, by a number of their own.
type Cleaner = (PathBuf, fn(&Path));
static CLEANERS: Mutex<std::collections::BTreeMap<u64, Cleaner>> =
    Mutex::new(std::collections::BTreeMap::new());
static NEXT_CLEANER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// An output whose unfinished state is more than its registered temporaries (a dataset
/// this run created to append to: its descriptor and empty directories), with the
/// function that takes that state away, known to the process-wide list while this value
/// lives. A forced exit calls `clean(path)` after removing the temporaries; the owner's
/// own unwinding does the same on drop, so the function must be safe to call on an
/// output that was committed after all (it leaves anything a run committed).
#[derive(Debug)]
pub struct RegisteredCleaner(u64);

impl RegisteredCleaner {
    /// Registers `clean` for `path`.
    pub fn new(path: &Path, clean: fn(&Path)) -> Self {
        let n = NEXT_CLEANER.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut m) = CLEANERS.lock() {
            m.insert(n, (path.to_path_buf(), clean));
        }
        RegisteredCleaner(n)
    }
}

impl Drop for RegisteredCleaner {
    fn drop(&mut self) {
        if let Ok(mut m) = CLEANERS.lock() {
            m.remove(&self.0);
        }
    }
}

/// The directories the live [`crate::NewDirs`] values stand for, by a number of their
/// own: a forced exit removes them, when empty, after the temporaries inside them.
static NEW_DIRS: Mutex<std::collections::BTreeMap<u64, Vec<PathBuf>>> =
    Mutex::new(std::collections::BTreeMap::new());
static NEXT_NEW_DIRS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Registers directories a run is about to create (deepest first); returns their number.
pub(crate) fn register_new_dirs(dirs: &[PathBuf]) -> u64 {
    let n = NEXT_NEW_DIRS.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut m) = NEW_DIRS.lock() {
        m.insert(n, dirs.to_vec());
    }
    n
}

/// Removes `dirs` (deepest first) as far as they are empty: the first that is not (or
/// is gone) ends it, since the ones above it hold it.
pub(crate) fn remove_empty_dirs<'a>(dirs: impl IntoIterator<Item = &'a PathBuf>) {
    for d in dirs {
        if std::fs::remove_dir(d).is_err() {
            break;
        }
    }
}

/// Forgets the directories registered as `n`.
pub(crate) fn unregister_new_dirs(n: u64) {
    if let Ok(mut m) = NEW_DIRS.lock() {
        m.remove(&n);
    }
}

/// The temporary paths registered now.
pub fn registered() -> Vec<PathBuf> {
    REGISTERED
        .lock()
        .map(|s| s.iter().cloned().collect())
        .unwrap_or_default()
}

/// Removes every registered temporary file and directory (for a front about to exit
/// without unwinding).
pub fn remove_registered() {
    remove_registered_where(|_| true);
}

/// [`remove_registered`] limited to the paths under `dir`: for a caller that runs
/// conversions side by side in one process (tests) and must not remove the others' files.
pub fn remove_registered_under(dir: &Path) {
    remove_registered_where(|p| p.starts_with(dir));
}

/// [`remove_registered`] limited to the paths `chosen` picks: the tests run in one process
/// and must not remove each other's files.
fn remove_registered_where(chosen: impl Fn(&Path) -> bool) {
    let mut commits = COMMITTING.lock().unwrap_or_else(|e| e.into_inner());
    while *commits > 0 {
        commits = COMMITS_ENDED
            .wait(commits)
            .unwrap_or_else(|e| e.into_inner());
    }
    for p in registered().into_iter().filter(|p| chosen(p)) {
        match p.symlink_metadata() {
            Ok(m) if m.is_dir() => {
                let _ = std::fs::remove_dir_all(&p);
            }
            Ok(_) => {
                let _ = std::fs::remove_file(&p);
            }
            Err(_) => {}
        }
    }
    // Then what the outputs' cleaners take away, now that their temporaries are gone (a
    // new dataset's skeleton is removed only when no run is staging in it).
    let cleaners: Vec<Cleaner> = CLEANERS
        .lock()
        .map(|m| m.values().rev().cloned().collect())
        .unwrap_or_default();
    for (path, clean) in cleaners.iter().filter(|(p, _)| chosen(p)) {
        clean(path);
    }
    // Then the directories made for outputs, now without their temporaries; only empty
    // ones go, the newest run's first.
    let made: Vec<Vec<PathBuf>> = NEW_DIRS
        .lock()
        .map(|m| m.values().rev().cloned().collect())
        .unwrap_or_default();
    for dirs in made {
        remove_empty_dirs(dirs.iter().filter(|d| chosen(d)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forced_cleanup_removes_the_new_output_directories_left_empty() {
        let base = std::env::temp_dir().join(format!("rocpd-newdirs-test-{}", std::process::id()));
        let dir = base.join("a/b");
        let made = crate::NewDirs::of(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let tmp = dir.join("x.partial");
        std::fs::write(&tmp, b"x").unwrap();
        let r = Registered::new(&tmp);
        remove_registered_where(|p| p.starts_with(&base));
        assert!(!base.exists());
        drop(r);
        made.keep();
        // A directory named through `..` is never taken for a new one.
        std::fs::create_dir_all(base.join("kept")).unwrap();
        drop(crate::NewDirs::of(&base.join("gone/../kept")));
        assert!(base.join("kept").is_dir());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_forced_cleanup_runs_the_live_cleaners_after_the_temporaries() {
        let base = std::env::temp_dir().join(format!("rocpd-cleaner-test-{}", std::process::id()));
        let tmp = base.join("staging");
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::write(base.join("skeleton"), b"x").unwrap();
        let r = Registered::new(&tmp);
        // Removes the skeleton only once the temporary is gone, as a dataset's does.
        fn clean(dir: &Path) {
            if !dir.join("staging").exists() {
                let _ = std::fs::remove_file(dir.join("skeleton"));
            }
        }
        let cleaner = RegisteredCleaner::new(&base, clean);
        let dropped = RegisteredCleaner::new(&base.join("other"), |_| panic!("dropped"));
        drop(dropped);
        remove_registered_under(&base);
        assert!(!tmp.exists());
        assert!(!base.join("skeleton").exists());
        drop((r, cleaner));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn registration_lasts_as_long_as_the_value() {
        let p = std::env::temp_dir().join(format!("rocpd-cleanup-test-{}", std::process::id()));
        std::fs::write(&p, b"x").unwrap();
        {
            let _r = Registered::new(&p);
            assert!(registered().contains(&p));
        }
        assert!(!registered().contains(&p));
        let r = Registered::new(&p);
        remove_registered_where(|q| q == p);
        assert!(!p.exists());
        drop(r);
    }

    #[test]
    fn only_a_commit_that_went_through_counts_as_committed() {
        // No other test of this crate commits.
        drop(committing());
        assert!(!committed_shared());
        committing().done();
        assert!(committed_shared());
    }

    #[test]
    fn a_forced_cleanup_waits_for_a_commit_in_progress() {
        let p = std::env::temp_dir().join(format!("rocpd-commit-test-{}", std::process::id()));
        std::fs::write(&p, b"x").unwrap();
        let r = Registered::new(&p);
        let commit = committing();
        let mine = p.clone();
        let cleaner = std::thread::spawn(move || remove_registered_where(|q| q == mine));
        std::thread::sleep(std::time::Duration::from_millis(200));
        // Still there while the commit runs; gone once it ends.
        assert!(p.exists());
        drop(commit);
        cleaner.join().unwrap();
        assert!(!p.exists());
        drop(r);
    }
}

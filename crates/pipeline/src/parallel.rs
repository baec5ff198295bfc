//! Jobs on a few threads with results, and the error, as one thread would give them.

use rocpd_model::{Error, Result};

/// Runs `job(0)`, ..., `job(count - 1)` on up to `threads` threads, each job once, started
/// in index order; returns the results in index order. When a job fails no further job
/// is started, the ones running finish, and the error of the lowest-index failed job is
/// returned: the same error whatever the number of threads, since every job before it
/// was started (and, unless it failed too, succeeded).
pub fn in_parallel<T: Send>(
    count: usize,
    threads: usize,
    job: impl Fn(usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let done: Mutex<Vec<Option<Result<T>>>> = Mutex::new((0..count).map(|_| None).collect());
    let work = || loop {
        if failed.load(Ordering::SeqCst) {
            return;
        }
        let i = next.fetch_add(1, Ordering::SeqCst);
        if i >= count {
            return;
        }
        let r = job(i);
        if r.is_err() {
            failed.store(true, Ordering::SeqCst);
        }
        done.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
    };
    let threads = threads.clamp(1, count.max(1));
    if threads == 1 {
        work();
    } else {
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(work);
            }
        });
    }
    let mut out = Vec::with_capacity(count);
    for r in done.into_inner().unwrap_or_else(|p| p.into_inner()) {
        match r {
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => return Err(e),
            // Not started: a job before it failed, and its error came first.
            None => return Err(Error::Usage("internal: a job was skipped".into())),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn jobs_come_back_in_order_and_the_lowest_failed_job_is_the_error() {
        for threads in [1, 2, 5, 64] {
            let squares = in_parallel(20, threads, |i| Ok(i * i)).unwrap();
            assert_eq!(squares, (0..20).map(|i| i * i).collect::<Vec<_>>());
            let started = AtomicUsize::new(0);
            let e = in_parallel(20, threads, |i| {
                started.fetch_add(1, Ordering::SeqCst);
                if i == 7 || i == 9 {
                    Err(Error::Usage(format!("job {i}")))
                } else {
                    Ok(i)
                }
            })
            .unwrap_err();
            assert_eq!(e.to_string(), "job 7", "threads {threads}");
            if threads == 1 {
                assert_eq!(
                    started.load(Ordering::SeqCst),
                    8,
                    "nothing after the failure"
                );
            }
        }
        assert!(in_parallel(0, 4, Ok::<usize, Error>).unwrap().is_empty());
    }
}

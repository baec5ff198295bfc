//! What a worker shares with its watchdog thread (the input being run, since when, the
//! counters), the watchdog itself (hangs and memory), panic capture, and the reporting of
//! a failure (message, saved input, replay command).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::input::Input;
use crate::targets::Target;

/// Exit code of a worker that found (and saved) a failure.
pub const EXIT_FOUND: i32 = 3;
/// Exit code of a worker whose own machinery failed (not a reader bug).
pub const EXIT_HARNESS: i32 = 4;

/// The input being run.
pub struct Current {
    /// Its files.
    pub input: Input,
    /// The iteration that made it (`None` for a replay).
    pub iteration: Option<u64>,
    /// The seed it was made from.
    pub origin: String,
    /// The mutations applied.
    pub ops: Vec<String>,
}

/// Counters of a worker; written to `stats.json` in its work directory.
#[derive(Default)]
pub struct Stats {
    /// Inputs run.
    pub execs: AtomicU64,
    /// Inputs for which a reader returned an error.
    pub errors: AtomicU64,
    /// Inputs an importer accepted whose database the RocPD reader then refused.
    pub unreadable: AtomicU64,
    /// Rows read.
    pub rows: AtomicU64,
    /// Panics caught (with `--keep-going`, several; otherwise at most one).
    pub panics: AtomicU64,
    /// The next iteration to run (for a restart after a failure).
    pub next_iter: AtomicU64,
    /// One line per failure found.
    pub failures: Mutex<Vec<String>>,
    /// Error messages (digits folded) and how often each was returned.
    pub messages: Mutex<BTreeMap<String, u64>>,
    /// A few messages of unreadable imported databases.
    pub unreadable_samples: Mutex<Vec<String>>,
}

/// State shared between a worker's fuzz loop and its watchdog thread.
pub struct Shared {
    /// The target.
    pub target: Target,
    /// `--seed`.
    pub seed: u64,
    /// Where failing inputs are saved (`None`: replay, nothing is saved).
    pub crash_dir: Option<PathBuf>,
    /// The work directory (stats file; paths in messages are shown relative to it).
    pub workdir: PathBuf,
    /// Per-input time limit.
    pub timeout: Duration,
    /// Memory limit in KiB.
    pub max_rss_kb: u64,
    /// When the worker started.
    pub start: Instant,
    /// The counters.
    pub stats: Stats,
    busy_since_ms: AtomicU64,
    phase: AtomicU8,
    current: Mutex<Option<Arc<Current>>>,
    report_lock: Mutex<()>,
}

/// What the fuzz loop is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Between inputs.
    Idle = 0,
    /// Making the next input (harness code).
    Mutate = 1,
    /// Running a reader.
    Run = 2,
}

impl Shared {
    /// New shared state.
    pub fn new(
        target: Target,
        seed: u64,
        crash_dir: Option<PathBuf>,
        workdir: PathBuf,
        timeout: Duration,
        max_rss_mb: u64,
    ) -> Shared {
        Shared {
            target,
            seed,
            crash_dir,
            workdir,
            timeout,
            max_rss_kb: max_rss_mb.saturating_mul(1024),
            start: Instant::now(),
            stats: Stats::default(),
            busy_since_ms: AtomicU64::new(0),
            phase: AtomicU8::new(0),
            current: Mutex::new(None),
            report_lock: Mutex::new(()),
        }
    }

    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64 + 1
    }

    /// Enters `phase` (the clock restarts).
    pub fn enter(&self, phase: Phase) {
        self.phase.store(phase as u8, Ordering::SeqCst);
        let t = if phase == Phase::Idle {
            0
        } else {
            self.now_ms()
        };
        self.busy_since_ms.store(t, Ordering::SeqCst);
    }

    /// Sets the input being run.
    pub fn set_current(&self, cur: Option<Arc<Current>>) {
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = cur;
    }

    /// The input being run.
    pub fn current(&self) -> Option<Arc<Current>> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Makes a restart begin after the input being run (it ends the process).
    pub fn skip_current(&self, cur: Option<&Current>) {
        if let Some(i) = cur.and_then(|c| c.iteration) {
            self.stats.next_iter.fetch_max(i + 1, Ordering::SeqCst);
        }
    }

    /// Records a returned error under its folded message.
    pub fn count_message(&self, step: &str, msg: &str) {
        let work = self.workdir.display().to_string();
        let msg = msg.replace(&work, "");
        let mut folded = String::with_capacity(step.len() + 2 + msg.len().min(160));
        folded.push_str(step);
        folded.push_str(": ");
        let mut last_digit = false;
        for c in msg.chars().take(160) {
            if c.is_ascii_digit() {
                if !last_digit {
                    folded.push('#');
                }
                last_digit = true;
            } else {
                folded.push(c);
                last_digit = false;
            }
        }
        let mut m = self
            .stats
            .messages
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if m.len() < 5000 || m.contains_key(&folded) {
            *m.entry(folded).or_insert(0) += 1;
        }
    }

    /// Writes `stats.json` into the work directory.
    pub fn write_stats(&self) {
        let s = &self.stats;
        let execs = s.execs.load(Ordering::SeqCst);
        let elapsed = self.start.elapsed().as_secs_f64();
        let mut top: Vec<(String, u64)> = s
            .messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let distinct = top.len();
        top.truncate(40);
        let v = serde_json::json!({
            "target": self.target.name(),
            "execs": execs,
            "errors": s.errors.load(Ordering::SeqCst),
            "unreadable": s.unreadable.load(Ordering::SeqCst),
            "rows": s.rows.load(Ordering::SeqCst),
            "panics": s.panics.load(Ordering::SeqCst),
            "next_iter": s.next_iter.load(Ordering::SeqCst),
            "elapsed_s": elapsed,
            "peak_rss_kb": rss_kb().1,
            "failures": *s.failures.lock().unwrap_or_else(|e| e.into_inner()),
            "distinct_messages": distinct,
            "top_messages": top,
            "unreadable_samples": *s.unreadable_samples.lock().unwrap_or_else(|e| e.into_inner()),
        });
        let tmp = self.workdir.join("stats.json.tmp");
        if std::fs::write(&tmp, v.to_string()).is_ok() {
            let _ = std::fs::rename(&tmp, self.workdir.join("stats.json"));
        }
    }

    /// Reports a failure: prints it, saves the input (unless replaying) and records it.
    /// Returns the saved path.
    pub fn report(
        &self,
        kind: &str,
        message: &str,
        detail: &str,
        cur: Option<&Current>,
    ) -> Option<PathBuf> {
        let _guard = self.report_lock.lock().unwrap_or_else(|e| e.into_inner());
        let name = self.target.name();
        let iter = cur
            .and_then(|c| c.iteration)
            .map_or("replay".to_string(), |i| i.to_string());
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "FAILURE [{name}] {kind} at iteration {iter} (--seed {}): {message}",
            self.seed
        );
        let saved = match (&self.crash_dir, cur) {
            (Some(dir), Some(cur)) => save(dir, self.target, kind, message, detail, self.seed, cur),
            _ => None,
        };
        if let Some(p) = &saved {
            let files: Vec<&str> = cur
                .map(|c| c.input.files.iter().map(|f| f.name.as_str()).collect())
                .unwrap_or_default();
            let _ = writeln!(
                err,
                "  input ({}) saved to {}",
                files.join(", "),
                p.display()
            );
            let _ = writeln!(
                err,
                "  replay: {} --target {name} --replay {}",
                exe_name(),
                p.display()
            );
        }
        if let Some(i) = cur.and_then(|c| c.iteration) {
            let _ = writeln!(
                err,
                "  regenerate: {} --target {name} --seed {} --start-iter {i} --runs 1",
                exe_name(),
                self.seed
            );
        }
        self.stats
            .failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(format!(
                "{kind}: {message}{}",
                saved
                    .as_ref()
                    .map_or(String::new(), |p| format!(" (input {})", p.display()))
            ));
        saved
    }
}

/// The program name to show in replay commands.
pub fn exe_name() -> String {
    std::env::current_exe()
        .ok()
        .and_then(|p| {
            let cwd = std::env::current_dir().ok()?;
            Some(
                p.strip_prefix(&cwd)
                    .map(Path::to_path_buf)
                    .unwrap_or(p)
                    .display()
                    .to_string(),
            )
        })
        .unwrap_or_else(|| "rocpd-fuzz".into())
}

/// Saves a failing input as `<dir>/<target>-<n>.bin` with a note `<target>-<n>.txt`.
pub fn save(
    dir: &Path,
    target: Target,
    kind: &str,
    message: &str,
    detail: &str,
    seed: u64,
    cur: &Current,
) -> Option<PathBuf> {
    std::fs::create_dir_all(dir).ok()?;
    let bytes = cur.input.encode();
    for n in 0..100_000 {
        let p = dir.join(format!("{}-{n}.bin", target.name()));
        let Ok(mut f) = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
        else {
            continue;
        };
        f.write_all(&bytes).ok()?;
        let mut note = format!(
            "target: {}\nkind: {kind}\nmessage: {message}\nseed: {seed}\niteration: {}\n",
            target.name(),
            cur.iteration.map_or("-".into(), |i| i.to_string()),
        );
        if cur.input.files.len() == 1 {
            note.push_str(&format!("name: {}\n", cur.input.files[0].name));
        } else {
            let names: Vec<&str> = cur.input.files.iter().map(|f| f.name.as_str()).collect();
            note.push_str(&format!("bundle: {}\n", names.join(", ")));
        }
        note.push_str(&format!("seed input: {}\nmutations:\n", cur.origin));
        for op in &cur.ops {
            note.push_str(&format!("  {op}\n"));
        }
        if !detail.is_empty() {
            note.push_str("detail:\n");
            note.push_str(detail);
            note.push('\n');
        }
        std::fs::write(p.with_extension("txt"), note).ok()?;
        return Some(p);
    }
    None
}

/// `(VmRSS, VmHWM)` of this process in KiB (0 where unknown).
pub fn rss_kb() -> (u64, u64) {
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
        return (0, 0);
    };
    let field = |name: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Starts the watchdog thread: it ends the process (saving the input) when an input runs
/// longer than the timeout or the process's memory passes the limit.
pub fn spawn(shared: Arc<Shared>) {
    let tick = (shared.timeout / 20).clamp(Duration::from_millis(5), Duration::from_millis(100));
    let _ = std::thread::Builder::new()
        .name("watchdog".into())
        .spawn(move || loop {
            std::thread::sleep(tick);
            let since = shared.busy_since_ms.load(Ordering::SeqCst);
            let phase = shared.phase.load(Ordering::SeqCst);
            let (rss, _) = rss_kb();
            let cur = shared.current();
            if since != 0 {
                let busy = Duration::from_millis(shared.now_ms().saturating_sub(since));
                if phase == Phase::Run as u8 && busy > shared.timeout {
                    let msg = format!(
                        "hang: input still running after {} ms (--timeout-ms {})",
                        busy.as_millis(),
                        shared.timeout.as_millis()
                    );
                    shared.report("hang", &msg, "", cur.as_deref());
                    shared.skip_current(cur.as_deref());
                    shared.write_stats();
                    std::process::exit(EXIT_FOUND);
                }
                if phase == Phase::Mutate as u8 && busy > shared.timeout * 4 {
                    eprintln!(
                        "[{}] harness error: making an input took {} ms",
                        shared.target.name(),
                        busy.as_millis()
                    );
                    shared.write_stats();
                    std::process::exit(EXIT_HARNESS);
                }
            }
            if rss > shared.max_rss_kb && shared.max_rss_kb > 0 {
                let msg = format!(
                    "memory blow-up: resident set {} MiB > --max-rss-mb {}",
                    rss / 1024,
                    shared.max_rss_kb / 1024
                );
                let running = phase == Phase::Run as u8;
                if !running {
                    // Not in a reader call: the harness's own memory (or a reader's earlier
                    // peak that the allocator kept, which the per-input VmHWM check has
                    // already judged).
                    eprintln!(
                        "[{}] harness error: {msg} outside a reader call",
                        shared.target.name()
                    );
                    shared.write_stats();
                    std::process::exit(EXIT_HARNESS);
                }
                shared.report("memory", &msg, "", cur.as_deref());
                shared.skip_current(cur.as_deref());
                shared.write_stats();
                std::process::exit(EXIT_FOUND);
            }
        });
}

/// A panic caught by the hook: message, location, backtrace.
#[derive(Debug, Clone, Default)]
pub struct PanicRecord {
    /// The panic message.
    pub message: String,
    /// `file:line:col` of the panic.
    pub location: String,
    /// The backtrace.
    pub backtrace: String,
}

static LAST_PANIC: Mutex<Option<PanicRecord>> = Mutex::new(None);

/// Installs a panic hook that records panics silently (the harness prints them short).
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(non-string panic payload)".into());
        let location = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_default();
        let backtrace = std::backtrace::Backtrace::force_capture().to_string();
        if std::thread::current().name() == Some("watchdog") {
            eprintln!("harness error: watchdog panicked at {location}: {message}");
        }
        *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(PanicRecord {
            message,
            location,
            backtrace,
        });
    }));
}

/// Takes the last recorded panic.
pub fn take_panic() -> PanicRecord {
    LAST_PANIC
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .unwrap_or_default()
}

/// The first backtrace frames in this workspace's crates (other than this one), as
/// `function at file:line` lines: where a reader panicked, below std and the panic site.
pub fn workspace_frames(backtrace: &str, max: usize) -> Vec<String> {
    let lines: Vec<&str> = backtrace.lines().collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let l = l.trim();
        let Some(at) = l.strip_prefix("at ") else {
            continue;
        };
        if !at.contains("/crates/") || at.contains("/crates/fuzz/") {
            continue;
        }
        let func = i
            .checked_sub(1)
            .and_then(|j| lines.get(j))
            .map(|f| f.trim().split_once(": ").map_or(f.trim(), |(_, n)| n))
            .unwrap_or("?");
        let short = at.rsplit_once("/crates/").map_or(at, |(_, r)| r);
        out.push(format!("{func} at crates/{short}"));
        if out.len() == max {
            break;
        }
    }
    out
}

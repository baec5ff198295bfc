//! `rocpd-fuzz`: a mutation fuzzer for the rocpd readers and importers that runs on stable
//! Rust (no cargo-fuzz, no sanitizer coverage).
//!
//! The command runs one worker process per target (`--jobs` at a time). A worker loads its
//! target's seeds, then for each iteration makes an input from a seed with mutations drawn
//! from a generator keyed by (`--seed`, target, iteration), writes it to its work directory
//! and runs the target's readers on it. A reader returning `Err` is a normal outcome and
//! is counted. A panic (caught), an input running longer than `--timeout-ms` or the
//! process's memory passing `--max-rss-mb` (both seen by a watchdog thread) is a failure:
//! the input is saved under `target/fuzz-crashes/` with a note and a replay command. A
//! worker that dies some other way (abort, signal) is reported by the parent, which saves
//! the input it left behind. See `docs/fuzzing.md`.

mod input;
mod mutate;
mod rng;
mod seeds;
mod sqlmut;
mod targets;
mod watchdog;

use std::io::Write;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Parser;

use input::Input;
use rng::Rng;
use seeds::Corpus;
use targets::{Runner, Target};
use watchdog::{Current, Phase, Shared, EXIT_FOUND, EXIT_HARNESS};

/// Fuzz the rocpd readers (RocPD databases, rocprofv3 CSV and JSON, Proton trees and
/// traces) with mutated inputs; report panics, hangs and memory blow-ups.
#[derive(Debug, Parser)]
#[command(name = "rocpd-fuzz")]
struct Args {
    /// Target: rocpd-db, csv, json, hatchet-json, hatchet-msgpack, chrome-trace, a
    /// comma-separated list of them, or all.
    #[arg(long, default_value = "all")]
    target: String,
    /// Inputs per target.
    #[arg(long, default_value_t = 1000)]
    runs: u64,
    /// Seed of every random choice (the same seed gives the same inputs).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Time budget per target in seconds (stops before --runs if reached).
    #[arg(long)]
    seconds: Option<f64>,
    /// Extra seed files or directories (each file goes to the target it fits).
    #[arg(long)]
    corpus: Vec<PathBuf>,
    /// Run this saved input once (needs one --target) and print what happens.
    #[arg(long)]
    replay: Option<PathBuf>,
    /// File name the replayed input gets (default: from the `.txt` note next to it).
    #[arg(long)]
    name: Option<String>,
    /// An input running longer than this is a hang.
    #[arg(long, default_value_t = 5000)]
    timeout_ms: u64,
    /// Resident memory above this is a blow-up.
    #[arg(long, default_value_t = 1024)]
    max_rss_mb: u64,
    /// Where failing inputs are saved (default: <cargo target dir>/fuzz-crashes).
    #[arg(long)]
    crash_dir: Option<PathBuf>,
    /// The fixtures directory (default: the workspace's fixtures/).
    #[arg(long)]
    fixtures: Option<PathBuf>,
    /// After a failure, save it and go on (panics are reported once per location).
    #[arg(long)]
    keep_going: bool,
    /// Targets fuzzed at the same time (one process each).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Directory for work files (default: /dev/shm if usable, else the system temp dir).
    #[arg(long)]
    tmp: Option<PathBuf>,
    /// Seconds between progress lines (0: none).
    #[arg(long, default_value_t = 30)]
    progress_secs: u64,
    /// First iteration (with --runs 1, regenerates one input of a run).
    #[arg(long, default_value_t = 0)]
    start_iter: u64,
    /// Also print the most frequent error messages per target.
    #[arg(long)]
    show_errors: bool,
    /// Internal: run as the worker of one target.
    #[arg(long, hide = true)]
    worker: bool,
    /// Internal: the worker's work directory.
    #[arg(long, hide = true)]
    workdir: Option<PathBuf>,
}

/// Inputs are cut to this size after mutation.
const MAX_INPUT: usize = 4 << 20;

fn main() -> ExitCode {
    let args = Args::parse();
    let result = if args.worker {
        worker(&args)
    } else if args.replay.is_some() {
        replay(&args)
    } else {
        supervise(&args)
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rocpd-fuzz: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn parse_targets(s: &str) -> Result<Vec<Target>> {
    if s == "all" {
        return Ok(Target::ALL.to_vec());
    }
    s.split(',')
        .map(|n| {
            Target::from_name(n.trim()).with_context(|| {
                let names: Vec<&str> = Target::ALL.iter().map(|t| t.name()).collect();
                format!("unknown target {n:?} (targets: {}, all)", names.join(", "))
            })
        })
        .collect()
}

fn fixtures_dir(args: &Args) -> PathBuf {
    args.fixtures
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"))
}

fn crash_dir(args: &Args) -> PathBuf {
    if let Some(d) = &args.crash_dir {
        return d.clone();
    }
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(t).join("fuzz-crashes");
    }
    // <target dir>/<profile>/rocpd-fuzz
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent()?.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("fuzz-crashes")
}

fn tmp_root(args: &Args) -> PathBuf {
    if let Some(t) = &args.tmp {
        return t.clone();
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() && tempfile::tempdir_in(shm).is_ok() {
        return shm.to_path_buf();
    }
    std::env::temp_dir()
}

// ---------------------------------------------------------------------------------------
// Making inputs

/// Makes iteration `it`'s input from the corpus.
fn make_input(
    rng: &mut Rng,
    target: Target,
    corpus: &Corpus,
    runner: &Runner,
) -> (Input, String, Vec<String>) {
    let seed = rng.pick(&corpus.seeds);
    let partner = rng.pick(&corpus.seeds);
    let splice = &partner.input.files[rng.below(partner.input.files.len())].data;
    let mut input = seed.input.clone();
    let mut ops: Vec<String> = Vec::new();
    let ctx = mutate::Ctx {
        flavor: target.flavor(),
        dict: &corpus.dict,
        splice,
        max_len: MAX_INPUT,
    };
    match target {
        Target::Db => {
            let data = &mut input.files[0].data;
            let mode = rng.below(20);
            if let (Some(schema), true) = (&seed.schema, !(11..17).contains(&mode)) {
                let path = runner.input_path("input.db");
                if std::fs::write(&path, &*data).is_ok() {
                    for s in sqlmut::mutate(rng, &path, schema) {
                        ops.push(format!("sql: {s}"));
                    }
                    if let Ok(d) = std::fs::read(&path) {
                        *data = d;
                    }
                }
            }
            if mode >= 11 || seed.schema.is_none() {
                ops.extend(
                    mutate::mutate(rng, data, &ctx)
                        .into_iter()
                        .map(String::from),
                );
            }
        }
        _ => {
            let n = input.files.len();
            if n > 1 && rng.chance(1, 10) {
                let f = input.files.remove(rng.below(n));
                ops.push(format!("drop file {}", f.name));
            }
            let times = if input.files.len() > 1 && rng.chance(1, 6) {
                2
            } else {
                1
            };
            for _ in 0..times {
                let i = rng.below(input.files.len());
                let f = &mut input.files[i];
                for op in mutate::mutate(rng, &mut f.data, &ctx) {
                    ops.push(format!("{}: {op}", f.name));
                }
            }
            if target == Target::Csv && rng.chance(1, 25) {
                let i = rng.below(input.files.len());
                let kind = *rng.pick(&[
                    "kernel_trace",
                    "hip_api_trace",
                    "memory_copy_trace",
                    "memory_allocation_trace",
                    "counter_collection",
                    "agent_info",
                    "marker_api_trace",
                    "kernel_stats",
                    "results",
                ]);
                let prefix = *rng.pick(&["", "1234_", "decode_", "a_b_", "_"]);
                let name = format!("{prefix}{kind}.csv");
                if input.files.iter().all(|f| f.name != name) {
                    ops.push(format!("rename {} to {name}", input.files[i].name));
                    input.files[i].name = name;
                }
            }
            if target == Target::Json && rng.chance(1, 10) {
                let f = &mut input.files[0];
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                if gz.write_all(&f.data).is_ok() {
                    if let Ok(mut bytes) = gz.finish() {
                        if rng.chance(1, 4) {
                            bytes.truncate(rng.below(bytes.len()));
                            ops.push("gzip, truncated".into());
                        } else {
                            ops.push("gzip".into());
                        }
                        f.data = bytes;
                        if !f.name.ends_with(".gz") {
                            f.name.push_str(".gz");
                        }
                    }
                }
            }
        }
    }
    (input, seed.origin.clone(), ops)
}

// ---------------------------------------------------------------------------------------
// Worker

fn worker(args: &Args) -> Result<ExitCode> {
    let targets = parse_targets(&args.target)?;
    let [target] = targets[..] else {
        bail!("a worker runs one target");
    };
    let workdir = args.workdir.clone().context("--workdir")?;
    std::fs::create_dir_all(&workdir)?;
    let t_seeds = Instant::now();
    let corpus = seeds::load(
        target,
        &fixtures_dir(args),
        &args.corpus,
        &workdir.join("seeds"),
    )
    .with_context(|| format!("loading the seeds of {}", target.name()))?;
    let mut runner = Runner::new(target, &workdir)?;
    let shared = Arc::new(Shared::new(
        target,
        args.seed,
        Some(crash_dir(args)),
        workdir.clone(),
        Duration::from_millis(args.timeout_ms),
        args.max_rss_mb,
    ));
    println!(
        "[{}] {} seeds, {} dictionary tokens (loaded in {:.1} s); iterations {}..{}",
        target.name(),
        corpus.seeds.len(),
        corpus.dict.len(),
        t_seeds.elapsed().as_secs_f64(),
        args.start_iter,
        args.start_iter + args.runs
    );
    watchdog::install_panic_hook();
    watchdog::spawn(shared.clone());
    let start = Instant::now();
    let budget = args.seconds.map(Duration::from_secs_f64);
    let key = rng::fnv(target.name().as_bytes());
    let mut seen_panics = std::collections::BTreeSet::new();
    let mut last_progress = Instant::now();
    let mut last_stats = Instant::now();
    let iter_file = workdir.join("iter");
    let stats = &shared.stats;
    stats.next_iter.store(args.start_iter, Ordering::SeqCst);
    let mut found = false;
    // Self-check of the failure handling: ROCPD_FUZZ_INJECT=<panic|hang|memory|abort>:<iteration>.
    let inject: Option<(String, u64)> = std::env::var("ROCPD_FUZZ_INJECT").ok().and_then(|v| {
        let (kind, at) = v.split_once(':')?;
        Some((kind.to_string(), at.parse().ok()?))
    });
    for it in args.start_iter..args.start_iter.saturating_add(args.runs) {
        if budget.is_some_and(|b| start.elapsed() >= b) {
            break;
        }
        shared.enter(Phase::Mutate);
        let mut rng = Rng::new(args.seed, key, it);
        let (input, origin, ops) = make_input(&mut rng, target, &corpus, &runner);
        let _ = std::fs::write(&iter_file, it.to_string());
        let paths = runner
            .write(&input)
            .with_context(|| format!("writing input {it}"))?;
        let cur = Arc::new(Current {
            input,
            iteration: Some(it),
            origin,
            ops,
        });
        shared.set_current(Some(cur.clone()));
        shared.enter(Phase::Run);
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            if inject.as_ref().is_some_and(|(_, at)| *at == it) {
                inject_failure(&inject.as_ref().expect("checked").0);
            }
            runner.run(&paths)
        }));
        // Still in the run phase until the peak memory of this input has been checked.
        stats.execs.fetch_add(1, Ordering::Relaxed);
        stats.next_iter.store(it + 1, Ordering::SeqCst);
        match result {
            Ok(out) => {
                stats.rows.fetch_add(out.rows, Ordering::Relaxed);
                if let Some((step, msg)) = &out.error {
                    stats.errors.fetch_add(1, Ordering::Relaxed);
                    shared.count_message(step, msg);
                }
                if let Some(msg) = &out.mismatch {
                    found = true;
                    shared.report("mismatch", &shorten(msg, 300), "", Some(&cur));
                    if !args.keep_going {
                        shared.enter(Phase::Idle);
                        shared.set_current(None);
                        shared.write_stats();
                        return Ok(ExitCode::from(EXIT_FOUND as u8));
                    }
                }
                if let Some(msg) = &out.unreadable {
                    stats.unreadable.fetch_add(1, Ordering::Relaxed);
                    let mut s = stats
                        .unreadable_samples
                        .lock()
                        .unwrap_or_else(|e| e.into_inner());
                    if s.len() < 5 {
                        // Kept like a failure (but not counted as one) so it can be replayed.
                        let short = shorten(msg, 300);
                        let saved = shared.crash_dir.as_deref().and_then(|d| {
                            watchdog::save(d, target, "unreadable", &short, "", args.seed, &cur)
                        });
                        let at =
                            saved.map_or(String::new(), |p| format!(" (input {})", p.display()));
                        s.push(format!("iteration {it}: {short}{at}"));
                    }
                }
            }
            Err(_) => {
                let p = watchdog::take_panic();
                stats.panics.fetch_add(1, Ordering::SeqCst);
                found = true;
                if seen_panics.insert(p.location.clone()) {
                    let frames = watchdog::workspace_frames(&p.backtrace, 6);
                    let msg = format!("panic at {}: {}", p.location, p.message);
                    shared.report("panic", &msg, &p.backtrace, Some(&cur));
                    for f in &frames {
                        eprintln!("    {f}");
                    }
                }
                if !args.keep_going {
                    shared.enter(Phase::Idle);
                    shared.set_current(None);
                    shared.write_stats();
                    return Ok(ExitCode::from(EXIT_FOUND as u8));
                }
            }
        }
        let (_, hwm) = watchdog::rss_kb();
        if hwm > shared.max_rss_kb {
            let msg = format!(
                "memory blow-up: peak resident set {} MiB > --max-rss-mb {}",
                hwm / 1024,
                args.max_rss_mb
            );
            shared.report("memory", &msg, "", Some(&cur));
            shared.write_stats();
            return Ok(ExitCode::from(EXIT_FOUND as u8));
        }
        shared.enter(Phase::Idle);
        shared.set_current(None);
        if last_stats.elapsed() >= Duration::from_secs(2) {
            // Kept current for the parent in case this worker dies.
            last_stats = Instant::now();
            shared.write_stats();
        }
        if args.progress_secs > 0 && last_progress.elapsed().as_secs() >= args.progress_secs {
            last_progress = Instant::now();
            let n = stats.execs.load(Ordering::Relaxed);
            let secs = start.elapsed().as_secs_f64();
            println!(
                "[{}] {n} execs, {:.0}/s, {} errors, {} s, RSS {} MiB",
                target.name(),
                n as f64 / secs.max(1e-9),
                stats.errors.load(Ordering::Relaxed),
                secs as u64,
                watchdog::rss_kb().0 / 1024
            );
            shared.write_stats();
        }
    }
    shared.write_stats();
    Ok(if found {
        ExitCode::from(EXIT_FOUND as u8)
    } else {
        ExitCode::SUCCESS
    })
}

/// `s` cut to at most `max` bytes (on a character boundary), marked when cut.
fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &s[..end], s.len())
}

/// A deliberate failure, to check that the harness catches and reports each kind.
fn inject_failure(kind: &str) {
    match kind {
        "panic" => panic!("injected panic (ROCPD_FUZZ_INJECT)"),
        "hang" => loop {
            std::thread::sleep(Duration::from_millis(100));
        },
        "memory" => {
            let mut v: Vec<Vec<u8>> = Vec::new();
            loop {
                v.push(vec![1u8; 64 << 20]);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        "abort" => std::process::abort(),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Replay

fn replay(args: &Args) -> Result<ExitCode> {
    let targets = parse_targets(&args.target)?;
    let [target] = targets[..] else {
        bail!("--replay needs one --target");
    };
    let file = args.replay.clone().context("--replay")?;
    let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    let note = std::fs::read_to_string(file.with_extension("txt")).unwrap_or_default();
    let name = args
        .name
        .clone()
        .or_else(|| {
            note.lines()
                .find_map(|l| l.strip_prefix("name: ").map(str::to_string))
        })
        .unwrap_or_else(|| target.default_name().to_string());
    let input = Input::decode(bytes, &name).map_err(anyhow::Error::msg)?;
    let session = tempfile::Builder::new()
        .prefix("rocpd-fuzz-replay-")
        .tempdir_in(tmp_root(args))?;
    let mut runner = Runner::new(target, session.path())?;
    let shared = Arc::new(Shared::new(
        target,
        args.seed,
        None,
        session.path().to_path_buf(),
        Duration::from_millis(args.timeout_ms),
        args.max_rss_mb,
    ));
    watchdog::install_panic_hook();
    watchdog::spawn(shared.clone());
    let paths = runner.write(&input)?;
    let names: Vec<&str> = input.files.iter().map(|f| f.name.as_str()).collect();
    println!(
        "[{}] replaying {} ({} bytes as {})",
        target.name(),
        file.display(),
        input.len(),
        names.join(", ")
    );
    let t = Instant::now();
    shared.enter(Phase::Run);
    let result = std::panic::catch_unwind(AssertUnwindSafe(|| runner.run(&paths)));
    shared.enter(Phase::Idle);
    let secs = t.elapsed().as_secs_f64();
    let (_, hwm) = watchdog::rss_kb();
    match result {
        Ok(out) => {
            match &out.error {
                Some((step, e)) => println!("reader returned an error in {step}: {e}"),
                None => println!("reader returned Ok"),
            }
            if let Some(u) = &out.unreadable {
                println!("imported database not readable: {u}");
            }
            if let Some(m) = &out.mismatch {
                println!("FAILURE: {m}");
                return Ok(ExitCode::from(EXIT_FOUND as u8));
            }
            println!(
                "{} rows read, {secs:.3} s, peak RSS {} MiB",
                out.rows,
                hwm / 1024
            );
            if hwm > args.max_rss_mb * 1024 {
                println!("FAILURE: memory blow-up (peak RSS above --max-rss-mb)");
                return Ok(ExitCode::from(EXIT_FOUND as u8));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(_) => {
            let p = watchdog::take_panic();
            println!("FAILURE: panic at {}: {}", p.location, p.message);
            println!("{}", p.backtrace);
            Ok(ExitCode::from(EXIT_FOUND as u8))
        }
    }
}

// ---------------------------------------------------------------------------------------
// Supervisor

#[derive(Debug, Default, Clone)]
struct Totals {
    execs: u64,
    errors: u64,
    unreadable: u64,
    panics: u64,
    busy_s: f64,
    peak_rss_kb: u64,
    failures: Vec<String>,
    top: Vec<(String, u64)>,
    distinct: u64,
    unreadable_samples: Vec<String>,
}

struct Job {
    target: Target,
    start_iter: u64,
    runs: u64,
    seconds: Option<f64>,
    part: usize,
}

struct Running {
    job: Job,
    child: Child,
    workdir: PathBuf,
    started: Instant,
}

fn spawn_worker(args: &Args, session: &Path, job: Job) -> Result<Running> {
    let workdir = session.join(format!("{}-{}", job.target.name(), job.part));
    let _ = std::fs::remove_dir_all(&workdir);
    std::fs::create_dir_all(workdir.join("tmp"))?;
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg("--worker")
        .arg("--target")
        .arg(job.target.name())
        .arg("--workdir")
        .arg(&workdir)
        .arg("--runs")
        .arg(job.runs.to_string())
        .arg("--start-iter")
        .arg(job.start_iter.to_string())
        .arg("--seed")
        .arg(args.seed.to_string())
        .arg("--timeout-ms")
        .arg(args.timeout_ms.to_string())
        .arg("--max-rss-mb")
        .arg(args.max_rss_mb.to_string())
        .arg("--crash-dir")
        .arg(crash_dir(args))
        .arg("--fixtures")
        .arg(fixtures_dir(args))
        .arg("--progress-secs")
        .arg(args.progress_secs.to_string())
        .env("TMPDIR", workdir.join("tmp"))
        .env("SQLITE_TMPDIR", workdir.join("tmp"));
    if let Some(s) = job.seconds {
        cmd.arg("--seconds").arg(s.to_string());
    }
    for c in &args.corpus {
        cmd.arg("--corpus").arg(c);
    }
    if args.keep_going {
        cmd.arg("--keep-going");
    }
    let child = cmd.spawn().context("starting a worker")?;
    Ok(Running {
        job,
        child,
        workdir,
        started: Instant::now(),
    })
}

fn read_stats(workdir: &Path) -> Option<serde_json::Value> {
    let s = std::fs::read_to_string(workdir.join("stats.json")).ok()?;
    serde_json::from_str(&s).ok()
}

/// The input a worker that died was running: the files it left in `<work>/in`.
fn leftover_input(workdir: &Path) -> Option<Input> {
    let mut files = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(workdir.join("in"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    paths.sort();
    for p in paths {
        files.push(input::InFile {
            name: p.file_name()?.to_string_lossy().into_owned(),
            data: std::fs::read(&p).ok()?,
        });
    }
    (!files.is_empty()).then_some(Input { files })
}

fn supervise(args: &Args) -> Result<ExitCode> {
    let targets = parse_targets(&args.target)?;
    let root = tmp_root(args);
    let session = tempfile::Builder::new()
        .prefix("rocpd-fuzz-")
        .tempdir_in(&root)
        .with_context(|| format!("creating a work directory in {}", root.display()))?;
    let t0 = Instant::now();
    let mut queue: std::collections::VecDeque<Job> = targets
        .iter()
        .map(|&target| Job {
            target,
            start_iter: args.start_iter,
            runs: args.runs,
            seconds: args.seconds,
            part: 0,
        })
        .collect();
    let mut totals: Vec<(Target, Totals)> =
        targets.iter().map(|&t| (t, Totals::default())).collect();
    let mut running: Vec<Running> = Vec::new();
    let mut harness_error = false;
    while !queue.is_empty() || !running.is_empty() {
        while running.len() < args.jobs.max(1) {
            let Some(job) = queue.pop_front() else { break };
            running.push(spawn_worker(args, session.path(), job)?);
        }
        std::thread::sleep(Duration::from_millis(20));
        let mut i = 0;
        while i < running.len() {
            let Some(status) = running[i].child.try_wait()? else {
                i += 1;
                continue;
            };
            let r = running.swap_remove(i);
            let wall = r.started.elapsed().as_secs_f64();
            let stats = read_stats(&r.workdir);
            let tot = &mut totals
                .iter_mut()
                .find(|(t, _)| *t == r.job.target)
                .expect("target")
                .1;
            let get = |k: &str| stats.as_ref().and_then(|s| s[k].as_u64()).unwrap_or(0);
            tot.execs += get("execs");
            tot.errors += get("errors");
            tot.unreadable += get("unreadable");
            tot.panics += get("panics");
            tot.peak_rss_kb = tot.peak_rss_kb.max(get("peak_rss_kb"));
            tot.busy_s += stats
                .as_ref()
                .and_then(|s| s["elapsed_s"].as_f64())
                .unwrap_or(wall);
            if let Some(s) = &stats {
                for f in s["failures"].as_array().into_iter().flatten() {
                    tot.failures.push(f.as_str().unwrap_or("").to_string());
                }
                for u in s["unreadable_samples"].as_array().into_iter().flatten() {
                    if tot.unreadable_samples.len() < 10 {
                        tot.unreadable_samples
                            .push(u.as_str().unwrap_or("").to_string());
                    }
                }
                tot.distinct = tot
                    .distinct
                    .max(s["distinct_messages"].as_u64().unwrap_or(0));
                for m in s["top_messages"].as_array().into_iter().flatten() {
                    let k = m[0].as_str().unwrap_or("").to_string();
                    let n = m[1].as_u64().unwrap_or(0);
                    match tot.top.iter_mut().find(|(x, _)| *x == k) {
                        Some(e) => e.1 += n,
                        None => tot.top.push((k, n)),
                    }
                }
            }
            let mut next_iter = stats
                .as_ref()
                .and_then(|s| s["next_iter"].as_u64())
                .unwrap_or(r.job.start_iter);
            let code = status.code();
            let failed = match code {
                Some(0) => false,
                Some(c) if c == EXIT_FOUND => true,
                Some(c) if c == EXIT_HARNESS || c == 2 => {
                    eprintln!(
                        "[{}] worker failed (harness error, exit {c})",
                        r.job.target.name()
                    );
                    harness_error = true;
                    continue;
                }
                _ => {
                    // Died without reporting: abort, signal (the OOM killer), stack overflow.
                    let it: Option<u64> = std::fs::read_to_string(r.workdir.join("iter"))
                        .ok()
                        .and_then(|s| s.trim().parse().ok());
                    let how = match code {
                        Some(c) => format!("exit code {c}"),
                        None => {
                            use std::os::unix::process::ExitStatusExt;
                            format!("signal {}", status.signal().unwrap_or(0))
                        }
                    };
                    let msg = format!("worker died ({how}) running an input");
                    let shared = Shared::new(
                        r.job.target,
                        args.seed,
                        Some(crash_dir(args)),
                        r.workdir.clone(),
                        Duration::from_millis(args.timeout_ms),
                        args.max_rss_mb,
                    );
                    let cur = leftover_input(&r.workdir).map(|input| Current {
                        input,
                        iteration: it,
                        origin: "unknown (regenerate with --start-iter)".into(),
                        ops: Vec::new(),
                    });
                    shared.report("crash", &msg, "", cur.as_ref());
                    tot.failures.extend(
                        shared
                            .stats
                            .failures
                            .lock()
                            .map(|f| f.clone())
                            .unwrap_or_default(),
                    );
                    if let Some(it) = it {
                        next_iter = next_iter.max(it + 1);
                    }
                    true
                }
            };
            if failed {
                // A restart never runs the failing input again.
                next_iter = next_iter.max(r.job.start_iter + 1);
            }
            let end = r.job.start_iter.saturating_add(r.job.runs);
            let left_s = r.job.seconds.map(|s| s - wall);
            if failed && args.keep_going && next_iter < end && left_s.is_none_or(|s| s > 0.0) {
                queue.push_back(Job {
                    target: r.job.target,
                    start_iter: next_iter,
                    runs: end - next_iter,
                    seconds: left_s,
                    part: r.job.part + 1,
                });
            }
        }
    }
    print_totals(&totals, t0.elapsed().as_secs_f64(), args.show_errors);
    let any_failure = totals
        .iter()
        .any(|(_, t)| !t.failures.is_empty() || t.panics > 0);
    Ok(if harness_error {
        ExitCode::from(2)
    } else if any_failure {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_totals(totals: &[(Target, Totals)], wall: f64, show_errors: bool) {
    println!();
    println!(
        "{:<16} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9}",
        "target", "execs", "errors", "unreadable", "execs/s", "elapsed", "peak RSS", "failures"
    );
    for (t, x) in totals {
        println!(
            "{:<16} {:>10} {:>10} {:>10} {:>10.0} {:>8.1}s {:>6} MiB {:>9}",
            t.name(),
            x.execs,
            x.errors,
            x.unreadable,
            x.execs as f64 / x.busy_s.max(1e-9),
            x.busy_s,
            x.peak_rss_kb / 1024,
            x.failures.len()
        );
    }
    println!("wall clock {wall:.1} s");
    for (t, x) in totals {
        for f in &x.failures {
            println!("FAILURE [{}] {f}", t.name());
        }
        if x.unreadable > 0 {
            println!(
                "[{}] {} imports were accepted but their database was not readable, e.g.:",
                t.name(),
                x.unreadable
            );
            for s in &x.unreadable_samples {
                println!("    {s}");
            }
        }
        if show_errors {
            let mut top = x.top.clone();
            top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            println!(
                "[{}] {} distinct error messages; most frequent:",
                t.name(),
                x.distinct
            );
            for (m, n) in top.iter().take(15) {
                println!("    {n:>9}  {m}");
            }
        }
    }
}

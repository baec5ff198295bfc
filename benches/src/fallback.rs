//! `--fallback-only`: rocprofv3 runs the direct readers used to leave to the import
//! (D119-D121, D125, D127, D140, D142, D149), read directly beside the way they were read before: imported into a RocPD
//! database by `rocpd_rocprofv3::import` (this binary's hidden `--import-run` mode), which
//! `rocpd convert` then reads. Both give the same Perfetto file, which is checked.
//!
//! * **counted**: a CSV run of kernels each with two counter values, more dispatches with
//!   values than the 2^19 the PMC stream kept before D119.
//! * **decode**: the real llama.cpp decode trace of `fixtures/`, many times over with
//!   ids and times shifted and every third kernel kept: kernels few in each page of
//!   correlation ids, the others taken by calls of domains not traced (D120).
//! * **spread**: the same decode trace 3,000 times over with every kernel (450 MB): its
//!   calls' correlation ids spread over more than the 16,384 pages of 4,096 ids the
//!   region ids were kept in before D140.
//! * **kernels**: the decode trace's kernel file alone, 3,000 times over with every third
//!   kernel: about six kernels a page of flow groups, whose pages, counted raw, passed
//!   1.5 times the input before D142.
//! * **small**: the same kernel file 20 times over with every third kernel (0.3 MB): its
//!   flow groups' pages, a few kernels each, fit in memory, but counted against 1.5 times
//!   so small an input they were refused before D149.
//! * **markers**: the generated 0.1M JSON object with marker calls added, one `strings`
//!   text each but few distinct, more than the 2^19 texts kept before D121.
//! * **distinct**: the same with every text distinct, more than the 2^19 distinct texts
//!   kept before D125 (past 2^17 a stream keeps them in a file).
//! * **threads**: a 2024-07 kernel trace (no thread column) of 1.2M kernels with one
//!   counter value each, whose counter row gives the dispatch its thread: more than the
//!   2^20 such threads the describing pass kept in memory before D127.

use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::{dir_size, pftrace_into, run_measured};

/// The hidden `--import-run INPUT DEST` mode: the one rocprofv3 run in `INPUT` imported
/// into the RocPD database `DEST`, as the facade imported runs it could not read directly.
pub fn import_run(args: &[String]) -> Result<()> {
    let [input, dest] = args else {
        bail!("usage: --import-run INPUT DEST");
    };
    let runs = rocpd_rocprofv3::group_runs(&[PathBuf::from(input)])?;
    let [run] = &runs[..] else {
        bail!("{input}: {} runs, expected one", runs.len());
    };
    rocpd_rocprofv3::import(run, Path::new(dest), &Default::default())?;
    Ok(())
}

/// Writes `rows` under `header` to `path`, through a buffer.
fn write_csv(path: &Path, header: &str, rows: impl Iterator<Item = String>) -> Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    writeln!(out, "{header}")?;
    for row in rows {
        writeln!(out, "{row}")?;
    }
    out.flush()?;
    Ok(())
}

const KERNEL_HEADER: &str = "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Stream_Id\",\"Thread_Id\",\"Dispatch_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"";
const COUNTER_HEADER: &str = "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\"";

/// The counted run: `n` kernels, two counter values each.
fn write_counted(dir: &Path, n: i64) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let start = |k: i64| 1_000_000 + k * 1000;
    let kernels = (1..=n).map(|k| {
        format!(
            "\"KERNEL_DISPATCH\",\"Agent 4\",1,1,834304,{k},{},\"kern{}\",{k},{},{},0,0,8,0,16,64,1,1,1024,1024,1",
            10 + k % 5,
            k % 5,
            start(k),
            start(k) + 700
        )
    });
    write_csv(&dir.join("kernel_trace.csv"), KERNEL_HEADER, kernels)?;
    let counters = (1..=n).flat_map(|k| {
        ["SQ_WAVES", "GRBM_COUNT"].map(|c| {
            format!(
                "{k},{k},\"Agent 4\",1,15606,834304,1048576,{},\"kern{}\",64,0,0,8,0,16,\"{c}\",{k}.000000,{},{}",
                10 + k % 5,
                k % 5,
                start(k),
                start(k) + 700
            )
        })
    });
    write_csv(
        &dir.join("counter_collection.csv"),
        COUNTER_HEADER,
        counters,
    )
}

/// The threads run: a 2024-07 kernel trace (no thread column, dispatches numbered by row)
/// of `n` kernels, and one counter value each, whose row gives the dispatch its thread
/// (more than `MAX_GROUPS` such threads were imported before D127).
fn write_threads(dir: &Path, n: i64) -> Result<()> {
    const OLD_KERNEL_HEADER: &str = "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Kernel_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\",\"Private_Segment_Size\",\"Group_Segment_Size\",\"Workgroup_Size_X\",\"Workgroup_Size_Y\",\"Workgroup_Size_Z\",\"Grid_Size_X\",\"Grid_Size_Y\",\"Grid_Size_Z\"";
    std::fs::create_dir_all(dir)?;
    let start = |k: i64| 1_000_000 + k * 1000;
    let kernels = (1..=n).map(|k| {
        format!(
            "\"KERNEL_DISPATCH\",1,1,{},\"kern{}\",{k},{},{},0,0,64,1,1,1024,1,1",
            10 + k % 5,
            k % 5,
            start(k),
            start(k) + 700
        )
    });
    write_csv(
        &dir.join("4242_kernel_trace.csv"),
        OLD_KERNEL_HEADER,
        kernels,
    )?;
    let counters = (1..=n).map(|k| {
        format!(
            "{k},{k},1,1,4242,{},1048576,{},\"kern{}\",64,0,0,8,0,16,\"SQ_WAVES\",{k}.000000,{},{}",
            4242 + k % 8,
            10 + k % 5,
            k % 5,
            start(k),
            start(k) + 700
        )
    });
    write_csv(
        &dir.join("4242_counter_collection.csv"),
        COUNTER_HEADER,
        counters,
    )
}

/// The fields of a CSV line whose every field is quoted (the llama.cpp files).
fn quoted_fields(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('"').trim_end_matches('"');
    inner.split("\",\"").map(String::from).collect()
}

/// The decode run: the real decode trace `copies` times, every `keep`th kernel kept, with
/// its HIP calls when `api` is set.
fn write_decode(dir: &Path, copies: i64, keep: usize, api: bool) -> Result<()> {
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/rocprofv3-csv-llamacpp");
    std::fs::create_dir_all(dir)?;
    let times = 100_000_000;
    for (name, every, dispatches) in [
        ("decode_hip_api_trace.csv", 1, false),
        ("decode_kernel_trace.csv", keep, true),
    ] {
        if !api && !dispatches {
            continue;
        }
        let text = std::fs::read_to_string(real.join(name))
            .with_context(|| format!("{}", real.join(name).display()))?;
        let mut lines = text.lines();
        let header = lines.next().context("empty fixture")?;
        let names = quoted_fields(header);
        let at = |n: &str| names.iter().position(|x| x == n).context("column");
        let mut shifted = vec![
            (at("Correlation_Id")?, 30_000),
            (at("Start_Timestamp")?, times),
            (at("End_Timestamp")?, times),
        ];
        if dispatches {
            shifted.push((at("Dispatch_Id")?, 1000));
        }
        let body: Vec<Vec<String>> = lines.map(quoted_fields).collect();
        let mut rows = Vec::new();
        for copy in 0..copies {
            for row in body.iter().step_by(every) {
                let mut row = row.clone();
                for &(i, by) in &shifted {
                    let v: i64 = row[i].parse()?;
                    row[i] = (v + copy * by).to_string();
                }
                rows.push(format!("\"{}\"", row.join("\",\"")));
            }
        }
        write_csv(&dir.join(name), header, rows.into_iter())?;
    }
    Ok(())
}

/// The markers object: `json` with `n` marker calls added, each with its text (one of
/// `distinct`), at correlation ids past the object's, spread over its markers' time.
fn write_markers(json: &Path, out: &Path, n: i64, distinct: i64) -> Result<()> {
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(json)?)?;
    let object = &mut doc["rocprofiler-sdk-tool"][0];
    let records = &object["buffer_records"];
    let mut largest = 0;
    for list in records.as_object().context("buffer_records")?.values() {
        for r in list.as_array().into_iter().flatten() {
            largest = largest.max(r["correlation_id"]["internal"].as_i64().unwrap_or(0));
        }
    }
    let markers = records["marker_api"].as_array().context("marker_api")?;
    let first = markers
        .iter()
        .filter_map(|r| r["start_timestamp"].as_i64())
        .min();
    let last = markers
        .iter()
        .filter_map(|r| r["end_timestamp"].as_i64())
        .max();
    let (Some(first), Some(last)) = (first, last) else {
        bail!("{}: no markers", json.display());
    };
    let mut added = Vec::new();
    let mut texts = Vec::new();
    for k in 0..n {
        let id = largest + 1 + k * 3;
        let start = first + (last - first) * k / n;
        added.push(serde_json::json!({
            "correlation_id": {"ancestor": 0, "external": 0, "internal": id},
            "end_timestamp": start + 500, "kind": 4, "operation": 1, "size": 1,
            "start_timestamp": start, "thread_id": 4000
        }));
        texts.push(serde_json::json!({"key": id, "value": format!("step {}", k % distinct)}));
    }
    let push = |v: &mut serde_json::Value, more: Vec<serde_json::Value>| -> Result<()> {
        v.as_array_mut().context("not a list")?.extend(more);
        Ok(())
    };
    push(&mut object["buffer_records"]["marker_api"], added)?;
    push(&mut object["strings"]["marker_api"], texts)?;
    std::fs::create_dir_all(out.parent().context("parent")?)?;
    let mut w = BufWriter::new(std::fs::File::create(out)?);
    serde_json::to_writer(&mut w, &doc)?;
    w.flush()?;
    Ok(())
}

/// A hash of a file's bytes, to tell two outputs apart, read a block at a time: this
/// process must stay small, or the peaks of the children it starts after would rise.
fn file_hash(path: &Path) -> Result<u64> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut block = vec![0; 1 << 16];
    let mut state = rocpd_model::hash::FNV_OFFSET;
    loop {
        let n = file.read(&mut block)?;
        if n == 0 {
            return Ok(state);
        }
        state = rocpd_model::hash::fnv1a64(&block[..n], state);
    }
}

/// The inputs, into `dir` (the hidden `--prepare fallback DIR JSON SCALE` mode: in a
/// child, as every input, so that the parent's size does not raise the peaks measured).
pub fn write_inputs(dir: &Path, markers_base: &Path, scale: i64) -> Result<()> {
    write_counted(&dir.join("counted"), 700_000 / scale)?;
    write_decode(&dir.join("decode"), 400 / scale, 3, true)?;
    write_decode(&dir.join("spread"), 3000 / scale, 1, true)?;
    write_decode(&dir.join("kernels"), 3000 / scale, 3, false)?;
    write_decode(&dir.join("small"), 20, 3, false)?;
    let markers = dir.join("markers").join("markers_results.json");
    write_markers(markers_base, &markers, 700_000 / scale, 1000)?;
    let distinct = dir.join("distinct").join("distinct_results.json");
    write_markers(markers_base, &distinct, 700_000 / scale, 700_000 / scale)?;
    write_threads(&dir.join("threads"), 1_200_000 / scale)
}

pub fn section(
    exe: &Path,
    rocpd: &Path,
    root: &Path,
    markers_base: &Path,
    scale: u32,
) -> Result<()> {
    let dir = root.join(format!("fallback-s{scale}"));
    let counted = dir.join("counted");
    let decode = dir.join("decode");
    let spread = dir.join("spread");
    let kernels = dir.join("kernels");
    let markers = dir.join("markers").join("markers_results.json");
    let distinct = dir.join("distinct").join("distinct_results.json");
    let threads = dir.join("threads");
    let small = dir.join("small");
    if !dir.join("inputs-done-d149").exists() {
        let _ = std::fs::remove_dir_all(&dir);
        crate::prepare_in_child(&[
            "fallback".as_ref(),
            dir.as_os_str(),
            markers_base.as_os_str(),
            scale.to_string().as_ref(),
        ])?;
        std::fs::write(dir.join("inputs-done-d149"), "")?;
    }
    println!("\nRuns imported before D119-D121, D125, D127, D140, D142 and D149, read directly against their import (-f pftrace):");
    let mut table = String::new();
    writeln!(
        table,
        "{:<8} {:>8} {:>9} {:>9} {:>8} {:>10} {:>9} {:>7} {:>8} {:>5}",
        "case",
        "in MiB",
        "direct s",
        "peak MiB",
        "tmp MiB",
        "imported s",
        "peak MiB",
        "db MiB",
        "speedup",
        "same"
    )?;
    for (name, input) in [
        ("counted", &counted),
        ("decode", &decode),
        ("spread", &spread),
        ("kernels", &kernels),
        ("small", &small),
        ("markers", &markers),
        ("distinct", &distinct),
        ("threads", &threads),
    ] {
        let direct_out = dir.join("out-direct");
        let ((seconds, kib), tmp) = pftrace_into(rocpd, input, &direct_out, &dir)?;
        // Before: the import into a database, then the database read.
        let db = dir.join("imported.db");
        let _ = std::fs::remove_file(&db);
        let mut import = Command::new(exe);
        import.arg("--import-run").arg(input).arg(&db);
        let (import_s, import_kib) = run_measured(&mut import)?;
        let imported_out = dir.join("out-imported");
        let ((read_s, read_kib), _) = pftrace_into(rocpd, &db, &imported_out, &dir)?;
        let same = file_hash(&direct_out.join("t_results.pftrace"))?
            == file_hash(&imported_out.join("t_results.pftrace"))?;
        let before = import_s + read_s;
        let db_bytes = std::fs::metadata(&db)?.len();
        writeln!(
            table,
            "{:<8} {:>8.1} {:>9.2} {:>9.1} {:>8.1} {:>10.2} {:>9.1} {:>7.1} {:>7.2}x {:>5}",
            name,
            dir_size(input.parent().filter(|_| input.is_file()).unwrap_or(input)) as f64
                / 1048576.0,
            seconds,
            kib as f64 / 1024.0,
            tmp as f64 / 1048576.0,
            before,
            import_kib.max(read_kib) as f64 / 1024.0,
            db_bytes as f64 / 1048576.0,
            before / seconds,
            if same { "yes" } else { "NO" }
        )?;
        let _ = std::fs::remove_file(&db);
        let _ = std::fs::remove_dir_all(&direct_out);
        let _ = std::fs::remove_dir_all(&imported_out);
    }
    print!("{table}");
    Ok(())
}

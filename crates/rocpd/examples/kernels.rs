//! Streams the kernel dispatches of profiling outputs, in time order, as Arrow record
//! batches, and prints the ten kernels with the most total time. Only the facade is used;
//! the JSON text columns are left out of the stream, since nothing here reads them.
//!
//!     cargo run -p rocpd --example kernels -- INPUT...

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use rocpd::{EventOptions, Inputs, Projection, Table};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files: Vec<_> = std::env::args_os().skip(1).collect();
    if files.is_empty() {
        return Err("usage: kernels INPUT...".into());
    }
    let mut inputs = Inputs::open(&files, &Default::default())?;
    let options = EventOptions {
        projection: Projection::without_json_text(),
        ..Default::default()
    };
    let table = Table::KernelDispatch;
    let (start, end, name) = (
        table.column_index("start"),
        table.column_index("end"),
        table.column_index("kernel_name"),
    );
    let mut total: HashMap<String, (u64, u128)> = HashMap::new();
    let mut dispatches = 0u64;
    for batch in inputs.events(table, &options)? {
        let batch = batch?;
        let s = batch.column(start).as_primitive::<Int64Type>();
        let e = batch.column(end).as_primitive::<Int64Type>();
        let n = batch.column(name).as_string::<i32>();
        for r in 0..batch.num_rows() {
            let d = (e.value(r) as i128 - s.value(r) as i128).max(0) as u128;
            let slot = total.entry(n.value(r).to_string()).or_default();
            slot.0 += 1;
            slot.1 += d;
            dispatches += 1;
        }
    }
    let mut rows: Vec<_> = total.into_iter().collect();
    rows.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then(a.0.cmp(&b.0)));
    println!("{dispatches} kernel dispatches, {} kernels", rows.len());
    for (kernel, (calls, ns)) in rows.iter().take(10) {
        let shown: String = kernel.chars().take(60).collect();
        println!("{ns:>14} ns {calls:>8} calls  {shown}");
    }
    Ok(())
}

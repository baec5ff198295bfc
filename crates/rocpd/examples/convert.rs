//! Converts profiling outputs to a Perfetto trace and a Parquet dataset with the facade
//! alone, keeping only kernels and copies, and prints the run report.
//!
//!     cargo run -p rocpd --example convert -- OUT_DIR INPUT...

use rocpd::{Conversion, Format, Inputs, Selection};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let out = args.next().ok_or("usage: convert OUT_DIR INPUT...")?;
    let files: Vec<_> = args.collect();
    let mut inputs = Inputs::open(&files, &Default::default())?;
    let conversion = Conversion {
        formats: vec![Format::Pftrace, Format::Parquet],
        dir: out.into(),
        name: "example".into(),
        selection: Selection::default().with_rules(&["kind=kernel,copy".to_string()], &[])?,
        ..Default::default()
    };
    let report = inputs.convert(&conversion, &mut |_| {})?;
    println!("{}", report.render());
    for o in &report.outputs {
        println!("wrote {} ({} bytes)", o.path.display(), o.bytes);
    }
    Ok(())
}

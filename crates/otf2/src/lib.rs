//! Streaming OTF2 writer, in Rust, with no C library at build or run time.
//!
//! Writes an OTF2 archive that the reference reader (`otf2-print`, the OTF2 Python
//! library) accepts:
//!
//! ```text
//! <dir>/<name>.otf2        anchor file
//! <dir>/<name>.def         global definitions (written at the end)
//! <dir>/<name>/<loc>.evt   events of location <loc>, appended as its buffer fills
//! <dir>/<name>/<loc>.def   local definitions of location <loc> (empty)
//! ```
//!
//! The mapping from the event model to OTF2 (system tree, location groups, locations,
//! regions, attributes, metrics) and the byte layout are in `formats/otf2/README.md`.
//! The archive is built in a temporary directory next to it and renamed into place by
//! [`Sink::finish`] (anchor last); dropped unfinished, the sink removes everything.

#![warn(missing_docs)]

mod defs;
mod encode;
mod evt;
mod writer;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rocpd_model::hash::{fnv1a64, FNV_OFFSET};
use rocpd_model::{Catalog, Error, Result};
use rocpd_pipeline::{Chunk, OutputReport, Sink};

/// Chunk size of the event files (the reference library's default for event chunks).
const EVENT_CHUNK_SIZE: u64 = 1 << 20;
/// Chunk size of the definition files (the reference library's default for definitions).
const DEF_CHUNK_SIZE: u64 = 4 << 20;
const _: () = assert!(
    EVENT_CHUNK_SIZE >= encode::CHUNK_SIZE_MIN
        && EVENT_CHUNK_SIZE <= encode::CHUNK_SIZE_MAX
        && DEF_CHUNK_SIZE >= encode::CHUNK_SIZE_MIN
        && DEF_CHUNK_SIZE <= encode::CHUNK_SIZE_MAX
);
/// The event buffers of all locations together may hold this many times
/// [`Otf2Options::buffer_bytes`] before the largest are written out early.
const BUFFERS_PER_SINK: usize = 32;

/// How the OTF2 output is written.
#[derive(Debug, Clone)]
pub struct Otf2Options {
    /// Bytes of events a location buffers in memory before they are appended to its
    /// event file (default 1 MiB). All locations together buffer at most 32 times this.
    pub buffer_bytes: usize,
}

impl Default for Otf2Options {
    fn default() -> Self {
        Otf2Options {
            buffer_bytes: 1 << 20,
        }
    }
}

/// The final and temporary paths of one archive.
struct Archive {
    anchor: PathBuf,
    defs: PathBuf,
    dir: PathBuf,
    name: String,
    /// Temporary directory holding `<name>.otf2`, `<name>.def`, `<name>/` until commit.
    tmp: PathBuf,
    /// Final paths already renamed into place (removed again if the commit fails).
    placed: Vec<PathBuf>,
    committed: bool,
    _registered: rocpd_pipeline::cleanup::Registered,
}

static SERIAL: AtomicU64 = AtomicU64::new(0);

impl Archive {
    fn create(anchor: &Path) -> Result<Self> {
        if anchor.extension().and_then(|e| e.to_str()) != Some("otf2") {
            return Err(Error::output(
                anchor,
                "an OTF2 anchor file name must end in .otf2",
            ));
        }
        let name = anchor
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| Error::output(anchor, "the anchor file name must be valid UTF-8"))?
            .to_string();
        let parent = anchor
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        fs::create_dir_all(parent)
            .map_err(|e| Error::output(parent, format!("cannot create directory: {e}")))?;
        let defs = parent.join(format!("{name}.def"));
        let dir = parent.join(&name);
        for p in [anchor, defs.as_path(), dir.as_path()] {
            if p.symlink_metadata().is_ok() {
                return Err(Error::output(
                    p,
                    "already exists; an OTF2 archive is never written over an existing one",
                ));
            }
        }
        let tmp = parent.join(format!(
            ".{name}.otf2.partial-{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let registered = rocpd_pipeline::cleanup::Registered::new(&tmp);
        fs::create_dir(&tmp)
            .and_then(|_| fs::create_dir(tmp.join(&name)))
            .map_err(|e| Error::output(&tmp, format!("cannot create directory: {e}")))?;
        Ok(Archive {
            anchor: anchor.to_path_buf(),
            defs,
            dir,
            name,
            tmp,
            placed: Vec::new(),
            _registered: registered,
            committed: false,
        })
    }

    fn tmp_events(&self) -> PathBuf {
        self.tmp.join(&self.name)
    }

    fn tmp_defs(&self) -> PathBuf {
        self.tmp.join(format!("{}.def", self.name))
    }

    fn tmp_anchor(&self) -> PathBuf {
        self.tmp.join(format!("{}.otf2", self.name))
    }

    fn spill_path(&self) -> PathBuf {
        self.tmp.join("definitions.spill")
    }

    /// Renames the event directory, the definitions and then the anchor into place.
    fn commit(&mut self) -> Result<()> {
        let moves = [
            (self.tmp_events(), self.dir.clone()),
            (self.tmp_defs(), self.defs.clone()),
            (self.tmp_anchor(), self.anchor.clone()),
        ];
        for (from, to) in moves {
            if to.symlink_metadata().is_ok() {
                return Err(Error::output(
                    &to,
                    "appeared while the archive was written; not replaced",
                ));
            }
            fs::rename(&from, &to)
                .map_err(|e| Error::output(&to, format!("cannot rename into place: {e}")))?;
            self.placed.push(to);
        }
        self.committed = true;
        let _ = fs::remove_dir_all(&self.tmp);
        Ok(())
    }
}

impl Drop for Archive {
    fn drop(&mut self) {
        if !self.committed {
            for p in self.placed.drain(..).rev() {
                let _ = if p.is_dir() {
                    fs::remove_dir_all(&p)
                } else {
                    fs::remove_file(&p)
                };
            }
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

/// A [`Sink`] writing one OTF2 archive whose anchor file is `anchor`
/// (e.g. `<dir>/<name>_results.otf2`).
pub struct Otf2Sink {
    anchor: PathBuf,
    opts: Otf2Options,
    state: Option<(Archive, writer::Writer)>,
}

impl Otf2Sink {
    /// A sink that will write the archive of `anchor` (created at `begin` under temporary
    /// names, renamed into place at `finish`; refused if the anchor, `<name>.def` or the
    /// `<name>/` directory exists).
    pub fn new(anchor: &Path, opts: Otf2Options) -> Self {
        Otf2Sink {
            anchor: anchor.to_path_buf(),
            opts,
            state: None,
        }
    }
}

impl Sink for Otf2Sink {
    fn projection(&self) -> rocpd_model::Projection {
        // Counter values become metric points: none of their event's columns is shown.
        rocpd_model::Projection::without_json_text()
            .without_event_columns_in(rocpd_model::Table::PmcValue)
    }

    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
        let archive = Archive::create(&self.anchor)?;
        let defs = defs::Defs::new(&archive.spill_path())
            .map_err(|e| Error::output(&archive.tmp, format!("cannot create: {e}")))?;
        let buffer = self.opts.buffer_bytes.max(1);
        let w = writer::Writer::new(
            catalog.clone(),
            archive.tmp_events(),
            defs,
            EVENT_CHUNK_SIZE,
            buffer,
            buffer.saturating_mul(BUFFERS_PER_SINK).max(64 << 10),
        );
        self.state = Some((archive, w));
        Ok(())
    }

    fn write(&mut self, chunk: &Chunk) -> Result<()> {
        let (archive, w) = self.state.as_mut().expect("begin before write");
        w.write_chunk(chunk)
            .map_err(|e| Error::output(&archive.anchor, format!("write failed: {e}")))
    }

    fn finish(self: Box<Self>) -> Result<Vec<OutputReport>> {
        let (mut archive, mut w) = self.state.expect("begin before finish");
        let fail = |e: std::io::Error| Error::output(&archive.anchor, format!("write failed: {e}"));
        let (events, clock, mut bytes) = w.finish().map_err(fail)?;
        let (global_defs, def_bytes) = w
            .defs
            .write(&archive.tmp_defs(), DEF_CHUNK_SIZE, clock, &events)
            .map_err(fail)?;
        bytes += def_bytes;
        let mut id = fnv1a64(archive.name.as_bytes(), FNV_OFFSET);
        for v in [clock.0, clock.1, events.len() as u64, global_defs] {
            id = fnv1a64(&v.to_le_bytes(), id);
        }
        let anchor = encode::Anchor {
            event_chunk_size: EVENT_CHUNK_SIZE,
            def_chunk_size: DEF_CHUNK_SIZE,
            locations: events.len() as u64,
            global_defs,
            machine: "",
            creator: concat!("rocpd-rs ", env!("CARGO_PKG_VERSION")),
            description: "ROCm profiling trace converted by rocpd-rs",
            properties: &[],
            trace_id: id.max(1),
        }
        .encode();
        fs::write(archive.tmp_anchor(), &anchor).map_err(fail)?;
        bytes += anchor.len() as u64;
        if w.spills() > 0 {
            w.report.notes.push(format!(
                "event buffers were appended to their files {} times before the end (bounded memory)",
                w.spills()
            ));
        }
        archive.commit()?;
        let mut report = std::mem::take(&mut w.report);
        report.path = archive.anchor.clone();
        report.bytes = bytes;
        if events.iter().all(|&n| n == 0) {
            report
                .notes
                .push("no events: the archive has one empty location \"no events\"".into());
        }
        Ok(vec![report])
    }
}

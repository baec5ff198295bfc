//! Global definitions: strings, regions, attributes, the system tree, location groups,
//! locations and metrics, with sequential 32-bit ids (never hashes).
//!
//! Strings and regions are the only definitions whose number grows with the input (every
//! distinct ROCTx message is a region). Their records are appended to a spill file as
//! they are created, and the lookup tables that deduplicate them are bounded: past a size
//! limit they are cleared, and a name seen again gets a new, equally valid definition.
//! Everything else is a few rows per process, thread, agent or queue and stays in memory
//! until [`Defs::write`] produces the global definition file at the end.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use rocpd_model::hash::FastMap;

use crate::encode::{
    def, put_i64, put_record, put_str, put_u32, put_u64, ty, DefFile, UNDEFINED_U32, UNDEFINED_U64,
};

/// `OTF2_RegionRole` values used here.
pub mod role {
    /// A function (API call, kernel, marker range, sample).
    pub const FUNCTION: u8 = 1;
    /// A memory copy.
    pub const DATA_TRANSFER: u8 = 30;
    /// A memory allocation.
    pub const ALLOCATE: u8 = 35;
    /// A memory release.
    pub const DEALLOCATE: u8 = 36;
    /// A reallocation.
    pub const REALLOCATE: u8 = 37;
}

/// `OTF2_Paradigm` values used here.
pub mod paradigm {
    /// Unknown paradigm.
    pub const UNKNOWN: u8 = 0;
    /// User instrumentation (ROCTx markers).
    pub const USER: u8 = 1;
    /// OpenMP.
    pub const OPENMP: u8 = 3;
    /// Sampling.
    pub const SAMPLING: u8 = 21;
    /// HIP API calls and GPU activity.
    pub const HIP: u8 = 23;
}

/// `OTF2_LocationType` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocationType {
    /// A CPU thread.
    CpuThread = 1,
    /// A GPU queue, stream or engine.
    AcceleratorStream = 2,
    /// A location holding only metrics.
    Metric = 3,
}

/// The fixed attributes, in id order: (name, description, type).
pub const ATTRIBUTES: [(&str, &str, u8); 4] = [
    ("category", "tracing category", ty::STRING),
    ("corr_id", "internal correlation id", ty::INT64),
    ("dispatch_id", "kernel dispatch id", ty::INT64),
    ("bytes", "bytes copied or allocated", ty::INT64),
];
/// Attribute id of `category`.
pub const ATTR_CATEGORY: u32 = 0;
/// Attribute id of `corr_id`.
pub const ATTR_CORR_ID: u32 = 1;
/// Attribute id of `dispatch_id`.
pub const ATTR_DISPATCH_ID: u32 = 2;
/// Attribute id of `bytes`.
pub const ATTR_BYTES: u32 = 3;

/// A machine (system tree node of class `node`).
pub struct Host {
    pub name: String,
}

/// A process (system tree node of class `process` and a `PROCESS` location group).
pub struct Process {
    pub host: usize,
    pub name: String,
}

/// An agent seen by at least one location (an `ACCELERATOR` location group).
pub struct Accelerator {
    pub host: usize,
    pub name: String,
    /// The process that created its locations, if exactly one did.
    pub creator: Creator,
}

/// Which processes created locations in an accelerator group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Creator {
    /// None yet.
    Nobody,
    /// Exactly this process.
    One(usize),
    /// Several.
    Many,
}

/// The location group a location belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// A process.
    Process(usize),
    /// An accelerator.
    Accelerator(usize),
}

/// A location.
pub struct Location {
    pub name: String,
    pub kind: LocationType,
    pub group: Group,
}

/// A metric: one member and one class per counter.
pub struct Metric {
    pub name: String,
    pub description: String,
    pub unit: String,
}

/// Bytes of deduplication tables kept before they are cleared.
const INTERN_LIMIT_BYTES: usize = 32 << 20;
/// Longest string written: a record must fit in one definition chunk.
const MAX_STRING_BYTES: usize = 1 << 20;

/// The definitions of one archive.
pub struct Defs {
    spill_path: PathBuf,
    spill: BufWriter<File>,
    spilled: u64,
    strings: FastMap<String, u32>,
    next_string: u32,
    regions: FastMap<(u32, u8, u8), u32>,
    next_region: u32,
    intern_bytes: usize,
    intern_limit: usize,
    pub cleared: u64,
    pub truncated: u64,
    pub hosts: Vec<Host>,
    host_ids: FastMap<String, usize>,
    pub processes: Vec<Process>,
    process_ids: FastMap<(u32, i64), usize>,
    pub accelerators: Vec<Accelerator>,
    accelerator_ids: FastMap<(usize, String), usize>,
    pub locations: Vec<Location>,
    pub metrics: Vec<Metric>,
    /// By name, then unit: looked up for every counter row without building a key.
    metric_ids: FastMap<String, FastMap<String, u32>>,
    scratch: Vec<u8>,
    rec: Vec<u8>,
}

fn too_many(what: &str) -> io::Error {
    io::Error::other(format!(
        "more than 2^32 - 1 {what}: OTF2 references are 32-bit"
    ))
}

impl Defs {
    /// Definitions whose string and region records spill to `spill_path`.
    pub fn new(spill_path: &Path) -> io::Result<Self> {
        let spill = BufWriter::with_capacity(1 << 16, File::create_new(spill_path)?);
        let mut d = Defs {
            spill_path: spill_path.to_path_buf(),
            spill,
            spilled: 0,
            strings: FastMap::default(),
            next_string: 0,
            regions: FastMap::default(),
            next_region: 0,
            intern_bytes: 0,
            intern_limit: INTERN_LIMIT_BYTES,
            cleared: 0,
            truncated: 0,
            hosts: Vec::new(),
            host_ids: FastMap::default(),
            processes: Vec::new(),
            process_ids: FastMap::default(),
            accelerators: Vec::new(),
            accelerator_ids: FastMap::default(),
            locations: Vec::new(),
            metrics: Vec::new(),
            metric_ids: FastMap::default(),
            scratch: Vec::new(),
            rec: Vec::new(),
        };
        // String 0 is "": regions use it as their (empty) description.
        d.string("")?;
        Ok(d)
    }

    fn spill_record(&mut self, kind: u8) -> io::Result<()> {
        self.rec.clear();
        put_record(&mut self.rec, kind, &self.scratch);
        self.spill.write_all(&self.rec)?;
        self.spilled += 1;
        Ok(())
    }

    /// The id of the string `s` (defined on first use).
    pub fn string(&mut self, s: &str) -> io::Result<u32> {
        if let Some(&id) = self.strings.get(s) {
            return Ok(id);
        }
        if self.intern_bytes > self.intern_limit {
            // String 0 ("") stays defined; everything else may be defined again.
            self.strings.clear();
            self.strings.insert(String::new(), 0);
            self.regions.clear();
            self.intern_bytes = 0;
            self.cleared += 1;
        }
        let id = self.next_string;
        self.next_string = id
            .checked_add(1)
            .filter(|&n| n != u32::MAX)
            .ok_or_else(|| too_many("strings"))?;
        self.scratch.clear();
        put_u32(&mut self.scratch, id);
        if s.len() > MAX_STRING_BYTES {
            let mut cut = MAX_STRING_BYTES;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            put_str(&mut self.scratch, &format!("{}...", &s[..cut]));
            self.truncated += 1;
        } else {
            put_str(&mut self.scratch, s);
        }
        self.spill_record(def::STRING)?;
        self.intern_bytes += s.len() + 48;
        self.strings.insert(s.to_string(), id);
        Ok(id)
    }

    /// The id of the region `name` with `role` and `paradigm` (defined on first use).
    pub fn region(&mut self, name: &str, role: u8, paradigm: u8) -> io::Result<u32> {
        let name_id = self.string(name)?;
        if let Some(&id) = self.regions.get(&(name_id, role, paradigm)) {
            return Ok(id);
        }
        let id = self.next_region;
        self.next_region = id
            .checked_add(1)
            .filter(|&n| n != u32::MAX)
            .ok_or_else(|| too_many("regions"))?;
        self.scratch.clear();
        let s = &mut self.scratch;
        put_u32(s, id);
        put_u32(s, name_id); // name
        put_u32(s, 0); // description: ""
        s.push(region_type(role, paradigm)); // pre-1.1 region type
        put_u32(s, UNDEFINED_U32); // source file
        put_u32(s, 0); // begin line
        put_u32(s, 0); // end line
        put_u32(s, name_id); // canonical name
        s.push(role);
        s.push(paradigm);
        put_u32(s, 0); // flags: NONE
        self.spill_record(def::REGION)?;
        self.intern_bytes += 32;
        self.regions.insert((name_id, role, paradigm), id);
        Ok(id)
    }

    /// The host with key `key` (named `name`), added on first use.
    pub fn host(&mut self, key: &str, name: &str) -> usize {
        if let Some(&h) = self.host_ids.get(key) {
            return h;
        }
        self.hosts.push(Host {
            name: name.to_string(),
        });
        self.host_ids.insert(key.to_string(), self.hosts.len() - 1);
        self.hosts.len() - 1
    }

    /// The process `(source, pid)`, added with `make` on first use.
    pub fn process(&mut self, source: u32, pid: i64, make: impl FnOnce() -> Process) -> usize {
        if let Some(&p) = self.process_ids.get(&(source, pid)) {
            return p;
        }
        self.processes.push(make());
        self.process_ids
            .insert((source, pid), self.processes.len() - 1);
        self.processes.len() - 1
    }

    /// The accelerator `key` on `host`, added with `name` on first use; `process` is one
    /// that puts a location in it.
    pub fn accelerator(&mut self, host: usize, key: &str, name: &str, process: usize) -> usize {
        let a = match self.accelerator_ids.get(&(host, key.to_string())) {
            Some(&a) => a,
            None => {
                self.accelerators.push(Accelerator {
                    host,
                    name: name.to_string(),
                    creator: Creator::Nobody,
                });
                self.accelerator_ids
                    .insert((host, key.to_string()), self.accelerators.len() - 1);
                self.accelerators.len() - 1
            }
        };
        let acc = &mut self.accelerators[a];
        acc.creator = match acc.creator {
            Creator::Nobody => Creator::One(process),
            Creator::One(p) if p == process => Creator::One(p),
            _ => Creator::Many,
        };
        a
    }

    /// The metric class of counter `name` (with `unit`), added on first use.
    pub fn metric(&mut self, name: &str, unit: &str, description: impl FnOnce() -> String) -> u32 {
        if let Some(&m) = self.metric_ids.get(name).and_then(|u| u.get(unit)) {
            return m;
        }
        self.metrics.push(Metric {
            name: name.to_string(),
            description: description(),
            unit: unit.to_string(),
        });
        let id = (self.metrics.len() - 1) as u32;
        self.metric_ids
            .entry(name.to_string())
            .or_default()
            .insert(unit.to_string(), id);
        id
    }

    /// Writes the global definition file: the clock properties, the spilled strings and
    /// regions, then the attributes, system tree, location groups, locations (with their
    /// event counts) and metrics. Returns the number of records and the file size.
    pub fn write(
        &mut self,
        path: &Path,
        chunk_size: u64,
        clock: (u64, u64),
        events: &[u64],
    ) -> io::Result<(u64, u64)> {
        // Strings of the remaining definitions are created first, so they are spilled too
        // and every reference points backwards.
        let attrs: Vec<(u32, u32, u8)> = ATTRIBUTES
            .iter()
            .map(|(n, d, t)| Ok((self.string(n)?, self.string(d)?, *t)))
            .collect::<io::Result<_>>()?;
        let root_name = self.string("cluster")?;
        let root_class = self.string("machine")?;
        let node_class = self.string("node")?;
        let process_class = self.string("process")?;
        let mut host_names = Vec::with_capacity(self.hosts.len());
        for i in 0..self.hosts.len() {
            let n = self.hosts[i].name.clone();
            host_names.push(self.string(&n)?);
        }
        let mut process_names = Vec::with_capacity(self.processes.len());
        for i in 0..self.processes.len() {
            let n = self.processes[i].name.clone();
            process_names.push(self.string(&n)?);
        }
        let mut accelerator_names = Vec::with_capacity(self.accelerators.len());
        for i in 0..self.accelerators.len() {
            let n = self.accelerators[i].name.clone();
            accelerator_names.push(self.string(&n)?);
        }
        let mut location_names = Vec::with_capacity(self.locations.len());
        for i in 0..self.locations.len() {
            let n = self.locations[i].name.clone();
            location_names.push(self.string(&n)?);
        }
        let mut metric_strings = Vec::with_capacity(self.metrics.len());
        for i in 0..self.metrics.len() {
            let (n, d, u) = (
                self.metrics[i].name.clone(),
                self.metrics[i].description.clone(),
                self.metrics[i].unit.clone(),
            );
            metric_strings.push((self.string(&n)?, self.string(&d)?, self.string(&u)?));
        }
        self.spill.flush()?;

        let file = BufWriter::with_capacity(1 << 20, File::create_new(path)?);
        let mut out = DefFile::new(file, chunk_size)?;
        let mut rec = Vec::new();
        let mut s = Vec::new();
        let mut emit = |out: &mut DefFile<_>, kind: u8, s: &[u8]| -> io::Result<()> {
            rec.clear();
            put_record(&mut rec, kind, s);
            out.record(&rec)
        };

        // Clock: ns ticks, offset = earliest timestamp, length; no known wall-clock time.
        s.clear();
        put_u64(&mut s, 1_000_000_000);
        put_u64(&mut s, clock.0);
        put_u64(&mut s, clock.1);
        put_u64(&mut s, UNDEFINED_U64);
        emit(&mut out, def::CLOCK_PROPERTIES, &s)?;

        // Spilled strings and regions, record by record.
        let mut r = BufReader::with_capacity(1 << 16, File::open(&self.spill_path)?);
        for _ in 0..self.spilled {
            let mut head = [0u8; 2];
            r.read_exact(&mut head)?;
            let len = if head[1] == 0xff {
                let mut l = [0u8; 8];
                r.read_exact(&mut l)?;
                u64::from_le_bytes(l)
            } else {
                head[1] as u64
            };
            s.clear();
            s.resize(len as usize, 0);
            r.read_exact(&mut s)?;
            emit(&mut out, head[0], &s)?;
        }

        for (i, (name, desc, t)) in attrs.iter().enumerate() {
            s.clear();
            put_u32(&mut s, i as u32);
            put_u32(&mut s, *name);
            s.push(*t);
            put_u32(&mut s, *desc);
            emit(&mut out, def::ATTRIBUTE, &s)?;
        }

        // System tree: 0 = root, 1..=H hosts, then processes.
        let host_node = |h: usize| (1 + h) as u32;
        let process_node = |p: usize| (1 + self.hosts.len() + p) as u32;
        let mut nodes: Vec<(u32, u32, u32, u32)> = vec![(0, root_name, root_class, UNDEFINED_U32)];
        for (h, &name) in host_names.iter().enumerate() {
            nodes.push((host_node(h), name, node_class, 0));
        }
        for (p, proc_) in self.processes.iter().enumerate() {
            nodes.push((
                process_node(p),
                process_names[p],
                process_class,
                host_node(proc_.host),
            ));
        }
        for (id, name, class, parent) in nodes {
            s.clear();
            put_u32(&mut s, id);
            put_u32(&mut s, name);
            put_u32(&mut s, class);
            put_u32(&mut s, parent);
            emit(&mut out, def::SYSTEM_TREE_NODE, &s)?;
        }

        // Location groups: processes 0..P, then accelerators.
        let n_processes = self.processes.len();
        let group_id = |g: Group| match g {
            Group::Process(p) => p as u32,
            Group::Accelerator(a) => (n_processes + a) as u32,
        };
        for (p, &name) in process_names.iter().enumerate() {
            s.clear();
            put_u32(&mut s, p as u32);
            put_u32(&mut s, name);
            s.push(1); // PROCESS
            put_u32(&mut s, process_node(p));
            put_u32(&mut s, UNDEFINED_U32); // creating location group
            emit(&mut out, def::LOCATION_GROUP, &s)?;
        }
        for (a, acc) in self.accelerators.iter().enumerate() {
            s.clear();
            put_u32(&mut s, group_id(Group::Accelerator(a)));
            put_u32(&mut s, accelerator_names[a]);
            s.push(2); // ACCELERATOR
            put_u32(&mut s, host_node(acc.host));
            put_u32(
                &mut s,
                match acc.creator {
                    Creator::One(p) => p as u32,
                    _ => UNDEFINED_U32,
                },
            );
            emit(&mut out, def::LOCATION_GROUP, &s)?;
        }

        for (l, loc) in self.locations.iter().enumerate() {
            s.clear();
            put_u64(&mut s, l as u64);
            put_u32(&mut s, location_names[l]);
            s.push(loc.kind as u8);
            put_u64(&mut s, events[l]);
            put_u32(&mut s, group_id(loc.group));
            emit(&mut out, def::LOCATION, &s)?;
        }

        for (m, &(name, desc, unit)) in metric_strings.iter().enumerate() {
            s.clear();
            put_u32(&mut s, m as u32);
            put_u32(&mut s, name);
            put_u32(&mut s, desc);
            s.push(0); // metric type: OTHER
            s.push(0x11); // mode: ABSOLUTE_POINT
            s.push(ty::DOUBLE);
            s.push(1); // base: DECIMAL
            put_i64(&mut s, 0); // exponent
            put_u32(&mut s, unit);
            emit(&mut out, def::METRIC_MEMBER, &s)?;
        }
        for m in 0..metric_strings.len() {
            s.clear();
            put_u32(&mut s, m as u32);
            s.push(1);
            put_u32(&mut s, m as u32);
            s.push(2); // occurrence: ASYNCHRONOUS
            s.push(0); // recorder kind: UNKNOWN
            emit(&mut out, def::METRIC_CLASS, &s)?;
        }

        let records = out.records();
        let (mut file, size) = out.finish()?;
        file.flush()?;
        file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        Ok((records, size))
    }
}

/// The pre-1.1 `OTF2_RegionType` the reference writer derives from role and paradigm
/// (`otf2_attic_def_region_provide_region_type`), for the combinations used here.
fn region_type(role: u8, paradigm: u8) -> u8 {
    match (paradigm, role) {
        (paradigm::UNKNOWN, role::FUNCTION) => 1, // OTF2_REGION_TYPE_FUNCTION
        (paradigm::USER, role::FUNCTION) => 3,    // OTF2_REGION_TYPE_USER_REGION
        _ => 0,                                   // OTF2_REGION_TYPE_UNKNOWN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_sequential_and_a_full_cache_redefines_names_under_new_ids() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = Defs::new(&dir.path().join("spill")).unwrap();
        d.intern_limit = 200;
        assert_eq!(d.string("a").unwrap(), 1);
        assert_eq!(d.string("a").unwrap(), 1);
        assert_eq!(d.region("a", role::FUNCTION, paradigm::HIP).unwrap(), 0);
        assert_eq!(
            d.region("a", role::DATA_TRANSFER, paradigm::HIP).unwrap(),
            1
        );
        assert_eq!(d.region("a", role::FUNCTION, paradigm::HIP).unwrap(), 0);
        for i in 0..10 {
            d.string(&format!("name {i}")).unwrap();
        }
        assert!(d.cleared > 0);
        let again = d.string("a").unwrap();
        assert!(again > 10, "redefined under a new id, not {again}");
        assert_eq!(d.string("").unwrap(), 0);
        let long = "x".repeat(MAX_STRING_BYTES + 10);
        d.string(&long).unwrap();
        assert_eq!(d.truncated, 1);
        assert_eq!(d.region("a", role::FUNCTION, paradigm::HIP).unwrap(), 2);
        let (records, size) = d
            .write(&dir.path().join("g.def"), 4 << 20, (0, 0), &[])
            .unwrap();
        assert_eq!(
            size,
            std::fs::metadata(dir.path().join("g.def")).unwrap().len()
        );
        // clock + strings + regions + 4 attributes + root system tree node
        assert_eq!(records, 1 + d.next_string as u64 + 3 + 4 + 1);
    }
}

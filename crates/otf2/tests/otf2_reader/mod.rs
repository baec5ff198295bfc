//! A small, independent OTF2 reader for the tests: parses the anchor, the global
//! definitions and every location's event file, and checks the chunk structure, the time
//! order and the nesting of Enter/Leave on the way. It knows only the records the writer
//! uses and fails on anything else.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub struct Cursor<'a> {
    b: &'a [u8],
    pub pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Cursor { b, pos: 0 }
    }
    pub fn u8(&mut self) -> u8 {
        let v = self.b[self.pos];
        self.pos += 1;
        v
    }
    pub fn full(&mut self, n: usize) -> u64 {
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(&self.b[self.pos..self.pos + n]);
        self.pos += n;
        u64::from_le_bytes(v)
    }
    /// Compressed unsigned integer (u32 or u64).
    pub fn uint(&mut self) -> u64 {
        let n = self.u8();
        match n {
            0 => 0,
            0xff => u64::MAX,
            n => self.full(n as usize),
        }
    }
    pub fn u32(&mut self) -> u32 {
        let v = self.uint();
        if v == u64::MAX {
            u32::MAX
        } else {
            assert!(v < u32::MAX as u64, "u32 overflow");
            v as u32
        }
    }
    pub fn i64(&mut self) -> i64 {
        let n = self.u8();
        match n {
            0 => 0,
            8 => self.full(8) as i64,
            n => self.full(n as usize) as i64,
        }
    }
    pub fn string(&mut self) -> String {
        let end = self.b[self.pos..]
            .iter()
            .position(|&c| c == 0)
            .expect("NUL")
            + self.pos;
        let s = String::from_utf8(self.b[self.pos..end].to_vec()).expect("utf-8");
        self.pos = end + 1;
        s
    }
    pub fn len(&mut self) -> usize {
        let n = self.u8();
        if n == 0xff {
            self.full(8) as usize
        } else {
            n as usize
        }
    }
}

#[derive(Debug, Clone)]
pub struct Region {
    pub name: String,
    pub role: u8,
    pub paradigm: u8,
}

#[derive(Debug, Clone)]
pub struct Location {
    pub name: String,
    pub kind: u8,
    pub events: u64,
    pub group: u32,
}

#[derive(Debug, Default)]
pub struct Archive {
    pub event_chunk: u64,
    pub def_chunk: u64,
    pub n_locations: u64,
    pub n_global_defs: u64,
    pub clock: (u64, u64, u64),
    pub strings: HashMap<u32, String>,
    pub regions: HashMap<u32, Region>,
    pub attributes: HashMap<u32, (String, u8)>,
    pub locations: Vec<(u64, Location)>,
    pub groups: HashMap<u32, (String, u8, u32, u32)>,
    pub nodes: HashMap<u32, (String, String, u32)>,
    pub metric_members: u32,
    pub metric_classes: u32,
    pub records: u64,
}

/// What the event files hold.
#[derive(Debug, Default)]
pub struct Events {
    /// Enter events per (category attribute, region paradigm, region role).
    pub enters: HashMap<(String, u8, u8), u64>,
    pub leaves: u64,
    pub metrics: u64,
    pub per_location: HashMap<u64, u64>,
    pub chunks: u64,
    pub min_time: u64,
    pub max_time: u64,
}

fn def_records(bytes: &[u8], chunk: u64, mut f: impl FnMut(u8, &mut Cursor<'_>)) -> u64 {
    let mut c = Cursor::new(bytes);
    let mut n = 0;
    let mut chunk_start = 0usize;
    header(&mut c, Some((1, 0)));
    loop {
        let t = c.u8();
        match t {
            0 => {
                chunk_start += chunk as usize;
                c.pos = chunk_start;
                header(&mut c, Some((1, 0)));
            }
            2 => {
                assert_eq!(c.u8(), 1, "END_OF_BUFFER after END_OF_FILE");
                assert_eq!(c.pos, bytes.len(), "bytes after the end");
                return n;
            }
            _ => {
                let len = c.len();
                let end = c.pos + len;
                assert!(end - chunk_start < chunk as usize, "record crosses a chunk");
                f(t, &mut c);
                assert!(c.pos <= end, "record {t} longer than its length");
                c.pos = end;
                n += 1;
            }
        }
    }
}

fn header(c: &mut Cursor<'_>, expect: Option<(u64, u64)>) -> (u64, u64) {
    assert_eq!(c.u8(), 3, "chunk header");
    assert_eq!(c.u8(), 0x42, "little endian");
    let first = c.full(8);
    let last = c.full(8);
    if let Some(e) = expect {
        assert_eq!((first, last), e, "definition chunk header");
    }
    (first, last)
}

/// Parses the anchor and the global definitions of `anchor`.
pub fn read(anchor: &Path) -> Archive {
    let a = std::fs::read(anchor).unwrap();
    let mut c = Cursor::new(&a);
    assert_eq!((c.u8(), c.u8()), (3, 0x42));
    assert_eq!(c.string(), "OTF2");
    assert_eq!(c.u8(), 3, "anchor format");
    assert_eq!(c.u8(), 2, "trace format");
    let _version = (c.u8(), c.u8(), c.u8());
    let mut ar = Archive {
        event_chunk: c.full(8),
        def_chunk: c.full(8),
        ..Default::default()
    };
    assert_eq!((c.u8(), c.u8()), (1, 1), "POSIX, no compression");
    ar.n_locations = c.full(8);
    ar.n_global_defs = c.full(8);
    for _ in 0..3 {
        c.string();
    }
    let props = c.full(4);
    for _ in 0..props * 2 {
        c.string();
    }
    assert_ne!(c.full(8), 0, "trace id");
    assert_eq!(c.full(4), 0);
    assert_eq!(c.full(4), 0);
    assert_eq!((c.u8(), c.u8(), c.u8()), (2, 1, 0));
    assert_eq!(c.pos, a.len());

    let defs = std::fs::read(anchor.with_extension("def")).unwrap();
    let chunk = ar.def_chunk;
    let mut locs = Vec::new();
    ar.records = def_records(&defs, chunk, |t, c| match t {
        5 => {
            ar.clock = (c.uint(), c.uint(), c.uint());
            c.uint();
        }
        10 => {
            let id = c.u32();
            let s = c.string();
            assert!(ar.strings.insert(id, s).is_none(), "string {id} twice");
        }
        11 => {
            let id = c.u32();
            let name = c.u32();
            let ty = c.u8();
            c.u32();
            ar.attributes.insert(id, (ar.strings[&name].clone(), ty));
        }
        12 => {
            let id = c.u32();
            let (name, class, parent) = (c.u32(), c.u32(), c.u32());
            if parent != u32::MAX {
                assert!(ar.nodes.contains_key(&parent), "parent defined first");
            }
            let v = (
                ar.strings[&name].clone(),
                ar.strings[&class].clone(),
                parent,
            );
            assert!(ar.nodes.insert(id, v).is_none(), "node {id} twice");
        }
        13 => {
            let id = c.u32();
            let name = c.u32();
            let ty = c.u8();
            let parent = c.u32();
            let creator = c.u32();
            assert!(ar.nodes.contains_key(&parent));
            let v = (ar.strings[&name].clone(), ty, parent, creator);
            assert!(
                ar.groups.insert(id, v).is_none(),
                "location group {id} twice"
            );
        }
        14 => {
            let id = c.uint();
            let name = c.u32();
            let kind = c.u8();
            let events = c.uint();
            let group = c.u32();
            assert!(ar.groups.contains_key(&group));
            locs.push((
                id,
                Location {
                    name: ar.strings[&name].clone(),
                    kind,
                    events,
                    group,
                },
            ));
        }
        15 => {
            let id = c.u32();
            let name = c.u32();
            let description = c.u32();
            assert_eq!(ar.strings[&description], "", "region description");
            c.u8();
            c.u32();
            c.u32();
            c.u32();
            let canonical = c.u32();
            assert_eq!(name, canonical);
            let role = c.u8();
            let paradigm = c.u8();
            c.u32();
            let r = Region {
                name: ar.strings[&name].clone(),
                role,
                paradigm,
            };
            assert!(ar.regions.insert(id, r).is_none(), "region {id} twice");
        }
        19 => ar.metric_members += 1,
        20 => ar.metric_classes += 1,
        t => panic!("unexpected definition record {t}"),
    });
    ar.locations = locs;
    assert_eq!(ar.strings.get(&0).map(String::as_str), Some(""), "string 0");
    assert_eq!(
        ar.records, ar.n_global_defs,
        "global definition count in the anchor"
    );
    assert_eq!(ar.locations.len() as u64, ar.n_locations);
    ar
}

/// The event file of location `id`.
pub fn event_file(anchor: &Path, id: u64) -> PathBuf {
    anchor.with_extension("").join(format!("{id}.evt"))
}

/// Walks every location's events, checking chunks, order, nesting and counts.
pub fn events(anchor: &Path, ar: &Archive) -> Events {
    let mut ev = Events {
        min_time: u64::MAX,
        ..Default::default()
    };
    let chunk = ar.event_chunk as usize;
    for (id, loc) in &ar.locations {
        let bytes = std::fs::read(event_file(anchor, *id)).unwrap();
        assert!(anchor
            .with_extension("")
            .join(format!("{id}.def"))
            .is_file());
        let mut c = Cursor::new(&bytes);
        let mut n = 0u64;
        let mut time = 0u64;
        let mut stack: Vec<u32> = Vec::new();
        let mut attrs: HashMap<u32, u64> = HashMap::new();
        let mut chunk_start = 0usize;
        let (first, mut last) = header(&mut c, None);
        assert_eq!(first, 1);
        ev.chunks += 1;
        assert!(
            bytes[c.pos] == 5 || loc.events == 0,
            "a chunk starts with a timestamp"
        );
        loop {
            let t = c.u8();
            match t {
                0 => {
                    assert_eq!(n, last, "last event of a chunk");
                    assert!(bytes[c.pos..chunk_start + chunk].iter().all(|&b| b == 0));
                    chunk_start += chunk;
                    c.pos = chunk_start;
                    let (f, l) = header(&mut c, None);
                    assert_eq!(f, n + 1, "first event of a chunk");
                    last = l;
                    ev.chunks += 1;
                    assert_eq!(bytes[c.pos], 5, "a chunk starts with a timestamp");
                }
                2 => {
                    assert_eq!(c.u8(), 1);
                    assert_eq!(c.pos, bytes.len());
                    assert_eq!(n, last, "last event of the last chunk");
                    break;
                }
                5 => {
                    let t = c.full(8);
                    assert!(t >= time, "{}: time goes back: {t} < {time}", loc.name);
                    time = t;
                    ev.min_time = ev.min_time.min(t);
                    ev.max_time = ev.max_time.max(t);
                }
                6 => {
                    let len = c.len();
                    let end = c.pos + len;
                    let k = c.u32();
                    for _ in 0..k {
                        let id = c.u32();
                        let ty = c.u8();
                        assert_eq!(ar.attributes[&id].1, ty);
                        let v = match ty {
                            11 => c.u32() as u64,
                            8 => c.i64() as u64,
                            t => panic!("attribute type {t}"),
                        };
                        attrs.insert(id, v);
                    }
                    assert_eq!(c.pos, end);
                }
                12 => {
                    let r = c.u32();
                    let region = &ar.regions[&r];
                    let cat_attr = ar
                        .attributes
                        .iter()
                        .find(|(_, (n, _))| n == "category")
                        .map(|(id, _)| *id)
                        .unwrap();
                    let cat = ar.strings[&(attrs[&cat_attr] as u32)].clone();
                    *ev.enters
                        .entry((cat, region.paradigm, region.role))
                        .or_default() += 1;
                    attrs.clear();
                    stack.push(r);
                    n += 1;
                }
                13 => {
                    let r = c.u32();
                    assert_eq!(
                        stack.pop(),
                        Some(r),
                        "{}: Leave of a region not on top",
                        loc.name
                    );
                    ev.leaves += 1;
                    n += 1;
                }
                31 => {
                    let len = c.len();
                    let end = c.pos + len;
                    let m = c.u32();
                    assert!(m < ar.metric_classes);
                    assert_eq!(c.u8(), 1);
                    assert_eq!(c.u8(), 10);
                    c.uint();
                    assert_eq!(c.pos, end);
                    ev.metrics += 1;
                    n += 1;
                }
                t => panic!("{}: unexpected event record {t} at {}", loc.name, c.pos - 1),
            }
            assert!(c.pos - chunk_start < chunk, "record crosses a chunk");
        }
        assert!(stack.is_empty(), "{}: regions never left", loc.name);
        assert_eq!(n, loc.events, "{}: numberOfEvents", loc.name);
        ev.per_location.insert(*id, n);
    }
    if ev.min_time != u64::MAX {
        assert_eq!(ar.clock.1, ev.min_time, "global offset = first timestamp");
        assert_eq!(ar.clock.1 + ar.clock.2, ev.max_time, "trace length");
    }
    ev
}

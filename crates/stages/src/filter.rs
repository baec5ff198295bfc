//! Selecting events by kind, category, name, node, process, thread and agent
//! (`--include KEY=VALUE[,VALUE...]`, `--exclude KEY=VALUE[,VALUE...]`).

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, UInt32Type};
use arrow_array::{Array, Int64Array, StringArray};
use regex_automata::meta::Regex;
use regex_automata::nfa::thompson::WhichCaptures;
use regex_syntax::hir::{Hir, HirKind, Repetition};
use rocpd_model::hash::FastMap;
use rocpd_model::naming::{allocation_operation, output_category};
use rocpd_model::{col, Catalog, Error, EventBatch, Result, Table};
use rocpd_pipeline::{Chunk, Stage, TableCounts};

use crate::flows::{self, GroupColumns};

/// What a rule looks at.
#[derive(Debug, Clone)]
enum Key {
    Kind(Vec<Table>),
    Category(Vec<String>),
    Name(Regex),
    /// Hostnames, each with the node id it also names when it is an id written in
    /// canonical decimal (`7`, not `07`), worked out once so rows compare numbers.
    Node(Vec<(String, Option<i64>)>),
    Pid(Vec<i64>),
    Tid(Vec<i64>),
    Agent(Vec<i64>),
}

impl Key {
    fn slot(&self) -> usize {
        match self {
            Key::Kind(_) => 0,
            Key::Category(_) => 1,
            Key::Name(_) => 2,
            Key::Node(_) => 3,
            Key::Pid(_) => 4,
            Key::Tid(_) => 5,
            Key::Agent(_) => 6,
        }
    }
}

/// Largest compiled name pattern, in bytes (the regex engine's default is 10 MiB): a list
/// of a thousand long kernel names, case-insensitive, fits.
const MAX_NAME_PATTERN_BYTES: usize = 64 << 20;

/// The regular expression of a `name=` rule, refused when it is not one or is too large.
/// Only whether a name matches counts, so its groups are dropped before it is compiled:
/// with them, each group kept a capture slot per state of the matcher (64 groups made a
/// 1M-event filter 24 times slower; 1,000 groups took minutes on a small trace, 18,000
/// tried to allocate 36 GB), and they kept alternatives of literals from being merged.
fn name_pattern(text: &str) -> std::result::Result<Regex, String> {
    let bad = |e: &dyn std::fmt::Display| format!("bad regular expression: {e}");
    // The parser's own message quotes the whole pattern, which may be a long list: the
    // error and its place are enough.
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(text)
        .map_err(|e| match &e {
            regex_syntax::Error::Parse(p) => format!(
                "bad regular expression: {} (at character {})",
                p.kind(),
                p.span().start.column
            ),
            regex_syntax::Error::Translate(t) => format!(
                "bad regular expression: {} (at character {})",
                t.kind(),
                t.span().start.column
            ),
            _ => bad(&e),
        })?;
    Regex::builder()
        .configure(
            Regex::config()
                .which_captures(WhichCaptures::Implicit)
                .nfa_size_limit(Some(MAX_NAME_PATTERN_BYTES)),
        )
        .build_from_hir(&without_groups(hir))
        .map_err(|e| match e.size_limit() {
            Some(limit) => format!(
                "the regular expression is too large: it compiles to more than {} MiB",
                limit >> 20
            ),
            None => bad(&e),
        })
}

/// `hir` with every group replaced by what it holds (the same language; the parser's
/// nesting limit bounds the recursion). The constructors merge what the groups kept
/// apart (`(gemm)|(conv)` becomes one alternation of literals).
fn without_groups(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Capture(c) => without_groups(*c.sub),
        HirKind::Concat(subs) => Hir::concat(subs.into_iter().map(without_groups).collect()),
        HirKind::Alternation(subs) => {
            Hir::alternation(subs.into_iter().map(without_groups).collect())
        }
        HirKind::Repetition(Repetition {
            min,
            max,
            greedy,
            sub,
        }) => Hir::repetition(Repetition {
            min,
            max,
            greedy,
            sub: Box::new(without_groups(*sub)),
        }),
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(l) => Hir::literal(l.0),
        HirKind::Class(c) => Hir::class(c),
        HirKind::Look(l) => Hir::look(l),
    }
}

/// One `--include` or `--exclude` rule.
#[derive(Debug, Clone)]
pub struct FilterRule {
    include: bool,
    key: Key,
    text: String,
}

impl FilterRule {
    /// Parses `KEY=VALUE[,VALUE...]`; `include` says whether it selects or removes.
    pub fn parse(text: &str, include: bool) -> Result<FilterRule> {
        // A long rule (a pattern listing many names) is shown by its start.
        let shown: String = text.chars().take(200).collect();
        let shown = if shown.len() < text.len() {
            format!("{shown:?}...")
        } else {
            format!("{shown:?}")
        };
        let usage = |why: String| {
            Error::Usage(format!(
                "{} {shown}: {why} (expected KEY=VALUE[,VALUE...] with KEY one of kind, category, name, node, pid, tid, agent)",
                if include { "--include" } else { "--exclude" }
            ))
        };
        let (k, v) = text.split_once('=').ok_or_else(|| usage("no '='".into()))?;
        let values: Vec<String> = v
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let is_name = k.trim().eq_ignore_ascii_case("name");
        // A name pattern is the whole value, commas included (`name=,` matches names
        // with a comma).
        if (is_name && v.trim().is_empty()) || (!is_name && values.is_empty()) {
            return Err(usage("no value".into()));
        }
        let ints = |what: &str| -> Result<Vec<i64>> {
            values
                .iter()
                .map(|s| {
                    s.parse::<i64>()
                        .map_err(|_| usage(format!("{what} {s:?} is not a number")))
                })
                .collect()
        };
        let key = match k.trim().to_ascii_lowercase().as_str() {
            "kind" => Key::Kind(
                values
                    .iter()
                    .map(|s| {
                        Table::from_name(s).ok_or_else(|| {
                            usage(format!(
                                "unknown kind {s:?}; kinds are api, marker, sample, kernel, copy, allocation, counter"
                            ))
                        })
                    })
                    .collect::<Result<_>>()?,
            ),
            "category" | "domain" => Key::Category(values.iter().map(|s| s.to_ascii_lowercase()).collect()),
            // The value is one regular expression (commas included).
            "name" => Key::Name(name_pattern(v.trim()).map_err(usage)?),
            "node" | "host" | "hostname" => Key::Node(
                values
                    .into_iter()
                    .map(|v| {
                        let id = v.parse::<i64>().ok().filter(|n| n.to_string() == v);
                        (v, id)
                    })
                    .collect(),
            ),
            "pid" | "process" => Key::Pid(ints("pid")?),
            "tid" | "thread" => Key::Tid(ints("tid")?),
            "agent" => Key::Agent(ints("agent")?),
            other => return Err(usage(format!("unknown key {other:?}"))),
        };
        Ok(FilterRule {
            include,
            key,
            text: text.to_string(),
        })
    }
}

/// Per-batch access to the columns rules look at.
struct View<'a> {
    table: Table,
    source: &'a arrow_array::UInt32Array,
    nid: &'a Int64Array,
    pid: &'a Int64Array,
    tid: &'a Int64Array,
    category: &'a StringArray,
    names: Vec<&'a StringArray>,
    level: Option<&'a StringArray>,
    agents: Vec<&'a Int64Array>,
    stack_id: &'a Int64Array,
    flow_marker: Option<&'a dyn Array>,
}

impl<'a> View<'a> {
    fn new(b: &'a EventBatch) -> Self {
        let t = b.table;
        let i = |n: &str| {
            b.batch
                .column(t.column_index(n))
                .as_primitive::<Int64Type>()
        };
        let s = |n: &str| b.batch.column(t.column_index(n)).as_string::<i32>();
        let (names, agents): (Vec<&str>, Vec<&str>) = match t {
            Table::Region | Table::Marker | Table::Sample => (vec!["message", "name"], vec![]),
            Table::KernelDispatch => (vec!["kernel_name"], vec!["agent_id"]),
            Table::MemoryCopy => (vec!["name"], vec!["src_agent_id", "dst_agent_id"]),
            Table::MemoryAllocation => (vec!["type"], vec!["agent_id"]),
            Table::PmcValue => (vec!["counter_name"], vec!["agent_id"]),
        };
        View {
            table: t,
            source: b.batch.column(col::SOURCE).as_primitive::<UInt32Type>(),
            nid: i("nid"),
            pid: i("pid"),
            tid: i("tid"),
            category: s("category"),
            names: names.iter().map(|n| s(n)).collect(),
            level: (t == Table::MemoryAllocation).then(|| s("level")),
            agents: agents.iter().map(|n| i(n)).collect(),
            stack_id: i("stack_id"),
            flow_marker: match t {
                Table::Region | Table::Marker => {
                    Some(b.batch.column(t.column_index("launched")).as_ref())
                }
                Table::KernelDispatch | Table::MemoryCopy => {
                    Some(b.batch.column(t.column_index("has_launcher")).as_ref())
                }
                _ => None,
            },
        }
    }

    fn int(a: &Int64Array, r: usize) -> Option<i64> {
        a.is_valid(r).then(|| a.value(r))
    }

    /// The name a user sees: the ROCTx message if any, else the name.
    fn name(&self, r: usize) -> Cow<'a, str> {
        for a in &self.names {
            if a.is_valid(r) && !a.value(r).is_empty() {
                let v = a.value(r);
                return match self.level {
                    Some(l) => allocation_operation(v, l.is_valid(r).then(|| l.value(r))),
                    None => Cow::Borrowed(v),
                };
            }
        }
        Cow::Borrowed("")
    }

    fn is_flow_end(&self, r: usize) -> bool {
        match (self.table, self.flow_marker) {
            (Table::Region | Table::Marker, Some(a)) => {
                let a = a.as_primitive::<Int64Type>();
                a.is_valid(r) && a.value(r) > 0
            }
            (_, Some(a)) => {
                let a = a.as_boolean();
                a.is_valid(r) && a.value(r)
            }
            _ => false,
        }
    }
}

/// The filter stage.
#[derive(Debug)]
pub struct Filter {
    rules: Vec<FilterRule>,
    hostnames: FastMap<(u32, i64), String>,
    /// Kind or category rules remove kernels or copies, or name/agent rules exist: a
    /// kept API call cannot know whether its kernels survive, so its flows are removed.
    targets_at_risk: bool,
    /// API calls with flows that were removed, until their group's last start.
    dropped_launchers: FastMap<(u32, i64), i64>,
    prune_at: usize,
    dropped: TableCounts,
}

impl Filter {
    /// A filter applying `rules`.
    pub fn new(rules: Vec<FilterRule>) -> Self {
        let mut f = Filter {
            rules,
            hostnames: FastMap::default(),
            targets_at_risk: false,
            dropped_launchers: FastMap::default(),
            prune_at: 1024,
            dropped: TableCounts::new(),
        };
        f.targets_at_risk = f
            .rules
            .iter()
            .any(|r| matches!(r.key, Key::Name(_) | Key::Agent(_)))
            || !f.keeps_kind(Table::KernelDispatch, "KERNEL_DISPATCH")
            || !f.keeps_kind(Table::MemoryCopy, "MEMORY_COPY");
        f
    }

    fn category_matches(values: &[String], raw: &str, table: Table) -> bool {
        let short = if table == Table::PmcValue {
            "counter_collection"
        } else {
            output_category(raw)
        };
        values
            .iter()
            .any(|v| v == short || v.eq_ignore_ascii_case(raw))
    }

    /// Whether kind and category rules alone keep rows of `table` with category `raw`.
    fn keeps_kind(&self, table: Table, raw: &str) -> bool {
        let mut included: [Option<bool>; 2] = [None, None];
        for rule in &self.rules {
            let m = match &rule.key {
                Key::Kind(ts) => ts.contains(&table),
                Key::Category(vs) => Self::category_matches(vs, raw, table),
                _ => continue,
            };
            if !rule.include && m {
                return false;
            }
            if rule.include {
                let slot = &mut included[rule.key.slot()];
                *slot = Some(slot.unwrap_or(false) || m);
            }
        }
        included.iter().all(|s| s.unwrap_or(true))
    }

    fn keeps(&self, v: &View<'_>, r: usize) -> bool {
        let mut included: [Option<bool>; 7] = [None; 7];
        let mut name: Option<Cow<'_, str>> = None;
        for rule in &self.rules {
            let m = match &rule.key {
                Key::Kind(ts) => Some(ts.contains(&v.table)),
                Key::Category(vs) => {
                    let raw = if v.category.is_valid(r) {
                        v.category.value(r)
                    } else {
                        ""
                    };
                    Some(Self::category_matches(vs, raw, v.table))
                }
                Key::Name(re) => Some(re.is_match(name.get_or_insert_with(|| v.name(r)).as_ref())),
                Key::Node(vs) => {
                    let nid = View::int(v.nid, r);
                    let host = nid.and_then(|n| self.hostnames.get(&(v.source.value(r), n)));
                    Some(
                        vs.iter()
                            .any(|(x, id)| Some(x) == host || (id.is_some() && *id == nid)),
                    )
                }
                Key::Pid(ps) => View::int(v.pid, r).map(|p| ps.contains(&p)),
                Key::Tid(ts) => View::int(v.tid, r).map(|t| ts.contains(&t)),
                Key::Agent(ags) => {
                    let mut present = v.agents.iter().filter_map(|a| View::int(a, r)).peekable();
                    present
                        .peek()
                        .is_some()
                        .then(|| present.any(|a| ags.contains(&a)))
                }
            };
            // A key that does not apply to the row (no thread, no agent) neither selects
            // nor removes it.
            let Some(m) = m else { continue };
            if !rule.include && m {
                return false;
            }
            if rule.include {
                let slot = &mut included[rule.key.slot()];
                *slot = Some(slot.unwrap_or(false) || m);
            }
        }
        included.iter().all(|s| s.unwrap_or(true))
    }

    /// Decides every row of `b`: `keep[r]`, and `cut[r]` (a kept row whose flow markers
    /// must go); counts the rows it drops. Batches of a chunk must be decided API calls
    /// first ([`Filter::order`]).
    pub(crate) fn decide(
        &mut self,
        b: &EventBatch,
        now: i64,
        keep: &mut Vec<bool>,
        cut: &mut Vec<bool>,
    ) {
        let v = View::new(b);
        let groups = GroupColumns::new(b);
        let n = b.batch.num_rows();
        let launcher = matches!(b.table, Table::Region | Table::Marker);
        keep.clear();
        cut.clear();
        for r in 0..n {
            let k = self.keeps(&v, r);
            let flow_end = b.table.has_flows() && v.is_flow_end(r);
            let key = (
                v.source.value(r),
                View::int(v.stack_id, r).unwrap_or(i64::MIN),
            );
            let mut c = false;
            if flow_end {
                if launcher {
                    if !k {
                        let until = groups.get(r).map_or(now, |g| g.last_start);
                        self.dropped_launchers.insert(key, until);
                    }
                    c = k && self.targets_at_risk;
                } else {
                    c = k && (self.targets_at_risk || self.dropped_launchers.contains_key(&key));
                }
            }
            keep.push(k);
            cut.push(c);
        }
        let removed = keep.iter().filter(|&&k| !k).count() as u64;
        if removed > 0 {
            *self.dropped.entry(b.table.name()).or_default() += removed;
        }
    }

    fn filter_batch(&mut self, b: &EventBatch, now: i64) -> Result<Option<EventBatch>> {
        let (mut keep, mut cut) = (Vec::new(), Vec::new());
        self.decide(b, now, &mut keep, &mut cut);
        let kept = flows::select(&flows::clear(b, &cut)?, &keep)?;
        Ok((kept.batch.num_rows() > 0).then_some(kept))
    }

    /// The chunk's earliest start (the time of this chunk); forgets dropped API calls
    /// whose groups ended before it.
    pub(crate) fn start_chunk(&mut self, chunk: &Chunk) -> i64 {
        let now = chunk
            .batches
            .iter()
            .filter(|b| b.batch.num_rows() > 0)
            .map(|b| {
                b.batch
                    .column(col::START)
                    .as_primitive::<Int64Type>()
                    .value(0)
            })
            .min()
            .unwrap_or(i64::MIN);
        if self.dropped_launchers.len() > self.prune_at {
            self.dropped_launchers.retain(|_, until| *until >= now);
            self.prune_at = (self.dropped_launchers.len() * 2).max(1024);
        }
        now
    }

    /// The order in which the batches of `chunk` are decided: API calls first, since they
    /// start no later than what they launch, and a kernel in the same chunk must see
    /// whether its launch was removed; counter values last, after the dispatches they
    /// belong to (which share their times, so their chunk).
    pub(crate) fn order(chunk: &Chunk) -> Vec<usize> {
        let mut order: Vec<usize> = (0..chunk.batches.len()).collect();
        order.sort_by_key(|&i| match chunk.batches[i].table {
            Table::Region | Table::Marker => 0,
            Table::PmcValue => 2,
            _ => 1,
        });
        order
    }
}

impl Stage for Filter {
    fn projection(&self) -> rocpd_model::Projection {
        // Rules and windows read names, ids and times, never the JSON text columns.
        rocpd_model::Projection::without_json_text()
    }

    fn name(&self) -> String {
        let rules: Vec<String> = self
            .rules
            .iter()
            .map(|r| {
                format!(
                    "{} {}",
                    if r.include { "include" } else { "exclude" },
                    r.text
                )
            })
            .collect();
        format!("filter ({})", rules.join("; "))
    }

    fn needs_every_table(&self) -> bool {
        !self.rules.is_empty()
    }

    fn begin(&mut self, catalog: &Arc<Catalog>) -> Result<()> {
        self.hostnames = catalog
            .nodes
            .iter()
            .filter_map(|n| Some(((n.source, n.id), n.hostname.clone()?)))
            .collect();
        Ok(())
    }

    fn apply(&mut self, chunk: Chunk) -> Result<Chunk> {
        let now = self.start_chunk(&chunk);
        let order = Self::order(&chunk);
        let mut kept: Vec<Option<EventBatch>> = vec![None; chunk.batches.len()];
        for i in order {
            kept[i] = self.filter_batch(&chunk.batches[i], now)?;
        }
        Ok(Chunk {
            batches: kept.into_iter().flatten().collect(),
        })
    }

    fn dropped(&self) -> TableCounts {
        self.dropped.clone()
    }
}

/// The distinct values of a set of rules, for messages.
pub fn describe(rules: &[FilterRule]) -> String {
    let set: HashSet<&str> = rules.iter().map(|r| r.text.as_str()).collect();
    let mut v: Vec<_> = set.into_iter().collect();
    v.sort();
    v.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_bad_rules_are_usage_errors() {
        assert!(FilterRule::parse("kind=kernel,copy", true).is_ok());
        assert!(FilterRule::parse("category=hsa_api", false).is_ok());
        assert!(FilterRule::parse("name=^gemm.*(fp16|bf16)$", true).is_ok());
        assert!(FilterRule::parse("pid=12,13", true).is_ok());
        for bad in ["kind=widgets", "colour=red", "pid=abc", "name=(", "kind"] {
            assert!(
                matches!(FilterRule::parse(bad, true), Err(Error::Usage(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn name_patterns_take_commas_match_many_groups_and_refuse_huge_ones() {
        let f = Filter::new(vec![FilterRule::parse("name=,", true).unwrap()]);
        let Key::Name(re) = &f.rules[0].key else {
            panic!("not a name rule")
        };
        assert!(re.is_match("f(a, b)") && !re.is_match("gemm"));
        assert!(FilterRule::parse("name= ", true).is_err());
        // Many groups compile (without capture slots; docs/benchmarks.md has the time).
        let groups = (0..1000)
            .map(|i| format!("(k{i})"))
            .collect::<Vec<_>>()
            .join("|");
        let f = Filter::new(vec![
            FilterRule::parse(&format!("name={groups}"), true).unwrap()
        ]);
        let Key::Name(re) = &f.rules[0].key else {
            panic!("not a name rule")
        };
        assert!(re.is_match("xk999y") && !re.is_match("k"));
        // A list of a thousand long names, case-insensitive, compiles.
        let names = (0..1000)
            .map(|i| format!("k{i}_{}", "abcdefghij".repeat(13)))
            .collect::<Vec<_>>()
            .join("|");
        assert!(FilterRule::parse(&format!("name=(?i){names}"), true).is_ok());
        // A pattern past the size bound is refused, saying so; the message shows the
        // rule's start only.
        let e = FilterRule::parse("name=\\w{1000}{1000}", true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("too large"), "{e}");
        let e = FilterRule::parse(&format!("name={}", "(".repeat(5_000)), true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad regular expression"), "{e}");
        assert!(e.len() < 1_000, "{e}");
        for plural in ["memory_copies", "kernel_dispatches", "pmc_values", "pmcs"] {
            assert!(
                FilterRule::parse(&format!("kind={plural}"), true).is_ok(),
                "{plural}"
            );
        }
    }

    #[test]
    fn excluding_an_api_category_keeps_kernel_flows_but_excluding_kernels_does_not() {
        let f = Filter::new(vec![FilterRule::parse("category=hsa_api", false).unwrap()]);
        assert!(!f.targets_at_risk);
        let f = Filter::new(vec![FilterRule::parse("kind=kernel", false).unwrap()]);
        assert!(f.targets_at_risk);
        let f = Filter::new(vec![
            FilterRule::parse("kind=api,kernel,copy", true).unwrap()
        ]);
        assert!(!f.targets_at_risk);
        let f = Filter::new(vec![FilterRule::parse("category=hip_api", true).unwrap()]);
        assert!(f.targets_at_risk);
    }
}

//! What a run keeps: filter rules and a time window, resolved against the inputs
//! (percentages of their span, ROCTx markers) before any output exists.

use rocpd_model::{Error, Result};
use rocpd_pipeline::Stage;
use rocpd_stages::time::parse_time;
use rocpd_stages::{FilterRule, Select, Window};

use crate::Inputs;

/// A time range, ns.
pub type Span = (i64, i64);

/// A time window request, as the user gives it.
#[derive(Debug, Clone)]
pub struct WindowRequest {
    /// Start: absolute ns, a duration from the start (`2s`), or a percentage (`10%`).
    pub start: Option<String>,
    /// End, in the same forms.
    pub end: Option<String>,
    /// Start at the ROCTx marker with this message (or name).
    pub start_marker: Option<String>,
    /// End at the ROCTx marker with this message (or name).
    pub end_marker: Option<String>,
    /// Keep only events wholly inside the window (the default, as for the CLI); false
    /// keeps events that overlap it.
    pub fully_inside: bool,
    /// Keep a launch's API call, kernels and copies together when the window cuts them.
    pub keep_groups: bool,
}

impl Default for WindowRequest {
    fn default() -> Self {
        WindowRequest {
            start: None,
            end: None,
            start_marker: None,
            end_marker: None,
            fully_inside: true,
            keep_groups: false,
        }
    }
}

impl WindowRequest {
    /// Whether a window is asked for at all.
    pub fn is_set(&self) -> bool {
        self.start.is_some()
            || self.end.is_some()
            || self.start_marker.is_some()
            || self.end_marker.is_some()
    }
}

/// Which events a run keeps: `--include`/`--exclude` rules and a time window.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Filter rules, in order.
    pub rules: Vec<FilterRule>,
    /// The time window.
    pub window: WindowRequest,
}

impl Selection {
    /// Parses `--include` and `--exclude` rules (`kind=kernel`, `name=^gemm`, ...).
    pub fn with_rules(mut self, include: &[String], exclude: &[String]) -> Result<Self> {
        for r in include {
            self.rules.push(FilterRule::parse(r, true)?);
        }
        for r in exclude {
            self.rules.push(FilterRule::parse(r, false)?);
        }
        Ok(self)
    }

    /// Resolves the window against `inputs`; refuses a window that is empty or misses the
    /// data, or a marker that is missing or ambiguous.
    pub fn resolve(&self, inputs: &mut Inputs) -> Result<Option<Span>> {
        let w = &self.window;
        if w.keep_groups && !w.is_set() {
            return Err(Error::Usage(
                "--keep-launches goes with a time window (--start/--end or the marker options)"
                    .into(),
            ));
        }
        if !w.is_set() {
            return Ok(None);
        }
        if w.start.is_some() && w.start_marker.is_some() {
            return Err(Error::Usage(
                "--start and --start-marker cannot both be given".into(),
            ));
        }
        if w.end.is_some() && w.end_marker.is_some() {
            return Err(Error::Usage(
                "--end and --end-marker cannot both be given".into(),
            ));
        }
        let Some((lo, hi)) = inputs.span() else {
            return Err(Error::Usage(
                "a time window was given but the inputs hold no events".into(),
            ));
        };
        let at = |v: &Option<String>, default: i64| -> Result<i64> {
            Ok(match v {
                Some(s) => parse_time(s)?.resolve(lo, hi),
                None => default,
            })
        };
        let start = match &w.start_marker {
            Some(m) => marker_time(inputs, m, false)?,
            None => at(&w.start, lo)?,
        };
        let end = match &w.end_marker {
            Some(m) => marker_time(inputs, m, true)?,
            None => at(&w.end, hi)?,
        };
        if end < lo || start > hi {
            return Err(Error::Usage(format!(
                "the window [{start}, {end}] ns holds no events: the inputs span [{lo}, {hi}] ns"
            )));
        }
        if end < start {
            return Err(Error::Usage(format!(
                "the window ends ({end} ns) before it starts ({start} ns)"
            )));
        }
        Ok(Some((start, end)))
    }

    /// The stages of this selection with the window resolved: the filter rules and the
    /// window in one pass (`rocpd_stages::Select`), none when neither is given.
    pub fn stages(&self, window: Option<Span>) -> Vec<Box<dyn Stage>> {
        let window = window
            .map(|(s, e)| Window::new(s, e, self.window.fully_inside, self.window.keep_groups));
        if self.rules.is_empty() && window.is_none() {
            return Vec::new();
        }
        // One pass for both, reported as the filter's and the window's drops.
        Select::stages(self.rules.clone(), window)
    }

    /// Whether the selection keeps every event (then copies can skip the stream).
    pub fn keeps_everything(&self) -> bool {
        self.rules.is_empty() && !self.window.is_set()
    }
}

fn marker_time(inputs: &mut Inputs, text: &str, end: bool) -> Result<i64> {
    let found = inputs.find_marker(text)?;
    match found.as_slice() {
        [] => Err(Error::Usage(format!(
            "marker {text:?} not found in any input (searched ROCTx marker messages)"
        ))),
        [(_, (s, e))] => Ok(if end { *e } else { *s }),
        many => Err(Error::Usage(format!(
            "marker {text:?} is ambiguous: {} markers carry it (first in {} at {} ns); use --start/--end instead",
            many.len(),
            many[0].0.display(),
            many[0].1 .0
        ))),
    }
}

//! Names users of AMD's `rocpd` tools know: the short category names its Perfetto and
//! OTF2 outputs use, and the names of memory-allocation operations; and the one rule by
//! which text from an input becomes part of a file name.

use std::borrow::Cow;

/// The output category of a profiler category string: `HIP_RUNTIME_API_EXT` →
/// `hip_api`, `MARKER_CORE_RANGE_API` → `marker_api`, ... (`none` when unknown).
pub fn output_category(raw: &str) -> &'static str {
    // Compared without case in place: this runs for every row the writers see, and an
    // upper-cased copy was one allocation per row. The patterns are upper-case ASCII.
    let up = raw.trim();
    let starts = |p: &str| {
        up.len() >= p.len() && up.as_bytes()[..p.len()].eq_ignore_ascii_case(p.as_bytes())
    };
    let is = |p: &str| up.eq_ignore_ascii_case(p);
    if starts("HIP_") || is("HIP") {
        "hip_api"
    } else if starts("HSA_") {
        "hsa_api"
    } else if starts("MARKER_") {
        "marker_api"
    } else if starts("RCCL_") {
        "rccl_api"
    } else if starts("ROCDECODE_") {
        "rocdecode_api"
    } else if starts("ROCJPEG_") {
        "rocjpeg_api"
    } else if starts("KFD_") {
        "kfd_events"
    } else if is("OMPT") || starts("OMPT_") {
        "openmp"
    } else if is("SCRATCH_MEMORY") {
        "scratch_memory"
    } else if is("KERNEL_DISPATCH") {
        "kernel_dispatch"
    } else if is("MEMORY_COPY") {
        "memory_copy"
    } else if is("MEMORY_ALLOCATION") {
        "memory_allocation"
    } else if starts("COUNTER_COLLECTION") {
        "counter_collection"
    } else {
        "none"
    }
}

/// The operation name of a memory-allocation row (`type` ALLOC/FREE/..., `level`
/// REAL/VIRTUAL/SCRATCH), as rocprofv3 names the records.
pub fn allocation_operation(kind: &str, level: Option<&str>) -> Cow<'static, str> {
    // Borrowed for the kinds rocprofv3 writes, so that writers name each allocation row
    // without allocating; only unknown kinds or levels build a string.
    match (level.unwrap_or("REAL"), kind) {
        ("SCRATCH", "ALLOC") => "SCRATCH_MEMORY_ALLOC".into(),
        ("SCRATCH", "FREE") => "SCRATCH_MEMORY_FREE".into(),
        ("SCRATCH", k) => format!("SCRATCH_MEMORY_{k}").into(),
        ("VIRTUAL", "ALLOC") => "MEMORY_ALLOCATION_VMEM_ALLOCATE".into(),
        ("VIRTUAL", "FREE") => "MEMORY_ALLOCATION_VMEM_FREE".into(),
        (_, "ALLOC") => "MEMORY_ALLOCATION_ALLOCATE".into(),
        (_, "FREE") => "MEMORY_ALLOCATION_FREE".into(),
        (l, k) => format!("MEMORY_ALLOCATION_{l}_{k}").into(),
    }
}

/// Refuses an output name (`-o`) that would put files outside the output directory: one
/// with a `/` (`../x`, `/abs/x`, `sub/x`), `.` or `..`. An output name is a prefix of
/// file names; directories belong in the output directory.
pub fn check_output_name(name: &str) -> crate::Result<()> {
    let bad = if name.contains('/') || name.contains('\0') {
        Some("holds a path separator or a NUL byte")
    } else if name == "." || name == ".." {
        Some("is a directory name")
    } else {
        None
    };
    match bad {
        Some(why) => Err(crate::Error::Usage(format!(
            "the output name (-o) {name:?} {why}: it is a file name prefix inside the output directory (-d); put directories in -d"
        ))),
        None => Ok(()),
    }
}

/// `text` as part of a file name: every character but ASCII letters, digits, `-` and `_`
/// (and `.` with `dots`) becomes `_`, so that no text from an input can name a path.
pub fn file_safe(text: &str, dots: bool) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || (dots && c == '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_names_never_leave_the_output_directory() {
        for bad in ["../in", "/tmp/x", "sub/x", ".", "..", "a\0b", "x/"] {
            let e = check_output_name(bad).unwrap_err().to_string();
            assert!(e.contains("-o") && e.contains("-d"), "{bad}: {e}");
        }
        for good in ["", "out", ".hidden", "..x", "a.b", "trace_2024"] {
            check_output_name(good).unwrap();
        }
    }

    #[test]
    fn categories_map_like_rocpd() {
        assert_eq!(output_category("HIP_RUNTIME_API_EXT"), "hip_api");
        assert_eq!(output_category("HSA_AMD_EXT_API"), "hsa_api");
        assert_eq!(output_category("MARKER_CORE_RANGE_API"), "marker_api");
        assert_eq!(output_category("ROCDECODE_API_EXT"), "rocdecode_api");
        assert_eq!(output_category("KFD_EVENT_PAGE_MIGRATE"), "kfd_events");
        assert_eq!(output_category("SOMETHING"), "none");
        assert_eq!(output_category("marker_core_api"), "marker_api");
        assert_eq!(
            allocation_operation("FREE", Some("SCRATCH")),
            "SCRATCH_MEMORY_FREE"
        );
        assert_eq!(
            allocation_operation("ALLOC", None),
            "MEMORY_ALLOCATION_ALLOCATE"
        );
    }

    #[test]
    fn categories_ignore_case_as_an_upper_cased_copy_would() {
        // The former implementation, upper-casing a copy of the trimmed string.
        fn by_copy(raw: &str) -> String {
            let up = raw.trim().to_ascii_uppercase();
            [
                "HIP_",
                "HSA_",
                "MARKER_",
                "KFD_",
                "OMPT_",
                "COUNTER_COLLECTION",
            ]
            .iter()
            .find(|p| up.starts_with(*p))
            .map_or(up.clone(), |p| p.to_string())
        }
        for raw in [
            " hip_api ",
            "Hip",
            "hIP",
            "ompt",
            "Ompt_x",
            "memory_copy",
            "Memory_Allocation",
            "scratch_memory ",
            "counter_collection_x",
            "Ärger_",
            "hsä_",
            "",
            "H",
        ] {
            let expect = match by_copy(raw).as_str() {
                "HIP_" | "HIP" => "hip_api",
                "HSA_" => "hsa_api",
                "MARKER_" => "marker_api",
                "KFD_" => "kfd_events",
                "OMPT_" | "OMPT" => "openmp",
                "COUNTER_COLLECTION" => "counter_collection",
                "MEMORY_COPY" => "memory_copy",
                "MEMORY_ALLOCATION" => "memory_allocation",
                "SCRATCH_MEMORY" => "scratch_memory",
                _ => "none",
            };
            assert_eq!(output_category(raw), expect, "{raw:?}");
        }
    }
}

//! The files of a CSV output set, their names and their exact header lines.
//!
//! The trace files and their columns are those of AMD's `rocpd convert -f csv` (the
//! rocprofv3 headers with a leading `Guid` column); where that layout has a documented
//! bug, the header is fixed (see `formats/csv/README.md`): `counter_collection.csv` starts
//! with `Guid` (AMD: `Pid`, holding the guid), and `scratch_memory_trace.csv` has `Guid`
//! and rocprofv3's `Allocation_Size` (AMD: neither). The stats files are rocprofv3's
//! `--stats` files.

/// One trace file of the set (written as rows stream by).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TraceFile {
    /// Kernel dispatches.
    KernelTrace,
    /// HIP API calls (`HIP_*` categories).
    HipApi,
    /// HSA API calls (`HSA_*`).
    HsaApi,
    /// ROCTx markers and ranges (`MARKER_*`), from API records and samples.
    MarkerApi,
    /// RCCL API calls (`RCCL_*`).
    RcclApi,
    /// rocDecode API calls (`ROCDECODE_*`).
    RocdecodeApi,
    /// rocJPEG API calls (`ROCJPEG_*`).
    RocjpegApi,
    /// Memory copies.
    MemoryCopy,
    /// Memory allocations and frees (levels REAL and VIRTUAL).
    MemoryAllocation,
    /// Scratch-memory allocations and frees (level SCRATCH).
    ScratchMemory,
    /// Counter values, one row per (dispatch, counter).
    CounterCollection,
    /// The agents of the processes in the output.
    AgentInfo,
}

/// The columns of every API trace file.
pub const API_HEADER: &[&str] = &[
    "Guid",
    "Domain",
    "Function",
    "Process_Id",
    "Thread_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// `kernel_trace.csv`.
pub const KERNEL_HEADER: &[&str] = &[
    "Guid",
    "Kind",
    "Agent_Id",
    "Queue_Id",
    "Stream_Id",
    "Thread_Id",
    "Dispatch_Id",
    "Kernel_Id",
    "Kernel_Name",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
    "LDS_Block_Size",
    "Scratch_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Workgroup_Size_X",
    "Workgroup_Size_Y",
    "Workgroup_Size_Z",
    "Grid_Size_X",
    "Grid_Size_Y",
    "Grid_Size_Z",
];

/// `memory_copy_trace.csv`.
pub const COPY_HEADER: &[&str] = &[
    "Guid",
    "Kind",
    "Direction",
    "Stream_Id",
    "Source_Agent_Id",
    "Destination_Agent_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// `memory_allocation_trace.csv`.
pub const ALLOCATION_HEADER: &[&str] = &[
    "Guid",
    "Kind",
    "Operation",
    "Agent_Id",
    "Allocation_Size",
    "Address",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// `scratch_memory_trace.csv`: AMD's columns with `Guid` first and rocprofv3's
/// `Allocation_Size` last.
pub const SCRATCH_HEADER: &[&str] = &[
    "Guid",
    "Kind",
    "Operation",
    "Agent_Id",
    "Queue_Id",
    "Thread_Id",
    "Alloc_Flags",
    "Start_Timestamp",
    "End_Timestamp",
    "Allocation_Size",
];

/// `counter_collection.csv`: AMD's columns, the first named `Guid` (AMD: `Pid`).
pub const COUNTER_HEADER: &[&str] = &[
    "Guid",
    "Correlation_Id",
    "Dispatch_Id",
    "Agent_Id",
    "Queue_Id",
    "Process_Id",
    "Thread_Id",
    "Grid_Size",
    "Kernel_Id",
    "Kernel_Name",
    "Workgroup_Size",
    "LDS_Block_Size",
    "Scratch_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Counter_Name",
    "Counter_Value",
    "Start_Timestamp",
    "End_Timestamp",
];

/// `agent_info.csv`: `Guid`, then rocprofv3's 53 agent columns.
pub const AGENT_HEADER: &[&str] = &[
    "Guid",
    "Node_Id",
    "Logical_Node_Id",
    "Agent_Type",
    "Cpu_Cores_Count",
    "Simd_Count",
    "Cpu_Core_Id_Base",
    "Simd_Id_Base",
    "Max_Waves_Per_Simd",
    "Lds_Size_In_Kb",
    "Gds_Size_In_Kb",
    "Num_Gws",
    "Wave_Front_Size",
    "Num_Xcc",
    "Cu_Count",
    "Array_Count",
    "Num_Shader_Banks",
    "Simd_Arrays_Per_Engine",
    "Cu_Per_Simd_Array",
    "Simd_Per_Cu",
    "Max_Slots_Scratch_Cu",
    "Gfx_Target_Version",
    "Vendor_Id",
    "Device_Id",
    "Location_Id",
    "Domain",
    "Drm_Render_Minor",
    "Num_Sdma_Engines",
    "Num_Sdma_Xgmi_Engines",
    "Num_Sdma_Queues_Per_Engine",
    "Num_Cp_Queues",
    "Max_Engine_Clk_Ccompute",
    "Max_Engine_Clk_Fcompute",
    "Sdma_Fw_Version",
    "Fw_Version",
    "Capability",
    "Cu_Per_Engine",
    "Max_Waves_Per_Cu",
    "Family_Id",
    "Workgroup_Max_Size",
    "Grid_Max_Size",
    "Local_Mem_Size",
    "Hive_Id",
    "Gpu_Id",
    "Workgroup_Max_Dim_X",
    "Workgroup_Max_Dim_Y",
    "Workgroup_Max_Dim_Z",
    "Grid_Max_Dim_X",
    "Grid_Max_Dim_Y",
    "Grid_Max_Dim_Z",
    "Name",
    "Vendor_Name",
    "Product_Name",
    "Model_Name",
];

/// The columns of every stats file (rocprofv3 `--stats`).
pub const STATS_HEADER: &[&str] = &[
    "Name",
    "Calls",
    "TotalDurationNs",
    "AverageNs",
    "Percentage",
    "MinNs",
    "MaxNs",
    "StdDev",
];

impl TraceFile {
    /// Every trace file, in the order outputs are reported.
    pub const ALL: [TraceFile; 12] = [
        TraceFile::KernelTrace,
        TraceFile::HipApi,
        TraceFile::HsaApi,
        TraceFile::MarkerApi,
        TraceFile::RcclApi,
        TraceFile::RocdecodeApi,
        TraceFile::RocjpegApi,
        TraceFile::MemoryCopy,
        TraceFile::MemoryAllocation,
        TraceFile::ScratchMemory,
        TraceFile::CounterCollection,
        TraceFile::AgentInfo,
    ];

    /// The file's name without prefix and extension (`kernel_trace`, ...).
    pub fn name(self) -> &'static str {
        match self {
            TraceFile::KernelTrace => "kernel_trace",
            TraceFile::HipApi => "hip_api_trace",
            TraceFile::HsaApi => "hsa_api_trace",
            TraceFile::MarkerApi => "marker_api_trace",
            TraceFile::RcclApi => "rccl_api_trace",
            TraceFile::RocdecodeApi => "rocdecode_api_trace",
            TraceFile::RocjpegApi => "rocjpeg_api_trace",
            TraceFile::MemoryCopy => "memory_copy_trace",
            TraceFile::MemoryAllocation => "memory_allocation_trace",
            TraceFile::ScratchMemory => "scratch_memory_trace",
            TraceFile::CounterCollection => "counter_collection",
            TraceFile::AgentInfo => "agent_info",
        }
    }

    /// The header line's column names, in order.
    pub fn header(self) -> &'static [&'static str] {
        match self {
            TraceFile::KernelTrace => KERNEL_HEADER,
            TraceFile::HipApi
            | TraceFile::HsaApi
            | TraceFile::MarkerApi
            | TraceFile::RcclApi
            | TraceFile::RocdecodeApi
            | TraceFile::RocjpegApi => API_HEADER,
            TraceFile::MemoryCopy => COPY_HEADER,
            TraceFile::MemoryAllocation => ALLOCATION_HEADER,
            TraceFile::ScratchMemory => SCRATCH_HEADER,
            TraceFile::CounterCollection => COUNTER_HEADER,
            TraceFile::AgentInfo => AGENT_HEADER,
        }
    }

    /// The API trace file of an output category (`naming::output_category`), if any.
    pub(crate) fn of_api_category(category: &str) -> Option<TraceFile> {
        Some(match category {
            "hip_api" => TraceFile::HipApi,
            "hsa_api" => TraceFile::HsaApi,
            "marker_api" => TraceFile::MarkerApi,
            "rccl_api" => TraceFile::RcclApi,
            "rocdecode_api" => TraceFile::RocdecodeApi,
            "rocjpeg_api" => TraceFile::RocjpegApi,
            _ => return None,
        })
    }
}

/// One stats file of the set (written at the end, with `--stats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StatsFile {
    /// Per kernel name.
    Kernel,
    /// Per HIP function.
    HipApi,
    /// Per HSA function.
    HsaApi,
    /// Per marker text.
    MarkerApi,
    /// Per RCCL function.
    RcclApi,
    /// Per rocDecode function.
    RocdecodeApi,
    /// Per rocJPEG function.
    RocjpegApi,
    /// Per copy direction.
    MemoryCopy,
    /// Per allocation operation.
    MemoryAllocation,
    /// Per scratch-memory operation.
    ScratchMemory,
    /// One row per domain (every file above as one).
    Domain,
}

impl StatsFile {
    /// Every stats file, in the order outputs are reported.
    pub const ALL: [StatsFile; 11] = [
        StatsFile::Kernel,
        StatsFile::HipApi,
        StatsFile::HsaApi,
        StatsFile::MarkerApi,
        StatsFile::RcclApi,
        StatsFile::RocdecodeApi,
        StatsFile::RocjpegApi,
        StatsFile::MemoryCopy,
        StatsFile::MemoryAllocation,
        StatsFile::ScratchMemory,
        StatsFile::Domain,
    ];

    /// The file's name without prefix and extension (`kernel_stats`, ...).
    pub fn name(self) -> &'static str {
        match self {
            StatsFile::Kernel => "kernel_stats",
            StatsFile::HipApi => "hip_api_stats",
            StatsFile::HsaApi => "hsa_api_stats",
            StatsFile::MarkerApi => "marker_api_stats",
            StatsFile::RcclApi => "rccl_api_stats",
            StatsFile::RocdecodeApi => "rocdecode_api_stats",
            StatsFile::RocjpegApi => "rocjpeg_api_stats",
            StatsFile::MemoryCopy => "memory_copy_stats",
            StatsFile::MemoryAllocation => "memory_allocation_stats",
            StatsFile::ScratchMemory => "scratch_memory_stats",
            StatsFile::Domain => "domain_stats",
        }
    }

    /// The summary view (`rocpd_summary`) the file's rows come from, and the domain name
    /// of its row in `domain_stats.csv`; `None` for `domain_stats` itself.
    pub(crate) fn view(self) -> Option<(&'static str, &'static str)> {
        Some(match self {
            StatsFile::Kernel => ("KERNELS", "KERNEL_DISPATCH"),
            StatsFile::HipApi => ("HIP", "HIP_API"),
            StatsFile::HsaApi => ("HSA", "HSA_API"),
            StatsFile::MarkerApi => ("MARKERS", "MARKER_API"),
            StatsFile::RcclApi => ("RCCL", "RCCL_API"),
            StatsFile::RocdecodeApi => ("ROCDECODE", "ROCDECODE_API"),
            StatsFile::RocjpegApi => ("ROCJPEG", "ROCJPEG_API"),
            StatsFile::MemoryCopy => ("MEMORY_COPIES", "MEMORY_COPY"),
            StatsFile::MemoryAllocation => ("MEMORY_ALLOCATIONS", "MEMORY_ALLOCATION"),
            StatsFile::ScratchMemory => ("SCRATCH_MEMORY", "SCRATCH_MEMORY"),
            StatsFile::Domain => return None,
        })
    }
}

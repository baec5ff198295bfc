//! The generator's vocabulary: category strings, API operation names, kernel
//! templates, ROCTx messages and the "odd" names (quotes, commas, newlines,
//! tabs, non-ASCII, empty, very long) that exercise readers and writers.
//!
//! Category and operation names are the rocprofiler-sdk buffer-tracing kind
//! and operation names that rocprofv3 stores in `rocpd_string`.

/// HIP runtime API calls (`hipLaunchKernel`, `hipMemcpy`, …).
pub const CAT_HIP: &str = "HIP_RUNTIME_API_EXT";
/// HSA core API calls.
pub const CAT_HSA_CORE: &str = "HSA_CORE_API";
/// HSA AMD extension API calls.
pub const CAT_HSA_AMD: &str = "HSA_AMD_EXT_API";
/// ROCTx markers and ranges (push/pop, start/stop, mark).
pub const CAT_MARKER: &str = "MARKER_CORE_RANGE_API";
/// RCCL collective API calls.
pub const CAT_RCCL: &str = "RCCL_API";
/// GPU kernel dispatches.
pub const CAT_KERNEL: &str = "KERNEL_DISPATCH";
/// Memory copies.
pub const CAT_COPY: &str = "MEMORY_COPY";
/// hipMalloc/hipFree allocation records.
pub const CAT_ALLOC: &str = "MEMORY_ALLOCATION";
/// Scratch memory allocation records.
pub const CAT_SCRATCH: &str = "SCRATCH_MEMORY";
/// rocprof-sys style periodic CPU frequency samples.
pub const CAT_CPU_FREQ: &str = "cpu_frequency";

/// Memory-copy operation names (`rocpd_memory_copy.name_id`).
pub const COPY_H2D: &str = "MEMORY_COPY_HOST_TO_DEVICE";
/// Device to host copy.
pub const COPY_D2H: &str = "MEMORY_COPY_DEVICE_TO_HOST";
/// Device to device copy.
pub const COPY_D2D: &str = "MEMORY_COPY_DEVICE_TO_DEVICE";

/// ROCTx operation names: push/pop ranges are stored as one
/// `roctxThreadRangeA` record, start/stop ranges as `roctxProcessRangeA`,
/// marks as `roctxMarkA` (zero length, so stored as samples).
pub const ROCTX_THREAD_RANGE: &str = "roctxThreadRangeA";
/// See [`ROCTX_THREAD_RANGE`].
pub const ROCTX_PROCESS_RANGE: &str = "roctxProcessRangeA";
/// See [`ROCTX_THREAD_RANGE`].
pub const ROCTX_MARK: &str = "roctxMarkA";

/// Name of the rocprof-sys style CPU frequency track (one per process).
pub const CPU_FREQ_TRACK: &str = "CPU frequency [0]";

/// HSA calls issued on the HSA thread: (category, name, min ns, max ns).
pub const HSA_CALLS: &[(&str, &str, i64, i64)] = &[
    (
        CAT_HSA_CORE,
        "hsa_queue_load_write_index_relaxed",
        1_000,
        2_500,
    ),
    (
        CAT_HSA_CORE,
        "hsa_queue_store_write_index_relaxed",
        1_000,
        2_000,
    ),
    (CAT_HSA_CORE, "hsa_signal_store_screlease", 1_000, 3_000),
    (CAT_HSA_CORE, "hsa_signal_load_relaxed", 1_000, 2_000),
    (CAT_HSA_CORE, "hsa_signal_wait_scacquire", 5_000, 50_000),
    (CAT_HSA_AMD, "hsa_amd_memory_async_copy", 4_000, 20_000),
    (CAT_HSA_AMD, "hsa_amd_signal_async_handler", 2_000, 8_000),
    (CAT_HSA_AMD, "hsa_amd_memory_pool_allocate", 10_000, 45_000),
];

/// ROCTx messages used by the generated application.
#[derive(Debug, Clone)]
pub struct Messages {
    /// Outer push/pop range of each iteration.
    pub step: &'static str,
    /// Forward pass range.
    pub forward: &'static str,
    /// Backward pass range.
    pub backward: &'static str,
    /// Optimizer range.
    pub optimizer: &'static str,
    /// `roctxMarkA` message.
    pub checkpoint: &'static str,
    /// First of two overlapping start/stop ranges.
    pub prefetch_a: &'static str,
    /// Second of two overlapping start/stop ranges.
    pub prefetch_b: &'static str,
}

impl Messages {
    /// The message set; with `odd` some messages contain quotes, commas,
    /// newlines, tabs and non-ASCII characters.
    pub fn new(odd: bool) -> Self {
        if odd {
            Messages {
                step: "train_step",
                forward: "forward \"attn\", q/k/v",
                backward: "backward\tgrad µ_核",
                optimizer: "optimizer\nstep",
                checkpoint: "checkpoint, \"epoch\" ü",
                prefetch_a: "prefetch_A",
                prefetch_b: "prefetch_B",
            }
        } else {
            Messages {
                step: "train_step",
                forward: "forward",
                backward: "backward",
                optimizer: "optimizer.step",
                checkpoint: "checkpoint",
                prefetch_a: "prefetch_A",
                prefetch_b: "prefetch_B",
            }
        }
    }

    /// All messages, in a fixed order.
    pub fn all(&self) -> [&'static str; 7] {
        [
            self.step,
            self.forward,
            self.backward,
            self.optimizer,
            self.checkpoint,
            self.prefetch_a,
            self.prefetch_b,
        ]
    }
}

/// A kernel the generated application launches.
#[derive(Debug, Clone)]
pub struct KernelTemplate {
    /// Symbol (mangled-ish) name: `rocpd_info_kernel_symbol.kernel_name`.
    pub kernel_name: String,
    /// Demangled/formatted name: `display_name`.
    pub display_name: String,
    /// Typical duration in ns (jittered per dispatch).
    pub dur_ns: i64,
    /// Scratch bytes per work-item (non-zero → scratch allocations).
    pub private_segment: i64,
    /// LDS bytes per work-group.
    pub group_segment: i64,
    /// Work-group size x (y = z = 1).
    pub workgroup: i64,
    /// Number of work-groups in x (grid = workgroup * groups).
    pub groups: i64,
    /// SGPRs.
    pub sgpr: i64,
    /// Arch VGPRs.
    pub vgpr: i64,
    /// Accumulation VGPRs.
    pub accum_vgpr: i64,
    /// Relative launch frequency.
    pub weight: u64,
}

#[allow(clippy::too_many_arguments)]
fn k(
    kernel_name: impl Into<String>,
    display_name: impl Into<String>,
    dur_ns: i64,
    private_segment: i64,
    group_segment: i64,
    workgroup: i64,
    groups: i64,
    weight: u64,
) -> KernelTemplate {
    let display_name = display_name.into();
    let kernel_name = kernel_name.into();
    // Register counts derived from the name length so they look varied but
    // stay deterministic.
    let h = kernel_name.len() as i64;
    KernelTemplate {
        kernel_name,
        display_name,
        dur_ns,
        private_segment,
        group_segment,
        workgroup,
        groups,
        sgpr: 16 + (h * 7) % 88,
        vgpr: 8 * (1 + (h * 3) % 32),
        accum_vgpr: if dur_ns > 300_000 {
            8 * (1 + h % 16)
        } else {
            0
        },
        weight,
    }
}

/// A ~2000 character C++ template instantiation name.
fn long_template_names() -> (String, String) {
    let mut display = String::from("void gemm_impl::tiled_kernel<");
    let mut mangled = String::from("_ZN9gemm_impl12tiled_kernelI");
    let mut i = 0;
    while display.len() < 1990 {
        display.push_str(&format!(
            "gemm_impl::Tile<{}, {}, 32>, ",
            64 << (i % 3),
            16 * (i % 5 + 1)
        ));
        mangled.push_str(&format!(
            "NS_4TileILi{}ELi{}ELi32EEE",
            64 << (i % 3),
            16 * (i % 5 + 1)
        ));
        i += 1;
    }
    display.push_str("float>(float*, float const*, int)");
    mangled.push_str("fEEvPT_PKS2_i");
    (mangled, display)
}

/// The kernels of the generated application. With `odd`, additional kernels
/// whose display names contain `"`, `,`, a newline, a tab, non-ASCII, an
/// empty display name and one ~2000 character template name.
pub fn kernel_templates(odd: bool) -> Vec<KernelTemplate> {
    let mut v = vec![
        k(
            "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
            6_000, 0, 0, 256, 1024, 30,
        ),
        k(
            "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB1_GRVW8_K1_MIWT2_2_TT2_64_WG32_8_1",
            "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB1_GRVW8_K1_MIWT2_2_TT2_64_WG32_8_1",
            420_000, 0, 32_768, 256, 2048, 25,
        ),
        k(
            "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfNS0_11sum_functorIfffEEEEjfLi4EEEEEvT1_",
            "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float> >, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float> >, unsigned int, float, 4>)",
            38_000, 0, 4_096, 512, 304, 10,
        ),
        k(
            "_ZN7ck_tile6kentryILi256ELi2ENS_13FmhaFwdKernelINS_20BlockFmhaPipelineQRKSVIfEEEEEEvNT1_5KargsE",
            "void ck_tile::kentry<256, 2, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSV<float> > >(ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSV<float> >::Kargs)",
            850_000, 0, 65_536, 256, 1216, 6,
        ),
        k(
            "_Z16softmax_warp_fwdIN3c104HalfES1_fLi10ELb0EEvPT0_PKT_iii",
            "void softmax_warp_fwd<c10::Half, c10::Half, float, 10, false>(c10::Half*, c10::Half const*, int, int, int)",
            24_000, 0, 0, 128, 4096, 10,
        ),
        k(
            "_ZN4vllm15rms_norm_kernelIN3c104HalfEEEvPT_PKS3_S6_fii",
            "void vllm::rms_norm_kernel<c10::Half>(c10::Half*, c10::Half const*, c10::Half const*, float, int, int)",
            12_000, 0, 2_048, 256, 512, 12,
        ),
        k(
            "_ZN12_GLOBAL__N_118adam_update_kernelIfEEvPT_PKS1_S4_S4_ffffi",
            "void (anonymous namespace)::adam_update_kernel<float>(float*, float const*, float const*, float const*, float, float, float, float, int)",
            65_000, 1_024, 0, 256, 2048, 6,
        ),
        k(
            "__amd_rocclr_copyBuffer",
            "__amd_rocclr_copyBuffer",
            8_000, 0, 0, 512, 128, 8,
        ),
        k(
            "__amd_rocclr_fillBufferAligned",
            "__amd_rocclr_fillBufferAligned",
            5_000, 0, 0, 256, 64, 6,
        ),
        k(
            "_Z36ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            1_500_000, 2_048, 8_192, 640, 64, 2,
        ),
    ];
    if odd {
        let (long_mangled, long_display) = long_template_names();
        v.extend([
            k(
                "_Z12quote_kernelILi2EEvPfi",
                "void quote_kernel<\"fast\", 2>(float*, int)",
                15_000,
                0,
                0,
                256,
                256,
                3,
            ),
            k(
                "_Z14newline_kernelv",
                "newline_kernel\n(int, float)",
                9_000,
                0,
                0,
                64,
                64,
                2,
            ),
            k(
                "_Z10tab_kernelIfEvv",
                "tab\tkernel<float>()",
                7_000,
                0,
                0,
                64,
                128,
                2,
            ),
            k(
                "_Z10kernel_µ_核v",
                "kernel_µ_核<float>(float*, int)",
                11_000,
                0,
                1_024,
                128,
                256,
                3,
            ),
            k("_Z16anonymous_kernelv", "", 20_000, 0, 0, 256, 512, 2),
            k(
                long_mangled,
                long_display,
                2_200_000,
                4_096,
                16_384,
                256,
                1024,
                1,
            ),
        ]);
    }
    v
}

/// The profiled command line of process `rank`.
pub fn command(rank: u32, odd: bool) -> String {
    if odd {
        format!("python3 train.py --rank {rank} --config \"a b\"")
    } else {
        format!("python3 train.py --rank {rank}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_kernels_have_odd_names() {
        let plain = kernel_templates(false);
        let odd = kernel_templates(true);
        assert!(odd.len() > plain.len());
        let names: Vec<_> = odd.iter().map(|k| k.display_name.as_str()).collect();
        assert!(names.iter().any(|n| n.contains('"')));
        assert!(names.iter().any(|n| n.contains('\n')));
        assert!(names.iter().any(|n| n.contains('\t')));
        assert!(names.iter().any(|n| n.contains('核')));
        assert!(names.iter().any(|n| n.is_empty()));
        assert!(names.iter().any(|n| (1900..2100).contains(&n.len())));
        for k in &odd {
            assert!((5_000..=5_000_000).contains(&k.dur_ns));
        }
    }
}

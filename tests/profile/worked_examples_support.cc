#include "tests/profile/worked_examples_support.h"

namespace diagnose::profile::worked {

namespace {

constexpr const char* kRagged = "void stream_executor::gpu::RaggedAllToAllKernelImpl<8>(...)";
constexpr const char* kGroupedGemm = "ck::kernel_grouped_gemm_xdl_fixed_nk";
constexpr const char* kTurboGemm = "primus_turbo::grouped_gemm_kernel";
constexpr const char* kFmha = "aiter::fmha_bwd_hd128_bf16";
constexpr const char* kRccl = "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)";
constexpr const char* kDeepEp = "primus_turbo::deep_ep::intranode::dispatch";

fixturegen::TraceWindowSpec Window(bool one_gpu_per_process, double step_seconds) {
  fixturegen::TraceWindowSpec spec;
  spec.hosts = Hosts(8);
  spec.gpus_per_host = 8;
  spec.one_file_per_gpu = one_gpu_per_process;
  spec.first_step = 5;
  spec.steps = 3;
  spec.step_seconds = step_seconds;
  return spec;
}

// v1..v3 share the deepep layout; `scatter` is each input_scatter_fusion's time.
fixturegen::TraceWindowSpec DeepEp(double step, std::vector<std::pair<std::string, double>> scatter, double gap,
                                   double rccl, double reduce_fusion) {
  auto spec = Window(false, step);
  double t = 0;
  const auto main = [&](const std::string& name, double dur, int launches) {
    spec.slices.push_back({name, 0, t, dur, launches});
    t += dur;
  };
  spec.slices.push_back({kDeepEp, 1, 0.5, 3.0, 6});
  main(kTurboGemm, 7.0, 40);
  for (size_t i = 0; i < scatter.size(); ++i) {
    main(scatter[i].first, scatter[i].second, 4);
    if (i == 0) t += gap;   // the atomic scatter-add stalls the main stream
  }
  if (reduce_fusion > 0) main("loop_reduce_fusion_1.kd", reduce_fusion, 8);
  main(kFmha, 3.5, 20);
  main("loop_gather_fusion_1.kd", 1.0, 8);
  spec.slices.push_back({kRccl, 1, t, rccl, 12});
  return spec;
}

}  // namespace

std::vector<std::string> Hosts(int count, const std::string& prefix) {
  std::vector<std::string> hosts;
  for (int i = 0; i < count; ++i) hosts.push_back(prefix + "-" + std::to_string(10 + i));
  return hosts;
}

std::vector<WorkedVariant> SparseGmmVariants() {
  std::vector<WorkedVariant> variants;
  {
    auto spec = Window(false, 82.5);
    spec.slices = {{kGroupedGemm, 0, 0.0, 6.0, 30},
                   {kRagged, 0, 6.0, 28.4, 12},
                   // the ragged all-to-all leaves the main stream waiting 30 s
                   {kFmha, 0, 64.4, 4.0, 20},
                   {"loop_select_fusion_3.kd", 0, 68.4, 1.2, 6},
                   {"hipMemsetAsync", 0, 69.6, 0.5, 10},
                   {kRccl, 1, 70.1, 5.0, 10}};
    variants.push_back({"1node", spec});
  }
  {
    auto spec = Window(true, 26.1);
    spec.slices = {{kGroupedGemm, 0, 0.0, 8.0, 30},
                   {kFmha, 0, 8.0, 6.0, 20},
                   {"loop_select_fusion_3.kd", 0, 14.0, 2.2, 6},
                   {"input_scatter_fusion_1.kd", 0, 16.2, 2.0, 4},
                   // RCCL under 14 s of the compute: healthy overlap
                   {kRccl, 1, 4.2, 15.3, 24}};
    variants.push_back({"1gpu", spec});
  }
  variants.push_back({"deepep", MoeVariants()[0].spec});
  return variants;
}

std::vector<WorkedVariant> MoeVariants() {
  return {
      {"v1", DeepEp(38.0, {{"input_scatter_fusion_2.kd", 4.40}, {"input_scatter_fusion_1.kd", 4.57}}, 10.0, 3.46, 0)},
      {"v2", DeepEp(30.5, {{"input_scatter_fusion_2.kd", 4.45}}, 8.0, 2.74, 0)},
      {"v3", DeepEp(23.9, {{"input_scatter_fusion_2.kd", 0.04}}, 0.0, 2.59, 2.0)},
  };
}

}  // namespace diagnose::profile::worked

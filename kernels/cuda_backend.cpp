#include "kernels/cuda_backend.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/model/backend.h"
#include "engine/model/config.h"
#include "kernels/attention_paths.h"
#include "kernels/cuda_context.h"

namespace specscope::cuda {

namespace {

// What this backend does not compute. Granite's scaled embeddings, queries, residual adds and logits ran on an H200
// (2026-12-04, cuda_parity_test's Granite case passed twice) and run by default. Gemma 3's parts (sublayer output
// norms, GELU, sliding layers with their own RoPE) are written (cuda_context.cpp) and their logits matched the CPU
// there, but its bf16 fixture's greedy output parted from the CPU's exact path at a near tie (it equals the CPU's
// bf16-dot path token for token), which the parity test now judges by the gap: until that test passes on a GPU,
// only SPECSCOPE_CUDA_UNPROVEN=1 runs Gemma 3 here.
std::string unsupported(const ModelConfig& c) {
  if (c.head_dim > attention_paths::kMaxHeadDim)
    return "the CUDA backend's attention takes head_dim up to " + std::to_string(attention_paths::kMaxHeadDim) +
           ", this model's is " + std::to_string(c.head_dim);
  const bool gemma3_parts = c.sandwich_norms || c.gelu() || c.rope_local_theta > 0.f;
  const char* unproven = std::getenv("SPECSCOPE_CUDA_UNPROVEN");
  if (gemma3_parts && !(unproven && std::strcmp(unproven, "1") == 0))
    return c.architecture + ": its CUDA forward has not yet passed every parity test on a GPU "
                            "(SPECSCOPE_CUDA_UNPROVEN=1 runs it)";
  return "";
}

}  // namespace

void register_backend() {
  GpuBackend b;
  b.name = "cuda";
  b.available = [] { return device_available(); };
  b.device_name = [] { return device_description(); };
  b.new_context = [](std::shared_ptr<const Model> m, int n_ctx) { return new_cuda_context(std::move(m), n_ctx); };
  b.unsupported = unsupported;
  register_gpu_backend(std::move(b));
}

}  // namespace specscope::cuda

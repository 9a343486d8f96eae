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

// What this backend does not compute: heads wider than its attention takes, Phi's partial rotary and LongRoPE
// (written for the CPU in the forty-third session, with no GPU to test kernels for them). Granite's scaled embeddings, queries,
// residual adds and logits, and Gemma 3's parts (sublayer output norms, GELU, sliding layers with their own RoPE)
// passed cuda_parity_test on an H200 (2026-12-04; Gemma 3's greedy partings judged by the gap, as near ties) and run
// by default. SPECSCOPE_CUDA_REFUSE=<architecture> refuses one more (its ModelConfig name, e.g. Gemma3ForCausalLM): how
// the parity test reaches the fallback to the CPU now that every fixture's architecture runs here, and a way to
// keep a model off the GPU under auto.
std::string unsupported(const ModelConfig& c) {
  if (c.head_dim > attention_paths::kMaxHeadDim)
    return "the CUDA backend's attention takes head_dim up to " + std::to_string(attention_paths::kMaxHeadDim) +
           ", this model's is " + std::to_string(c.head_dim);
  if (c.rotary_dims() != c.head_dim)
    return "the CUDA backend's RoPE turns whole heads, this model's (partial_rotary_factor) " +
           std::to_string(c.rotary_dims()) + " of " + std::to_string(c.head_dim) + " dimensions";
  if (c.rope_scaling.type == "longrope") return "the CUDA backend has no LongRoPE scaling (Phi-3.5, Phi-4-mini)";
  const char* refused = std::getenv("SPECSCOPE_CUDA_REFUSE");
  if (refused && c.architecture == refused) return c.architecture + ": refused by SPECSCOPE_CUDA_REFUSE";
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

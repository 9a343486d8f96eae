#pragma once
// The CUDA implementation of Context (engine/model/forward.h): the same Llama forward as CpuContext with the
// weights on the GPU, GEMMs through cuBLAS (f32 accumulation; 16-bit weights multiply 16-bit copies of the
// activations), an f32 KV cache on the device, and tree masks. Logits and requested hidden states are copied
// back to the host for verification. Speculative Streaming's in-forward streams are not implemented here yet
// (a streaming batch is refused with a clear error).
#include <memory>
#include <string>

#include "engine/model/forward.h"

namespace specscope {
class Model;
}

namespace specscope::cuda {

// Whether a CUDA device is visible and usable; its description.
bool device_available();
std::string device_description();

std::unique_ptr<Context> new_cuda_context(std::shared_ptr<const Model> model, int n_ctx);

}  // namespace specscope::cuda

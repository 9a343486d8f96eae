#include "kernels/cuda_backend.h"

#include "engine/model/backend.h"
#include "kernels/cuda_context.h"

namespace specscope::cuda {

void register_backend() {
  GpuBackend b;
  b.name = "cuda";
  b.available = [] { return device_available(); };
  b.device_name = [] { return device_description(); };
  b.new_context = [](std::shared_ptr<const Model> m, int n_ctx) { return new_cuda_context(std::move(m), n_ctx); };
  register_gpu_backend(std::move(b));
}

}  // namespace specscope::cuda

#pragma once
// Which backend runs a sequence: the CPU implementation in this library, or a GPU backend that registers
// itself at start-up (kernels/: CUDA + cuBLAS, built when nvcc is present). The engine has no link-time
// dependency on CUDA: an executable built with the CUDA backend calls its register function from main().
#include <functional>
#include <memory>
#include <string>

#include "engine/model/forward.h"

namespace specscope {

class Model;
struct ModelConfig;

enum class Backend { Auto, Cpu, Cuda };

// "auto" | "cpu" | "cuda"; InputError("--backend", ...) otherwise.
Backend parse_backend(const std::string& name);
const char* backend_name(Backend b);

struct GpuBackend {
  std::string name;                              // "cuda"
  std::function<bool()> available;               // a device is visible and usable
  std::function<std::string()> device_name;      // e.g. "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)"
  std::function<std::unique_ptr<Context>(std::shared_ptr<const Model>, int n_ctx)> new_context;
  // Why it does not compute a model of this config (a head wider than its attention kernels take, a forward it does
  // not have yet); empty: it does.
  std::function<std::string(const ModelConfig&)> unsupported;
};
void register_gpu_backend(GpuBackend b);
// Whether a GPU backend was compiled in and registered (not whether a device is visible).
bool gpu_backend_built();

// The backend `requested` resolves to now: Auto is Cuda when a CUDA device is visible, else Cpu. Requesting Cuda
// without a built backend or without a visible device is an InputError naming --backend and the reason.
Backend resolve_backend(Backend requested);
// The backend `model`'s sequences run on: resolve_backend's, except for a model the GPU backend does not compute
// (GpuBackend::unsupported): Auto runs it on the CPU (a warning says why, once per model file), an explicit Cuda is
// an InputError naming the model. Whatever sizes work for a model (tree tuning, step costs) asks this, so
// it measures the backend the model's runs use.
Backend backend_for(const Model& model, Backend requested);
// A new sequence of `model` on backend_for(model, requested).
std::unique_ptr<Context> new_context(const Model& model, Backend requested, int n_ctx = 0);
// "CPU (Intel Xeon ...)" or "CUDA (NVIDIA ...)", for status bars and reports.
std::string backend_description(Backend resolved);

}  // namespace specscope

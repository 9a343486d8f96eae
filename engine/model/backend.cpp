#include "engine/model/backend.h"

#include <spdlog/spdlog.h>

#include <mutex>
#include <optional>
#include <set>

#include "engine/model/model.h"
#include "engine/util/cpu_info.h"
#include "engine/util/error.h"

namespace specscope {

namespace {
std::mutex g_mutex;
std::optional<GpuBackend>& gpu() {
  static std::optional<GpuBackend> b;
  return b;
}
// A copy of the registered backend, taken under the lock (its functions are called outside it: a device query or a
// context's construction can take long).
std::optional<GpuBackend> registered_gpu() {
  std::lock_guard lock(g_mutex);
  return gpu();
}
}  // namespace

Backend parse_backend(const std::string& name) {
  if (name == "auto") return Backend::Auto;
  if (name == "cpu") return Backend::Cpu;
  if (name == "cuda") return Backend::Cuda;
  throw InputError("--backend", "unknown backend '" + name + "' (auto, cpu or cuda)");
}

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::Auto: return "auto";
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
  }
  return "?";
}

void register_gpu_backend(GpuBackend b) {
  std::lock_guard lock(g_mutex);
  gpu() = std::move(b);
}

bool gpu_backend_built() {
  std::lock_guard lock(g_mutex);
  return gpu().has_value();
}

Backend resolve_backend(Backend requested) {
  const std::optional<GpuBackend> g = registered_gpu();
  if (requested == Backend::Cpu) return Backend::Cpu;
  const bool visible = g && g->available();
  if (requested == Backend::Auto) return visible ? Backend::Cuda : Backend::Cpu;
  if (!g) throw InputError("--backend", "cuda: this build has no CUDA backend (built without nvcc)");
  if (!visible) throw InputError("--backend", "cuda: no usable CUDA device is visible");
  return Backend::Cuda;
}

Backend backend_for(const Model& model, Backend requested) {
  const Backend b = resolve_backend(requested);
  if (b == Backend::Cpu) return b;
  const std::optional<GpuBackend> g = registered_gpu();
  const std::string why = g && g->unsupported ? g->unsupported(model.config()) : "";
  if (why.empty()) return b;
  if (requested != Backend::Auto) throw InputError(model.path(), why + "; use --backend cpu");
  static std::set<std::string> warned;  // under g_mutex: jobs make many contexts of one model
  std::lock_guard lock(g_mutex);
  if (warned.insert(model.path()).second) spdlog::warn("{}: {}; running on the CPU", model.path(), why);
  return Backend::Cpu;
}

std::unique_ptr<Context> new_context(const Model& model, Backend requested, int n_ctx) {
  if (backend_for(model, requested) == Backend::Cpu) return model.new_cpu_context(n_ctx);
  const std::optional<GpuBackend> g = registered_gpu();
  return g->new_context(model.shared_from_this(), n_ctx);
}

std::string backend_description(Backend resolved) {
  if (resolved == Backend::Cuda) {
    std::lock_guard lock(g_mutex);
    if (gpu()) return "CUDA (" + gpu()->device_name() + ")";
  }
  return "CPU (" + cpu_model_name() + ")";
}

}  // namespace specscope

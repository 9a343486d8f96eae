#include "engine/model/weight_checks.h"

#include <atomic>
#include <cstdint>

#include "engine/cpu/thread_pool.h"
#include "engine/util/error.h"

namespace specscope {

void check_finite(const TensorView& t, const std::string& file) {
  if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16) return;
  const int64_t n = t.numel();
  std::atomic<bool> bad{false};
  // Split into 64k-element chunks over the engine's thread team.
  const int chunks = int(std::min<int64_t>((n + 65535) / 65536, INT32_MAX));
  cpu::run_team(chunks, size_t(n), size_t(1) << 18, [&](int tid, int nt) {
    const int64_t i0 = n * tid / nt, i1 = n * (tid + 1) / nt;
    if (t.dtype == DType::F32) {
      const uint32_t* p = static_cast<const uint32_t*>(t.data);
      for (int64_t i = i0; i < i1; ++i)
        if ((p[i] & 0x7f800000u) == 0x7f800000u) bad.store(true, std::memory_order_relaxed);
    } else {
      const uint16_t* p = static_cast<const uint16_t*>(t.data);
      const uint16_t expmask = t.dtype == DType::F16 ? 0x7c00u : 0x7f80u;
      for (int64_t i = i0; i < i1; ++i)
        if ((p[i] & expmask) == expmask) bad.store(true, std::memory_order_relaxed);
    }
  });
  if (bad) throw InputError(file, "tensor '" + t.name + "' contains NaN or Inf values (corrupt weights?)");
}


}  // namespace specscope

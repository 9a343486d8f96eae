// The fast path of linear_quant (quant_int8.h): the exact-path switch, the run-time choice of integer kernels, and
// the call itself (activations quantized once on the calling thread, then rows split over threads).
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/cpu/matmul.h"
#include "engine/cpu/matmul_kernels.h"
#include "engine/cpu/product_units.h"
#include "engine/cpu/quant_int8.h"
#include "engine/cpu/thread_pool.h"

namespace specscope::cpu {

namespace {
std::atomic<bool>& exact_flag() {
  static std::atomic<bool> on{[] {
    const char* e = std::getenv("SPECSCOPE_QUANT_EXACT");
    return e != nullptr && std::string(e) == "1";
  }()};
  return on;
}
}  // namespace

bool set_quant_exact(bool on) { return exact_flag().exchange(on); }
bool quant_exact() { return exact_flag().load(std::memory_order_relaxed); }

namespace detail {

bool int8_type(DType t, Int8Type* out) {
  switch (t) {
    case DType::Q8_0: *out = Int8Type::Q8_0; return true;
    case DType::Q4_0: *out = Int8Type::Q4_0; return true;
    case DType::Q5_0: *out = Int8Type::Q5_0; return true;
    case DType::Q4_1: *out = Int8Type::Q4_1; return true;
    case DType::Q5_1: *out = Int8Type::Q5_1; return true;
    case DType::Q4_K: *out = Int8Type::Q4_K; return true;
    case DType::Q5_K: *out = Int8Type::Q5_K; return true;
    case DType::Q6_K: *out = Int8Type::Q6_K; return true;
    case DType::MXFP4: *out = Int8Type::MXFP4; return true;
    default: return false;
  }
}

namespace {
TuningOverride g_direct_ahead{"SPECSCOPE_INT8_AHEAD"};
}  // namespace

size_t int8_direct_ahead(size_t kernel_default) { return size_t(g_direct_ahead.value_or(long(kernel_default))); }
void set_int8_direct_ahead(long bytes) { g_direct_ahead.set(bytes); }

namespace {
TuningOverride g_kquant_lanes{"SPECSCOPE_KQUANT_LANES"};
}  // namespace

// The kernel type that reads t's lanes copy; t itself for the types without one.
Int8Type lanes_type(Int8Type t) {
  switch (t) {
    case Int8Type::Q8_0: return Int8Type::Q8_0_Lanes;
    case Int8Type::Q4_0: return Int8Type::Q4_0_Lanes;
    case Int8Type::Q4_K: return Int8Type::Q4_K_Lanes;
    case Int8Type::Q5_K: return Int8Type::Q5_K_Lanes;
    case Int8Type::Q6_K: return Int8Type::Q6_K_Lanes;
    default: return t;
  }
}

bool kquant_lanes_enabled() { return g_kquant_lanes.value_or(1) != 0; }
void set_kquant_lanes(long on) { g_kquant_lanes.set(on); }

bool int8_isa_supported(Int8Isa isa) {
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  switch (isa) {
    case Int8Isa::Scalar: return true;
    case Int8Isa::Avx2: return avx2;
    case Int8Isa::AvxVnni: return avx2 && __builtin_cpu_supports("avxvnni");
    case Int8Isa::Avx512Vnni:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vnni");
  }
  return false;
}

Int8RowsFn int8_rows(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::Avx2: return int8_rows_avx2;
    case Int8Isa::AvxVnni: return int8_rows_avxvnni;
    case Int8Isa::Avx512Vnni: return int8_rows_avx512vnni;
    default: return int8_rows_scalar;
  }
}

const char* int8_isa_name(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::Avx2: return "avx2";
    case Int8Isa::AvxVnni: return "avx-vnni";
    case Int8Isa::Avx512Vnni: return "avx512-vnni";
    default: return "scalar";
  }
}

// Within the family set_isa() / SPECSCOPE_MATMUL_ISA picked: "avx512" takes the zmm VNNI kernels where the CPU has
// VNNI, else the 256-bit ones; "avx2" the 256-bit ones (VNNI where the CPU has AVX-VNNI); "scalar" the reference.
Int8Isa int8_active_isa() {
  const std::string isa = active_isa();
  if (isa == "avx512" && int8_isa_supported(Int8Isa::Avx512Vnni)) return Int8Isa::Avx512Vnni;
  if (isa != "scalar") {
    if (int8_isa_supported(Int8Isa::AvxVnni)) return Int8Isa::AvxVnni;
    if (int8_isa_supported(Int8Isa::Avx2)) return Int8Isa::Avx2;
  }
  return Int8Isa::Scalar;
}

namespace {
// Below this many multiply-adds a fork costs more than it saves (as matmul_quant.cpp).
constexpr size_t kMinParallelMacs = size_t(1) << 18;
constexpr int kRowsPerUnit = 4;
}  // namespace

void linear_int8(Int8Type type, const float* X, int n, const TensorView& W, const float* bias, float* Y) {
  const Int8Product one{type, &W, bias, Y};
  linear_int8_shared(X, n, int(W.shape[1]), {&one, 1});
}

namespace {

// The products' rows in one fork of the team, product i dotted with the quantized activations act_of(i) (as wide as
// its W).
template <class ActOf>
void run_int8_products(int n, std::span<const Int8Product> products, ActOf act_of) {
  const Int8RowsFn fn = int8_rows(int8_active_isa());
  const bool lanes_on = kquant_lanes_enabled();
  // Work units: blocks of kRowsPerUnit rows of every product, one after another, shared out while the fork runs
  // (run_team_units). Each member starts at the first unit in its equal share of the weights' bytes (the types'
  // rows differ in size: Q6_K's are 1.46x Q4_K's), and every unit is computed the same way a lone call would.
  const int count = int(products.size());
  auto rows_of = [&](int i) { return int(products[i].W->shape[0]); };
  auto k_of = [&](int i) { return products[i].W->shape[1]; };
  auto units_of = [&](int i) { return (rows_of(i) + kRowsPerUnit - 1) / kRowsPerUnit; };
  auto row_bytes_of = [&](int i) { return dtype_row_bytes(products[i].W->dtype, k_of(i)); };
  const int units = detail::total_product_units(count, units_of);
  if (units == 0) return;
  size_t macs = 0, bytes = 0;
  for (int i = 0; i < count; ++i) {
    macs += size_t(rows_of(i)) * size_t(k_of(i)) * size_t(n);
    bytes += size_t(rows_of(i)) * row_bytes_of(i);
  }
  // The first unit (over all products) whose first byte is at or after byte b.
  auto first_unit_at = [&](size_t b) {
    int first = 0;  // units before product i
    size_t offset = 0;  // bytes before product i
    for (int i = 0; i < count; ++i) {
      const size_t rb = row_bytes_of(i), ub = rb * kRowsPerUnit;
      if (b < offset + size_t(rows_of(i)) * rb) return first + (b <= offset ? 0 : int((b - offset + ub - 1) / ub));
      first += units_of(i);
      offset += size_t(rows_of(i)) * rb;
    }
    return units;
  };
  run_team_units(units, macs, kMinParallelMacs, [&](int u0, int u1) {
    detail::for_each_product_units(count, u0, u1, units_of, [&](int i, int b0, int b1) {
      const Int8Product& p = products[i];
      const int m = rows_of(i);
      // Q8_0 / Q4_0 / Q4_K / Q5_K / Q6_K with a lanes copy (kquant_lanes.h): the same values, cheaper to unpack on every
      // kernel.
      const Int8Type type = lanes_on && p.W->lanes ? lanes_type(p.type) : p.type;
      const bool lanes = type != p.type;
      fn(type, static_cast<const uint8_t*>(lanes ? p.W->lanes.get() : p.W->data), row_bytes_of(i), act_of(i), p.bias,
         p.Y, m, b0 * kRowsPerUnit, std::min(m, b1 * kRowsPerUnit));
    });
  }, [&](int tid, int nt) { return first_unit_at(bytes * size_t(tid) / size_t(nt)); });
}

}  // namespace

void linear_int8_shared(const float* X, int n, int k, std::span<const Int8Product> products) {
  if (n <= 0 || products.empty()) return;
  // The calling thread's buffer: the team below only reads it, and the call returns before the next one.
  // (Captured through a reference: inside the lambda the name would denote each worker's own, empty, copy.)
  thread_local ActQ8 buffer;
  const ActQ8& act = buffer;
  quantize_act(X, n, k, &buffer);
  run_int8_products(n, products, [&](int) -> const ActQ8& { return act; });
}

void linear_int8_each(int n, std::span<const Int8Product> products) {
  if (n <= 0 || products.empty()) return;
  thread_local std::vector<ActQ8> buffers;  // the calling thread's, as linear_int8_shared's
  if (buffers.size() < products.size()) buffers.resize(products.size());
  for (size_t i = 0; i < products.size(); ++i)
    quantize_act(products[i].X, n, int(products[i].W->shape[1]), &buffers[i]);
  const std::vector<ActQ8>& acts = buffers;
  run_int8_products(n, products, [&](int i) -> const ActQ8& { return acts[size_t(i)]; });
}

}  // namespace detail
}  // namespace specscope::cpu

// Times one decoding "step" worth of linear layers (all the matmuls of a small Llama-like stack plus its LM
// head) for n = 1..64 tokens, with weights in f32, f16 and bf16, against a plain OpenBLAS sgemv/sgemm on the
// same f32 weights. Prints median milliseconds, the ratio to n = 1, the weight bytes streamed per second and
// GFLOP/s; --json FILE writes the same numbers.
//
//   matmul_bench [--model base|26m|60m|1b|all] [--dtypes f32,f16,bf16] [--ns 1,2,4,8,16,32,64] [--reps 21]
//                [--isa auto|avx512|avx2|scalar] [--no-blas] [--blas-only] [--blas-min N] [--cpu] [--json FILE]
//
// Threads: OMP_NUM_THREADS for ours, OPENBLAS_NUM_THREADS for the baseline. OpenBLAS 0.3.21 runs its SSE3
// "Prescott" kernels on Sapphire/Emerald Rapids; OPENBLAS_CORETYPE=SkylakeX gives the AVX-512 ones.
// When the cores are busy with other processes, linear() backs off to one thread (a line says so).
//
//   matmul_bench --quant q8_0,q4_k,q6_k [--ns ...] [--reps N] [--warm]
// times instead the block-quantized weights of a Llama-3.2-1B-shaped model (hidden 2048, GQA 32/8, FFN 8192,
// vocab 32000) one shape at a time on the default (integer) path: ms, weight GB/s and GMAC/s per shape and n, then
// the 1B model's linear layers per n for Q8_0 and for Q4_K_M's mix (quant_model_totals). Each shape cycles through
// enough copies of its weights (>= 96 MB) that they stream from memory, as in a forward (--warm: one copy, in
// cache where it fits: the kernels' arithmetic and the call's overheads without the memory stream).
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/util/median.h"
#include "engine/cpu/matmul.h"
#include "engine/cpu/thread_pool.h"
#include "engine/util/dtype.h"
#include "engine/util/tensor.h"

using namespace specscope;

namespace {

struct Shape {
  int out, in;
};

struct ModelSpec {
  std::string name;
  int d, ffn, layers, vocab;
  std::vector<Shape> shapes() const {
    std::vector<Shape> s;
    for (int l = 0; l < layers; ++l) {
      for (int i = 0; i < 4; ++i) s.push_back({d, d});  // q, k, v, o
      s.push_back({ffn, d});                             // gate
      s.push_back({ffn, d});                             // up
      s.push_back({d, ffn});                             // down
    }
    s.push_back({vocab, d});  // LM head
    return s;
  }
};

struct Matrix {
  Shape shape;
  std::vector<float> f32;
  std::vector<uint16_t> half;  // f16 or bf16 copy, depending on the model's dtype pass
  // An owner for the views, as a model's weights have one: bf16 weights are packed into panels (and so reach the
  // AMX tiles) only when their view says what owns them (bf16_panels_for). Without it this benchmark timed the row
  // kernel, which no model's bf16 weights take where panels apply. Reset whenever `half` is refilled.
  std::shared_ptr<const void> owner;
  TensorView view(DType t) const {
    TensorView v;
    v.dtype = t;
    v.shape = {shape.out, shape.in};
    v.data = t == DType::F32 ? static_cast<const void*>(f32.data()) : static_cast<const void*>(half.data());
    v.keep_alive = owner;
    return v;
  }
};

bool g_quant_warm = false;  // --warm: one copy of each --quant shape, so that it stays in cache
bool g_cpu_clock = false;  // --cpu: time with the process CPU clock (all threads, spinning included)

double now_s() {
  if (g_cpu_clock) {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// --quant: the shapes of a Llama-3.2-1B-like model.
struct QuantShape {
  const char* name;
  int out, in;
};
constexpr QuantShape kQuantShapes[] = {
    {"q/o 2048->2048", 2048, 2048}, {"k/v 2048->512", 512, 2048},   {"gate/up 2048->8192", 8192, 2048},
    {"down 8192->2048", 2048, 8192}, {"head 2048->32000", 32000, 2048}};

// Random codes with sane f16 scales (speed does not depend on the values, but NaN/denormal scales could).
std::vector<uint8_t> random_quant(DType t, int m, int k, std::mt19937& rng) {
  const size_t rb = dtype_row_bytes(t, k);
  std::vector<uint8_t> w(rb * size_t(m));
  for (auto& b : w) b = uint8_t(rng());
  const uint16_t d = f32_to_f16(0.01f), dmin = f32_to_f16(0.001f);
  auto put = [&](size_t at, uint16_t v) { std::memcpy(&w[at], &v, 2); };
  const size_t bb = t == DType::Q8_0 ? 34 : t == DType::Q4_K ? 144 : 210;
  for (size_t at = 0; at + bb <= w.size(); at += bb) {
    if (t == DType::Q8_0) put(at, d);
    else if (t == DType::Q4_K) put(at, d), put(at + 2, dmin);
    else put(at + 208, d);
  }
  return w;
}

// Median ms of Y = X W^T for each n, per shape and type; then the 1B model's totals.
int run_quant(const std::vector<std::string>& types, const std::vector<int>& ns, int reps) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  const int max_n = *std::max_element(ns.begin(), ns.end());
  std::vector<float> X(size_t(max_n) * 8192), Y(size_t(max_n) * 32000);
  for (auto& v : X) v = nd(rng);
  std::printf("isa %s, threads %d, reps %d (median [min] ms; GB/s and GMAC/s of the median)\n", cpu::active_isa(),
              cpu::team_size(), reps);
  // (type, shape) -> n -> median ms, and the fastest run (the machine is shared: the minimum shows the kernel's
  // speed with the least interference, the median what a forward meets).
  std::map<std::pair<std::string, int>, std::map<int, double>> ms, ms_min;
  const auto before = cpu::threading_stats();
  for (const auto& tn : types) {
    const DType t = tn == "q8_0" ? DType::Q8_0 : tn == "q4_k" ? DType::Q4_K : DType::Q6_K;
    for (int si = 0; si < int(std::size(kQuantShapes)); ++si) {
      const auto& sh = kQuantShapes[si];
      const size_t bytes = dtype_row_bytes(t, sh.in) * size_t(sh.out);
      const int copies = g_quant_warm ? 1 : int(std::max<size_t>(1, (size_t(96) << 20) / bytes + 1));
      std::vector<std::vector<uint8_t>> ws;
      std::vector<TensorView> views;
      ws.push_back(random_quant(t, sh.out, sh.in, rng));
      for (int c = 1; c < copies; ++c) ws.push_back(ws.front());  // same codes, other addresses
      for (auto& w : ws) {
        TensorView v;
        v.dtype = t;
        v.shape = {sh.out, sh.in};
        v.data = w.data();
        views.push_back(v);
      }
      std::printf("  %-5s %-19s", tn.c_str(), sh.name);
      int next = 0;
      for (int n : ns) {
        auto once = [&] {
          cpu::linear(X.data(), n, views[size_t(next)], nullptr, Y.data());
          next = (next + 1) % copies;
        };
        for (int w = 0; w < copies + 2; ++w) once();
        std::vector<double> tt;
        for (int r = 0; r < reps * std::max(1, copies / 4); ++r) {
          const double t0 = now_s();
          once();
          tt.push_back((now_s() - t0) * 1e3);
        }
        const double med = median(tt);
        const double mn = *std::min_element(tt.begin(), tt.end());
        ms[{tn, si}][n] = med;
        ms_min[{tn, si}][n] = mn;
        std::printf(" | n=%-2d %7.3f [%7.3f] ms %5.1f GB/s %6.1f GMAC/s", n, med, mn, double(bytes) / med / 1e6,
                    double(sh.out) * sh.in * n / med / 1e6);
        std::fflush(stdout);
      }
      std::printf("\n");
    }
  }
  const auto after = cpu::threading_stats();
  const int64_t par = after.parallel_calls - before.parallel_calls, off = after.backed_off_calls - before.backed_off_calls;
  if (off > 0)
    std::printf("  (fork/join back-off: %lld of %lld multi-thread-sized calls ran on one thread: cores busy)\n",
                (long long)off, (long long)(off + par));
  // The 1B model's linear layers: per layer q, o (2048->2048), k, v (2048->512), gate, up, down; 16 layers and the
  // head. Q4_K_M: Q6_K for v and down in 8 of the 16 layers (llama.cpp's use_more_bits) and for the head.
  auto have = [&](const std::string& tn) { return std::find(types.begin(), types.end(), tn) != types.end(); };
  auto total = [&](const char* label, auto&& type_of) {
    for (auto* table : {&ms, &ms_min}) {
    auto& ms = *table;
    std::printf("  %-22s %-6s", label, table == &ms_min ? "min" : "median");
    for (int n : ns) {
      double sum = 0;
      for (int l = 0; l < 16; ++l) {
        const bool more = l < 2 || l >= 14 || (l - 2) % 3 == 2;
        sum += 2 * ms[{type_of(false), 0}][n] + ms[{type_of(false), 1}][n] + ms[{type_of(more), 1}][n] +
               2 * ms[{type_of(false), 2}][n] + ms[{type_of(more), 3}][n];
      }
      sum += ms[{type_of(true), 4}][n];
      std::printf(" | n=%-2d %7.2f ms", n, sum);
    }
    std::printf("\n");
    }
  };
  std::printf("\n1B model, linear layers only (sum of the per-shape medians):\n");
  if (have("q8_0")) total("Q8_0", [](bool) { return std::string("q8_0"); });
  if (have("q4_k") && have("q6_k"))
    total("Q4_K_M (Q4_K + Q6_K)", [](bool more) { return std::string(more ? "q6_k" : "q4_k"); });
  return 0;
}

struct Row {
  std::string model, dtype, impl;
  int n;
  double ms, ms_min, ratio, gbps, gflops;
};

}  // namespace

int main(int argc, char** argv) {
  std::string model_arg = "all", json_path;
  std::vector<std::string> dtypes = {"f32", "f16", "bf16"};
  std::vector<int> ns = {1, 2, 4, 8, 16, 32, 64};
  int reps = 21;
  bool run_blas = true, run_ours = true;
  std::vector<std::string> quant;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--model") model_arg = next();
    else if (a == "--dtypes") dtypes = split(next());
    else if (a == "--ns") {
      ns.clear();
      for (auto& s : split(next())) ns.push_back(std::atoi(s.c_str()));
    } else if (a == "--reps") reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--json") json_path = next();
    else if (a == "--no-blas") run_blas = false;
    else if (a == "--quant") quant = split(next());
    else if (a == "--warm") g_quant_warm = true;
    else if (a == "--cpu") g_cpu_clock = true;
    else if (a == "--blas-only") run_ours = false;
    else if (a == "--blas-min") cpu::set_blas_min_tokens(std::atoi(next().c_str()));
    else if (a == "--isa") {
      const std::string v = next();
      cpu::set_isa(v == "avx512" ? cpu::Isa::Avx512 : v == "avx2" ? cpu::Isa::Avx2 : v == "scalar" ? cpu::Isa::Scalar
                                                                                                   : cpu::Isa::Auto);
    } else {
      std::fprintf(stderr,
                   "usage: matmul_bench [--model base|26m|60m|1b|all] [--dtypes f32,f16,bf16] [--ns 1,2,4,...] [--reps N]\n"
                   "                    [--isa auto|avx512|avx2|scalar] [--no-blas] [--blas-only] [--blas-min N]"
                   " [--cpu] [--json FILE]\n"
                   "       matmul_bench --quant q8_0,q4_k,q6_k [--ns 1,2,...] [--reps N] [--warm]\n");
      return 2;
    }
  }

  if (!quant.empty()) return run_quant(quant, ns, reps);

  std::vector<ModelSpec> models;
  // The shipped default base's widths (its k/v products are narrower, 128 outputs, under GQA).
  if (model_arg == "base" || model_arg == "all") models.push_back({"base", 384, 1024, 8, 4096});
  if (model_arg == "26m" || model_arg == "all") models.push_back({"26m", 512, 1536, 6, 8192});
  if (model_arg == "60m" || model_arg == "all") models.push_back({"60m", 768, 2048, 8, 8192});
  // Llama-3.2-1B-sized layers (q/k/v/o all square here, so ~1.2B parameters): weights stream from memory.
  if (model_arg == "1b") models.push_back({"1b", 2048, 8192, 16, 32000});
  const int max_n = *std::max_element(ns.begin(), ns.end());

  std::printf("isa %s, OpenBLAS core %s, blas_min_tokens f32 %d f16/bf16 %d, threads %d, reps %d, %s\n"
              "(median ms; min in brackets; GB/s = weight bytes / median time)\n",
              cpu::active_isa(), cpu::blas_core(), cpu::blas_min_tokens(DType::F32), cpu::blas_min_tokens(DType::F16),
              omp_get_max_threads(), reps, g_cpu_clock ? "process CPU time" : "wall time");
  std::vector<Row> rows;
  std::mt19937 rng(123);
  std::uniform_real_distribution<float> uni(-0.05f, 0.05f);

  for (const auto& spec : models) {
    std::vector<Matrix> mats;
    size_t params = 0;
    int max_dim = 0;
    for (auto s : spec.shapes()) {
      Matrix m;
      m.shape = s;
      m.f32.resize(size_t(s.out) * s.in);
      for (auto& v : m.f32) v = uni(rng);
      params += m.f32.size();
      max_dim = std::max({max_dim, s.out, s.in});
      mats.push_back(std::move(m));
    }
    std::vector<float> X(size_t(max_n) * max_dim), Y(size_t(max_n) * max_dim);
    for (auto& v : X) v = uni(rng);
    std::printf("\nmodel %s: %zu matrices, %.1fM parameters\n", spec.name.c_str(), mats.size(), params / 1e6);

    auto run_series = [&](const std::string& dtype_name, const std::string& impl, auto&& step, size_t bytes) {
      double ms1 = 0;
      std::printf("  %-5s %-8s", dtype_name.c_str(), impl.c_str());
      for (int n : ns) {
        for (int w = 0; w < 3; ++w) step(n);
        std::vector<double> t;
        for (int r = 0; r < reps; ++r) {
          const double t0 = now_s();
          step(n);
          t.push_back((now_s() - t0) * 1e3);
        }
        const double ms = median(t);
        const double mn = *std::min_element(t.begin(), t.end());
        if (n == ns.front()) ms1 = ms;
        Row row{spec.name, dtype_name, impl, n, ms, mn, ms / ms1, double(bytes) / (ms * 1e-3) / 1e9,
                2.0 * double(params) * n / (ms * 1e-3) / 1e9};
        rows.push_back(row);
        std::printf(" | n=%-2d %7.3f ms [%6.3f] x%4.2f %5.1f GB/s %5.1f GF", n, ms, mn, row.ratio, row.gbps,
                    row.gflops);
        std::fflush(stdout);
      }
      std::printf("\n");
    };

    for (const auto& dt : dtypes) {
      DType t = dt == "f16" ? DType::F16 : dt == "bf16" ? DType::BF16 : DType::F32;
      if (t != DType::F32) {
        for (auto& m : mats) {
          m.half.resize(m.f32.size());
          for (size_t i = 0; i < m.f32.size(); ++i)
            m.half[i] = t == DType::F16 ? f32_to_f16(m.f32[i]) : f32_to_bf16(m.f32[i]);
          m.owner = std::make_shared<int>(0);  // new contents: panels packed from the old ones are dropped
        }
      }
      std::vector<TensorView> views;
      for (auto& m : mats) views.push_back(m.view(t));
      if (run_ours) {
        auto step = [&](int n) {
          for (const auto& v : views) cpu::linear(X.data(), n, v, nullptr, Y.data());
        };
        const auto before = cpu::threading_stats();
        run_series(dt, "ours", step, params * dtype_size(t));
        const auto after = cpu::threading_stats();
        const int64_t par = after.parallel_calls - before.parallel_calls;
        const int64_t off = after.backed_off_calls - before.backed_off_calls;
        if (off > 0)
          std::printf("        (fork/join back-off: %lld of %lld multi-thread-sized calls ran on one thread: cores busy)\n",
                      (long long)off, (long long)(off + par));
      }
      if (run_blas && t == DType::F32) {
        auto step = [&](int n) {
          for (const auto& m : mats) {
            if (n == 1)
              cblas_sgemv(CblasRowMajor, CblasNoTrans, m.shape.out, m.shape.in, 1.f, m.f32.data(), m.shape.in,
                          X.data(), 1, 0.f, Y.data(), 1);
            else
              cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, m.shape.out, m.shape.in, 1.f, X.data(),
                          m.shape.in, m.f32.data(), m.shape.in, 0.f, Y.data(), m.shape.out);
          }
        };
        run_series(dt, "openblas", step, params * 4);
      }
    }
  }

  if (!json_path.empty()) {
    nlohmann::json j;
    j["isa"] = cpu::active_isa();
    j["blas_core"] = cpu::blas_core();
    j["blas_min_tokens_f32"] = cpu::blas_min_tokens(DType::F32);
    j["blas_min_tokens_f16"] = cpu::blas_min_tokens(DType::F16);
    j["threads"] = omp_get_max_threads();
    j["reps"] = reps;
    for (const auto& r : rows)
      j["results"].push_back({{"model", r.model}, {"dtype", r.dtype}, {"impl", r.impl}, {"n", r.n}, {"ms", r.ms},
                              {"ms_min", r.ms_min}, {"ratio", r.ratio}, {"gbps", r.gbps}, {"gflops", r.gflops}});
    std::ofstream(json_path) << j.dump(2) << "\n";
    std::printf("\nwrote %s\n", json_path.c_str());
  }
  return 0;
}

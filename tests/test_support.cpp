#include "tests/test_support.h"

#include "engine/methods/factory.h"
#include "engine/model/model.h"
#include "engine/model/config.h"
#include "engine/util/dtype.h"
#include "engine/util/error.h"
#include "engine/util/mapped_file.h"
#include "engine/model/forward.h"

#include <gtest/gtest.h>
#include <cmath>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace specscope::test {

nlohmann::json json_in_output(const std::string& out) {
  const size_t at = out.rfind('{', 0) == 0 ? 0 : out.find("\n{");
  nlohmann::json j;
  if (at == std::string::npos) return j;
  std::istringstream in(out.substr(at));
  try {
    in >> j;  // reads that one value and ignores anything after it
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json();
  }
  return j;
}

std::vector<uint8_t> random_block_matrix(GgmlType t, int m, int k, std::mt19937& rng, bool random_bytes,
                                         float scale_lo, float scale_hi) {
  const size_t rb = ggml_row_size(t, k);
  std::vector<uint8_t> bytes(size_t(m) * rb);
  if (ggml_can_quantize(t) && !random_bytes) {
    std::normal_distribution<float> nd(0.f, 1.f);
    std::vector<float> row(static_cast<size_t>(k));
    for (int r = 0; r < m; ++r) {
      for (auto& x : row) x = nd(rng);
      quantize_row(t, row.data(), bytes.data() + size_t(r) * rb, k);
    }
    return bytes;
  }
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& b : bytes) b = uint8_t(byte(rng));
  std::uniform_real_distribution<float> scale(scale_lo, scale_hi);
  const size_t bs = ggml_type_size(t);
  for (size_t off = 0; off < bytes.size(); off += bs) {
    auto put = [&](size_t at) {
      const uint16_t h = f32_to_f16(byte(rng) < 64 ? -scale(rng) : scale(rng));
      std::memcpy(bytes.data() + off + at, &h, 2);
    };
    switch (t) {
      case GgmlType::Q6_K: put(bs - 2); break;                                      // d is last
      case GgmlType::Q8_0: case GgmlType::Q4_0: case GgmlType::Q5_0: put(0); break;  // d only
      case GgmlType::MXFP4:  // an E8M0 scale byte: the power of two nearest below a scale in the range
        bytes[off] = uint8_t(128 + int(std::floor(std::log2(scale(rng))))); break;
      default: put(0), put(2);  // d, then dmin (K) or the min m (Q4_1, Q5_1)
    }
  }
  return bytes;
}

TensorView block_view(DType d, const std::vector<uint8_t>& bytes, int m, int k) {
  TensorView v;
  v.name = "w";
  v.dtype = d;
  v.shape = {m, k};
  v.data = bytes.data();
  return v;
}

// SPECSCOPE_FIXTURES_DIR moves the fixtures at run time: scripts/gpu-check.sh runs the CUDA tests on another
// machine, from a bundle that carries only the fixtures they read.
std::string scratch_dir(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("specscope_" + tag + "_" + std::to_string(::getpid()) + "_" +
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string fixture(const std::string& rel) {
  const char* moved = std::getenv("SPECSCOPE_FIXTURES_DIR");
  return std::string(moved && *moved ? moved : SPECSCOPE_FIXTURES) + "/" + rel;
}

CommandResult run_cli(const std::string& args, const std::string& env) {
  // SPECSCOPE_CLI in the environment wins over the build tree's path compiled in: a test binary carried to another
  // machine (scripts/gpu-check.sh) runs the CLI that travelled with it.
  const char* cli = std::getenv("SPECSCOPE_CLI");
  std::string cmd = (env.empty() ? "" : env + " ") + std::string(cli && *cli ? cli : SPECSCOPE_CLI) + " " + args + " 2>&1";
  CommandResult r{-1, {}};
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

}  // namespace specscope::test

#include <cmath>

namespace specscope::test {

// Regularized upper incomplete gamma Q(a, x), by series (x < a+1) or continued fraction (Numerical Recipes'
// formulation of the standard expansions).
static double gamma_q(double a, double x) {
  if (x <= 0) return 1.0;
  const double gln = std::lgamma(a);
  if (x < a + 1) {
    double ap = a, sum = 1.0 / a, del = sum;
    for (int n = 0; n < 10000; ++n) {
      ap += 1;
      del *= x / ap;
      sum += del;
      if (std::fabs(del) < std::fabs(sum) * 1e-15) break;
    }
    return 1.0 - sum * std::exp(-x + a * std::log(x) - gln);
  }
  double b = x + 1 - a, c = 1.0 / 1e-300, d = 1.0 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1.0 / d;
    double del = d * c;
    h *= del;
    if (std::fabs(del - 1.0) < 1e-15) break;
  }
  return std::exp(-x + a * std::log(x) - gln) * h;
}

double chi_square_p_value(double stat, int dof) { return gamma_q(0.5 * dof, 0.5 * stat); }

double chi_square_test(const std::vector<long>& observed, const std::vector<double>& probs, int* dof_out) {
  long total = 0;
  for (long o : observed) total += o;
  double stat = 0, pooled_e = 0;
  long pooled_o = 0;
  int cells = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    double e = probs[i] * double(total);
    if (e < 5) {
      pooled_e += e;
      pooled_o += observed[i];
      continue;
    }
    stat += (observed[i] - e) * (observed[i] - e) / e;
    ++cells;
  }
  if (pooled_e > 0) {
    if (pooled_e >= 1) {
      stat += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
      ++cells;
    } else if (pooled_o > 5) {
      stat += 1e9;  // mass where the distribution has almost none: certainly wrong
    }
  }
  int dof = std::max(cells - 1, 1);
  if (dof_out) *dof_out = dof;
  return chi_square_p_value(stat, dof);
}

double chi_square_critical(int dof, double alpha) {
  double lo = 0, hi = 10.0 * dof + 100;  // the upper tail falls from 1 to far below any alpha used
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (chi_square_p_value(mid, dof) > alpha ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double chi_square_power(double lambda, int dof, double alpha) {
  const double crit = chi_square_critical(dof, alpha), half = 0.5 * lambda;
  // The Poisson(lambda / 2) weights outside mean +- 12 sd hold under 1e-30 of the mass.
  const int j0 = std::max(0, int(half - 12 * std::sqrt(half) - 1)), j1 = int(half + 12 * std::sqrt(half) + 12);
  double power = 0;
  for (int j = j0; j <= j1; ++j) {
    const double w = std::exp(-half + j * std::log(std::max(half, 1e-300)) - std::lgamma(j + 1.0));
    power += w * chi_square_p_value(crit, dof + 2 * j);
  }
  return std::min(power, 1.0);
}

double detectable_tv(long samples, int cells, double alpha, double power) {
  double lo = 0, hi = 1;
  for (int i = 0; i < 100; ++i) {
    const double tv = 0.5 * (lo + hi);
    (chi_square_power(4.0 * double(samples) * tv * tv, cells - 1, alpha) >= power ? hi : lo) = tv;
  }
  return hi;
}

SpeculativeResult speculate_beside_vanilla(const Model& m, Method& method, const std::vector<int32_t>& prompt,
                                           const GenerateOptions& opts) {
  auto vctx = m.new_cpu_context(256);
  const auto ref = generate(m, *vctx, prompt, opts);
  auto ctx = m.new_cpu_context(256);
  auto res = generate_speculative(m, *ctx, method, prompt, opts);
  EXPECT_EQ(res.gen.tokens, ref.tokens) << "the output differs from vanilla's";
  return res;
}

void expect_config_refused(const nlohmann::json& config, const std::string& problem_part) {
  try {
    ModelConfig::from_json_text(config.dump(), "dir/config.json");
    ADD_FAILURE() << "accepted; expected an error naming " << problem_part;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "dir/config.json");
    EXPECT_NE(e.problem().find(problem_part), std::string::npos) << e.what();
  }
}

void expect_cli_refuses_config(const std::string& fixture_dir, const nlohmann::json& config,
                               const std::string& problem_part) {
  const auto r = run_cli_with_config(fixture_dir, config);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("config.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(problem_part), std::string::npos) << r.out;
}

double first_golden_prompt_error(const Model& model, const std::string& golden) {
  const nlohmann::json g = nlohmann::json::parse(read_text_file(fixture(golden)));
  const nlohmann::json& prompt = g.at("prompts").at(0);
  const auto ids = prompt.at("ids").get<std::vector<int32_t>>();
  const auto want = prompt.at("logits").get<std::vector<std::vector<float>>>();
  ForwardOutput out;
  model.new_cpu_context(64)->forward(Batch::causal(ids), out);
  double worst = 0;
  for (size_t t = 0; t < ids.size(); ++t) {
    const float* row = out.row_logits(int(t));
    double diff = 0, largest = 1;
    for (size_t i = 0; i < want[t].size(); ++i) {
      diff = std::max(diff, double(std::fabs(row[i] - want[t][i])));
      largest = std::max(largest, double(std::fabs(want[t][i])));
    }
    worst = std::max(worst, diff / largest);
  }
  return worst;
}

std::string fixture_with_config(const std::string& fixture_dir, const nlohmann::json& config) {
  const std::filesystem::path dir = scratch_dir("edited_config");
  std::filesystem::copy(fixture(fixture_dir), dir, std::filesystem::copy_options::recursive |
                                                       std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir / "config.json") << config.dump();
  return dir.string();
}

CommandResult run_cli_with_config(const std::string& fixture_dir, const nlohmann::json& config) {
  const std::filesystem::path dir = fixture_with_config(fixture_dir, config);
  CommandResult r = run_cli("run --model " + dir.string() + " --prompt hello --max-tokens 2 --no-record");
  std::filesystem::remove_all(dir);
  return r;
}

std::vector<std::vector<int32_t>> repeating_prompts(int32_t first) {
  std::vector<std::vector<int32_t>> prompts;
  for (int p = 0; p < 4; ++p) prompts.push_back({first, 300 + 11 * p, 40, 500 + p, 40, 300 + 11 * p});
  return prompts;
}

NodeCounts sps_and_pld_beside_vanilla(const Model& target, const std::string& draft_path,
                                      const std::vector<std::vector<int32_t>>& prompts) {
  MethodSpec sps;
  sps.name = "sps";
  sps.draft_path = draft_path;
  MethodSpec pld;
  pld.name = "pld";
  GenerateOptions opts;
  opts.max_tokens = 40;
  opts.stop_at_eos = false;
  NodeCounts sps_counts;
  for (const MethodSpec* spec : {&sps, &pld}) {
    SCOPED_TRACE(spec->name);
    auto method = make_method(*spec, target);
    NodeCounts counts;
    for (const auto& prompt : prompts)
      for (const auto& s : speculate_beside_vanilla(target, *method, prompt, opts).steps) {
        counts.drafted += long(s.nodes.size());
        counts.accepted += s.accepted_count();
      }
    EXPECT_GT(counts.drafted, 0);
    if (spec == &sps) sps_counts = counts;
  }
  return sps_counts;
}

}  // namespace specscope::test

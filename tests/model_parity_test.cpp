// Parity with Hugging Face transformers on the committed tiny checkpoints in tests/fixtures/models (written by
// tests/fixtures/make_fixtures.py, which also wrote each golden.json): tokenizer ids, prefill logits for every
// position and the hidden taps, incremental decoding, 64-token greedy continuations. The bf16 checkpoints are
// checked against goldens computed from their weights upcast to f32 (the engine computes in f32).
//
// Tolerance, per row: max|a - b| <= kTol * max(1, max|b|). kTol is 2e-5, tighter than the 1e-4 first asked for:
// the CPU backend's worst row was 2.4e-6 when this was written (each test prints its worst), and the goldens'
// own rounding (logits kept to 6 significant digits) is below 1e-6 of a row's max.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cpu/matmul.h"
#include "engine/model/config.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;
using Matrix = std::vector<std::vector<float>>;

constexpr double kTol = 2e-5;
// These checks run on the exact path (weights widened to f32, f32 activations, as transformers computes); the fast
// paths that round activations to bf16 (AVX512-BF16 CPUs) are held to their own stated bound below.
const bool kExactPath = (specscope::cpu::set_quant_exact(true), true);
// The bf16 fast path (engine/cpu/matmul.h): activations rounded to bf16 before every matrix product, so each
// product is off by up to 2^-8 of sum |w x|, and the errors of 7 products per layer compound through the layers.
// Held to 3% of a row's largest logit (measured worst 0.4-1% on these fixtures, printed), and the greedy choice
// must agree with transformers wherever its top-2 gap exceeds twice that.
constexpr double kFastTol = 3e-2;
constexpr int kCtx = 256;  // every fixture allows at least 512 positions; prompt + 64 tokens needs < 100

const std::vector<std::string> kModels = {"llama_bytelevel_f32", "llama_bytelevel_bf16", "llama_spm_tied_f32",
                                          "qwen2_f32",           "qwen2_bf16",           "mistral_f32",
                                          "qwen3_f32",           "qwen3_bf16",           "gemma3_f32",
                                          "gemma3_bf16",         "gemma3_vlm_f32",       "gemma3_vlm_statedict_f32",
                                          "granite_f32",         "phi3_f32",             "gemma2_f32",
                                          "qwen3moe_f32",        "qwen3moe_mixed_f32",   "mixtral_f32",
                                          "qwen2moe_f32",        "gemma3_wide_f32",      "gpt_oss_f32",
                                          "gpt_oss_mxfp4",       "deepseek_v2_f32",      "deepseek_v3_f32",
                                          "olmo2_f32",           "olmo3_f32",            "smollm3_f32"};

struct GoldenPrompt {
  std::string name, text;
  std::vector<int32_t> ids;
  Matrix logits;                    // T x vocab
  std::vector<Matrix> layer_input;  // num_layers x T x hidden
  Matrix final_norm;                // T x hidden
  std::vector<int32_t> greedy;      // 64 ids
  std::vector<float> greedy_gaps;   // top1 - top2 at each greedy step
};

struct Golden {
  json meta;  // everything but the prompts
  int num_layers = 0, hidden = 0, vocab = 0;
  std::vector<GoldenPrompt> prompts;
};

Matrix to_matrix(const json& j) {
  Matrix m;
  m.reserve(j.size());
  for (const auto& row : j) m.push_back(row.get<std::vector<float>>());
  return m;
}

const Golden& golden(const std::string& name) {
  static std::map<std::string, Golden> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  std::string path = test::fixture("models/" + name + "/golden.json");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  json j = json::parse(in);
  Golden g;
  g.num_layers = j.at("num_layers").get<int>();
  g.hidden = j.at("hidden_size").get<int>();
  g.vocab = j.at("vocab_size").get<int>();
  for (const auto& p : j.at("prompts")) {
    GoldenPrompt gp;
    gp.name = p.at("name").get<std::string>();
    gp.text = p.at("text").get<std::string>();
    gp.ids = p.at("ids").get<std::vector<int32_t>>();
    gp.logits = to_matrix(p.at("logits"));
    for (const auto& l : p.at("layer_input")) gp.layer_input.push_back(to_matrix(l));
    gp.final_norm = to_matrix(p.at("final_norm"));
    gp.greedy = p.at("greedy_ids").get<std::vector<int32_t>>();
    gp.greedy_gaps = p.at("greedy_gaps").get<std::vector<float>>();
    g.prompts.push_back(std::move(gp));
  }
  j.erase("prompts");
  g.meta = std::move(j);
  return cache.emplace(name, std::move(g)).first->second;
}

std::shared_ptr<const Model> load(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const Model>> cache;
  auto& m = cache[name];
  if (!m) m = Model::load(test::fixture("models/" + name));
  return m;
}

// Worst relative error seen per model and check, printed at the end of each test to show how much headroom the
// tolerance has.
struct ErrStats {
  double worst = 0;
  std::string where;
  void note(double rel, const std::string& w) {
    if (rel > worst) worst = rel, where = w;
  }
};

// Compares one row; `rel` receives max|a-b| / max(1, max|b|).
::testing::AssertionResult row_close(const float* a, const std::vector<float>& b, double tol, double* rel,
                                     const std::string& what) {
  double max_b = 1.0, max_d = 0.0;
  size_t worst = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    max_b = std::max(max_b, double(std::fabs(b[i])));
    double d = std::fabs(double(a[i]) - double(b[i]));
    if (!(d <= max_d)) {  // also catches NaN
      max_d = std::isnan(d) ? INFINITY : d;
      worst = i;
    }
  }
  *rel = max_d / max_b;
  if (*rel <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": max|a-b| = " << max_d << " at [" << worst << "] (engine "
                                       << a[worst] << ", transformers " << b[worst] << "), max|b| = " << max_b
                                       << ", relative " << *rel << " > " << tol;
}

int argmax(const float* row, int n) { return int(std::max_element(row, row + n) - row); }

std::string ids_str(const std::vector<int32_t>& v) {
  std::ostringstream s;
  for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
  return s.str();
}

class ModelParity : public ::testing::TestWithParam<std::string> {
 protected:
  const Golden& g() { return golden(GetParam()); }
  std::shared_ptr<const Model> model() { return load(GetParam()); }
  void report(const char* check, const ErrStats& e) {
    std::printf("[ parity   ] %s %s: worst relative error %.3g (%s)\n", GetParam().c_str(), check, e.worst,
                e.where.c_str());
  }
};

TEST_P(ModelParity, ConfigMatchesGolden) {
  auto m = model();
  const auto& meta = g().meta;
  const ModelConfig& c = m->config();
  EXPECT_EQ(c.architecture, meta.at("architecture").get<std::string>());
  EXPECT_EQ(c.num_layers, g().num_layers);
  EXPECT_EQ(c.hidden_size, g().hidden);
  EXPECT_EQ(c.vocab_size, g().vocab);
  const bool wide = GetParam() == "gemma3_wide_f32";  // Gemma-3-1B's attention: heads of 256, 2 on 1 KV head here
  EXPECT_EQ(c.num_heads, wide ? 2 : 4);
  // DeepSeek's latent attention: every head has its own key and value, 16 + 8 wide (its rotary part) and 16.
  EXPECT_EQ(c.num_kv_heads, wide ? 1 : c.mla() ? 4 : 2);
  if (wide) EXPECT_EQ(c.head_dim, 256);
  if (c.mla()) {
    EXPECT_EQ(c.head_dim, 24);
    EXPECT_EQ(c.rotary_dims(), 8);
    EXPECT_EQ(c.value_dim(), 16);
    EXPECT_EQ(c.kv_lora_rank, 32);
    EXPECT_EQ(c.q_lora_rank, GetParam() == "deepseek_v3_f32" ? 24 : 0);
  }
  // transformers' inverse frequencies: one per pair of rotated dimensions (16 everywhere but Qwen3's 32-wide heads
  // and Phi-3's partial rotary, 12 of 16).
  EXPECT_EQ(c.rotary_dims(), 2 * int(meta.at("rope_inv_freq").size()));
  EXPECT_EQ(c.tie_word_embeddings, meta.at("tie_word_embeddings").get<bool>());
  EXPECT_EQ(c.max_position_embeddings, meta.at("max_position_embeddings").get<int>());
  EXPECT_FLOAT_EQ(c.rms_norm_eps, meta.at("rms_norm_eps").get<float>());
  EXPECT_FLOAT_EQ(c.rope_theta, meta.at("rope_theta").get<float>());
  EXPECT_EQ(c.attention_bias, meta.at("qkv_bias").get<bool>());
  if (meta.at("sliding_window").is_null()) {
    EXPECT_FALSE(c.sliding_window.has_value()) << "sliding_window " << *c.sliding_window;
  } else {
    ASSERT_TRUE(c.sliding_window.has_value());
    EXPECT_EQ(*c.sliding_window, meta.at("sliding_window").get<int>());
  }
  std::string rope_type = meta.at("rope_type").get<std::string>();
  EXPECT_EQ(c.rope_scaling.type, rope_type == "default" ? "none" : rope_type);
  EXPECT_EQ(m->weights_dtype(), meta.at("weights_dtype").get<std::string>());

  // RoPE frequencies, scaling included (llama_bytelevel_*: llama3 scaling changes 7 of the 8).
  auto want = meta.at("rope_inv_freq").get<std::vector<float>>();
  auto got = rope_inv_freq(c);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::fabs(want[i])) << "inv_freq[" << i << "]";
  // YaRN's factor on every cosine and sine (gpt_oss_f32; its frequencies are rope_inv_freq above, truncate false).
  if (rope_type == "yarn") EXPECT_FLOAT_EQ(rope_attention_factor(c), meta.at("rope_attention_factor").get<float>());
  // LongRoPE's other half (phi3_f32): the long factors, which a context past the original length takes, and the
  // factor on every cosine and sine.
  if (rope_type == "longrope") {
    EXPECT_EQ(c.rope_scaling.original_max_position_embeddings,
              meta.at("rope_original_max_position_embeddings").get<int>());
    EXPECT_FLOAT_EQ(rope_attention_factor(c), meta.at("rope_attention_factor").get<float>());
    const int longer = c.rope_scaling.original_max_position_embeddings + 1;
    want = meta.at("rope_inv_freq_long").get<std::vector<float>>();
    got = rope_inv_freq(c, /*local=*/false, longer);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-5 * std::fabs(want[i])) << "long inv_freq[" << i << "]";
    EXPECT_EQ(rope_inv_freq(c, false, longer - 1), rope_inv_freq(c)) << "a context of the original length is short";
  }

  // EOS: config, generation_config and tokenizer agree on these in every fixture.
  auto eos = meta.at("eos_ids").get<std::vector<int>>();
  EXPECT_EQ(std::set<int>(m->eos_ids().begin(), m->eos_ids().end()), std::set<int>(eos.begin(), eos.end()));
}

TEST_P(ModelParity, TokenizerMatchesTransformers) {
  auto m = model();
  for (const auto& p : g().prompts) {
    auto ids = m->tokenizer().encode(p.text, true);
    EXPECT_EQ(ids_str(ids), ids_str(p.ids)) << p.name << ": " << p.text;
  }
}

TEST_P(ModelParity, PrefillLogitsAndHiddenTaps) {
  auto m = model();
  const Golden& gd = g();
  ErrStats logit_err, hidden_err;
  for (const auto& p : gd.prompts) {
    SCOPED_TRACE(p.name);
    const int T = int(p.ids.size());
    auto ctx = m->new_cpu_context(kCtx);
    Batch b = Batch::causal(p.ids);
    for (int l = 0; l < gd.num_layers; ++l) b.taps.push_back(HiddenTap::layer_input(l));
    b.taps.push_back(HiddenTap::final_norm());
    ForwardOutput out;
    ctx->forward(b, out);

    ASSERT_EQ(out.vocab, gd.vocab);
    ASSERT_EQ(out.hidden, gd.hidden);
    std::vector<int> all(T);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(out.logit_rows, all);
    ASSERT_EQ(out.logits.size(), size_t(T) * size_t(gd.vocab));
    ASSERT_EQ(out.hiddens.size(), b.taps.size());
    EXPECT_EQ(ctx->n_past(), T);

    for (int t = 0; t < T; ++t) {
      double rel;
      std::string w = p.name + " logits row " + std::to_string(t);
      EXPECT_TRUE(row_close(out.row_logits(t), p.logits[t], kTol, &rel, w));
      logit_err.note(rel, w);
    }
    for (size_t k = 0; k < b.taps.size(); ++k) {
      const bool fin = b.taps[k].kind == HiddenTap::FinalNorm;
      const Matrix& want = fin ? p.final_norm : p.layer_input[b.taps[k].layer];
      std::string tap = fin ? "final_norm" : "layer_input(" + std::to_string(b.taps[k].layer) + ")";
      ASSERT_EQ(out.hiddens[k].size(), size_t(T) * size_t(gd.hidden)) << tap;
      for (int t = 0; t < T; ++t) {
        double rel;
        std::string w = p.name + " " + tap + " row " + std::to_string(t);
        EXPECT_TRUE(row_close(out.hiddens[k].data() + size_t(t) * gd.hidden, want[t], kTol, &rel, w));
        hidden_err.note(rel, w);
      }
    }
  }
  report("prefill logits", logit_err);
  report("prefill hidden taps", hidden_err);
}

// Prefill a prefix, then feed the rest one token at a time: every row must equal the full prefill's (the golden).
// The default path on CPUs with AVX512-BF16: prefill logits within kFastTol, greedy choices equal to transformers'
// where the margin allows. (On other CPUs the default path is the exact one and this repeats the check above.)
TEST_P(ModelParity, FastPathWithinItsStatedBound) {
  auto m = model();
  const Golden& gd = g();
  const bool old = cpu::set_quant_exact(false);
  const std::string path = cpu::linear_roofline_path(m->weights().layers.front().wq.dtype);
  ErrStats err;
  int compared = 0;
  for (const auto& p : gd.prompts) {
    auto ctx = m->new_cpu_context(kCtx);
    ForwardOutput out;
    ctx->forward(Batch::causal(p.ids), out);
    for (int t = 0; t < int(p.ids.size()); ++t) {
      double rel;
      const std::string w = p.name + " logits row " + std::to_string(t);
      EXPECT_TRUE(row_close(out.row_logits(t), p.logits[t], kFastTol, &rel, w));
      err.note(rel, w);
      std::vector<float> sorted = p.logits[t];
      std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
      double max_b = 1.0;
      for (float v : p.logits[t]) max_b = std::max(max_b, double(std::fabs(v)));
      if (sorted[0] - sorted[1] > 2 * kFastTol * max_b) {
        ++compared;
        EXPECT_EQ(argmax(out.row_logits(t), gd.vocab), argmax(p.logits[t].data(), gd.vocab)) << w;
      }
    }
  }
  cpu::set_quant_exact(old);
  EXPECT_GT(compared, 0);
  std::printf("[ parity   ] %s fast path (%s): worst relative error %.3g (%s); %d greedy choices compared\n",
              GetParam().c_str(), path.c_str(), err.worst,
              err.where.c_str(), compared);
}

TEST_P(ModelParity, IncrementalDecodeMatchesPrefill) {
  auto m = model();
  const Golden& gd = g();
  ErrStats err;
  for (const auto& p : gd.prompts) {
    const int T = int(p.ids.size());
    for (int k : {1, T / 2}) {
      SCOPED_TRACE(p.name + ", prefix " + std::to_string(k));
      auto ctx = m->new_cpu_context(kCtx);
      Batch first = Batch::causal(std::span<const int32_t>(p.ids.data(), size_t(k)));
      first.taps = {HiddenTap::final_norm()};
      ForwardOutput out;
      ctx->forward(first, out);
      ASSERT_EQ(out.logits.size(), size_t(k) * size_t(gd.vocab));
      for (int t = 0; t < k; ++t) {
        double rel;
        std::string w = p.name + " prefix row " + std::to_string(t);
        EXPECT_TRUE(row_close(out.row_logits(t), p.logits[t], kTol, &rel, w));
        err.note(rel, w);
      }
      for (int t = k; t < T; ++t) {
        Batch one = Batch::causal(std::span<const int32_t>(p.ids.data() + t, 1));
        one.taps = {HiddenTap::final_norm()};
        ctx->forward(one, out);
        ASSERT_EQ(ctx->n_past(), t + 1);
        ASSERT_EQ(out.logits.size(), size_t(gd.vocab));
        double rel;
        std::string w = p.name + " step row " + std::to_string(t);
        EXPECT_TRUE(row_close(out.row_logits(0), p.logits[t], kTol, &rel, w));
        err.note(rel, w);
        ASSERT_EQ(out.hiddens.size(), 1u);
        ASSERT_EQ(out.hiddens[0].size(), size_t(gd.hidden));
        EXPECT_TRUE(row_close(out.hiddens[0].data(), p.final_norm[t], kTol, &rel, w + " final_norm"));
      }
    }
  }
  report("incremental logits", err);
}

// Greedy decoding, one token per forward after the prefill, must reproduce transformers' generate() exactly. The
// goldens were chosen so the top-1/top-2 gap is >= 0.02 at every step (golden min_greedy_gap).
TEST_P(ModelParity, GreedyContinuation) {
  auto m = model();
  const Golden& gd = g();
  for (const auto& p : gd.prompts) {
    SCOPED_TRACE(p.name);
    const int T = int(p.ids.size());
    const int n_new = int(p.greedy.size());
    ASSERT_EQ(n_new, 64);
    auto ctx = m->new_cpu_context(kCtx);
    Batch b = Batch::causal(p.ids);
    b.logit_rows = {T - 1};
    ForwardOutput out;
    ctx->forward(b, out);
    ASSERT_EQ(out.logits.size(), size_t(gd.vocab));
    std::vector<int32_t> got;
    for (int i = 0; i < n_new; ++i) {
      int32_t next = argmax(out.row_logits(0), out.vocab);
      got.push_back(next);
      if (next != p.greedy[i]) {
        ADD_FAILURE() << "step " << i << ": engine chose " << next << ", transformers " << p.greedy[i]
                      << " (transformers' top1-top2 gap there: " << p.greedy_gaps[i] << ")";
        break;
      }
      if (i + 1 == n_new) break;
      int32_t tok = next;
      ctx->forward(Batch::causal(std::span<const int32_t>(&tok, 1)), out);
      ASSERT_EQ(out.logits.size(), size_t(gd.vocab));
    }
    EXPECT_EQ(ids_str(got), ids_str(p.greedy));
    EXPECT_EQ(ctx->n_past(), T + n_new - 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelParity, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// The golden files themselves: present, for the models listed, with the shapes the tests above rely on.
TEST(ModelParityGoldens, WellFormed) {
  for (const auto& name : kModels) {
    SCOPED_TRACE(name);
    const Golden& gd = golden(name);
    EXPECT_EQ(gd.meta.at("model").get<std::string>(), name);
    EXPECT_GE(gd.prompts.size(), 3u);
    EXPECT_GE(gd.meta.at("min_greedy_gap").get<double>(), 1e-3);
    for (const auto& p : gd.prompts) {
      const size_t T = p.ids.size();
      ASSERT_EQ(p.logits.size(), T);
      for (const auto& r : p.logits) ASSERT_EQ(r.size(), size_t(gd.vocab));
      ASSERT_EQ(p.layer_input.size(), size_t(gd.num_layers));
      for (const auto& l : p.layer_input) {
        ASSERT_EQ(l.size(), T);
        for (const auto& r : l) ASSERT_EQ(r.size(), size_t(gd.hidden));
      }
      ASSERT_EQ(p.final_norm.size(), T);
      ASSERT_EQ(p.greedy.size(), 64u);
      ASSERT_EQ(p.greedy_gaps.size(), 64u);
    }
  }
}

}  // namespace
}  // namespace specscope

// Speculative Streaming (engine/model/cpu_streaming.cpp, engine/methods/streaming_method.cpp) on the tiny
// fixture tests/fixtures/streaming/tiny (make_streaming_fixture.py):
//  - the main stream matches Hugging Face transformers and every stream matches training/streaming_model.py,
//    whether the rows come in one batch, after a cache, or inside a draft tree;
//  - pruning drops exactly the rows whose early-exit transition probability is under the threshold (and their
//    subtrees) and leaves the survivors' outputs unchanged;
//  - greedy streaming equals vanilla greedy token for token with exactly one target forward per step;
//  - (at T > 0 every token follows the model's distribution: method_sampling_test.cpp);
//  - bad streaming files give InputErrors that name the file.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "engine/cpu/matmul.h"
#include "engine/formats/safetensors.h"
#include "engine/generate/generator.h"
#include "engine/heads/eagle_head.h"
#include "engine/heads/head_overhead.h"
#include "engine/heads/medusa_head.h"
#include "engine/heads/streaming_weights.h"
#include "engine/methods/factory.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/model.h"
#include "engine/util/error.h"
#include "tests/device_like_contexts.h"
#include "tests/test_support.h"

using namespace specscope;
namespace fs = std::filesystem;

namespace {

const std::string kDir = "streaming/tiny";

struct Fixture {
  std::shared_ptr<const Model> model;
  std::shared_ptr<const StreamingWeights> sw;
  std::vector<int32_t> prompt;
  std::vector<float> early_prob_next;
  std::vector<float> main_logits, stream_logits;  // [T, V], [T, G, V]
  int V = 0, G = 0;

  static const Fixture& get() {
    static Fixture f = [] {
      Fixture x;
      x.model = Model::load(test::fixture(kDir));
      x.sw = StreamingWeights::load(test::fixture(kDir), *x.model);
      std::ifstream in(test::fixture(kDir + "/expected.json"));
      auto j = nlohmann::json::parse(in);
      x.prompt = j["prompt"].get<std::vector<int32_t>>();
      x.early_prob_next = j["early_prob_next"].get<std::vector<float>>();
      auto store = TensorStore::open_file(test::fixture(kDir + "/expected.safetensors"));
      x.main_logits = store.get("main_logits").to_f32();
      x.stream_logits = store.get("stream_logits").to_f32();
      x.V = x.model->config().vocab_size;
      x.G = x.sw->config().num_streams;
      return x;
    }();
    return f;
  }
  const float* expected_stream(int pos, int j) const { return stream_logits.data() + (size_t(pos) * G + j) * V; }
  const float* expected_main(int pos) const { return main_logits.data() + size_t(pos) * V; }
  StreamingRequest request() const {
    StreamingRequest r;
    r.weights = sw.get();
    r.streams = G;
    r.msa_layers = sw->config().msa_layers;
    return r;
  }
};

// Stream j of the k-th stream row through the LM head (the forward leaves that to its caller).
std::vector<float> stream_logits(const Model& m, const ForwardOutput& out, int k, int j) {
  std::vector<float> lg(size_t(m.config().vocab_size));
  cpu::linear(out.stream_row_hidden(k, j), 1, m.weights().lm_head, nullptr, lg.data());
  return lg;
}

float max_abs_diff(const float* a, const float* b, int n) {
  float d = 0;
  for (int i = 0; i < n; ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

constexpr float kTol = 2e-3f;

}  // namespace

TEST(StreamingForward, MatchesReferenceInOneBatch) {
  const auto& f = Fixture::get();
  auto ctx = f.model->new_cpu_context(64);
  Batch b = Batch::causal(f.prompt);
  b.streaming = f.request();  // stream_rows empty: every row
  ForwardOutput out;
  ctx->forward(b, out);
  const int T = int(f.prompt.size());
  ASSERT_EQ(out.stream_rows.size(), size_t(T));
  ASSERT_EQ(out.streams, f.G);
  for (int t = 0; t < T; ++t) {
    EXPECT_LT(max_abs_diff(out.row_logits(t), f.expected_main(t), f.V), kTol) << "main stream, position " << t;
    for (int j = 0; j < f.G; ++j)
      EXPECT_LT(max_abs_diff(stream_logits(*f.model, out, t, j).data(), f.expected_stream(t, j), f.V), kTol)
          << "stream " << j << ", position " << t;
  }
  // Streams never enter the cache: the cache holds the prompt only, and a plain forward continues it exactly.
  EXPECT_EQ(ctx->n_past(), T);
}

TEST(StreamingForward, MatchesReferenceAfterACacheAndForChosenRows) {
  const auto& f = Fixture::get();
  auto ctx = f.model->new_cpu_context(64);
  const int T = int(f.prompt.size()), split = 7;
  ForwardOutput out;
  ctx->forward(Batch::causal(std::vector<int32_t>(f.prompt.begin(), f.prompt.begin() + split)), out);
  Batch b = Batch::causal(std::vector<int32_t>(f.prompt.begin() + split, f.prompt.end()));
  b.streaming = f.request();
  b.streaming->stream_rows = {1, 3};
  b.streaming->streams = 2;  // fewer streams than trained: stream j sees streams <= j only, so it is exact
  ctx->forward(b, out);
  ASSERT_EQ(out.stream_rows, (std::vector<int>{1, 3}));
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 2; ++j)
      EXPECT_LT(max_abs_diff(stream_logits(*f.model, out, k, j).data(), f.expected_stream(split + out.stream_rows[k], j), f.V), kTol);
  (void)T;
}

// A draft tree: root = prompt[8] with children {prompt[9], x}; prompt[10] under prompt[9], y under x. The rows
// on the prompt's path must reproduce the causal results; the sibling branch must not disturb them.
TEST(StreamingForward, TreeRowsSeeOnlyTheirAncestors) {
  const auto& f = Fixture::get();
  auto ctx = f.model->new_cpu_context(64);
  ForwardOutput out;
  ctx->forward(Batch::causal(std::vector<int32_t>(f.prompt.begin(), f.prompt.begin() + 8)), out);
  Batch b;
  const int32_t x = (f.prompt[9] + 17) % f.V, y = (f.prompt[10] + 5) % f.V;
  b.tokens = {f.prompt[8], f.prompt[9], x, f.prompt[10], y};
  b.positions = {8, 9, 9, 10, 10};
  const std::vector<int> parent = {-1, 0, 0, 1, 2};
  b.mask.assign(25, 0);
  for (int i = 0; i < 5; ++i)
    for (int a = i; a >= 0; a = parent[a]) b.mask[i * 5 + a] = 1;
  b.streaming = f.request();
  ctx->forward(b, out);
  for (auto [row, pos] : {std::pair{0, 8}, std::pair{1, 9}, std::pair{3, 10}}) {
    EXPECT_LT(max_abs_diff(out.row_logits(row), f.expected_main(pos), f.V), kTol) << "row " << row;
    for (int j = 0; j < f.G; ++j)
      EXPECT_LT(max_abs_diff(stream_logits(*f.model, out, row, j).data(), f.expected_stream(pos, j), f.V), kTol)
          << "row " << row << " stream " << j;
  }
}

TEST(StreamingForward, PrunesExactlyTheRowsUnderTheThreshold) {
  const auto& f = Fixture::get();
  const int T = int(f.prompt.size()), split = 4;
  // A chain tree over prompt[split..]: row r's parent is row r-1, with transition probability early_prob_next[].
  std::vector<float> probs(f.early_prob_next.begin() + split, f.early_prob_next.begin() + (T - 1));
  std::vector<float> sorted = probs;
  std::sort(sorted.begin(), sorted.end());
  for (size_t cut = 1; cut < sorted.size(); cut += 3) {
    const float threshold = 0.5f * (sorted[cut - 1] + sorted[cut]);
    auto ctx = f.model->new_cpu_context(64);
    ForwardOutput out;
    ctx->forward(Batch::causal(std::vector<int32_t>(f.prompt.begin(), f.prompt.begin() + split)), out);
    Batch b = Batch::causal(std::vector<int32_t>(f.prompt.begin() + split, f.prompt.end()));
    b.streaming = f.request();
    const int n = b.size();
    b.streaming->parent_row.resize(n);
    for (int r = 0; r < n; ++r) b.streaming->parent_row[r] = r - 1;
    b.streaming->prune_threshold = threshold;
    ctx->forward(b, out);
    ASSERT_EQ(out.pruned.size(), size_t(n));
    bool dead = false;
    std::vector<int> expect_streams;
    for (int r = 0; r < n; ++r) {
      if (r > 0) dead = dead || probs[r - 1] < threshold;  // probs[r-1]: row r's token under row r-1
      EXPECT_EQ(out.pruned[r] != 0, dead) << "row " << r << " threshold " << threshold;
      if (dead) {
        EXPECT_TRUE(std::isnan(out.row_logits(r)[0])) << "a pruned row's logits must not look valid";
      } else {
        expect_streams.push_back(r);
        EXPECT_LT(max_abs_diff(out.row_logits(r), f.expected_main(split + r), f.V), kTol) << "survivor " << r;
      }
    }
    ASSERT_EQ(out.stream_rows, expect_streams);
    for (size_t k = 0; k < expect_streams.size(); ++k)
      EXPECT_LT(max_abs_diff(stream_logits(*f.model, out, int(k), 0).data(), f.expected_stream(split + expect_streams[k], 0), f.V),
                kTol);
  }
}

namespace {

std::vector<std::vector<int32_t>> prompts(int count, int V) {
  std::mt19937 rng(5);
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> p;
    for (int j = 0; j < 4 + i % 5; ++j) p.push_back(int32_t(rng() % (V - 10)));
    out.push_back(p);
  }
  return out;
}

MethodSpec streaming_spec(std::map<std::string, std::string> opts = {}) {
  MethodSpec s;
  s.name = "streaming";
  s.options = std::move(opts);
  return s;
}

}  // namespace

TEST(StreamingMethod, GreedyEqualsVanillaWithOneForwardPerStep) {
  const auto& f = Fixture::get();
  const auto& model = *f.model;
  struct Case {
    std::string label;
    std::map<std::string, std::string> opts;
  };
  const std::vector<Case> cases = {{"defaults", {}},
                                   {"no pruning, k=3", {{"prune-threshold", "0"}, {"stream-top-k", "3"}}},
                                   {"heavy pruning", {{"prune-threshold", "0.05"}}},
                                   {"gamma 1", {{"gamma", "1"}, {"stream-top-k", "4"}}},
                                   {"a node budget", {{"stream-top-k", "4"}, {"total-tokens", "9"}}}};
  long accepted = 0, pruned = 0, steps = 0;
  for (const auto& c : cases) {
    auto method = make_method(streaming_spec(c.opts), model);
    for (const auto& prompt : prompts(20, f.V)) {
      GenerateOptions opts;
      opts.max_tokens = 40;
      opts.stop_at_eos = false;
      auto vctx = model.new_cpu_context(128);
      auto ref = generate(model, *vctx, prompt, opts);
      auto ctx = model.new_cpu_context(128);
      auto res = generate_speculative(model, *ctx, *method, prompt, opts);
      ASSERT_EQ(res.gen.tokens, ref.tokens) << c.label;
      EXPECT_EQ(ctx->forwards, uint64_t(res.steps.size())) << "one target forward per step (prefill included)";
      for (const auto& s : res.steps) {
        EXPECT_EQ(s.target_forwards, 1);
        EXPECT_EQ(s.draft_forwards, 0);
        accepted += s.accepted_count();
        for (const auto& n : s.nodes) {
          EXPECT_EQ(n.source, NodeSource::Stream);
          if (n.pruned) {
            ++pruned;
            EXPECT_EQ(n.decision, NodeDecision::Pruned);
          }
        }
        ++steps;
      }
    }
  }
  EXPECT_GT(accepted, steps / 10) << "the fitted streams should get drafts accepted";
  EXPECT_GT(pruned, 0) << "pruning never triggered";
}

// With total-tokens the tree is the budget's most probable paths of the whole k-ary tree (the product of the
// streams' probabilities along the path), and every node's parent is in it. The first drafted tree (from the
// prefill's streams) is the same context in both runs, so the two trees are compared there.
TEST(StreamingMethod, NodeBudgetKeepsTheMostProbablePathsOfTheWholeTree) {
  const auto& f = Fixture::get();
  const auto& model = *f.model;
  const std::map<std::string, std::string> shape = {{"gamma", "3"}, {"stream-top-k", "4"}, {"prune-threshold", "0"}};
  auto with = [&](const std::string& budget) {
    auto o = shape;
    o["total-tokens"] = budget;
    auto method = make_method(streaming_spec(o), model);
    GenerateOptions opts;
    opts.max_tokens = 8;
    opts.stop_at_eos = false;
    auto ctx = model.new_cpu_context(128);
    auto res = generate_speculative(model, *ctx, *method, f.prompt, opts);
    return res.steps.at(1).nodes;  // step 0 is the prefill
  };
  // A node's path from the root: its tokens, and the product of their draft probabilities. Every parent must come
  // before its child; the walk stops at one that does not (a cycle would never end).
  auto path_of = [](const std::vector<DraftNode>& tree, int id) {
    std::pair<double, std::vector<int32_t>> p{1.0, {}};
    for (int i = id; i >= 0;) {
      p.first *= tree[size_t(i)].draft_prob;
      p.second.insert(p.second.begin(), tree[size_t(i)].token);
      const int parent = tree[size_t(i)].parent;
      if (parent >= i) {
        ADD_FAILURE() << "node " << i << "'s parent " << parent << " comes after it";
        break;
      }
      i = parent;
    }
    return p;
  };
  const auto whole = with("0");
  ASSERT_EQ(whole.size(), size_t(4 + 16 + 64));
  // Each node of the whole tree by its path's joint probability, and its path as tokens.
  std::vector<std::pair<double, std::vector<int32_t>>> ranked;
  for (const auto& n : whole) ranked.push_back(path_of(whole, n.id));
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int budget : {1, 5, 23}) {
    const auto tree = with(std::to_string(budget));
    ASSERT_EQ(tree.size(), size_t(budget));
    std::set<std::vector<int32_t>> got, want;
    for (const auto& n : tree) got.insert(path_of(tree, n.id).second);
    for (int i = 0; i < budget; ++i) want.insert(ranked[size_t(i)].second);
    // Ties at the budget's edge could pick either; the fixture's probabilities have none there.
    ASSERT_GT(ranked[size_t(budget) - 1].first, ranked[size_t(budget)].first * (1 + 1e-6)) << budget;
    EXPECT_EQ(got, want) << "budget " << budget;
  }
}

TEST(StreamingMethod, VerifiesFromSummariesAndRowsOnDemandAsFromLogits) {
  // What the CUDA backend returns with streaming: summaries at T = 0 and rows on demand at T > 0 (the pruned rows'
  // marked there), made here from the CPU's logits: the same tokens and verification records as from the logits.
  const auto& f = Fixture::get();
  const auto& model = *f.model;
  for (const auto& opts_of_case : std::vector<std::map<std::string, std::string>>{{}, {{"prune-threshold", "0.05"}}}) {
    auto method = make_method(streaming_spec(opts_of_case), model);
    for (float temperature : {0.f, 0.8f}) {
      GenerateOptions opts;
      opts.max_tokens = 32;
      opts.stop_at_eos = false;
      opts.sampling.temperature = temperature;
      opts.sampling.seed = 3;
      for (const auto& prompt : prompts(8, f.V)) {
        const std::string what = "T " + std::to_string(temperature);
        SpeculativeResult got;
        if (temperature == 0.f) {
          test::SummarizingContext summarizing(model.new_cpu_context(128));
          ASSERT_NO_FATAL_FAILURE(
              test::expect_same_run_through(summarizing, model, *method, prompt, opts, 128, what, &got));
          EXPECT_EQ(summarizing.summarized_forwards, int(got.steps.size()) - 1) << what;
        } else {
          test::OnDemandRowsContext lazy(model.new_cpu_context(128));
          ASSERT_NO_FATAL_FAILURE(test::expect_same_run_through(lazy, model, *method, prompt, opts, 128, what, &got));
          EXPECT_EQ(lazy.on_demand_forwards, int(got.steps.size()) - 1) << what;
          EXPECT_LT(lazy.rows_copied, lazy.rows_offered) << what;
        }
      }
    }
  }
}

TEST(StreamingMethod, BadFilesAndOptionsAreClearErrors) {
  const auto& f = Fixture::get();
  const fs::path tmp = fs::temp_directory_path() / "specscope_streaming_bad";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  auto expect_error = [&](const std::string& dir, const std::string& needle) {
    try {
      StreamingWeights::load(dir, *f.model);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(tmp.string(), "streaming_config.json");
  {
    std::ofstream(tmp / "streaming_config.json") << "{\"num_streams\": 3, \"msa_layers\": 2";
  }
  expect_error(tmp.string(), "invalid JSON");
  {
    std::ofstream(tmp / "streaming_config.json")
        << R"({"num_streams": 3, "msa_layers": 9, "stream_rank": 8, "prune_layer": 0})";
  }
  expect_error(tmp.string(), "msa_layers");
  {
    std::ofstream(tmp / "streaming_config.json")
        << R"({"num_streams": 3, "msa_layers": 2, "stream_rank": 8, "prune_layer": 0, "total_tokens": -4})";
  }
  expect_error(tmp.string(), "total_tokens");
  {
    std::ofstream(tmp / "streaming_config.json")
        << R"({"num_streams": 3, "msa_layers": 2, "stream_rank": 16, "prune_layer": 0})";
  }
  fs::copy_file(test::fixture(kDir + "/streaming.safetensors"), tmp / "streaming.safetensors");
  expect_error(tmp.string(), "stream.down.weight");  // rank 16 in the config, 8 in the file
  // A model without streams, and options out of range.
  EXPECT_THROW(make_method(streaming_spec(), *Model::load(test::fixture("models/llama_bytelevel_f32"))), InputError);
  EXPECT_THROW(make_method(streaming_spec({{"gamma", "9"}}), *f.model), InputError);
  EXPECT_THROW(make_method(streaming_spec({{"total-tokens", "-2"}}), *f.model), InputError);
  EXPECT_THROW(make_method(streaming_spec({{"msa-layers", "3"}}), *f.model), InputError);  // streams before pruning
  EXPECT_NO_THROW(make_method(streaming_spec({{"msa-layers", "3"}, {"prune-threshold", "0"}}), *f.model));
  fs::remove_all(tmp);
}

// The overheads `info` prints are formulas; they must equal the parameter counts of real head files.
TEST(HeadOverheads, FormulasMatchTheHeadFiles) {
  const auto& f = Fixture::get();
  auto target = Model::load(test::fixture("models/llama_bytelevel_f32"));
  std::map<std::string, uint64_t> got;
  for (const auto& o : head_overheads(*target)) got[o.method] = o.parameters;
  EXPECT_EQ(got["medusa"], MedusaHeads::load(test::fixture("heads/medusa_st"), *target)->parameter_count());
  EXPECT_EQ(got["eagle1/2"], EagleHead::load(test::fixture("heads/eagle1_st"), *target)->parameter_count());
  for (const auto& o : head_overheads(*f.model, f.sw.get()))
    if (o.method == "streaming") EXPECT_EQ(o.parameters, f.sw->parameter_count());
}

// The "why" panel's numbers against the verification code (issue 20 item 1). SpS (a chain) and EAGLE-2 (a tree),
// on the shipped family, at T = 0 and T > 0 with a known seed. For every node verification looked at, the test
// recomputes what decided it on its own: the target's logits from a fresh causal forward over the committed text
// and the accepted path (no tree batch), the drafter's q from the draft model's own forward, p and q by the
// sampler's definition (process_logits, softmax), min(1, p/q) or p(x), the residual norm(max(p - q, 0)) or p with
// x zeroed, the uniform draws by replaying the seeded RNG in the order the decoder consumes it, and the bonus by
// inverse CDF. Each number is compared with what the StepRecord carries and with what the panel shows
// (sessions::explain_node). Medusa's typical acceptance gets the same check on its threshold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <ostream>

#include "engine/generate/generator.h"
#include "engine/methods/factory.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/model.h"
#include "engine/sampling/sampler.h"
#include "sessions/why_panel.h"

namespace specscope {
namespace {

const std::string kModels = std::string(SPECSCOPE_SOURCE_DIR) + "/assets/models/";
const char* kPrompt = "What does the word harbor mean?";
constexpr double kTol = 2e-5;  // a causal forward may differ from the tree batch's in the last bits

// The target's (or drafter's) logits after seq[0..n) for each n in the last `rows` + 1 prefixes.
std::vector<std::vector<float>> logits_after(const Model& m, const std::vector<int32_t>& seq, int extra) {
  auto ctx = m.new_cpu_context(0);
  Batch b = Batch::causal(seq);
  for (int i = int(seq.size()) - 1 - extra; i < int(seq.size()); ++i) b.logit_rows.push_back(i);
  ForwardOutput out;
  ctx->forward(b, out);
  const int V = m.config().vocab_size;
  std::vector<std::vector<float>> rows;
  for (int r = 0; r <= extra; ++r) rows.emplace_back(out.row_logits(r), out.row_logits(r) + V);
  return rows;
}

std::vector<double> softmax_d(const std::vector<float>& l) {
  const double mx = *std::max_element(l.begin(), l.end());
  std::vector<double> p(l.size());
  double s = 0;
  for (size_t i = 0; i < l.size(); ++i) s += p[i] = std::exp(double(l[i]) - mx);
  for (auto& x : p) x /= s;
  return p;
}

std::vector<double> processed(const std::vector<float>& l, const SamplingParams& sp) {
  const Distribution d = process_logits(l.data(), int(l.size()), sp);
  std::vector<double> p(l.size(), 0.0);
  for (size_t i = 0; i < d.ids.size(); ++i) p[size_t(d.ids[i])] = d.probs[i];
  return p;
}

void normalize(std::vector<double>& p) {
  const double s = std::accumulate(p.begin(), p.end(), 0.0);
  if (s > 0)
    for (auto& x : p) x /= s;
}

// The top 5 by probability, ties to the lower id, zeros left out.
std::vector<std::pair<int, double>> top5(const std::vector<double>& p) {
  std::vector<int> idx(p.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(), [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  std::vector<std::pair<int, double>> out;
  for (int i = 0; i < 5; ++i)
    if (p[size_t(idx[i])] > 0) out.push_back({idx[i], p[size_t(idx[i])]});
  return out;
}

void expect_bars(const std::vector<TokenProb>& got, const std::vector<std::pair<int, double>>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].token, want[i].first) << what << " bar " << i;
    EXPECT_NEAR(got[i].prob, want[i].second, kTol) << what << " bar " << i;
    EXPECT_FALSE(got[i].text.empty() && want[i].first != 0) << what << " bar " << i << " has no text";
  }
}
void expect_bars(const std::vector<sessions::WhyBar>& got, const std::vector<std::pair<int, double>>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].token, want[i].first) << what << " bar " << i;
    EXPECT_NEAR(got[i].p, want[i].second, kTol) << what << " bar " << i;
  }
}

double row(const sessions::WhyPanel& w, const char* key) {
  const auto* r = w.row(key);
  EXPECT_NE(r, nullptr) << "the panel has no row '" << key << "':\n" << w.text();
  return r ? r->number : std::nan("");
}

// What the test saw, so that each run is known to have reached the cases it is meant to check.
struct Coverage {
  int tested = 0, accepted = 0, rejected = 0, later_siblings = 0, residual_draws = 0, bonus_draws = 0, untested = 0;
};

struct Case {
  std::string method;
  float temperature;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.method << " T=" << c.temperature; }

// Walks every step of `res` with an independent reference of verification, checking node, step and panel.
Coverage check_run(const Model& target, const Model* draft, const Case& c, const SamplingParams& sp,
                   const std::vector<int32_t>& prompt, const SpeculativeResult& res) {
  Coverage cov;
  Rng rng(sp.seed);
  std::vector<int32_t> seq = prompt;
  for (const StepRecord& st : res.steps) {
    SCOPED_TRACE(c.method + " T=" + std::to_string(c.temperature) + " step " + std::to_string(st.step));
    if (st.step == 0) {  // the prefill: one draw from the target's distribution (T > 0)
      const auto l = logits_after(target, seq, 0)[0];
      if (sp.greedy()) {
        EXPECT_NEAR(st.bonus_prob, softmax_d(l)[size_t(st.bonus_token)], kTol) << "bonus_prob is the softmax at T = 0";
      } else {
        rng.uniform();
        EXPECT_NEAR(st.bonus_prob, processed(l, sp)[size_t(st.bonus_token)], kTol);
      }
      seq.insert(seq.end(), st.committed.begin(), st.committed.end());
      continue;
    }
    // The drafter's draws come first (SpS at T > 0 samples each node from q), then verification's.
    if (c.method == "sps" && !sp.greedy())
      for (size_t i = 0; i < st.nodes.size(); ++i) rng.uniform();
    std::vector<int32_t> path_tokens;
    for (int id : st.accepted_path) path_tokens.push_back(st.nodes[size_t(id)].token);
    std::vector<int32_t> full = seq;
    full.insert(full.end(), path_tokens.begin(), path_tokens.end());
    const auto tl = logits_after(target, full, int(path_tokens.size()));
    const auto dl = draft ? logits_after(*draft, full, int(path_tokens.size())) : decltype(tl){};

    int cur = -1;
    for (size_t level = 0;; ++level) {
      std::vector<int> children;
      for (const auto& n : st.nodes)
        if (n.parent == cur && !n.pruned) children.push_back(n.id);
      int accepted = -1;
      if (sp.greedy()) {
        const auto p = softmax_d(tl[level]);
        const int best = int(std::max_element(p.begin(), p.end()) - p.begin());
        for (int id : children) {
          const DraftNode& n = st.nodes[size_t(id)];
          EXPECT_EQ(n.rule, VerifyRule::Greedy);
          EXPECT_NEAR(n.target_prob, p[size_t(n.token)], kTol);
          expect_bars(n.target_top_k, top5(p), "target top-k of node " + std::to_string(id));
          const bool acc = accepted < 0 && n.token == best;
          EXPECT_EQ(n.decision, acc ? NodeDecision::Accepted : NodeDecision::Rejected) << "node " << id;
          if (acc) accepted = id;
          ++cov.tested;
          ++(acc ? cov.accepted : cov.rejected);
          const auto w = sessions::explain_node(st, id);
          EXPECT_EQ(row(w, "argmax"), best) << w.text();
          EXPECT_EQ(row(w, "drafted"), n.token);
          EXPECT_NEAR(row(w, "p"), p[size_t(n.token)], kTol);
          expect_bars(w.top_k, top5(p), "panel top-k of node " + std::to_string(id));
          EXPECT_EQ(w.row("outcome")->value, acc ? "accepted" : "rejected");
          EXPECT_TRUE(w.missing.empty()) << w.missing;
        }
        if (accepted < 0) {
          EXPECT_EQ(st.bonus_token, best);
          EXPECT_NEAR(st.bonus_prob, p[size_t(best)], kTol) << "bonus_prob is the softmax at T = 0, at every step";
          EXPECT_TRUE(st.residual_top_k.empty());
        }
      } else {
        const auto p0 = processed(tl[level], sp);
        auto p = p0;
        const bool sampled = c.method == "sps";  // SpS samples from q; EAGLE-2 picks its top-k by rule
        const auto q = sampled ? processed(dl[level], sp) : std::vector<double>{};
        bool tried = false;
        int last_tested = -1;
        for (int id : children) {
          const DraftNode& n = st.nodes[size_t(id)];
          EXPECT_EQ(n.rule, sampled ? VerifyRule::Sampled : VerifyRule::Deterministic) << "node " << id;
          expect_bars(n.target_top_k, top5(p0), "target top-k of node " + std::to_string(id));
          if (accepted >= 0) {  // after an accepted sibling: never tested
            EXPECT_EQ(n.decision, NodeDecision::NotReached);
            EXPECT_TRUE(std::isnan(n.u));
            const auto w = sessions::explain_node(st, id);
            EXPECT_NE(w.verdict.find("Not tested"), std::string::npos) << w.text();
            ++cov.untested;
            continue;
          }
          EXPECT_NEAR(n.target_prob, p0[size_t(n.token)], kTol);
          const size_t x = size_t(n.token);
          double a = p[x];
          if (sampled) {
            EXPECT_NEAR(n.draft_prob, q[x], kTol) << "q(x) is the draft model's processed probability";
            a = q[x] > 0 ? std::min(1.0, p[x] / q[x]) : 0.0;
          }
          const double u = rng.uniform();
          EXPECT_NEAR(n.tested_prob, p[x], kTol) << "node " << id;
          EXPECT_NEAR(n.accept_prob, a, kTol) << "node " << id;
          EXPECT_EQ(n.u, float(u)) << "node " << id << ": u is the RNG's next draw";
          // The recorded decision follows u < a; a draw within rounding of a is left to the record.
          const bool acc = std::fabs(u - a) < 1e-5 ? n.decision == NodeDecision::Accepted : u < a;
          EXPECT_EQ(n.decision, acc ? NodeDecision::Accepted : NodeDecision::Rejected) << "node " << id << " u " << u << " a " << a;
          ++cov.tested;
          tried = true;
          last_tested = id;
          if (std::fabs(p[x] - p0[x]) > 1e-7) ++cov.later_siblings;
          const auto w = sessions::explain_node(st, id);
          EXPECT_NEAR(row(w, "u"), u, 1e-6) << w.text();
          EXPECT_NEAR(row(w, "accept"), a, kTol) << w.text();
          EXPECT_NEAR(row(w, "p"), p0[x], kTol);
          if (sampled) EXPECT_NEAR(row(w, "q"), q[x], kTol);
          if (std::fabs(p[x] - p0[x]) > 1e-7) EXPECT_NEAR(row(w, "tested_p"), p[x], kTol) << w.text();
          expect_bars(w.top_k, top5(p0), "panel top-k of node " + std::to_string(id));
          EXPECT_EQ(w.row("outcome")->value, acc ? "accepted" : "rejected");
          EXPECT_TRUE(w.missing.empty()) << w.missing;
          if (n.decision == NodeDecision::Accepted) {
            accepted = id;
            ++cov.accepted;
            continue;
          }
          ++cov.rejected;
          if (sampled) {
            std::vector<double> r(p.size());
            for (size_t i = 0; i < p.size(); ++i) r[i] = std::max(p[i] - q[i], 0.0);
            if (std::accumulate(r.begin(), r.end(), 0.0) > 0) p = r;
          } else {
            p[x] = 0;
          }
          normalize(p);
        }
        if (accepted < 0) {
          // The bonus: the next draw, by inverse CDF over the distribution left (the residual after a rejection).
          const double u = rng.uniform();
          double cum = 0;
          int drawn = -1;
          for (size_t i = 0; i < p.size() && drawn < 0; ++i)
            if (p[i] > 0 && u < (cum += p[i])) drawn = int(i);
          EXPECT_EQ(st.bonus_token, drawn);
          EXPECT_NEAR(st.bonus_prob, p[size_t(std::max(drawn, 0))], kTol);
          EXPECT_EQ(st.bonus_source, tried ? BonusSource::Residual : BonusSource::Target);
          ++cov.bonus_draws;
          if (tried) {
            ++cov.residual_draws;
            expect_bars(st.residual_top_k, top5(p), "residual top-k");
            const auto w = sessions::explain_node(st, last_tested);
            EXPECT_EQ(row(w, "drawn"), drawn) << w.text();
            expect_bars(w.residual, top5(p), "panel residual");
            const auto marked = std::find_if(w.residual.begin(), w.residual.end(), [](const auto& b) { return b.marked; });
            if (marked != w.residual.end()) EXPECT_EQ(marked->token, drawn);
          } else {
            EXPECT_TRUE(st.residual_top_k.empty());
          }
        }
      }
      if (accepted < 0) break;
      if (level >= st.accepted_path.size()) {
        ADD_FAILURE() << "the reference accepted more than the record's path";
        break;
      }
      EXPECT_EQ(st.accepted_path[level], accepted) << "the record's accepted path";
      cur = accepted;
    }
    seq.insert(seq.end(), st.committed.begin(), st.committed.end());
  }
  return cov;
}

class WhyPanelAgainstVerification : public ::testing::TestWithParam<Case> {};

TEST_P(WhyPanelAgainstVerification, EveryVerifiedNodeMatchesAnIndependentRecomputation) {
  const Case c = GetParam();
  auto target = Model::load(kModels + "base");
  std::shared_ptr<const Model> draft;
  MethodSpec spec;
  spec.name = c.method;
  if (c.method == "sps") {
    spec.draft_path = kModels + "draft";
    draft = Model::load(spec.draft_path);
  } else {
    spec.head_path = kModels + "eagle1";
  }
  auto method = make_method(spec, *target);
  GenerateOptions opts;
  opts.max_tokens = 40;
  opts.sampling.temperature = c.temperature;
  opts.sampling.seed = 20;
  const auto prompt = encode_prompt(*target, kPrompt, true);
  auto ctx = target->new_cpu_context(0);
  const auto res = generate_speculative(*target, *ctx, *method, prompt, opts);
  ASSERT_GE(res.steps.size(), 4u);
  const Coverage cov = check_run(*target, draft.get(), c, opts.sampling, prompt, res);
  if (HasFatalFailure()) return;
  std::printf("[why] %s T=%.1f: %d nodes tested (%d accepted, %d rejected), %d later siblings, %d untested, %d bonus "
              "draws (%d from a residual)\n",
              c.method.c_str(), double(c.temperature), cov.tested, cov.accepted, cov.rejected, cov.later_siblings,
              cov.untested, cov.bonus_draws, cov.residual_draws);
  // The run reached what it is meant to check.
  EXPECT_GT(cov.accepted, 0);
  EXPECT_GT(cov.rejected, 0);
  if (c.temperature > 0) {
    EXPECT_GT(cov.residual_draws, 0) << "no rejection ended a step: the residual went unchecked";
    if (c.method == "eagle2") EXPECT_GT(cov.later_siblings, 0) << "no sibling met what an earlier rejection left";
  }
}

INSTANTIATE_TEST_SUITE_P(ChainAndTree, WhyPanelAgainstVerification,
                         ::testing::Values(Case{"sps", 0.f}, Case{"sps", 1.f}, Case{"eagle2", 0.f}, Case{"eagle2", 1.f}),
                         [](const auto& info) {
                           return info.param.method + (info.param.temperature > 0 ? "_sampled" : "_greedy");
                         });

// Medusa's lossy typical acceptance: each node is judged by p(x) against min(epsilon, alpha * exp(-H(p))), where p is
// the target's processed distribution at its parent.
TEST(WhyPanelTypical, TheThresholdAndTheVerdictMatchTheTargetsEntropy) {
  auto target = Model::load(kModels + "base");
  MethodSpec spec{"medusa", "", kModels + "medusa", {{"lossy-typical", "1"}}};
  auto method = make_method(spec, *target);
  GenerateOptions opts;
  opts.max_tokens = 24;
  opts.sampling.temperature = 0.7f;
  opts.sampling.seed = 3;
  const auto prompt = encode_prompt(*target, kPrompt, true);
  auto ctx = target->new_cpu_context(0);
  const auto res = generate_speculative(*target, *ctx, *method, prompt, opts);
  std::vector<int32_t> seq = prompt;
  int checked = 0, passed = 0;
  for (const StepRecord& st : res.steps) {
    if (st.step > 0) {
      std::vector<int32_t> path_tokens;
      for (int id : st.accepted_path) path_tokens.push_back(st.nodes[size_t(id)].token);
      std::vector<int32_t> full = seq;
      full.insert(full.end(), path_tokens.begin(), path_tokens.end());
      const auto tl = logits_after(*target, full, int(path_tokens.size()));
      for (size_t level = 0; level <= path_tokens.size(); ++level) {
        const int parent = level == 0 ? -1 : st.accepted_path[level - 1];
        const auto p = processed(tl[level], opts.sampling);
        double h = 0;
        for (double x : p)
          if (x > 0) h -= x * std::log(x);
        const double thr = std::min(0.09, 0.3 * std::exp(-h));
        for (const auto& n : st.nodes) {
          if (n.parent != parent || n.pruned) continue;
          EXPECT_EQ(n.rule, VerifyRule::Typical);
          const auto w = sessions::explain_node(st, n.id);
          EXPECT_NEAR(row(w, "threshold"), thr, 1e-4) << w.text();
          EXPECT_NEAR(row(w, "p"), p[size_t(n.token)], kTol);
          expect_bars(w.top_k, top5(p), "typical top-k");
          const bool pass = p[size_t(n.token)] > thr;
          EXPECT_NE(w.verdict.find(pass ? "passed" : "failed"), std::string::npos) << w.verdict;
          EXPECT_EQ(n.decision == NodeDecision::Rejected, !pass) << w.text();
          ++checked;
          passed += pass;
        }
      }
    }
    seq.insert(seq.end(), st.committed.begin(), st.committed.end());
  }
  EXPECT_GT(checked, 10);
  EXPECT_GT(passed, 0);
  EXPECT_LT(passed, checked);
}

// SpS's confidence cut (sps:confidence-threshold): the panel of every draft the drafter gave less than the cut says the
// branch stopped there, and no other node's does. Greedy, the shipped family, so the chains both reach gamma and stop
// short of it.
TEST(WhyPanelCut, EveryBranchTheDrafterCutSaysSoAndNoOtherDoes) {
  auto target = Model::load(kModels + "base");
  const float cut = 0.6f;
  GenerateOptions opts;
  opts.max_tokens = 40;
  const auto prompt = encode_prompt(*target, kPrompt, true);
  int cut_nodes = 0, full_chains = 0;
  for (const char* threshold : {"0.6", "0"}) {
    MethodSpec spec{"sps", kModels + "draft-small", "", {{"gamma", "5"}, {"confidence-threshold", threshold}}};
    auto method = make_method(spec, *target);
    auto ctx = target->new_cpu_context(0);
    const auto res = generate_speculative(*target, *ctx, *method, prompt, opts);
    const bool with_cut = std::string(threshold) != "0";
    for (const StepRecord& st : res.steps) {
      if (st.step == 0) continue;
      EXPECT_EQ(std::isnan(st.draft_cut), !with_cut);
      for (const auto& n : st.nodes) {
        const auto w = sessions::explain_node(st, n.id);
        const bool unsure = with_cut && n.draft_prob < cut;
        ASSERT_EQ(w.row("cut") != nullptr, unsure) << w.text();
        const bool leaf = std::none_of(st.nodes.begin(), st.nodes.end(), [&](const auto& m) { return m.parent == n.id; });
        if (unsure) {
          EXPECT_TRUE(leaf) << "a cut branch has nothing drafted after it";
          EXPECT_NEAR(row(w, "cut"), cut, 1e-7);
          EXPECT_NE(w.verdict.find("below the confidence cut 0.6000"), std::string::npos) << w.verdict;
          ++cut_nodes;
        }
      }
      if (with_cut && st.nodes.size() == 5) ++full_chains;
    }
  }
  EXPECT_GT(cut_nodes, 2) << "no chain was cut: the test proved nothing";
  EXPECT_GT(full_chains, 0) << "every chain was cut: the threshold is not what decides";
}

}  // namespace
}  // namespace specscope

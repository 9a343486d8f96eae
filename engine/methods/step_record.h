#pragma once
// The StepRecord: everything that happened in one target forward of a decoding method — the draft tree, how
// each node was verified, what was committed, and what it cost. The GUI draws it, the session store writes
// it, the CLI prints it. Plain data, no behaviour.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace specscope {

enum class NodeSource : uint8_t { DraftModel, EagleHead, MedusaHead, NgramPool, PromptLookup, Stream, Jacobi };
enum class NodeDecision : uint8_t { NotReached, Accepted, Rejected, Pruned };
enum class BonusSource : uint8_t { Target, Residual };
// How the children of a node were verified (engine/methods/verify.h), in the papers' terms:
//  Greedy: the target's argmax against the drafted token. Sampled: children drawn from the drafter's q, accepted
//  with min(1, p/q), the residual norm(max(p - q, 0)) after a rejection. Deterministic: children the drafter
//  chose by rule (EAGLE-2's top-k, n-gram lookups), accepted with p(x), then x zeroed. Typical: Medusa's lossy
//  typical acceptance, p(x) against a threshold. Unrecorded: never verified, or recorded before schema 4.
enum class VerifyRule : uint8_t { Unrecorded, Greedy, Sampled, Deterministic, Typical };

const char* to_string(NodeSource s);
const char* to_string(NodeDecision d);
const char* to_string(BonusSource s);
const char* to_string(VerifyRule r);

// One bar of a distribution's top-k: a token, its text (for display; replay has no tokenizer) and probability.
struct TokenProb {
  int32_t token = -1;
  std::string text;
  float prob = 0.f;
  bool operator==(const TokenProb&) const = default;
};
// Bars kept per distribution: enough to show what the target wanted, small enough to record at every node.
inline constexpr int kWhyTopK = 5;

inline constexpr float kNoValue = std::numeric_limits<float>::quiet_NaN();

struct DraftNode {
  int id = 0;           // index in StepRecord::nodes
  int parent = -1;      // -1: the step's root (the last committed token)
  int depth = 1;        // 1 for the root's children
  int32_t token = 0;
  std::string text;     // the token's text, for display
  float draft_prob = kNoValue;  // the drafter's probability of this token (its confidence); NaN when none
  float cum_score = kNoValue;   // cumulative log-probability used to build the tree (EAGLE-2/3)
  NodeSource source = NodeSource::DraftModel;
  int source_index = 0;  // head index (Medusa), stream (Streaming), n-gram length (PLD), ...
  bool pruned = false;   // dropped before verification
  // Verification.
  float target_prob = kNoValue;  // the target's (processed) probability of this token at its parent
  float accept_prob = kNoValue;  // the acceptance probability used: 1/0 (greedy), min(1, p/q), p(x), threshold
  NodeDecision decision = NodeDecision::NotReached;
  // Why (schema 4): what the inspector's "why" panel shows. Set on every child of a node whose target
  // distribution verification looked at, tested or not.
  VerifyRule rule = VerifyRule::Unrecorded;
  // Sampled / Deterministic, when tested: p(x) in the distribution it was tested against. Equals target_prob
  // for the first sibling tried; a later sibling meets what the earlier rejections left (the residual).
  float tested_prob = kNoValue;
  float u = kNoValue;  // the uniform draw: accepted iff u < accept_prob (Sampled / Deterministic, when tested)
  // The top kWhyTopK of the distribution target_prob comes from, at the parent: the softmax at T = 0, the
  // processed p at T > 0. The same list on every sibling.
  std::vector<TokenProb> target_top_k;
};

struct StepTimings {  // microseconds
  int64_t draft_us = 0, verify_forward_us = 0, verify_us = 0, kv_update_us = 0;
  int64_t total_us() const { return draft_us + verify_forward_us + verify_us + kv_update_us; }
};

struct StepRecord {
  int step = 0;
  std::string method;
  int position = 0;          // sequence position of the root token
  int32_t root_token = -1;   // the last committed token, fed at this step's forward (-1 for the prefill step)
  std::vector<DraftNode> nodes;
  std::vector<int> accepted_path;      // node ids, root to leaf
  int32_t bonus_token = -1;            // sampled from the target at the end of the accepted path
  std::string bonus_text;
  BonusSource bonus_source = BonusSource::Target;
  float bonus_prob = kNoValue;         // its probability under the distribution it was drawn from
  // bonus_source Residual: the top kWhyTopK of the residual the bonus was drawn from (schema 4; else empty).
  std::vector<TokenProb> residual_top_k;
  std::vector<int32_t> committed;      // accepted draft tokens then the bonus (cut at EOS / the token limit)
  StepTimings timings;
  int target_forwards = 0, target_tokens = 0, draft_forwards = 0, draft_tokens = 0;
  bool lossy = false;                  // verification was not distribution-preserving (typical acceptance)
  // SpS's confidence cut (sps:confidence-threshold; schema 5): a branch stopped after the first draft the drafter
  // gave less than this probability. NaN: the method cuts nothing (or the step was recorded before schema 5).
  float draft_cut = kNoValue;
  // Mixtures of experts (schema 6): the distinct experts the step's target forward ran, averaged over the model's
  // expert layers. A one-token step runs the k each token picks; a verified tree's rows pick more, and every expert
  // any row picked has its weights read, which is why a tree costs more on these models than on a dense one.
  // NaN: a dense target, or a step recorded before schema 6.
  float experts_per_layer = kNoValue;

  int accepted_count() const { return int(accepted_path.size()); }
  int verified_count() const;  // nodes that entered verification (not pruned)
};

// The text of each token a step committed and the node it was accepted from: the accepted drafts' nodes (their
// index), then the bonus (node -1). A path index outside the nodes, which only a damaged store holds, reads as the
// bonus does. What the views that show a step token by token read (the app's text views, the web page's document).
struct CommittedText {
  std::string text;
  int node = -1;
};
std::vector<CommittedText> committed_texts(const StepRecord& s);

struct RunSummary {
  std::string method;
  int steps = 0;                 // target-forward steps after the prefill
  int new_tokens = 0;
  int target_forwards = 0;       // including the prefill
  int draft_forwards = 0;
  double tau = 0;                // EAGLE's τ: accepted drafts + 1 (the bonus) per decoding step
  std::vector<double> acceptance_by_depth;  // P(accept at depth d | depth d-1 accepted and a node was tried)
  // EAGLE's n-α, defined on chain drafts: the acceptance rate of a draft whose input held n features the
  // head predicted itself, i.e. the chain's depth n+1. Empty unless every step drafted a chain (for EAGLE
  // heads: --draft-top-k 1).
  std::vector<double> n_alpha;
  std::vector<long> accepted_length_histogram;
  double wall_seconds = 0, prefill_seconds = 0, decode_seconds = 0;
  double tokens_per_second = 0;  // new tokens / decode seconds
  double draft_seconds = 0, verify_seconds = 0;
  double speedup_vs_vanilla = kNoValue;
  std::string stop_reason;
};

RunSummary summarize(const std::string& method, const std::vector<StepRecord>& steps);

}  // namespace specscope

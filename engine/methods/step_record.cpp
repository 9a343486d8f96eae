#include "engine/methods/step_record.h"

#include <algorithm>

namespace specscope {

const char* to_string(NodeSource s) {
  switch (s) {
    case NodeSource::DraftModel: return "draft_model";
    case NodeSource::EagleHead: return "eagle_head";
    case NodeSource::MedusaHead: return "medusa_head";
    case NodeSource::NgramPool: return "ngram_pool";
    case NodeSource::PromptLookup: return "prompt_lookup";
    case NodeSource::Stream: return "stream";
    case NodeSource::Jacobi: return "jacobi";
  }
  return "?";
}

const char* to_string(NodeDecision d) {
  switch (d) {
    case NodeDecision::NotReached: return "not_reached";
    case NodeDecision::Accepted: return "accepted";
    case NodeDecision::Rejected: return "rejected";
    case NodeDecision::Pruned: return "pruned";
  }
  return "?";
}

const char* to_string(BonusSource s) { return s == BonusSource::Target ? "target" : "residual"; }

const char* to_string(VerifyRule r) {
  switch (r) {
    case VerifyRule::Unrecorded: return "unrecorded";
    case VerifyRule::Greedy: return "greedy";
    case VerifyRule::Sampled: return "sampled";
    case VerifyRule::Deterministic: return "deterministic";
    case VerifyRule::Typical: return "typical";
  }
  return "?";
}

std::vector<CommittedText> committed_texts(const StepRecord& s) {
  std::vector<CommittedText> out;
  out.reserve(s.committed.size());
  for (size_t k = 0; k < s.committed.size(); ++k) {
    const int n = k < s.accepted_path.size() ? s.accepted_path[k] : -1;
    if (n >= 0 && size_t(n) < s.nodes.size()) out.push_back({s.nodes[size_t(n)].text, n});
    else out.push_back({s.bonus_text, -1});
  }
  return out;
}

int StepRecord::verified_count() const {
  return int(std::count_if(nodes.begin(), nodes.end(), [](const DraftNode& n) { return !n.pruned; }));
}

RunSummary summarize(const std::string& method, const std::vector<StepRecord>& steps) {
  RunSummary s;
  s.method = method;
  std::vector<long> tried, accepted;
  long decode_tokens = 0;
  for (const auto& r : steps) {
    s.target_forwards += r.target_forwards;
    s.draft_forwards += r.draft_forwards;
    s.new_tokens += int(r.committed.size());
    s.draft_seconds += r.timings.draft_us * 1e-6;
    s.verify_seconds += (r.timings.verify_forward_us + r.timings.verify_us + r.timings.kv_update_us) * 1e-6;
    if (r.root_token < 0) continue;  // the prefill step is not a decoding step
    ++s.steps;
    decode_tokens += r.accepted_count() + 1;  // EAGLE's τ: accepted drafts + the bonus, even when EOS ends the run
    const int acc = r.accepted_count();
    if (int(s.accepted_length_histogram.size()) <= acc) s.accepted_length_histogram.resize(acc + 1, 0);
    s.accepted_length_histogram[acc]++;
    // Per depth: was any node at depth d tried (reached), and was one accepted.
    int max_depth = 0;
    for (const auto& n : r.nodes) max_depth = std::max(max_depth, n.depth);
    if (int(tried.size()) < max_depth) {
      tried.resize(max_depth, 0);
      accepted.resize(max_depth, 0);
    }
    for (int d = 1; d <= max_depth; ++d) {
      bool reached = std::any_of(r.nodes.begin(), r.nodes.end(), [&](const DraftNode& n) {
        return n.depth == d && (n.decision == NodeDecision::Accepted || n.decision == NodeDecision::Rejected);
      });
      if (reached) {
        tried[d - 1]++;
        if (acc >= d) accepted[d - 1]++;
      }
    }
  }
  s.tau = s.steps ? double(decode_tokens) / s.steps : 0;
  bool all_chains = s.steps > 0;
  for (const auto& r : steps) {
    std::vector<int> children(r.nodes.size() + 1, 0);
    for (const auto& n : r.nodes) all_chains &= ++children[n.parent + 1] <= 1;
  }
  for (size_t d = 0; d < tried.size(); ++d) s.acceptance_by_depth.push_back(tried[d] ? double(accepted[d]) / tried[d] : 0);
  if (all_chains) s.n_alpha = s.acceptance_by_depth;
  return s;
}

}  // namespace specscope

#include "engine/methods/step_record_json.h"

#include <charconv>
#include <cstdlib>

namespace specscope {

namespace {
// NaN is not JSON: absent values become null.
nlohmann::json num(float v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }
nlohmann::json num(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }
// A float as the shortest decimal that reads back as the same float: a top-k list is printed at every node,
// and a float widened to double would print 17 digits.
nlohmann::json short_num(float v) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf - 1, v).ptr;
  *end = '\0';
  return std::strtod(buf, nullptr);
}
}  // namespace

nlohmann::json to_json(const std::vector<TokenProb>& bars) {
  if (bars.empty()) return nullptr;  // not recorded (or nothing to show): absent, like a NaN
  nlohmann::json out = nlohmann::json::array();
  for (const auto& b : bars) out.push_back({b.token, b.text, short_num(b.prob)});
  return out;
}

nlohmann::json to_json(const StepRecord& r) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : r.nodes)
    nodes.push_back({{"id", n.id},
                     {"parent", n.parent},
                     {"depth", n.depth},
                     {"token", n.token},
                     {"text", n.text},
                     {"draft_prob", num(n.draft_prob)},
                     {"cum_score", num(n.cum_score)},
                     {"source", to_string(n.source)},
                     {"source_index", n.source_index},
                     {"pruned", n.pruned},
                     {"target_prob", num(n.target_prob)},
                     {"accept_prob", num(n.accept_prob)},
                     {"decision", to_string(n.decision)},
                     {"verify_rule", n.rule == VerifyRule::Unrecorded ? nlohmann::json(nullptr) : to_string(n.rule)},
                     {"tested_prob", num(n.tested_prob)},
                     {"u", num(n.u)},
                     {"target_top_k", to_json(n.target_top_k)}});
  return {{"type", "step"},
          {"step", r.step},
          {"method", r.method},
          {"position", r.position},
          {"root_token", r.root_token},
          {"nodes", nodes},
          {"accepted_path", r.accepted_path},
          {"bonus_token", r.bonus_token},
          {"bonus_text", r.bonus_text},
          {"bonus_source", to_string(r.bonus_source)},
          {"bonus_prob", num(r.bonus_prob)},
          {"residual_top_k", to_json(r.residual_top_k)},
          {"committed", r.committed},
          {"timings_us",
           {{"draft", r.timings.draft_us},
            {"verify_forward", r.timings.verify_forward_us},
            {"verify", r.timings.verify_us},
            {"kv_update", r.timings.kv_update_us}}},
          {"target_forwards", r.target_forwards},
          {"target_tokens", r.target_tokens},
          {"draft_forwards", r.draft_forwards},
          {"draft_tokens", r.draft_tokens},
          {"lossy", r.lossy},
          {"draft_cut", num(r.draft_cut)},
          {"experts_per_layer", num(r.experts_per_layer)}};
}

nlohmann::json to_json(const RunSummary& s) {
  return {{"type", "summary"},
          {"method", s.method},
          {"steps", s.steps},
          {"new_tokens", s.new_tokens},
          {"target_forwards", s.target_forwards},
          {"draft_forwards", s.draft_forwards},
          {"tau", s.tau},
          {"acceptance_by_depth", s.acceptance_by_depth},
          {"n_alpha", s.n_alpha},
          {"accepted_length_histogram", s.accepted_length_histogram},
          {"wall_seconds", s.wall_seconds},
          {"prefill_seconds", s.prefill_seconds},
          {"decode_seconds", s.decode_seconds},
          {"tokens_per_second", s.tokens_per_second},
          {"draft_seconds", s.draft_seconds},
          {"verify_seconds", s.verify_seconds},
          {"speedup_vs_vanilla", num(s.speedup_vs_vanilla)},
          {"stop_reason", s.stop_reason}};
}

}  // namespace specscope

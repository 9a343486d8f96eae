#include "engine/methods/step_record_json.h"

namespace specscope {

namespace {
// NaN is not JSON: absent values become null.
nlohmann::json num(float v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }
nlohmann::json num(double v) { return std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v); }
}  // namespace

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
                     {"decision", to_string(n.decision)}});
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
          {"lossy", r.lossy}};
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

#include "app/cli/run_report.h"

#include "engine/methods/step_record_json.h"

namespace specscope::cli {

std::string run_footer(const nlohmann::json& j) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "[%s | %d tokens in %.2fs | prefill %d tokens at %.1f tok/s | decode %.1f tok/s | tau %.2f over %d "
                "steps | %s | stop: %s]",
                j.at("method").get<std::string>().c_str(), j.at("new_tokens").get<int>(),
                j.at("wall_seconds").get<double>(), j.at("prompt_tokens").get<int>(),
                j.at("prefill_tokens_per_second").get<double>(), j.at("tokens_per_second").get<double>(),
                j.at("tau").get<double>(), j.at("steps").get<int>(), j.at("backend").get<std::string>().c_str(),
                j.at("stop_reason").get<std::string>().c_str());
  std::string footer = buf;
  // A reasoning reply: speculation while the model thinks and while it answers (runs/run_statistics.h).
  if (const auto r = j.find("reply"); r != j.end() && r->contains("reasoning") && r->contains("answer")) {
    const auto& t = r->at("reasoning");
    const auto& a = r->at("answer");
    std::snprintf(buf, sizeof buf,
                  "\n[thinking: %ld tokens, tau %.2f over %d steps, %.1f tok/s | answer: %ld tokens, tau %.2f over %d "
                  "steps, %.1f tok/s]",
                  t.at("tokens").get<long>(), t.at("tau").get<double>(), t.at("steps").get<int>(),
                  t.at("tokens_per_second").get<double>(), a.at("tokens").get<long>(), a.at("tau").get<double>(),
                  a.at("steps").get<int>(), a.at("tokens_per_second").get<double>());
    footer += buf;
  }
  // tree=auto: what the cost model expected beside what the run measured.
  if (j.contains("tree_auto")) {
    const auto& t = j.at("tree_auto");
    std::snprintf(buf, sizeof buf, "\n[tree auto: expected %.1f tok/s (%.2fx vanilla's %.1f), measured %.1f tok/s]",
                  t.at("expected_tokens_per_second").get<double>(), t.at("expected_speedup").get<double>(),
                  t.at("expected_vanilla_tokens_per_second").get<double>(), j.at("tokens_per_second").get<double>());
    footer += buf;
  }
  return footer;
}

std::string json_line(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string step_json_line(const StepRecord& rec) { return json_line(to_json(rec)); }

void CliObserver::tree_tuning(int lane, const std::string& label, const runs::TreeChoice* choice) {
  if (!choice)
    std::fprintf(stderr, "[tree auto] lane %d (%s): measuring this machine's step costs and calibrating sizes...\n",
                 lane + 1, label.c_str());
  else
    std::fprintf(stderr, "[tree auto] lane %d (%s): %s\n", lane + 1, label.c_str(), choice->summary.c_str());
}

}  // namespace specscope::cli

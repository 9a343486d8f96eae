#include "sessions/row_format.h"

#include <charconv>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "engine/util/error.h"

namespace specscope::sessions {

std::string join_ids(const std::vector<int>& ids) {
  std::string s;
  s.reserve(ids.size() * 5);
  char buf[16];
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, ids[i]);
    s.append(buf, end);
  }
  return s;
}

std::vector<int> split_ids(const std::string& text, const std::string& where) {
  std::vector<int> out;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    int v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || (next < end && *next != ','))
      throw InputError(where, "malformed id list '" + text.substr(0, 40) + "'");
    out.push_back(v);
    p = next < end ? next + 1 : next;
  }
  return out;
}

std::string utc_now_iso8601() {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t t = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  int ms = int(duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, ms);
  return out;
}

std::string method_to_json(const MethodSpec& spec) {
  nlohmann::json j = {{"name", spec.name}, {"draft", spec.draft_path}, {"head", spec.head_path},
                      {"options", spec.options}};
  return j.dump();
}

MethodSpec method_from_json(const std::string& text, const std::string& where) {
  try {
    auto j = nlohmann::json::parse(text);
    MethodSpec s;
    s.name = j.at("name").get<std::string>();
    s.draft_path = j.at("draft").get<std::string>();
    s.head_path = j.at("head").get<std::string>();
    s.options = j.at("options").get<std::map<std::string, std::string>>();
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where, std::string("malformed method JSON: ") + e.what());
  }
}

namespace {
template <class E, size_t N>
E enum_from(const std::string& name, const E (&all)[N], const std::string& where, const char* what) {
  for (E e : all)
    if (name == to_string(e)) return e;
  throw InputError(where, std::string("unknown ") + what + " '" + name + "'");
}
}  // namespace

NodeSource node_source_from(const std::string& name, const std::string& where) {
  static const NodeSource all[] = {NodeSource::DraftModel, NodeSource::EagleHead,    NodeSource::MedusaHead,
                                   NodeSource::NgramPool,  NodeSource::PromptLookup, NodeSource::Stream,
                                   NodeSource::Jacobi};
  return enum_from(name, all, where, "node source");
}

NodeDecision node_decision_from(const std::string& name, const std::string& where) {
  static const NodeDecision all[] = {NodeDecision::NotReached, NodeDecision::Accepted, NodeDecision::Rejected,
                                     NodeDecision::Pruned};
  return enum_from(name, all, where, "node decision");
}

BonusSource bonus_source_from(const std::string& name, const std::string& where) {
  static const BonusSource all[] = {BonusSource::Target, BonusSource::Residual};
  return enum_from(name, all, where, "bonus source");
}

RunSummary summary_from_json(const std::string& text, const std::string& where) {
  try {
    auto j = nlohmann::json::parse(text);
    auto num = [&](const char* k) { return j.at(k).is_null() ? std::nan("") : j.at(k).get<double>(); };
    RunSummary s;
    s.method = j.at("method").get<std::string>();
    s.steps = j.at("steps").get<int>();
    s.new_tokens = j.at("new_tokens").get<int>();
    s.target_forwards = j.at("target_forwards").get<int>();
    s.draft_forwards = j.at("draft_forwards").get<int>();
    s.tau = num("tau");
    s.acceptance_by_depth = j.at("acceptance_by_depth").get<std::vector<double>>();
    s.n_alpha = j.at("n_alpha").get<std::vector<double>>();
    s.accepted_length_histogram = j.at("accepted_length_histogram").get<std::vector<long>>();
    s.wall_seconds = num("wall_seconds");
    s.prefill_seconds = num("prefill_seconds");
    s.decode_seconds = num("decode_seconds");
    s.tokens_per_second = num("tokens_per_second");
    s.draft_seconds = num("draft_seconds");
    s.verify_seconds = num("verify_seconds");
    s.speedup_vs_vanilla = num("speedup_vs_vanilla");
    s.stop_reason = j.at("stop_reason").get<std::string>();
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where, std::string("malformed run summary JSON: ") + e.what());
  }
}

}  // namespace specscope::sessions

#include "sessions/export.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/methods/step_record_json.h"
#include "sessions/row_format.h"

namespace specscope::sessions {

namespace {

constexpr auto kReplace = nlohmann::json::error_handler_t::replace;

nlohmann::json run_json(const RunRow& r) {
  nlohmann::json j = {{"id", r.id},
                      {"ordinal", r.ordinal},
                      {"method", nlohmann::json::parse(method_to_json(r.meta.method))},
                      {"sampling",
                       {{"temperature", r.meta.sampling.temperature},
                        {"top_k", r.meta.sampling.top_k},
                        {"top_p", r.meta.sampling.top_p},
                        {"min_p", r.meta.sampling.min_p},
                        {"seed", r.meta.sampling.seed}}},
                      {"max_tokens", r.meta.max_tokens},
                      {"stop_strings", r.meta.stop_strings},
                      {"prompt", r.meta.prompt},
                      {"chat", r.meta.chat},
                      {"prompt_tokens", r.meta.prompt_tokens},
                      {"status", r.status},
                      {"started_at", r.started_at},
                      {"finished_at", r.finished_at},
                      {"step_count", r.step_count},
                      {"label", r.meta.label},
                      {"target",
                       {{"path", r.meta.target.path},
                        {"architecture", r.meta.target.architecture},
                        {"config_sha256", r.meta.target.config_sha256},
                        {"weights_index_sha256", r.meta.target.weights_index_sha256}}}};
  if (r.meta.lane) j["lane"] = *r.meta.lane;  // absent in runs recorded before races (schema < 3)
  if (r.outcome) {
    j["output_text"] = r.outcome->output_text;
    j["summary"] = nlohmann::json::parse(r.outcome->summary_json);
    if (r.outcome->identical_to_reference) j["identical_to_reference"] = *r.outcome->identical_to_reference;
  }
  return j;
}

// RFC 4180: quote fields holding separators, quotes or line breaks; double the quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string csv_num(double v) {
  if (std::isnan(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

void export_json(SessionReader& reader, int64_t session_id, std::ostream& out) {
  SessionRow s = reader.session(session_id);
  const auto& m = s.meta;
  nlohmann::json j = {{"format", "specscope-session"},
                      {"id", s.id},
                      {"created_at", s.created_at},
                      {"kind", m.kind},
                      {"title", m.title},
                      {"notes", m.notes},
                      {"app_version", m.app_version},
                      {"model",
                       {{"path", m.model.path},
                        {"architecture", m.model.architecture},
                        {"config_sha256", m.model.config_sha256},
                        {"weights_index_sha256", m.model.weights_index_sha256}}},
                      {"backend", m.backend},
                      {"device", m.device},
                      {"messages", nlohmann::json::array()},
                      {"runs", nlohmann::json::array()}};
  for (const auto& msg : s.messages)
    j["messages"].push_back({{"role", msg.role}, {"content", msg.content}, {"run_id", msg.run_id}});
  for (const auto& r : s.runs) {
    nlohmann::json rj = run_json(r);
    rj["steps"] = nlohmann::json::array();
    reader.for_each_step(r.id, 0, r.step_count, [&](RecordedStep&& st) {
      nlohmann::json sj = to_json(st.record);
      sj["text_piece"] = st.text_piece;
      rj["steps"].push_back(std::move(sj));
    });
    j["runs"].push_back(std::move(rj));
  }
  out << j.dump(1, ' ', false, kReplace) << "\n";
}

void export_csv(SessionReader& reader, int64_t session_id, CsvTable table, std::ostream& out) {
  SessionRow s = reader.session(session_id);
  if (table == CsvTable::Steps)
    out << "session,run,method,step_index,step,position,root_token,nodes,accepted,accepted_path,bonus_token,"
           "bonus_text,bonus_source,bonus_prob,committed,text_piece,draft_us,verify_forward_us,verify_us,"
           "kv_update_us,target_forwards,target_tokens,draft_forwards,draft_tokens,lossy,experts_per_layer\n";
  else
    out << "session,run,method,step_index,step,node,parent,depth,token,text,draft_prob,cum_score,source,"
           "source_index,pruned,target_prob,accept_prob,decision,verify_rule,tested_prob,u\n";
  for (const auto& r : s.runs) {
    int64_t index = 0;
    reader.for_each_step(r.id, 0, r.step_count, [&](RecordedStep&& st) {
      const StepRecord& rec = st.record;
      const std::string lead = std::to_string(s.id) + "," + std::to_string(r.id) + "," + csv_field(rec.method) +
                               "," + std::to_string(index++) + "," + std::to_string(rec.step) + ",";
      if (table == CsvTable::Steps) {
        out << lead << rec.position << "," << rec.root_token << "," << rec.nodes.size() << ","
            << rec.accepted_count() << "," << csv_field(join_ids(rec.accepted_path)) << "," << rec.bonus_token << ","
            << csv_field(rec.bonus_text) << "," << to_string(rec.bonus_source) << "," << csv_num(rec.bonus_prob)
            << "," << csv_field(join_ids(rec.committed)) << "," << csv_field(st.text_piece) << ","
            << rec.timings.draft_us << "," << rec.timings.verify_forward_us << "," << rec.timings.verify_us << ","
            << rec.timings.kv_update_us << "," << rec.target_forwards << "," << rec.target_tokens << ","
            << rec.draft_forwards << "," << rec.draft_tokens << "," << int(rec.lossy) << ","
            << csv_num(rec.experts_per_layer) << "\n";
        return;
      }
      for (const DraftNode& n : rec.nodes)
        out << lead << n.id << "," << n.parent << "," << n.depth << "," << n.token << "," << csv_field(n.text) << ","
            << csv_num(n.draft_prob) << "," << csv_num(n.cum_score) << "," << to_string(n.source) << ","
            << n.source_index << "," << int(n.pruned) << "," << csv_num(n.target_prob) << ","
            << csv_num(n.accept_prob) << "," << to_string(n.decision) << ","
            << (n.rule == VerifyRule::Unrecorded ? "" : to_string(n.rule)) << "," << csv_num(n.tested_prob) << ","
            << csv_num(n.u) << "\n";
    });
  }
}

}  // namespace specscope::sessions

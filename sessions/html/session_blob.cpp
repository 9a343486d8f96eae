#include "sessions/html/session_blob.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/generate/reply_parts.h"
#include "engine/methods/step_record_json.h"
#include "engine/util/error.h"
#include "sessions/row_format.h"
#include "sessions/summary_json.h"

namespace specscope::sessions {

namespace {

using nlohmann::json;

// Floats as 6 significant digits: the page shows at most 4 decimals, and a float widened to double would
// otherwise print 17 digits (a 1,000-step session would be about three times larger).
void compact_numbers(json& j) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    if (!std::isfinite(v)) return;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    j = std::strtod(buf, nullptr);
  } else if (j.is_structured()) {
    for (auto& item : j) compact_numbers(item);
  }
}

// A node object -> a row of its values in `keys` order; keys this document has not seen yet are appended to
// `keys` (so a field that only some nodes carry still gets a column). A key a node lacks is null in its row.
json node_row(const json& node, json& keys) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    bool known = false;
    for (const auto& k : keys) known = known || k == it.key();
    if (!known) keys.push_back(it.key());
  }
  json row = json::array();
  for (const auto& k : keys) {
    auto it = node.find(k.get<std::string>());
    row.push_back(it == node.end() ? json(nullptr) : *it);
  }
  while (!row.empty() && row.back().is_null()) row.erase(row.size() - 1);  // trailing absences cost nothing
  return row;
}

json step_json(const RecordedStep& st, const std::string& run_method, json& node_keys) {
  json s = to_json(st.record);
  s.erase("type");
  if (s.value("method", "") == run_method) s.erase("method");  // the run says it once
  // A dense target's steps carry no expert count: left out, not a null in every step of the page.
  if (const auto it = s.find("experts_per_layer"); it != s.end() && it->is_null()) s.erase(it);
  json rows = json::array();
  for (auto n : s.at("nodes")) {
    // A null is what a row's missing column reads as anyway: leaving nulls out means a field only some nodes carry
    // (the "why" fields of tested nodes, say) gets a late column, and rows without it end before it.
    for (auto it = n.begin(); it != n.end();) it = it->is_null() ? n.erase(it) : std::next(it);
    rows.push_back(node_row(n, node_keys));
  }
  s["nodes"] = std::move(rows);
  s["piece"] = st.text_piece;
  compact_numbers(s);
  return s;
}

// A reasoning model's reply as the app shows it (engine/generate/reply_parts.h): each step's text by part, markers
// out, as "parts": one list of [part, text] spans per committed token when the tokens' texts add up to the piece (the
// page colours them one by one, as the app does), else one list for the whole piece; part 0 is reasoning, 1 answer.
class ReplyParts {
 public:
  explicit ReplyParts(const ReplyShape& shape) : splitter_(shape) {}

  json step_parts(const StepRecord& r, const std::string& piece) {
    const std::vector<CommittedText> texts = committed_texts(r);  // as the page reads them
    std::string joined;
    for (const auto& t : texts) joined += t.text;
    json parts = json::array();
    if (joined == piece && !texts.empty()) {
      for (const auto& t : texts) parts.push_back(spans(splitter_.feed(t.text)));
    } else {
      parts.push_back(spans(splitter_.feed(piece)));
    }
    return parts;
  }
  // The end of the reply: what the splitter held back, as spans of the last token.
  json rest() { return spans(splitter_.flush()); }
  // The text of steps before an exported range, as the page shows context: by part, with the app's notes.
  void add_context(const std::string& piece, std::string& text) {
    for (const ReplySpan& s : splitter_.feed(piece)) {
      if (reply_part_needs_note(shown_, s.part))
        text += (shown_ ? "\n" : "") + std::string(s.part == ReplyPart::Reasoning ? "thinking: " : "answer: ");
      shown_ = s.part;
      text += s.text;
    }
  }
  // The part the context ended in, as the page counts parts (0 reasoning, 1 answer, -1 none).
  int shown_part() const { return !shown_ ? -1 : *shown_ == ReplyPart::Reasoning ? 0 : 1; }

 private:
  static json spans(const std::vector<ReplySpan>& from) {
    json out = json::array();
    for (const ReplySpan& s : from) out.push_back({s.part == ReplyPart::Reasoning ? 0 : 1, s.text});
    return out;
  }
  ReplySplitter splitter_;
  std::optional<ReplyPart> shown_;  // add_context: the part shown last
};

json run_head(const RunRow& r) {
  const auto& m = r.meta;
  json j = {{"id", r.id},
            {"ordinal", r.ordinal},
            {"lane", m.lane ? json(*m.lane) : json(nullptr)},
            {"label", m.label.empty() ? m.method.name : m.label},
            {"method", m.method.name},
            {"method_spec", json::parse(method_to_json(m.method))},
            {"target", m.target.path},
            {"prompt", m.prompt},
            {"chat", m.chat},
            {"greedy", m.sampling.greedy()},
            {"sampling", m.sampling.describe()},
            {"temperature", m.sampling.temperature},
            {"max_tokens", m.max_tokens},
            {"status", r.status},
            {"step_count", r.step_count},
            {"summary", nullptr},
            {"identical", nullptr}};
  if (r.outcome) {
    j["summary"] = json::parse(r.outcome->summary_json, nullptr, false);
    if (j["summary"].is_discarded()) j["summary"] = nullptr;
    if (r.outcome->identical_to_reference) j["identical"] = *r.outcome->identical_to_reference;
  }
  compact_numbers(j);
  return j;
}

}  // namespace

json html_session_blob(SessionReader& reader, int64_t session_id, const std::optional<StepRange>& range) {
  const SessionRow s = reader.session(session_id);
  const auto& m = s.meta;
  json doc = {{"format", "specscope-session-html"},
              {"version", 1},
              {"generator", std::string("SpecScope ") + SPECSCOPE_VERSION},
              {"session",
               {{"id", s.id},
                {"kind", m.kind},
                {"title", m.title},
                {"notes", m.notes},
                {"created_at", s.created_at},
                {"app_version", m.app_version},
                {"model", {{"path", m.model.path}, {"architecture", m.model.architecture}}},
                {"backend", m.backend},
                {"device", m.device},
                {"messages", json::array()}}},
              {"range", range ? json{{"first", range->first}, {"last", range->last}} : json(nullptr)},
              {"node_keys", json::array()},
              {"runs", json::array()}};
  for (const auto& msg : s.messages)
    doc["session"]["messages"].push_back({{"role", msg.role}, {"content", msg.content}, {"run_id", msg.run_id}});

  json& node_keys = doc["node_keys"];
  int64_t exported = 0;
  for (const auto& r : s.runs) {
    json run = run_head(r);
    json steps = json::array();
    std::string prefix_text;  // what the steps before the range made visible
    int64_t tokens_before = 0, first_index = -1, index = 0;
    // A reasoning reply (as its summary recorded it) is split as the app splits it.
    const ReplyShape shape = r.outcome ? recorded_reply_shape(r.outcome->summary_json, r.outcome->output_text) : ReplyShape{};
    std::optional<ReplyParts> reply;
    if (shape.format != ReplyFormat::Plain) {
      reply.emplace(shape);
      run["reply"] = reply_format_name(shape.format);
    }
    bool last_exported = false;  // the run's last step is in the page (its held-back text goes there)
    reader.for_each_step(r.id, 0, r.step_count, [&](RecordedStep&& st) {
      const int64_t number = st.record.step;
      last_exported = false;
      if (range && number < range->first) {
        if (reply) reply->add_context(st.text_piece, prefix_text);
        else prefix_text += st.text_piece;
        tokens_before += int64_t(st.record.committed.size());
      } else if (!range || number <= range->last) {
        if (first_index < 0) first_index = index;
        steps.push_back(step_json(st, r.meta.method.name, node_keys));
        if (reply) steps.back()["parts"] = reply->step_parts(st.record, st.text_piece);
        last_exported = true;
      } else if (reply) {
        reply->step_parts(st.record, st.text_piece);  // after the range: nothing of it is shown
      }
      ++index;
    });
    if (reply && last_exported && !steps.empty() && !steps.back()["parts"].empty())
      for (auto& span : reply->rest()) steps.back()["parts"].back().push_back(span);
    if (reply) run["prefix_part"] = reply->shown_part();
    exported += int64_t(steps.size());
    run["first_index"] = first_index < 0 ? 0 : first_index;
    run["tokens_before"] = tokens_before;
    run["prefix_text"] = prefix_text;
    run["steps"] = std::move(steps);
    doc["runs"].push_back(std::move(run));
  }
  const std::string where = "session " + std::to_string(session_id);
  if (s.runs.empty()) throw InputError(where, "has no runs to export");
  if (range && exported == 0)
    throw InputError(where, "--steps " + std::to_string(range->first) + "-" + std::to_string(range->last) +
                                " selects no recorded step of any run");
  return doc;
}

}  // namespace specscope::sessions

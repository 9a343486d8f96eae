#include "sessions/reader.h"

#include <nlohmann/json.hpp>

#include "engine/util/error.h"
#include "sessions/row_format.h"
#include "sessions/schema.h"
#include "sessions/sqlite_db.h"
#include "sessions/why_blob.h"

namespace specscope::sessions {

namespace {
constexpr const char* kStepColumns =
    "idx, step, position, root_token, accepted_path, bonus_token, bonus_text, bonus_source, bonus_prob, committed, "
    "text_piece, draft_us, verify_forward_us, verify_us, kv_update_us, target_forwards, target_tokens, "
    "draft_forwards, draft_tokens, lossy, node_count, verified, residual_top_k, draft_cut, experts_per_layer";
constexpr const char* kNodeColumns =
    "step_idx, id, parent, depth, token, text, draft_prob, cum_score, source, source_index, pruned, target_prob, "
    "accept_prob, decision, u, tested_prob";
}  // namespace

struct SessionReader::Statements {
  Statement steps, nodes, method_of;
  explicit Statements(Database& db)
      : steps(db.prepare(std::string("SELECT ") + kStepColumns +
                         " FROM steps WHERE run_id=? AND idx>=? AND idx<? ORDER BY idx")),
        nodes(db.prepare(std::string("SELECT ") + kNodeColumns +
                         " FROM nodes WHERE run_id=? AND step_idx>=? AND step_idx<? ORDER BY step_idx, id")),
        method_of(db.prepare("SELECT method FROM runs WHERE id=?")) {}
};

SessionReader::SessionReader(const std::string& db_path)
    : path_(db_path), db_(open_session_db(db_path, OpenFor::Reading)) {
  stmts_ = std::make_unique<Statements>(*db_);
}

SessionReader::~SessionReader() = default;

std::vector<SessionListing> SessionReader::list() {
  std::vector<SessionListing> out;
  auto st = db_->prepare(
      "SELECT s.id, s.created_at, s.kind, s.title, s.model_path, "
      "(SELECT group_concat(method, ',') FROM (SELECT method FROM runs WHERE session_id=s.id ORDER BY ordinal)), "
      "(SELECT count(*) FROM steps WHERE run_id IN (SELECT id FROM runs WHERE session_id=s.id)) "
      "FROM sessions s ORDER BY s.id");
  while (st.step()) {
    SessionListing l;
    l.id = st.int_at(0);
    l.created_at = st.text_at(1);
    l.kind = st.text_at(2);
    l.title = st.text_at(3);
    l.model_path = st.text_at(4);
    std::string methods = st.text_at(5);
    for (size_t p = 0; !methods.empty();) {
      size_t c = methods.find(',', p);
      l.methods.push_back(methods.substr(p, c == std::string::npos ? std::string::npos : c - p));
      if (c == std::string::npos) break;
      p = c + 1;
    }
    l.steps = st.int_at(6);
    out.push_back(std::move(l));
  }
  return out;
}

RunRow SessionReader::read_run(int64_t run_id, bool with_outcome) {
  auto st = db_->prepare(
      "SELECT id, session_id, ordinal, method_json, temperature, top_k, top_p, min_p, seed, max_tokens, "
      "stop_strings_json, prompt, chat, prompt_tokens, status, started_at, coalesce(finished_at, ''), output_text, "
      "identical_to_reference, summary_json, (SELECT count(*) FROM steps WHERE run_id=runs.id), lane, label, "
      "target_path, target_architecture, target_config_sha256, target_weights_index_sha256 "
      "FROM runs WHERE id=?");
  st.bind(1, run_id);
  if (!st.step()) throw InputError("run " + std::to_string(run_id), "no such run in " + path_);
  const std::string where = path_ + " run " + std::to_string(run_id);
  RunRow r;
  r.id = st.int_at(0);
  r.session_id = st.int_at(1);
  r.ordinal = int(st.int_at(2));
  r.meta.method = method_from_json(st.text_at(3), where);
  r.meta.sampling.temperature = float(st.real_at(4));
  r.meta.sampling.top_k = int(st.int_at(5));
  r.meta.sampling.top_p = float(st.real_at(6));
  r.meta.sampling.min_p = float(st.real_at(7));
  r.meta.sampling.seed = uint64_t(st.int_at(8));
  r.meta.max_tokens = int(st.int_at(9));
  try {
    r.meta.stop_strings = nlohmann::json::parse(st.text_at(10)).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception&) {
    throw InputError(where, "malformed stop strings");
  }
  r.meta.prompt = st.text_at(11);
  r.meta.chat = st.int_at(12) != 0;
  r.meta.prompt_tokens = int(st.int_at(13));
  r.status = st.text_at(14);
  r.started_at = st.text_at(15);
  r.finished_at = st.text_at(16);
  if (with_outcome && r.status == "finished") {
    RunOutcome o;
    o.output_text = st.text_at(17);
    if (!st.is_null(18)) o.identical_to_reference = st.int_at(18) != 0;
    o.summary_json = st.text_at(19);
    o.summary = summary_from_json(o.summary_json, where);
    r.outcome = std::move(o);
  }
  r.step_count = st.int_at(20);
  if (!st.is_null(21)) r.meta.lane = int(st.int_at(21));
  r.meta.label = st.is_null(22) ? r.meta.method.name : st.text_at(22);
  if (!st.is_null(23)) {
    r.meta.target = {st.text_at(23), st.text_at(24), st.text_at(25), st.text_at(26)};
  } else {  // recorded before races (schema < 3): the session's model
    auto s = db_->prepare(
        "SELECT model_path, model_architecture, model_config_sha256, model_weights_index_sha256 FROM sessions "
        "WHERE id=?");
    s.bind(1, r.session_id);
    if (s.step()) r.meta.target = {s.text_at(0), s.text_at(1), s.text_at(2), s.text_at(3)};
  }
  return r;
}

RunRow SessionReader::run(int64_t run_id) { return read_run(run_id, true); }

SessionRow SessionReader::session(int64_t id) {
  SessionRow s;
  {
    auto st = db_->prepare(
        "SELECT id, created_at, kind, title, app_version, model_path, model_architecture, model_config_sha256, "
        "model_weights_index_sha256, backend, device, notes FROM sessions WHERE id=?");
    st.bind(1, id);
    if (!st.step()) throw InputError("session " + std::to_string(id), "no such session in " + path_);
    s.id = st.int_at(0);
    s.created_at = st.text_at(1);
    auto& m = s.meta;
    m.kind = st.text_at(2);
    m.title = st.text_at(3);
    m.app_version = st.text_at(4);
    m.model = {st.text_at(5), st.text_at(6), st.text_at(7), st.text_at(8)};
    m.backend = st.text_at(9);
    m.device = st.text_at(10);
    m.notes = st.text_at(11);
  }
  {
    auto st = db_->prepare("SELECT role, content, run_id FROM messages WHERE session_id=? ORDER BY ordinal");
    st.bind(1, id);
    while (st.step()) s.messages.push_back({st.text_at(0), st.text_at(1), st.int_at(2)});
  }
  std::vector<int64_t> run_ids;
  {
    auto st = db_->prepare("SELECT id FROM runs WHERE session_id=? ORDER BY ordinal");
    st.bind(1, id);
    while (st.step()) run_ids.push_back(st.int_at(0));
  }
  for (int64_t r : run_ids) s.runs.push_back(read_run(r, true));
  return s;
}

std::vector<StepBrief> SessionReader::timeline(int64_t run_id) {
  std::vector<StepBrief> out;
  auto st = db_->prepare(
      "SELECT idx, accepted, node_count, draft_us + verify_forward_us + verify_us + kv_update_us FROM steps "
      "WHERE run_id=? ORDER BY idx");
  st.bind(1, run_id);
  while (st.step()) out.push_back({int(st.int_at(0)), int(st.int_at(1)), int(st.int_at(2)), st.int_at(3)});
  return out;
}

int64_t SessionReader::step_count(int64_t run_id) {
  auto st = db_->prepare("SELECT count(*) FROM steps WHERE run_id=?");
  st.bind(1, run_id);
  st.step();
  return st.int_at(0);
}

void SessionReader::for_each_step(int64_t run_id, int64_t from, int64_t to,
                                  const std::function<void(RecordedStep&&)>& fn) {
  auto& S = *stmts_;
  const std::string where = path_ + " run " + std::to_string(run_id);
  std::string method;
  S.method_of.bind(1, run_id);
  if (S.method_of.step()) method = S.method_of.text_at(0);
  S.method_of.reset();
  // One read transaction: both queries see the same snapshot while a writer keeps committing.
  db_->exec("BEGIN");
  try {
    S.steps.bind(1, run_id).bind(2, from).bind(3, to);
    S.nodes.bind(1, run_id).bind(2, from).bind(3, to);
    bool have_node = S.nodes.step();
    while (S.steps.step()) {
      RecordedStep out;
      StepRecord& r = out.record;
      const int64_t idx = S.steps.int_at(0);
      r.method = method;
      r.step = int(S.steps.int_at(1));
      r.position = int(S.steps.int_at(2));
      r.root_token = int32_t(S.steps.int_at(3));
      r.accepted_path = split_ids(S.steps.text_at(4), where);
      r.bonus_token = int32_t(S.steps.int_at(5));
      r.bonus_text = S.steps.text_at(6);
      r.bonus_source = bonus_source_from(S.steps.text_at(7), where);
      r.bonus_prob = float(S.steps.real_at(8));
      r.committed = split_ids(S.steps.text_at(9), where);
      out.text_piece = S.steps.text_at(10);
      r.timings = {S.steps.int_at(11), S.steps.int_at(12), S.steps.int_at(13), S.steps.int_at(14)};
      r.target_forwards = int(S.steps.int_at(15));
      r.target_tokens = int(S.steps.int_at(16));
      r.draft_forwards = int(S.steps.int_at(17));
      r.draft_tokens = int(S.steps.int_at(18));
      r.lossy = S.steps.int_at(19) != 0;
      const int64_t node_count = S.steps.int_at(20);
      while (have_node && S.nodes.int_at(0) < idx) have_node = S.nodes.step();
      while (have_node && S.nodes.int_at(0) == idx) {
        DraftNode n;
        n.id = int(S.nodes.int_at(1));
        n.parent = int(S.nodes.int_at(2));
        n.depth = int(S.nodes.int_at(3));
        n.token = int32_t(S.nodes.int_at(4));
        n.text = S.nodes.text_at(5);
        n.draft_prob = float(S.nodes.real_at(6));
        n.cum_score = float(S.nodes.real_at(7));
        n.source = node_source_from(S.nodes.text_at(8), where);
        n.source_index = int(S.nodes.int_at(9));
        n.pruned = S.nodes.int_at(10) != 0;
        n.target_prob = float(S.nodes.real_at(11));
        n.accept_prob = float(S.nodes.real_at(12));
        n.decision = node_decision_from(S.nodes.text_at(13), where);
        n.u = float(S.nodes.real_at(14));  // NULL (NaN): not drawn, or recorded before schema 4
        n.tested_prob = float(S.nodes.real_at(15));
        r.nodes.push_back(std::move(n));
        have_node = S.nodes.step();
      }
      if (int64_t(r.nodes.size()) != node_count)
        throw InputError(where, "step " + std::to_string(idx) + " has " + std::to_string(r.nodes.size()) +
                                    " tree nodes, its row says " + std::to_string(node_count));
      // The "why" details (schema 4; NULL before, and in steps that verified nothing).
      const std::string at_step = where + " step " + std::to_string(idx);
      if (!S.steps.is_null(21)) decode_verified(S.steps.text_at(21), r, at_step);
      if (!S.steps.is_null(22)) r.residual_top_k = decode_bars(S.steps.text_at(22), at_step);
      r.draft_cut = float(S.steps.real_at(23));  // NULL (NaN): no cut, or recorded before schema 5
      r.experts_per_layer = float(S.steps.real_at(24));  // NULL (NaN): a dense target, or recorded before schema 6
      fn(std::move(out));
    }
  } catch (...) {
    S.steps.reset();
    S.nodes.reset();
    db_->exec("COMMIT");
    throw;
  }
  S.steps.reset();
  S.nodes.reset();
  db_->exec("COMMIT");
}

RecordedStep SessionReader::step(int64_t run_id, int64_t index) {
  std::optional<RecordedStep> out;
  for_each_step(run_id, index, index + 1, [&](RecordedStep&& s) { out = std::move(s); });
  if (!out)
    throw InputError("run " + std::to_string(run_id), "has no step " + std::to_string(index) + " (" +
                                                           std::to_string(step_count(run_id)) + " recorded)");
  return std::move(*out);
}

bool delete_session(const std::string& db_path, int64_t session_id) {
  auto db = open_session_db(db_path, OpenFor::Writing);
  Transaction tx(*db);
  const std::string runs = "(SELECT id FROM runs WHERE session_id=" + std::to_string(session_id) + ")";
  db->exec("DELETE FROM nodes WHERE run_id IN " + runs);
  db->exec("DELETE FROM steps WHERE run_id IN " + runs);
  db->exec("DELETE FROM runs WHERE session_id=" + std::to_string(session_id));
  db->exec("DELETE FROM messages WHERE session_id=" + std::to_string(session_id));
  db->exec("DELETE FROM sessions WHERE id=" + std::to_string(session_id));
  const bool existed = db->changes() > 0;
  tx.commit();
  return existed;
}

bool set_session_notes(const std::string& db_path, int64_t session_id, const std::string& notes) {
  auto db = open_session_db(db_path, OpenFor::Writing);
  auto st = db->prepare("UPDATE sessions SET notes=? WHERE id=?");
  st.bind(1, notes).bind(2, session_id).run();
  return db->changes() > 0;
}

}  // namespace specscope::sessions

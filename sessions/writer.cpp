#include "sessions/writer.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <variant>

#include "engine/util/error.h"
#include "sessions/row_format.h"
#include "sessions/schema.h"
#include "sessions/sqlite_db.h"
#include "sessions/why_blob.h"

namespace specscope::sessions {

namespace {
struct NewSession {
  SessionMeta meta;
};
struct NewRun {
  int64_t session_id;
  RunMeta meta;
};
struct NewMessage {
  int64_t session_id;
  ChatMessage message;
};
struct NewStep {
  int64_t run_id;
  RecordedStep step;
};
struct FinishRun {
  int64_t run_id;
  RunOutcome outcome;
};
struct Flush {};
}  // namespace

struct SessionWriter::Item {
  std::variant<NewSession, NewRun, NewMessage, NewStep, FinishRun, Flush> what;
  std::shared_ptr<std::promise<int64_t>> done;  // synchronous requests: fulfilled after the commit
  int64_t result = 0;
};

struct SessionWriter::Statements {
  Statement session, message, run, step, node, finish, next_message, next_ordinal;
  explicit Statements(Database& db)
      : session(db.prepare(
            "INSERT INTO sessions(created_at, kind, title, app_version, model_path, model_architecture, "
            "model_config_sha256, model_weights_index_sha256, backend, device, notes) "
            "VALUES(?,?,?,?,?,?,?,?,?,?,?)")),
        message(db.prepare("INSERT INTO messages(session_id, ordinal, role, content, run_id) VALUES(?,?,?,?,?)")),
        run(db.prepare(
            "INSERT INTO runs(session_id, ordinal, method, method_json, temperature, top_k, top_p, min_p, seed, "
            "max_tokens, stop_strings_json, prompt, chat, prompt_tokens, status, started_at, lane, label, "
            "target_path, target_architecture, target_config_sha256, target_weights_index_sha256) "
            "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,'recording',?,?,?,?,?,?,?)")),
        step(db.prepare(
            "INSERT INTO steps(run_id, idx, step, position, root_token, accepted_path, accepted, node_count, "
            "bonus_token, bonus_text, bonus_source, bonus_prob, committed, text_piece, draft_us, "
            "verify_forward_us, verify_us, kv_update_us, target_forwards, target_tokens, draft_forwards, "
            "draft_tokens, lossy, verified, residual_top_k, draft_cut, experts_per_layer) "
            "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")),
        node(db.prepare(
            "INSERT INTO nodes(run_id, step_idx, id, parent, depth, token, text, draft_prob, cum_score, source, "
            "source_index, pruned, target_prob, accept_prob, decision, u, tested_prob) "
            "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")),
        finish(db.prepare(
            "UPDATE runs SET status='finished', finished_at=?, output_text=?, stop_reason=?, steps=?, "
            "new_tokens=?, tau=?, tokens_per_second=?, speedup_vs_vanilla=?, identical_to_reference=?, "
            "summary_json=? WHERE id=?")),
        next_message(db.prepare("SELECT coalesce(max(ordinal), -1) + 1 FROM messages WHERE session_id=?")),
        next_ordinal(db.prepare("SELECT coalesce(max(ordinal), -1) + 1 FROM runs WHERE session_id=?")) {}
};

SessionWriter::SessionWriter(const std::string& db_path, WriterOptions opts)
    : path_(db_path), opts_(opts), db_(open_session_db(db_path, OpenFor::Writing)) {
  if (opts_.max_pages > 0) db_->exec("PRAGMA max_page_count = " + std::to_string(opts_.max_pages));
  stmts_ = std::make_unique<Statements>(*db_);
  thread_ = std::thread([this] { loop(); });
}

SessionWriter::~SessionWriter() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  stmts_.reset();
}

void SessionWriter::push(Item item) {
  // Steps do not wake the writer: on a machine whose cores all run the decoder's threads, a wake-up per step
  // would preempt one of them and stall the whole forward at its next barrier. The writer wakes on its own
  // timer (max_batch_ms), for synchronous requests, or when the queue grows long.
  bool wake;
  {
    std::lock_guard lk(mu_);
    wake = item.done != nullptr || queue_.size() >= kWakeAtQueued;
    if (item.done) urgent_ = true;
    queue_.push_back(std::move(item));
  }
  if (wake) cv_.notify_one();
}

int64_t SessionWriter::begin_session(const SessionMeta& meta) {
  Item it{NewSession{meta}, std::make_shared<std::promise<int64_t>>()};
  auto f = it.done->get_future();
  push(std::move(it));
  return f.get();
}

int64_t SessionWriter::begin_run(int64_t session_id, const RunMeta& meta) {
  Item it{NewRun{session_id, meta}, std::make_shared<std::promise<int64_t>>()};
  auto f = it.done->get_future();
  push(std::move(it));
  return f.get();
}

void SessionWriter::append_message(int64_t session_id, const ChatMessage& message) {
  push(Item{NewMessage{session_id, message}, nullptr});
}

void SessionWriter::append_step(int64_t run_id, StepRecord record, std::string text_piece) {
  push(Item{NewStep{run_id, RecordedStep{std::move(record), std::move(text_piece)}}, nullptr});
}

void SessionWriter::finish_run(int64_t run_id, const RunOutcome& outcome) {
  push(Item{FinishRun{run_id, outcome}, nullptr});
}

void SessionWriter::flush() {
  Item it{Flush{}, std::make_shared<std::promise<int64_t>>()};
  auto f = it.done->get_future();
  push(std::move(it));
  try {
    f.get();
  } catch (const InputError&) {
    // The failure is kept in error(); flush() only waits.
  }
}

void SessionWriter::set_commit_callback(std::function<void(const CommitReport&)> cb) {
  std::lock_guard lk(mu_);
  on_commit_ = std::move(cb);
}

WriterStats SessionWriter::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

std::string SessionWriter::error() const {
  std::lock_guard lk(mu_);
  return error_;
}

void SessionWriter::fail(const std::string& message) {
  std::lock_guard lk(mu_);
  if (error_.empty()) {
    error_ = message;
    failed_.store(true, std::memory_order_relaxed);
    // Info, not error: the caller tells the user once (the CLI's last line, the app's status bar); this is the log.
    spdlog::info("session recording stopped: {}", message);
  }
}

void SessionWriter::write(Item& item, CommitReport& report) {
  auto& S = *stmts_;
  if (auto* s = std::get_if<NewSession>(&item.what)) {
    const auto& m = s->meta;
    S.session.bind(1, utc_now_iso8601()).bind(2, m.kind).bind(3, m.title).bind(4, m.app_version);
    S.session.bind(5, m.model.path).bind(6, m.model.architecture).bind(7, m.model.config_sha256);
    S.session.bind(8, m.model.weights_index_sha256).bind(9, m.backend).bind(10, m.device).bind(11, m.notes);
    S.session.run();
    item.result = db_->last_insert_rowid();
  } else if (auto* r = std::get_if<NewRun>(&item.what)) {
    S.next_ordinal.bind(1, r->session_id);
    int64_t ordinal = S.next_ordinal.step() ? S.next_ordinal.int_at(0) : 0;
    S.next_ordinal.reset();
    const auto& m = r->meta;
    S.run.bind(1, r->session_id).bind(2, ordinal).bind(3, m.method.name).bind(4, method_to_json(m.method));
    S.run.bind(5, double(m.sampling.temperature)).bind(6, m.sampling.top_k).bind(7, double(m.sampling.top_p));
    S.run.bind(8, double(m.sampling.min_p)).bind(9, int64_t(m.sampling.seed)).bind(10, m.max_tokens);
    S.run.bind(11, nlohmann::json(m.stop_strings).dump()).bind(12, m.prompt).bind(13, int(m.chat));
    S.run.bind(14, m.prompt_tokens).bind(15, utc_now_iso8601());
    if (m.lane) S.run.bind(16, *m.lane);
    else S.run.bind_null(16);
    S.run.bind(17, m.label.empty() ? m.method.name : m.label).bind(18, m.target.path).bind(19, m.target.architecture);
    S.run.bind(20, m.target.config_sha256).bind(21, m.target.weights_index_sha256);
    S.run.run();
    item.result = db_->last_insert_rowid();
    next_index_[item.result] = 0;
  } else if (auto* msg = std::get_if<NewMessage>(&item.what)) {
    S.next_message.bind(1, msg->session_id);
    int64_t ordinal = S.next_message.step() ? S.next_message.int_at(0) : 0;
    S.next_message.reset();
    S.message.bind(1, msg->session_id).bind(2, ordinal).bind(3, msg->message.role).bind(4, msg->message.content);
    S.message.bind(5, msg->message.run_id).run();
  } else if (auto* st = std::get_if<NewStep>(&item.what)) {
    const StepRecord& rec = st->step.record;
    const int64_t idx = next_index_[st->run_id]++;
    const std::string path = join_ids(rec.accepted_path), committed = join_ids(rec.committed);
    S.step.bind(1, st->run_id).bind(2, idx).bind(3, rec.step).bind(4, rec.position).bind(5, rec.root_token);
    S.step.bind_static(6, path).bind(7, rec.accepted_count()).bind(8, int(rec.nodes.size()));
    S.step.bind(9, rec.bonus_token).bind_static(10, rec.bonus_text).bind_static(11, to_string(rec.bonus_source));
    S.step.bind(12, double(rec.bonus_prob)).bind_static(13, committed).bind_static(14, st->step.text_piece);
    S.step.bind(15, rec.timings.draft_us).bind(16, rec.timings.verify_forward_us).bind(17, rec.timings.verify_us);
    S.step.bind(18, rec.timings.kv_update_us).bind(19, rec.target_forwards).bind(20, rec.target_tokens);
    S.step.bind(21, rec.draft_forwards).bind(22, rec.draft_tokens).bind(23, int(rec.lossy));
    // The "why" details (sessions/why_blob.h); NULL when the step has none.
    const std::string verified = encode_verified(rec);
    if (verified.empty()) S.step.bind_null(24);
    else S.step.bind_blob(24, verified.data(), verified.size());
    const std::string residual = rec.residual_top_k.empty() ? std::string() : encode_bars(rec.residual_top_k);
    if (residual.empty()) S.step.bind_null(25);
    else S.step.bind_blob(25, residual.data(), residual.size());
    S.step.bind(26, double(rec.draft_cut));
    S.step.bind(27, double(rec.experts_per_layer));
    S.step.run();
    for (const DraftNode& n : rec.nodes) {
      S.node.bind(1, st->run_id).bind(2, idx).bind(3, n.id).bind(4, n.parent).bind(5, n.depth).bind(6, n.token);
      S.node.bind_static(7, n.text).bind(8, double(n.draft_prob)).bind(9, double(n.cum_score));
      S.node.bind_static(10, to_string(n.source)).bind(11, n.source_index).bind(12, int(n.pruned));
      S.node.bind(13, double(n.target_prob)).bind(14, double(n.accept_prob)).bind_static(15, to_string(n.decision));
      S.node.bind(16, double(n.u)).bind(17, double(n.tested_prob));  // NaN is stored as NULL
      S.node.run();
    }
    bool found = false;
    for (auto& [run, count] : report.runs)
      if (run == st->run_id) count = idx + 1, found = true;
    if (!found) report.runs.emplace_back(st->run_id, idx + 1);
  } else if (auto* f = std::get_if<FinishRun>(&item.what)) {
    const auto& o = f->outcome;
    const auto& s = o.summary;
    S.finish.bind(1, utc_now_iso8601()).bind(2, o.output_text).bind(3, s.stop_reason).bind(4, s.steps);
    S.finish.bind(5, s.new_tokens).bind(6, s.tau).bind(7, s.tokens_per_second).bind(8, s.speedup_vs_vanilla);
    if (o.identical_to_reference) S.finish.bind(9, int(*o.identical_to_reference));
    else S.finish.bind_null(9);
    S.finish.bind(10, o.summary_json).bind(11, f->run_id).run();
  }
}

void SessionWriter::loop() {
  std::unique_lock lk(mu_);
  for (;;) {
    // One transaction per wake-up: everything queued since the last one.
    cv_.wait_for(lk, std::chrono::milliseconds(opts_.max_batch_ms),
                 [&] { return stopping_ || urgent_ || queue_.size() >= kWakeAtQueued; });
    if (queue_.empty()) {
      if (stopping_) return;
      continue;
    }
    urgent_ = false;
    std::deque<Item> pending;  // outside the try: a failed write must still answer every request taken
    pending.swap(queue_);
    const bool healthy = error_.empty();
    lk.unlock();

    std::vector<Item> batch;  // kept until the commit: their promises are answered after it
    batch.reserve(pending.size());
    CommitReport report;
    int64_t steps = 0, nodes = 0;
    std::string failure;
    try {
      std::unique_ptr<Transaction> tx;
      if (healthy) tx = std::make_unique<Transaction>(*db_);
      while (!pending.empty()) {
        batch.push_back(std::move(pending.front()));
        pending.pop_front();
        Item& it = batch.back();
        if (auto* st = std::get_if<NewStep>(&it.what)) ++steps, nodes += int64_t(st->step.record.nodes.size());
        if (healthy) write(it, report);
      }
      if (tx) tx->commit();
    } catch (const InputError& e) {
      failure = e.what();
    } catch (const std::exception& e) {
      failure = path_ + ": " + e.what();
    }
    if (!failure.empty()) {
      fail(failure);
      for (auto& it : pending) {
        if (std::holds_alternative<NewStep>(it.what)) ++steps;
        batch.push_back(std::move(it));
      }
    }

    lk.lock();
    const bool ok = healthy && failure.empty();
    if (ok) {
      stats_.transactions++;
      stats_.steps_committed += steps;
      stats_.nodes_committed += nodes;
    } else {
      stats_.steps_dropped += steps;
    }
    auto cb = on_commit_;
    const std::string err = error_;
    lk.unlock();
    if (ok && cb && !report.runs.empty()) cb(report);
    for (auto& it : batch) {
      if (!it.done) continue;
      if (ok || std::holds_alternative<Flush>(it.what)) it.done->set_value(it.result);
      else it.done->set_exception(std::make_exception_ptr(InputError("", "session not recorded: " + err)));
    }
    lk.lock();
  }
}

}  // namespace specscope::sessions

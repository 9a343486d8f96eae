#include "app/cli/recording.h"

#include <cstdio>

#include "engine/model/model.h"
#include "engine/util/cpu_info.h"
#include "engine/util/error.h"
#include "sessions/schema.h"

namespace specscope::cli {

std::unique_ptr<Recorder> Recorder::from_args(Args& args) {
  const bool off = args.has("--no-record");
  auto path = args.get("--session-db");
  auto title = args.get_or("--title", "");
  if (off) return nullptr;
  auto r = std::make_unique<Recorder>();
  r->writer_ = std::make_unique<sessions::SessionWriter>(path ? *path : sessions::default_session_db_path());
  r->title_ = title;
  return r;
}

int64_t Recorder::begin_session(const Model& model, const std::string& kind, const std::string& backend) {
  sessions::SessionMeta m;
  m.kind = kind;
  m.title = title_;
  m.model = model.identity();
  m.backend = backend;
  m.device = cpu_model_name();
  session_ = writer_->begin_session(m);
  return session_;
}

int64_t Recorder::begin_run(const sessions::RunMeta& meta) { return writer_->begin_run(session_, meta); }

void Recorder::step(int64_t run_id, const StepRecord& rec, const std::string& text_piece) {
  writer_->append_step(run_id, rec, text_piece);
}

void Recorder::finish_run(int64_t run_id, const sessions::RunOutcome& outcome) { writer_->finish_run(run_id, outcome); }

void Recorder::message(const std::string& role, const std::string& content, int64_t run_id) {
  writer_->append_message(session_, {role, content, run_id});
}

void Recorder::finish() {
  writer_->flush();
  const auto err = writer_->error();
  const auto stats = writer_->stats();
  if (!err.empty())
    throw InputError(writer_->path(), "session " + std::to_string(session_) + " is incomplete: " +
                                          std::to_string(stats.steps_committed) + " steps recorded, " +
                                          std::to_string(stats.steps_dropped) + " lost (" + err + ")");
  std::fprintf(stderr, "[session %lld recorded in %s]\n", static_cast<long long>(session_), writer_->path().c_str());
}

}  // namespace specscope::cli

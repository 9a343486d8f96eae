#include "ui/engine/engine_worker.h"

#include <QMetaType>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/methods/speculative_generator.h"
#include "engine/methods/step_record_json.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/cpu_info.h"
#include "engine/util/error.h"
#include "sessions/summary_json.h"
#include "sessions/writer.h"

Q_DECLARE_METATYPE(specscope::StepRecord)
Q_DECLARE_METATYPE(specscope::RunSummary)
Q_DECLARE_METATYPE(specscope::ui::GenerationJob)

namespace specscope::ui {

namespace {

// Round-robin turns for interleaved lanes: lane i runs one step, then passes the turn on. Finished lanes
// leave the rotation. Only one lane computes at a time, so timings stay comparable.
class Turnstile {
 public:
  explicit Turnstile(int lanes) : active_(size_t(lanes), true) {}
  void wait_turn(int lane) {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return turn_ == lane || released_; });
  }
  void pass(int lane) {
    std::lock_guard lk(mu_);
    advance(lane);
    cv_.notify_all();
  }
  void leave(int lane) {
    std::lock_guard lk(mu_);
    active_[size_t(lane)] = false;
    if (turn_ == lane) advance(lane);
    cv_.notify_all();
  }
  void release_all() {
    std::lock_guard lk(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  void advance(int from) {
    const int n = int(active_.size());
    for (int k = 1; k <= n; ++k) {
      int next = (from + k) % n;
      if (active_[size_t(next)]) {
        turn_ = next;
        return;
      }
    }
    turn_ = -1;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> active_;
  int turn_ = 0;
  bool released_ = false;
};


}  // namespace

EngineWorker::EngineWorker() = default;
EngineWorker::~EngineWorker() = default;

void EngineWorker::register_types() {
  qRegisterMetaType<specscope::StepRecord>("specscope::StepRecord");
  qRegisterMetaType<specscope::RunSummary>("specscope::RunSummary");
  qRegisterMetaType<specscope::ui::GenerationJob>("specscope::ui::GenerationJob");
}

std::shared_ptr<const Model> EngineWorker::model_for(const QString& path) {
  if (model_ && model_path_ == path) return model_;
  emit modelLoading(path);
  model_.reset();  // free the old weights first
  model_ = Model::load(path.toStdString());
  model_path_ = path;
  const auto& c = model_->config();
  emit modelLoaded(path, QString("%1 · %2 layers · hidden %3 · %4M parameters · %5")
                             .arg(QString::fromStdString(c.architecture))
                             .arg(c.num_layers)
                             .arg(c.hidden_size)
                             .arg(double(model_->parameter_count()) / 1e6, 0, 'f', 1)
                             .arg(QString::fromStdString(model_->weights_dtype())));
  return model_;
}

void EngineWorker::loadModel(const QString& path) {
  try {
    model_for(path);
  } catch (const std::exception& e) {
    emit failed(QString::fromStdString(e.what()));
  }
}

void EngineWorker::run(const GenerationJob& job) {
  cancel_.store(false);
  qint64 session = job.session_id;
  try {
    auto model = model_for(job.model_path);
    std::vector<std::unique_ptr<Method>> methods;
    for (const auto& spec : job.lanes) methods.push_back(make_method(spec, *model));
    // A raw prompt when not chatting; the whole conversation through the chat template otherwise.
    if (job.conversation.empty()) throw InputError("prompt", "empty conversation");
    const auto ids = job.chat ? encode_conversation(*model, job.conversation)
                              : encode_prompt(*model, job.conversation.front().content, false);

    const Backend backend = resolve_backend(job.backend);
    std::unique_ptr<sessions::SessionWriter> writer;
    if (job.record) {
      try {
        writer = std::make_unique<sessions::SessionWriter>(job.session_db.toStdString());
        if (session == 0) {
          sessions::SessionMeta meta;
          meta.kind = job.kind.toStdString();
          meta.title = job.title.toStdString();
          meta.model = model->identity();
          meta.backend = backend_name(backend);
          meta.device = backend_description(backend);
          session = writer->begin_session(meta);
        }
        if (job.chat) writer->append_message(session, {"user", job.conversation.back().content, 0});
      } catch (const InputError& e) {
        emit recordingFailed(QString::fromStdString(e.what()));
        writer.reset();
      }
    }

    const int n = int(job.lanes.size());
    std::vector<GenerateResult> gens(static_cast<size_t>(n));
    std::vector<RunSummary> summaries(static_cast<size_t>(n));
    std::vector<int64_t> run_ids(static_cast<size_t>(n), 0);
    for (int l = 0; l < n; ++l)
      if (writer) {
        const std::string prompt = job.conversation.back().content;
        try {
          run_ids[size_t(l)] = writer->begin_run(session, {job.lanes[size_t(l)], job.options.sampling,
                                                           job.options.max_tokens, job.options.stop_strings, prompt,
                                                           job.chat, int(ids.size())});
        } catch (const InputError& e) {
          emit recordingFailed(QString::fromStdString(e.what()));
        }
      }

    Turnstile turns(n);
    auto run_lane = [&](int l) {
      emit laneStarted(l, QString::fromStdString(job.lanes[size_t(l)].name));
      auto ctx = new_context(*model, backend, 0);
      auto on_step = [&, l](const StepRecord& rec, const std::string& piece) {
        if (writer && run_ids[size_t(l)]) writer->append_step(run_ids[size_t(l)], rec, piece);
        emit stepReady(l, rec, QString::fromStdString(piece));
        if (job.interleaved && n > 1) {
          turns.pass(l);
          turns.wait_turn(l);
        }
        return !cancel_.load();
      };
      if (job.interleaved && n > 1) turns.wait_turn(l);
      auto res = generate_speculative(*model, *ctx, *methods[size_t(l)], ids, job.options, on_step);
      if (job.interleaved && n > 1) turns.leave(l);
      if (job.interleaved && n > 1) {
        // Interleaved lanes wait for their turns inside the step callback, so wall-clock decode time would
        // count the other lanes' work too: time each lane by its own steps' measured compute instead.
        int64_t us = 0;
        for (const auto& st : res.steps)
          if (st.root_token >= 0) us += st.timings.total_us();
        res.summary.decode_seconds = double(us) * 1e-6;
        res.summary.tokens_per_second = us > 0 ? res.summary.new_tokens / res.summary.decode_seconds : 0;
      }
      summaries[size_t(l)] = res.summary;
      gens[size_t(l)] = std::move(res.gen);
    };
    if (job.interleaved && n > 1) {
      std::vector<std::thread> threads;
      std::vector<std::string> errors(static_cast<size_t>(n));
      for (int l = 0; l < n; ++l)
        threads.emplace_back([&, l] {
          try {
            run_lane(l);
          } catch (const std::exception& e) {
            errors[size_t(l)] = e.what();
            turns.leave(l);
          }
        });
      for (auto& t : threads) t.join();
      for (auto& e : errors)
        if (!e.empty()) throw InputError("", e);
    } else {
      for (int l = 0; l < n && !cancel_.load(); ++l) run_lane(l);
    }

    const double reference_tps = summaries.empty() ? 0 : summaries[0].tokens_per_second;
    for (int l = 0; l < n; ++l) {
      auto& s = summaries[size_t(l)];
      if (l > 0 && reference_tps > 0) s.speedup_vs_vanilla = s.tokens_per_second / reference_tps;
      const GenerateResult& gen = gens[size_t(l)];
      const bool same = gen.tokens == gens[0].tokens;
      if (writer && run_ids[size_t(l)]) {
        // The same summary the CLI records, so `specscope-cli sessions replay` can print this run too.
        const auto j = sessions::run_summary_json(s, gen, job.options.sampling.describe(), "cpu");
        writer->finish_run(run_ids[size_t(l)], {s, gen.text, n > 1 ? std::optional<bool>(same) : std::nullopt,
                                                j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
      }
      emit laneFinished(l, s, QString::fromStdString(gen.text), same);
    }
    if (writer) {
      if (job.chat && n == 1) writer->append_message(session, {"assistant", gens[0].text, run_ids[0]});
      writer->flush();
      if (!writer->error().empty()) emit recordingFailed(QString::fromStdString(writer->error()));
    }
    emit jobFinished(session, cancel_.load());
  } catch (const std::exception& e) {
    emit failed(QString::fromStdString(e.what()));
    emit jobFinished(session, true);
  }
}

}  // namespace specscope::ui

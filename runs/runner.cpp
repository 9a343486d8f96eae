#include "runs/runner.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "engine/methods/speculative_generator.h"
#include "engine/model/family_manifest.h"
#include "engine/util/error.h"
#include "engine/util/interrupt.h"
#include "runs/context_fit.h"
#include "runs/lane_resolver.h"
#include "runs/run_statistics.h"
#include "runs/turnstile.h"
#include "sessions/summary_json.h"
#include "sessions/writer.h"

namespace specscope::runs {

std::string describe_model(const Model& model) {
  const auto& c = model.config();
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s · %d layers · hidden %d · %.1fM parameters · %s", c.architecture.c_str(),
                c.num_layers, c.hidden_size, double(model.parameter_count()) / 1e6, model.weights_dtype().c_str());
  return buf;
}

const RunResult* JobResult::find(int prompt, int lane, int target) const {
  if (lane < 0 && target >= 0 && target < int(targets.size()) && targets[size_t(target)].reference_lane >= 0)
    lane = targets[size_t(target)].reference_lane;
  for (const auto& r : runs)
    if (r.key.prompt == prompt && r.key.lane == lane && (lane >= 0 || r.key.target == target)) return &r;
  return nullptr;
}

namespace {

// Everything one job shares between its runs: targets, methods, the session writer.
struct JobState {
  const Job& job;
  JobObserver& observer;
  std::atomic<bool>& cancel;
  JobResult& result;
  std::vector<std::shared_ptr<const Model>> models;  // per target
  std::vector<Lane> lanes;                             // job.lanes, tree=auto resolved
  std::vector<int> lane_target;                        // per lane
  std::vector<std::unique_ptr<Method>> methods;        // per lane
  std::vector<std::unique_ptr<Method>> reference_methods;  // per target (vanilla)
  std::vector<Backend> backends;                           // per target: where its runs run (backend_for)
  sessions::SessionWriter* writer = nullptr;
  std::unique_ptr<sessions::SessionWriter> own_writer;
  int64_t session = 0;
  bool recording_reported = false;

  // The first recording failure is said at once, while the job goes on unrecorded (a disk that fills mid-answer);
  // the job's end says what the store kept (at the end of JobRunner::run).
  void recording_stopped(const std::string& why) {
    if (recording_reported) return;
    recording_reported = true;
    result.recording_error = "recording stopped: " + why;
    observer.recording_failed(result.recording_error);
  }
};

// One run: a lane's method (or a target's reference) on one prompt. `turns` interleaves runs; `slot` is this
// run's place in the rotation.
RunResult run_one(JobState& js, const RunKey& key, const std::string& label, const MethodSpec& spec, Method& method,
                  Turnstile* turns, int slot) {
  // An interleaved run does everything in its turn, its start too: the observer, the session writer's ordering and
  // the job's shared state are then only ever touched by one run at a time.
  if (turns) turns->wait_turn(slot);
  const Model& model = *js.models[size_t(key.target)];
  const Job& job = js.job;
  RunResult rr;
  rr.key = key;
  rr.label = label;
  rr.method = spec;
  // The prompt is fitted to this run's own context (targets differ in tokenizer, template and context length).
  auto ctx = new_context(model, js.backends[size_t(key.target)], job.n_ctx);
  FittedPrompt fitted = fit_prompt(model, job.prompts[size_t(key.prompt)], job.chat, ctx->n_ctx(),
                                   job.options.max_tokens, job.template_kwargs);
  const std::vector<int32_t>& ids = fitted.ids;
  rr.context = fitted.use;
  if (job.chat) rr.reply = reply_shape_of(model, ids);
  GenerateOptions options = job.options;
  options.keep_special_text = rr.reply.format == ReplyFormat::Harmony;
  int64_t run_id = 0;
  if (js.writer) {
    const sessions::RunMeta meta{spec,     job.options.sampling, job.options.max_tokens, job.options.stop_strings,
                                 job.prompts[size_t(key.prompt)].text, job.chat, int(ids.size()), key.lane,
                                 label,    model.identity()};
    try {
      run_id = js.writer->begin_run(js.session, meta);
    } catch (const InputError& e) {
      js.recording_stopped(e.what());
    }
  }
  rr.run_id = run_id;
  js.observer.run_started(key, label);
  js.observer.context_fitted(key, rr.context);
  js.observer.reply_shaped(key, rr.reply);
  auto turn_start = std::chrono::steady_clock::now();
  std::vector<std::string> pieces;  // a reasoning reply's, for its figures by part
  auto on_step = [&](const StepRecord& rec, const std::string& piece) {
    if (rr.reply.format != ReplyFormat::Plain) pieces.push_back(piece);
    if (run_id) {
      js.writer->append_step(run_id, rec, piece);
      if (js.writer->failed()) js.recording_stopped(js.writer->error());
    }
    const bool go = js.observer.step(key, rec, piece);
    if (!go) js.cancel.store(true);
    if (turns && (js.cancel.load() || std::chrono::steady_clock::now() - turn_start >= std::chrono::milliseconds(job.turn_ms))) {
      turns->pass(slot);
      turns->wait_turn(slot);
      turn_start = std::chrono::steady_clock::now();
    }
    return !js.cancel.load();
  };
  // Stop also cuts a long prompt's prefill short (between its layers), not only a decoding step.
  const InterruptScope stoppable(&js.cancel);
  auto res = generate_speculative(model, *ctx, method, ids, options, on_step);
  if (turns) {
    turns->leave(slot);
    // Interleaved runs wait for their turns inside the step callback, so wall-clock decode time would count
    // the other runs' work too: a run's throughput is its own steps' measured compute.
    res.summary.tokens_per_second = compute_tokens_per_second(res.steps);
    res.summary.decode_seconds =
        res.summary.tokens_per_second > 0 ? res.summary.new_tokens / res.summary.tokens_per_second : 0;
    res.summary.wall_seconds = res.summary.prefill_seconds + res.summary.decode_seconds;
  }
  rr.summary = std::move(res.summary);
  rr.gen = std::move(res.gen);
  rr.steps = std::move(res.steps);
  if (rr.reply.format != ReplyFormat::Plain && pieces.size() == rr.steps.size())
    rr.reply_parts = reply_part_statistics(rr.steps, pieces, rr.reply);
  rr.summary.method = spec.name;
  return rr;
}

// Speedup and verdict against the run's own target's reference, then recorded and reported.
void finish_run(JobState& js, RunResult& rr, const RunResult* reference) {
  if (reference && js.job.references) {
    const double ref_tps = reference->summary.tokens_per_second;
    rr.summary.speedup_vs_vanilla = ref_tps > 0 ? rr.summary.tokens_per_second / ref_tps : kNoValue;
    rr.identical = rr.gen.tokens == reference->gen.tokens;
  }
  if (rr.key.lane >= 0) rr.tree = js.result.trees[size_t(rr.key.lane)];
  const TargetInfo& target = js.result.targets[size_t(rr.key.target)];
  rr.summary_json =
      sessions::run_summary_json(rr.summary, rr.gen, js.job.options.sampling.describe(), target.backend, target.device);
  sessions::add_reply_shape(rr.summary_json, rr.reply);
  if (rr.reply_parts) {
    auto figures = [](const ReplyPartFigures& f) {
      return nlohmann::json{{"steps", f.steps}, {"tokens", f.tokens}, {"tau", f.tau}, {"tokens_per_second", f.tokens_per_second}};
    };
    rr.summary_json["reply"]["reasoning"] = figures(rr.reply_parts->reasoning);
    rr.summary_json["reply"]["answer"] = figures(rr.reply_parts->answer);
  }
  if (rr.tree)
    // Expected beside measured: the model's tokens/s and speedup next to the run's own (tokens_per_second, and
    // speedup_vs_vanilla where a reference ran).
    rr.summary_json["tree_auto"] = {{"options", rr.tree->options},
                                    {"expected_speedup", rr.tree->expected_speedup},
                                    {"expected_tokens_per_second", rr.tree->expected_tokens_per_second},
                                    {"expected_vanilla_tokens_per_second", rr.tree->vanilla_tokens_per_second},
                                    {"why", rr.tree->summary},
                                    {"trials", tree_trials_json(*rr.tree)}};
  if (js.writer && rr.run_id)
    js.writer->finish_run(rr.run_id, {rr.summary, rr.gen.text, rr.identical,
                                      rr.summary_json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  js.observer.run_finished(rr);
}

// A run to make for one prompt.
struct Planned {
  RunKey key;
  std::string label;
  const MethodSpec* spec;
  Method* method;
};

void run_prompt(JobState& js, int p) {
  const Job& job = js.job;
  const int n_targets = int(js.models.size());

  // References first (a target's vanilla lane, or a vanilla run of its own), then the other lanes.
  static const MethodSpec kVanilla{};
  std::vector<Planned> plan;
  for (int t = 0; t < n_targets && job.references; ++t) {
    const int lane = js.result.targets[size_t(t)].reference_lane;
    if (lane >= 0)
      plan.push_back({{p, lane, t}, js.lanes[size_t(lane)].label, &js.lanes[size_t(lane)].method,
                      js.methods[size_t(lane)].get()});
    else
      plan.push_back({{p, -1, t}, "vanilla", &kVanilla, js.reference_methods[size_t(t)].get()});
  }
  const size_t n_refs = plan.size();
  for (int l = 0; l < int(js.lanes.size()); ++l) {
    const int t = js.lane_target[size_t(l)];
    if (job.references && js.result.targets[size_t(t)].reference_lane == l) continue;
    plan.push_back({{p, l, t}, js.lanes[size_t(l)].label, &js.lanes[size_t(l)].method, js.methods[size_t(l)].get()});
  }

  auto& runs = js.result.runs;
  runs.reserve(runs.size() + plan.size());  // finish_run() takes pointers to the references in `runs`
  std::vector<const RunResult*> reference(static_cast<size_t>(n_targets), nullptr);
  auto finish = [&](RunResult&& rr, size_t i) {
    runs.push_back(std::move(rr));
    RunResult& r = runs.back();
    if (i < n_refs) reference[size_t(r.key.target)] = &r;
    finish_run(js, r, reference[size_t(r.key.target)]);
  };

  if (job.schedule == Schedule::Interleaved && plan.size() > 1) {
    // Every run of the prompt, references included, takes one step in turn: the references are measured under
    // the same conditions as the lanes they are the yardstick for (the app draws while a race runs).
    Turnstile turns(int(plan.size()));
    std::vector<std::optional<RunResult>> out(plan.size());
    std::vector<std::string> errors(plan.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < plan.size(); ++i)
      threads.emplace_back([&, i] {
        const Planned& pl = plan[i];
        try {
          out[i] = run_one(js, pl.key, pl.label, *pl.spec, *pl.method, &turns, int(i));
        } catch (const std::exception& e) {
          errors[i] = e.what();
          turns.leave(int(i));
        }
      });
    for (auto& th : threads) th.join();
    for (size_t i = 0; i < plan.size(); ++i)
      if (!errors[i].empty())
        throw InputError(plan[i].key.lane >= 0 ? lane_name(plan[i].key.lane, plan[i].label) : "reference", errors[i]);
    for (size_t i = 0; i < plan.size(); ++i) finish(std::move(*out[i]), i);
  } else {
    for (size_t i = 0; i < plan.size() && !js.cancel.load(); ++i) {
      const Planned& pl = plan[i];
      finish(run_one(js, pl.key, pl.label, *pl.spec, *pl.method, nullptr, 0), i);
    }
  }
}

}  // namespace

JobResult JobRunner::run(const Job& job, JobObserver& observer) {
  cancel_.store(false);
  JobResult result;
  if (job.lanes.empty()) throw InputError("lanes", "a job needs at least one lane");
  if (job.prompts.empty()) throw InputError("prompt", "a job needs at least one prompt");
  job.options.sampling.validate();
  JobState js{job, observer, cancel_, result, {}, job.lanes, {}, {}, {}, {}, nullptr, {}, 0};

  // Every distinct target once, in the order the lanes name them.
  for (const auto& lane : job.lanes) {
    int t = 0;
    while (t < int(result.targets.size()) && !same_path(result.targets[size_t(t)].path, lane.target)) ++t;
    if (t == int(result.targets.size())) result.targets.push_back({lane.target, {}, "", -1, "", ""});
    js.lane_target.push_back(t);
  }
  std::vector<std::string> paths;
  for (const auto& t : result.targets) {
    // A target folder that is gone (deleted after it was chosen) is said before anything is freed: the models the
    // last job loaded stay loaded.
    std::error_code ec;
    if (!cache_.has(t.path) && !std::filesystem::exists(t.path, ec) && !ec)
      throw InputError(t.path, "no such file or directory");
    paths.push_back(t.path);
  }
  cache_.keep_only(paths);  // free models no lane uses before loading new ones
  for (auto& t : result.targets) {
    auto model = cache_.get(
        t.path, [&](const std::string& path, bool done) { if (!done) observer.model_loading(path); },
        [&](const std::string& path, uint64_t done, uint64_t total) { observer.model_load_progress(path, done, total); },
        job.backend);
    t.identity = model->identity();
    t.description = describe_model(*model);
    const Backend b = backend_for(*model, job.backend);  // per target: a model only the CPU computes runs there
    js.backends.push_back(b);
    t.backend = backend_name(b);
    t.device = backend_description(b);
    observer.model_loaded(t.path, *model);
    js.models.push_back(std::move(model));
  }
  // tree=auto: each such lane's size is chosen for this machine before its method is built, calibrated on the
  // job's first prompts.
  // On CPU, tree=auto is the default for a tunable method whose lane fixes neither `tree` nor a size: the published
  // trees were sized for GPUs, where an extra verified token costs almost nothing (issue 22).
  result.trees.assign(js.lanes.size(), std::nullopt);
  std::vector<bool> tune(js.lanes.size(), false);
  for (size_t l = 0; l < js.lanes.size(); ++l) {
    auto& spec = js.lanes[l].method;
    auto it = spec.options.find("tree");
    const bool cpu = js.backends[size_t(js.lane_target[l])] == Backend::Cpu;
    const bool implied = it == spec.options.end() && cpu && job.tree_auto_on_cpu && tree_tunable(spec.name) &&
                         !tree_size_given(spec);
    if (!implied && (it == spec.options.end() || it->second != "auto")) continue;
    if (it != spec.options.end()) spec.options.erase(it);
    tune[l] = tree_tunable(spec.name);  // other methods: their published trees
  }
  // Methods: a lane that cannot be built is named, before any lane spends time calibrating its tree.
  js.methods.resize(js.lanes.size());
  for (size_t l = 0; l < js.lanes.size(); ++l) {
    const Lane& lane = js.lanes[l];
    try {
      js.methods[l] = make_method(lane.method, *js.models[size_t(js.lane_target[l])]);
    } catch (const InputError& e) {
      throw InputError(lane_name(int(l), lane.label), e.what());
    }
    auto& target = result.targets[size_t(js.lane_target[l])];
    if (job.references && lane.method.name == "vanilla" && target.reference_lane < 0) target.reference_lane = int(l);
  }
  // tree=auto: each such lane's size is chosen for this machine, calibrated on the job's first kCalibrationPrompts
  // prompts (tree_tuner.h says why that many), and its method built again with the chosen sizes.
  for (size_t l = 0; l < js.lanes.size(); ++l) {
    if (!tune[l]) continue;
    auto& spec = js.lanes[l].method;
    observer.tree_tuning(int(l), js.lanes[l].label, nullptr);
    const Model& target = *js.models[size_t(js.lane_target[l])];
    std::vector<std::vector<int32_t>> calibration;
    for (size_t p = 0; p < job.prompts.size() && p < size_t(kCalibrationPrompts); ++p)
      calibration.push_back(
          fit_prompt(target, job.prompts[p], job.chat, target.config().max_position_embeddings, kCalibrationTokens,
                     job.template_kwargs)
              .ids);
    try {
      result.trees[l] = tune_tree(target, spec, job.backend, calibration);
    } catch (const InputError& e) {
      throw InputError(lane_name(int(l), js.lanes[l].label), e.what());
    }
    apply_tree_options(spec, result.trees[l]->options);
    observer.tree_tuning(int(l), js.lanes[l].label, &*result.trees[l]);
    js.methods[l] = make_method(spec, target);
  }
  result.lanes = js.lanes;

  for (size_t t = 0; t < result.targets.size(); ++t) js.reference_methods.push_back(make_method(MethodSpec{}, *js.models[t]));

  result.backend = result.targets[0].backend;
  result.device = result.targets[0].device;

  // Recording: never throws into the run; a failure is reported and the job goes on unrecorded.
  if (job.record) {
    try {
      js.writer = job.record->writer.get();
      if (!js.writer) {
        js.own_writer = std::make_unique<sessions::SessionWriter>(job.record->db_path);
        js.writer = js.own_writer.get();
      }
      js.session = job.record->session_id;
      if (js.session == 0) {
        sessions::SessionMeta meta;
        meta.kind = job.record->kind;
        meta.title = job.record->title;
        meta.model = result.targets[0].identity;
        meta.backend = result.backend;
        meta.device = result.device;
        js.session = js.writer->begin_session(meta);
      }
    } catch (const InputError& e) {
      js.recording_stopped(e.what());
      js.writer = nullptr;
    }
  }
  result.session_id = js.session;
  const bool chat_turn = job.chat && job.lanes.size() == 1 && job.prompts.size() == 1;
  if (js.writer && chat_turn) js.writer->append_message(js.session, {"user", job.prompts[0].text, 0});

  for (int p = 0; p < int(job.prompts.size()) && !cancel_.load(); ++p) run_prompt(js, p);
  result.cancelled = cancel_.load();

  if (js.writer) {
    if (chat_turn && !result.runs.empty()) {
      const RunResult& answer = result.runs.back();
      js.writer->append_message(js.session, {"assistant", answer.gen.text, answer.run_id});
    }
    js.writer->flush();
    if (!js.writer->error().empty()) {
      // The last word on it: why, and what of this job the store keeps (everything committed before stays).
      size_t steps = 0;
      for (const auto& r : result.runs) steps += r.steps.size();
      const std::string kept = js.session > 0 ? "; session " + std::to_string(js.session) + " keeps " +
                                                    std::to_string(js.writer->stats().steps_committed) + " of this job's " +
                                                    std::to_string(steps) + " steps"
                                              : "; nothing of this job was recorded";
      result.recording_error = "recording stopped: " + js.writer->error() + kept;
      observer.recording_failed(result.recording_error);
    }
  }
  return result;
}

}  // namespace specscope::runs

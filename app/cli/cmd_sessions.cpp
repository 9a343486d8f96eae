// specscope-cli sessions list | show ID | replay ID | export ID | delete ID | note ID TEXT: the session store,
// read without loading any model. export writes JSON, CSV or a self-contained web page (--format html).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/compare_report.h"
#include "app/cli/reply_printer.h"
#include "app/cli/run_report.h"
#include "engine/util/error.h"
#include "sessions/export.h"
#include "sessions/html/html_export.h"
#include "sessions/reader.h"
#include "sessions/replay.h"
#include "sessions/schema.h"
#include "sessions/summary_json.h"

namespace specscope::cli {

namespace {

int64_t parse_id(const std::vector<std::string>& pos, size_t i, const char* what) {
  if (pos.size() <= i) throw InputError("sessions", std::string("missing ") + what);
  try {
    size_t used = 0;
    long long v = std::stoll(pos[i], &used);
    if (used != pos[i].size() || v <= 0) throw std::invalid_argument("");
    return v;
  } catch (const std::exception&) {
    throw InputError("sessions", std::string("expected a positive ") + what + ", got '" + pos[i] + "'");
  }
}

int list_sessions(sessions::SessionReader& reader, bool json) {
  auto all = reader.list();
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (auto& s : all)
      j.push_back({{"id", s.id}, {"created_at", s.created_at}, {"kind", s.kind}, {"title", s.title},
                   {"model", s.model_path}, {"methods", s.methods}, {"steps", s.steps}});
    std::printf("%s\n", json_line(j).c_str());
    return 0;
  }
  std::printf("%6s  %-24s %-8s %7s  %-30s %s\n", "id", "created (UTC)", "kind", "steps", "methods", "title / model");
  for (auto& s : all) {
    std::string methods;
    for (size_t i = 0; i < s.methods.size() && i < 6; ++i) methods += (i ? "," : "") + s.methods[i];
    if (s.methods.size() > 6) methods += ",... (" + std::to_string(s.methods.size()) + " runs)";
    std::printf("%6lld  %-24s %-8s %7lld  %-30s %s\n", (long long)s.id, s.created_at.c_str(), s.kind.c_str(),
                (long long)s.steps, methods.c_str(), (s.title.empty() ? s.model_path : s.title).c_str());
  }
  return 0;
}

int show_session(sessions::SessionReader& reader, int64_t id) {
  auto s = reader.session(id);
  const auto& m = s.meta;
  std::printf("session %lld (%s), created %s by SpecScope %s\n", (long long)s.id, m.kind.c_str(), s.created_at.c_str(),
              m.app_version.c_str());
  if (!m.title.empty()) std::printf("title: %s\n", m.title.c_str());
  if (!m.notes.empty()) std::printf("notes: %s\n", m.notes.c_str());
  std::printf("model: %s (%s)\n  config sha256 %s\n  weight index sha256 %s\n", m.model.path.c_str(),
              m.model.architecture.c_str(), m.model.config_sha256.c_str(), m.model.weights_index_sha256.c_str());
  std::printf("backend: %s on %s\n", m.backend.c_str(), m.device.c_str());
  for (auto& msg : s.messages) std::printf("[%s] %s\n", msg.role.c_str(), msg.content.c_str());
  for (auto& r : s.runs) {
    std::printf("run %lld #%d %-9s %s, max %d tokens, %lld steps, %s", (long long)r.id, r.ordinal,
                r.meta.method.name.c_str(), r.meta.sampling.describe().c_str(), r.meta.max_tokens,
                (long long)r.step_count, r.status.c_str());
    if (r.outcome) {
      const auto& o = r.outcome->summary;
      std::printf(": %d tokens, tau %.2f, %.1f tok/s, stop %s", o.new_tokens, o.tau, o.tokens_per_second,
                  o.stop_reason.c_str());
      if (r.outcome->identical_to_reference) std::printf(", %s", *r.outcome->identical_to_reference ? "same" : "DIFFERENT");
    }
    std::printf("\n");
  }
  return 0;
}

// A single run, printed as `run` printed it (text or --json), at the recorded pace times --speed.
// A reasoning model's reply is split as `run` split it, by the shape its summary recorded.
int replay_one(sessions::SessionReader& reader, int64_t run_id, const sessions::ReplayOptions& opts, bool json) {
  const auto recorded = reader.run(run_id);
  ReplyPrinter reply(recorded.outcome ? sessions::recorded_reply_shape(recorded.outcome->summary_json,
                                                                       recorded.outcome->output_text)
                                      : ReplyShape{});
  sessions::replay_run(reader, run_id, opts, [&](const sessions::RecordedStep& s) {
    if (json) std::printf("%s\n", step_json_line(s.record).c_str());
    else reply.print(s.text_piece);
    std::fflush(stdout);
    return true;
  });
  reply.finish();
  const auto& run = recorded;
  if (!run.outcome) {
    if (!json) std::printf("\n");
    std::fprintf(stderr, "[run %lld is incomplete: %lld steps recorded, status %s]\n", (long long)run_id,
                 (long long)run.step_count, run.status.c_str());
    return 0;
  }
  auto summary = nlohmann::json::parse(run.outcome->summary_json);
  if (json) {
    std::printf("%s\n", json_line(summary).c_str());
  } else {
    std::printf("\n");
    std::fprintf(stderr, "%s\n", run_footer(summary).c_str());
  }
  return 0;
}

// A race, reported as `compare` reported it: the same report built from the recorded runs.
int replay_compare(sessions::SessionReader& reader, const sessions::SessionRow& s, bool json) {
  std::vector<ReportRun> runs;
  std::string sampling;
  int max_tokens = 0;
  bool greedy = true;
  for (const auto& r : s.runs) {
    if (!r.outcome) throw InputError("session " + std::to_string(s.id), "run " + std::to_string(r.id) +
                                                                          " is incomplete; replay it with --run");
    sampling = r.meta.sampling.describe();
    max_tokens = r.meta.max_tokens;
    greedy = r.meta.sampling.greedy();
    ReportRun rr{r.meta.prompt, r.meta.label, r.meta.method, r.meta.target, r.outcome->summary,
                 r.outcome->identical_to_reference.value_or(false), {}, nullptr};
    // The lane's tree=auto choice, as the live report read it from the same recorded summary.
    if (const auto summary = nlohmann::json::parse(r.outcome->summary_json, nullptr, false);
        summary.is_object() && summary.contains("tree_auto"))
      rr.tree_auto = summary["tree_auto"];
    reader.for_each_step(r.id, 0, r.step_count, [&](sessions::RecordedStep&& st) {
      rr.steps.push_back(std::move(st.record));
    });
    runs.push_back(std::move(rr));
  }
  if (runs.empty()) throw InputError("session " + std::to_string(s.id), "has no runs");
  return print_compare_report(make_compare_report(sampling, max_tokens, greedy, std::move(runs), s.meta.backend,
                                                  s.meta.device),
                              json);
}

}  // namespace

int cmd_sessions(Args& args) {
  auto pos = args.positional();
  const std::string db = args.get_or("--session-db", sessions::default_session_db_path());
  const bool json = args.has("--json");
  if (pos.empty()) throw InputError("sessions", "expected list | show ID | replay ID | export ID | delete ID | note ID TEXT");
  const std::string action = pos[0];
  if (action == "list") {
    args.finish();
    sessions::SessionReader reader(db);
    return list_sessions(reader, json);
  }
  const int64_t id = parse_id(pos, 1, "session id");
  if (action == "show") {
    args.finish();
    sessions::SessionReader reader(db);
    return show_session(reader, id);
  }
  if (action == "replay") {
    sessions::ReplayOptions opts;
    opts.speed = args.get_double("--speed", 1.0);
    opts.follow = args.has("--follow");
    const int run_ordinal = args.get_int("--run", -1);
    args.finish();
    sessions::SessionReader reader(db);
    auto s = reader.session(id);
    if (run_ordinal >= 0 || s.meta.kind != "compare") {
      const int want = run_ordinal >= 0 ? run_ordinal : 0;
      for (const auto& r : s.runs)
        if (r.ordinal == want) return replay_one(reader, r.id, opts, json);
      throw InputError("--run", "session " + std::to_string(id) + " has no run #" + std::to_string(want) + " (" +
                                    std::to_string(s.runs.size()) + " runs)");
    }
    return replay_compare(reader, s, json);
  }
  if (action == "export") {
    const std::string format = args.get_or("--format", "json");
    const std::string table = args.get_or("--table", "nodes");
    const auto steps = args.get("--steps");
    const auto out_path = args.get("--out");
    args.finish();
    if (format != "json" && format != "csv" && format != "html")
      throw InputError("--format", "expected json, csv or html, got '" + format + "'");
    if (table != "nodes" && table != "steps") throw InputError("--table", "expected nodes or steps, got '" + table + "'");
    if (steps && format != "html") throw InputError("--steps", "applies to --format html only");
    sessions::HtmlExportOptions html_options;
    if (steps) html_options.steps = sessions::parse_step_range(*steps);
    sessions::SessionReader reader(db);
    // The web page is built before --out is opened: a bad session or range leaves an existing file untouched.
    std::string page;
    if (format == "html") page = sessions::session_html(reader, id, html_options);
    std::ofstream file;
    if (out_path) {
      file.open(*out_path, std::ios::binary);
      if (!file) throw InputError(*out_path, "cannot write the export file");
    }
    std::ostream& out = out_path ? file : std::cout;
    if (format == "json") sessions::export_json(reader, id, out);
    else if (format == "csv") sessions::export_csv(reader, id, table == "steps" ? sessions::CsvTable::Steps : sessions::CsvTable::Nodes, out);
    else out.write(page.data(), std::streamsize(page.size()));
    out.flush();
    if (out_path && !file) throw InputError(*out_path, "writing the export failed (disk full?)");
    return 0;
  }
  if (action == "delete") {
    args.finish();
    if (!sessions::delete_session(db, id)) throw InputError("session " + std::to_string(id), "no such session in " + db);
    std::fprintf(stderr, "deleted session %lld\n", (long long)id);
    return 0;
  }
  if (action == "note") {
    args.finish();
    if (pos.size() < 3) throw InputError("sessions note", "expected: sessions note ID TEXT");
    if (!sessions::set_session_notes(db, id, pos[2])) throw InputError("session " + std::to_string(id), "no such session in " + db);
    return 0;
  }
  throw InputError("sessions " + action, "unknown action (list | show | replay | export | delete | note)");
}

}  // namespace specscope::cli

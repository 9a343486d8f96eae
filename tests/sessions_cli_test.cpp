// The session commands end to end: run and compare record by default, `sessions replay` prints exactly what
// the live command printed (text and JSON), export, list, show, delete, --no-record, and clear exit-2 errors.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/model/backend.h"
#include "sessions/reader.h"
#include "tests/session_test_support.h"
#include "tests/test_support.h"

using namespace specscope;
namespace fs = std::filesystem;

namespace {

struct Split {
  int code;
  std::string out, err;
};

// Runs the CLI keeping stdout and stderr apart (replay must match the live stdout byte for byte).
Split cli(const std::string& args, const fs::path& dir) {
  const std::string err_file = (dir / "stderr.txt").string();
  std::string cmd = std::string(SPECSCOPE_CLI) + " " + args + " 2>" + err_file;
  Split r{-1, {}, {}};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.err = test::read_bytes(err_file);
  return r;
}

std::string line_with(const std::string& text, const std::string& needle) {
  auto p = text.find(needle);
  if (p == std::string::npos) return "";
  auto b = text.rfind('\n', p);
  b = b == std::string::npos ? 0 : b + 1;
  return text.substr(b, text.find('\n', p) - b);
}

const std::string kModel = "--model " + test::fixture("models/llama_bytelevel_f32");
const std::string kSps = " --method sps --draft " + test::fixture("models/llama_bytelevel_bf16") + " --gamma 3";

}  // namespace

// A reasoning model's chat (the tiny Qwen3 fixture with DeepSeek-R1's template, whose prompt opens the think block)
// replays as it ran: its thinking on stderr after "thinking: ", its answer (none here) on stdout. The store keeps
// the text as generated; the replay splits it by the markers it holds.
TEST(SessionsCli, AReasoningReplyReplaysSplitAsItRan) {
  auto dir = test::fresh_dir("cli-reasoning");
  const std::filesystem::path model = dir / "model";
  std::filesystem::copy(test::fixture("models/qwen3_f32"), model);
  std::filesystem::copy_file(test::fixture("chat_templates/published/deepseek-r1-distill.jinja"),
                             model / "chat_template.jinja");
  const std::string db = " --session-db " + (dir / "s.db").string();
  auto live = cli("run --model " + model.string() + " --chat --prompt Hi --max-tokens 12" + db, dir);
  ASSERT_EQ(live.code, 0) << live.err;
  const std::string thought = line_with(live.err, "thinking: ");
  ASSERT_FALSE(thought.empty()) << live.err;
  EXPECT_EQ(live.out, "\n");
  auto replay = cli("sessions replay 1 --speed 0" + db, dir);
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_EQ(replay.out, live.out);
  EXPECT_EQ(line_with(replay.err, "thinking: "), thought);
  // The footer's figures by part, recorded in the summary: the same line live and replayed.
  const std::string parts = line_with(live.err, "[thinking:");
  EXPECT_NE(parts.find("| answer: 0 tokens"), std::string::npos) << live.err;
  EXPECT_EQ(line_with(replay.err, "[thinking:"), parts);
}

TEST(SessionsCli, RunRecordsAndReplayPrintsTheSameText) {
  auto dir = test::fresh_dir("cli-run");
  const std::string db = " --session-db " + (dir / "s.db").string();
  auto live = cli("run " + kModel + kSps + " --prompt 'Once upon a time' --max-tokens 40 --title demo" + db, dir);
  ASSERT_EQ(live.code, 0) << live.err;
  EXPECT_NE(live.err.find("[session 1 recorded in"), std::string::npos) << live.err;
  auto replay = cli("sessions replay 1 --speed 0" + db, dir);
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_EQ(replay.out, live.out);
  const std::string footer = line_with(live.err, "[sps |");
  ASSERT_FALSE(footer.empty()) << live.err;
  EXPECT_EQ(line_with(replay.err, "[sps |"), footer);

  auto list = cli("sessions list" + db, dir);
  ASSERT_EQ(list.code, 0);
  EXPECT_NE(list.out.find("demo"), std::string::npos) << list.out;
  auto show = cli("sessions show 1" + db, dir);
  ASSERT_EQ(show.code, 0);
  EXPECT_NE(show.out.find("LlamaForCausalLM"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("finished: 40 tokens"), std::string::npos) << show.out;
}

TEST(SessionsCli, JsonReplayIsByteIdenticalAndSampledRunsToo) {
  auto dir = test::fresh_dir("cli-json");
  const std::string db = " --session-db " + (dir / "s.db").string();
  auto live = cli("run " + kModel + kSps + " --prompt 'The sea' --max-tokens 30 --temperature 0.8 --seed 3 --json" + db,
                  dir);
  ASSERT_EQ(live.code, 0) << live.err;
  auto replay = cli("sessions replay 1 --speed 0 --json" + db, dir);
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_EQ(replay.out, live.out);
  // The store kept the sampling parameters.
  sessions::SessionReader r((dir / "s.db").string());
  auto run = r.session(1).runs.at(0);
  EXPECT_FLOAT_EQ(run.meta.sampling.temperature, 0.8f);
  EXPECT_EQ(run.meta.sampling.seed, 3u);
  EXPECT_EQ(run.meta.method.options.at("gamma"), "3");
}

// The CLI and the app used to record the device differently (the CPU's name here, "CPU (name)" there) and the
// app always recorded backend "cpu": both now come from the run library, from the backend it resolved.
TEST(SessionsCli, RecordsTheResolvedBackendAndDeviceAsTheAppDoes) {
  auto dir = test::fresh_dir("cli-device");
  const std::string db = " --session-db " + (dir / "s.db").string();
  auto live = cli("run " + kModel + " --prompt 'The sea' --max-tokens 4" + db, dir);
  ASSERT_EQ(live.code, 0) << live.err;
  sessions::SessionReader r((dir / "s.db").string());
  const auto meta = r.session(1).meta;
  EXPECT_EQ(meta.backend, backend_name(resolve_backend(Backend::Auto)));
  EXPECT_EQ(meta.device, backend_description(resolve_backend(Backend::Auto)));
}

TEST(SessionsCli, CompareReplaysTheSameReport) {
  auto dir = test::fresh_dir("cli-compare");
  const std::string db = " --session-db " + (dir / "s.db").string();
  test::write_bytes(dir / "prompts.txt", "Once upon a time\nThe sea is\n");
  const std::string args = "compare " + kModel + " --methods vanilla,pld,sps --draft " +
                           test::fixture("models/llama_bytelevel_bf16") + " --prompt-file " +
                           (dir / "prompts.txt").string() + " --max-tokens 24";
  auto live = cli(args + db, dir);
  ASSERT_EQ(live.code, 0) << live.err;
  EXPECT_NE(live.out.find("verdict: all greedy outputs identical"), std::string::npos) << live.out;
  auto replay = cli("sessions replay 1" + db, dir);
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_EQ(replay.out, live.out);
  auto live_json = cli(args + " --json" + db, dir);
  auto replay_json = cli("sessions replay 2 --json" + db, dir);
  ASSERT_EQ(live_json.code, 0);
  EXPECT_EQ(replay_json.out, live_json.out);
  // One run of a comparison replays like `run`.
  auto one = cli("sessions replay 1 --run 2 --speed 0" + db, dir);
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.err.find("[sps |"), std::string::npos) << one.err;
}

TEST(SessionsCli, ExportJsonAndCsv) {
  auto dir = test::fresh_dir("cli-export");
  const std::string db = " --session-db " + (dir / "s.db").string();
  ASSERT_EQ(cli("run " + kModel + kSps + " --prompt 'Hello' --max-tokens 20 --chat" + db, dir).code, 0);
  auto js = cli("sessions export 1 --format json" + db, dir);
  ASSERT_EQ(js.code, 0) << js.err;
  auto j = nlohmann::json::parse(js.out);
  EXPECT_EQ(j["format"], "specscope-session");
  ASSERT_EQ(j["runs"].size(), 1u);
  const auto& steps = j["runs"][0]["steps"];
  ASSERT_EQ(int64_t(steps.size()), j["runs"][0]["step_count"].get<int64_t>());
  ASSERT_EQ(j["messages"].size(), 2u);  // the user's prompt and the answer
  EXPECT_EQ(j["messages"][0]["role"], "user");
  EXPECT_EQ(j["messages"][1]["content"], j["runs"][0]["output_text"]);
  size_t nodes = 0;
  for (const auto& s : steps) nodes += s["nodes"].size();

  ASSERT_EQ(cli("sessions export 1 --format csv --out " + (dir / "nodes.csv").string() + db, dir).code, 0);
  const std::string csv = test::read_bytes(dir / "nodes.csv");
  size_t rows = 0;
  bool in_quotes = false;
  for (char c : csv) {
    if (c == '"') in_quotes = !in_quotes;
    if (c == '\n' && !in_quotes) ++rows;
  }
  EXPECT_EQ(rows, nodes + 1) << "one row per node plus the header";
  auto steps_csv = cli("sessions export 1 --format csv --table steps" + db, dir);
  ASSERT_EQ(steps_csv.code, 0);
  EXPECT_EQ(std::count(steps_csv.out.begin(), steps_csv.out.end(), '\n') >= long(steps.size()) + 1, true);
}

TEST(SessionsCli, NoRecordDeleteAndErrors) {
  auto dir = test::fresh_dir("cli-errors");
  const std::string dbpath = (dir / "s.db").string();
  const std::string db = " --session-db " + dbpath;
  ASSERT_EQ(cli("run " + kModel + " --prompt 'Hi' --max-tokens 5 --no-record" + db, dir).code, 0);
  EXPECT_FALSE(fs::exists(dbpath)) << "--no-record touches no store";
  ASSERT_EQ(cli("run " + kModel + " --prompt 'Hi' --max-tokens 5" + db, dir).code, 0);
  ASSERT_EQ(cli("run " + kModel + " --prompt 'Ho' --max-tokens 5" + db, dir).code, 0);
  auto del = cli("sessions delete 1" + db, dir);
  EXPECT_EQ(del.code, 0) << del.err;
  auto again = cli("sessions delete 1" + db, dir);
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("no such session"), std::string::npos) << again.err;
  auto list = cli("sessions list --json" + db, dir);
  ASSERT_EQ(list.code, 0);
  auto j = nlohmann::json::parse(list.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["id"], 2);

  // Bad stores and bad arguments: one clear line, exit code 2, nothing touched.
  test::write_bytes(dir / "notes.txt", "not a database");
  auto bad = cli("run " + kModel + " --prompt 'Hi' --max-tokens 5 --session-db " + (dir / "notes.txt").string(), dir);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("notes.txt: not a SQLite database"), std::string::npos) << bad.err;
  EXPECT_EQ(test::read_bytes(dir / "notes.txt"), "not a database");
  auto ro = cli("run " + kModel + " --prompt 'Hi' --max-tokens 5 --session-db /proc/specscope/s.db", dir);
  EXPECT_EQ(ro.code, 2);
  EXPECT_NE(ro.err.find("/proc/specscope"), std::string::npos) << ro.err;
  for (const char* a : {"sessions replay 99", "sessions show x", "sessions frobnicate 1", "sessions export 2 --format xml",
                        "sessions replay 2 --run 5"}) {
    auto r = cli(std::string(a) + db, dir);
    EXPECT_EQ(r.code, 2) << a << ": " << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << a << ": " << r.err;
  }
  auto missing = cli("sessions list --session-db " + (dir / "nope.db").string(), dir);
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no such session database"), std::string::npos) << missing.err;
}

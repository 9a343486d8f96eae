#pragma once
// Helpers shared by the web-page export's tests (html_export_test.cpp, html_export_browser_test.cpp): sessions
// recorded with the shipped family through the real CLI, a long synthetic session, and the page's JSON document
// taken back out of the HTML. Header-only, so that the tests' build needs no new support library.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sessions/summary_json.h"
#include "sessions/writer.h"
#include "tests/session_test_support.h"
#include "tests/test_support.h"

namespace specscope::test::html {

inline const std::string kPrompt = "What does the word harbor mean?";
inline constexpr const char* kDataOpen = "<script type=\"application/json\" id=\"session-data\">";

// `specscope-cli ARGS --session-db DB`, which must succeed (run and compare use the shipped family by default).
inline void cli_ok(const std::string& args, const std::filesystem::path& db) {
  auto r = run_cli(args + " --session-db " + db.string());
  ASSERT_EQ(r.exit_code, 0) << args << "\n" << r.out;
}

// Greedy EAGLE-2 on the shipped base and head with the published tree (on CPU the default would be a tree sized
// for this machine): dynamic trees of up to 59 drafts, accepted, rejected, not reached.
inline void record_eagle2(const std::filesystem::path& db, int max_tokens = 48) {
  cli_ok("run --chat --method eagle2 --tree published --prompt '" + kPrompt + "' --max-tokens " +
             std::to_string(max_tokens) + " --title harbor",
         db);
}
// A race on the shipped family: three lanes, each with its own vanilla reference run where targets differ.
inline void record_race(const std::filesystem::path& db) {
  cli_ok("compare --chat --tree published --lane eagle2 --lane medusa --lane streaming --prompt '" + kPrompt + "' --max-tokens 32", db);
}
// Sampled SpS (T = 0.8) with the shipped draft model: the "why" panel's min(1, p/q) case.
inline void record_sampled(const std::filesystem::path& db) {
  cli_ok("run --chat --method sps --prompt '" + kPrompt + "' --max-tokens 32 --temperature 0.8 --seed 5", db);
}
// Greedy SpS with the confidence cut (sps:confidence-threshold): chains that stop after an unsure draft.
inline void record_sps_cut(const std::filesystem::path& db) {
  cli_ok("run --chat --method sps --draft " + std::string(SPECSCOPE_SOURCE_DIR) +
             "/assets/models/draft-small --gamma 5 --confidence-threshold 0.6 --prompt '" + kPrompt +
             "' --max-tokens 32",
         db);
}

// A reasoning model's chat recorded through the CLI: the tiny Qwen3 fixture with DeepSeek-R1's template, whose
// prompt opens the think block, so its (random) reply is all reasoning; the run's summary records that shape.
inline void record_reasoning(const std::filesystem::path& db) {
  const std::filesystem::path model = db.parent_path() / "reasoning-model";
  std::filesystem::remove_all(model);
  std::filesystem::copy(fixture("models/qwen3_f32"), model);
  std::filesystem::copy_file(fixture("chat_templates/published/deepseek-r1-distill.jinja"), model / "chat_template.jinja");
  cli_ok("run --model " + model.string() + " --chat --prompt Hi --max-tokens 12", db);
}
// The harmony tokens of a gpt-oss reply and their text: an analysis message, then the final one.
inline const std::vector<std::string> kHarmonyTokens = {"<|channel|>", "analysis", "<|message|>", "Add", " two", ".",
                                                        "<|end|>", "<|start|>", "assistant", "<|channel|>", "final",
                                                        "<|message|>", "4", "!"};
// A gpt-oss chat answer as the runner records one (no fixture model writes harmony's special tokens): one token a
// step, the markers' text kept, the summary saying "reply": harmony.
inline void record_harmony(const std::filesystem::path& db) {
  sessions::SessionWriter w(db.string());
  const int64_t session = w.begin_session(synthetic_session());
  sessions::RunMeta meta = synthetic_run("vanilla");
  meta.chat = true;
  const int64_t run = w.begin_run(session, meta);
  std::string text;
  for (size_t i = 0; i < kHarmonyTokens.size(); ++i) {
    StepRecord s;
    s.step = int(i);
    s.method = "vanilla";
    s.bonus_token = int32_t(100 + i);
    s.bonus_text = kHarmonyTokens[i];
    s.committed = {s.bonus_token};
    w.append_step(run, s, kHarmonyTokens[i]);
    text += kHarmonyTokens[i];
  }
  RunSummary summary;
  summary.method = "vanilla";
  summary.new_tokens = int(kHarmonyTokens.size());
  GenerateResult gen;
  gen.text = text;
  nlohmann::json summary_json = sessions::run_summary_json(summary, gen, "greedy", "cpu");
  sessions::add_reply_shape(summary_json, ReplyShape{ReplyFormat::Harmony, false});
  w.finish_run(run, {summary, text, std::nullopt, summary_json.dump()});
  w.flush();
  EXPECT_EQ(w.error(), "");
}

// A session of `steps` synthetic steps (test::synthetic_step: up to 40 nodes, odd texts, NaNs) in one run.
inline int64_t record_synthetic(const std::filesystem::path& db, int steps) {
  sessions::SessionWriter w(db.string());
  const int64_t session = w.begin_session(synthetic_session());
  const int64_t run = w.begin_run(session, synthetic_run("sps"));
  for (int i = 0; i < steps; ++i) w.append_step(run, synthetic_step(run, i), synthetic_piece(run, i));
  w.flush();
  EXPECT_EQ(w.error(), "");
  return session;
}

// The page's JSON document (empty when it is missing or does not parse) and the page without it.
inline nlohmann::json blob_of(const std::string& page) {
  const size_t at = page.find(kDataOpen);
  if (at == std::string::npos) return {};
  const size_t from = at + std::string(kDataOpen).size(), to = page.find("</script>", from);
  if (to == std::string::npos) return {};
  return nlohmann::json::parse(page.substr(from, to - from), nullptr, false);
}
inline std::string without_blob(const std::string& page) {
  const size_t at = page.find(kDataOpen);
  if (at == std::string::npos) return page;
  return page.substr(0, at) + page.substr(page.find("</script>", at));
}

}  // namespace specscope::test::html

#pragma once
// Helpers shared by the web-page export's tests (html_export_test.cpp, html_export_browser_test.cpp): sessions
// recorded with the shipped family through the real CLI, a long synthetic session, and the page's JSON document
// taken back out of the HTML. Header-only, so that the tests' build needs no new support library.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

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

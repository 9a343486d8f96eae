// The exported web page in a real browser: headless Chromium (Debian's `chromium`) opens the file, the page's
// own script writes what it drew into <pre id="report">, and the test compares that with the session store:
// every step's tree drawn with the store's node count, a race with every lane and a shared cursor that lands on
// the step that committed each token, the "why" panel's reasoning, and a 1,000-step session loaded in under two
// seconds. Without a browser the tests are reported skipped, never passed; where CMake found one, or
// SPECSCOPE_REQUIRE_BROWSER=1, a missing browser is a failure.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "sessions/html/html_export.h"
#include "sessions/reader.h"
#include "tests/html_export_support.h"

#ifndef SPECSCOPE_CHROMIUM
#define SPECSCOPE_CHROMIUM ""
#endif
#ifndef SPECSCOPE_TEST_SCREENSHOTS
#define SPECSCOPE_TEST_SCREENSHOTS ""
#endif

namespace specscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool executable(const std::string& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0; }

// The browser to use, or "" with the reason in `why` (then `required` says whether that is a failure).
std::string find_chromium(std::string& why, bool& required) {
  const std::string configured = SPECSCOPE_CHROMIUM;
  const bool found_at_configure = !configured.empty() && configured.find("NOTFOUND") == std::string::npos;
  const char* require = std::getenv("SPECSCOPE_REQUIRE_BROWSER");
  required = found_at_configure || (require && std::string(require) == "1");
  if (found_at_configure) {
    if (executable(configured)) return configured;
    why = "CMake found Chromium at " + configured + " but it is gone";
    return "";
  }
  if (const char* path = std::getenv("PATH")) {
    std::string dirs = path;
    for (size_t at = 0; at <= dirs.size();) {
      const size_t end = std::min(dirs.find(':', at), dirs.size());
      for (const char* name : {"chromium", "chromium-browser"}) {
        const std::string p = dirs.substr(at, end - at) + "/" + name;
        if (executable(p)) return p;
      }
      at = end + 1;
    }
  }
  why = "headless Chromium is not installed (scripts/install-deps.sh --gui installs Debian's chromium)";
  return "";
}

#define REQUIRE_CHROMIUM(var)                                                                               \
  std::string var;                                                                                          \
  {                                                                                                         \
    std::string why;                                                                                        \
    bool required = false;                                                                                  \
    var = find_chromium(why, required);                                                                     \
    if (var.empty() && required) FAIL() << why;                                                            \
    if (var.empty()) GTEST_SKIP() << why << "; the exported page was NOT opened in a browser";               \
  }

struct Page {
  std::string dom;  // the document after the page's script ran
  json report;      // what the page wrote into <pre id="report">
};

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 65536> buf{};
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  pclose(p);
  return out;
}

std::string chromium_cmd(const std::string& chromium, const fs::path& dir) {
  // A profile of its own (no $HOME, parallel tests), no sandbox (tests may run as root in containers).
  return "timeout 120 '" + chromium + "' --headless --disable-gpu --no-sandbox --disable-dev-shm-usage --no-first-run "
         "--user-data-dir='" + (dir / "chromium-profile").string() + "' ";
}

Page open(const std::string& chromium, const fs::path& file, const std::string& hash = "") {
  const fs::path dir = file.parent_path();
  Page page;
  page.dom = run(chromium_cmd(chromium, dir) + "--dump-dom 'file://" + file.string() + hash + "' 2>'" +
                 (dir / "chromium.log").string() + "'");
  const std::string open_tag = "<pre id=\"report\" hidden=\"\">";
  const size_t at = page.dom.find(open_tag);
  if (at == std::string::npos) return page;
  const size_t from = at + open_tag.size();
  std::string text = page.dom.substr(from, page.dom.find("</pre>", from) - from);
  // --dump-dom writes text with &amp; &lt; &gt; (and &nbsp;) escaped.
  for (auto [entity, c] : {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&nbsp;", "\xC2\xA0"}, {"&amp;", "&"}})
    for (size_t k = text.find(entity); k != std::string::npos; k = text.find(entity, k + 1))
      text.replace(k, std::string(entity).size(), c);
  page.report = json::parse(text, nullptr, false);
  return page;
}

// The report must exist and say the script ran without an error.
#define EXPECT_PAGE_OK(page, file)                                                                            \
  do {                                                                                                       \
    ASSERT_TRUE((page).report.is_object())                                                                   \
        << "no report from " << (file) << "; chromium log:\n" << test::read_bytes((file).parent_path() / "chromium.log"); \
    EXPECT_EQ((page).report.at("errors"), json::array()) << (page).report.dump();                            \
  } while (0)

// The "why" panel as drawn (the page's script, also in the DOM, holds the same phrases in pieces).
std::string why_panel(const Page& page) {
  const size_t at = page.dom.find("<div id=\"why\"");
  if (at == std::string::npos) return "";
  return page.dom.substr(at, page.dom.find("<div id=\"tip\"", at) - at);
}

bool bonus_committed(const StepRecord& s) {
  return s.bonus_token >= 0 && s.committed.size() > s.accepted_path.size() && s.committed.back() == s.bonus_token;
}

fs::path write_page(const fs::path& dir, const std::string& name, const std::string& html) {
  const fs::path p = dir / name;
  test::write_bytes(p, html);
  return p;
}

TEST(HtmlExportBrowser, ARecordedRunDrawsEveryStepsTreeWithTheStoresNodeCounts) {
  REQUIRE_CHROMIUM(chromium);
  auto dir = test::fresh_dir("browser-run");
  const fs::path db = dir / "s.db";
  test::html::record_eagle2(db);
  sessions::SessionReader reader(db.string());
  const auto run_row = reader.session(1).runs.at(0);
  const fs::path file = write_page(dir, "run.html", sessions::session_html(reader, 1));

  const Page all = open(chromium, file, "#selftest");
  EXPECT_PAGE_OK(all, file);
  int64_t store_nodes = 0;
  reader.for_each_step(run_row.id, 0, run_row.step_count,
                       [&](sessions::RecordedStep&& st) { store_nodes += int64_t(st.record.nodes.size()); });
  EXPECT_EQ(all.report.at("steps"), run_row.step_count);
  EXPECT_EQ(all.report["selftest"].at("steps"), run_row.step_count);
  EXPECT_EQ(all.report["selftest"].at("nodes"), store_nodes);
  EXPECT_EQ(all.report["selftest"].at("mismatches"), json::array());
  EXPECT_EQ(all.report.at("lane_texts"), run_row.step_count) << "every step's text is in the page";

  // A given step, as a shared link opens it: its tree has the store's nodes, plus the root and the bonus.
  const Page five = open(chromium, file, "#step=5");
  EXPECT_PAGE_OK(five, file);
  const StepRecord s5 = reader.step(run_row.id, 5).record;
  EXPECT_EQ(five.report["shown"].at("step"), 5);
  EXPECT_EQ(five.report.at("nodes_rendered"), s5.nodes.size());
  EXPECT_EQ(five.report.at("boxes_rendered"), s5.nodes.size() + 1 + (bonus_committed(s5) ? 1 : 0));

  // "Why" for a rejected node under greedy decoding: the target's argmax against the draft's token.
  int step = -1, node = -1;
  reader.for_each_step(run_row.id, 0, run_row.step_count, [&](sessions::RecordedStep&& st) {
    if (node >= 0) return;
    const auto& r = st.record;
    const int end = r.accepted_path.empty() ? -1 : r.accepted_path.back();
    for (const auto& n : r.nodes)
      if (n.parent == end && n.decision == NodeDecision::Rejected && !n.pruned) step = r.step, node = n.id;
  });
  ASSERT_GE(node, 0) << "EAGLE-2 rejected nothing at any path's end";
  const Page why = open(chromium, file, "#step=" + std::to_string(step) + "&node=" + std::to_string(node));
  EXPECT_PAGE_OK(why, file);
  const std::string panel = why_panel(why);
  EXPECT_NE(panel.find("Draft node " + std::to_string(node)), std::string::npos) << panel;
  EXPECT_NE(panel.find("argmax after"), std::string::npos) << panel;
  EXPECT_NE(panel.find("so it is rejected"), std::string::npos) << panel;
}

// A gpt-oss answer in the page as the app shows it: the analysis after "thinking: " in italics, the final message
// after "answer: ", none of harmony's markers, every token still a token (its step and node on hover).
TEST(HtmlExportBrowser, AHarmonyReplyShowsItsThinkingApartWithoutMarkers) {
  REQUIRE_CHROMIUM(chromium);
  auto dir = test::fresh_dir("browser-harmony");
  const fs::path db = dir / "s.db";
  test::html::record_harmony(db);
  sessions::SessionReader reader(db.string());
  const fs::path file = write_page(dir, "harmony.html", sessions::session_html(reader, 1));
  const Page page = open(chromium, file);
  EXPECT_PAGE_OK(page, file);
  // The lane's text (the step's tree beside it shows the tokens as they are, markers included).
  const size_t at = page.dom.find("<div class=\"text\">");
  ASSERT_NE(at, std::string::npos);
  const std::string lanes = page.dom.substr(at, page.dom.find("<div class=\"mini\">", at) - at);
  EXPECT_NE(lanes.find("<span class=\"rl\">thinking: </span>"), std::string::npos) << lanes;
  EXPECT_NE(lanes.find("<span class=\"rl\">\nanswer: </span>"), std::string::npos) << lanes;
  EXPECT_NE(lanes.find("<span class=\"tk rs\" data-n=\"-1\"> two</span>"), std::string::npos) << lanes;
  EXPECT_NE(lanes.find("<span class=\"tk\" data-n=\"-1\">4</span>"), std::string::npos) << lanes;
  for (const char* marker : {"&lt;|channel|&gt;", "&lt;|message|&gt;", "&lt;|end|&gt;", "assistant", "final"})
    EXPECT_EQ(lanes.find(marker), std::string::npos) << marker << " in " << lanes;
}

TEST(HtmlExportBrowser, ARaceShowsEveryLaneAndTheSharedCursorFindsEachLanesStep) {
  REQUIRE_CHROMIUM(chromium);
  auto dir = test::fresh_dir("browser-race");
  const fs::path db = dir / "s.db";
  test::html::record_race(db);
  sessions::SessionReader reader(db.string());
  const auto session = reader.session(1);
  int64_t lane_tokens = 0, steps = 0;
  int lanes = 0;
  for (const auto& r : session.runs) {
    steps += r.step_count;
    if (r.meta.lane.value_or(0) < 0) continue;
    ++lanes;
    reader.for_each_step(r.id, 0, r.step_count,
                         [&](sessions::RecordedStep&& st) { lane_tokens += int64_t(st.record.committed.size()); });
  }
  ASSERT_EQ(lanes, 3);
  const fs::path file = write_page(dir, "race.html", sessions::session_html(reader, 1));
  const Page page = open(chromium, file, "#selftest");
  EXPECT_PAGE_OK(page, file);
  EXPECT_EQ(page.report.at("lanes"), lanes);
  EXPECT_EQ(page.report.at("mini_trees"), lanes) << "each lane draws its step's tree in miniature";
  EXPECT_EQ(page.report.at("steps"), steps) << "the reference runs are in the page too";
  EXPECT_EQ(page.report["selftest"].at("mismatches"), json::array());
  // Every text position of every lane: the step shown under the cursor is the one that committed that token.
  EXPECT_EQ(page.report["selftest"].at("cursor_checks"), lane_tokens);
  EXPECT_EQ(page.report["selftest"].at("cursor_errors"), 0);

  // The picture for the README (docs/screenshots/html_export.png is a copy of one).
  const std::string shots = SPECSCOPE_TEST_SCREENSHOTS;
  const fs::path png = (shots.empty() ? dir : fs::path(shots)) / "html_export.png";
  fs::create_directories(png.parent_path());
  fs::remove(png);
  run(chromium_cmd(chromium, dir) + "--hide-scrollbars --window-size=1400,900 --screenshot='" + png.string() +
      "' 'file://" + file.string() + "' >/dev/null 2>&1");
  ASSERT_TRUE(fs::exists(png)) << png;
  EXPECT_GT(fs::file_size(png), 30000u) << "a blank page compresses to far less";
}

// SpS's confidence cut: the panel of a draft the drafter was unsure of says its branch stopped there, and the panel of a
// draft above the cut does not.
TEST(HtmlExportBrowser, ADraftBelowTheConfidenceCutSaysItsBranchStoppedThere) {
  REQUIRE_CHROMIUM(chromium);
  auto dir = test::fresh_dir("browser-cut");
  const fs::path db = dir / "s.db";
  test::html::record_sps_cut(db);
  sessions::SessionReader reader(db.string());
  const auto run_row = reader.session(1).runs.at(0);
  int step = -1, unsure = -1, sure_step = -1, sure = -1;
  reader.for_each_step(run_row.id, 0, run_row.step_count, [&](sessions::RecordedStep&& st) {
    for (const auto& n : st.record.nodes) {
      if (unsure < 0 && n.draft_prob < 0.6f) step = st.record.step, unsure = n.id;
      if (sure < 0 && n.draft_prob >= 0.6f) sure_step = st.record.step, sure = n.id;
    }
  });
  ASSERT_GE(unsure, 0) << "no chain was cut in 32 tokens";
  ASSERT_GE(sure, 0);
  const fs::path file = write_page(dir, "cut.html", sessions::session_html(reader, 1));
  const Page cut = open(chromium, file, "#step=" + std::to_string(step) + "&node=" + std::to_string(unsure));
  EXPECT_PAGE_OK(cut, file);
  EXPECT_NE(why_panel(cut).find("is below the confidence cut 0.6000"), std::string::npos) << why_panel(cut);
  const Page kept = open(chromium, file, "#step=" + std::to_string(sure_step) + "&node=" + std::to_string(sure));
  EXPECT_PAGE_OK(kept, file);
  EXPECT_NE(why_panel(kept).find("Draft node " + std::to_string(sure)), std::string::npos) << why_panel(kept);
  EXPECT_EQ(why_panel(kept).find("confidence cut"), std::string::npos) << why_panel(kept);
}

TEST(HtmlExportBrowser, SampledStepsExplainMinPOverQWithTheDrawAndTheResidualOrSayTheyAreMissing) {
  REQUIRE_CHROMIUM(chromium);
  auto dir = test::fresh_dir("browser-sampled");
  const fs::path db = dir / "s.db";
  test::html::record_sampled(db);
  sessions::SessionReader reader(db.string());
  const auto run_row = reader.session(1).runs.at(0);
  int step = -1, node = -1;
  reader.for_each_step(run_row.id, 0, run_row.step_count, [&](sessions::RecordedStep&& st) {
    if (node >= 0) return;
    const auto& r = st.record;
    const int end = r.accepted_path.empty() ? -1 : r.accepted_path.back();
    for (const auto& n : r.nodes)
      if (n.parent == end && n.decision == NodeDecision::Rejected && !std::isnan(n.draft_prob)) step = r.step, node = n.id;
  });
  ASSERT_GE(node, 0) << "sampled SpS rejected no draft in 32 tokens";
  const std::string hash = "#step=" + std::to_string(step) + "&node=" + std::to_string(node);

  // Recorded from schema 4 on: p, q and min(1, p/q), the draw u, the target's top-k, and the residual the bonus was
  // drawn from (this is the step's last rejection), nothing said to be missing.
  const fs::path recorded = write_page(dir, "sampled.html", sessions::session_html(reader, 1));
  const Page page = open(chromium, recorded, hash);
  EXPECT_PAGE_OK(page, recorded);
  const std::string panel = why_panel(page);
  EXPECT_NE(panel.find("Draft node " + std::to_string(node)), std::string::npos) << panel;
  EXPECT_NE(panel.find("min(1, p/q) = min(1, "), std::string::npos) << panel;
  EXPECT_NE(panel.find("Uniform draw u = "), std::string::npos) << panel;
  EXPECT_NE(panel.find("was drawn from it"), std::string::npos) << panel;
  EXPECT_EQ(panel.find("not recorded in this session"), std::string::npos) << panel;

  // The same page as a session recorded before schema 4 would give it (no rule, u, top-k or residual): the panel
  // says what the session lacks.
  json blob = sessions::html_session_blob(reader, 1, std::nullopt);
  const json& keys = blob["node_keys"];
  std::vector<size_t> why_columns;
  for (size_t k = 0; k < keys.size(); ++k)
    if (keys[k] == "u" || keys[k] == "target_top_k" || keys[k] == "verify_rule" || keys[k] == "tested_prob") why_columns.push_back(k);
  ASSERT_EQ(why_columns.size(), 4u) << keys.dump();
  for (auto& st : blob["runs"][0]["steps"]) {
    st.erase("residual_top_k");
    for (auto& row : st["nodes"])
      for (size_t k : why_columns)
        if (k < row.size()) row[k] = nullptr;
  }
  const fs::path old = write_page(dir, "old.html", sessions::html_page(blob));
  const Page before = open(chromium, old, hash);
  EXPECT_PAGE_OK(before, old);
  const std::string lacks = why_panel(before);
  EXPECT_NE(lacks.find("min(1, p/q) = min(1, "), std::string::npos) << lacks;
  EXPECT_NE(lacks.find("The uniform draw u compared with it: not recorded in this session."), std::string::npos) << lacks;
  EXPECT_NE(lacks.find("top-k at this position: not recorded in this session."), std::string::npos) << lacks;
  EXPECT_NE(lacks.find("The residual distribution the bonus was drawn from: not recorded in this session."),
            std::string::npos) << lacks;
}

// Issue 20: "a 1,000-step export must load in under 2 seconds". load_ms is performance.now() when the first
// render is done: from the start of navigation, so reading and parsing the file are included.
TEST(HtmlExportBrowser, AThousandStepSessionLoadsInUnderTwoSeconds) {
  REQUIRE_CHROMIUM(chromium);
  auto dir = test::fresh_dir("browser-1000");
  const fs::path db = dir / "s.db";
  test::html::record_synthetic(db, 1000);
  sessions::SessionReader reader(db.string());
  const fs::path file = write_page(dir, "thousand.html", sessions::session_html(reader, 1));
  const Page page = open(chromium, file, "#selftest");
  EXPECT_PAGE_OK(page, file);
  const double load_ms = page.report.at("load_ms").get<double>();
  std::printf("[html export] 1000 steps (%.1f MB): loaded in %.0f ms; every tree drawn in %d ms more\n",
              double(fs::file_size(file)) / 1e6, load_ms, page.report["selftest"].value("ms", -1));
  EXPECT_LT(load_ms, 2000.0);
  EXPECT_EQ(page.report.at("steps"), 1000);
  EXPECT_EQ(page.report["selftest"].at("steps"), 1000);
  EXPECT_EQ(page.report["selftest"].at("mismatches"), json::array()) << "odd trees (cycles, bad parents) drew every node";
}

TEST(HtmlExportBrowser, AStepRangeOpensOnItsOwnSteps) {
  REQUIRE_CHROMIUM(chromium);
  auto dir = test::fresh_dir("browser-range");
  const fs::path db = dir / "s.db";
  test::html::record_eagle2(db);
  const fs::path file = dir / "range.html";
  auto r = test::run_cli("sessions export 1 --format html --steps 4-7 --out " + file.string() + " --session-db " +
                         db.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Page page = open(chromium, file, "#selftest");
  EXPECT_PAGE_OK(page, file);
  EXPECT_EQ(page.report.at("steps"), 4);
  const int shown = page.report["shown"].at("step");
  EXPECT_GE(shown, 4);
  EXPECT_LE(shown, 7);
  EXPECT_EQ(page.report["selftest"].at("cursor_errors"), 0);
  EXPECT_NE(page.dom.find("Steps 4\xE2\x80\x93" "7 of each run"), std::string::npos);
}

}  // namespace
}  // namespace specscope

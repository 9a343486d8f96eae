// `sessions export ID --format html` without a browser: the page is one self-contained file (nothing it could
// load from the network or from another file), its JSON document holds every recorded step and node exactly,
// a step range keeps only its steps (with the text before them as context), a race keeps every lane, token texts
// cannot break out of the page's script, and bad input is one line and exit code 2 that leaves --out alone.
// html_export_browser_test.cpp opens the same pages in Chromium.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <regex>

#include "engine/util/error.h"
#include "sessions/html/html_export.h"
#include "sessions/html/session_blob.h"
#include "sessions/reader.h"
#include "tests/html_export_support.h"

namespace specscope {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::html::blob_of;
using test::html::without_blob;

std::string export_html(const fs::path& db, const std::string& args, const fs::path& out) {
  auto r = test::run_cli("sessions export " + args + " --format html --out " + out.string() + " --session-db " + db.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return test::read_bytes(out);
}

// Everything a browser could fetch: scripts, styles, images, frames, fonts, links, imports, or an address.
void expect_self_contained(const std::string& page) {
  const std::string markup = without_blob(page);
  std::string lower = markup;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (const char* bad : {"http:", "https:", "//cdn", "src=", "href=", "@import", "<link", "<img", "<iframe", "<object",
                          "<embed", "fetch(", "xmlhttprequest", "import(", "websocket", "eventsource"})
    EXPECT_EQ(lower.find(bad), std::string::npos) << "the page's markup holds '" << bad << "'";
  // CSS url() only for the in-page hatch pattern (url(#id)).
  for (size_t at = lower.find("url("); at != std::string::npos; at = lower.find("url(", at + 1))
    EXPECT_EQ(lower.compare(at, 5, "url(#"), 0) << lower.substr(at, 40);
  // The browser enforces it too: no network, no other file.
  EXPECT_NE(markup.find("content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'\""),
            std::string::npos);
  // Exactly the page's two scripts (the data and the code), so nothing in the data closed its element.
  size_t scripts = 0;
  for (size_t at = page.find("</script>"); at != std::string::npos; at = page.find("</script>", at + 1)) ++scripts;
  EXPECT_EQ(scripts, 2u);
}

// The JSON document's runs against the store: same runs, same steps in order, same nodes and texts.
void expect_blob_equals_store(const json& blob, sessions::SessionReader& reader, int64_t session_id) {
  ASSERT_TRUE(blob.is_object());
  EXPECT_EQ(blob.at("format"), "specscope-session-html");
  EXPECT_EQ(blob.at("version"), 1);
  const auto s = reader.session(session_id);
  ASSERT_EQ(blob.at("runs").size(), s.runs.size());
  const json& keys = blob.at("node_keys");
  const auto key = [&](const std::string& k) {
    return size_t(std::find(keys.begin(), keys.end(), json(k)) - keys.begin());
  };
  for (size_t r = 0; r < s.runs.size(); ++r) {
    const json& run = blob["runs"][r];
    EXPECT_EQ(run.at("id"), s.runs[r].id);
    ASSERT_EQ(int64_t(run.at("steps").size()), reader.step_count(s.runs[r].id)) << "run " << s.runs[r].id;
    int64_t i = 0;
    std::string text;
    reader.for_each_step(s.runs[r].id, 0, s.runs[r].step_count, [&](sessions::RecordedStep&& st) {
      const json& step = run["steps"][size_t(i++)];
      EXPECT_EQ(step.at("step"), st.record.step);
      EXPECT_EQ(step.at("piece"), st.text_piece);
      EXPECT_EQ(step.at("accepted_path").get<std::vector<int>>(), st.record.accepted_path);
      ASSERT_EQ(step.at("nodes").size(), st.record.nodes.size());
      for (size_t n = 0; n < st.record.nodes.size(); ++n) {
        const json& row = step["nodes"][n];
        EXPECT_EQ(row.at(key("token")), st.record.nodes[n].token);
        EXPECT_EQ(row.at(key("text")), st.record.nodes[n].text);
        EXPECT_EQ(row.at(key("parent")), st.record.nodes[n].parent);
        EXPECT_EQ(row.at(key("decision")), to_string(st.record.nodes[n].decision));
      }
      text += st.text_piece;
    });
    if (s.runs[r].outcome) EXPECT_EQ(text, s.runs[r].outcome->output_text);
  }
}

TEST(HtmlExport, ARecordedRunIsOneSelfContainedPageWithEveryStepAndNode) {
  auto dir = test::fresh_dir("html-run");
  const fs::path db = dir / "s.db";
  test::html::record_eagle2(db);
  const std::string page = export_html(db, "1", dir / "run.html");
  ASSERT_EQ(page.rfind("<!doctype html>", 0), 0u) << page.substr(0, 80);
  expect_self_contained(page);
  EXPECT_NE(page.find("<title>SpecScope session 1: harbor</title>"), std::string::npos);
  sessions::SessionReader reader(db.string());
  const json blob = blob_of(page);
  expect_blob_equals_store(blob, reader, 1);
  EXPECT_EQ(blob["session"].at("kind"), "run");
  EXPECT_TRUE(blob["range"].is_null());
  const json& run = blob["runs"][0];
  EXPECT_EQ(run.at("method"), "eagle2");
  EXPECT_EQ(run.at("greedy"), true);
  // EAGLE-2 drafted real trees: the page has something to draw.
  size_t nodes = 0;
  for (const auto& st : run["steps"]) nodes += st["nodes"].size();
  EXPECT_GT(nodes, 100u);
  // Same bytes from the library as from the CLI: one exporter.
  EXPECT_EQ(sessions::session_html(reader, 1), page);
}

TEST(HtmlExport, ARaceKeepsEveryLaneWithItsLabelTargetAndReferences) {
  auto dir = test::fresh_dir("html-race");
  const fs::path db = dir / "s.db";
  test::html::record_race(db);
  const std::string page = export_html(db, "1", dir / "race.html");
  expect_self_contained(page);
  sessions::SessionReader reader(db.string());
  const json blob = blob_of(page);
  expect_blob_equals_store(blob, reader, 1);
  EXPECT_EQ(blob["session"].at("kind"), "compare");
  std::vector<std::string> lanes;
  int references = 0;
  for (const auto& r : blob["runs"]) {
    if (r.at("lane").get<int>() < 0) ++references;
    else lanes.push_back(r.at("label"));
  }
  EXPECT_EQ(lanes, (std::vector<std::string>{"eagle2", "medusa", "streaming"}));
  EXPECT_EQ(references, 3) << "one vanilla reference per target (base, medusa2, streaming)";
}

TEST(HtmlExport, AStepRangeKeepsItsStepsAndTheTextBeforeThemAsContext) {
  auto dir = test::fresh_dir("html-range");
  const fs::path db = dir / "s.db";
  test::html::record_eagle2(db);
  const std::string page = export_html(db, "1 --steps 3-6", dir / "range.html");
  expect_self_contained(page);
  EXPECT_NE(page.find("(steps 3\xE2\x80\x93" "6)</title>"), std::string::npos);
  const json blob = blob_of(page);
  ASSERT_TRUE(blob.is_object());
  EXPECT_EQ(blob["range"], (json{{"first", 3}, {"last", 6}}));
  sessions::SessionReader reader(db.string());
  const auto run = reader.session(1).runs.at(0);
  std::string before;
  int64_t tokens_before = 0;
  for (int i = 0; i < 3; ++i) {
    auto st = reader.step(run.id, i);
    before += st.text_piece;
    tokens_before += int64_t(st.record.committed.size());
  }
  const json& r = blob["runs"][0];
  ASSERT_EQ(r["steps"].size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r["steps"][size_t(i)]["step"], 3 + i);
  EXPECT_EQ(r.at("prefix_text"), before);
  EXPECT_EQ(r.at("tokens_before"), tokens_before);
  EXPECT_EQ(r.at("first_index"), 3);
  // One step alone.
  EXPECT_EQ(blob_of(export_html(db, "1 --steps 5", dir / "one.html"))["runs"][0]["steps"].size(), 1u);
}

// The page's JSON sits inside a <script>: a token that spells "</script>", a comment opener, or the template's
// own slot names must stay data, and the title is escaped.
// A reasoning model's run: the page gets each token's text by part, harmony's markers out (the app's splitter,
// engine/generate/reply_parts.h), and a step range's context split the same way; a DeepSeek-R1 reply with no marker
// at all is reasoning because its summary says the prompt opened it.
TEST(HtmlExport, AReasoningReplyIsSplitAsTheAppShowsIt) {
  auto dir = test::fresh_dir("html-reasoning");
  auto parts_text = [](const json& run, int part) {
    std::string text;
    for (const auto& step : run.at("steps"))
      for (const auto& token : step.at("parts"))
        for (const auto& span : token)
          if (span.at(0) == part) text += span.at(1).get<std::string>();
    return text;
  };
  {
    const fs::path db = dir / "harmony.db";
    test::html::record_harmony(db);
    sessions::SessionReader reader(db.string());
    const json blob = sessions::html_session_blob(reader, 1, std::nullopt);
    const json& run = blob.at("runs").at(0);
    EXPECT_EQ(run.at("reply"), "harmony");
    EXPECT_EQ(run.at("prefix_part"), -1);
    EXPECT_EQ(parts_text(run, 0), "Add two.");
    EXPECT_EQ(parts_text(run, 1), "4!");
    for (const auto& step : run.at("steps")) {
      EXPECT_EQ(step.at("parts").size(), step.at("committed").size()) << "one list of spans a token";
      EXPECT_EQ(step.at("piece").get<std::string>().empty(), false) << "the piece stays as generated";
    }
    // Steps 5 on: the context before them is the analysis so far, with the app's note.
    const json ranged = sessions::html_session_blob(reader, 1, sessions::StepRange{5, 13});
    EXPECT_EQ(ranged["runs"][0].at("prefix_text"), "thinking: Add two");
    EXPECT_EQ(ranged["runs"][0].at("prefix_part"), 0);
    EXPECT_EQ(parts_text(ranged["runs"][0], 0), ".");
    EXPECT_EQ(parts_text(ranged["runs"][0], 1), "4!");
  }
  {
    const fs::path db = dir / "deepseek.db";
    test::html::record_reasoning(db);
    sessions::SessionReader reader(db.string());
    const json blob = sessions::html_session_blob(reader, 1, std::nullopt);
    const json& run = blob.at("runs").at(0);
    EXPECT_EQ(run.at("reply"), "think-tags");
    EXPECT_FALSE(parts_text(run, 0).empty());
    EXPECT_EQ(parts_text(run, 1), "");
  }
  {
    const fs::path db = dir / "plain.db";
    test::html::record_synthetic(db, 3);
    sessions::SessionReader reader(db.string());
    const json blob = sessions::html_session_blob(reader, 1, std::nullopt);
    EXPECT_FALSE(blob["runs"][0].contains("reply"));
    EXPECT_FALSE(blob["runs"][0]["steps"][0].contains("parts"));
  }
}

TEST(HtmlExport, TokenTextsAndTitlesCannotBreakOutOfThePage) {
  auto dir = test::fresh_dir("html-escape");
  const fs::path db = dir / "s.db";
  {
    sessions::SessionWriter w(db.string());
    auto meta = test::synthetic_session();
    meta.title = "<b>bold</b> & {{TITLE}}";
    const int64_t s = w.begin_session(meta);
    const int64_t run = w.begin_run(s, test::synthetic_run("sps"));
    StepRecord st = test::synthetic_step(run, 0, 4);
    st.nodes.resize(1);
    st.nodes[0].text = "</script><script>alert(1)</script><!-- {{SESSION_JSON}} \xe2\x80\xa8";
    st.accepted_path = {0};
    st.committed = {st.nodes[0].token, st.bonus_token};
    w.append_step(run, st, "</SCRIPT>");
    w.flush();
  }
  sessions::SessionReader reader(db.string());
  const std::string page = sessions::session_html(reader, 1);
  expect_self_contained(page);
  EXPECT_EQ(page.find("alert(1)</script>"), std::string::npos);
  EXPECT_EQ(page.find("</SCRIPT>"), std::string::npos);
  EXPECT_NE(page.find("<title>SpecScope session 1: &lt;b&gt;bold&lt;/b&gt; &amp; {{TITLE}}</title>"), std::string::npos);
  const json blob = blob_of(page);
  ASSERT_TRUE(blob.is_object());
  const json& keys = blob["node_keys"];
  const size_t text = size_t(std::find(keys.begin(), keys.end(), json("text")) - keys.begin());
  EXPECT_EQ(blob["runs"][0]["steps"][0]["nodes"][0].at(text),
            "</script><script>alert(1)</script><!-- {{SESSION_JSON}} \xe2\x80\xa8");
  EXPECT_EQ(blob["runs"][0]["steps"][0]["piece"], "</SCRIPT>");
  EXPECT_EQ(blob["session"]["title"], "<b>bold</b> & {{TITLE}}");
}

// Issue 20: the page must stay usable at 1,000 steps. Its document stays small (rows, not objects, and floats
// cut to 6 digits) and is written fast; html_export_browser_test.cpp times the page's load in Chromium.
TEST(HtmlExport, AThousandStepSessionIsCompactAndFaithful) {
  auto dir = test::fresh_dir("html-1000");
  const fs::path db = dir / "s.db";
  test::html::record_synthetic(db, 1000);
  sessions::SessionReader reader(db.string());
  const std::string page = sessions::session_html(reader, 1);
  expect_self_contained(page);
  const json blob = blob_of(page);
  expect_blob_equals_store(blob, reader, 1);
  int64_t nodes = 0;
  for (const auto& st : blob["runs"][0]["steps"]) nodes += int64_t(st["nodes"].size());
  // About 20 nodes a step: each node a row of ~13 values, at most ~110 bytes with its odd texts.
  EXPECT_LT(double(page.size()), 200000.0 + 110.0 * double(nodes)) << nodes << " nodes";
}

// The writing time alone (0.6 s here in a release build): a guard against a quadratic step in the exporter, which
// measures time, not correctness, so scripts/sanitize.sh leaves it out of the ASan run (10 s there).
TEST(HtmlExport, AThousandStepSessionIsQuickToWrite) {
  auto dir = test::fresh_dir("html-1000-time");
  const fs::path db = dir / "s.db";
  test::html::record_synthetic(db, 1000);
  sessions::SessionReader reader(db.string());
  const auto t0 = std::chrono::steady_clock::now();
  const std::string page = sessions::session_html(reader, 1);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[html export] 1000 steps: %.2f MB in %.2f s\n", double(page.size()) / 1e6, seconds);
  EXPECT_LT(seconds, 5.0);
}

TEST(HtmlExport, BadInputIsOneLineExitTwoAndLeavesTheOutputAlone) {
  auto dir = test::fresh_dir("html-bad");
  const fs::path db = dir / "s.db";
  test::html::record_synthetic(db, 12);
  const std::string base = " --session-db " + db.string();
  const fs::path keep = dir / "keep.html";
  test::write_bytes(keep, "precious");
  struct Case {
    std::string args, mentions;
  };
  const Case cases[] = {
      {"sessions export 99 --format html --out " + keep.string(), "session 99"},
      {"sessions export 1 --format html --steps 40-50 --out " + keep.string(), "selects no recorded step"},
      {"sessions export 1 --format html --steps 6-2 --out " + keep.string(), "--steps"},
      {"sessions export 1 --format html --steps x --out " + keep.string(), "--steps"},
      {"sessions export 1 --format json --steps 1-2 --out " + keep.string(), "--steps"},
      {"sessions export 1 --format pdf --out " + keep.string(), "--format"},
      {"sessions export 1 --format html --out " + (dir / "no/such/dir/x.html").string(), "no/such/dir/x.html"},
  };
  for (const auto& c : cases) {
    auto r = test::run_cli(c.args + base);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.mentions), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(test::read_bytes(keep), "precious") << c.args;
  }
  // The library names what is wrong the same way.
  EXPECT_THROW(sessions::parse_step_range("1-"), InputError);
  EXPECT_THROW(sessions::parse_step_range("-3"), InputError);
  EXPECT_EQ(sessions::parse_step_range("7").last, 7);
}

}  // namespace
}  // namespace specscope

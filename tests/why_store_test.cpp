// The "why" details in the session store (schema 4): a store of schema 3 opens, migrated, and its nodes read back
// with nothing recorded, which the panel says; what a schema-4 store records comes back exactly, the tokens'
// texts byte for byte (half a UTF-8 character included); a damaged blob is an error naming the file.
#include <gtest/gtest.h>

#include "engine/methods/step_record_json.h"
#include "engine/util/error.h"
#include "sessions/reader.h"
#include "sessions/schema.h"
#include "sessions/sqlite_db.h"
#include "sessions/why_panel.h"
#include "sessions/writer.h"
#include "tests/session_test_support.h"

using namespace specscope;
using namespace specscope::sessions;

namespace {

// A step whose root has two sampled children (the first rejected, the second accepted after it: its p is what the
// rejection left) and whose accepted child has two deterministic children, both rejected, so the bonus came from
// a residual. Texts include invalid UTF-8 and a NUL.
StepRecord step_with_why() {
  StepRecord r;
  r.step = 5;
  r.method = "sps";
  r.root_token = 11;
  auto node = [&](int parent, int32_t token, std::string text, VerifyRule rule, NodeDecision d) {
    DraftNode n;
    n.id = int(r.nodes.size());
    n.parent = parent;
    n.depth = parent < 0 ? 1 : r.nodes[size_t(parent)].depth + 1;
    n.token = token;
    n.text = std::move(text);
    n.draft_prob = 0.25f;
    n.target_prob = 0.125f;
    n.rule = rule;
    n.decision = d;
    r.nodes.push_back(n);
    return n.id;
  };
  const std::vector<TokenProb> root_top = {{7, "\xE2\x80", 0.5f}, {8, std::string("a\0b", 3), 0.25f}, {9, " port", 0.125f}};
  const std::vector<TokenProb> inner_top = {{4, "dock", 0.75f}, {5, "quay", 0.0625f}};
  int a = node(-1, 7, "\xE2\x80", VerifyRule::Sampled, NodeDecision::Rejected);
  int b = node(-1, 8, std::string("a\0b", 3), VerifyRule::Sampled, NodeDecision::Accepted);
  int c = node(b, 4, "dock", VerifyRule::Deterministic, NodeDecision::Rejected);
  int d = node(b, 5, "quay", VerifyRule::Deterministic, NodeDecision::Rejected);
  const int e = node(c, 6, "never", VerifyRule::Unrecorded, NodeDecision::NotReached);  // its parent was rejected
  // SpS's confidence cut (schema 5): the one draft below it ended its branch.
  r.draft_cut = 0.2f;
  r.nodes[size_t(e)].draft_prob = 0.125f;
  // A mixture-of-experts target (schema 6): the experts the step's forward ran per expert layer.
  r.experts_per_layer = 17.75f;
  for (int id : {a, b}) r.nodes[size_t(id)].target_top_k = root_top;
  for (int id : {c, d}) r.nodes[size_t(id)].target_top_k = inner_top;
  r.nodes[size_t(a)].u = 0.875f, r.nodes[size_t(a)].tested_prob = 0.125f, r.nodes[size_t(a)].accept_prob = 0.5f;
  r.nodes[size_t(b)].u = 0.0625f, r.nodes[size_t(b)].tested_prob = 0.375f, r.nodes[size_t(b)].accept_prob = 1.f;
  r.nodes[size_t(c)].u = 0.9f, r.nodes[size_t(c)].tested_prob = 0.75f, r.nodes[size_t(c)].accept_prob = 0.75f;
  r.nodes[size_t(d)].u = 0.5f, r.nodes[size_t(d)].tested_prob = 0.25f, r.nodes[size_t(d)].accept_prob = 0.25f;
  r.accepted_path = {b};
  r.bonus_token = 3;
  r.bonus_text = "berth";
  r.bonus_source = BonusSource::Residual;
  r.bonus_prob = 0.5f;
  r.residual_top_k = {{3, "berth", 0.5f}, {2, "\xF0\x9F", 0.25f}};
  r.committed = {8, 3};
  return r;
}

void expect_same_why(const StepRecord& got, const StepRecord& want) {
  ASSERT_EQ(got.nodes.size(), want.nodes.size());
  for (size_t i = 0; i < want.nodes.size(); ++i) {
    const auto &g = got.nodes[i], &w = want.nodes[i];
    EXPECT_EQ(g.rule, w.rule) << "node " << i;
    EXPECT_EQ(g.target_top_k, w.target_top_k) << "node " << i;  // texts compared byte for byte
    EXPECT_EQ(std::isnan(g.u), std::isnan(w.u)) << "node " << i;
    if (!std::isnan(w.u)) EXPECT_EQ(g.u, w.u) << "node " << i;
    if (!std::isnan(w.tested_prob)) EXPECT_EQ(g.tested_prob, w.tested_prob) << "node " << i;
    EXPECT_EQ(std::isnan(g.tested_prob), std::isnan(w.tested_prob)) << "node " << i;
  }
  EXPECT_EQ(got.residual_top_k, want.residual_top_k);
  EXPECT_EQ(std::isnan(got.draft_cut), std::isnan(want.draft_cut));
  if (!std::isnan(want.draft_cut)) EXPECT_EQ(got.draft_cut, want.draft_cut);
  EXPECT_EQ(std::isnan(got.experts_per_layer), std::isnan(want.experts_per_layer));
  if (!std::isnan(want.experts_per_layer)) EXPECT_EQ(got.experts_per_layer, want.experts_per_layer);
}

}  // namespace

TEST(WhyStore, RecordsAndReadsBackTheWhyOfEveryNodeExactly) {
  const auto dir = test::fresh_dir("why-roundtrip");
  const std::string db = (dir / "s.db").string();
  const StepRecord want = step_with_why();
  int64_t run = 0;
  {
    SessionWriter w(db);
    run = w.begin_run(w.begin_session(test::synthetic_session()), test::synthetic_run());
    w.append_step(run, want, "x");
    w.flush();
    ASSERT_EQ(w.error(), "");
  }
  {  // Stored once per verified parent, not per sibling.
    Database d(db, Database::Mode::ReadOnly);
    EXPECT_EQ(d.scalar_int("SELECT count(*) FROM steps WHERE verified IS NOT NULL"), 1);
  }
  SessionReader r(db);
  const StepRecord got = r.step(run, 0).record;
  expect_same_why(got, want);
  // The panel reads the same from the replayed record as from the live one.
  for (size_t i = 0; i < want.nodes.size(); ++i)
    EXPECT_EQ(explain_node(got, int(i)).text(), explain_node(want, int(i)).text()) << "node " << i;
  EXPECT_NE(explain_node(got, 4).row("cut"), nullptr) << "the cut node's panel says so after replay too";
  EXPECT_EQ(explain_node(got, 0).row("cut"), nullptr) << "a draft above the cut did not end its branch";
}

// The panel of the replayed record says what the record shows: the later sibling met what the rejection left,
// the last rejection's residual is the one the bonus came from.
TEST(WhyStore, ThePanelOfAReplayedStepExplainsResidualsAndLaterSiblings) {
  const StepRecord s = step_with_why();
  const auto later = explain_node(s, 1);
  ASSERT_NE(later.row("tested_p"), nullptr) << later.text();
  EXPECT_FLOAT_EQ(float(later.row("tested_p")->number), 0.375f);
  EXPECT_EQ(later.row("outcome")->value, "accepted");
  const auto first = explain_node(s, 0);
  EXPECT_EQ(first.row("tested_p"), nullptr) << "the first sibling meets the target's own p";
  EXPECT_NE(first.verdict.find("The next sibling"), std::string::npos) << first.verdict;
  EXPECT_TRUE(first.residual.empty()) << "the bonus was not drawn after this rejection";
  const auto last = explain_node(s, 3);
  ASSERT_NE(last.row("drawn"), nullptr) << last.text();
  EXPECT_EQ(last.row("drawn")->number, 3);
  ASSERT_EQ(last.residual.size(), 2u);
  EXPECT_TRUE(last.residual[0].marked);
  EXPECT_NE(last.verdict.find("zeroed"), std::string::npos) << last.verdict;
  EXPECT_NE(explain_node(s, 4).verdict.find("Not reached"), std::string::npos);
}

// A store written by schema 3 (before the why was kept) opens, is migrated, and replays: its nodes carry no rule, no
// u, no top-k, JSON says null, and the panel says what the session lacks.
TEST(WhyStore, AVersion3StoreReplaysWithThePanelSayingWhatItLacks) {
  const auto dir = test::fresh_dir("why-v3");
  const std::string db = (dir / "v3.db").string();
  {
    Database d(db, Database::Mode::ReadWriteCreate);
    d.exec(schema_sql(3));
    ASSERT_EQ(d.scalar_int("PRAGMA user_version"), 3);
    d.exec("INSERT INTO sessions(created_at, kind, title, app_version, model_path, model_architecture, "
           "model_config_sha256, model_weights_index_sha256, backend, device) "
           "VALUES('2026-01-01T00:00:00.000Z', 'run', 'old', '0.2.0', '/m', 'LlamaForCausalLM', 'c', 'w', 'cpu', 'x')");
    d.exec("INSERT INTO runs(session_id, ordinal, method, method_json, temperature, top_k, top_p, min_p, seed, "
           "max_tokens, stop_strings_json, prompt, chat, prompt_tokens, status, started_at) VALUES(1, 0, 'sps', "
           "'{\"name\":\"sps\",\"draft\":\"\",\"head\":\"\",\"options\":{}}', 0.9, 0, 1, 0, 7, 8, '[]', 'hi', 0, "
           "2, 'recording', '2026-01-01T00:00:00.000Z')");
    d.exec("INSERT INTO steps VALUES(1, 0, 1, 2, 11, '0', 1, 2, 3, 'berth', 'residual', 0.5, '7,3', 'x', 1, 2, 3, 4, "
           "1, 3, 1, 2, 0)");
    d.exec("INSERT INTO nodes VALUES(1, 0, 0, -1, 1, 7, 'harbor', 0.5, NULL, 'draft_model', 0, 0, 0.4, 0.8, 'accepted')");
    d.exec("INSERT INTO nodes VALUES(1, 0, 1, 0, 2, 9, 'port', 0.5, NULL, 'draft_model', 0, 0, 0.1, 0.2, 'rejected')");
  }
  SessionReader r(db);  // reading an older store migrates it first
  {
    Database d(db, Database::Mode::ReadOnly);
    EXPECT_EQ(d.scalar_int("PRAGMA user_version"), kSchemaVersion);
    EXPECT_EQ(kSchemaVersion, 6);
  }
  const StepRecord s = r.step(1, 0).record;
  ASSERT_EQ(s.nodes.size(), 2u);
  for (const auto& n : s.nodes) {
    EXPECT_EQ(n.rule, VerifyRule::Unrecorded);
    EXPECT_TRUE(std::isnan(n.u));
    EXPECT_TRUE(std::isnan(n.tested_prob));
    EXPECT_TRUE(n.target_top_k.empty());
  }
  EXPECT_TRUE(s.residual_top_k.empty());
  EXPECT_TRUE(std::isnan(s.draft_cut)) << "no cut recorded before schema 5";
  EXPECT_TRUE(std::isnan(s.experts_per_layer)) << "no expert count recorded before schema 6";
  EXPECT_FLOAT_EQ(s.nodes[1].accept_prob, 0.2f) << "what schema 3 had is kept";
  const auto j = to_json(s);
  EXPECT_TRUE(j["nodes"][1]["u"].is_null());
  EXPECT_TRUE(j["nodes"][1]["verify_rule"].is_null());
  EXPECT_TRUE(j["nodes"][1]["target_top_k"].is_null());
  EXPECT_TRUE(j["residual_top_k"].is_null());
  const auto w = explain_node(s, 1);
  EXPECT_NE(w.missing.find("recorded before"), std::string::npos) << w.text();
  EXPECT_NE(w.missing.find("uniform draw u"), std::string::npos) << w.text();
  EXPECT_NEAR(w.row("accept")->number, 0.2, 1e-6);
  EXPECT_EQ(w.row("outcome")->value, "rejected");
}

TEST(WhyStore, ADamagedBlobIsAnErrorNamingTheFile) {
  const auto dir = test::fresh_dir("why-damaged");
  const std::string db = (dir / "s.db").string();
  int64_t run = 0;
  {
    SessionWriter w(db);
    run = w.begin_run(w.begin_session(test::synthetic_session()), test::synthetic_run());
    w.append_step(run, step_with_why(), "x");
    w.flush();
  }
  {
    Database d(db, Database::Mode::ReadWrite);
    d.exec("UPDATE steps SET verified = substr(verified, 1, 9)");  // cut inside the first parent's bars
  }
  SessionReader r(db);
  try {
    r.step(run, 0);
    ADD_FAILURE() << "a truncated blob was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(db), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("malformed verification details"), std::string::npos) << e.what();
  }
}

// The session store: what is recorded comes back identical (for every method's real StepRecords), the schema
// is versioned and migrated, files that are not ours / corrupt / newer are refused untouched, a full store
// fails cleanly without losing what was committed, and a reader follows a run while it is being recorded.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "engine/methods/speculative_generator.h"
#include "engine/methods/step_record_json.h"
#include "engine/model/model.h"
#include "engine/util/error.h"
#include "sessions/reader.h"
#include "sessions/replay.h"
#include "sessions/schema.h"
#include "sessions/sqlite_db.h"
#include "sessions/writer.h"
#include "tests/session_test_support.h"
#include "tests/test_support.h"

using namespace specscope;
using namespace specscope::sessions;
namespace fs = std::filesystem;

namespace {

MethodSpec with(std::string name, std::string draft, std::string head, std::map<std::string, std::string> o) {
  MethodSpec s;
  s.name = std::move(name);
  if (!draft.empty()) s.draft_path = test::fixture(draft);
  if (!head.empty()) s.head_path = test::fixture(head);
  s.options = std::move(o);
  return s;
}

// Records n synthetic steps into a fresh session; returns the run id.
int64_t record_synthetic(SessionWriter& w, int n, int64_t* session_out = nullptr) {
  int64_t s = w.begin_session(test::synthetic_session());
  int64_t r = w.begin_run(s, test::synthetic_run());
  for (int i = 0; i < n; ++i) w.append_step(r, test::synthetic_step(r, i), test::synthetic_piece(r, i));
  w.flush();
  if (session_out) *session_out = s;
  return r;
}

void expect_refused_untouched(const fs::path& p, const std::string& needle) {
  const std::string before = test::read_bytes(p);
  for (int purpose = 0; purpose < 2; ++purpose) {
    try {
      if (purpose == 0) SessionReader r(p.string());
      else SessionWriter w(p.string());
      ADD_FAILURE() << "opened " << p << " for " << (purpose ? "writing" : "reading");
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << "the error names the file";
    }
  }
  EXPECT_EQ(test::read_bytes(p), before) << "the file was modified";
  EXPECT_FALSE(fs::exists(p.string() + "-wal"));
}

}  // namespace

// Real records from every method (greedy and sampled), through the store and back, equal as JSON.
TEST(SessionStore, RoundTripEveryMethod) {
  auto dir = test::fresh_dir("roundtrip");
  const std::string db = (dir / "s.db").string();
  auto model = Model::load(test::fixture("models/llama_bytelevel_f32"));
  const std::vector<MethodSpec> specs = {
      with("vanilla", "", "", {}),
      with("pld", "", "", {}),
      with("lookahead", "", "", {{"window", "5"}, {"ngram", "3"}, {"guesses", "5"}}),
      with("sps", "models/llama_bytelevel_bf16", "", {{"gamma", "4"}}),
      with("sps", "models/llama_bytelevel_bf16", "", {{"gamma", "3"}, {"branching", "2,2"}}),
      with("eagle1", "", "heads/eagle1_fitted", {}),
      with("eagle2", "", "heads/eagle1_fitted", {{"total-tokens", "10"}, {"depth", "3"}, {"draft-top-k", "4"}}),
      with("eagle3", "", "heads/eagle3", {}),
      with("medusa", "", "heads/medusa_fitted", {}),
      with("medusa", "", "heads/medusa_fitted", {{"lossy-typical", "1"}}),
  };
  struct Recorded {
    int64_t run;
    std::vector<RecordedStep> steps;
    RunSummary summary;
    RunMeta meta;
  };
  std::vector<Recorded> recorded;
  int64_t session = 0;
  {
    SessionWriter w(db);
    session = w.begin_session(test::synthetic_session());
    for (const auto& spec : specs)
      for (float temperature : {0.f, 0.9f}) {
        GenerateOptions opts;
        opts.max_tokens = 24;
        opts.sampling.temperature = temperature;
        opts.sampling.seed = 7;
        auto method = make_method(spec, *model);
        auto ctx = model->new_cpu_context(0);
        auto ids = encode_prompt(*model, "The quick brown fox", false);
        RunMeta meta{spec, opts.sampling, opts.max_tokens, {}, "The quick brown fox", false, int(ids.size())};
        Recorded rec{w.begin_run(session, meta), {}, {}, meta};
        auto res = generate_speculative(*model, *ctx, *method, ids, opts, [&](const StepRecord& r, const std::string& p) {
          w.append_step(rec.run, r, p);
          rec.steps.push_back({r, p});
          return true;
        });
        rec.summary = res.summary;
        w.finish_run(rec.run, {res.summary, res.gen.text, std::nullopt, to_json(res.summary).dump()});
        recorded.push_back(std::move(rec));
      }
    w.flush();
    EXPECT_EQ(w.error(), "");
  }
  SessionReader reader(db);
  auto s = reader.session(session);
  ASSERT_EQ(s.runs.size(), recorded.size());
  size_t total_nodes = 0;
  for (size_t i = 0; i < recorded.size(); ++i) {
    const auto& want = recorded[i];
    const RunRow run = reader.run(want.run);
    EXPECT_EQ(run.status, "finished");
    EXPECT_EQ(run.meta.method.name, want.meta.method.name);
    EXPECT_EQ(run.meta.method.options, want.meta.method.options);
    EXPECT_EQ(run.meta.method.draft_path, want.meta.method.draft_path);
    EXPECT_EQ(run.meta.sampling.temperature, want.meta.sampling.temperature);
    EXPECT_EQ(run.meta.sampling.seed, want.meta.sampling.seed);
    ASSERT_TRUE(run.outcome);
    EXPECT_EQ(to_json(run.outcome->summary), to_json(want.summary));
    ASSERT_EQ(run.step_count, int64_t(want.steps.size()));
    int64_t idx = 0;
    reader.for_each_step(want.run, 0, run.step_count, [&](RecordedStep&& got) {
      const auto& w = want.steps[size_t(idx++)];
      EXPECT_EQ(to_json(got.record), to_json(w.record)) << want.meta.method.name << " step " << idx - 1;
      EXPECT_EQ(got.text_piece, w.text_piece);
      total_nodes += got.record.nodes.size();
    });
    // Random access (scrubbing) gives the same record as the stream.
    const int64_t mid = run.step_count / 2;
    EXPECT_EQ(to_json(reader.step(want.run, mid).record), to_json(want.steps[size_t(mid)].record));
  }
  EXPECT_GT(total_nodes, 500u) << "the methods drafted trees";
}

TEST(SessionStore, SyntheticRecordsWithEdgeValuesRoundTrip) {
  auto dir = test::fresh_dir("synthetic");
  const std::string db = (dir / "s.db").string();
  int64_t run = 0;
  {
    SessionWriter w(db);
    run = record_synthetic(w, 300);
    EXPECT_EQ(w.stats().steps_committed, 300);
  }
  SessionReader r(db);
  EXPECT_EQ(r.step_count(run), 300);
  auto timeline = r.timeline(run);
  ASSERT_EQ(timeline.size(), 300u);
  for (int i = 0; i < 300; ++i) {
    auto want = test::synthetic_step(run, i);
    auto got = r.step(run, i);
    ASSERT_EQ(to_json(got.record).dump(), to_json(want).dump()) << "step " << i;  // NaN -> null both sides
    EXPECT_EQ(got.text_piece, test::synthetic_piece(run, i));
    EXPECT_EQ(timeline[size_t(i)].accepted, want.accepted_count());
    EXPECT_EQ(timeline[size_t(i)].drafted, int(want.nodes.size()));
    EXPECT_EQ(timeline[size_t(i)].total_us, want.timings.total_us());
  }
  EXPECT_THROW(r.step(run, 300), InputError);
  EXPECT_THROW(r.session(999), InputError);
}

TEST(SessionStore, NewStoreIsVersionedWalAndOurs) {
  auto dir = test::fresh_dir("fresh");
  const std::string db = (dir / "nested" / "folder" / "s.db").string();  // folders are created
  { SessionWriter w(db); }
  Database d(db, Database::Mode::ReadOnly);
  EXPECT_EQ(d.scalar_int("PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(d.scalar_int("PRAGMA application_id"), kApplicationId);
  auto st = d.prepare("PRAGMA journal_mode");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.text_at(0), "wal");
}

TEST(SessionStore, MigratesVersion1ForwardKeepingData) {
  auto dir = test::fresh_dir("migrate");
  const std::string db = (dir / "v1.db").string();
  {
    Database d(db, Database::Mode::ReadWriteCreate);
    d.exec(schema_sql(1));
    d.exec("INSERT INTO sessions(created_at, kind, title, app_version, model_path, model_architecture, "
           "model_config_sha256, model_weights_index_sha256, backend, device) "
           "VALUES('2026-01-01T00:00:00.000Z', 'run', 'old', '0.0.9', '/m', 'LlamaForCausalLM', 'c', 'w', 'cpu', 'x')");
    EXPECT_EQ(d.scalar_int("PRAGMA user_version"), 1);
  }
  SessionReader r(db);  // reading an older store migrates it first
  auto s = r.session(1);
  EXPECT_EQ(s.meta.title, "old");
  EXPECT_EQ(s.meta.app_version, "0.0.9");
  EXPECT_EQ(s.meta.notes, "");
  EXPECT_TRUE(set_session_notes(db, 1, "look at step 3"));
  EXPECT_EQ(SessionReader(db).session(1).meta.notes, "look at step 3");
  Database d(db, Database::Mode::ReadOnly);
  EXPECT_EQ(d.scalar_int("PRAGMA user_version"), kSchemaVersion);
}

// A comparison recorded before races (schema 2) has runs with no lane, label or target: they read back with the
// session's model as their target and their method as their label, and replay as before.
TEST(SessionStore, MigratesVersion2RunsWithTheSessionModelAsTarget) {
  auto dir = test::fresh_dir("migrate2");
  const std::string db = (dir / "v2.db").string();
  {
    Database d(db, Database::Mode::ReadWriteCreate);
    d.exec(schema_sql(2));
    d.exec("INSERT INTO sessions(created_at, kind, title, app_version, model_path, model_architecture, "
           "model_config_sha256, model_weights_index_sha256, backend, device) "
           "VALUES('2026-01-01T00:00:00.000Z', 'compare', 'old', '0.1.0', '/m', 'LlamaForCausalLM', 'c', 'w', 'cpu', 'x')");
    d.exec("INSERT INTO runs(session_id, ordinal, method, method_json, temperature, top_k, top_p, min_p, seed, "
           "max_tokens, stop_strings_json, prompt, chat, prompt_tokens, status, started_at) VALUES(1, 0, 'pld', "
           "'{\"name\":\"pld\",\"draft\":\"\",\"head\":\"\",\"options\":{}}', 0, 0, 1, 0, 0, 8, '[]', 'hi', 0, "
           "2, 'recording', '2026-01-01T00:00:00.000Z')");
  }
  SessionReader r(db);
  auto run = r.session(1).runs.at(0);
  EXPECT_FALSE(run.meta.lane.has_value());
  EXPECT_EQ(run.meta.label, "pld");
  EXPECT_EQ(run.meta.target.path, "/m");
  EXPECT_EQ(run.meta.target.config_sha256, "c");
  Database d(db, Database::Mode::ReadOnly);
  EXPECT_EQ(d.scalar_int("PRAGMA user_version"), kSchemaVersion);
}

TEST(SessionStore, RefusesNewerSchemaUntouched) {
  auto dir = test::fresh_dir("newer");
  const auto p = dir / "new.db";
  {
    Database d(p.string(), Database::Mode::ReadWriteCreate);
    d.exec(schema_sql(kSchemaVersion));
    d.exec("PRAGMA user_version = " + std::to_string(kSchemaVersion + 1));
  }
  expect_refused_untouched(p, "newer SpecScope");
}

TEST(SessionStore, RefusesImpossibleSchemaVersionsUntouched) {
  // Found by fuzz_session_db: a negative user_version once indexed the migration table out of bounds.
  auto dir = test::fresh_dir("badversion");
  for (int version : {-1, -2147483647, 0}) {
    const auto p = dir / ("v" + std::to_string(version) + ".db");
    {
      Database d(p.string(), Database::Mode::ReadWriteCreate);
      d.exec(schema_sql(kSchemaVersion));
      d.exec("PRAGMA user_version = " + std::to_string(version));
    }
    expect_refused_untouched(p, "corrupt session store");
  }
}

TEST(SessionStore, RefusesOtherSqliteDatabasesUntouched) {
  auto dir = test::fresh_dir("foreign");
  const auto p = dir / "other.db";
  {
    Database d(p.string(), Database::Mode::ReadWriteCreate);
    d.exec("CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos(name) VALUES('cat')");
  }
  expect_refused_untouched(p, "another application");
}

TEST(SessionStore, RefusesNonSqliteFilesUntouched) {
  auto dir = test::fresh_dir("notsqlite");
  const auto text = dir / "notes.db";
  test::write_bytes(text, "these are my notes, not a database\n");
  expect_refused_untouched(text, "not a SQLite database");
  const auto tiny = dir / "tiny.db";
  test::write_bytes(tiny, "SQLite format 3");  // a header cut short
  expect_refused_untouched(tiny, "not a SQLite database");
}

TEST(SessionStore, RefusesTruncatedStoreUntouched) {
  auto dir = test::fresh_dir("truncated");
  const auto p = dir / "s.db";
  { SessionWriter w(p.string()); record_synthetic(w, 400); }
  ASSERT_FALSE(fs::exists(p.string() + "-wal")) << "closing the last connection checkpoints the WAL";
  std::string bytes = test::read_bytes(p);
  ASSERT_GT(bytes.size(), 100000u);
  test::write_bytes(p, bytes.substr(0, bytes.size() / 2));
  expect_refused_untouched(p, "truncated");
}

TEST(SessionStore, CorruptPagesAreAnErrorNotACrash) {
  auto dir = test::fresh_dir("corrupt");
  const auto p = dir / "s.db";
  int64_t run = 0;
  { SessionWriter w(p.string()); run = record_synthetic(w, 400); }
  std::string bytes = test::read_bytes(p);
  for (size_t i = 4096 * 2; i < bytes.size(); i += 7) bytes[i] = char(0xA5);  // every page after the schema
  test::write_bytes(p, bytes);
  const std::string before = test::read_bytes(p);
  try {
    SessionReader r(p.string());
    r.session(1);
    r.for_each_step(run, 0, 400, [](RecordedStep&&) {});
    ADD_FAILURE() << "read a corrupt store without an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
  EXPECT_EQ(test::read_bytes(p), before) << "reading modified the file";
}

TEST(SessionStore, UnwritableLocationIsAClearError) {
  // Runs as any user, root included: /proc refuses new files whatever the permissions.
  try {
    SessionWriter w("/proc/specscope-test/sessions.db");
    ADD_FAILURE() << "opened a store under /proc";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/specscope-test"), std::string::npos) << e.what();
  }
  auto dir = test::fresh_dir("isdir");
  EXPECT_THROW(SessionWriter w(dir.string()), InputError);
  EXPECT_THROW(SessionReader r((dir / "missing.db").string()), InputError);
}

TEST(SessionStore, FullStoreKeepsEverythingCommitted) {
  auto dir = test::fresh_dir("full");
  const std::string db = (dir / "s.db").string();
  int64_t run = 0;
  WriterStats stats;
  std::string error;
  {
    WriterOptions o;
    o.max_pages = 60;  // 240 KB at SQLite's 4 KB pages
    o.max_batch_ms = 5;
    SessionWriter w(db, o);
    int64_t s = w.begin_session(test::synthetic_session());
    run = w.begin_run(s, test::synthetic_run());
    for (int i = 0; i < 3000; ++i) {
      w.append_step(run, test::synthetic_step(run, i), test::synthetic_piece(run, i));
      if (i % 50 == 49) w.flush();  // many small commits, as a live run makes
    }
    w.flush();
    stats = w.stats();
    error = w.error();
    w.append_step(run, test::synthetic_step(run, 5000), "after the failure");  // dropped, no crash
    w.flush();
    EXPECT_THROW(w.begin_run(s, test::synthetic_run()), InputError);
  }
  EXPECT_NE(error.find("full"), std::string::npos) << error;
  EXPECT_NE(error.find(db), std::string::npos) << error;
  ASSERT_GT(stats.steps_committed, 50);
  EXPECT_GT(stats.steps_dropped, 0);
  Database d(db, Database::Mode::ReadWrite);
  auto st = d.prepare("PRAGMA integrity_check");
  ASSERT_TRUE(st.step());
  EXPECT_EQ(st.text_at(0), "ok");
  SessionReader r(db);
  ASSERT_EQ(r.step_count(run), stats.steps_committed) << "exactly what was reported committed is there";
  int64_t i = 0;
  r.for_each_step(run, 0, stats.steps_committed, [&](RecordedStep&& got) {
    EXPECT_EQ(to_json(got.record).dump(), to_json(test::synthetic_step(run, i)).dump());
    ++i;
  });
}

TEST(SessionStore, ReaderFollowsARunWhileItIsRecorded) {
  auto dir = test::fresh_dir("follow");
  const std::string db = (dir / "s.db").string();
  SessionWriter w(db);
  int64_t s = w.begin_session(test::synthetic_session());
  int64_t run = w.begin_run(s, test::synthetic_run());
  constexpr int kSteps = 1500;
  std::thread producer([&] {
    for (int i = 0; i < kSteps; ++i) {
      w.append_step(run, test::synthetic_step(run, i), test::synthetic_piece(run, i));
      if (i % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(15));
    }
    w.finish_run(run, {RunSummary{}, "done", std::nullopt, to_json(RunSummary{}).dump()});
    w.flush();
  });
  SessionReader reader(db);
  ReplayOptions o;
  o.speed = 0;
  o.follow = true;
  int64_t seen = 0, while_recording = 0;
  replay_run(reader, run, o, [&](const RecordedStep& got) {
    EXPECT_EQ(to_json(got.record).dump(), to_json(test::synthetic_step(run, seen)).dump());
    EXPECT_EQ(got.text_piece, test::synthetic_piece(run, seen));
    if (reader.run(run).status == "recording") ++while_recording;
    ++seen;
    return true;
  });
  producer.join();
  EXPECT_EQ(seen, kSteps);
  EXPECT_GT(while_recording, 0) << "the reader saw steps before the run finished";
}

TEST(SessionStore, DeleteRemovesOneSessionEntirely) {
  auto dir = test::fresh_dir("delete");
  const std::string db = (dir / "s.db").string();
  int64_t s1 = 0, s2 = 0, r2 = 0;
  {
    SessionWriter w(db);
    record_synthetic(w, 50, &s1);
    r2 = record_synthetic(w, 60, &s2);
    w.append_message(s1, {"user", "hi", 0});
    w.flush();
  }
  EXPECT_TRUE(delete_session(db, s1));
  EXPECT_FALSE(delete_session(db, s1));
  SessionReader r(db);
  auto all = r.list();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].id, s2);
  EXPECT_EQ(all[0].steps, 60);
  EXPECT_EQ(r.step_count(r2), 60);
  Database d(db, Database::Mode::ReadOnly);
  EXPECT_EQ(d.scalar_int("SELECT count(*) FROM messages"), 0);
  EXPECT_EQ(d.scalar_int("SELECT count(*) FROM runs"), 1);
  EXPECT_EQ(d.scalar_int("SELECT count(*) FROM steps"), 60);
  EXPECT_EQ(d.scalar_int("SELECT count(*) FROM nodes WHERE run_id<>" + std::to_string(r2)), 0);
}

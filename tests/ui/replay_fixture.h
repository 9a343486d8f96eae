#pragma once
// Recorded sessions for the linked-views and presenter GUI tests, written straight into a store (no model):
// well-formed EAGLE-2-like steps whose accepted length cycles 0..3, with real-looking timings, so the statistics
// differ from one range of steps to another, and every token's text is its step's ("w7 " for step 7).
#include <filesystem>
#include <string>
#include <vector>

#include "engine/methods/step_record.h"
#include "engine/methods/step_record_json.h"
#include "sessions/writer.h"

namespace specscope::test::replay {

inline std::string piece(int lane, int i) { return "w" + std::to_string(i) + (lane ? "L" + std::to_string(lane) : "") + " "; }

// Step i of a lane: the prefill at 0; then `i % 4` accepted drafts in a chain, a rejected node after them, and
// the bonus. The lane shifts the timings so lanes differ.
inline StepRecord step(int lane, int i) {
  StepRecord r;
  r.step = i;
  r.method = "eagle2";
  r.position = 10 + 3 * i;
  r.timings = {200 + 10 * i, 900 + (37 * i + 100 * lane) % 500, 50, 20};
  r.target_forwards = 1;
  if (i == 0) {
    r.root_token = -1;
    r.bonus_token = 100;
    r.bonus_text = piece(lane, 0);
    r.committed = {100};
    r.target_tokens = 8;
    return r;
  }
  r.root_token = 100 + i;
  const int accept = (i + lane) % 4;
  for (int d = 0; d <= accept; ++d) {
    DraftNode n;
    n.id = d;
    n.parent = d - 1;
    n.depth = d + 1;
    n.token = 1000 + 10 * i + d;
    n.text = "t" + std::to_string(d);
    n.draft_prob = 0.9f - 0.15f * float(d);
    n.target_prob = d < accept ? 0.8f : 0.1f;
    n.accept_prob = d < accept ? 1.0f : 0.0f;
    n.decision = d < accept ? NodeDecision::Accepted : NodeDecision::Rejected;
    r.nodes.push_back(n);
    if (d < accept) {
      r.accepted_path.push_back(d);
      r.committed.push_back(n.token);
    }
  }
  r.bonus_token = 5000 + i;
  r.bonus_text = "b";
  r.committed.push_back(r.bonus_token);
  r.target_tokens = int(r.nodes.size()) + 1;
  r.draft_forwards = int(r.nodes.size());
  r.draft_tokens = int(r.nodes.size());
  return r;
}

inline sessions::RunMeta run_meta(const std::string& method, int lane) {
  sessions::RunMeta m;
  m.method.name = method;
  m.prompt = "What does the word harbor mean?";
  m.chat = true;
  m.max_tokens = 256;
  m.lane = lane;
  m.label = method;
  return m;
}

// Records a run's steps and finishes it as the runner does (its summary from the steps).
inline void record_run(sessions::SessionWriter& w, int64_t run, int lane, int steps, const std::string& method) {
  std::vector<StepRecord> records;
  std::string text;
  for (int i = 0; i < steps; ++i) {
    records.push_back(step(lane, i));
    text += piece(lane, i);
    w.append_step(run, records.back(), piece(lane, i));
  }
  const RunSummary summary = summarize(method, records);
  w.finish_run(run, {summary, text, std::nullopt, to_json(summary).dump()});
}

// A chat session with one run of `steps` steps and the given notes; returns its id.
inline int64_t record_chat(const std::filesystem::path& db, int steps, const std::string& notes = {}) {
  sessions::SessionWriter w(db.string());
  sessions::SessionMeta meta;
  meta.kind = "chat";
  meta.title = "linked views";
  meta.notes = notes;
  const int64_t s = w.begin_session(meta);
  w.append_message(s, {"user", "What does the word harbor mean?", 0});
  const int64_t run = w.begin_run(s, run_meta("eagle2", 0));
  record_run(w, run, 0, steps, "eagle2");
  w.flush();
  return s;
}

// A race of two lanes (eagle2, medusa) of `steps` steps each.
inline int64_t record_race(const std::filesystem::path& db, int steps) {
  sessions::SessionWriter w(db.string());
  sessions::SessionMeta meta;
  meta.kind = "compare";
  meta.title = "race";
  const int64_t s = w.begin_session(meta);
  for (int lane = 0; lane < 2; ++lane) {
    const std::string method = lane ? "medusa" : "eagle2";
    record_run(w, w.begin_run(s, run_meta(method, lane)), lane, steps, method);
  }
  w.flush();
  return s;
}

}  // namespace specscope::test::replay

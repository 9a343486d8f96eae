#pragma once
// What a session holds, as plain data: the session (model, backend, chat messages), its runs (method,
// sampling, prompt, outcome) and each run's steps (the engine's StepRecord plus the text it made visible).
// The writer takes these, the reader gives them back identical.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/methods/factory.h"
#include "engine/methods/step_record.h"
#include "engine/model/model.h"
#include "engine/sampling/sampler.h"

namespace specscope::sessions {

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
  int64_t run_id = 0;  // the run that produced an assistant message (0: none)
};

struct SessionMeta {
  std::string kind = "run";  // run | compare | chat
  std::string title;
  std::string app_version = SPECSCOPE_VERSION;
  ModelIdentity model;
  std::string backend = "cpu";
  std::string device;  // e.g. the CPU model name, or the GPU's
  std::string notes;   // free text a teacher attaches (schema version 2)
};

struct RunMeta {
  MethodSpec method;
  SamplingParams sampling;
  int max_tokens = 0;
  std::vector<std::string> stop_strings;
  std::string prompt;
  bool chat = false;
  int prompt_tokens = 0;
  // Races (schema version 3): every lane names its own target. A run recorded before has no lane (nullopt),
  // its label is its method and its target the session's model (the reader fills them in).
  std::optional<int> lane;  // index among the job's lanes; -1: a target's vanilla reference run
  std::string label;        // the lane's label ("eagle2", "eagle2 depth=4"); the method when empty
  ModelIdentity target;
};

struct RunOutcome {
  RunSummary summary;
  std::string output_text;
  std::optional<bool> identical_to_reference;  // compare: greedy output equal to the reference run's
  std::string summary_json;                    // the summary exactly as the live command printed it (JSON)
};

// One recorded step: the engine's record and the text the live run showed after it.
struct RecordedStep {
  StepRecord record;
  std::string text_piece;
};

// Read back.
struct RunRow {
  int64_t id = 0, session_id = 0;
  int ordinal = 0;
  RunMeta meta;
  std::string status;  // recording | finished (a run left "recording" by a killed process stays so)
  std::string started_at, finished_at;
  std::optional<RunOutcome> outcome;
  int64_t step_count = 0;  // steps committed so far
};

struct SessionRow {
  int64_t id = 0;
  std::string created_at;
  SessionMeta meta;
  std::vector<ChatMessage> messages;
  std::vector<RunRow> runs;
};

// The timeline of a run without its trees: enough to draw one bar per step and to scrub.
struct StepBrief {
  int index = 0;
  int accepted = 0, drafted = 0;
  int64_t total_us = 0;
};

}  // namespace specscope::sessions

#pragma once
// A job: which lanes (method + drafter + target) to run on which prompts, with what sampling, backend and
// schedule, and where to record it. The CLI's `run` and `compare` and the app's chat and Compare tab all
// describe their work as a Job and hand it to JobRunner (runner.h): one copy of the loop, the reference runs,
// the speedups and verdicts, and the recording.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/generate/generator.h"
#include "engine/methods/factory.h"
#include "engine/model/backend.h"
#include "engine/tokenizer/chat_template.h"

namespace specscope::sessions {
class SessionWriter;
}

namespace specscope::runs {

// Sequential: one run after another (clean timings). Interleaved: a prompt's lanes take turns of at least
// Job::turn_ms of compute each (whole steps), on their own threads but never at the same time, so they progress
// side by side (the app's live race) and meet the same load from the rest of the machine.
enum class Schedule { Sequential, Interleaved };

// A lane as resolved (lane_resolver.h): the method with its drafter and options, and the target it verifies
// with. Lanes of one job may have different targets (Speculative Streaming needs its own).
struct Lane {
  std::string label;   // unique in the job: "eagle2", or "eagle2 total-tokens=30" when two lanes share a method
  MethodSpec method;   // drafter paths filled in
  std::string target;  // the target model (folder or .gguf)
};

struct Prompt {
  std::string text;                       // the raw prompt, or the user's last message of a conversation
  std::vector<ChatMessage> conversation;  // chat with history: the whole conversation; empty: `text` alone
};

struct RecordTo {
  std::string db_path;
  std::string kind = "run";  // run | compare | chat
  std::string title;
  int64_t session_id = 0;    // > 0: add to this session (a chat's next turn)
  // An open writer to use instead of opening db_path (the CLI opens the store before loading any model, so
  // that a bad --session-db fails fast).
  std::shared_ptr<sessions::SessionWriter> writer;
};

struct Job {
  std::vector<Lane> lanes;
  std::vector<Prompt> prompts;
  bool chat = false;  // prompts go through the target's chat template
  // Extra chat-template variables (a JSON object: --chat-template-kwargs), e.g. {"enable_thinking": false}.
  nlohmann::ordered_json template_kwargs = nlohmann::ordered_json::object();
  GenerateOptions options;
  Backend backend = Backend::Auto;
  int n_ctx = 0;  // 0: the model's context
  Schedule schedule = Schedule::Sequential;
  // Interleaved: a lane keeps its turn for whole steps until this much wall time has passed (0: one step a turn).
  // Turns of single steps made each lane start every step on caches the others had filled with their own models
  // (the shipped family's models are ~70 MB against a 32 MB L3): three lanes interleaved step by step ran vanilla at
  // 1,300-1,500 tok/s where a sequential run gave ~1,900; with 20 ms turns ten lanes run it as fast as a sequential
  // run (2,435 against 2,497 tok/s). 20 ms is a few steps of the shipped base and one step of a 1B model, and a
  // turn of 10 lanes still comes round five times a second.
  int turn_ms = 20;
  // Each target's reference run: vanilla on that target with the job's sampling, once per prompt; a vanilla
  // lane on the target serves as its reference instead of a second run. Off for a plain chat or `run`.
  bool references = true;
  // On CPU, lanes of tunable methods that fix no size get tree=auto (runs/tree_tuner.h); false keeps the published
  // trees unless a lane asks for auto.
  bool tree_auto_on_cpu = true;
  std::optional<RecordTo> record;
};

}  // namespace specscope::runs

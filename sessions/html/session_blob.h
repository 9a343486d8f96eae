#pragma once
// The data a session's web page renders: one JSON document with the session, its runs and their steps, shaped
// to stay small at thousands of steps. Each step is the CLI's --json form of its StepRecord (so a field added to
// StepRecord's JSON reaches the page without touching this file), with its nodes as rows of values in the order
// of the document's "node_keys" instead of one object per node, and every float cut to 6 significant digits.
// The page's script (html_template.html) reads this shape; "version" changes when that contract does:
//   { format: "specscope-session-html", version: 1, generator, session: { id, kind, title, notes, created_at,
//     app_version, model: { path, architecture }, backend, device, messages }, range: { first, last } | null,
//     node_keys: [...], runs: [ { id, ordinal, lane (null before races; -1: a target's reference), label, method,
//     method_spec, target, prompt, chat, greedy, sampling, temperature, max_tokens, status, step_count (in the
//     store), summary | null, identical | null, first_index, tokens_before, prefix_text, steps: [ { step, ...the
//     StepRecord's JSON, nodes: [[values in node_keys order], ...], piece } ] } ] }
// A reasoning model's run (its summary records the reply's shape) also has reply ("think-tags" | "harmony") and
// prefix_part (the part the text before the range ended in: 0 reasoning, 1 answer, -1 none), and each step parts:
// per committed token (or for the whole piece where the tokens' texts do not add up to it) a list of [part, text]
// spans, harmony's markers and the format's blank lines taken out, as the app shows them.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "sessions/reader.h"

namespace specscope::sessions {

// Steps a..b inclusive, in the StepRecord's own step numbers (0: the prefill), of every run.
struct StepRange {
  int64_t first = 0, last = 0;
};

// Throws InputError("session N", ...) when the session is absent or the range selects no step of any run.
nlohmann::json html_session_blob(SessionReader& reader, int64_t session_id, const std::optional<StepRange>& range);

}  // namespace specscope::sessions

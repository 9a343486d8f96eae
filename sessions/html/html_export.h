#pragma once
// A session as one self-contained web page: the template (html_template.html, compiled in) with the session's
// data (session_blob.h) inlined as a JSON script. The page loads nothing else: no network, no other file (its
// Content-Security-Policy forbids both). `specscope-cli sessions export ID --format html` and the app's
// File > Export as web page both call this.
#include <cstdint>
#include <optional>
#include <string>

#include "sessions/html/session_blob.h"
#include "sessions/reader.h"

namespace specscope::sessions {

struct HtmlExportOptions {
  std::optional<StepRange> steps;  // only these steps of every run (the text before them is kept as context)
};

// "A-B" or "A" (step numbers, 0: the prefill). Throws InputError("--steps", ...) for anything else.
StepRange parse_step_range(const std::string& text);

// The whole page. Throws InputError naming the session when it is absent or the range selects nothing.
std::string session_html(SessionReader& reader, int64_t session_id, const HtmlExportOptions& options = {});

// The page for an already built document (tests build odd ones by hand).
std::string html_page(const nlohmann::json& blob);

}  // namespace specscope::sessions

#include "sessions/html/html_export.h"

#include <stdexcept>
#include <string_view>

#include "engine/util/error.h"
#include "engine/util/markup_escape.h"

extern const unsigned char specscope_html_template[];
extern const std::size_t specscope_html_template_size;

namespace specscope::sessions {

namespace {

constexpr std::string_view kTitleSlot = "{{TITLE}}";
constexpr std::string_view kDataSlot = "{{SESSION_JSON}}";

std::string_view page_template() {
  return {reinterpret_cast<const char*>(specscope_html_template), specscope_html_template_size};
}

// JSON inside <script>: "</script>" or "<!--" in a token's text would end or confuse the element. '<' only
// occurs inside JSON strings, where \u003c is the same character, so every one is escaped.
std::string script_safe_json(const nlohmann::json& j) {
  const std::string raw = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(raw.size() + raw.size() / 64);
  for (char c : raw) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

// Where `slot` sits in the template; it must be there exactly once.
size_t slot_at(std::string_view page, std::string_view slot) {
  const size_t at = page.find(slot);
  if (at == std::string_view::npos || page.find(slot, at + 1) != std::string_view::npos)
    throw std::logic_error("html_template.html must hold " + std::string(slot) + " exactly once");
  return at;
}

std::string page_title(const nlohmann::json& blob) {
  const auto& s = blob.at("session");
  std::string title = "SpecScope session " + std::to_string(s.at("id").get<int64_t>());
  const std::string t = s.value("title", "");
  if (!t.empty()) title += ": " + t;
  if (!blob.at("range").is_null())
    title += " (steps " + std::to_string(blob["range"]["first"].get<int64_t>()) + "\xE2\x80\x93" +
             std::to_string(blob["range"]["last"].get<int64_t>()) + ")";
  return title;
}

}  // namespace

StepRange parse_step_range(const std::string& text) {
  auto number = [&](const std::string& part) {
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string::npos)
      throw InputError("--steps", "expected A-B or A (step numbers, 0 is the prefill), got '" + text + "'");
    return std::stoll(part);
  };
  const size_t dash = text.find('-');
  StepRange r;
  r.first = number(text.substr(0, dash));
  r.last = dash == std::string::npos ? r.first : number(text.substr(dash + 1));
  if (r.last < r.first) throw InputError("--steps", "the range '" + text + "' ends before it starts");
  return r;
}

std::string html_page(const nlohmann::json& blob) {
  // Both slots are found in the template before anything is inserted: a title or a token's text that happens
  // to spell a slot's name is never filled in.
  const std::string_view t = page_template();
  const size_t title_at = slot_at(t, kTitleSlot), data_at = slot_at(t, kDataSlot);
  if (data_at < title_at) throw std::logic_error("html_template.html: the title must come before the data");
  const std::string data = script_safe_json(blob);
  std::string page;
  page.reserve(t.size() + data.size() + 256);
  page.append(t.substr(0, title_at)).append(markup_escape(page_title(blob)));
  page.append(t.substr(title_at + kTitleSlot.size(), data_at - title_at - kTitleSlot.size())).append(data);
  page.append(t.substr(data_at + kDataSlot.size()));
  return page;
}

std::string session_html(SessionReader& reader, int64_t session_id, const HtmlExportOptions& options) {
  return html_page(html_session_blob(reader, session_id, options.steps));
}

}  // namespace specscope::sessions

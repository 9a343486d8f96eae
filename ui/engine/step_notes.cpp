#include "ui/engine/step_notes.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace specscope::ui {

namespace {

std::string trimmed(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

bool starts_with_word(const std::string& s, size_t at, const char* word) {
  for (size_t k = 0; word[k]; ++k)
    if (at + k >= s.size() || std::tolower(static_cast<unsigned char>(s[at + k])) != word[k]) return false;
  return true;
}

// Reads a non-negative number at `at`; false when there is none.
bool read_number(const std::string& s, size_t& at, int& out) {
  size_t k = at;
  long v = 0;
  while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k])) && v < 100000000) v = v * 10 + (s[k++] - '0');
  if (k == at) return false;
  out = int(v);
  at = k;
  return true;
}

void skip_spaces(const std::string& s, size_t& at) {
  while (at < s.size() && (s[at] == ' ' || s[at] == '\t')) ++at;
}

// "step N: text" or "steps A-B: text" (also "A–B", "A..B"); false for anything else.
bool parse_step_line(const std::string& line, StepNote& out) {
  size_t at = 0;
  if (starts_with_word(line, 0, "steps")) at = 5;
  else if (starts_with_word(line, 0, "step")) at = 4;
  else return false;
  skip_spaces(line, at);
  int first = 0, last = 0;
  if (!read_number(line, at, first)) return false;
  last = first;
  skip_spaces(line, at);
  const std::string en_dash = "\xE2\x80\x93";
  size_t dash = 0;
  if (line.compare(at, en_dash.size(), en_dash) == 0) dash = en_dash.size();
  else if (line.compare(at, 2, "..") == 0) dash = 2;
  else if (at < line.size() && line[at] == '-') dash = 1;
  if (dash) {
    at += dash;
    skip_spaces(line, at);
    if (!read_number(line, at, last)) return false;
    skip_spaces(line, at);
  }
  if (at >= line.size() || line[at] != ':') return false;
  out.first = std::min(first, last);
  out.last = std::max(first, last);
  out.text = trimmed(line.substr(at + 1));
  return !out.text.empty();
}

}  // namespace

std::string SessionNotes::for_step(int step) const {
  std::string out;
  for (const auto& n : steps)
    if (step >= n.first && step <= n.last) out += (out.empty() ? "" : "\n") + n.text;
  return out;
}

SessionNotes parse_session_notes(const std::string& notes) {
  SessionNotes out;
  std::istringstream in(notes);
  std::string line;
  while (std::getline(in, line)) {
    line = trimmed(line);
    if (line.empty()) continue;
    StepNote n;
    if (parse_step_line(line, n)) out.steps.push_back(std::move(n));
    else out.general += (out.general.empty() ? "" : "\n") + line;
  }
  return out;
}

}  // namespace specscope::ui

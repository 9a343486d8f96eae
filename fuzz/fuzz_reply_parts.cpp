// libFuzzer target: the reply splitter (engine/generate/reply_parts.h) on arbitrary text. Its input is a model's
// output or a recorded session's (a shared .db is untrusted), fed in whatever pieces the steps made, so beyond "never a
// crash": any cut of the text into pieces gives the same parts as the whole text at once, the parts never hold more
// than the text, every span is non-empty, and a plain reply is the text itself. The shape read back from a run's
// summary (sessions/summary_json.h), which comes from the same file, is exercised on the same bytes.
// Input: byte 0 picks the shape (format, and whether the prompt opened the reasoning), byte 1 seeds the cuts; the rest
// is the text.
// Seeds: fuzz/corpus/reply_parts (think-tag and harmony replies, cut and whole).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "engine/generate/reply_parts.h"
#include "sessions/summary_json.h"

using namespace specscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const ReplyFormat formats[] = {ReplyFormat::Plain, ReplyFormat::ThinkTags, ReplyFormat::Harmony};
  const ReplyShape shape{formats[data[0] % 3], (data[0] & 4) != 0};
  uint32_t seed = data[1] * 2654435761u + 1;
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);

  const SplitReply whole = split_reply(text, shape);
  if (whole.reasoning.size() + whole.answer.size() > text.size()) std::abort();
  if (shape.format == ReplyFormat::Plain && (whole.answer != text || !whole.reasoning.empty())) std::abort();

  ReplySplitter splitter(shape);
  SplitReply pieces;
  auto add = [&](const std::vector<ReplySpan>& spans) {
    for (const auto& s : spans) {
      if (s.text.empty()) std::abort();
      (s.part == ReplyPart::Reasoning ? pieces.reasoning : pieces.answer) += s.text;
    }
  };
  for (size_t at = 0; at < text.size();) {
    seed = seed * 1103515245u + 12345u;
    const size_t n = 1 + (seed >> 16) % 9;
    add(splitter.feed(text.substr(at, n)));
    at += n;
  }
  add(splitter.flush());
  if (pieces.reasoning != whole.reasoning || pieces.answer != whole.answer) std::abort();

  // The same bytes as a run's summary and its recorded text.
  const ReplyShape read = sessions::recorded_reply_shape(std::string(text), text);
  (void)split_reply(text, read);
  return 0;
}

#pragma once
// A reply's reasoning and its answer, told apart as the model writes them. Reasoning models write their thoughts
// before the answer, marked by their chat format:
// - think tags (Qwen3, QwQ, DeepSeek-R1 and its distills): "<think>\n...\n</think>\n\nanswer". Where the template's
//   generation prompt already opens the block (DeepSeek-R1's ends in "<think>\n"), the reply starts inside it and
//   only "</think>" is written;
// - OpenAI's harmony (gpt-oss): messages "<|channel|>analysis<|message|>...<|end|>" then
//   "<|start|>assistant<|channel|>final<|message|>answer", each after the header the template's generation prompt
//   ("<|start|>assistant") begins. Its markers are special tokens, so the text must be decoded with them kept.
// The chat shows the two apart, and the conversation's next turn passes them back as the templates expect: the
// answer as `content`, the reasoning as `reasoning_content` (Qwen3) and `thinking` (harmony), each template reading
// its own key; passing harmony's markers in `content` makes gpt-oss's template raise.
//
// One streaming splitter does the work, for the live chat (text as each step commits it) and for a whole stored
// reply alike (split_reply), so a reply reads the same both ways.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace specscope {

enum class ReplyFormat { Plain, ThinkTags, Harmony };

const char* reply_format_name(ReplyFormat f);  // "plain" | "think-tags" | "harmony"
std::optional<ReplyFormat> reply_format_named(std::string_view name);  // reply_format_name's inverse

// The format a chat template makes its model write, from the template's text: harmony's channel markers, or a
// "</think>" the template strips from earlier answers; Plain otherwise.
ReplyFormat reply_format_of_template(std::string_view jinja_template);

// How one reply starts: its format, and whether the prompt already opened the reasoning (its end, decoded with
// special tokens, is "<think>" with only blanks after it).
struct ReplyShape {
  ReplyFormat format = ReplyFormat::Plain;
  bool starts_in_reasoning = false;
};
ReplyShape reply_shape_after(ReplyFormat format, std::string_view prompt_tail);

enum class ReplyPart { Reasoning, Answer };
const char* reply_part_name(ReplyPart p);  // "reasoning" | "answer"

struct ReplySpan {
  ReplyPart part = ReplyPart::Answer;
  std::string text;
};

// Feeds the reply's text as it comes; returns what can be shown now, by part, with the markers taken out. Text that
// may be the start of a marker is held back until the next feed or flush(). Blank lines the format puts around a
// part (the newlines after "<think>" and before and after "</think>") are dropped, as the templates strip them.
// Plain: everything is answer, returned as fed.
class ReplySplitter {
 public:
  explicit ReplySplitter(ReplyShape shape = {});
  std::vector<ReplySpan> feed(std::string_view text);
  std::vector<ReplySpan> flush();  // the end of the reply: what was held back
  ReplyPart part() const { return part_; }  // the part the next text belongs to
  const ReplyShape& shape() const { return shape_; }

 private:
  void feed_think(std::vector<ReplySpan>& out);
  void feed_harmony(std::vector<ReplySpan>& out);
  void append(std::vector<ReplySpan>& out, std::string_view text);
  void start_part(ReplyPart part);

  ReplyShape shape_;
  ReplyPart part_ = ReplyPart::Answer;
  bool in_header_ = false;      // harmony: between "<|start|>" (or the reply's start) and "<|message|>"
  bool skip_newlines_ = false;  // at a part's start: its leading newlines are dropped
  std::string pending_;         // text not yet returned
};

// Where a view that shows a reply's parts writes a note naming the part: before the reasoning, and before an answer
// that follows reasoning; never before an answer with nothing shown ahead of it, nor again for the same part.
// `shown`: the part shown last (none yet: nullopt). The app's text views and the web page's context both ask it.
bool reply_part_needs_note(std::optional<ReplyPart> shown, ReplyPart next);

// The shape of a whole reply recorded without its prompt (a stored session): from the markers it holds. A
// "</think>" with no "<think>" before it means the prompt opened the reasoning (what Qwen3's and DeepSeek-R1's
// templates assume when they split earlier answers).
ReplyShape reply_shape_of_text(std::string_view reply);

struct SplitReply {
  std::string reasoning, answer;
};
SplitReply split_reply(std::string_view text, const ReplyShape& shape);

}  // namespace specscope

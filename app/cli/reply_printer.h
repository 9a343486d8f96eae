#pragma once
// How `run` and `sessions replay` print a reply's text as it streams: a reasoning model's thinking to stderr after
// "thinking: ", its answer to stdout, so that a pipe reads the answer (engine/generate/reply_parts.h). A plain
// reply goes to stdout as it is.
#include <optional>
#include <string_view>
#include <vector>

#include "engine/generate/reply_parts.h"

namespace specscope::cli {

class ReplyPrinter {
 public:
  explicit ReplyPrinter(const ReplyShape& shape = {});
  void print(std::string_view piece);
  // The reply is complete: what was held back as a possible marker, and the end of a thought's line.
  void finish();

 private:
  void print_spans(const std::vector<ReplySpan>& spans);
  std::optional<ReplySplitter> splitter_;
  bool thinking_ = false;  // stderr's "thinking: " line is open
};

}  // namespace specscope::cli

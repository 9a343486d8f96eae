#include "app/cli/reply_printer.h"

#include <cstdio>

namespace specscope::cli {

ReplyPrinter::ReplyPrinter(const ReplyShape& shape) {
  if (shape.format != ReplyFormat::Plain) splitter_.emplace(shape);
}

void ReplyPrinter::print(std::string_view piece) {
  if (splitter_) print_spans(splitter_->feed(piece));
  else std::fwrite(piece.data(), 1, piece.size(), stdout);
}

void ReplyPrinter::finish() {
  if (splitter_) print_spans(splitter_->flush());
  if (thinking_) std::fputs("\n", stderr);  // a reply that ended while thinking: the footer on a line of its own
  thinking_ = false;
}

void ReplyPrinter::print_spans(const std::vector<ReplySpan>& spans) {
  for (const ReplySpan& s : spans) {
    if (s.part == ReplyPart::Reasoning) {
      if (!thinking_) std::fputs("thinking: ", stderr);
      thinking_ = true;
      std::fwrite(s.text.data(), 1, s.text.size(), stderr);
    } else {
      if (thinking_) std::fputs("\n", stderr);
      thinking_ = false;
      std::fwrite(s.text.data(), 1, s.text.size(), stdout);
    }
  }
  std::fflush(stderr);
}

}  // namespace specscope::cli

// StreamingDecoder: emits the text of a growing id sequence so that the pieces always concatenate to
// decode(all ids). It re-decodes a window of recent ids and emits only the part that can no longer change:
//  * a trailing run of byte-fallback tokens (<0xNN>) is held back until a normal token ends it, because
//    the ByteFallback decoder turns a whole run into U+FFFDs when the run as a whole is not valid UTF-8;
//  * trailing U+FFFDs are held back, because with byte-level BPE they may be an incomplete character
//    that the next token completes.
// Decoding from the true start keeps SentencePiece's first-token space rules identical to decode(); the
// window is trimmed only at a boundary where decoding the kept ids alone gives the same text.
#include <span>

#include "engine/tokenizer/tokenizer.h"

namespace specscope {

namespace {

constexpr size_t kTrimAbove = 64;  // ids kept before trimming the window
constexpr size_t kKeep = 16;       // ids kept as context after trimming
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

bool is_byte_piece(const std::string& p) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); };
  return p.size() == 6 && p.compare(0, 3, "<0x") == 0 && p[5] == '>' && hex(p[3]) && hex(p[4]);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

StreamingDecoder::StreamingDecoder(const Tokenizer& tok, bool skip_special) : tok_(tok), skip_special_(skip_special) {}

std::string StreamingDecoder::push(int32_t id) {
  ids_.push_back(id);
  // Tokens that may still change the text: byte tokens at the end, and skipped specials among them (they
  // are invisible to the decoder, so a byte run continues across them).
  auto pending = [&](int32_t t) { return is_byte_piece(tok_.token_piece(t)) || (skip_special_ && tok_.is_special(t)); };
  size_t clean = ids_.size();
  while (clean > 0 && pending(ids_[clean - 1])) --clean;

  const std::string text = tok_.decode(std::span<const int32_t>(ids_.data(), clean), skip_special_);
  size_t end = text.size();
  while (ends_with(std::string_view(text).substr(0, end), kReplacement)) end -= kReplacement.size();

  std::string out;
  if (end > emitted_bytes_) {
    out = text.substr(emitted_bytes_, end - emitted_bytes_);
    emitted_bytes_ = end;
  }

  // Keep the window short: drop old ids once everything is emitted and the cut is a clean boundary.
  if (clean == ids_.size() && end == text.size() && emitted_bytes_ == text.size() && ids_.size() > kTrimAbove) {
    const size_t cut = ids_.size() - kKeep;
    if (!pending(ids_[cut - 1])) {
      const std::span<const int32_t> ctx(ids_.data() + cut, kKeep);
      const std::string tail = tok_.decode(ctx, skip_special_);
      if (!tail.empty() && ends_with(text, tail)) {
        ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(cut));
        emitted_bytes_ = tail.size();
      }
    }
  }
  return out;
}

std::string StreamingDecoder::flush() {
  const std::string text = tok_.decode(ids_, skip_special_);
  std::string out;
  if (text.size() > emitted_bytes_) out = text.substr(emitted_bytes_);
  emitted_bytes_ = text.size();
  return out;
}

void StreamingDecoder::reset() {
  ids_.clear();
  emitted_bytes_ = 0;
}

}  // namespace specscope

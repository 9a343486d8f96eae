#include "engine/generate/reply_parts.h"

#include <algorithm>

namespace specscope {

namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
// Harmony's markers (special tokens of the o200k_harmony vocabulary). <|return|> and <|call|> end the reply: they
// are end-of-generation tokens and never reach the text.
constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kEnd = "<|end|>";
// A harmony header is a role, a channel name and perhaps a recipient and a content type; text that runs this long
// without reaching "<|message|>" is not one (a model writing no headers at all): it is shown as the answer.
constexpr size_t kLongestHeader = 256;

// The length of the longest end of `text` that `marker` starts with (shorter than the marker): text that may yet
// become the marker.
size_t marker_prefix_at_end(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n)
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

const char* reply_format_name(ReplyFormat f) {
  switch (f) {
    case ReplyFormat::ThinkTags: return "think-tags";
    case ReplyFormat::Harmony: return "harmony";
    case ReplyFormat::Plain: break;
  }
  return "plain";
}

std::optional<ReplyFormat> reply_format_named(std::string_view name) {
  for (ReplyFormat f : {ReplyFormat::Plain, ReplyFormat::ThinkTags, ReplyFormat::Harmony})
    if (name == reply_format_name(f)) return f;
  return std::nullopt;
}

const char* reply_part_name(ReplyPart p) { return p == ReplyPart::Reasoning ? "reasoning" : "answer"; }

ReplyFormat reply_format_of_template(std::string_view t) {
  if (t.find(kChannel) != std::string_view::npos && t.find(kMessage) != std::string_view::npos)
    return ReplyFormat::Harmony;
  if (t.find(kThinkClose) != std::string_view::npos) return ReplyFormat::ThinkTags;
  return ReplyFormat::Plain;
}

ReplyShape reply_shape_after(ReplyFormat format, std::string_view prompt_tail) {
  ReplyShape s;
  s.format = format;
  if (format != ReplyFormat::ThinkTags) return s;
  while (!prompt_tail.empty() && is_blank(prompt_tail.back())) prompt_tail.remove_suffix(1);
  s.starts_in_reasoning = prompt_tail.ends_with(kThinkOpen);
  return s;
}

ReplySplitter::ReplySplitter(ReplyShape shape) : shape_(shape) {
  if (shape_.format == ReplyFormat::ThinkTags && shape_.starts_in_reasoning) start_part(ReplyPart::Reasoning);
  // The generation prompt ends in "<|start|>assistant": the reply begins with the rest of a header.
  in_header_ = shape_.format == ReplyFormat::Harmony;
}

void ReplySplitter::start_part(ReplyPart part) {
  part_ = part;
  skip_newlines_ = shape_.format == ReplyFormat::ThinkTags;
}

void ReplySplitter::append(std::vector<ReplySpan>& out, std::string_view text) {
  if (skip_newlines_) {
    while (!text.empty() && text.front() == '\n') text.remove_prefix(1);
    if (text.empty()) return;
    skip_newlines_ = false;
  }
  if (text.empty()) return;
  if (!out.empty() && out.back().part == part_) out.back().text += text;
  else out.push_back({part_, std::string(text)});
}

std::vector<ReplySpan> ReplySplitter::feed(std::string_view text) {
  std::vector<ReplySpan> out;
  if (shape_.format == ReplyFormat::Plain) {
    append(out, text);
    return out;
  }
  pending_ += text;
  if (shape_.format == ReplyFormat::ThinkTags) feed_think(out);
  else feed_harmony(out);
  return out;
}

void ReplySplitter::feed_think(std::vector<ReplySpan>& out) {
  for (;;) {
    const std::string_view marker = part_ == ReplyPart::Answer ? kThinkOpen : kThinkClose;
    const size_t at = pending_.find(marker);
    if (at != std::string::npos) {
      std::string_view before(pending_.data(), at);
      if (part_ == ReplyPart::Reasoning)
        while (!before.empty() && before.back() == '\n') before.remove_suffix(1);
      append(out, before);
      pending_.erase(0, at + marker.size());
      start_part(part_ == ReplyPart::Answer ? ReplyPart::Reasoning : ReplyPart::Answer);
      continue;
    }
    size_t keep = marker_prefix_at_end(pending_, marker);
    // The reasoning's last newlines belong to "\n</think>" if that comes next: held until it is clear.
    if (part_ == ReplyPart::Reasoning)
      while (keep < pending_.size() && pending_[pending_.size() - keep - 1] == '\n') ++keep;
    append(out, std::string_view(pending_).substr(0, pending_.size() - keep));
    pending_.erase(0, pending_.size() - keep);
    return;
  }
}

void ReplySplitter::feed_harmony(std::vector<ReplySpan>& out) {
  for (;;) {
    if (in_header_) {
      // A header is whatever comes before a "<|message|>" that starts within kLongestHeader bytes. Decided only once
      // the text says (the marker found, or enough text without it), so any cut of the reply decides alike.
      const size_t at = pending_.find(kMessage);
      if (at == std::string::npos && pending_.size() < kLongestHeader + kMessage.size()) return;
      if (at == std::string::npos || at > kLongestHeader) {
        in_header_ = false;  // no header after all: plain text, shown as the answer
        part_ = ReplyPart::Answer;
        continue;
      }
      // "[<|start|>]assistant<|channel|>analysis[ to=...][<|constrain|>...]": the channel name decides the part.
      const std::string_view header(pending_.data(), at);
      std::string_view channel;
      if (const size_t c = header.find(kChannel); c != std::string_view::npos) {
        channel = header.substr(c + kChannel.size());
        channel = channel.substr(0, std::min(channel.find(' '), channel.find('<')));
      }
      part_ = channel == "analysis" ? ReplyPart::Reasoning : ReplyPart::Answer;
      pending_.erase(0, at + kMessage.size());
      in_header_ = false;
      continue;
    }
    const size_t at = pending_.find(kEnd);
    if (at != std::string::npos) {
      append(out, std::string_view(pending_).substr(0, at));
      pending_.erase(0, at + kEnd.size());
      // The next message's header follows; its "<|start|>" is part of it.
      in_header_ = true;
      continue;
    }
    const size_t keep = marker_prefix_at_end(pending_, kEnd);
    append(out, std::string_view(pending_).substr(0, pending_.size() - keep));
    pending_.erase(0, pending_.size() - keep);
    return;
  }
}

std::vector<ReplySpan> ReplySplitter::flush() {
  std::vector<ReplySpan> out;
  std::string rest;
  rest.swap(pending_);
  if (shape_.format == ReplyFormat::Harmony && in_header_) {
    // A header the reply ended inside is markup; text with no header at all is the answer.
    if (rest.starts_with("<|")) return out;
    part_ = ReplyPart::Answer;
  }
  if (shape_.format == ReplyFormat::ThinkTags && part_ == ReplyPart::Reasoning)
    while (!rest.empty() && rest.back() == '\n') rest.pop_back();
  append(out, rest);
  return out;
}

SplitReply split_reply(std::string_view text, const ReplyShape& shape) {
  ReplySplitter splitter(shape);
  SplitReply r;
  auto add = [&](const std::vector<ReplySpan>& spans) {
    for (const auto& s : spans) (s.part == ReplyPart::Reasoning ? r.reasoning : r.answer) += s.text;
  };
  add(splitter.feed(text));
  add(splitter.flush());
  return r;
}

bool reply_part_needs_note(std::optional<ReplyPart> shown, ReplyPart next) {
  return shown != next && !(next == ReplyPart::Answer && !shown);
}

ReplyShape reply_shape_of_text(std::string_view reply) {
  ReplyShape shape;
  if (reply.find(kChannel) != std::string_view::npos && reply.find(kMessage) != std::string_view::npos) {
    shape.format = ReplyFormat::Harmony;
  } else if (const size_t close = reply.find(kThinkClose); close != std::string_view::npos) {
    shape.format = ReplyFormat::ThinkTags;
    shape.starts_in_reasoning = reply.substr(0, close).find(kThinkOpen) == std::string_view::npos;
  } else if (reply.find(kThinkOpen) != std::string_view::npos) {
    shape.format = ReplyFormat::ThinkTags;  // reasoning cut short before it closed
  }
  return shape;
}

}  // namespace specscope

#include "engine/tokenizer/added_vocab.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/json_util.h"
#include "engine/tokenizer/normalizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode.h"

namespace specscope::tok {

namespace {

// The crate checks word boundaries and whitespace with Rust's regex crate (\w, \s are Unicode-aware).
bool ends_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t start = s.size() - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  size_t i = start;
  return unicode::is_rust_word(unicode::next_cp(s, i));
}

bool starts_with_word(std::string_view s) {
  if (s.empty()) return false;
  size_t i = 0;
  return unicode::is_rust_word(unicode::next_cp(s, i));
}

// Start of the whitespace run that ends s.
size_t trailing_space_start(std::string_view s) {
  size_t e = s.size();
  while (e > 0) {
    size_t start = e - 1;
    while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    size_t i = start;
    if (!unicode::is_white_space(unicode::next_cp(s, i))) break;
    e = start;
  }
  return e;
}

// Length of the whitespace run that starts s.
size_t leading_space_len(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    if (!unicode::is_white_space(unicode::next_cp(s, j))) break;
    i = j;
  }
  return i;
}

}  // namespace

void AddedVocabulary::Trie::add(std::string_view pattern, int32_t token) {
  if (pattern.empty()) return;
  int32_t node = 0;
  for (unsigned char c : pattern) {
    auto it = nodes[node].next.find(c);
    if (it == nodes[node].next.end()) {
      nodes.push_back(Node{});
      const auto child = static_cast<int32_t>(nodes.size() - 1);
      nodes[node].next.emplace(c, child);
      node = child;
    } else {
      node = it->second;
    }
  }
  if (nodes[node].token < 0) nodes[node].token = token;  // the first of identical patterns wins
  first[static_cast<unsigned char>(pattern[0])] = true;
}

std::pair<int32_t, size_t> AddedVocabulary::Trie::longest_at(std::string_view s, size_t pos) const {
  std::pair<int32_t, size_t> best{-1, 0};
  int32_t node = 0;
  for (size_t i = pos; i < s.size(); ++i) {
    const auto it = nodes[node].next.find(static_cast<unsigned char>(s[i]));
    if (it == nodes[node].next.end()) break;
    node = it->second;
    if (nodes[node].token >= 0) best = {nodes[node].token, i + 1 - pos};
  }
  return best;
}

void AddedVocabulary::load(const nlohmann::json& list, const std::string& path, const Normalizer* normalizer) {
  if (list.is_null()) return;
  if (!list.is_array()) throw InputError(path, "\"added_tokens\" is not a list");
  for (const auto& t : list) {
    AddedToken a;
    const auto& id = field(t, "id", path, "added token");
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      throw InputError(path, "added token has an invalid id");
    a.id = static_cast<int32_t>(id.get<int64_t>());
    a.content = str_field(t, "content", path, "added token");
    a.single_word = bool_or(t, "single_word", false);
    a.lstrip = bool_or(t, "lstrip", false);
    a.rstrip = bool_or(t, "rstrip", false);
    a.normalized = bool_or(t, "normalized", !bool_or(t, "special", false));
    a.special = bool_or(t, "special", false);
    if (a.content.empty()) continue;
    a.decoded = a.normalized && normalizer ? normalizer->normalize(a.content) : a.content;
    if (find_invalid_utf8(a.content) != std::string::npos) throw InputError(path, "added token is not valid UTF-8");
    by_content_[a.content] = a.id;
    by_id_[a.id] = tokens_.size();
    if (a.special) special_contents_.insert(a.content);
    max_id_ = std::max(max_id_, a.id);
    tokens_.push_back(std::move(a));
  }
  // The crate lists special tokens before the others when it builds its matchers.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t k = 0; k < tokens_.size(); ++k) {
      const auto& a = tokens_[k];
      if (a.special != (pass == 0)) continue;
      if (!a.normalized) {
        raw_trie_.add(a.content, static_cast<int32_t>(k));
      } else {
        // Normalized tokens match the normalized text, so their pattern is their normalized content.
        normalized_trie_.add(a.decoded, static_cast<int32_t>(k));
      }
    }
  }
}

void AddedVocabulary::find_matches(std::string_view s, const Trie& trie, bool at_origin, std::vector<Piece>& out) const {
  auto emit_text = [&](size_t b, size_t e) {
    if (e > b) out.push_back({-1, std::string(s.substr(b, e - b)), at_origin && b == 0});
  };
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    if (!trie.first[static_cast<unsigned char>(s[pos])]) {
      ++pos;
      continue;
    }
    const auto [k, len] = trie.longest_at(s, pos);
    if (k < 0) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + len;
    pos = stop;  // the crate's matcher resumes after the raw match, whatever lstrip/rstrip did
    const AddedToken& tok = tokens_[k];
    if (tok.single_word) {
      const bool start_space = start == 0 || !ends_with_word(s.substr(0, start));
      const bool stop_space = stop == s.size() || !starts_with_word(s.substr(stop));
      if (!start_space || !stop_space) continue;
    }
    if (tok.lstrip) start = std::max(trailing_space_start(s.substr(0, start)), start_offset);
    if (tok.rstrip) stop += leading_space_len(s.substr(stop));
    if (start_offset < start) emit_text(start_offset, start);
    out.push_back({tok.id, {}, false});
    start_offset = stop;
  }
  if (start_offset < s.size()) emit_text(start_offset, s.size());
}

std::vector<Piece> AddedVocabulary::split(std::string_view text, const Normalizer* normalizer) const {
  std::vector<Piece> first;
  find_matches(text, raw_trie_, true, first);
  std::vector<Piece> out;
  out.reserve(first.size());
  for (auto& p : first) {
    if (p.id >= 0) {
      out.push_back(std::move(p));
      continue;
    }
    const std::string norm = normalizer ? normalizer->normalize(std::move(p.text)) : std::move(p.text);
    find_matches(norm, normalized_trie_, p.at_origin, out);
  }
  return out;
}

const AddedToken* AddedVocabulary::by_id(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t> AddedVocabulary::id_of(std::string_view content) const {
  const auto it = by_content_.find(content);
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

}  // namespace specscope::tok

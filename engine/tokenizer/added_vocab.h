#pragma once
// Added tokens (tokenizer.json "added_tokens"): splitting the input on them before normalization and
// pre-tokenization, as the crate's AddedVocabulary does: leftmost-longest matching, first on the raw text
// for tokens with normalized=false, then on each normalized remaining piece for normalized=true tokens;
// single_word, lstrip and rstrip as the crate applies them.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/tokenizer/bpe_model.h"

namespace specscope::tok {

class Normalizer;

struct AddedToken {
  int32_t id = -1;
  std::string content;
  // What decode() sees for this id: the crate hands out the normalized content of normalized tokens
  // (e.g. "▁[INST]" behind Llama-2's Prepend normalizer, "specscope" behind Lowercase).
  std::string decoded;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
};

// A piece of input after splitting on added tokens: either an added token's id or text still to encode.
struct Piece {
  int32_t id = -1;    // >= 0 for an added token
  std::string text;   // normalized text (when id < 0)
  bool at_origin = false;
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  void load(const nlohmann::json& list, const std::string& path, const Normalizer* normalizer);

  std::vector<Piece> split(std::string_view text, const Normalizer* normalizer) const;

  const AddedToken* by_id(int32_t id) const;
  std::optional<int32_t> id_of(std::string_view content) const;
  bool is_special_content(std::string_view content) const { return special_contents_.count(std::string(content)) > 0; }
  int32_t max_id() const { return max_id_; }

 private:
  // Leftmost-longest matcher over a set of patterns (a byte trie).
  struct Trie {
    struct Node {
      std::unordered_map<unsigned char, int32_t> next;
      int32_t token = -1;  // index into tokens_ when a pattern ends here
    };
    std::vector<Node> nodes{Node{}};
    std::array<bool, 256> first{};
    void add(std::string_view pattern, int32_t token);
    // Longest pattern starting at `pos`: (token index, length), or token -1.
    std::pair<int32_t, size_t> longest_at(std::string_view s, size_t pos) const;
  };
  void find_matches(std::string_view sentence, const Trie& trie, bool at_origin, std::vector<Piece>& out) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> by_content_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::unordered_set<std::string> special_contents_;
  Trie raw_trie_, normalized_trie_;
  int32_t max_id_ = -1;
};

}  // namespace specscope::tok

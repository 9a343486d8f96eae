#include "engine/tokenizer/bpe_model.h"

#include <cstdio>
#include <queue>

#include <spdlog/spdlog.h>

#include "engine/tokenizer/json_util.h"
#include "engine/tokenizer/unicode.h"

namespace specscope::tok {

namespace {

constexpr size_t kCacheCapacity = 10000;  // the crate's default
constexpr size_t kMaxCachedWordLen = 256;

uint64_t pair_key(int32_t a, int32_t b) { return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b); }

std::string byte_token(unsigned char b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

}  // namespace

BpeModel::BpeModel(const nlohmann::json& model, const std::string& path) {
  const auto& vocab = field(model, "vocab", path, "BPE model");
  if (!vocab.is_object()) throw InputError(path, "BPE model \"vocab\" is not an object");
  int32_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > INT32_MAX)
      throw InputError(path, "BPE vocab entry \"" + it.key() + "\" has no valid id");
    const auto id = static_cast<int32_t>(it.value().get<int64_t>());
    vocab_[it.key()] = id;
    max_id = std::max(max_id, id);
  }
  if (max_id >= 50'000'000) throw InputError(path, "BPE vocab ids are implausibly large");
  id_to_token_.resize(static_cast<size_t>(max_id + 1));
  has_id_.assign(static_cast<size_t>(max_id + 1), false);
  for (const auto& [tok, id] : vocab_) {
    id_to_token_[id] = tok;
    has_id_[id] = true;
  }

  if (model.contains("unk_token") && model.at("unk_token").is_string()) unk_token_ = model.at("unk_token").get<std::string>();
  if (model.contains("continuing_subword_prefix") && model.at("continuing_subword_prefix").is_string())
    prefix_ = model.at("continuing_subword_prefix").get<std::string>();
  if (model.contains("end_of_word_suffix") && model.at("end_of_word_suffix").is_string())
    suffix_ = model.at("end_of_word_suffix").get<std::string>();
  fuse_unk_ = bool_or(model, "fuse_unk", false);
  byte_fallback_ = bool_or(model, "byte_fallback", false);
  ignore_merges_ = bool_or(model, "ignore_merges", false);
  if (model.contains("dropout") && model.at("dropout").is_number() && model.at("dropout").get<double>() > 0.0)
    spdlog::warn("{}: BPE dropout {} ignored (encoding is deterministic)", path, model.at("dropout").get<double>());
  if (unk_token_) {
    if (const auto id = token_to_id(*unk_token_)) {
      unk_id_ = *id;
    } else {
      // The crate fails only when an unknown character shows up; here such characters are dropped.
      spdlog::warn("{}: BPE unk_token \"{}\" is not in the vocab", path, *unk_token_);
    }
  }
  for (int b = 0; b < 256; ++b) {
    const auto id = token_to_id(byte_token(static_cast<unsigned char>(b)));
    byte_ids_[b] = id ? *id : -1;
  }

  const auto& merges = field(model, "merges", path, "BPE model");
  if (!merges.is_array()) throw InputError(path, "BPE model \"merges\" is not a list");
  merges_.reserve(merges.size());
  uint32_t rank = 0;
  for (const auto& m : merges) {
    std::string a, b;
    if (m.is_string()) {
      // Legacy "a b" form: exactly one space separates the two tokens.
      const auto s = m.get<std::string>();
      const auto sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        throw InputError(path, "BPE merge " + std::to_string(rank + 1) + " (\"" + s + "\") is not two tokens");
      a = s.substr(0, sp), b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>(), b = m[1].get<std::string>();
    } else {
      throw InputError(path, "BPE merge " + std::to_string(rank + 1) + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
    const auto ia = token_to_id(a), ib = token_to_id(b);
    if (!ia || !ib)
      throw InputError(path, "BPE merge " + std::to_string(rank + 1) + " uses a token missing from the vocab: " +
                                 (!ia ? a : b));
    const std::string joined = a + (b.compare(0, prefix_.size(), prefix_) == 0 ? b.substr(prefix_.size()) : b);
    const auto inew = token_to_id(joined);
    if (!inew)
      throw InputError(path, "BPE merge " + std::to_string(rank + 1) + " makes \"" + joined + "\", which is not in the vocab");
    // A repeated pair keeps its last rank, as the crate's HashMap collection does.
    merges_[pair_key(*ia, *ib)] = MergeInfo{rank, *inew};
    ++rank;
  }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (const auto id = token_to_id(word)) {
      out.push_back(*id);
      return;
    }
  }
  if (word.size() < kMaxCachedWordLen) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    const auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = out.size();
  merge_word(word, out);
  if (word.size() < kMaxCachedWordLen) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() < kCacheCapacity) cache_.emplace(std::string(word), std::vector<int32_t>(out.begin() + start, out.end()));
  }
}

void BpeModel::merge_word(std::string_view w, std::vector<int32_t>& out) const {
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    uint32_t len;  // bytes of the word it covers; 0 once merged into its left neighbour
  };
  std::vector<Symbol> syms;
  syms.reserve(w.size());
  auto add = [&](int32_t id, uint32_t len) {
    const auto n = static_cast<int32_t>(syms.size());
    if (n > 0) syms.back().next = n;
    syms.push_back({id, n - 1, -1, len});
  };

  // Initial symbols: one per character, with byte fallback or (fused) unk for characters not in the vocab.
  int32_t unk = -1;  // pending unk id (-1: none) and the bytes it covers
  uint32_t unk_len = 0;
  std::string s;
  for (size_t i = 0; i < w.size();) {
    const size_t start = i;
    unicode::next_cp(w, i);
    const bool first = start == 0, last = i >= w.size();
    s.assign(w.substr(start, i - start));
    const auto byte_len = static_cast<uint32_t>(s.size());
    if (!first && !prefix_.empty()) s.insert(0, prefix_);
    if (last && !suffix_.empty()) s += suffix_;
    if (const auto id = token_to_id(s)) {
      if (unk >= 0) {
        add(unk, unk_len);
        unk = -1;
      }
      add(*id, byte_len);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (unsigned char b : s) all = all && byte_ids_[b] >= 0;
      if (all) {
        // Note: like the crate, a pending unk is not flushed here, so it lands after these bytes.
        for (unsigned char b : s) add(byte_ids_[b], 1);
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (unk >= 0 && fuse_unk_) {
        unk_len += byte_len;
      } else {
        if (unk >= 0) add(unk, unk_len);
        unk = unk_id_, unk_len = byte_len;
      }
    }
  }
  if (unk >= 0) add(unk, unk_len);

  struct Merge {
    uint32_t pos, rank;
    int32_t new_id;
  };
  auto worse = [](const Merge& a, const Merge& b) { return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos; };
  std::priority_queue<Merge, std::vector<Merge>, decltype(worse)> queue(worse);
  auto lookup = [&](int32_t a, int32_t b) -> const MergeInfo* {
    const auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  };
  for (size_t i = 0; i + 1 < syms.size(); ++i)
    if (const auto* m = lookup(syms[i].id, syms[i + 1].id)) queue.push({static_cast<uint32_t>(i), m->rank, m->new_id});

  while (!queue.empty()) {
    const Merge top = queue.top();
    queue.pop();
    Symbol& cur = syms[top.pos];
    if (cur.len == 0 || cur.next == -1) continue;
    const int32_t next_pos = cur.next;
    const Symbol right = syms[next_pos];
    // Skip entries that went stale since they were queued.
    const auto* m = lookup(cur.id, right.id);
    if (!m || m->new_id != top.new_id) continue;
    cur.id = top.new_id;
    cur.len += right.len;
    cur.next = right.next;
    syms[next_pos].len = 0;
    if (right.next > -1 && static_cast<size_t>(right.next) < syms.size()) syms[right.next].prev = static_cast<int32_t>(top.pos);
    if (cur.prev >= 0) {
      if (const auto* pm = lookup(syms[cur.prev].id, cur.id))
        queue.push({static_cast<uint32_t>(cur.prev), pm->rank, pm->new_id});
    }
    if (cur.next >= 0 && static_cast<size_t>(cur.next) < syms.size()) {
      if (const auto* nm = lookup(cur.id, syms[cur.next].id)) queue.push({top.pos, nm->rank, nm->new_id});
    }
  }
  for (const auto& sym : syms)
    if (sym.len != 0) out.push_back(sym.id);
}

}  // namespace specscope::tok

#include "sessions/why_blob.h"

#include <cstdint>
#include <cstring>

#include "engine/util/error.h"

namespace specscope::sessions {

namespace {

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

void put_bars(std::string& out, const std::vector<TokenProb>& bars) {
  const size_t n = std::min<size_t>(bars.size(), 255);
  out.push_back(char(n));
  for (size_t i = 0; i < n; ++i) {
    const auto& b = bars[i];
    put_u32(out, uint32_t(b.token));
    uint32_t bits;
    std::memcpy(&bits, &b.prob, 4);
    put_u32(out, bits);
    const size_t len = std::min<size_t>(b.text.size(), 65535);
    out.push_back(char(len & 0xff));
    out.push_back(char(len >> 8));
    out.append(b.text, 0, len);
  }
}

// Reads what put_* wrote; every read is bounds-checked (a store is input: it may be damaged).
struct Cursor {
  std::string_view s;
  const std::string& where;
  size_t at = 0;
  void need(size_t n) const {
    if (at + n > s.size()) throw InputError(where, "malformed verification details (truncated blob)");
  }
  uint8_t u8() {
    need(1);
    return uint8_t(s[at++]);
  }
  uint32_t u32() {
    need(4);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(s[at + i])) << (8 * i);
    at += 4;
    return v;
  }
  std::vector<TokenProb> bars() {
    std::vector<TokenProb> out(u8());
    for (auto& b : out) {
      b.token = int32_t(u32());
      const uint32_t bits = u32();
      std::memcpy(&b.prob, &bits, 4);
      const size_t len = u8() | size_t(u8()) << 8;
      need(len);
      b.text.assign(s.substr(at, len));
      at += len;
    }
    return out;
  }
};

}  // namespace

std::string encode_bars(const std::vector<TokenProb>& bars) {
  std::string out;
  put_bars(out, bars);
  return out;
}

std::vector<TokenProb> decode_bars(std::string_view blob, const std::string& where) {
  Cursor c{blob, where};
  auto out = c.bars();
  if (c.at != blob.size()) throw InputError(where, "malformed verification details (trailing bytes)");
  return out;
}

std::string encode_verified(const StepRecord& r) {
  std::string out;
  std::vector<bool> done(r.nodes.size() + 1, false);  // by parent + 1 (-1, the root, is slot 0)
  for (const auto& n : r.nodes) {
    const size_t slot = size_t(int64_t(n.parent) + 1);  // a malformed parent < -1 wraps past the end: skipped
    if (n.rule == VerifyRule::Unrecorded || slot >= done.size() || done[slot]) continue;
    done[slot] = true;
    put_u32(out, uint32_t(n.parent));
    out.push_back(char(n.rule));
    put_bars(out, n.target_top_k);
  }
  return out;
}

void decode_verified(std::string_view blob, StepRecord& r, const std::string& where) {
  Cursor c{blob, where};
  while (c.at < blob.size()) {
    const int parent = int32_t(c.u32());
    const uint8_t rule = c.u8();
    if (rule == uint8_t(VerifyRule::Unrecorded) || rule > uint8_t(VerifyRule::Typical))
      throw InputError(where, "malformed verification details (rule " + std::to_string(rule) + ")");
    if (parent < -1 || parent >= int(r.nodes.size()))
      throw InputError(where, "verification details name node " + std::to_string(parent) + ", which the step lacks");
    const auto bars = c.bars();
    for (auto& n : r.nodes) {
      if (n.parent != parent || n.pruned) continue;
      n.rule = VerifyRule(rule);
      n.target_top_k = bars;
    }
  }
}

}  // namespace specscope::sessions

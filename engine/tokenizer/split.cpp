#include "engine/tokenizer/split.h"

#include <algorithm>
#include <stdexcept>

#include "engine/util/error.h"

namespace specscope::tok {

std::vector<Range> split_ranges(size_t len, const std::vector<Range>& matches, SplitBehavior behavior, bool invert) {
  // Cover the whole string with (range, is_match) parts, as the crate's Pattern::find_matches does.
  std::vector<std::pair<Range, bool>> parts;
  if (len == 0) {
    parts.push_back({{0, 0}, false});
  } else {
    size_t prev = 0;
    for (const auto& m : matches) {
      if (prev != m.first) parts.push_back({{prev, m.first}, false});
      parts.push_back({m, true});
      prev = m.second;
    }
    if (prev != len) parts.push_back({{prev, len}, false});
  }
  if (invert)
    for (auto& p : parts) p.second = !p.second;

  // (range, remove) after applying the behavior.
  std::vector<std::pair<Range, bool>> out;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const auto& p : parts) out.push_back({p.first, false});
      break;
    case SplitBehavior::Removed:
      out = parts;
      break;
    case SplitBehavior::Contiguous: {
      int prev = -1;
      for (const auto& p : parts) {
        if (prev == static_cast<int>(p.second) && !out.empty()) {
          out.back().first.second = p.first.second;
        } else {
          out.push_back({p.first, false});
        }
        prev = p.second;
      }
      break;
    }
    case SplitBehavior::MergedWithPrevious: {
      bool prev = false;
      for (const auto& p : parts) {
        if (p.second && !prev && !out.empty()) {
          out.back().first.second = p.first.second;
        } else {
          out.push_back({p.first, false});
        }
        prev = p.second;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool prev = false;
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->second && !prev && !out.empty()) {
          out.back().first.first = it->first.first;
        } else {
          out.push_back({it->first, false});
        }
        prev = it->second;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
  }
  std::vector<Range> ranges;
  ranges.reserve(out.size());
  for (const auto& o : out)
    if (!o.second && o.first.second > o.first.first) ranges.push_back(o.first);
  return ranges;
}

std::vector<Range> find_literal(std::string_view haystack, std::string_view needle) {
  std::vector<Range> out;
  if (needle.empty()) return out;
  size_t pos = 0;
  while ((pos = haystack.find(needle, pos)) != std::string_view::npos) {
    out.push_back({pos, pos + needle.size()});
    pos += needle.size();
  }
  return out;
}

Regex compile_regex(const std::string& pattern, const std::string& path, const std::string& what) {
  try {
    return Regex(pattern);
  } catch (const std::invalid_argument& e) {
    throw InputError(path, what + " regex is unsupported (" + e.what() + "): " + pattern);
  }
}

SplitBehavior parse_behavior(const std::string& name, const std::string& path) {
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  throw InputError(path, "unknown split behavior \"" + name + "\"");
}

}  // namespace specscope::tok

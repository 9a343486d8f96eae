#pragma once
// The `tokenizers` crate's NormalizedString::split: turn pattern matches into pieces according to a
// SplitDelimiterBehavior, plus helpers to find matches of a literal string and to compile regexes with
// errors that name tokenizer.json.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/tokenizer/regex.h"

namespace specscope::tok {

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

using Range = std::pair<size_t, size_t>;

// Non-empty byte ranges of the pieces of a string of length `len`, given the (sorted, non-overlapping)
// `matches` of the pattern. `invert` swaps which parts count as matches.
std::vector<Range> split_ranges(size_t len, const std::vector<Range>& matches, SplitBehavior behavior, bool invert);

// Non-overlapping occurrences of `needle` (left to right), like Rust's str::match_indices.
std::vector<Range> find_literal(std::string_view haystack, std::string_view needle);

// Compiles a tokenizer.json regex; unsupported syntax -> InputError(path, "<what> regex is unsupported ...").
Regex compile_regex(const std::string& pattern, const std::string& path, const std::string& what);

SplitBehavior parse_behavior(const std::string& name, const std::string& path);

}  // namespace specscope::tok

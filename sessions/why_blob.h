#pragma once
// How the "why" details of a StepRecord (schema 4) are stored: compact blobs that keep the tokens' texts byte for
// byte (a byte-level token's text may be half a UTF-8 character, which JSON cannot carry).
//  - steps.verified: one entry per verified parent (not per sibling: every child of a parent carries the same rule
//    and target top-k): i32 parent, u8 rule, then its bars.
//  - steps.residual_top_k: the bars of the residual the bonus was drawn from.
// Bars: u8 count, then per bar i32 token, f32 probability, u16 text length, the text. Little-endian.
#include <string>
#include <string_view>
#include <vector>

#include "engine/methods/step_record.h"

namespace specscope::sessions {

std::string encode_bars(const std::vector<TokenProb>& bars);
std::vector<TokenProb> decode_bars(std::string_view blob, const std::string& where);

// "" when no node of the step carries a rule (nothing to store: NULL).
std::string encode_verified(const StepRecord& r);
// Sets the rule and target top-k of every unpruned child of each stored parent. Throws InputError(where) on a
// malformed blob or a parent the step does not have.
void decode_verified(std::string_view blob, StepRecord& r, const std::string& where);

}  // namespace specscope::sessions

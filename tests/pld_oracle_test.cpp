// Prompt lookup decoding's drafting rule against Hugging Face transformers' PromptLookupCandidateGenerator (the
// implementation `generate(prompt_lookup_num_tokens=...)` runs, after Saxena's reference): the earliest earlier
// occurrence of the longest suffix n-gram that has a continuation, and up to num_draft tokens of it.
// Fixture: tests/fixtures/make_pld_fixture.py.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/methods/draft_tree.h"
#include "engine/methods/simple_methods.h"

namespace specscope {
namespace {

struct Case {
  std::vector<int32_t> tokens, expected;
  int max_ngram = 0, num_draft = 0;
};

std::vector<Case> load_cases() {
  std::ifstream in(SPECSCOPE_FIXTURES "/pld/hf_prompt_lookup.json");
  EXPECT_TRUE(in.is_open());
  nlohmann::json j;
  in >> j;
  std::vector<Case> out;
  for (const auto& c : j.at("cases"))
    out.push_back({c.at("tokens").get<std::vector<int32_t>>(), c.at("expected").get<std::vector<int32_t>>(),
                   c.at("max_ngram").get<int>(), c.at("num_draft").get<int>()});
  return out;
}

// The drafted chain's tokens, checking that it is a chain of prompt-lookup nodes.
std::vector<int32_t> draft_chain(const Case& c, int budget) {
  PromptLookupMethod m(PldOptions{c.max_ngram, 1, c.num_draft});
  DecodeState st;
  st.tokens = c.tokens;
  DraftTree tree;
  m.draft(st, tree, budget);
  std::vector<int32_t> out;
  for (int i = 0; i < tree.size(); ++i) {
    const auto& n = tree.nodes[size_t(i)];
    EXPECT_EQ(n.parent, i - 1);
    EXPECT_EQ(n.source, NodeSource::PromptLookup);
    out.push_back(n.token);
  }
  return out;
}

std::string show(const std::vector<int32_t>& v) {
  std::string s;
  for (int32_t t : v) s += (s.empty() ? "" : ",") + std::to_string(t);
  return "[" + s + "]";
}

TEST(PromptLookupOracle, DraftsWhatTransformersProposes) {
  const auto cases = load_cases();
  ASSERT_GE(cases.size(), 100u);
  int drafted = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    EXPECT_EQ(draft_chain(c, 1000), c.expected)
        << "case " << i << ": tokens " << show(c.tokens) << ", max_ngram " << c.max_ngram << ", num_draft " << c.num_draft;
    drafted += !c.expected.empty();
  }
  EXPECT_GE(drafted, 100);  // the fixture exercises matches, not only misses
}

TEST(PromptLookupOracle, TheBudgetCutsTheSameDraft) {
  for (const auto& c : load_cases()) {
    for (int budget : {0, 1, 2, 3}) {
      auto want = c.expected;
      if (int(want.size()) > budget) want.resize(size_t(budget));
      EXPECT_EQ(draft_chain(c, budget), want) << show(c.tokens) << " budget " << budget;
    }
  }
}

}  // namespace
}  // namespace specscope

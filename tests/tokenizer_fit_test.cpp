// A tokenizer with a few special tokens past the model's embedding rows, as Google ships gemma-3-1b-it (the
// family's one tokenizer, whose <image_soft_token> is id 262,144 of a 262,144-row text model): the model loads, never
// produces them, a prompt that spells one out is a one-line error, and it drafts for a larger sibling whose rows
// cover the token (Gemma 3 1B for 4B-27B). Anything more than that is still a tokenizer of another model: refused.
// The models are the tiny fixtures with such a token added to a copy of their tokenizer.json.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/generate/generator.h"
#include "engine/methods/factory.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

namespace fs = std::filesystem;

// A copy of fixture `model` (weights and config) under `dir`, with the tiny fixtures' 258-token tokenizer plus
// `extra` added tokens from id 258 on, the first named <image_soft_token>.
std::string with_tokens_past_rows(const std::string& model, const fs::path& dir, int extra, bool special = true) {
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(test::fixture(model)))
    fs::copy_file(e.path(), dir / e.path().filename(), fs::copy_options::overwrite_existing);
  std::ifstream in(test::fixture("models/tinyvocab_target/tokenizer.json"));
  nlohmann::json tok = nlohmann::json::parse(in);
  for (int i = 0; i < extra; ++i) {
    const std::string content = i == 0 ? std::string("<image_soft_token>") : "<extra_" + std::to_string(i) + ">";
    tok["added_tokens"].push_back({{"id", 258 + i}, {"content", content}, {"single_word", false}, {"lstrip", false},
                                   {"rstrip", false}, {"normalized", false}, {"special", special}});
  }
  std::ofstream(dir / "tokenizer.json") << tok.dump(1);
  return dir.string();
}

class TokenizerFit : public ::testing::Test {
 protected:
  void SetUp() override { root_ = test::scratch_dir("tokenizer-fit"); }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(TokenizerFit, ASpecialTokenPastTheRowsLoadsAndIsRefusedInAPrompt) {
  const auto model = Model::load(with_tokens_past_rows("models/tinyvocab_target", root_ / "m", 1));
  ASSERT_EQ(model->tokenizer().vocab_size(), 259);
  ASSERT_EQ(model->config().vocab_size, 258);
  // Text without the token: encoded and generated as ever.
  const auto ids = encode_prompt(*model, "Hello there", false);
  auto ctx = model->new_cpu_context(64);
  GenerateOptions opts;
  opts.max_tokens = 8;
  opts.stop_at_eos = false;
  const auto out = generate(*model, *ctx, ids, opts);
  EXPECT_EQ(out.tokens.size(), 8u);
  for (int32_t t : out.tokens) EXPECT_LT(t, 258);
  // Text that spells it out: one error naming it, in both encoders.
  for (bool chat : {false, true}) {
    try {
      encode_prompt(*model, "look: <image_soft_token>", chat);
      ADD_FAILURE() << "a prompt with a token past the rows was accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), "prompt");
      EXPECT_NE(e.problem().find("'<image_soft_token>' (token 258)"), std::string::npos) << e.what();
    }
  }
  // Through the CLI: exit code 2 and the one line.
  const auto r =
      test::run_cli("run --model '" + (root_ / "m").string() + "' --prompt 'a <image_soft_token>' --max-tokens 4");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("<image_soft_token>"), std::string::npos) << r.out;
}

TEST_F(TokenizerFit, AnOrdinaryTokenOrTooManyPastTheRowsAreRefused) {
  for (const auto& [dir, extra, special, needle] :
       std::vector<std::tuple<std::string, int, bool, std::string>>{{"plain", 1, false, "is not a special token"},
                                                                    {"many", 129, true, "tokenizer has 387 tokens"}}) {
    const std::string path = with_tokens_past_rows("models/tinyvocab_target", root_ / dir, extra, special);
    try {
      Model::load(path);
      ADD_FAILURE() << dir << " loaded";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), path + "/tokenizer.json") << e.what();
      EXPECT_NE(e.problem().find(needle), std::string::npos) << e.what();
    }
  }
}

// Gemma 3's case: the drafter (262,144 rows) and the target (262,208) share a tokenizer whose last token neither
// drafter nor prompt ever uses. Here: tinyvocab_target's weights (258 rows) draft for its twin padded to 320.
TEST_F(TokenizerFit, TheSmallerSiblingDraftsForTheLargerLosslessly) {
  const auto target = Model::load(with_tokens_past_rows("models/tinyvocab_target_padded", root_ / "target", 1));
  MethodSpec spec;
  spec.name = "sps";
  spec.draft_path = with_tokens_past_rows("models/tinyvocab_target", root_ / "draft", 1);
  spec.options = {{"gamma", "4"}};
  auto method = make_method(spec, *target);
  GenerateOptions opts;
  opts.max_tokens = 40;
  opts.stop_at_eos = false;
  long drafted = 0, accepted = 0;
  for (int p = 0; p < 6; ++p) {
    SCOPED_TRACE("prompt " + std::to_string(p));
    const std::vector<int32_t> prompt = {256, int32_t(60 + 11 * p), int32_t(99 + p)};
    const auto run = test::speculate_beside_vanilla(*target, *method, prompt, opts);
    for (const auto& s : run.steps) {
      drafted += long(s.nodes.size());
      accepted += s.accepted_count();
    }
  }
  EXPECT_GT(drafted, 0);
  EXPECT_GT(accepted, drafted / 4);  // the drafter is the target's own weights on the rows it has
}

}  // namespace
}  // namespace specscope

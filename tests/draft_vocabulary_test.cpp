// SpS drafters whose vocabularies differ from the target's past the ids they share, as published families' do:
// Qwen2.5 0.5B-3B pad their embeddings to 151,936 rows and 7B-72B to 152,064 over one 151,665-token tokenizer (and
// llama.cpp's GGUF files list the padding as [PAD<id>] tokens, so the token lists differ in length too). Fixtures:
// tinyvocab_target and tinyvocab_draft (258 rows) and their twins padded to 320 and 288 rows, as safetensors and as
// GGUF (tests/fixtures/make_fixtures.py, make_gguf_models.py). Greedy output must stay vanilla's token for token;
// at T > 0 the same pairing is checked by method_sampling_test.cpp (sps_padded_target).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <vector>

#include "engine/discovery/discovery.h"
#include "engine/discovery/stores.h"
#include "engine/discovery/tokenizer_fingerprint.h"
#include "engine/generate/generator.h"
#include "engine/methods/factory.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/model.h"
#include "engine/tokenizer/shared_vocabulary.h"
#include "engine/util/error.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

namespace fs = std::filesystem;

MethodSpec sps_with(const std::string& draft, std::map<std::string, std::string> options) {
  MethodSpec s;
  s.name = "sps";
  s.draft_path = test::fixture(draft);
  s.options = std::move(options);
  return s;
}

// What one prompt's speculative run drafted and accepted, and how many of vanilla's tokens were ids past `shared`.
struct Outcome {
  long drafted = 0, accepted = 0, past_shared = 0;
  int32_t largest_draft = -1;
};

// Speculates on 12 prompts of the target's ids beside vanilla on fresh contexts: the outputs must be identical.
std::vector<Outcome> expect_lossless(const std::string& target_path, const MethodSpec& spec, int shared) {
  SCOPED_TRACE(target_path + " <- " + spec.draft_path);
  const auto target = Model::load(test::fixture(target_path));
  auto method = make_method(spec, *target);
  GenerateOptions opts;
  opts.max_tokens = 48;
  opts.stop_at_eos = false;
  std::vector<Outcome> out;
  for (int p = 0; p < 12; ++p) {
    SCOPED_TRACE("prompt " + std::to_string(p));
    const std::vector<int32_t> prompt = {256, int32_t(40 + 7 * p), int32_t(97 + p), int32_t(101 + 3 * p)};
    const auto spec_run = test::speculate_beside_vanilla(*target, *method, prompt, opts);
    Outcome o;
    for (const auto& s : spec_run.steps) {
      o.drafted += long(s.nodes.size());
      o.accepted += s.accepted_count();
      for (const auto& n : s.nodes) o.largest_draft = std::max(o.largest_draft, n.token);
    }
    for (int32_t t : spec_run.gen.tokens) o.past_shared += t >= shared;  // vanilla's tokens, as checked above
    out.push_back(o);
  }
  return out;
}

// A drafter that is the target's own weights on the rows both have drafts exactly the target's greedy choice
// while every committed token is one it has: every draft of such a prompt is accepted.
void expect_accepted_while_shared(const std::vector<Outcome>& runs, int min_shared_runs) {
  int shared_runs = 0;
  for (size_t p = 0; p < runs.size(); ++p) {
    if (runs[p].past_shared) continue;
    ++shared_runs;
    EXPECT_GT(runs[p].drafted, 0) << "prompt " << p;
    EXPECT_EQ(runs[p].accepted, runs[p].drafted) << "prompt " << p;
  }
  EXPECT_GE(shared_runs, min_shared_runs);
}

TEST(SharedVocabulary, PaddingTailsAgreeAndAnotherTokenizerDoesNot) {
  const auto tiny = Model::load(test::fixture("models/tinyvocab_target"));
  const auto merged = Model::load(test::fixture("models/tinyvocab_target_padded"));
  const auto gguf_target = Model::load(test::fixture("gguf_models/tinyvocab_target_padded.f32.gguf"));
  const auto gguf_draft = Model::load(test::fixture("gguf_models/tinyvocab_draft_padded.f32.gguf"));
  // The twins' tokenizer: the tiny one's 258 and six merged tokens. The GGUF token lists run on to the padded
  // vocabularies with [PAD<id>] entries, which the tokenizer, like llama.cpp's, does not count as tokens.
  ASSERT_EQ(tiny->tokenizer().vocab_size(), 258);
  ASSERT_EQ(merged->tokenizer().vocab_size(), 264);
  ASSERT_EQ(merged->config().vocab_size, 320);
  ASSERT_EQ(gguf_target->config().vocab_size, 320);
  ASSERT_EQ(gguf_draft->config().vocab_size, 288);
  EXPECT_EQ(gguf_target->tokenizer().vocab_size(), 264);
  EXPECT_FALSE(first_token_mismatch(tiny->tokenizer(), merged->tokenizer()));
  EXPECT_FALSE(first_token_mismatch(merged->tokenizer(), gguf_target->tokenizer()));
  EXPECT_FALSE(first_token_mismatch(gguf_draft->tokenizer(), gguf_target->tokenizer()));
  EXPECT_TRUE(is_padding_piece("", 7));
  EXPECT_TRUE(is_padding_piece("[PAD7]", 7));
  EXPECT_FALSE(is_padding_piece("[PAD8]", 7));
  // The 3,007-token byte-level tokenizer shares the 256 byte symbols and then goes its own way.
  const auto other = Model::load(test::fixture("models/llama_bytelevel_f32"));
  const auto diff = first_token_mismatch(tiny->tokenizer(), other->tokenizer());
  ASSERT_TRUE(diff);
  EXPECT_EQ(diff->id, 256);
  EXPECT_EQ(diff->first, "<|begin_of_text|>");
}

// Something was drafted, and every draft is an id below `rows` (what the drafter may propose).
void expect_drafts_below(const std::vector<Outcome>& runs, int rows) {
  long drafted = 0;
  for (const auto& o : runs) {
    drafted += o.drafted;
    EXPECT_LT(o.largest_draft, rows) << "a draft one of the models has no row for";
  }
  EXPECT_GT(drafted, 0);
}

// One tokenizer, the target's rows padded further than the drafter's (Qwen2.5 7B drafted by 0.5B from Hugging
// Face: 152,064 rows against 151,936). Before, the drafter's logits were read as wide as the target's, past the
// end of its rows.
TEST(DraftVocabulary, OneTokenizerWithTheTargetPaddedFurtherStaysLossless) {
  expect_drafts_below(expect_lossless("models/tinyvocab_target_padded",
                                      sps_with("models/tinyvocab_draft_padded", {{"gamma", "4"}}), 288),
                      288);
}

// The target has tokens and rows past the drafter's (a larger checkpoint's extra token, then padding). The drafter
// is the target's own weights without them; now and then the target picks an id past 257, which the drafter is
// shown as its stand-in.
TEST(DraftVocabulary, ATargetWithRowsPastTheDrafterStaysLossless) {
  for (const auto& options : std::vector<std::map<std::string, std::string>>{{{"gamma", "4"}},
                                                                            {{"gamma", "3"}, {"branching", "2,2"}}}) {
    const auto runs =
        expect_lossless("models/tinyvocab_target_padded", sps_with("models/tinyvocab_target", options), 258);
    expect_drafts_below(runs, 258);
    long past = 0;
    for (const auto& o : runs) past += o.past_shared;
    EXPECT_GT(past, 0) << "no id past the drafter's was ever committed: the stand-in went untested";
    if (options.count("branching") == 0) expect_accepted_while_shared(runs, 3);
  }
}

// The drafter has rows past the target's: they are never drafted (the target could not embed them), and drafting
// from the rows both have is the target's own choice.
TEST(DraftVocabulary, ADrafterWithRowsPastTheTargetDraftsOnlySharedIds) {
  const auto runs =
      expect_lossless("models/tinyvocab_target", sps_with("models/tinyvocab_target_padded", {{"gamma", "4"}}), 258);
  expect_drafts_below(runs, 258);
  expect_accepted_while_shared(runs, 12);
}

// GGUF files of one family padded to different sizes (token lists of 320 and 288 with their [PAD<id>] tails, as
// Qwen2.5 7B's and 0.5B's files are): before, the drafter's logits were read past its 288 rows here too.
TEST(DraftVocabulary, GgufFilesPaddedToDifferentSizesPair) {
  expect_drafts_below(expect_lossless("gguf_models/tinyvocab_target_padded.f32.gguf",
                                      sps_with("gguf_models/tinyvocab_draft_padded.f32.gguf", {{"gamma", "3"}}), 288),
                      288);
}

TEST(DraftVocabulary, ADrafterWithAnotherTokenizerIsRefusedNamingTheToken) {
  const auto target = Model::load(test::fixture("models/tinyvocab_target"));
  try {
    make_method(sps_with("models/llama_bytelevel_f32", {{"gamma", "4"}}), *target);
    ADD_FAILURE() << "a drafter with another tokenizer was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), test::fixture("models/llama_bytelevel_f32"));
    EXPECT_NE(e.problem().find("id 256"), std::string::npos) << e.what();
  }
}

// The models listing pairs them too: one fingerprint for the tokenizer.json and both padded token lists, and the
// drafter offered for the target although their vocabularies differ by 32.
TEST(DraftVocabulary, TheListingPairsAFamilyPaddedToDifferentSizes) {
  const std::string hf =
      discovery::tokenizer_json_fingerprint(test::fixture("models/tinyvocab_target_padded/tokenizer.json"));
  ASSERT_FALSE(hf.empty());
  const fs::path root = test::scratch_dir("padded-store");
  const fs::path repo = root / "qwen-like" / "tiny-GGUF";
  fs::create_directories(repo);
  for (const char* f : {"tinyvocab_target_padded.f32.gguf", "tinyvocab_draft_padded.f32.gguf"})
    fs::copy_file(test::fixture(std::string("gguf_models/") + f), repo / f);
  discovery::StoreRoots roots;
  roots.lmstudio = {root.string()};
  const discovery::Discovery d = discovery::discover(roots);
  ASSERT_EQ(d.models.size(), 2u);
  for (const auto& m : d.models) EXPECT_EQ(m.facts.tokenizer_fingerprint, hf) << m.name;
  bool paired = false;
  for (const auto& p : d.pairings)
    paired |= d.models[p.target].path.ends_with("tinyvocab_target_padded.f32.gguf") &&
              d.models[p.drafter].path.ends_with("tinyvocab_draft_padded.f32.gguf");
  EXPECT_TRUE(paired);
  fs::remove_all(root);
}

}  // namespace
}  // namespace specscope

// Malformed checkpoints and prompts (tests/fixtures/bad, written by tests/fixtures/make_fixtures.py and listed in
// bad/manifest.json): Model::load must throw InputError naming the offending file (or tensor) and the problem,
// and the CLI must exit 2 with a one-line message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

using nlohmann::json;

const json& manifest() {
  static const json m = [] {
    std::ifstream in(test::fixture("bad/manifest.json"));
    return in ? json::parse(in) : json::object();
  }();
  return m;
}

std::vector<std::string> case_names() {
  std::vector<std::string> v;
  if (manifest().contains("cases"))
    for (const auto& [k, _] : manifest().at("cases").items()) v.push_back(k);
  return v;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

bool icontains(const std::string& hay, const std::string& needle) {
  return lower(hay).find(lower(needle)) != std::string::npos;
}

// Every group of `any_of` must have at least one member in `msg`.
::testing::AssertionResult mentions(const std::string& msg, const json& any_of) {
  for (const auto& group : any_of) {
    bool hit = false;
    for (const auto& s : group) hit = hit || icontains(msg, s.get<std::string>());
    if (!hit) return ::testing::AssertionFailure() << "message \"" << msg << "\" mentions none of " << group.dump();
  }
  return ::testing::AssertionSuccess();
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
  return s;
}

// The CLI's answer to bad input: exit code 2 and exactly one non-empty line.
void expect_one_line_exit_2(const test::CommandResult& r) {
  if (r.exit_code == 127) ADD_FAILURE() << "specscope-cli did not run (is the specscope-cli target built?)";
  EXPECT_EQ(r.exit_code, 2) << r.out;
  std::string t = trim(r.out);
  EXPECT_FALSE(t.empty());
  EXPECT_EQ(t.find('\n'), std::string::npos) << "more than one line:\n" << r.out;
}

TEST(BadInputFixtures, ManifestListsEveryCase) {
  const std::set<std::string> expected = {
      "truncated_safetensors", "header_len_past_eof", "header_not_json",   "offsets_out_of_range",
      "offsets_size_mismatch", "shape_mismatch",      "dtype_unsupported", "nan_weights",
      "missing_tensor",        "missing_shard",       "unsupported_architecture", "invalid_config_json",
      "missing_config",        "config_missing_field", "config_bad_heads", "missing_weights"};
  auto names = case_names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), expected);
}

// The control: the undamaged tiny checkpoint every case was made from loads and runs.
TEST(BadInputFixtures, BaselineLoads) {
  std::shared_ptr<const Model> m;
  ASSERT_NO_THROW(m = Model::load(test::fixture("bad/ok_baseline")));
  auto ctx = m->new_cpu_context(16);
  auto ids = m->tokenizer().encode("Hi", true);
  ForwardOutput out;
  ctx->forward(Batch::causal(ids), out);
  EXPECT_EQ(out.logits.size(), ids.size() * size_t(m->config().vocab_size));
  auto r = test::run_cli("info --model " + quoted(test::fixture("bad/ok_baseline")));
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

class BadModel : public ::testing::TestWithParam<std::string> {
 protected:
  std::string dir() const { return test::fixture("bad/" + GetParam()); }
  const json& spec() const { return manifest().at("cases").at(GetParam()); }
};

TEST_P(BadModel, LoadThrowsInputErrorNamingFileAndProblem) {
  const std::string file = spec().at("file").get<std::string>();
  SCOPED_TRACE(spec().at("why").get<std::string>());
  try {
    Model::load(dir());
    ADD_FAILURE() << "Model::load accepted bad/" << GetParam();
  } catch (const InputError& e) {
    std::string msg = e.what();
    EXPECT_TRUE(icontains(msg, file)) << "message \"" << msg << "\" does not name " << file;
    EXPECT_TRUE(mentions(msg, spec().at("any_of")));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw something other than InputError: " << e.what();
  }
}

TEST_P(BadModel, CliInfoExits2WithOneLine) {
  const std::string file = spec().at("file").get<std::string>();
  auto r = test::run_cli("info --model " + quoted(dir()));
  expect_one_line_exit_2(r);
  EXPECT_TRUE(icontains(r.out, file)) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BadModel, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const json& prompt_spec(const std::string& name) { return manifest().at("prompts").at(name); }

TEST(BadPrompt, InvalidUtf8ThrowsFromTokenizer) {
  const json& spec = prompt_spec("invalid_utf8.txt");
  auto m = Model::load(test::fixture(spec.at("model").get<std::string>()));
  std::string text = read_file(test::fixture("bad/invalid_utf8.txt"));
  EXPECT_EQ(find_invalid_utf8(text), spec.at("first_invalid_byte").get<size_t>());
  EXPECT_THROW(m->tokenizer().encode(text, true), InputError);
}

TEST(BadPrompt, CliRejectsInvalidUtf8PromptFile) {
  const json& spec = prompt_spec("invalid_utf8.txt");
  auto r = test::run_cli("run --model " + quoted(test::fixture(spec.at("model").get<std::string>())) +
                         " --prompt-file " + quoted(test::fixture("bad/invalid_utf8.txt")) + " --max-tokens 4");
  expect_one_line_exit_2(r);
  EXPECT_TRUE(mentions(r.out, spec.at("any_of")));
}

TEST(BadPrompt, CliRejectsPromptLongerThanContext) {
  const json& spec = prompt_spec("prompt_too_long.txt");
  auto m = Model::load(test::fixture(spec.at("model").get<std::string>()));
  // The file really is longer than the model's context (transformers counted the tokens).
  EXPECT_EQ(m->config().max_position_embeddings, spec.at("max_position_embeddings").get<int>());
  std::string text = read_file(test::fixture("bad/prompt_too_long.txt"));
  EXPECT_EQ(m->tokenizer().encode(text, true).size(), spec.at("tokens").get<size_t>());
  auto r = test::run_cli("run --model " + quoted(test::fixture(spec.at("model").get<std::string>())) +
                         " --prompt-file " + quoted(test::fixture("bad/prompt_too_long.txt")) + " --max-tokens 4");
  expect_one_line_exit_2(r);
  EXPECT_TRUE(mentions(r.out, spec.at("any_of")));
}

}  // namespace
}  // namespace specscope

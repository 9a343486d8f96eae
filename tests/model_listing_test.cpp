// The model picker's rows (engine/discovery/model_listing.h) on the stores of tests/model_store_fixtures.h: grouped
// by store in a fixed order, with the shipped family first; what cannot be a target says why (the loader refuses
// it, it is a head, or its memory estimate exceeds what is available, by memory_shortfall's own line); the drafters
// offered are discovery's pairings, by role; the search box's filter.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "engine/discovery/discovery.h"
#include "engine/discovery/memory_estimate.h"
#include "engine/discovery/model_listing.h"
#include "engine/model/default_model.h"
#include "engine/model/family_manifest.h"
#include "tests/model_store_fixtures.h"

namespace specscope {
namespace {

namespace fs = std::filesystem;
using namespace discovery;

class ModelListing : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stores_ = new test::ModelStores(test::build_model_stores(
        (fs::temp_directory_path() / ("specscope_listing_" + std::to_string(::getpid()))).string()));
    found_ = new Discovery(discover(stores_->roots()));
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(stores_->home, ec);
    delete found_;
    delete stores_;
  }
  static const ListedModel& row(const std::vector<ModelGroup>& groups, const std::string& name) {
    for (const auto& g : groups)
      for (const auto& m : g.models)
        if (m.name == name) return m;
    throw std::runtime_error("not listed: " + name);
  }
  static test::ModelStores* stores_;
  static Discovery* found_;
};
test::ModelStores* ModelListing::stores_ = nullptr;
Discovery* ModelListing::found_ = nullptr;

TEST_F(ModelListing, GroupsByStoreWithTheShippedFamilyFirst) {
  const auto groups = list_models(*found_, default_model_path(), std::nullopt);
  std::vector<std::string> titles;
  size_t rows = 0;
  for (const auto& g : groups) titles.push_back(g.title), rows += g.models.size();
  EXPECT_EQ(titles, (std::vector<std::string>{"Shipped with SpecScope", "Ollama", "LM Studio", "Hugging Face cache"}));
  EXPECT_EQ(rows, found_->models.size() + 1) << "every discovered model, and the shipped base";
  std::vector<std::string> ollama;
  for (const auto& m : groups[1].models) ollama.push_back(m.spec);
  EXPECT_EQ(ollama, (std::vector<std::string>{"ollama:tiny:latest", "ollama:someone/tiny2:q8"}));

  const ListedModel& tiny = groups[1].models[0];
  EXPECT_TRUE(tiny.choosable) << tiny.why_not;
  EXPECT_EQ(tiny.what, "llama");
  EXPECT_EQ(tiny.dtype, "f32");
  EXPECT_EQ(tiny.size, human_bytes(fs::file_size(tiny.path)));
  EXPECT_NE(tiny.memory.find("KV cache"), std::string::npos) << tiny.memory;

  // The shipped base offers what family.json names, one drafter per role.
  const ListedModel& base = groups[0].models[0];
  EXPECT_TRUE(same_path(base.path, default_model_path()));
  EXPECT_TRUE(base.choosable) << base.why_not;
  const auto family = FamilyManifest::find_for(default_model_path());
  ASSERT_TRUE(family);
  for (auto [method, role] : {std::pair{"sps", MethodNeed::DraftModel}, {"eagle2", MethodNeed::EagleHead},
                              {"eagle3", MethodNeed::Eagle3Head}, {"medusa", MethodNeed::MedusaHeads}}) {
    const auto offered = base.drafters_for(role);
    ASSERT_EQ(offered.size(), 1u) << method;
    EXPECT_TRUE(same_path(offered[0]->path, family->entry(method)->path_for(role))) << method;
  }
}

TEST_F(ModelListing, DraftersAreDiscoverysPairingsByRole) {
  const auto groups = list_models(*found_, "", std::nullopt);
  ASSERT_EQ(groups.front().title, "Ollama") << "no shipped group without a shipped base";
  const ListedModel& target = row(groups, "specscope/tinyvocab_target");
  size_t index = 0;
  ASSERT_TRUE(found_->find_path(target.path, &index));
  size_t offered = 0;
  for (const auto& d : target.drafters) offered += d.methods.size();
  size_t paired = 0;
  for (const Pairing* p : found_->drafters_of(index)) paired += p->methods.size();
  EXPECT_EQ(offered, paired);
  EXPECT_EQ(target.drafters_for(MethodNeed::EagleHead).size(), 1u);
  EXPECT_EQ(target.drafters_for(MethodNeed::Eagle3Head).size(), 1u);
  EXPECT_EQ(target.drafters_for(MethodNeed::MedusaHeads).size(), 1u);
  ASSERT_FALSE(target.drafters_for(MethodNeed::DraftModel).empty());
  EXPECT_EQ(target.drafters_for(MethodNeed::DraftModel)[0]->name, "specscope/tinyvocab_draft_small");
  EXPECT_TRUE(same_path(target.drafters_for(MethodNeed::EagleHead)[0]->path,
                        stores_->snapshot("specscope/tv_eagle1")));
}

TEST_F(ModelListing, WhatCannotBeATargetSaysWhy) {
  const auto groups = list_models(*found_, "", std::nullopt);
  const ListedModel& mamba = row(groups, "other/mamba-GGUF/bad_arch.gguf");
  EXPECT_FALSE(mamba.choosable);
  EXPECT_EQ(mamba.why_not, found_->models[size_t(std::find_if(found_->models.begin(), found_->models.end(),
                                                               [](const Found& f) { return f.name == "other/mamba-GGUF/bad_arch.gguf"; }) -
                                                  found_->models.begin())]
                               .facts.problem);
  const ListedModel& head = row(groups, "specscope/tv_eagle1");
  EXPECT_FALSE(head.choosable);
  EXPECT_NE(head.why_not.find("a drafter, not a target"), std::string::npos) << head.why_not;
}

TEST_F(ModelListing, AModelLargerThanTheMemoryAvailableIsRefusedWithTheEstimate) {
  const auto everything = list_models(*found_, "", std::nullopt);
  const ListedModel& tiny = row(everything, "tiny:latest");
  ASSERT_TRUE(tiny.choosable);
  // 1 MiB: less than tiny's 2 MiB of weights.
  const uint64_t available = 1 << 20;
  const auto groups = list_models(*found_, "", available);
  const ListedModel& refused = row(groups, "tiny:latest");
  EXPECT_FALSE(refused.choosable);
  size_t index = 0;
  ASSERT_TRUE(found_->find_path(tiny.path, &index));
  const ModelFacts& f = found_->models[index].facts;
  const int n_ctx = default_context(f.max_context);
  EXPECT_EQ(refused.why_not,
            "too large for this machine: " + memory_shortfall(model_memory(f, n_ctx, true), available, n_ctx));
  // Exactly enough is enough.
  const auto fits = list_models(*found_, "", model_memory(f, n_ctx, true).total());
  EXPECT_TRUE(row(fits, "tiny:latest").choosable) << row(fits, "tiny:latest").why_not;
}

TEST_F(ModelListing, SearchMatchesEveryWordInNameSpecOrArchitecture) {
  const auto groups = list_models(*found_, "", std::nullopt);
  auto matching = [&](const std::string& q) {
    std::vector<std::string> names;
    for (const auto& g : groups)
      for (const auto& m : g.models)
        if (matches_query(m, q)) names.push_back(m.name);
    return names;
  };
  EXPECT_EQ(matching("").size(), found_->models.size());
  EXPECT_EQ(matching("TINYVOCAB_TARGET"), (std::vector<std::string>{"specscope/tinyvocab_target",
                                                                     "specscope/tinyvocab_target@222222222222"}));
  EXPECT_EQ(matching("tiny ollama"), (std::vector<std::string>{"tiny:latest", "someone/tiny2:q8"}));
  EXPECT_EQ(matching("ollama q8"), (std::vector<std::string>{"someone/tiny2:q8"}));
  EXPECT_EQ(matching("qwen2"), (std::vector<std::string>{"locked/hidden-GGUF/qwen2_f32.f32.gguf",
                                                          "legacy/qwen-GGUF/qwen2_f32.f32.gguf"}));
  EXPECT_TRUE(matching("no-such-model").empty());
}

TEST(ParameterCountText, AsTheListingsPrintIt) {
  EXPECT_EQ(parameter_count_text(1'234'000'000), "1.2B");
  EXPECT_EQ(parameter_count_text(135'000'000), "135.0M");
  EXPECT_EQ(parameter_count_text(9'400), "9.4K");
}

}  // namespace
}  // namespace specscope

// The app's settings as lanes (ui/engine/app_settings.h) and the registry-generated option hints
// (ui/views/method_hints.h), without widgets: the shipped family's race eagle2 | medusa | streaming resolves with
// no configuration (streaming on its own target), Settings override the manifest only where they differ, and a
// lane's own keys win over both.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/model/default_model.h"
#include "engine/util/error.h"
#include "ui/engine/app_settings.h"
#include "ui/views/method_hints.h"

namespace specscope::ui {
namespace {

namespace fs = std::filesystem;

std::string name_of(const std::string& path) { return fs::path(path).lexically_normal().filename().string(); }

AppSettings shipped() {
  AppSettings a;
  a.model_path = QString::fromStdString(default_model_path());
  const FamilyPaths f = FamilyPaths::for_target(a.model_path.toStdString());
  a.draft_path = f.draft;
  a.eagle_head = f.eagle_head;
  a.eagle3_head = f.eagle3_head;
  a.medusa_head = f.medusa_head;
  a.streaming_path = f.streaming;
  return a;
}

runs::LaneRequest req(const std::string& method, std::map<std::string, std::string> keys = {}) {
  return {method, std::move(keys), method};
}

TEST(AppSettings, FamilyPathsComeFromTheManifest) {
  const FamilyPaths f = FamilyPaths::for_target(default_model_path());
  EXPECT_EQ(name_of(f.draft.toStdString()), "draft");
  EXPECT_EQ(name_of(f.eagle_head.toStdString()), "eagle1");
  EXPECT_EQ(name_of(f.eagle3_head.toStdString()), "eagle3");
  // Medusa-2's heads live inside the fine-tuned model they were trained with.
  EXPECT_EQ(name_of(f.medusa_head.toStdString()), "heads");
  EXPECT_EQ(name_of(std::filesystem::path(f.medusa_head.toStdString()).parent_path().string()), "medusa2");
  EXPECT_EQ(name_of(f.streaming.toStdString()), "streaming");
}

TEST(AppSettings, TheShippedRaceNeedsNoConfiguration) {
  const auto lanes = shipped().resolve({req("eagle2"), req("medusa"), req("streaming")});
  ASSERT_EQ(lanes.size(), 3u);
  EXPECT_EQ(lanes[0].label, "eagle2");
  EXPECT_EQ(lanes[1].label, "medusa");
  EXPECT_EQ(lanes[2].label, "streaming");
  EXPECT_EQ(name_of(lanes[0].target), "base");
  EXPECT_EQ(name_of(lanes[1].target), "medusa2") << "Medusa-2's heads verify with the base they were tuned with";
  EXPECT_EQ(name_of(lanes[2].target), "streaming") << "streaming verifies with its own target";
  EXPECT_EQ(name_of(lanes[0].method.head_path), "eagle1");
  EXPECT_EQ(name_of(lanes[1].method.head_path), "heads");
  // Nothing from Settings became a lane key: the labels stay plain even for two lanes of one method.
  EXPECT_EQ(shipped().with_settings(req("eagle2")).keys.size(), 0u);
}

TEST(AppSettings, SettingsThatDifferFromTheManifestWinAndLaneKeysWinOverThem) {
  AppSettings a = shipped();
  a.medusa_head = "/elsewhere/medusa2";
  a.method_options["eagle2"] = {{"depth", "4"}};
  const auto lanes = a.resolve({req("medusa"), req("eagle2"), req("eagle2", {{"depth", "3"}})});
  EXPECT_EQ(lanes[0].method.head_path, "/elsewhere/medusa2");
  EXPECT_EQ(lanes[1].method.options.at("depth"), "4");
  EXPECT_EQ(lanes[2].method.options.at("depth"), "3") << "a lane's own key beats Settings";
  EXPECT_NE(lanes[1].label, lanes[2].label) << "two eagle2 lanes are told apart";
}

TEST(AppSettings, ALaneThatCannotBeBuiltIsNamed) {
  AppSettings a;
  a.model_path = "/nonexistent/target";  // no manifest, no siblings
  try {
    a.resolve({req("vanilla"), req("medusa")});
    FAIL() << "medusa without heads resolved";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("lane 2 (medusa)"), std::string::npos) << e.what();
  }
}

TEST(MethodHints, OptionsComeFromTheRegistry) {
  EXPECT_EQ(defaults_placeholder(method_info("eagle2")), "total-tokens=60 depth=5 draft-top-k=10 head-weights=as-loaded tree=published");
  EXPECT_EQ(defaults_placeholder(method_info("vanilla")), "");
  EXPECT_TRUE(options_tooltip(method_info("pld")).contains("max-ngram (default 3)"));
  const auto o = options_from_text("depth=4  branching=2,2,1 lossy-typical =x");
  EXPECT_EQ(o.at("depth"), "4");
  EXPECT_EQ(o.at("branching"), "2,2,1");
  EXPECT_EQ(o.at("lossy-typical"), "1");
  EXPECT_EQ(o.size(), 3u);
  EXPECT_EQ(options_to_text(o), "branching=2,2,1 depth=4 lossy-typical=1");
}

}  // namespace
}  // namespace specscope::ui

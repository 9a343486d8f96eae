#include <gtest/gtest.h>

#include "engine/generate/generator.h"

using namespace specscope;

TEST(StopMatcher, HoldsBackPossiblePrefixAndCutsAtStop) {
  StopMatcher m({"\nUser:"});
  std::string shown;
  shown += m.feed("Hello");
  shown += m.feed(" there\nUs");
  EXPECT_EQ(shown, "Hello there");  // "\nUs" might begin the stop string
  shown += m.feed("er: more");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(shown, "Hello there");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, ReleasesHeldTextWhenItDoesNotMatch) {
  StopMatcher m({"STOP"});
  std::string shown = m.feed("abc ST");
  EXPECT_EQ(shown, "abc ");
  shown += m.feed("ART");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(shown, "abc START");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, NoStopsPassesEverything) {
  StopMatcher m({});
  EXPECT_EQ(m.feed("x"), "x");
  EXPECT_EQ(m.flush(), "");
}

// A session's notes split into the notes on steps ("step N: ...", "steps A-B: ...") and the rest
// (ui/engine/step_notes.h): what the inspector's header and presenter mode show on each step.
#include "ui/engine/step_notes.h"

#include <gtest/gtest.h>

using specscope::ui::parse_session_notes;
using specscope::ui::SessionNotes;

TEST(StepNotes, LinesThatNameStepsBelongToThem) {
  const SessionNotes n = parse_session_notes(
      "Watch how often the first draft is right.\n"
      "step 5: the draft guessed the idiom\n"
      "  steps 10-12: depth 3 keeps failing here  \n"
      "STEP 7 : shouting works\n"
      "steps 20\xE2\x80\x93" "18: reversed, with an en dash\n"
      "steps 30..31: dots\n"
      "step x: not a step\n"
      "step 9:\n"
      "\n");
  EXPECT_EQ(n.general, "Watch how often the first draft is right.\nstep x: not a step\nstep 9:");
  ASSERT_EQ(n.steps.size(), 5u);
  EXPECT_EQ(n.for_step(5), "the draft guessed the idiom");
  EXPECT_EQ(n.for_step(4), "");
  for (int s : {10, 11, 12}) EXPECT_EQ(n.for_step(s), "depth 3 keeps failing here") << s;
  EXPECT_EQ(n.for_step(13), "");
  EXPECT_EQ(n.for_step(7), "shouting works");
  for (int s : {18, 19, 20}) EXPECT_EQ(n.for_step(s), "reversed, with an en dash") << s;
  EXPECT_EQ(n.for_step(31), "dots");
}

TEST(StepNotes, SeveralNotesOnAStepAreJoinedInOrder) {
  const SessionNotes n = parse_session_notes("steps 1-3: first\nstep 2: second");
  EXPECT_EQ(n.for_step(2), "first\nsecond");
  EXPECT_EQ(n.for_step(3), "first");
  EXPECT_TRUE(n.general.empty());
  EXPECT_TRUE(parse_session_notes("").empty());
  EXPECT_TRUE(parse_session_notes(" \n\t\n").empty());
}

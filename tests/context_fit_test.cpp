// Context management (runs/context_fit.h): a chat that outgrows the context loses its oldest turns instead of
// failing ("the prompt has 516 tokens, more than fits the context of 512 tokens" on the third turn), the room
// left for the answer is exact, and the CLI says up front when --max-tokens is beyond it and afterwards when an
// answer stopped because the context was full (stop: context stays in the JSON).
#include <gtest/gtest.h>

#include "engine/generate/generator.h"
#include "engine/model/default_model.h"
#include "engine/model/model.h"
#include "engine/util/error.h"
#include "runs/context_fit.h"
#include "runs/runner.h"
#include "tests/test_support.h"

namespace specscope {
namespace {

std::shared_ptr<const Model> base() {
  static auto m = Model::load(default_model_path());
  return m;
}

std::string long_text(int words) {
  std::string s;
  for (int i = 0; i < words; ++i) s += "harbor " + std::to_string(i) + " ";
  return s;
}

// A conversation of `turns` long user/assistant turns after a system prompt, ending with a question.
std::vector<ChatMessage> long_chat(int turns) {
  std::vector<ChatMessage> m{{"system", "You are terse."}};
  for (int t = 0; t < turns; ++t) {
    m.push_back({"user", "Turn " + std::to_string(t) + ": " + long_text(30)});
    m.push_back({"assistant", long_text(30)});
  }
  m.push_back({"user", "And now?"});
  return m;
}

TEST(ContextFit, AShortConversationIsKeptWhole) {
  const auto m = long_chat(1);
  const auto fit = runs::fit_prompt(*base(), {m.back().content, m}, true, 512, 64);
  EXPECT_EQ(fit.use.dropped_messages, 0);
  EXPECT_EQ(fit.ids, encode_conversation(*base(), m));
  EXPECT_EQ(fit.use.answer_room, 512 - int(fit.ids.size()) + 1);
  EXPECT_FALSE(fit.use.max_tokens_beyond());
}

TEST(ContextFit, ALongConversationDropsItsOldestTurnsAndKeepsTheSystemPrompt) {
  const auto m = long_chat(6);
  ASSERT_GT(int(encode_conversation(*base(), m).size()), 512) << "the test needs a conversation that does not fit";
  const int max_tokens = 128;
  const auto fit = runs::fit_prompt(*base(), {m.back().content, m}, true, 512, max_tokens);
  ASSERT_GT(fit.use.dropped_messages, 0);
  EXPECT_EQ(fit.use.dropped_messages % 2, 0) << "whole turns go: the kept history starts with a user message";
  EXPECT_LE(fit.use.prompt_tokens + max_tokens, 512) << "room for the answer is kept";
  std::vector<ChatMessage> kept{m[0]};
  kept.insert(kept.end(), m.begin() + 1 + fit.use.dropped_messages, m.end());
  EXPECT_EQ(fit.ids, encode_conversation(*base(), kept)) << "system prompt + the newest turns";
  // One turn fewer would not have left the room: only as many turns as needed went.
  std::vector<ChatMessage> one_more{m[0]};
  one_more.insert(one_more.end(), m.begin() + 1 + fit.use.dropped_messages - 2, m.end());
  EXPECT_GT(int(encode_conversation(*base(), one_more).size()) + max_tokens, 512);
  EXPECT_NE(runs::trimmed_note(fit.use).find("left out to fit the context of 512 tokens"), std::string::npos);
}

TEST(ContextFit, ALastMessageTooLongAloneIsAnInputErrorNamingTheContext) {
  std::vector<ChatMessage> m{{"user", long_text(400)}};
  try {
    runs::fit_prompt(*base(), {m.back().content, m}, true, 512, 64);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("context of 512 tokens"), std::string::npos) << e.what();
  }
}

TEST(ContextFit, TheRunnerTrimsAChatTurnAndTheAnswerRoomIsExact) {
  runs::ModelCache cache;
  runs::JobRunner runner(cache);
  struct Observer : runs::JobObserver {
    int fitted = 0;
    runs::ContextUse use;
    void context_fitted(const runs::RunKey&, const runs::ContextUse& u) override { ++fitted, use = u; }
  } obs;
  runs::Job job;
  job.lanes = {{"vanilla", MethodSpec{}, default_model_path()}};
  const auto m = long_chat(6);
  job.prompts = {{m.back().content, m}};
  job.chat = true;
  job.references = false;
  job.options.max_tokens = 1000;  // more than any 512-token context leaves
  const runs::JobResult r = runner.run(job, obs);  // before: InputError "the prompt has ... tokens"
  ASSERT_EQ(r.runs.size(), 1u);
  EXPECT_EQ(obs.fitted, 1);
  EXPECT_GT(r.runs[0].context.dropped_messages, 0);
  EXPECT_EQ(obs.use.dropped_messages, r.runs[0].context.dropped_messages);
  EXPECT_TRUE(r.runs[0].context.max_tokens_beyond());
  EXPECT_NE(runs::max_tokens_note(r.runs[0].context).find("max tokens 1000 is more than the context leaves"),
            std::string::npos);
  // Unless the model ended its answer, it ran to the end of the context: exactly answer_room tokens.
  if (r.runs[0].gen.stop_reason == "context")
    EXPECT_EQ(int(r.runs[0].gen.tokens.size()), r.runs[0].context.answer_room);
  else
    EXPECT_EQ(r.runs[0].gen.stop_reason, "eos");
}

TEST(ContextFit, TheCliWarnsUpFrontAndNotesAFullContext) {
  const auto r = test::run_cli("run --prompt 'Count: 1 2 3 4 5 6 7 8 9 10 11 12' --max-tokens 1000 --context 48 "
                               "--no-record --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: max tokens 1000 is more than the context leaves"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"stop_reason\":\"context\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: context full: the answer reached the end of the model's context of 48 tokens"),
            std::string::npos)
      << r.out;
  // Within the context: neither.
  const auto ok = test::run_cli("run --prompt 'Hello' --max-tokens 8 --context 48 --no-record");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_EQ(ok.out.find("warning:"), std::string::npos) << ok.out;
  EXPECT_EQ(ok.out.find("context full"), std::string::npos) << ok.out;
}

}  // namespace
}  // namespace specscope

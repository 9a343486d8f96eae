// Reasoning apart from the answer (engine/generate/reply_parts.h): the think-tag and harmony formats, streamed
// in any chunks, the shape a prompt's end gives, the format a published template has, and Qwen3's think tags
// decoded token by token through the Qwen2 tokenizer fixture.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/generate/generator.h"
#include "engine/generate/reply_parts.h"
#include "engine/methods/factory.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "sessions/summary_json.h"
#include "test_support.h"

namespace specscope {
namespace {

// Every way of cutting `text` in two, and byte by byte: the parts must be what one feed gives.
void expect_same_in_any_chunks(std::string_view text, const ReplyShape& shape) {
  const SplitReply whole = split_reply(text, shape);
  auto run = [&](const std::vector<std::string_view>& chunks) {
    ReplySplitter s(shape);
    SplitReply r;
    auto add = [&](const std::vector<ReplySpan>& spans) {
      for (const auto& span : spans) {
        EXPECT_FALSE(span.text.empty());
        (span.part == ReplyPart::Reasoning ? r.reasoning : r.answer) += span.text;
      }
    };
    for (auto c : chunks) add(s.feed(c));
    add(s.flush());
    return r;
  };
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const SplitReply r = run({text.substr(0, cut), text.substr(cut)});
    EXPECT_EQ(r.reasoning, whole.reasoning) << "cut at " << cut;
    EXPECT_EQ(r.answer, whole.answer) << "cut at " << cut;
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  const SplitReply r = run(bytes);
  EXPECT_EQ(r.reasoning, whole.reasoning);
  EXPECT_EQ(r.answer, whole.answer);
}

TEST(ReplyParts, ThinkTagsAsQwen3WritesThem) {
  const std::string reply = "<think>\nThe user greets me.\n\nI greet back.\n</think>\n\nHello!\nHow can I help?";
  const ReplyShape shape = reply_shape_after(ReplyFormat::ThinkTags, "<|im_start|>assistant\n");
  EXPECT_FALSE(shape.starts_in_reasoning);
  const SplitReply r = split_reply(reply, shape);
  // What Qwen3's template takes back out of such a reply: strip('\n') of the thought, lstrip('\n') of the answer.
  EXPECT_EQ(r.reasoning, "The user greets me.\n\nI greet back.");
  EXPECT_EQ(r.answer, "Hello!\nHow can I help?");
  expect_same_in_any_chunks(reply, shape);
}

TEST(ReplyParts, ThinkTagsOpenedByThePrompt) {
  // DeepSeek-R1's generation prompt ends in "<think>\n": the reply starts inside the thought.
  const ReplyShape shape = reply_shape_after(ReplyFormat::ThinkTags, "<｜User｜>2+2?<｜Assistant｜><think>\n");
  EXPECT_TRUE(shape.starts_in_reasoning);
  const std::string reply = "Two and two.\n</think>\n\nFour.";
  const SplitReply r = split_reply(reply, shape);
  EXPECT_EQ(r.reasoning, "Two and two.");
  EXPECT_EQ(r.answer, "Four.");
  expect_same_in_any_chunks(reply, shape);
  // A stored reply says the same by its markers alone.
  const ReplyShape stored = reply_shape_of_text(reply);
  EXPECT_EQ(stored.format, ReplyFormat::ThinkTags);
  EXPECT_TRUE(stored.starts_in_reasoning);
  EXPECT_EQ(split_reply(reply, stored).answer, "Four.");
  // Qwen3 with enable_thinking=false: the prompt closes an empty block, the reply is all answer.
  EXPECT_FALSE(reply_shape_after(ReplyFormat::ThinkTags, "assistant\n<think>\n\n</think>\n\n").starts_in_reasoning);
}

TEST(ReplyParts, ThinkingCutShortIsAllReasoning) {
  const ReplyShape shape{ReplyFormat::ThinkTags, false};
  const SplitReply r = split_reply("<think>\nStill thinking about it\n\n", shape);
  EXPECT_EQ(r.reasoning, "Still thinking about it");
  EXPECT_EQ(r.answer, "");
  // A marker's start at the end is shown as text when no marker follows.
  EXPECT_EQ(split_reply("<think>a</thi", shape).reasoning, "a</thi");
  EXPECT_EQ(reply_shape_of_text("<think>cut").format, ReplyFormat::ThinkTags);
  EXPECT_FALSE(reply_shape_of_text("<think>cut").starts_in_reasoning);
}

TEST(ReplyParts, HarmonyChannels) {
  // gpt-oss after "<|start|>assistant": an analysis message, then the final one (its <|return|> ends generation and
  // is never text).
  const std::string reply =
      "<|channel|>analysis<|message|>User asks 2+2. Answer 4.<|end|>"
      "<|start|>assistant<|channel|>final<|message|>2 + 2 = **4**.";
  const ReplyShape shape{ReplyFormat::Harmony, false};
  const SplitReply r = split_reply(reply, shape);
  EXPECT_EQ(r.reasoning, "User asks 2+2. Answer 4.");
  EXPECT_EQ(r.answer, "2 + 2 = **4**.");
  expect_same_in_any_chunks(reply, shape);
  EXPECT_EQ(reply_shape_of_text(reply).format, ReplyFormat::Harmony);

  // A commentary preamble is for the user (harmony's spec): shown as answer; a recipient and content type in the
  // header do not change the channel.
  const SplitReply c = split_reply(
      "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|end|>", shape);
  EXPECT_EQ(c.answer, "{\"city\":\"Paris\"}");
  EXPECT_EQ(c.reasoning, "");
  // Cut inside the next header: nothing of it is shown.
  const SplitReply cut = split_reply("<|channel|>analysis<|message|>thinking<|end|><|start|>assist", shape);
  EXPECT_EQ(cut.reasoning, "thinking");
  EXPECT_EQ(cut.answer, "");
  // A model writing no headers at all: its text is the answer, short or long.
  EXPECT_EQ(split_reply("Just text.", shape).answer, "Just text.");
  const std::string long_text(600, 'x');
  EXPECT_EQ(split_reply(long_text, shape).answer, long_text);
  expect_same_in_any_chunks(std::string(300, 'y') + "<|end|>", shape);
  // A "<|message|>" too far from the reply's start ends no header: found by fuzz_reply_parts, where a whole reply
  // took the far marker for a header's end while the same reply in pieces had already shown its start as the answer.
  const std::string far = "<|channel|>analysis" + std::string(300, '.') + "<|message|>x";
  EXPECT_EQ(split_reply(far, shape).answer, far);
  expect_same_in_any_chunks(far, shape);
}

TEST(ReplyParts, PlainIsUntouched) {
  const std::string reply = "<think>not a reasoning model</think>\n\nanswer <|end|>";
  const SplitReply r = split_reply(reply, ReplyShape{});
  EXPECT_EQ(r.answer, reply);
  EXPECT_EQ(r.reasoning, "");
  EXPECT_EQ(reply_shape_of_text("no markers here").format, ReplyFormat::Plain);
}

// A run's summary records its reply's shape (a DeepSeek-R1 reply cut before "</think>" holds no marker to tell it
// by); runs recorded before it did, and anything unreadable there, fall back to the text's markers.
TEST(ReplyParts, RecordedShapeIsReadBackAndOlderRunsFallBackToMarkers) {
  nlohmann::json summary = {{"tau", 1.0}};
  sessions::add_reply_shape(summary, ReplyShape{});
  EXPECT_FALSE(summary.contains("reply")) << "a plain reply adds nothing";
  sessions::add_reply_shape(summary, ReplyShape{ReplyFormat::ThinkTags, true});
  const ReplyShape read = sessions::recorded_reply_shape(summary.dump(), "a thought with no marker");
  EXPECT_EQ(read.format, ReplyFormat::ThinkTags);
  EXPECT_TRUE(read.starts_in_reasoning);
  for (const std::string older : {std::string("{\"tau\": 1}"), std::string("not json"),
                                  std::string(R"({"reply": {"format": "no-such-format"}})")}) {
    SCOPED_TRACE(older);
    const ReplyShape s = sessions::recorded_reply_shape(older, "<|channel|>final<|message|>hi");
    EXPECT_EQ(s.format, ReplyFormat::Harmony);
  }
  EXPECT_EQ(sessions::recorded_reply_shape("{}", "plain text").format, ReplyFormat::Plain);
}

TEST(ReplyParts, FormatOfThePublishedTemplates) {
  std::ifstream in(test::fixture("chat_templates/published/renders.json"));
  const auto f = nlohmann::json::parse(in);
  std::map<std::string, ReplyFormat> want = {
      {"qwen3", ReplyFormat::ThinkTags},      {"deepseek-r1-distill", ReplyFormat::ThinkTags},
      {"gpt-oss", ReplyFormat::Harmony},      {"qwen2.5", ReplyFormat::Plain},
      {"llama3.1", ReplyFormat::Plain},       {"gemma3", ReplyFormat::Plain},
      {"phi4", ReplyFormat::Plain},           {"mistral-v0.3", ReplyFormat::Plain}};
  size_t checked = 0;
  for (const auto& t : f.at("templates")) {
    const auto it = want.find(t.at("name").get<std::string>());
    if (it == want.end()) continue;
    EXPECT_EQ(reply_format_of_template(t.at("template").get<std::string>()), it->second) << it->first;
    ++checked;
  }
  EXPECT_EQ(checked, want.size());
}

TEST(ReplyParts, Qwen3ThinkTagsTokenByToken) {
  // "<think>" and "</think>" are single added tokens of Qwen's vocabulary; the live chat feeds each committed
  // token's text, decoded with special tokens kept, as it comes.
  auto tok = Tokenizer::from_files(test::fixture("tokenizers/qwen2/tokenizer.json"),
                                   test::fixture("tokenizers/qwen2/tokenizer_config.json"));
  const std::string reply = "<think>\nLet me count: 1, 2, 3.\n</think>\n\nThree — 三.";
  const std::vector<int32_t> ids = tok->encode(reply, false);
  ASSERT_TRUE(tok->piece_to_id("<think>"));
  EXPECT_NE(std::find(ids.begin(), ids.end(), *tok->piece_to_id("<think>")), ids.end());
  StreamingDecoder decoder(*tok, /*skip_special=*/false);
  ReplySplitter splitter(ReplyShape{ReplyFormat::ThinkTags, false});
  SplitReply r;
  auto add = [&](const std::vector<ReplySpan>& spans) {
    for (const auto& s : spans) (s.part == ReplyPart::Reasoning ? r.reasoning : r.answer) += s.text;
  };
  for (int32_t id : ids) add(splitter.feed(decoder.push(id)));
  add(splitter.feed(decoder.flush()));
  add(splitter.flush());
  EXPECT_EQ(r.reasoning, "Let me count: 1, 2, 3.");
  EXPECT_EQ(r.answer, "Three — 三.");
}

// GenerateOptions::keep_special_text: the same tokens, their text with the special tokens' own text (a harmony
// reply's markers), in both generators. The tiny-vocabulary fixture, sampled hot and past its end of sequence, commits
// a special token (<|begin_of_text|>, <|eot_id|>) with some seed.
TEST(ReplyParts, SpecialTokensTextKeptOnlyWhenAsked) {
  auto model = Model::load(test::fixture("models/tinyvocab_target"));
  const Tokenizer& tok = model->tokenizer();
  GenerateOptions opts;
  opts.max_tokens = 96;
  opts.stop_at_eos = false;
  opts.sampling.temperature = 3.f;
  const std::vector<int32_t> prompt = tok.encode("Hello", true);
  auto run = [&](bool keep, bool speculative) {
    GenerateOptions o = opts;
    o.keep_special_text = keep;
    auto ctx = model->new_cpu_context(256);
    if (!speculative) return generate(*model, *ctx, prompt, o);
    auto method = make_method(MethodSpec{}, *model);
    return generate_speculative(*model, *ctx, *method, prompt, o).gen;
  };
  // The first seed whose sample commits a special token (the test shows nothing without one).
  auto specials_in = [&](const GenerateResult& r) {
    return int(std::count_if(r.tokens.begin(), r.tokens.end(), [&](int32_t t) { return tok.is_special(t); }));
  };
  for (opts.sampling.seed = 0; opts.sampling.seed < 200; ++opts.sampling.seed)
    if (specials_in(run(false, false)) > 0) break;
  for (bool speculative : {false, true}) {
    SCOPED_TRACE(speculative ? "generate_speculative" : "generate");
    const GenerateResult skipped = run(false, speculative), kept = run(true, speculative);
    ASSERT_EQ(kept.tokens, skipped.tokens);
    ASSERT_GT(specials_in(kept), 0) << "no seed below 200 commits a special token";
    EXPECT_EQ(kept.text, tok.decode(kept.tokens, /*skip_special=*/false));
    EXPECT_EQ(skipped.text, tok.decode(skipped.tokens, /*skip_special=*/true));
    EXPECT_NE(kept.text, skipped.text);
  }
}

}  // namespace
}  // namespace specscope

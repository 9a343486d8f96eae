// Chat templates: the model's own template, run by SpecScope's Jinja interpreter, renders exactly what
// transformers' apply_chat_template() renders, for every published template in the fixtures (the families
// SpecScope recognizes, tests/fixtures/chat_templates/<family>.json, and the published templates issue 21 lists,
// published/renders.json: Llama-2/3.1/3.2, Mistral v0.3, Mixtral, Qwen2.5, Qwen3, Gemma-2/3, Phi-3/3.5/4,
// DeepSeek-R1-distill, gpt-oss (harmony), OLMo 2; all written by transformers 5.23.0 through tests/fixtures/make_chat_template*.py); the
// native renderers, now the fallback, still do too for the variants they know; detection picks the right
// family/variant on each published string and on a re-spaced spelling of it, look-alike templates of other
// families are not mistaken for ours, and tokenizer_config.json is read in all its shapes (string / named-list
// template, AddedToken bos/eos, chat_template.jinja, invalid).
#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <iomanip>
#include <locale>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "tests/test_support.h"

using namespace specscope;
using nlohmann::json;
using Family = ChatTemplate::Family;

namespace {

json load(const std::string& rel) {
  std::ifstream f(test::fixture("chat_templates/" + rel));
  EXPECT_TRUE(f.good()) << rel;
  return json::parse(f);
}

std::string str(const json& j) { return j.is_null() ? std::string() : j.get<std::string>(); }

std::vector<ChatMessage> conversation(const json& convs, const std::string& name) {
  std::vector<ChatMessage> out;
  for (const auto& m : convs.at(name)) {
    out.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
    // ChatMessage::reasoning goes to the template under both names; the fixture's messages carry both, equal.
    if (m.contains("reasoning_content")) {
      EXPECT_EQ(m.at("reasoning_content"), m.at("thinking"));
      out.back().reasoning = m.at("reasoning_content").get<std::string>();
    }
  }
  return out;
}

// Today's local date the way Python's datetime.now().strftime("%d %b %Y") prints it (C locale).
std::string today() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::ostringstream os;
  os.imbue(std::locale::classic());
  os << std::put_time(&tm, "%d %b %Y");
  return os.str();
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

// Checks one fixture case against a freshly detected template (failures are reported, not returned): the
// interpreter running the template itself, or (native) SpecScope's own renderer for the recognized variant.
void check_case(const std::string& tmpl, const std::string& bos, const std::string& eos, const json& convs,
                const json& c, bool native = false) {
  auto t = native ? ChatTemplate::native(tmpl, bos, eos) : ChatTemplate::detect(tmpl, bos, eos);
  EXPECT_EQ(t->interpreted(), !native);
  const std::string date = c.value("date_string", std::string());
  if (!date.empty() && date != "today") t->set_date_string(date);
  const auto msgs = conversation(convs, c.at("conversation").get<std::string>());
  const bool gen = c.at("add_generation_prompt").get<bool>();
  SCOPED_TRACE("conversation=" + c.at("conversation").get<std::string>() + " add_generation_prompt=" +
               (gen ? "true" : "false") + (date.empty() ? "" : " date_string=" + date));
  if (c.contains("output")) {
    std::string want = c.at("output").get<std::string>();
    if (date == "today") want = replace_all(want, "{{TODAY}}", today());
    std::string got;
    try {
      got = t->render(msgs, gen);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what() << "\nwanted: " << json(want).dump();
      return;
    }
    EXPECT_EQ(json(got).dump(), json(want).dump());  // JSON-escaped so whitespace differences are visible
  } else {
    const std::string want = c.at("error").get<std::string>();
    try {
      const std::string got = t->render(msgs, gen);
      ADD_FAILURE() << "rendered " << json(got).dump() << " but transformers raised: " << want;
    } catch (const InputError& e) {
      EXPECT_EQ(e.problem(), want);
    }
  }
}

const std::map<std::string, Family> kFamilies = {
    {"llama2", Family::Llama2}, {"llama3", Family::Llama3}, {"mistral", Family::Mistral},
    {"chatml", Family::ChatML}, {"vicuna", Family::Vicuna}, {"zephyr", Family::Zephyr}};

class FamilyFixture : public ::testing::TestWithParam<std::string> {};

// Every case of every published template of the family renders exactly as transformers renders it (or raises
// the same error message): through the interpreter, as published and re-spaced.
TEST_P(FamilyFixture, RendersLikeTransformers) {
  const json f = load(GetParam() + ".json");
  size_t checked = 0;
  for (const auto& tmpl : f.at("templates")) {
    SCOPED_TRACE(tmpl.at("variant").get<std::string>() + " from " + tmpl.at("source").get<std::string>());
    for (const char* key : {"template", "respaced"}) {
      for (const auto& c : tmpl.at("cases")) {
        check_case(tmpl.at(key).get<std::string>(), str(tmpl.at("bos_token")), str(tmpl.at("eos_token")),
                   f.at("conversations"), c);
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 2 * 28u * f.at("templates").size());
}

// The native renderers (the fallback for models without a template) keep rendering the variants they know
// exactly as transformers does.
TEST_P(FamilyFixture, NativeFallbackRendersLikeTransformers) {
  const json f = load(GetParam() + ".json");
  size_t checked = 0;
  for (const auto& tmpl : f.at("templates")) {
    SCOPED_TRACE(tmpl.at("variant").get<std::string>() + " from " + tmpl.at("source").get<std::string>());
    for (const auto& c : tmpl.at("cases")) {
      check_case(tmpl.at("template").get<std::string>(), str(tmpl.at("bos_token")), str(tmpl.at("eos_token")),
                 f.at("conversations"), c, /*native=*/true);
      ++checked;
    }
  }
  EXPECT_GE(checked, 28u * f.at("templates").size());
}

// Detection names the family and the exact published variant, for the string as published and re-spaced.
TEST_P(FamilyFixture, DetectsPublishedVariant) {
  const json f = load(GetParam() + ".json");
  for (const auto& tmpl : f.at("templates")) {
    const std::string variant = tmpl.at("variant").get<std::string>();
    for (const char* key : {"template", "respaced"}) {
      SCOPED_TRACE(variant + " (" + key + ") from " + tmpl.at("source").get<std::string>());
      auto t = ChatTemplate::detect(tmpl.at(key).get<std::string>(), str(tmpl.at("bos_token")),
                                    str(tmpl.at("eos_token")));
      EXPECT_EQ(t->family(), kFamilies.at(GetParam()));
      EXPECT_EQ(t->family_name(), GetParam());
      EXPECT_EQ(t->variant(), variant);
      EXPECT_FALSE(t->approximate());
      EXPECT_TRUE(t->interpreted());
      EXPECT_EQ(t->note(), "");
      EXPECT_EQ(ChatTemplate::native(tmpl.at(key).get<std::string>(), "", "")->variant(), variant);
    }
  }
}

// Native renderers: renders_bos() agrees with what transformers' output shows, BOS at the start of a rendered
// prompt. Interpreted templates: always true, the text is encoded without adding special tokens, as
// transformers' apply_chat_template(tokenize=True) does (the template writes BOS where the model wants it).
TEST_P(FamilyFixture, RendersBosMatchesOracle) {
  const json f = load(GetParam() + ".json");
  for (const auto& tmpl : f.at("templates")) {
    SCOPED_TRACE(tmpl.at("variant").get<std::string>() + " from " + tmpl.at("source").get<std::string>());
    const std::string bos = str(tmpl.at("bos_token"));
    std::string out;
    for (const auto& c : tmpl.at("cases"))
      if (c.at("conversation") == "user_only" && c.at("add_generation_prompt") == true) out = c.at("output");
    ASSERT_FALSE(out.empty());
    const bool oracle = !bos.empty() && out.rfind(bos, 0) == 0;
    auto t = ChatTemplate::native(tmpl.at("template").get<std::string>(), bos, str(tmpl.at("eos_token")));
    EXPECT_EQ(t->renders_bos(), oracle);
    EXPECT_TRUE(ChatTemplate::detect(tmpl.at("template").get<std::string>(), bos, "")->renders_bos());
  }
}

INSTANTIATE_TEST_SUITE_P(Families, FamilyFixture,
                         ::testing::Values("llama2", "llama3", "mistral", "chatml", "vicuna", "zephyr"),
                         [](const auto& info) { return info.param; });

// Published templates of other families are Plain; fine-tunes that kept a family's markers but changed its
// structure are that family, flagged approximate with a note.
TEST(ChatTemplate, LookalikesAreNotMistaken) {
  const json f = load("lookalikes.json");
  for (const auto& l : f.at("templates")) {
    SCOPED_TRACE(l.at("name").get<std::string>() + " from " + l.at("source").get<std::string>());
    // Interpreted, whatever the family: the note says the model's own template renders.
    auto own = ChatTemplate::detect(l.at("template").get<std::string>(), "<s>", "</s>");
    EXPECT_TRUE(own->interpreted());
    EXPECT_EQ(own->family_name(), l.at("family").get<std::string>());
    if (own->family() == Family::Plain || own->approximate())
      EXPECT_NE(own->note().find("model's own chat template"), std::string::npos) << own->note();
    // The native fallback says what it approximates.
    auto t = ChatTemplate::native(l.at("template").get<std::string>(), "<s>", "</s>");
    EXPECT_EQ(t->family_name(), l.at("family").get<std::string>());
    EXPECT_EQ(t->approximate(), l.at("approximate").get<bool>());
    if (t->family() == Family::Plain) {
      EXPECT_NE(t->note().find("plain format"), std::string::npos) << t->note();
      EXPECT_NE(t->note().find("not one SpecScope recognizes"), std::string::npos) << t->note();
    } else if (t->approximate()) {
      EXPECT_NE(t->note().find("may differ"), std::string::npos) << t->note();
    }
    // Whatever was chosen renders a normal conversation without crashing.
    EXPECT_FALSE(t->render({{"user", "Hello"}, {"assistant", "Hi"}, {"user", "Bye"}}, true).empty());
  }
}

TEST(ChatTemplate, PlainFormatAndNote) {
  auto t = ChatTemplate::detect("", "<s>", "</s>");
  EXPECT_EQ(t->family(), Family::Plain);
  EXPECT_EQ(t->family_name(), "plain");
  EXPECT_EQ(t->variant(), "plain");
  EXPECT_FALSE(t->renders_bos());
  EXPECT_NE(t->note().find("plain format"), std::string::npos);
  EXPECT_NE(t->note().find("\"User: ...\\n\""), std::string::npos) << t->note();
  EXPECT_NE(t->note().find("empty"), std::string::npos) << t->note();
  EXPECT_EQ(t->render({{"user", "Hi"}}), "User: Hi\nAssistant:");
  EXPECT_EQ(t->render({{"system", "Be terse."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}}, true),
            "System: Be terse.\nUser: Hi\nAssistant: Hello\nUser: Bye\nAssistant:");
  EXPECT_EQ(t->render({{"user", "Hi"}, {"assistant", "Hello"}}, false), "User: Hi\nAssistant: Hello\n");
  EXPECT_EQ(t->render({{"tool", "42"}}, false), "Tool: 42\n");
  EXPECT_THROW(t->render({}), InputError);
  EXPECT_EQ(t->date_string(), "");

  // A template of no known family is rendered by itself, not in the plain format.
  auto u = ChatTemplate::detect("{% for m in messages %}<<{{ m.content }}>>{% endfor %}", "<s>", "</s>");
  EXPECT_EQ(u->family(), Family::Plain);
  EXPECT_TRUE(u->interpreted());
  EXPECT_NE(u->note().find("not one SpecScope recognizes"), std::string::npos) << u->note();
  EXPECT_EQ(u->render({{"user", "a"}, {"assistant", "b"}}), "<<a>><<b>>");
  EXPECT_EQ(ChatTemplate::native("{% for m in messages %}<<{{ m.content }}>>{% endfor %}", "", "")
                ->render({{"user", "a"}}),
            "User: a\nAssistant:");
}

// for_family(Vicuna) (lmsys/vicuna-* ship no chat_template) renders FastChat's vicuna_v1.1 prompt including its
// default system prompt; oracle: JailbreakBench's template fed the FastChat system prompt, via transformers.
TEST(ChatTemplate, VicunaWithoutTemplateIsFastChat) {
  const json f = load("vicuna_fastchat_default.json");
  size_t checked = 0;
  for (const auto& c : f.at("cases")) {
    auto t = ChatTemplate::for_family(Family::Vicuna, str(f.at("bos_token")), str(f.at("eos_token")));
    EXPECT_EQ(t->variant(), "vicuna-v1.1");
    EXPECT_FALSE(t->renders_bos());
    const auto msgs = conversation(f.at("conversations"), c.at("conversation").get<std::string>());
    SCOPED_TRACE(c.at("conversation").get<std::string>());
    if (c.contains("output"))
      EXPECT_EQ(json(t->render(msgs, c.at("add_generation_prompt"))).dump(), json(c.at("output")).dump());
    else
      EXPECT_THROW(t->render(msgs, c.at("add_generation_prompt")), InputError);
    ++checked;
  }
  EXPECT_GE(checked, 28u);
  EXPECT_EQ(ChatTemplate::for_family(Family::Llama3, "<|begin_of_text|>", "<|eot_id|>")->variant(), "llama3.1");
  EXPECT_EQ(ChatTemplate::for_family(Family::Plain, "", "")->family(), Family::Plain);
}

TEST(ChatTemplate, LlamaDates) {
  const json f = load("llama3.json");
  for (const auto& tmpl : f.at("templates")) {
    auto t = ChatTemplate::detect(tmpl.at("template").get<std::string>(), "<|begin_of_text|>", "<|eot_id|>");
    const std::string v = t->variant();
    if (v == "llama3.1") {
      EXPECT_EQ(t->date_string(), "26 Jul 2024");
    } else if (v == "llama3.2") {
      EXPECT_EQ(t->date_string(), today());  // strftime_now("%d %b %Y")
    } else {
      EXPECT_EQ(t->date_string(), "");
    }
    if (v == "llama3.1" || v == "llama3.2") {
      t->set_date_string("01 Jan 2031");
      EXPECT_EQ(t->date_string(), "01 Jan 2031");
      EXPECT_NE(t->render({{"user", "hi"}}).find("Today Date: 01 Jan 2031\n\n"), std::string::npos);
    }
  }
}

// tokenizer_config.json shapes; expected renderings from the same transformers oracle.
TEST(ChatTemplate, FromTokenizerConfig) {
  const json expected = load("configs/expected.json");
  const json convs = load("llama2.json").at("conversations");
  const auto conv = conversation(convs, expected.at("conversation").get<std::string>());
  const std::string dir = test::fixture("chat_templates/configs/");

  auto list = ChatTemplate::from_tokenizer_config(dir + "list_form.json");  // [{name, template}], "default" used
  EXPECT_EQ(list->variant(), "llama2-chat");
  EXPECT_EQ(list->render(conv, true), expected.at("list_form").get<std::string>());

  auto added = ChatTemplate::from_tokenizer_config(dir + "added_tokens.json");  // {"__type": "AddedToken", ...}
  EXPECT_EQ(added->variant(), "llama2-chat");
  EXPECT_TRUE(added->renders_bos());
  EXPECT_EQ(added->render(conv, true), expected.at("added_tokens").get<std::string>());

  auto qwen = ChatTemplate::from_tokenizer_config(dir + "null_bos.json");  // "bos_token": null
  EXPECT_EQ(qwen->variant(), "qwen2.5");
  EXPECT_TRUE(qwen->interpreted());
  EXPECT_TRUE(qwen->renders_bos());  // interpreted: encoded as is
  EXPECT_EQ(qwen->render(conv, true), expected.at("null_bos").get<std::string>());

  for (const std::string& p : {dir + "sidecar/tokenizer_config.json", dir + "sidecar"}) {  // chat_template.jinja
    auto side = ChatTemplate::from_tokenizer_config(p);
    EXPECT_EQ(side->variant(), "zephyr") << p;
    EXPECT_EQ(side->render(conv, true), expected.at("sidecar").get<std::string>());
  }

  // chat_template.jinja wins over the config's own chat_template, as transformers loads it.
  EXPECT_EQ(ChatTemplate::from_tokenizer_config(dir + "sidecar_priority")->variant(), "zephyr");

  auto none = ChatTemplate::from_tokenizer_config(dir + "no_template.json");
  EXPECT_EQ(none->family(), Family::Plain);
  EXPECT_NE(none->note().find("has no chat_template"), std::string::npos) << none->note();
  EXPECT_NE(none->note().find("Vicuna"), std::string::npos) << none->note();
  EXPECT_NE(none->note().find("plain format"), std::string::npos) << none->note();

  auto nodefault = ChatTemplate::from_tokenizer_config(dir + "list_no_default.json");
  EXPECT_EQ(nodefault->family(), Family::Plain);
  EXPECT_NE(nodefault->note().find("\"default\""), std::string::npos) << nodefault->note();

  auto missing = ChatTemplate::from_tokenizer_config(dir + "does_not_exist.json");
  EXPECT_EQ(missing->family(), Family::Plain);
  EXPECT_NE(missing->note().find("no tokenizer_config.json"), std::string::npos) << missing->note();
  EXPECT_EQ(ChatTemplate::from_tokenizer_config("")->family(), Family::Plain);

  try {
    ChatTemplate::from_tokenizer_config(dir + "invalid.json");
    ADD_FAILURE() << "invalid JSON accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), dir + "invalid.json");
    EXPECT_NE(std::string(e.what()).find("invalid.json"), std::string::npos);
    EXPECT_NE(e.problem().find("invalid JSON"), std::string::npos) << e.problem();
  }
}

TEST(ChatTemplate, WrongTemplateTypeIsInputError) {
  const std::string path = testing::TempDir() + "chat_template_bad_type.json";
  {
    std::ofstream f(path);
    f << R"({"bos_token": "<s>", "chat_template": 42})";
  }
  try {
    ChatTemplate::from_tokenizer_config(path);
    ADD_FAILURE() << "numeric chat_template accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), path);
  }
}

// The published templates issue 21 lists, rendered by the interpreter for every conversation (system / no
// system / multi-turn / ...) with and without the generation prompt, equal transformers' text; where the committed
// Qwen2 tokenizer fixture has the template's control tokens, SpecScope's tokens equal transformers' token ids too
// (elsewhere equal text through the same tokenizer is equal tokens).
TEST(ChatTemplate, PublishedTemplatesRenderLikeTransformers) {
  const json f = load("published/renders.json");
  const std::string tok_dir = test::fixture(f.at("tokenizer").get<std::string>());
  auto tok = Tokenizer::from_files(tok_dir + "/tokenizer.json", tok_dir + "/tokenizer_config.json");
  std::tm now{};  // the wall-clock time the fixture script fixed transformers' clock at
  ASSERT_EQ(sscanf(f.at("now").get<std::string>().c_str(), "%d-%d-%d %d:%d:%d", &now.tm_year, &now.tm_mon,
                   &now.tm_mday, &now.tm_hour, &now.tm_min, &now.tm_sec), 6);
  now.tm_year -= 1900;
  now.tm_mon -= 1;
  std::set<std::string> names;
  size_t checked = 0, tokenized = 0;
  for (const auto& tmpl : f.at("templates")) {
    const std::string name = tmpl.at("name").get<std::string>();
    names.insert(name);
    for (const auto& c : tmpl.at("cases")) {
      SCOPED_TRACE(name + " (" + tmpl.at("repository").get<std::string>() + ") conversation=" +
                   c.at("conversation").get<std::string>() + " add_generation_prompt=" +
                   c.at("add_generation_prompt").dump() + " kwargs=" + c.at("kwargs").dump());
      auto t = ChatTemplate::detect(tmpl.at("template").get<std::string>(), str(tmpl.at("bos_token")),
                                    str(tmpl.at("eos_token")));
      ASSERT_TRUE(t->interpreted()) << t->note();
      t->set_now(now);
      for (const auto& [k, v] : c.at("kwargs").items()) {
        if (k == "date_string") t->set_date_string(v.get<std::string>());
        else t->set_variable(k, nlohmann::ordered_json::parse(v.dump()));
      }
      const auto msgs = conversation(f.at("conversations"), c.at("conversation").get<std::string>());
      const bool gen = c.at("add_generation_prompt").get<bool>();
      ++checked;
      if (c.contains("error")) {
        try {
          const std::string got = t->render(msgs, gen);
          ADD_FAILURE() << "rendered " << json(got).dump() << " but transformers raised: " << c.at("error");
        } catch (const InputError& e) {
          EXPECT_EQ(e.problem(), c.at("error").get<std::string>());
        }
        continue;
      }
      std::string got;
      try {
        got = t->render(msgs, gen);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "threw: " << e.what();
        continue;
      }
      EXPECT_EQ(json(got).dump(), json(c.at("output")).dump());
      if (c.contains("tokens")) {
        EXPECT_TRUE(t->renders_bos());  // encoded as transformers does: no special tokens added
        EXPECT_EQ(json(tok->encode(got, !t->renders_bos())).dump(), c.at("tokens").dump());
        ++tokenized;
      }
    }
  }
  for (const char* want : {"llama2-chat", "llama3.1", "llama3.2", "mistral-v0.3", "mixtral", "qwen2.5", "qwen3",
                           "gemma2", "gemma3", "phi3", "phi4", "deepseek-r1-distill", "gpt-oss", "olmo2"})
    EXPECT_TRUE(names.count(want)) << want;
  EXPECT_GE(checked, 15u * 28u);
  EXPECT_GE(tokenized, 50u);
  // The reasoning is passed where a template shows it: gpt-oss's last answer and Qwen3's answer after the last
  // question carry it, and the templates that know no such key are unchanged by it.
  auto output_of = [&](const std::string& tmpl_name, const std::string& conv, bool gen) {
    for (const auto& tmpl : f.at("templates"))
      if (tmpl.at("name") == tmpl_name)
        for (const auto& c : tmpl.at("cases"))
          if (c.at("conversation") == conv && c.at("add_generation_prompt") == gen && c.at("kwargs").empty())
            return c.value("output", std::string());
    return std::string();
  };
  EXPECT_NE(output_of("gpt-oss", "reasoning_last", false).find("<|channel|>analysis<|message|>Add two and two."),
            std::string::npos);
  EXPECT_NE(output_of("qwen3", "reasoning_last", false).find("<think>\nAdd two and two.\n</think>"),
            std::string::npos);
  EXPECT_EQ(output_of("llama3.2", "reasoning_last", false).find("Add two"), std::string::npos);
}

// The issue's case: Qwen3's own template writes no system turn when the conversation has none (matching it to
// the closest known family, qwen2.5, wrote one); with enable_thinking=false it closes an empty think block.
TEST(ChatTemplate, Qwen3WritesNoEmptySystemTurn) {
  std::ifstream in(test::fixture("chat_templates/published/qwen3.jinja"), std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  auto t = ChatTemplate::detect(text, "", "<|im_end|>");
  ASSERT_TRUE(t->interpreted());
  const std::string out = t->render({{"user", "Hi"}}, true);
  EXPECT_EQ(out.find("<|im_start|>system"), std::string::npos) << out;
  EXPECT_EQ(out.rfind("<|im_start|>user\nHi<|im_end|>\n", 0), 0u) << out;
  // The fallback renderer is what wrote a system turn Qwen3 never writes.
  EXPECT_NE(ChatTemplate::native(text, "", "<|im_end|>")->render({{"user", "Hi"}}, true).find("<|im_start|>system"),
            std::string::npos);
  t->set_variable("enable_thinking", false);
  EXPECT_NE(t->render({{"user", "Hi"}}, true).find("<|im_start|>assistant\n<think>\n\n</think>\n\n"),
            std::string::npos);
}

// A template that raises gives an InputError carrying the template's own message.
TEST(ChatTemplate, RaisingTemplateGivesItsMessage) {
  std::ifstream in(test::fixture("chat_templates/published/gemma2.jinja"), std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto t = ChatTemplate::detect(text, "<bos>", "<eos>");
  ASSERT_TRUE(t->interpreted());
  try {
    t->render({{"system", "Be brief."}, {"user", "Hi"}});
    FAIL() << "Gemma-2's template accepted a system message";
  } catch (const InputError& e) {
    EXPECT_EQ(e.problem(), "System role not supported");
    EXPECT_EQ(e.where(), "chat template");
  }
  auto custom = ChatTemplate::detect("{{ raise_exception('no ' ~ messages[0].role ~ ' here') }}", "", "");
  try {
    custom->render({{"robot", "x"}});
    FAIL() << "no exception";
  } catch (const InputError& e) {
    EXPECT_EQ(e.problem(), "no robot here");
  }
}

// A template that fails while rendering is an InputError naming the line; one that does not parse falls back to
// the native renderer of its family, and the note says why (with the line).
TEST(ChatTemplate, BrokenTemplates) {
  auto t = ChatTemplate::detect("{% for m in messages %}\n{{ m.content.nope.deeper }}{% endfor %}", "", "");
  ASSERT_TRUE(t->interpreted());
  try {
    t->render({{"user", "x"}});
    FAIL() << "no exception";
  } catch (const InputError& e) {
    EXPECT_EQ(e.problem().rfind("line 2: ", 0), 0u) << e.problem();
  }
  // ChatML markers, but an if left open on line 2: rendered natively, as the closest known variant.
  const std::string text =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
      "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
      "{% endif %}\n{% if true %}";
  auto broken = ChatTemplate::detect(text, "", "<|im_end|>");
  EXPECT_FALSE(broken->interpreted());
  EXPECT_EQ(broken->family(), Family::ChatML);
  EXPECT_NE(broken->note().find("does not parse"), std::string::npos) << broken->note();
  EXPECT_NE(broken->note().find("line 2"), std::string::npos) << broken->note();
  const auto fallback = ChatTemplate::native(text, "", "<|im_end|>");
  EXPECT_EQ(broken->variant(), fallback->variant());
  EXPECT_EQ(broken->render({{"user", "Hi"}}), fallback->render({{"user", "Hi"}}));
}

}  // namespace

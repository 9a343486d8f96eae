// Chat templates: SpecScope's native rendering equals transformers' apply_chat_template() output for every
// published template variant it recognizes (fixtures from tests/fixtures/make_chat_templates.py, rendered by
// transformers 5.23.0), detection picks the right family/variant on each published string and on a re-spaced
// spelling of it, look-alike templates of other families are not mistaken for ours, and tokenizer_config.json
// is read in all its shapes (string / named-list template, AddedToken bos/eos, chat_template.jinja, invalid).
#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <iomanip>
#include <locale>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/chat_template.h"
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
  for (const auto& m : convs.at(name))
    out.push_back({m.at("role").get<std::string>(), m.at("content").get<std::string>()});
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

// Checks one fixture case against a freshly detected template (failures are reported, not returned).
void check_case(const std::string& tmpl, const std::string& bos, const std::string& eos, const json& convs,
                const json& c) {
  auto t = ChatTemplate::detect(tmpl, bos, eos);
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
// the same error message).
TEST_P(FamilyFixture, RendersLikeTransformers) {
  const json f = load(GetParam() + ".json");
  size_t checked = 0;
  for (const auto& tmpl : f.at("templates")) {
    SCOPED_TRACE(tmpl.at("variant").get<std::string>() + " from " + tmpl.at("source").get<std::string>());
    for (const auto& c : tmpl.at("cases")) {
      check_case(tmpl.at("template").get<std::string>(), str(tmpl.at("bos_token")), str(tmpl.at("eos_token")),
                 f.at("conversations"), c);
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
      EXPECT_EQ(t->note(), "");
    }
  }
}

// renders_bos() agrees with what transformers' output shows: BOS at the start of a rendered prompt.
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
    auto t = ChatTemplate::detect(tmpl.at("template").get<std::string>(), bos, str(tmpl.at("eos_token")));
    EXPECT_EQ(t->renders_bos(), oracle);
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
    auto t = ChatTemplate::detect(l.at("template").get<std::string>(), "<s>", "</s>");
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

  auto u = ChatTemplate::detect("{% for m in messages %}<<{{ m.content }}>>{% endfor %}", "<s>", "</s>");
  EXPECT_EQ(u->family(), Family::Plain);
  EXPECT_NE(u->note().find("not one SpecScope recognizes"), std::string::npos) << u->note();
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
  EXPECT_FALSE(qwen->renders_bos());
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

}  // namespace

// The Jinja interpreter (engine/tokenizer/jinja/): every construct renders what transformers' own Jinja
// environment renders (tests/fixtures/jinja/constructs.json, from tests/fixtures/make_chat_template_renders.py),
// raise_exception passes the template's message on, bad templates fail with the line, and the limits hold
// against hostile templates (they come from untrusted model files).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/jinja/template.h"
#include "tests/test_support.h"

using namespace specscope;
using namespace specscope::jinja;

namespace {

// The wall-clock time make_chat_template_renders.py fixes transformers' clock at (FIXED_NOW).
std::tm fixed_now() {
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mon = 2;
  tm.tm_mday = 5;
  tm.tm_hour = 9;
  tm.tm_min = 30;
  tm.tm_wday = 3;  // a Wednesday
  tm.tm_yday = 63;
  return tm;
}

std::string render(const std::string& tmpl, const Dict& vars = {}, RenderOptions opt = {}) {
  return Template(tmpl).render(vars, opt);
}

// The SyntaxError a template raises when parsed (fails the test when it parses).
SyntaxError syntax_error(const std::string& tmpl) {
  try {
    Template t(tmpl);
  } catch (const SyntaxError& e) {
    return e;
  }
  ADD_FAILURE() << "parsed: " << tmpl;
  return SyntaxError(0, "");
}

RenderError render_error(const std::string& tmpl, const Dict& vars = {}, RenderOptions opt = {}) {
  try {
    render(tmpl, vars, opt);
  } catch (const RenderError& e) {
    return e;
  }
  ADD_FAILURE() << "rendered: " << tmpl;
  return RenderError(0, "");
}

TEST(Jinja, ConstructsRenderLikeTransformers) {
  std::ifstream f(test::fixture("jinja/constructs.json"));
  ASSERT_TRUE(f.good());
  const auto doc = nlohmann::ordered_json::parse(f);  // ordered: tojson must see the keys in their order
  RenderOptions opt;
  opt.now = fixed_now();
  size_t checked = 0;
  for (const auto& c : doc.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    const std::string tmpl = c.at("template").get<std::string>();
    SCOPED_TRACE(name + ": " + tmpl);
    const Value vars = Value::from_json(c.at("vars"));
    ASSERT_TRUE(vars.is_dict());
    if (c.contains("output")) {
      try {
        EXPECT_EQ(nlohmann::json(render(tmpl, vars.dict(), opt)).dump(), nlohmann::json(c.at("output")).dump());
      } catch (const std::exception& e) {
        ADD_FAILURE() << "threw " << e.what();
      }
    } else if (c.contains("raised")) {
      try {
        render(tmpl, vars.dict(), opt);
        ADD_FAILURE() << "rendered, but the template raises";
      } catch (const Raised& e) {
        EXPECT_EQ(std::string(e.what()), c.at("raised").get<std::string>());
      }
    } else {  // Jinja refuses it (UndefinedError, TypeError): so must we, as a RenderError with the line
      EXPECT_EQ(render_error(tmpl, vars.dict(), opt).line(), 1) << c.at("error");
    }
    ++checked;
  }
  EXPECT_GE(checked, 50u);
}

TEST(Jinja, RaiseExceptionPassesTheMessageOn) {
  try {
    render("{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}");
    FAIL() << "no exception";
  } catch (const Raised& e) {
    EXPECT_STREQ(e.what(), "Conversation roles must alternate user/assistant/user/assistant/...");
  }
}

TEST(Jinja, SyntaxErrorsNameTheLine) {
  EXPECT_EQ(syntax_error("a\nb\n{% if x %}\nno end").line(), 4);
  EXPECT_NE(syntax_error("{% if x %}").problem().find("endif"), std::string::npos);
  EXPECT_EQ(syntax_error("line1\n{% frobnicate %}").line(), 2);
  EXPECT_NE(syntax_error("{% frobnicate %}").problem().find("unknown tag 'frobnicate'"), std::string::npos);
  EXPECT_NE(syntax_error("{{ 'open ").problem().find("string"), std::string::npos);
  EXPECT_NE(syntax_error("{# never closed").problem().find("comment"), std::string::npos);
  EXPECT_NE(syntax_error("{{ x ").problem().find("missing"), std::string::npos);
  EXPECT_EQ(syntax_error("{{ (1 + }}").line(), 1);
  EXPECT_NE(syntax_error("{% for x in %}{% endfor %}").problem().find("unexpected"), std::string::npos);
  EXPECT_NE(syntax_error("{% endif %}").problem().find("unknown tag 'endif'"), std::string::npos);
  EXPECT_NE(syntax_error("{{ x is defined is defined }}").problem().find("chain"), std::string::npos);
  EXPECT_NE(syntax_error("{{ a @ b }}").problem().find("'@'"), std::string::npos);
  EXPECT_NE(syntax_error("{% extends 'base.html' %}").problem().find("extends"), std::string::npos);
  // what() is "line N: problem", the form ChatTemplate reports
  EXPECT_EQ(std::string(syntax_error("\n\n{% if %}").what()).rfind("line 3: ", 0), 0u);
}

TEST(Jinja, RenderErrorsNameTheLine) {
  EXPECT_EQ(render_error("ok\n{{ missing.attr }}").line(), 2);
  EXPECT_NE(render_error("{{ missing.attr }}").problem().find("'missing' is undefined"), std::string::npos);
  EXPECT_NE(render_error("{{ 'a' + 1 }}").problem().find("concatenate"), std::string::npos);
  EXPECT_NE(render_error("{{ 1 // 0 }}").problem().find("zero"), std::string::npos);
  EXPECT_NE(render_error("{{ x | nosuchfilter }}").problem().find("no filter named 'nosuchfilter'"), std::string::npos);
  EXPECT_NE(render_error("{{ x is nosuchtest }}").problem().find("no test named"), std::string::npos);
  EXPECT_NE(render_error("{{ [1].append(2) }}").problem().find("unsafe"), std::string::npos);
  EXPECT_NE(render_error("{% set x = 1 %}{% set x.a = 2 %}").problem().find("namespace"), std::string::npos);
  EXPECT_NE(render_error("{% set ns = namespace() %}{% set ns._private = 1 %}").problem().find("underscore"),
            std::string::npos);
  EXPECT_NE(render_error("{{ 9223372036854775807 + 1 }}").problem().find("overflow"), std::string::npos);
  EXPECT_NE(render_error("{% for x in 5 %}{% endfor %}").problem().find("not iterable"), std::string::npos);
}

TEST(Jinja, LimitsStopHostileTemplates) {
  RenderOptions small;
  small.limits.max_output_bytes = 1000;
  small.limits.max_loop_iterations = 500;
  small.limits.max_call_depth = 8;
  // Output that keeps growing.
  EXPECT_NE(render_error("{% for i in range(200) %}{{ 'xxxxxxxxxx' }}{% endfor %}", {}, small).problem().find("bytes"),
            std::string::npos);
  // One huge string built without printing it.
  EXPECT_NE(render_error("{% set s = 'x' * 5000 %}", {}, small).problem().find("bytes"), std::string::npos);
  EXPECT_NE(render_error("{% set ns = namespace(s='ab') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}"
                         "{% endfor %}",
                         {}, small)
                .problem()
                .find("limit"),
            std::string::npos);
  // Loops: nested, and a range too large to build.
  EXPECT_NE(render_error("{% for i in range(30) %}{% for j in range(30) %}{% endfor %}{% endfor %}", {}, small)
                .problem()
                .find("loops more than 500"),
            std::string::npos);
  EXPECT_NE(render_error("{{ range(1000000000000) | length }}").problem().find("loops more than"), std::string::npos);
  // Recursion through macros.
  EXPECT_NE(render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", {}, small).problem().find("deep"),
            std::string::npos);
  // Nesting the parser would otherwise follow down the stack.
  const std::string parens = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_NE(syntax_error(parens).problem().find("nested too deeply"), std::string::npos);
  EXPECT_NE(syntax_error("{{ " + std::string(3000, '-') + "1 }}").problem().find("nested too deeply"),
            std::string::npos);
  std::string chain = "{{ 1";
  for (int i = 0; i < 5000; ++i) chain += " + 1";
  EXPECT_NE(syntax_error(chain + " }}").problem().find("nested too deeply"), std::string::npos);
  std::string blocks;
  for (int i = 0; i < 2000; ++i) blocks += "{% if true %}";
  EXPECT_NE(syntax_error(blocks).problem().find("nested too deeply"), std::string::npos);
  // Data nested without end, shared sublists that print or compare exponentially large, empty repetition.
  EXPECT_NE(render_error("{% set ns = namespace(x=[]) %}{% for i in range(600) %}{% set ns.x = [ns.x] %}{% endfor %}")
                .problem()
                .find("nested more than 512"),
            std::string::npos);
  const std::string doubling =
      "{% set ns = namespace(x=[1], y=[1]) %}{% for i in range(40) %}{% set ns.x = [ns.x, ns.x] %}"
      "{% set ns.y = [ns.y, ns.y] %}{% endfor %}";
  EXPECT_NE(render_error(doubling + "{{ ns.x | tojson | length }}").problem().find("limit"), std::string::npos);
  EXPECT_NE(render_error(doubling + "{{ ns.x | string | length }}").problem().find("limit"), std::string::npos);
  EXPECT_NE(render_error(doubling + "{{ ns.x == ns.y }}").problem().find("limit"), std::string::npos);
  EXPECT_EQ(render(doubling + "{{ ns.x == ns.x }}"), "True");  // the same object: no walk
  EXPECT_EQ(render("[{{ '' * 1000000000000 }}]"), "[]");
  EXPECT_NE(render_error("{{ 'ab' * 1000000000000 }}").problem().find("limit"), std::string::npos);
  EXPECT_NE(render_error("{{ 3 ** 1000000000000 }}").problem().find("overflow"), std::string::npos);
  EXPECT_NE(render_error("{{ ('x' * 1000000).replace('', 'y' * 100) }}").problem().find("limit"), std::string::npos);
  EXPECT_NE(render_error("{{ (',' * 2000000).split(',') | length }}").problem().find("limit"), std::string::npos);
  EXPECT_NE(render_error("{% for c in 'x' * 2000000 %}{% endfor %}").problem().find("limit"), std::string::npos);
  // Within the limits the same constructs work.
  EXPECT_EQ(render("{% for i in range(3) %}{% for j in range(2) %}.{% endfor %}{% endfor %}", {}, small), "......");
}

TEST(Jinja, StrftimeNowUsesThePinnedClock) {
  RenderOptions opt;
  opt.now = fixed_now();
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y') }}", {}, opt), "05 Mar 2025");
  // Unpinned it is today: at least a well-formed date.
  const std::string today = render("{{ strftime_now('%Y-%m-%d') }}");
  EXPECT_EQ(today.size(), 10u) << today;
}

TEST(Jinja, ValuesFromJsonKeepOrderAndTypes) {
  const auto j = nlohmann::ordered_json::parse(R"({"z": 1, "a": [true, null, 2.5, "s"], "m": {"k": "v"}})");
  const Value v = Value::from_json(j);
  EXPECT_EQ(to_json(v), R"({"z": 1, "a": [true, null, 2.5, "s"], "m": {"k": "v"}})");
  EXPECT_EQ(to_str(v), "{'z': 1, 'a': [True, None, 2.5, 's'], 'm': {'k': 'v'}}");
  Dict vars;
  vars.set("d", v);
  EXPECT_EQ(render("{% for k in d %}{{ k }}{% endfor %}", vars), "zam");
}

}  // namespace

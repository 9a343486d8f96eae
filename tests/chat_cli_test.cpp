// `specscope-cli run/compare --chat --system TEXT` and `--messages FILE.json`: the conversation reaches the
// model's chat template (the prompt is exactly the template's rendering of it, in tokens), and a bad messages
// file is a one-line error naming the file, exit code 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/chat_template.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/test_support.h"

using namespace specscope;

namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::string base_model() { return test::fixture("../../assets/models/base"); }

std::string write(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// The prompt tokens the run's JSON summary reports.
int prompt_tokens(const test::CommandResult& r) {
  int n = -1;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("{", 0) != 0) continue;
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("type", "") == "summary") n = j.at("prompt_tokens").get<int>();
  }
  return n;
}

// How many tokens the model's own template makes of `messages` (encoded as the generator encodes it).
int template_tokens(const std::vector<ChatMessage>& messages) {
  auto tmpl = ChatTemplate::from_tokenizer_config(base_model());
  auto tok = Tokenizer::from_files(base_model() + "/tokenizer.json", base_model() + "/tokenizer_config.json");
  return int(tok->encode(tmpl->render(messages, true), !tmpl->renders_bos()).size());
}

void expect_one_line_exit_2(const test::CommandResult& r, const std::string& names) {
  EXPECT_EQ(r.exit_code, 2) << r.out;
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  EXPECT_EQ(out.find('\n'), std::string::npos) << r.out;
  EXPECT_NE(out.find(names), std::string::npos) << r.out;
}

TEST(ChatCli, SystemPromptReachesTheTemplate) {
  const std::string run = "run --model " + quoted(base_model()) + " --max-tokens 1 --no-record --json ";
  auto plain = test::run_cli(run + "--chat --prompt Hi");
  auto with_system = test::run_cli(run + "--system 'Answer in one word.' --prompt Hi");  // --system implies --chat
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  ASSERT_EQ(with_system.exit_code, 0) << with_system.out;
  EXPECT_EQ(prompt_tokens(plain), template_tokens({{"user", "Hi"}}));
  EXPECT_EQ(prompt_tokens(with_system), template_tokens({{"system", "Answer in one word."}, {"user", "Hi"}}));
  EXPECT_GT(prompt_tokens(with_system), prompt_tokens(plain));
}

TEST(ChatCli, MessagesFileIsTheConversation) {
  const std::vector<ChatMessage> conv = {
      {"system", "You are terse."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Name a colour."}};
  nlohmann::json j = nlohmann::json::array();
  for (const auto& m : conv) j.push_back({{"role", m.role}, {"content", m.content}, {"name", "ignored"}});
  const std::string file = write("chat_cli_messages.json", j.dump());
  auto r = test::run_cli("run --model " + quoted(base_model()) + " --messages " + quoted(file) +
                         " --max-tokens 1 --no-record --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(prompt_tokens(r), template_tokens(conv));

  // --system before a file without a system message.
  const std::string no_sys = write("chat_cli_no_system.json", R"([{"role": "user", "content": "Hi"}])");
  auto s = test::run_cli("run --model " + quoted(base_model()) + " --messages " + quoted(no_sys) +
                         " --system 'Be kind.' --max-tokens 1 --no-record --json");
  ASSERT_EQ(s.exit_code, 0) << s.out;
  EXPECT_EQ(prompt_tokens(s), template_tokens({{"system", "Be kind."}, {"user", "Hi"}}));

  // compare shares the options.
  auto c = test::run_cli("compare --model " + quoted(base_model()) + " --methods vanilla --system 'Be kind.'" +
                         " --prompt Hi --max-tokens 1 --no-record");
  EXPECT_EQ(c.exit_code, 0) << c.out;
}

TEST(ChatCli, BadMessagesFilesAreOneLineErrors) {
  const std::string run = "run --model " + quoted(base_model()) + " --max-tokens 1 --no-record --messages ";
  const struct {
    const char* name;
    const char* text;
    const char* says;
  } cases[] = {
      {"chat_cli_bad_json.json", "[{\"role\": \"user\",", "invalid JSON"},
      {"chat_cli_not_list.json", R"({"role": "user", "content": "Hi"})", "JSON list"},
      {"chat_cli_empty.json", "[]", "no messages"},
      {"chat_cli_no_content.json", R"([{"role": "user"}])", "message 1 has no string \"content\""},
      {"chat_cli_parts.json", R"([{"role": "user", "content": [{"type": "text", "text": "Hi"}]}])", "content"},
      {"chat_cli_no_role.json", R"([{"role": "user", "content": "a"}, {"content": "b"}])", "message 2 has no"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = write(c.name, c.text);
    auto r = test::run_cli(run + quoted(path));
    expect_one_line_exit_2(r, c.name);
    EXPECT_NE(r.out.find(c.says), std::string::npos) << r.out;
  }
  expect_one_line_exit_2(test::run_cli(run + quoted(testing::TempDir() + "chat_cli_missing.json")),
                         "chat_cli_missing.json");
  const std::string ok =
      write("chat_cli_ok.json", R"([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}])");
  expect_one_line_exit_2(test::run_cli(run + quoted(ok) + " --prompt Hi"), "--messages");
  expect_one_line_exit_2(test::run_cli(run + quoted(ok) + " --system Other"), "system message");
}

// --chat-template-kwargs: the variables reach the model's own template (Qwen3's, on the tiny Qwen3 fixture), as
// apply_chat_template's keyword arguments do; anything but a JSON object is a one-line error naming the flag.
TEST(ChatCli, TemplateKwargsReachTheTemplate) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(testing::TempDir()) / "chat_cli_qwen3";
  fs::remove_all(dir);
  fs::copy(test::fixture("models/qwen3_f32"), dir);
  // A chat_template.jinja beside the config is the model's template (as transformers saves it).
  fs::copy_file(test::fixture("chat_templates/published/qwen3.jinja"), dir / "chat_template.jinja");
  auto tmpl = ChatTemplate::from_tokenizer_config(dir.string());
  ASSERT_TRUE(tmpl->interpreted());
  auto tok = Tokenizer::from_files((dir / "tokenizer.json").string(), (dir / "tokenizer_config.json").string());
  auto tokens = [&](const ChatTemplate& t) { return int(tok->encode(t.render({{"user", "Hi"}}, true), false).size()); };
  const int thinking = tokens(*tmpl);
  tmpl->set_variable("enable_thinking", false);
  const int not_thinking = tokens(*tmpl);
  ASSERT_GT(not_thinking, thinking) << "Qwen3's template closes an empty think block without thinking";

  const std::string run = "run --model " + quoted(dir.string()) + " --prompt Hi --max-tokens 1 --no-record --json ";
  auto plain = test::run_cli(run + "--chat");
  auto kwargs = test::run_cli(run + "--chat-template-kwargs '{\"enable_thinking\": false}'");  // implies --chat
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  ASSERT_EQ(kwargs.exit_code, 0) << kwargs.out;
  EXPECT_EQ(prompt_tokens(plain), thinking);
  EXPECT_EQ(prompt_tokens(kwargs), not_thinking);
  // compare reads it the same way (read_chat_input; its runs go through the same runner as run's).
  const std::string compare = "compare --model " + quoted(dir.string()) +
                              " --methods vanilla,pld --prompt Hi --max-tokens 1 --no-record --json ";
  auto compared = test::run_cli(compare + "--chat-template-kwargs '{\"enable_thinking\": false}'");
  ASSERT_EQ(compared.exit_code, 0) << compared.out;

  for (const char* bad : {"'{\"enable_thinking\": fals'", "'[1, 2]'", "'true'"}) {
    expect_one_line_exit_2(test::run_cli(run + "--chat-template-kwargs " + bad), "--chat-template-kwargs");
    expect_one_line_exit_2(test::run_cli(compare + "--chat-template-kwargs " + bad), "--chat-template-kwargs");
  }
}

// A reasoning model's reply from `run`: the thinking on stderr after "thinking: ", the answer on stdout, so a pipe
// reads the answer. The tiny Qwen3 fixture with DeepSeek-R1's template, whose generation prompt opens the think
// block: its (random) reply is all reasoning. With Qwen3's own template, whose prompt does not, it is all answer.
// Also: a messages file's reasoning fields are read, and bad ones are one-line errors.
TEST(ChatCli, ReasoningGoesToStderrAndTheAnswerToStdout) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(testing::TempDir()) / "chat_cli_reasoning";
  fs::remove_all(dir);
  fs::copy(test::fixture("models/qwen3_f32"), dir);
  const std::string run = "run --model " + quoted(dir.string()) + " --chat --prompt Hi --max-tokens 6 --no-record";
  auto first_token_text = [&] {
    auto r = test::run_cli(run + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("bonus_text")) return j.at("bonus_text").get<std::string>();
    }
    return std::string();
  };
  // stdout alone: stderr goes to a file ("#" leaves out run_cli's own 2>&1).
  const std::string err = testing::TempDir() + "chat_cli_reasoning_stderr.txt";
  auto read_err = [&] {
    std::ifstream in(err);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };

  fs::copy_file(test::fixture("chat_templates/published/deepseek-r1-distill.jinja"), dir / "chat_template.jinja");
  std::string first = first_token_text();
  while (!first.empty() && first.front() == '\n') first.erase(0, 1);  // a part's leading newlines are dropped
  ASSERT_FALSE(first.empty());
  auto r = test::run_cli(run + " 2>" + quoted(err) + " #");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out, "\n") << "the answer is empty: the whole reply is reasoning";
  EXPECT_EQ(read_err().find("thinking: " + first), 0u) << read_err();

  fs::remove(dir / "chat_template.jinja");
  fs::copy_file(test::fixture("chat_templates/published/qwen3.jinja"), dir / "chat_template.jinja");
  first = first_token_text();
  r = test::run_cli(run + " 2>" + quoted(err) + " #");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  if (first.find("<think>") == std::string::npos) EXPECT_EQ(r.out.find(first), 0u) << r.out;
  // No thought on stderr (the footer's "[thinking: 0 tokens ..." figures are not one).
  EXPECT_NE(read_err().rfind("thinking: ", 0), 0u) << read_err();
  EXPECT_EQ(read_err().find("\nthinking: "), std::string::npos) << read_err();
  EXPECT_NE(read_err().find("[thinking: 0 tokens"), std::string::npos) << read_err();

  // Reasoning fields in a messages file: read under either name; not a string, or two that differ, refused.
  const std::string ok = write("chat_cli_reasoning_ok.json",
                               R"([{"role": "user", "content": "2+2?"},
                                   {"role": "assistant", "content": "4", "thinking": "Add them.", "reasoning_content": null},
                                   {"role": "user", "content": "3+3?"}])");
  auto ok_run = test::run_cli("run --model " + quoted(dir.string()) + " --messages " + quoted(ok) +
                              " --max-tokens 1 --no-record --json");
  EXPECT_EQ(ok_run.exit_code, 0) << ok_run.out;
  const std::string not_string =
      write("chat_cli_reasoning_bad.json", R"([{"role": "assistant", "content": "4", "thinking": 4}])");
  expect_one_line_exit_2(test::run_cli("run --model " + quoted(dir.string()) + " --messages " + quoted(not_string) +
                                       " --max-tokens 1 --no-record"),
                         "chat_cli_reasoning_bad.json");
  const std::string differ = write("chat_cli_reasoning_differ.json",
                                   R"([{"role": "assistant", "content": "4", "thinking": "a", "reasoning_content": "b"}])");
  auto d = test::run_cli("run --model " + quoted(dir.string()) + " --messages " + quoted(differ) +
                         " --max-tokens 1 --no-record");
  expect_one_line_exit_2(d, "chat_cli_reasoning_differ.json");
  EXPECT_NE(d.out.find("differ"), std::string::npos) << d.out;
}

}  // namespace

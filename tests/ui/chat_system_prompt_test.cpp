// The app's system prompt (Settings → System prompt): saved with the other settings, and put before the
// conversation every time the chat asks the model (send and regenerate), without entering the transcript. And its
// neighbour, Template variables, saved and loaded the same way.
#include <gtest/gtest.h>

#include <QApplication>
#include <QSettings>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

#include "ui/views/chat_view.h"
#include "ui/views/settings_view.h"

using namespace specscope;
using namespace specscope::ui;

namespace {

QApplication& app() {
  static int argc = 1;
  static char name[] = "chat_system_prompt_test";
  static char* argv[] = {name, nullptr};
  static QApplication* a = [] {
    setenv("QT_QPA_PLATFORM", "offscreen", 0);
    // Settings of this process's own: ctest runs each of these tests as a process of its own, two at a time, and
    // with one shared settings file another test's save landed between this one's save and load (a clean-clone CI
    // run, 2026-12-07).
    const std::string config = testing::TempDir() + "chat_system_prompt_test_" + std::to_string(getpid());
    setenv("XDG_CONFIG_HOME", config.c_str(), 1);
    auto* q = new QApplication(argc, argv);
    QApplication::setOrganizationName("SpecScopeTest");  // keep the user's QSettings out of it
    QApplication::setApplicationName("ChatSystemPromptTest");
    return q;
  }();
  return *a;
}

// What the chat asks for on Send with `system` set in Settings.
std::vector<ChatMessage> sent_with(const QString& system) {
  app();
  SettingsView settings;
  AppSettings a = settings.settings();
  a.system_prompt = system;
  settings.setSettings(a);
  settings.save();
  EXPECT_EQ(settings.settings().system_prompt, system);

  ChatView chat;
  std::vector<ChatMessage> asked;
  QObject::connect(&chat, &ChatView::generateRequested, [&](const std::vector<ChatMessage>& c) { asked = c; });
  chat.setInput("Hi");
  chat.send();
  EXPECT_EQ(chat.conversation().size(), 1u);  // the transcript holds only what was said
  return asked;
}

TEST(ChatSystemPrompt, GoesBeforeTheConversation) {
  const auto asked = sent_with("Answer in French.");
  ASSERT_EQ(asked.size(), 2u);
  EXPECT_EQ(asked[0].role, "system");
  EXPECT_EQ(asked[0].content, "Answer in French.");
  EXPECT_EQ(asked[1].role, "user");
  EXPECT_EQ(asked[1].content, "Hi");
  QSettings q;
  EXPECT_EQ(q.value("system_prompt").toString(), "Answer in French.");
}

// Settings → Template variables: kept as typed (a job parses it, runs::parse_template_kwargs) and reloaded.
TEST(ChatSystemPrompt, TemplateVariablesAreSavedAndLoaded) {
  app();
  const QString kwargs = R"({"enable_thinking": false})";
  {
    SettingsView settings;
    AppSettings a = settings.settings();
    a.template_kwargs = kwargs;
    settings.setSettings(a);
    settings.save();
  }
  EXPECT_EQ(QSettings().value("template_kwargs").toString(), kwargs);
  SettingsView reloaded;
  reloaded.load();
  EXPECT_EQ(reloaded.settings().template_kwargs, kwargs);
}

TEST(ChatSystemPrompt, NoneMeansNoSystemMessage) {
  const auto asked = sent_with("");
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].role, "user");
}

}  // namespace

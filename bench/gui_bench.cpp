// gui_bench: the desktop app's speed bars, measured (run under Xvfb: see the README's "Session store and
// desktop app" table for the commands).
//  1. inspector: frames/s of the tree inspector when a new 60-node tree arrives every frame (a step per frame,
//     the worst case for a live run), drawn synchronously with repaint() so every frame is really rendered;
//  2. live-cost: what drawing a run live costs the decoder: the same chat generation in the main window,
//     alternately drawn live (every step to the chat and the inspector) and drawn only at the end, medians of
//     decode tokens/s over alternated pairs;
//  3. streaming: a long chat answer as the user sees it: how many different transcript texts were painted per
//     second of generation, how long the first text took and the longest wait between two, and the chat's
//     tokens/s against `specscope-cli run` on the same prompt, method and length, and against the same chat
//     not drawn until it ends (View > Draw runs live off: what the app costs apart from drawing); the three
//     alternated, medians.
// --busy N runs N `yes > /dev/null` beside every section (issue 18: "both cores busy with another process").
// Writes JSON (--out FILE) with the machine's CPU name; prints a summary, its first line the command.
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QSignalSpy>
#include <QTest>
#include <QThread>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <unistd.h>

#include "engine/util/median.h"
#include "engine/methods/speculative_generator.h"
#include "engine/model/default_model.h"
#include "engine/model/model.h"
#include "engine/util/cpu_info.h"
#include "ui/engine/engine_worker.h"
#include "ui/inspector/tree_inspector_widget.h"
#include "ui/main/gl_setup.h"
#include "ui/main/main_window.h"
#include "ui/views/chat_view.h"
#include "ui/views/settings_view.h"
#include "ui/views/token_text_view.h"

using namespace specscope;

namespace {

// An EAGLE-2-sized tree: 60 nodes over 6 depths, a few accepted, confidences varying with the step.
StepRecord tree_step(int index) {
  StepRecord r;
  r.step = index;
  r.method = "eagle2";
  r.root_token = 11;
  for (int i = 0; i < 60; ++i) {
    DraftNode n;
    n.id = i;
    n.parent = i < 10 ? -1 : (i - 10) / 5;
    n.depth = i < 10 ? 1 : (n.parent < 10 ? 2 : 3);
    n.token = (index * 13 + i) % 4000;
    n.text = " t" + std::to_string(n.token);
    n.draft_prob = float((i * 7 + index) % 100) / 100.f;
    n.target_prob = 0.5f;
    n.decision = i == 0 || i == 10 ? NodeDecision::Accepted : (i < 20 ? NodeDecision::Rejected : NodeDecision::NotReached);
    r.nodes.push_back(n);
  }
  r.accepted_path = {0, 10};
  r.bonus_token = 5;
  r.bonus_text = " b";
  r.committed = {r.nodes[0].token, r.nodes[10].token, 5};
  r.timings = {200, 800, 30, 10};
  return r;
}

struct Options {
  std::string out_path;
  int repeat = 5;                 // live-cost pairs
  std::string method = "sps";     // live-cost method
  std::set<std::string> sections = {"inspector", "live-cost", "streaming"};
  int busy = 0;                   // `yes > /dev/null` processes beside the measurements
  std::string cli;                // specscope-cli, for the streaming section's yardstick
  std::string stream_method = "eagle2";  // the app's default method
  int stream_tokens = 256;        // the app's default max tokens
  int stream_repeat = 5;
  // A question the default base answers at length (it reaches 256 tokens before its end of sequence).
  std::string stream_prompt = "Define these words: harbor, anchor, ship, sail, port, dock, crane, wave.";
};

nlohmann::json bench_inspector() {
  ui::TreeInspectorWidget w;
  w.resize(1200, 700);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) std::fprintf(stderr, "window not exposed\n");
  for (int i = 0; i < 10; ++i) w.appendStep(tree_step(i)), w.repaint();  // warm-up: fonts, buffers
  QElapsedTimer t;
  t.start();
  long long frames0 = w.framesDrawn();
  int i = 10;
  while (t.elapsed() < 5000) {
    w.appendStep(tree_step(i++));
    w.repaint();
    QApplication::processEvents();
  }
  const double fps = double(w.framesDrawn() - frames0) / (double(t.elapsed()) / 1000.0);
  std::printf("inspector: %.1f frames/s with a new 60-node tree every frame (%d nodes drawn)\n", fps,
              w.nodesDrawnLastFrame());
  return {{"frames_per_second", fps}, {"nodes_per_tree", 60}, {"size", "1200x700"},
          {"nodes_drawn_last_frame", w.nodesDrawnLastFrame()}};
}

void configure(ui::MainWindow& w, const std::string& method, int max_tokens) {
  ui::AppSettings a = ui::SettingsView::defaults();
  a.method = QString::fromStdString(method);
  a.max_tokens = max_tokens;
  a.record = false;
  w.settingsView()->setSettings(a);
}

nlohmann::json bench_live_cost(const Options& o) {
  const std::string prompt = "What does the word harbor mean?";
  ui::MainWindow w;
  configure(w, o.method, 128);
  w.resize(1400, 860);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) std::fprintf(stderr, "window not exposed\n");
  std::vector<double> gui_tps, plain_tps;
  // The same generation through the same worker thread, alternately drawn live (chat, inspector) and not
  // drawn until it ends (View > Draw runs live off): the difference is what drawing costs the decoder.
  auto run_once = [&](bool live) {
    QTest::qWait(700);  // let the previous run's last frames finish rendering (llvmpipe threads) first
    w.setLiveDrawing(live);
    QSignalSpy done(&w, &ui::MainWindow::jobDone);
    w.chat()->newChat();
    w.chat()->setInput(QString::fromStdString(prompt));
    w.chat()->send();
    done.wait(120000);
    return w.property("last_tokens_per_second").toDouble();  // the lane's own summary
  };
  for (int r = 0; r < o.repeat + 1; ++r) {
    const double tps = run_once(false), gui = run_once(true);
    if (r > 0) {  // the first pair warms caches and the allocator
      plain_tps.push_back(tps);
      gui_tps.push_back(gui);
    }
    std::printf("[gui_bench] pair %d/%d: not drawn %.1f tok/s, drawn live %.1f tok/s\n", r + 1, o.repeat + 1, tps, gui);
  }
  const double p = median(plain_tps), g = median(gui_tps);
  std::printf("decode (%s, 128 tokens): %.1f tok/s not drawn, %.1f tok/s drawn live: cost %.2f%%\n", o.method.c_str(),
              p, g, p > 0 ? 100.0 * (p - g) / p : 0);
  return {{"method", o.method},
          {"max_tokens", 128},
          {"tokens_per_second_not_drawn", p},
          {"tokens_per_second_drawn_live", g},
          {"not_drawn_runs", plain_tps},
          {"drawn_live_runs", gui_tps},
          {"visualization_cost_percent", p > 0 ? 100.0 * (p - g) / p : 0}};
}

// One `specscope-cli run` of the streaming prompt: its summary's tokens/s (the runner's own figure, as the
// chat's), or 0 when it failed.
double cli_tokens_per_second(const Options& o) {
  QProcess p;
  p.start(QString::fromStdString(o.cli),
          {"run", "--chat", "--no-record", "--json", "--method", QString::fromStdString(o.stream_method), "--max-tokens",
           QString::number(o.stream_tokens), "--prompt", QString::fromStdString(o.stream_prompt)});
  if (!p.waitForFinished(300000) || p.exitCode() != 0) {
    std::fprintf(stderr, "[gui_bench] %s failed: %s\n", o.cli.c_str(), p.readAllStandardError().constData());
    return 0;
  }
  // Step lines first, the summary last.
  for (const QByteArray& line : p.readAllStandardOutput().split('\n')) {
    const auto j = nlohmann::json::parse(line.toStdString(), nullptr, false);
    if (j.is_object() && j.contains("tokens_per_second") && j.value("type", "") != "step") return j["tokens_per_second"];
  }
  return 0;
}

// CPU time of this process's threads so far, in ms, by kind: the GUI thread, Mesa's software rasterizer
// (llvmpipe-N), and the rest (the engine worker and its thread team).
struct ThreadCpu {
  double gui = 0, raster = 0, rest = 0;
};

ThreadCpu thread_cpu() {
  ThreadCpu t;
  static const double tick_ms = 1000.0 / double(sysconf(_SC_CLK_TCK));
  const QString self = QString::number(getpid());
  for (const QFileInfo& task : QDir("/proc/self/task").entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    QFile comm(task.filePath() + "/comm"), stat(task.filePath() + "/stat");
    if (!comm.open(QIODevice::ReadOnly) || !stat.open(QIODevice::ReadOnly)) continue;
    const QString name = QString::fromUtf8(comm.readAll()).trimmed();
    const QByteArray line = stat.readAll();
    // Fields after the parenthesised name: utime is field 14, stime 15.
    const QList<QByteArray> f = line.mid(line.lastIndexOf(')') + 2).split(' ');
    if (f.size() < 13) continue;
    const double ms = double(f[11].toLongLong() + f[12].toLongLong()) * tick_ms;
    if (task.fileName() == self) t.gui += ms;
    else if (name.startsWith("llvmpipe")) t.raster += ms;
    else t.rest += ms;
  }
  return t;
}

struct StreamRun {
  double tokens_per_second = 0;  // the lane's summary, as the CLI's
  double seconds = 0;            // send to the job's end, wall clock
  int tokens = 0;
  int steps = 0;                 // the run's steps: no more different texts than that can be painted
  int states = 0;                // different transcript texts painted between send and the job's end
  double first_text_ms = -1;     // send to the first painted answer text
  double longest_wait_ms = 0;    // between two painted texts (or send and the first)
  ThreadCpu cpu;                 // used during the run, ms
};

StreamRun stream_once(ui::MainWindow& w, const Options& o, bool live) {
  w.setLiveDrawing(live);
  auto* transcript = w.chat()->findChild<ui::TokenTextView*>("chatTranscript");
  w.chat()->newChat();
  QTest::qWait(300);  // the previous answer's last frames (llvmpipe threads) are not this one's cost
  std::vector<double> painted;  // ms after send
  QElapsedTimer clock;
  bool running = false;
  const auto conn = QObject::connect(transcript, &ui::TokenTextView::textStateDrawn, [&] {
    if (running) painted.push_back(double(clock.nsecsElapsed()) / 1e6);
  });
  QSignalSpy done(&w, &ui::MainWindow::jobDone);
  w.chat()->setInput(QString::fromStdString(o.stream_prompt));
  const ThreadCpu cpu0 = thread_cpu();
  clock.start();
  running = true;
  w.chat()->send();
  // The question and "Model:" are painted before the answer's first token: that state is not streaming.
  QApplication::processEvents();
  done.wait(300000);
  StreamRun r;
  r.seconds = double(clock.nsecsElapsed()) / 1e9;
  const ThreadCpu cpu1 = thread_cpu();
  r.cpu = {cpu1.gui - cpu0.gui, cpu1.raster - cpu0.raster, cpu1.rest - cpu0.rest};
  running = false;
  QObject::disconnect(conn);
  r.tokens_per_second = w.property("last_tokens_per_second").toDouble();
  r.tokens = int(w.traces().lane(0).tokens());
  r.steps = int(w.traces().lane(0).steps.size());
  // The first painted state that holds answer text: the states before it showed the question only.
  const double question_ms = painted.empty() ? 0 : painted.front();
  double last = 0;
  for (double t : painted) {
    if (t <= question_ms) continue;
    if (r.first_text_ms < 0) r.first_text_ms = t;
    r.longest_wait_ms = std::max(r.longest_wait_ms, t - last);
    last = t;
    ++r.states;
  }
  r.longest_wait_ms = std::max(r.longest_wait_ms, r.seconds * 1e3 - last);
  return r;
}

nlohmann::json bench_streaming(const Options& o) {
  ui::MainWindow w;
  configure(w, o.stream_method, o.stream_tokens);
  w.resize(1400, 860);
  w.show();
  if (!QTest::qWaitForWindowExposed(&w)) std::fprintf(stderr, "window not exposed\n");
  std::vector<double> chat_tps, cli_tps, undrawn_tps, rates, first, waits;
  nlohmann::json runs = nlohmann::json::array();
  for (int r = 0; r < o.stream_repeat + 1; ++r) {
    // Alternated, so both see the same machine; the first pair warms caches, the allocator and the model load.
    const double cli = cli_tokens_per_second(o);
    const StreamRun s = stream_once(w, o, true);
    const double undrawn = stream_once(w, o, false).tokens_per_second;
    const double rate = s.seconds > 0 ? s.states / s.seconds : 0;
    std::printf("[gui_bench] stream %d/%d: cli %.1f tok/s, chat not drawn %.1f tok/s, chat %.1f tok/s, %d tokens (%d steps) in %.2f s, %d texts "
                "painted (%.1f/s), first after %.0f ms, longest wait %.0f ms; cpu ms: gui %.0f, llvmpipe %.0f, engine %.0f\n",
                r + 1, o.stream_repeat + 1, cli, undrawn, s.tokens_per_second, s.tokens, s.steps, s.seconds, s.states, rate,
                s.first_text_ms, s.longest_wait_ms, s.cpu.gui, s.cpu.raster, s.cpu.rest);
    if (r == 0) continue;
    cli_tps.push_back(cli);
    chat_tps.push_back(s.tokens_per_second);
    undrawn_tps.push_back(undrawn);
    rates.push_back(rate);
    first.push_back(s.first_text_ms);
    waits.push_back(s.longest_wait_ms);
    runs.push_back({{"cli_tokens_per_second", cli}, {"chat_tokens_per_second", s.tokens_per_second},
                    {"chat_not_drawn_tokens_per_second", undrawn},
                    {"tokens", s.tokens}, {"steps", s.steps}, {"seconds", s.seconds}, {"texts_painted", s.states},
                    {"texts_per_second", rate}, {"first_text_ms", s.first_text_ms},
                    {"longest_wait_ms", s.longest_wait_ms}, {"cpu_ms_gui_thread", s.cpu.gui},
                    {"cpu_ms_llvmpipe", s.cpu.raster}, {"cpu_ms_engine", s.cpu.rest}});
  }
  const double c = median(cli_tps), g = median(chat_tps), u = median(undrawn_tps);
  std::printf("streaming (%s, %d tokens): %.1f texts painted per second of generation (median), first text after "
              "%.0f ms, longest wait %.0f ms; chat %.1f tok/s (not drawn %.1f) vs cli %.1f tok/s: %.0f%% (%.0f%%)\n",
              o.stream_method.c_str(), o.stream_tokens, median(rates), median(first), median(waits), g, u, c,
              c > 0 ? 100.0 * g / c : 0, c > 0 ? 100.0 * u / c : 0);
  return {{"method", o.stream_method}, {"max_tokens", o.stream_tokens}, {"prompt", o.stream_prompt},
          {"texts_painted_per_second", median(rates)}, {"first_text_ms", median(first)},
          {"longest_wait_ms", median(waits)}, {"chat_tokens_per_second", g}, {"cli_tokens_per_second", c},
          {"chat_not_drawn_tokens_per_second", u}, {"chat_over_cli", c > 0 ? g / c : 0},
          {"chat_not_drawn_over_cli", c > 0 ? u / c : 0}, {"runs", runs}};
}

// `yes > /dev/null`, N times, for as long as the bench runs.
class BusyProcesses {
 public:
  explicit BusyProcesses(int n) {
    for (int i = 0; i < n; ++i) {
      auto p = std::make_unique<QProcess>();
      p->setStandardOutputFile(QProcess::nullDevice());
      p->start("yes", {});
      if (!p->waitForStarted()) std::fprintf(stderr, "[gui_bench] could not start yes\n");
      procs_.push_back(std::move(p));
    }
  }
  ~BusyProcesses() {
    for (auto& p : procs_) {
      p->kill();
      p->waitForFinished();
    }
  }

 private:
  std::vector<std::unique_ptr<QProcess>> procs_;
};

}  // namespace

int main(int argc, char** argv) {
  specscope::ui::set_opengl_defaults();
  QApplication app(argc, argv);
  QApplication::setOrganizationName("SpecScopeBench");
  Options o;
  o.cli = (QFileInfo(QCoreApplication::applicationDirPath() + "/../app/specscope-cli").absoluteFilePath()).toStdString();
  std::string command = argv[0];
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--out") o.out_path = v;
    else if (a == "--repeat") o.repeat = std::stoi(v);
    else if (a == "--method") o.method = v;
    else if (a == "--busy") o.busy = std::stoi(v);
    else if (a == "--cli") o.cli = v;
    else if (a == "--stream-method") o.stream_method = v;
    else if (a == "--stream-tokens") o.stream_tokens = std::stoi(v);
    else if (a == "--stream-repeat") o.stream_repeat = std::stoi(v);
    else if (a == "--stream-prompt") o.stream_prompt = v;
    else if (a == "--sections") {
      o.sections.clear();
      for (const QString& s : QString::fromStdString(v).split(',', Qt::SkipEmptyParts)) o.sections.insert(s.toStdString());
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  // The machine is shared: its load says how far from quiet "idle" was.
  auto loadavg = [] {
    QFile f("/proc/loadavg");
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()).section(' ', 0, 2).toStdString() : std::string("?");
  };
  std::printf("command: %s\ncpu: %s, %d busy processes beside it, load average at the start %s\n", command.c_str(),
              cpu_model_name().c_str(), o.busy, loadavg().c_str());
  nlohmann::json result = {{"cpu", cpu_model_name()}, {"platform", QApplication::platformName().toStdString()},
                           {"command", command}, {"busy_processes", o.busy}};
  BusyProcesses busy(o.busy);
  if (o.sections.count("inspector")) result["inspector"] = bench_inspector();
  if (o.sections.count("live-cost")) result["decode"] = bench_live_cost(o);
  if (o.sections.count("streaming")) result["streaming"] = bench_streaming(o);
  std::printf("load average at the end (%d busy processes included): %s\n", o.busy, loadavg().c_str());
  if (!o.out_path.empty()) std::ofstream(o.out_path) << result.dump(2) << "\n";
  return 0;
}

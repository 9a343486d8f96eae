// gui_bench: the desktop app's two speed bars, measured (run under Xvfb: see bench/README or README).
//  1. frames/s of the tree inspector when a new 60-node tree arrives every frame (a step per frame, the
//     worst case for a live run), drawn synchronously with repaint() so every frame is really rendered;
//  2. what drawing a run live costs the decoder: the same chat generation in the main window, alternately
//     drawn live (every step to the chat and the inspector) and drawn only at the end, medians of decode
//     tokens/s over alternated pairs.
// Writes JSON (--out FILE) with the machine's CPU name; prints a summary.
#include <QApplication>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTest>
#include <QThread>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

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

}  // namespace

int main(int argc, char** argv) {
  specscope::ui::set_opengl_defaults();
  QApplication app(argc, argv);
  QApplication::setOrganizationName("SpecScopeBench");
  std::string out_path;
  int repeat = 5;
  std::string method = "sps";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--out") out_path = argv[i + 1];
    else if (a == "--repeat") repeat = std::stoi(argv[i + 1]);
    else if (a == "--method") method = argv[i + 1];
  }
  nlohmann::json result = {{"cpu", cpu_model_name()}, {"platform", QApplication::platformName().toStdString()}};

  // 1. Inspector frames/s.
  {
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
    result["inspector"] = {{"frames_per_second", fps}, {"nodes_per_tree", 60}, {"size", "1200x700"},
                           {"nodes_drawn_last_frame", w.nodesDrawnLastFrame()}};
    std::printf("inspector: %.1f frames/s with a new 60-node tree every frame (%d nodes drawn)\n", fps,
                w.nodesDrawnLastFrame());
  }

  // 2. Decode tokens/s with and without the window.
  {
    const std::string prompt = "What does the word harbor mean?";
    ui::MainWindow w;
    ui::AppSettings a = ui::SettingsView::defaults();
    a.method = QString::fromStdString(method);
    a.max_tokens = 128;
    a.record = false;
    w.settingsView()->setSettings(a);
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
    for (int r = 0; r < repeat + 1; ++r) {
      const double tps = run_once(false), gui = run_once(true);
      if (r > 0) {  // the first pair warms caches and the allocator
        plain_tps.push_back(tps);
        gui_tps.push_back(gui);
      }
      std::printf("[gui_bench] pair %d/%d: not drawn %.1f tok/s, drawn live %.1f tok/s\n", r + 1, repeat + 1, tps, gui);
    }
    const double p = median(plain_tps), g = median(gui_tps);
    result["decode"] = {{"method", method},
                        {"max_tokens", 128},
                        {"tokens_per_second_not_drawn", p},
                        {"tokens_per_second_drawn_live", g},
                        {"not_drawn_runs", plain_tps},
                        {"drawn_live_runs", gui_tps},
                        {"visualization_cost_percent", p > 0 ? 100.0 * (p - g) / p : 0}};
    std::printf("decode (%s, 128 tokens): %.1f tok/s not drawn, %.1f tok/s drawn live: cost %.2f%%\n", method.c_str(), p,
                g, p > 0 ? 100.0 * (p - g) / p : 0);
  }
  if (!out_path.empty()) std::ofstream(out_path) << result.dump(2) << "\n";
  return 0;
}

#pragma once
// Keeps live drawing within a share of one core while the engine runs. With software OpenGL (Mesa llvmpipe,
// the only GL many Linux desktops and every CI machine have) an inspector frame costs milliseconds of CPU on
// the cores the decoder uses, so a fixed frame rate costs a fixed share of decode speed. The budget instead
// spaces live frames so that the CPU the caller's clock counts since the run started (for the live trees:
// their frames' GUI-thread and rasterizer time, TreeInspectorWidget::renderCpuMs) stays under `budget` x the
// run's wall time: cheap frames (a GPU) come at the full frame rate, expensive ones less often, and never less
// often than the slowest pace. The last state is always drawn when the run ends, outside the budget.
// Pure arithmetic on times the caller measures, so it is tested without a window.
#include <cstdint>
#include <limits>

namespace specscope::ui {

class FrameBudget {
 public:
  // budget: the share of one core the counted CPU may use while a run is live (0.02 = 2%); min_interval_ms:
  // the fastest frame clock (66 ms = 15 Hz); max_interval_ms: the slowest, whatever the budget says (a live view
  // that waits for its share for seconds looks frozen).
  explicit FrameBudget(double budget = 0.02, double min_interval_ms = 66.0, double first_frame_estimate_ms = 15.0,
                       double max_interval_ms = std::numeric_limits<double>::infinity())
      : budget_(budget), min_interval_(min_interval_ms), max_interval_(max_interval_ms),
        estimate_(first_frame_estimate_ms) {}

  // A run starts: wall clock and GUI-thread CPU clock now, both in milliseconds.
  void start(double wall_ms, double cpu_ms);
  // A live frame was just drawn (or its drawing queued): cpu_ms is the GUI thread's CPU clock now. The CPU
  // the GUI used since the previous frame counts as that frame's cost.
  void frame_drawn(double wall_ms, double cpu_ms);
  // How long to wait from `wall_ms` before the next live frame.
  double next_delay_ms(double wall_ms, double cpu_ms) const;

  double budget() const { return budget_; }
  double frame_cost_estimate_ms() const { return estimate_; }

 private:
  double budget_, min_interval_, max_interval_, estimate_;
  double start_wall_ = 0, start_cpu_ = 0, last_cpu_ = 0, last_wall_ = 0;
  bool started_ = false;
};

// The calling thread's CPU time in milliseconds (CLOCK_THREAD_CPUTIME_ID).
double thread_cpu_ms();
// What drawing costs, for the GUI thread to call: its own CPU time plus that of Mesa's software rasterizer
// threads (llvmpipe renders on a pool of "llvmpipe-N" threads, one per core, which compete with the decoder).
// Those are read from /proc/self/task at clock-tick resolution.
double drawing_cpu_ms();
// The monotonic wall clock in milliseconds.
double wall_ms();

}  // namespace specscope::ui

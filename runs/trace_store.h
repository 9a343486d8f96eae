#pragma once
// The runs every view reads: one trace per lane, its StepRecords as they arrive (live) or as read from a
// session (replay), the text each step made visible, and the summary once the run is over. Plain data, no Qt
// (Tracy's split of data from UI): the app's views draw from this one store instead of keeping copies.
#include <optional>
#include <string>
#include <vector>

#include "engine/generate/reply_parts.h"
#include "engine/methods/step_record.h"

namespace specscope::runs {

struct RunTrace {
  std::string method;                 // e.g. "eagle2"
  std::string label;                  // the lane's label (unique in a race); method when empty
  std::string target;                 // the target model's path
  std::vector<StepRecord> steps;
  std::vector<std::string> pieces;    // pieces[i]: the text step i made visible
  std::vector<int> tokens_before;     // tokens_before[i]: generated tokens committed before step i
  std::optional<RunSummary> summary;  // set when the run finished
  bool greedy = true;
  ReplyShape reply;  // a reasoning model's reply: how it marks its thinking (the runner's, or as recorded)
  int tokens() const { return tokens_before.empty() ? 0 : tokens_before.back() + int(steps.back().committed.size()); }
};

class TraceStore {
 public:
  void reset(std::vector<RunTrace> lanes);  // steps, pieces and summaries are dropped
  void clear() { lanes_.clear(); }
  void append(int lane, const StepRecord& step, const std::string& piece);
  void finish(int lane, const RunSummary& summary);
  int lanes() const { return int(lanes_.size()); }
  const RunTrace& lane(int i) const { return lanes_.at(size_t(i)); }
  RunTrace& lane_mut(int i) { return lanes_.at(size_t(i)); }
  const std::vector<RunTrace>& all() const { return lanes_; }
  // The step of `lane` that committed its generated token number `token` (0-based), or -1 when it has not
  // been generated (yet). Lanes take different numbers of steps, so the position in the text is the axis a
  // cursor over several lanes shares.
  int step_at_token(int lane, int token) const;

 private:
  std::vector<RunTrace> lanes_;
};

}  // namespace specscope::runs

// compute_statistics: the numbers behind the statistics view, on hand-built steps whose answers are worked out
// below — the accepted-length histogram, acceptance by depth (the engine's summarize() definition), the
// calibration bins (only verified nodes with a draft probability count), throughput per step and the time split.
#include "runs/run_statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace specscope;
using specscope::runs::compute_statistics;
using specscope::runs::RunStatistics;

namespace {

DraftNode node(int id, int parent, int depth, float draft_prob, NodeDecision decision, bool pruned = false) {
  DraftNode n;
  n.id = id;
  n.parent = parent;
  n.depth = depth;
  n.token = 100 + id;
  n.draft_prob = draft_prob;
  n.decision = decision;
  n.pruned = pruned;
  return n;
}

StepTimings timings(int64_t draft, int64_t verify_forward, int64_t verify, int64_t kv) {
  StepTimings t;
  t.draft_us = draft;
  t.verify_forward_us = verify_forward;
  t.verify_us = verify;
  t.kv_update_us = kv;
  return t;
}

constexpr auto A = NodeDecision::Accepted;
constexpr auto R = NodeDecision::Rejected;
constexpr auto N = NodeDecision::NotReached;
constexpr auto P = NodeDecision::Pruned;

// Five steps:
//   prefill  root_token -1, a node and a large time: ignored by everything.
//   step 1   tree: depth 1 {0.85 A, 0.45 R}, depth 2 under the first {0.65 A, 0.25 R}, depth 3 under 0.65
//            {0.15 R, 0.95 pruned}, depth 4 under 0.15 {0.55 not reached}. Accepts 2; 3 tokens in 4000 us.
//   step 2   chain: 0.82 R, then 0.72 and 0.60 not reached. Accepts 0; 1 token in 2000 us.
//   step 3   no tree (a vanilla step): 1 token in 1000 us. Time and throughput only.
//   step 4   depth 1 {NaN A, 0.05 pruned (but marked Rejected), 1.0 R}, depth 2 {0.88 A}. Accepts 2; 3 tokens
//            and no time recorded (skipped for tokens/s).
std::vector<StepRecord> hand_steps() {
  std::vector<StepRecord> steps(5);
  auto& pre = steps[0];
  pre.step = 0;
  pre.root_token = -1;
  pre.nodes = {node(0, -1, 1, 0.05f, A)};
  pre.accepted_path = {0};
  pre.committed = {7};
  pre.timings = timings(9000, 90000, 0, 1000);

  auto& s1 = steps[1];
  s1.step = 1;
  s1.root_token = 7;
  s1.nodes = {node(0, -1, 1, 0.85f, A), node(1, -1, 1, 0.45f, R),  node(2, 0, 2, 0.65f, A),
              node(3, 0, 2, 0.25f, R),  node(4, 2, 3, 0.15f, R),   node(5, 2, 3, 0.95f, P, true),
              node(6, 4, 4, 0.55f, N)};
  s1.accepted_path = {0, 2};
  s1.committed = {100, 102, 9};
  s1.timings = timings(1000, 2000, 500, 500);

  auto& s2 = steps[2];
  s2.step = 2;
  s2.root_token = 9;
  s2.nodes = {node(0, -1, 1, 0.82f, R), node(1, 0, 2, 0.72f, N), node(2, 1, 3, 0.60f, N)};
  s2.committed = {11};
  s2.timings = timings(500, 1500, 0, 0);

  auto& s3 = steps[3];
  s3.step = 3;
  s3.root_token = 11;
  s3.committed = {12};
  s3.timings = timings(0, 1000, 0, 0);

  auto& s4 = steps[4];
  s4.step = 4;
  s4.root_token = 12;
  s4.nodes = {node(0, -1, 1, kNoValue, A), node(1, 0, 2, 0.88f, A), node(2, -1, 1, 0.05f, R, true),
              node(3, -1, 1, 1.0f, R)};
  s4.accepted_path = {0, 1};
  s4.committed = {100, 101, 13};
  return steps;
}

TEST(RunStatistics, AcceptedLengthHistogramCountsTreeStepsOnly) {
  const auto st = compute_statistics(hand_steps());
  // Steps 1 and 4 accepted 2, step 2 accepted 0; the prefill and the tree-less step 3 do not count.
  EXPECT_EQ(st.accepted_length_histogram, (std::vector<long>{1, 0, 2}));
}

TEST(RunStatistics, AcceptanceByDepthMatchesSummarize) {
  const auto steps = hand_steps();
  const auto st = compute_statistics(steps);
  // Depth 1 tried in steps 1, 2, 4 and passed in 1, 4; depth 2 tried in 1, 4 (step 2's was not reached) and
  // passed in both; depth 3 tried in step 1 and failed; depth 4 was never reached.
  const std::vector<double> expected{2.0 / 3.0, 1.0, 0.0, 0.0};
  ASSERT_EQ(st.acceptance_by_depth.size(), expected.size());
  for (size_t d = 0; d < expected.size(); ++d) EXPECT_DOUBLE_EQ(st.acceptance_by_depth[d], expected[d]) << d;
  EXPECT_EQ(st.acceptance_by_depth, summarize("sps", steps).acceptance_by_depth);
}

TEST(RunStatistics, CalibrationBinsCountOnlyVerifiedNodesWithAProbability) {
  const auto st = compute_statistics(hand_steps());
  ASSERT_EQ(st.calibration.size(), 10u);
  for (int b = 0; b < 10; ++b) {
    EXPECT_DOUBLE_EQ(st.calibration[b].lo, b / 10.0);
    EXPECT_DOUBLE_EQ(st.calibration[b].hi, (b + 1) / 10.0);
  }
  // Verified with a probability: 0.85 A, 0.45 R, 0.65 A, 0.25 R, 0.15 R (step 1), 0.82 R (step 2), 0.88 A,
  // 1.0 R (step 4). Left out: the pruned 0.95 and 0.05, the not-reached 0.55, 0.72, 0.60, the NaN, and the
  // prefill's 0.05.
  const long nodes[10] = {0, 1, 1, 0, 1, 0, 1, 0, 3, 1};
  const double acceptance[10] = {0, 0, 0, 0, 0, 0, 1, 0, 2.0 / 3.0, 0};
  for (int b = 0; b < 10; ++b) {
    EXPECT_EQ(st.calibration[b].nodes, nodes[b]) << "bin " << b;
    EXPECT_NEAR(st.calibration[b].acceptance, acceptance[b], 1e-12) << "bin " << b;
  }
  EXPECT_NEAR(st.calibration[8].mean_confidence, (0.85 + 0.82 + 0.88) / 3, 1e-6);
  EXPECT_NEAR(st.calibration[9].mean_confidence, 1.0, 1e-12);  // 1.0 falls in the last bin
  EXPECT_NEAR(st.calibration[1].mean_confidence, 0.15, 1e-6);
  EXPECT_EQ(st.calibration[0].mean_confidence, 0);  // empty bins stay zero
  long total = 0;
  for (const auto& b : st.calibration) total += b.nodes;
  EXPECT_EQ(total, 8);
}

TEST(RunStatistics, CalibrationWithOtherBinCounts) {
  const auto st = compute_statistics(hand_steps(), 4);
  ASSERT_EQ(st.calibration.size(), 4u);
  // [0, .25): 0.15 R; [.25, .5): 0.25 R, 0.45 R; [.5, .75): 0.65 A; [.75, 1]: 0.85 A, 0.82 R, 0.88 A, 1.0 R.
  EXPECT_EQ(st.calibration[0].nodes, 1);
  EXPECT_EQ(st.calibration[1].nodes, 2);
  EXPECT_EQ(st.calibration[2].nodes, 1);
  EXPECT_EQ(st.calibration[3].nodes, 4);
  EXPECT_DOUBLE_EQ(st.calibration[1].acceptance, 0.0);
  EXPECT_DOUBLE_EQ(st.calibration[2].acceptance, 1.0);
  EXPECT_DOUBLE_EQ(st.calibration[3].acceptance, 0.5);
  EXPECT_DOUBLE_EQ(st.calibration[3].lo, 0.75);
  EXPECT_DOUBLE_EQ(st.calibration[3].hi, 1.0);
}

TEST(RunStatistics, ThroughputPerStepSkipsThePrefillAndZeroTimeSteps) {
  const auto st = compute_statistics(hand_steps());
  // 3 tokens / 4 ms, 1 / 2 ms, 1 / 1 ms; step 4 has no time.
  ASSERT_EQ(st.tokens_per_second.size(), 3u);
  EXPECT_NEAR(st.tokens_per_second[0], 750.0, 1e-9);
  EXPECT_NEAR(st.tokens_per_second[1], 500.0, 1e-9);
  EXPECT_NEAR(st.tokens_per_second[2], 1000.0, 1e-9);
  ASSERT_EQ(st.cumulative_seconds.size(), 3u);
  EXPECT_NEAR(st.cumulative_seconds[0], 0.0, 1e-12);  // counted from the end of the first decoding step
  EXPECT_NEAR(st.cumulative_seconds[1], 0.002, 1e-12);
  EXPECT_NEAR(st.cumulative_seconds[2], 0.003, 1e-12);
}

TEST(RunStatistics, TimeSplitSumsToTheDecodingSteps) {
  const auto st = compute_statistics(hand_steps());
  EXPECT_NEAR(st.draft_seconds, 0.0015, 1e-12);   // 1000 + 500
  EXPECT_NEAR(st.verify_seconds, 0.0050, 1e-12);  // 2000 + 500 + 1500 + 1000 (forward + verify)
  EXPECT_NEAR(st.other_seconds, 0.0005, 1e-12);   // kv update
  int64_t total_us = 0;
  for (const auto& r : hand_steps())
    if (r.root_token >= 0) total_us += r.timings.total_us();
  EXPECT_NEAR(st.draft_seconds + st.verify_seconds + st.other_seconds, total_us * 1e-6, 1e-12);
}

TEST(RunStatistics, EmptyAndVanillaRuns) {
  const auto empty = compute_statistics({});
  EXPECT_TRUE(empty.accepted_length_histogram.empty());
  EXPECT_TRUE(empty.acceptance_by_depth.empty());
  EXPECT_TRUE(empty.tokens_per_second.empty());
  ASSERT_EQ(empty.calibration.size(), 10u);
  for (const auto& b : empty.calibration) {
    EXPECT_EQ(b.nodes, 0);
    EXPECT_EQ(b.acceptance, 0);
  }
  EXPECT_EQ(empty.draft_seconds + empty.verify_seconds + empty.other_seconds, 0);

  std::vector<StepRecord> vanilla(4);
  for (int i = 0; i < 4; ++i) {
    vanilla[i].step = i;
    vanilla[i].root_token = i == 0 ? -1 : i;
    vanilla[i].committed = {i};
    vanilla[i].timings = timings(0, 2000, 0, 0);
  }
  const auto st = compute_statistics(vanilla);
  EXPECT_TRUE(st.accepted_length_histogram.empty());
  EXPECT_TRUE(st.acceptance_by_depth.empty());
  EXPECT_EQ(st.tokens_per_second, (std::vector<double>{500, 500, 500}));
  EXPECT_DOUBLE_EQ(st.draft_seconds, 0);
  EXPECT_NEAR(st.verify_seconds, 0.006, 1e-12);
}

// Random trees, every step drafting: the histogram and acceptance by depth equal the engine's summary, and
// the calibration bins count exactly the verified nodes with a probability.
TEST(RunStatistics, RandomTreesAgreeWithSummarize) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<StepRecord> steps(1 + 30);
    steps[0].root_token = -1;
    steps[0].committed = {1};
    long expected_verified = 0;
    for (size_t i = 1; i < steps.size(); ++i) {
      auto& r = steps[i];
      r.step = int(i);
      r.root_token = 5;
      const int n = 1 + int(rng() % 12);
      // Random tree: each node hangs under an earlier one (or the root); decisions walk down an accepted path.
      std::vector<int> path;
      for (int id = 0; id < n; ++id) {
        const int parent = id == 0 ? -1 : int(rng() % (id + 1)) - 1;
        const int depth = parent < 0 ? 1 : r.nodes[parent].depth + 1;
        const bool parent_accepted = parent < 0 || r.nodes[parent].decision == A;
        NodeDecision d = N;
        bool pruned = false;
        if (u(rng) < 0.15f) {
          pruned = true;
          d = P;
        } else if (parent_accepted) {
          // At most one accepted child per parent, on the path.
          const bool path_here = int(path.size()) == depth - 1 && u(rng) < 0.6f;
          d = path_here ? A : R;
        }
        float p = u(rng) < 0.1f ? kNoValue : u(rng);
        r.nodes.push_back(node(id, parent, depth, p, d, pruned));
        if (d == A) path.push_back(id);
        if ((d == A || d == R) && std::isfinite(p)) ++expected_verified;
      }
      r.accepted_path = path;
      r.committed.assign(path.size() + 1, 3);
      r.timings = timings(10, 100, 5, 1);
    }
    const auto st = compute_statistics(steps);
    const auto sum = summarize("x", steps);
    EXPECT_EQ(st.acceptance_by_depth, sum.acceptance_by_depth) << trial;
    EXPECT_EQ(st.accepted_length_histogram, sum.accepted_length_histogram) << trial;
    long counted = 0;
    for (const auto& b : st.calibration) {
      counted += b.nodes;
      EXPECT_GE(b.acceptance, 0.0);
      EXPECT_LE(b.acceptance, 1.0);
      if (b.nodes) {
        EXPECT_GE(b.mean_confidence, b.lo - 1e-9);
        EXPECT_LE(b.mean_confidence, b.hi + 1e-9);
      }
    }
    EXPECT_EQ(counted, expected_verified) << trial;
  }
}

// A range selected on the timeline: the same statistics over those steps only, worked out by hand from the five
// steps above, and equal to compute_statistics of a run made of just those steps (one definition of each number).
TEST(RunStatistics, AStepSpanCountsOnlyItsSteps) {
  const auto steps = hand_steps();
  const auto st = compute_statistics(steps, runs::StepSpan{2, 3});
  // Step 2 accepted 0 (step 3 has no tree); depth 1 tried once and failed.
  EXPECT_EQ(st.accepted_length_histogram, (std::vector<long>{1}));
  ASSERT_FALSE(st.acceptance_by_depth.empty());
  EXPECT_DOUBLE_EQ(st.acceptance_by_depth[0], 0.0);
  // 1 token in 2 ms, 1 token in 1 ms; their indices in the run are kept for clicks on a per-step chart.
  EXPECT_EQ(st.tokens_per_second, (std::vector<double>{500, 1000}));
  EXPECT_EQ(st.step_index, (std::vector<int>{2, 3}));
  EXPECT_NEAR(st.draft_seconds, 0.0005, 1e-12);
  EXPECT_NEAR(st.verify_seconds, 0.0025, 1e-12);
  EXPECT_EQ(st.decoding_steps, 2);
  EXPECT_DOUBLE_EQ(st.tau, 1.0);  // two steps, one token each
  // Only step 2's verified 0.82 R is calibrated.
  long calibrated = 0;
  for (const auto& b : st.calibration) calibrated += b.nodes;
  EXPECT_EQ(calibrated, 1);
  EXPECT_EQ(st.calibration[8].nodes, 1);

  // The whole run's τ is higher: the span really filtered.
  const auto whole = compute_statistics(steps);
  EXPECT_GT(whole.tau, st.tau);
  EXPECT_EQ(whole.step_index, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(whole.decoding_steps, 4);
}

TEST(RunStatistics, AStepSpanEqualsTheStatisticsOfThoseStepsAlone) {
  const auto steps = hand_steps();
  for (int first = 0; first < 5; ++first)
    for (int last = first; last < 5; ++last) {
      const std::vector<StepRecord> part(steps.begin() + first, steps.begin() + last + 1);
      const auto a = compute_statistics(steps, runs::StepSpan{first, last});
      const auto b = compute_statistics(part);
      EXPECT_EQ(a.accepted_length_histogram, b.accepted_length_histogram) << first << "-" << last;
      EXPECT_EQ(a.acceptance_by_depth, b.acceptance_by_depth) << first << "-" << last;
      EXPECT_EQ(a.tokens_per_second, b.tokens_per_second) << first << "-" << last;
      EXPECT_EQ(a.cumulative_seconds, b.cumulative_seconds) << first << "-" << last;
      EXPECT_DOUBLE_EQ(a.tau, b.tau) << first << "-" << last;
      EXPECT_DOUBLE_EQ(a.draft_seconds + a.verify_seconds + a.other_seconds,
                       b.draft_seconds + b.verify_seconds + b.other_seconds);
      for (size_t k = 0; k < a.step_index.size(); ++k) EXPECT_EQ(a.step_index[k], b.step_index[k] + first);
    }
  // Out of range: clamped to the run; a default span is the whole run.
  EXPECT_EQ(compute_statistics(steps, runs::StepSpan{-3, 99}).tokens_per_second, compute_statistics(steps).tokens_per_second);
  EXPECT_EQ(compute_statistics(steps, runs::StepSpan{}).accepted_length_histogram,
            compute_statistics(steps).accepted_length_histogram);
}

}  // namespace

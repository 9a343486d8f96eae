#pragma once
// Contexts that answer a batch the way the CUDA backend does, made from the CPU backend's logits: what the methods
// read from a device backend is then tested on every machine (methods_test, streaming_test); the device itself is
// held to the same answers by tests/cuda/cuda_parity_test.cpp and cuda_kernels_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/methods/speculative_generator.h"
#include "engine/methods/step_record.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/sampling/logit_summary.h"

namespace specscope::test {

// The CPU backend's answer to a batch, then changed by answer() into what a device backend gives.
class DeviceLikeContext : public Context {
 public:
  explicit DeviceLikeContext(std::unique_ptr<Context> inner) : inner_(std::move(inner)) {}
  void forward(const Batch& b, ForwardOutput& out) final {
    inner_->forward(b, out);
    forwards = inner_->forwards;
    forward_tokens = inner_->forward_tokens;
    answer(b, out);
  }
  void keep(std::span<const int> rows) final { inner_->keep(rows); }
  void truncate(int n_past) final { inner_->truncate(n_past); }
  int n_past() const final { return inner_->n_past(); }
  int n_ctx() const final { return inner_->n_ctx(); }
  std::string backend_name() const final { return inner_->backend_name(); }

 protected:
  virtual void answer(const Batch& b, ForwardOutput& out) = 0;

 private:
  std::unique_ptr<Context> inner_;
};

// A backend that answers Batch::summaries_only as the CUDA backend does (kernels/sampling.cu): summaries and the
// probes' probabilities, and no logits at all, made from the CPU backend's logits by the kernel's reference
// (summarize_logits). Verification from these must record exactly what it records from the logits.
class SummarizingContext final : public DeviceLikeContext {
 public:
  using DeviceLikeContext::DeviceLikeContext;
  int summarized_forwards = 0;

 private:
  void answer(const Batch& b, ForwardOutput& out) override {
    if (!b.summaries_only) return;
    ++summarized_forwards;
    const int nr = int(out.logit_rows.size());
    out.summaries.resize(size_t(nr));
    out.probe_start = b.probe_start;
    out.probe_tokens = b.probe_tokens;
    out.probe_probs.assign(b.probe_tokens.size(), 0.f);
    for (int r = 0; r < nr; ++r) {
      const int begin = b.probe_start.empty() ? 0 : b.probe_start[size_t(r)];
      const int end = b.probe_start.empty() ? 0 : b.probe_start[size_t(r) + 1];
      summarize_logits(out.row_logits(r), out.vocab, b.probe_tokens.data() + begin, end - begin,
                       out.summaries[size_t(r)], out.probe_probs.data() + begin);
    }
    out.logits.clear();
    out.logits.shrink_to_fit();  // anything that still reads them is caught (ASan)
  }
};

// A backend that answers Batch::rows_on_demand as the CUDA backend does: the logits stay with it and each row is
// copied when verification first reads it (counted), and only until its next forward. With process_cap > 0 it also
// processes a row where it is, as CUDA's kernels/processed_rows.cu does (by that kernel's reference, process_logits),
// when at most process_cap tokens are kept, and declines otherwise (the row is then copied whole).
class OnDemandRowsContext final : public DeviceLikeContext {
 public:
  using DeviceLikeContext::DeviceLikeContext;
  int on_demand_forwards = 0;
  long rows_offered = 0, rows_copied = 0;
  int process_cap = 0;
  long distributions_sent = 0, distributions_declined = 0;

 private:
  void answer(const Batch& b, ForwardOutput& out) override {
    if (!b.rows_on_demand) return;
    ++on_demand_forwards;
    const int nr = int(out.logit_rows.size());
    rows_offered += nr;
    held_.swap(out.logits);
    const uint64_t id = forwards;
    out.rows_fetched_by(nr, [this, id, V = out.vocab](int k, float* dst) {
      if (forwards != id) throw std::logic_error("a row of an earlier forward");
      std::copy_n(held_.data() + size_t(k) * size_t(V), size_t(V), dst);
      ++rows_copied;
    });
    if (process_cap <= 0) return;
    out.fetch_distribution = [this, id, V = out.vocab](int k, const SamplingParams& sp, Distribution& d) {
      if (forwards != id) throw std::logic_error("a row of an earlier forward");
      Distribution p = process_logits(held_.data() + size_t(k) * size_t(V), V, sp);
      if (int(p.size()) > process_cap) {
        ++distributions_declined;
        return false;
      }
      d = std::move(p);
      ++distributions_sent;
      return true;
    };
  }
  std::vector<float> held_;
};

// Two floats the same bit for bit (NaN included).
inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The verification fields of two runs' records (the uniform draws of sampled verification included), bit for bit.
inline void expect_same_verification(const std::vector<StepRecord>& a, const std::vector<StepRecord>& b,
                                     const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t s = 0; s < a.size(); ++s) {
    ASSERT_EQ(a[s].nodes.size(), b[s].nodes.size()) << what << " step " << s;
    EXPECT_EQ(a[s].accepted_path, b[s].accepted_path) << what << " step " << s;
    EXPECT_EQ(a[s].bonus_token, b[s].bonus_token) << what << " step " << s;
    EXPECT_TRUE(same_bits(a[s].bonus_prob, b[s].bonus_prob)) << what << " step " << s;
    for (size_t i = 0; i < a[s].nodes.size(); ++i) {
      const DraftNode &x = a[s].nodes[i], &y = b[s].nodes[i];
      EXPECT_TRUE(same_bits(x.target_prob, y.target_prob) && same_bits(x.accept_prob, y.accept_prob) &&
                  same_bits(x.u, y.u) &&
                  x.decision == y.decision && x.rule == y.rule && x.target_top_k == y.target_top_k)
          << what << " step " << s << " node " << i;
    }
  }
}

// Generates with `method` from `prompt` on a fresh CPU context (`n_ctx`) and through `device`, and expects the same
// tokens (fatal: call it inside ASSERT_NO_FATAL_FAILURE) and the same verification records; *got: the device's run.
inline void expect_same_run_through(Context& device, const Model& model, Method& method,
                                    const std::vector<int32_t>& prompt, const GenerateOptions& opts, int n_ctx,
                                    const std::string& what, SpeculativeResult* got) {
  auto ctx = model.new_cpu_context(n_ctx);
  const auto want = generate_speculative(model, *ctx, method, prompt, opts);
  *got = generate_speculative(model, device, method, prompt, opts);
  ASSERT_EQ(got->gen.tokens, want.gen.tokens) << what;
  expect_same_verification(got->steps, want.steps, what);
}

}  // namespace specscope::test

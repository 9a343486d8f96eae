#include "engine/methods/speculative_generator.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "engine/methods/verify.h"
#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/util/error.h"
#include "engine/util/interrupt.h"

namespace specscope {

namespace {
using clock = std::chrono::steady_clock;
int64_t us_since(clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - t).count();
}
// Appends rows that see the root, the extra rows they list and themselves (never the tree).
void append_extra_rows(Batch& b, const ExtraRows& extra) {
  const int n0 = b.size(), n = n0 + extra.size();
  std::vector<uint8_t> mask(size_t(n) * n, 0);
  for (int i = 0; i < n0; ++i)
    for (int j = 0; j < n0; ++j) mask[size_t(i) * n + j] = b.mask[size_t(i) * n0 + j];
  for (int r = 0; r < extra.size(); ++r) {
    const int row = n0 + r;
    mask[size_t(row) * n + 0] = 1;
    mask[size_t(row) * n + row] = 1;
    for (int v : extra.visible[r]) mask[size_t(row) * n + n0 + v] = 1;
    b.tokens.push_back(extra.tokens[r]);
    b.positions.push_back(extra.positions[r]);
  }
  b.mask = std::move(mask);
}

// Rows the forward itself pruned (Speculative Streaming's early-exit pruning) leave verification: their nodes
// (and, by construction, their subtrees) become pruned, with no batch row.
void mark_pruned_in_forward(DraftTree& tree, std::vector<int>& row_of_node, const ForwardOutput& out) {
  if (out.pruned.empty()) return;
  for (auto& node : tree.nodes) {
    const int row = row_of_node[node.id];
    if (row < 0 || !out.pruned[row]) continue;
    node.pruned = true;
    node.decision = NodeDecision::Pruned;
    row_of_node[node.id] = -1;
  }
}

// Greedy verification reads only each row's summary and its children's probabilities: ask the backend for those
// (a device backend then sends them instead of rows x vocab logits). The probes go row by row (counted, then
// placed), every verified node under its parent's row. (Rows that streaming's pruning drops inside the forward are
// never read: their nodes are marked pruned, and so their subtrees.)
void request_summaries(Batch& b, const DraftTree& tree, const std::vector<int>& row_of_node) {
  auto parent_row = [&](const DraftNode& n) { return n.parent < 0 ? 0 : row_of_node[size_t(n.parent)]; };
  b.summaries_only = true;
  b.probe_start.assign(size_t(b.size()) + 1, 0);
  for (const auto& n : tree.nodes)
    if (!n.pruned) ++b.probe_start[size_t(parent_row(n)) + 1];
  for (size_t r = 1; r < b.probe_start.size(); ++r) b.probe_start[r] += b.probe_start[r - 1];
  b.probe_tokens.resize(size_t(b.probe_start.back()));
  std::vector<int32_t> next(b.probe_start.begin(), b.probe_start.end() - 1);
  for (const auto& n : tree.nodes)
    if (!n.pruned) b.probe_tokens[size_t(next[size_t(parent_row(n))]++)] = n.token;
}

// The "why" lists' tokens get their texts here: verification has no tokenizer. Siblings share one list and the
// lists share most tokens, so each token is decoded once per step.
void name_bars(StepRecord& rec, const Tokenizer& tok) {
  std::unordered_map<int32_t, std::string> texts;
  auto name = [&](std::vector<TokenProb>& bars) {
    for (auto& b : bars) {
      auto [it, fresh] = texts.try_emplace(b.token);
      if (fresh) it->second = tok.decode(std::vector<int32_t>{b.token});
      b.text = it->second;
    }
  };
  for (auto& n : rec.nodes) name(n.target_top_k);
  name(rec.residual_top_k);
}

}  // namespace

SpeculativeResult generate_speculative(const Model& model, Context& ctx, Method& method,
                                       const std::vector<int32_t>& prompt, const GenerateOptions& opts,
                                       const StepCallback& on_step) {
  opts.sampling.validate();
  if (opts.max_tokens < 0) throw InputError("--max-tokens", "must be >= 0");
  if (int(prompt.size()) + 1 > ctx.n_ctx() - ctx.n_past())
    throw InputError("prompt", "the prompt has " + std::to_string(prompt.size()) +
                                   " tokens, more than fits the context of " + std::to_string(ctx.n_ctx()) + " tokens");
  SpeculativeResult res;
  GenerateResult& r = res.gen;
  r.prompt_tokens = int(prompt.size());
  Rng rng(opts.sampling.seed);
  DecodeState st;
  st.target = &model;
  st.tokens = prompt;
  st.prompt_tokens = int(prompt.size());
  st.sampling = opts.sampling;
  st.rng = &rng;
  const Tokenizer& tok = model.tokenizer();
  StreamingDecoder decoder(tok, /*skip_special=*/!opts.keep_special_text);
  StopMatcher stops(opts.stop_strings);
  const auto& eos = model.eos_ids();
  const int V = model.config().vocab_size;
  const auto taps = method.target_taps();
  const int expert_layers = model.config().expert_layers();
  ForwardOutput out;
  // The target's forward of a step; returns the experts it ran per expert layer (StepRecord::experts_per_layer).
  auto target_forward = [&](const Batch& b) {
    const uint64_t experts_before = ctx.experts_computed;
    ctx.forward(b, out);
    return float(ctx.experts_per_layer_since(experts_before, expert_layers));
  };

  // Commits tokens in order; returns false when generation must stop (EOS, limit, stop string, callback).
  bool stop = false;
  std::string step_text;
  auto commit_tokens = [&](StepRecord& rec, const std::vector<int32_t>& toks) {
    for (int32_t t : toks) {
      if (opts.stop_at_eos && std::find(eos.begin(), eos.end(), t) != eos.end()) {
        r.stop_reason = "eos";
        stop = true;
        return;
      }
      if (int(r.tokens.size()) >= opts.max_tokens) {
        r.stop_reason = "max_tokens";
        stop = true;
        return;
      }
      rec.committed.push_back(t);
      r.tokens.push_back(t);
      std::string piece = stops.feed(decoder.push(t));
      step_text += piece;
      if (stops.stopped()) {
        r.stop_reason = "stop_string";
        stop = true;
        return;
      }
    }
    if (int(r.tokens.size()) >= opts.max_tokens) {
      r.stop_reason = "max_tokens";
      stop = true;
    }
  };
  auto emit = [&](StepRecord& rec) {
    if (stop && r.stop_reason != "stop_string") step_text += stops.feed(decoder.flush()) + stops.flush();
    r.text += step_text;
    rec.bonus_text = rec.bonus_token >= 0 ? tok.decode(std::vector<int32_t>{rec.bonus_token}) : "";
    res.steps.push_back(rec);
    if (on_step && !on_step(res.steps.back(), step_text)) {
      r.stop_reason = "callback";
      stop = true;
    }
    step_text.clear();
  };

  // Prefill: the prompt in one forward; its last row gives the first token. It is the one part a caller's
  // InterruptScope may cut short (engine/util/interrupt.h): a long prompt on a large model takes seconds, while
  // decoding stops between steps through on_step, so every step reported is whole. Stopped here, the run has no
  // step and ends like a stop from on_step.
  auto stopped_in_prefill = [&] {
    r.stop_reason = "callback";
    res.summary = summarize(method.name(), res.steps);
    res.summary.stop_reason = r.stop_reason;
    return res;
  };
  auto t0 = clock::now();
  float prefill_experts = kNoValue;
  try {
    Batch b = Batch::causal(prompt);
    b.taps = taps;
    b.logit_rows = {int(prompt.size()) - 1};  // taps still cover every prompt row
    method.shape_forward(st, b, nullptr, nullptr);
    prefill_experts = target_forward(b);
  } catch (const Interrupted&) {
    return stopped_in_prefill();
  }
  r.prefill_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  auto t_decode = clock::now();
  StepRecord first;
  first.method = method.name();
  first.step = 0;
  first.position = int(prompt.size()) - 1;
  first.target_forwards = 1;
  first.target_tokens = int(prompt.size());
  first.experts_per_layer = prefill_experts;
  {
    const float* lg = out.row_logits(0);
    Distribution d = process_logits(lg, V, opts.sampling);
    first.bonus_token = opts.sampling.greedy() ? d.ids[0] : sample_from(d, rng);
    // Under greedy decoding the processed distribution is one-hot; like verification (verify.cpp), report the
    // target's softmax probability of the token, so bonus_prob means the same thing at every step.
    first.bonus_prob = opts.sampling.greedy() ? softmax_probs(lg, V)[size_t(first.bonus_token)] : d.prob_of(first.bonus_token);
  }
  try {
    method.prefill(st, out);  // a drafter's own prefill (a draft model's forward over the prompt)
  } catch (const Interrupted&) {
    return stopped_in_prefill();
  }
  const InterruptScope decoding(nullptr);  // from here on, Stop goes through on_step
  if (opts.max_tokens == 0) {
    r.stop_reason = "max_tokens";
    stop = true;
  } else {
    commit_tokens(first, {first.bonus_token});
    st.tokens.push_back(first.bonus_token);
  }
  r.target_forwards = 1;
  emit(first);

  int step = 1;
  while (!stop) {
    StepRecord rec;
    rec.method = method.name();
    rec.step = step++;
    rec.lossy = method.lossy();
    rec.draft_cut = method.draft_cut();
    rec.root_token = st.tokens.back();
    rec.position = ctx.n_past();
    const int room = ctx.n_ctx() - ctx.n_past() - 1;
    if (room < 0) {
      r.stop_reason = "context";
      break;
    }
    // Draft.
    auto td = clock::now();
    DraftTree tree;
    method.draft(st, tree, room);
    tree.limit(room);
    rec.timings.draft_us = us_since(td);
    auto [dfw, dtok] = method.take_draft_counts();
    rec.draft_forwards = dfw;
    rec.draft_tokens = dtok;
    // One target forward over [root, tree].
    auto tf = clock::now();
    std::vector<int> row_of_node;
    Batch b = tree_batch(tree, rec.root_token, ctx.n_past(), row_of_node);
    ExtraRows extra;
    method.extra_rows(st, extra);
    if (b.size() + extra.size() > room + 1) extra = ExtraRows{};  // no room left in the context: skip them
    const int first_extra = b.size();
    if (extra.size() > 0) append_extra_rows(b, extra);
    b.taps = taps;
    method.shape_forward(st, b, &tree, &row_of_node);
    // What verification reads of the rows, asked for so that a device backend sends only that: summaries (greedy),
    // or the rows it visits, about tau of them (sampled). Not when the method picked its own logit rows.
    if (b.logit_rows.empty()) {
      if (opts.sampling.greedy()) request_summaries(b, tree, row_of_node);
      else b.rows_on_demand = true;
    }
    rec.experts_per_layer = target_forward(b);
    if (extra.size() > 0) method.observe_extra(st, out, first_extra);
    mark_pruned_in_forward(tree, row_of_node, out);
    rec.timings.verify_forward_us = us_since(tf);
    rec.target_forwards = 1;
    rec.target_tokens = b.size();
    // Verify.
    auto tv = clock::now();
    const auto typical = method.typical_acceptance();
    VerifyResult vr = typical ? verify_tree_typical(tree, out, row_of_node, opts.sampling, rng, *typical)
                              : verify_tree(tree, out, row_of_node, opts.sampling, rng);
    rec.timings.verify_us = us_since(tv);
    // Keep the root and the accepted path in the cache.
    auto tk = clock::now();
    std::vector<int> rows = {0};
    for (int n : vr.accepted_path) rows.push_back(row_of_node[n]);
    ctx.keep(rows);
    rec.timings.kv_update_us = us_since(tk);

    rec.accepted_path = vr.accepted_path;
    rec.bonus_token = vr.bonus_token;
    rec.bonus_source = vr.bonus_source;
    rec.bonus_prob = vr.bonus_prob;
    std::vector<int32_t> toks;
    for (int n : vr.accepted_path) toks.push_back(tree.nodes[n].token);
    toks.push_back(vr.bonus_token);
    for (auto& n : tree.nodes) n.text = tok.decode(std::vector<int32_t>{n.token});
    rec.nodes = std::move(tree.nodes);
    rec.residual_top_k = std::move(vr.residual_top_k);
    name_bars(rec, tok);
    commit_tokens(rec, toks);
    st.tokens.insert(st.tokens.end(), rec.committed.begin(), rec.committed.end());
    ++r.target_forwards;
    if (!stop) method.commit(st, out, rows, int(rec.committed.size()));
    emit(rec);
  }
  r.decode_seconds = std::chrono::duration<double>(clock::now() - t_decode).count();
  res.summary = summarize(method.name(), res.steps);
  res.summary.prefill_seconds = r.prefill_seconds;
  res.summary.decode_seconds = r.decode_seconds;
  res.summary.wall_seconds = r.prefill_seconds + r.decode_seconds;
  res.summary.tokens_per_second = r.decode_seconds > 0 ? double(r.tokens.size()) / r.decode_seconds : 0;
  res.summary.stop_reason = r.stop_reason;
  return res;
}

}  // namespace specscope

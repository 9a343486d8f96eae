#pragma once
// Shared helpers for the GoogleTest suite.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "engine/formats/gguf_quant.h"
#include "engine/generate/generator.h"
#include "engine/methods/speculative_generator.h"
#include "engine/util/tensor.h"

namespace specscope::test {

std::string fixture(const std::string& rel);  // absolute path under tests/fixtures
// An empty folder of this test's own (under the temp dir, named by `tag`, the process and the running test: ctest
// runs tests in parallel processes), made anew; the caller removes it.
std::string scratch_dir(const std::string& tag);
struct CommandResult {
  int exit_code;
  std::string out;  // stdout and stderr together
};
// Runs specscope-cli with the given arguments (already shell-quoted as needed); `env`: assignments put before the
// command ("XDG_CACHE_HOME=/x SPECSCOPE_LOG=info").
CommandResult run_cli(const std::string& args, const std::string& env = "");
// ModelConfig::from_json_text refuses `config` with an InputError naming its path ("dir/config.json") and, in its
// problem, `problem_part`.
void expect_config_refused(const nlohmann::json& config, const std::string& problem_part);
// `specscope-cli run` on the fixture `fixture_dir` with `config` as its config.json: exit code 2 and one line naming
// config.json and `problem_part` (how the CLI answers a checkpoint with one bad field).
void expect_cli_refuses_config(const std::string& fixture_dir, const nlohmann::json& config,
                               const std::string& problem_part);
// A copy of the fixture model folder `fixture_dir` (under tests/fixtures) whose config.json is `config`, in a
// scratch_dir the caller removes: the model with one field changed.
std::string fixture_with_config(const std::string& fixture_dir, const nlohmann::json& config);
// The largest difference between `model`'s prefill logits and the golden's (tests/fixtures/<golden>, make_fixtures.py)
// on its first prompt, relative to each row's largest |logit| (at least 1): how far a model with one part changed is
// from transformers.
double first_golden_prompt_error(const Model& model, const std::string& golden);
// `specscope-cli run` (2 tokens, nothing recorded) on a copy of the fixture model folder `fixture_dir` (under
// tests/fixtures) whose config.json is `config`: how the CLI answers a checkpoint with one bad field.
CommandResult run_cli_with_config(const std::string& fixture_dir, const nlohmann::json& config);
// The JSON document in a command's merged output: from the first line that opens an object (progress lines on
// stderr come first) to the end of that value. Null when there is none or it does not parse.
nlohmann::json json_in_output(const std::string& out);

// Speculative decoding of `prompt` beside vanilla's, each on a fresh CPU context of 256 positions: the outputs must
// be identical (a failure names the method's output as differing from vanilla's). Returns the speculative run.
SpeculativeResult speculate_beside_vanilla(const Model& m, Method& method, const std::vector<int32_t>& prompt,
                                           const GenerateOptions& opts);

// A new architecture's losslessness check: greedy SpS drafting with `draft_path` (its quantized twin) and prompt
// lookup, each beside vanilla on every prompt for 40 tokens past any EOS (speculate_beside_vanilla), each drafting
// something. Returns SpS's drafted and accepted node counts, for the caller's bar on how often the twin is right.
struct NodeCounts {
  long drafted = 0, accepted = 0;
};
NodeCounts sps_and_pld_beside_vanilla(const Model& target, const std::string& draft_path,
                                      const std::vector<std::vector<int32_t>>& prompts);
// The four short prompts those checks use on the tiny fixtures: `first` (the fixture's BOS), then a few ids that
// repeat within the prompt, so prompt lookup has something to draft.
std::vector<std::vector<int32_t>> repeating_prompts(int32_t first);

// An m x k matrix of GGUF blocks of type `t`: quantized from normal floats where gguf_quant has a quantizer
// (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) unless `random_bytes`; otherwise (the K-quants always) random bytes with the f16
// scales (and Q4_1/Q5_1's mins, the K-quants' dmins) set to values in [scale_lo, scale_hi) of either sign (every
// other bit pattern is a valid block). Random bytes reach what the quantizers never write: negative Q4_1/Q5_1
// scales, Q5_0 codes off the -16..15 grid of a block's own absmax, Q8_0's -128.
std::vector<uint8_t> random_block_matrix(GgmlType t, int m, int k, std::mt19937& rng, bool random_bytes = false,
                                         float scale_lo = 0.001f, float scale_hi = 0.05f);
// A view of such a matrix as a weight of dtype `d` (not owning the bytes).
TensorView block_view(DType d, const std::vector<uint8_t>& bytes, int m, int k);

}  // namespace specscope::test

namespace specscope::test {

// Upper tail P(X >= stat) of the chi-square distribution with `dof` degrees of freedom.
double chi_square_p_value(double stat, int dof);
// Pearson's test of observed counts against expected probabilities (cells with expected count < 5 are
// pooled into one). Returns the p-value; `dof_out` receives the degrees of freedom used.
double chi_square_test(const std::vector<long>& observed, const std::vector<double>& probs, int* dof_out = nullptr);
// The value the chi-square statistic with `dof` degrees of freedom exceeds with probability `alpha`.
double chi_square_critical(int dof, double alpha);
// Power of Pearson's test at significance `alpha` against an alternative of noncentrality `lambda` (samples times
// the alternative's chi-square divergence from the tested probabilities over the cells): the probability that a
// noncentral chi-square exceeds the critical value, summed as the Poisson mixture of central tails.
double chi_square_power(double lambda, int dof, double alpha);
// The smallest total-variation distance from the uniform distribution over `cells` equal cells that Pearson's
// test with `samples` draws detects with probability >= `power` at significance `alpha`. The least favourable
// alternative at a given distance moves 2 tv / cells of probability into half the cells and out of the others;
// its noncentrality is 4 samples tv^2, the smallest any alternative at that distance has (Cauchy-Schwarz).
double detectable_tv(long samples, int cells, double alpha, double power);

}  // namespace specscope::test

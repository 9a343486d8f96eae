#pragma once
// The flags run and compare share: every method option (generated from the method registry), the drafters,
// sampling, backend and prompts.
#include "app/cli/args.h"
#include "engine/model/backend.h"
#include "engine/sampling/sampler.h"
#include "runs/lane_resolver.h"

namespace specscope::cli {

// --draft, --head and every option flag of the method registry (--gamma, --total-tokens, --lossy-typical...),
// as defaults for every lane whose method takes them; `target` is --model (the family manifest's anchor).
runs::LaneDefaults read_lane_defaults(Args& args, const std::string& target);
// Lane keys model=, head= and draft= given as model specs (hf:..., ollama:..., lmstudio:...) resolved to paths.
void resolve_lane_specs(std::vector<runs::LaneRequest>& requests);
// One lane of `method` resolved with the global flags and the family manifest (run, bench).
runs::Lane read_single_lane(Args& args, const std::string& method, const std::string& target);
SamplingParams read_sampling(Args& args);
// --backend auto|cpu|cuda (default auto: CUDA when a device is visible and the backend was built).
Backend read_backend(Args& args);
std::string read_prompt(Args& args);
// Prompts from --prompt, or --prompt-file holding one prompt per line or JSONL with a "prompt" field.
std::vector<std::string> read_prompts(Args& args);
// The usage lines of every method's options, from the registry.
std::string method_usage();

}  // namespace specscope::cli

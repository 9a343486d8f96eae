#pragma once
// The method flags shared by run and compare.
#include "app/cli/args.h"
#include "engine/methods/factory.h"
#include "engine/model/backend.h"
#include "engine/sampling/sampler.h"

namespace specscope::cli {

// Reads --draft and every method option flag (--gamma, --branching, --max-ngram, --min-ngram, --num-draft).
MethodSpec read_method_spec(Args& args, const std::string& name);
SamplingParams read_sampling(Args& args);
// --backend auto|cpu|cuda (default auto: CUDA when a device is visible and the backend was built).
Backend read_backend(Args& args);
std::string read_prompt(Args& args);
// Prompts from --prompt, or --prompt-file holding one prompt per line or JSONL with a "prompt" field.
std::vector<std::string> read_prompts(Args& args);

}  // namespace specscope::cli

#pragma once
// The method flags shared by run and compare.
#include "app/cli/args.h"
#include "engine/methods/factory.h"
#include "engine/sampling/sampler.h"

namespace specscope::cli {

// Reads --draft and every method option flag (--gamma, --branching, --max-ngram, --min-ngram, --num-draft).
MethodSpec read_method_spec(Args& args, const std::string& name);
SamplingParams read_sampling(Args& args);
std::string read_prompt(Args& args);
// Prompts from --prompt, or --prompt-file holding one prompt per line or JSONL with a "prompt" field.
std::vector<std::string> read_prompts(Args& args);

}  // namespace specscope::cli

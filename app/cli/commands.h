#pragma once
#include <cstdio>
#include <string>

#include "app/cli/args.h"

namespace specscope::cli {

void print_usage(FILE* out);
int dispatch(const std::string& sub, Args& args);

int cmd_info(Args& args);
int cmd_tokenize(Args& args);
int cmd_detokenize(Args& args);
int cmd_run(Args& args);
int cmd_bench(Args& args);
int cmd_compare(Args& args);
int cmd_sessions(Args& args);
int cmd_models(Args& args);

// The model path from --model, or the embedded default model.
std::string model_path(Args& args);
void setup_logging();
void apply_global_options(Args& args);  // --weights-memory

}  // namespace specscope::cli

#pragma once
#include <string>

namespace specscope {

// Where the embedded default model lives: $SPECSCOPE_MODEL, else the installed share/specscope/models/base,
// else the source tree's assets/models/base. Throws InputError when none exists.
std::string default_model_path();

}  // namespace specscope

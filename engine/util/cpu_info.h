#pragma once
// The machine's CPU, named for session records and status bars.
#include <string>

namespace specscope {

// "model name" from /proc/cpuinfo; "cpu" when unknown.
std::string cpu_model_name();

}  // namespace specscope

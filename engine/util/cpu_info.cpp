#include "engine/util/cpu_info.h"

#include <fstream>

namespace specscope {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos && line.find_first_not_of(' ', c + 1) != std::string::npos)
        return line.substr(line.find_first_not_of(' ', c + 1));
    }
  return "cpu";
}

}  // namespace specscope

#pragma once
// Builds a method from its name and options (CLI flags, GUI settings).
#include <map>
#include <memory>
#include <string>

#include "engine/methods/method.h"

namespace specscope {

struct MethodSpec {
  std::string name = "vanilla";  // vanilla | sps | pld | eagle1 | eagle2 | eagle3 | medusa | streaming | lookahead
  std::string draft_path;        // sps: the draft model directory
  std::string head_path;         // eagle1/2/3, medusa: the head directory; streaming: default the model's
  std::map<std::string, std::string> options;  // e.g. gamma=4, branching=2,2,1, max_ngram=3
};

std::vector<std::string> known_methods();
// Throws InputError for unknown methods, missing paths and bad options.
std::unique_ptr<Method> make_method(const MethodSpec& spec, const Model& target);

}  // namespace specscope

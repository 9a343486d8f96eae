#pragma once
// Builds a method from its name and options (CLI flags, lanes, GUI settings). What each method takes is in
// method_registry.h.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/methods/method.h"
#include "engine/methods/method_registry.h"

namespace specscope {

struct MethodSpec {
  std::string name = "vanilla";  // vanilla | sps | pld | eagle1 | eagle2 | eagle3 | medusa | streaming | lookahead
  std::string draft_path;        // sps: the draft model directory
  std::string head_path;         // eagle1/2/3, medusa: the head directory; streaming: default the model's
  std::map<std::string, std::string> options;  // registry keys, e.g. gamma=4, branching=2,2,1, max-ngram=3
  // sps: other drafters tree=auto may run instead (a family's "alternatives"; runs/tree_tuner.h). make_method ignores
  // them: a lane runs draft_path, which the tuner sets to the drafter it chose.
  std::vector<std::string> draft_alternatives;
};

// Throws InputError for unknown methods, missing paths, options the method does not take and bad values.
std::unique_ptr<Method> make_method(const MethodSpec& spec, const Model& target);

}  // namespace specscope

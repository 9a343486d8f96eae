#pragma once
// Every decoding method SpecScope knows, as data: its name, what it needs beside the target (a draft model, a
// head, a target of its own) and its options, with the published defaults and a line of help each. The CLI's
// flags and usage, `info`, and the app's Settings and lane editor are generated from this table, and
// make_method() refuses an option its method does not list. Adding a method touches its own file, one entry
// here and one branch of the factory.
#include <string>
#include <vector>

namespace specscope {

// What a method needs besides the target it verifies with.
enum class MethodNeed {
  Nothing,          // vanilla, pld, lookahead
  DraftModel,       // sps: a small model with the target's vocabulary ("draft")
  EagleHead,        // eagle1/eagle2: an EAGLE-1/2 head ("head")
  Eagle3Head,       // eagle3: an EAGLE-3 head ("head")
  MedusaHeads,      // medusa: Medusa heads ("head")
  StreamingTarget,  // streaming: the target itself must be a Speculative Streaming model ("model")
};

enum class OptionKind { Int, Number, IntList, File, Flag, Choice };

struct MethodOption {
  std::string key;            // the CLI flag without "--", the lane key, the Settings key
  OptionKind kind = OptionKind::Int;
  std::string default_value;  // the published default as text; "" when it comes from the model's own files
  std::string help;
};

struct MethodInfo {
  std::string name;   // vanilla | sps | eagle1 | ...
  std::string title;  // "EAGLE-2 (dynamic draft trees)"
  std::string paper;  // where the method and its defaults come from
  MethodNeed needs = MethodNeed::Nothing;
  std::vector<MethodOption> options;
};

// In the order the CLI and the app list them.
const std::vector<MethodInfo>& method_registry();
// Null when unknown.
const MethodInfo* find_method_info(const std::string& name);
// Throws InputError("--method", "unknown method 'X' (available: ...)").
const MethodInfo& method_info(const std::string& name);
std::vector<std::string> known_methods();
// Every option key of every method, each once, in registry order (the CLI reads these flags).
std::vector<std::string> all_option_keys();
const MethodOption* find_option(const MethodInfo& m, const std::string& key);

// The lane key naming what `need` asks for ("draft", "head", "model"), or "" for Nothing.
const char* need_key(MethodNeed need);
// "a draft model", "an EAGLE-1/2 head", ... for messages and tooltips.
const char* need_description(MethodNeed need);

}  // namespace specscope

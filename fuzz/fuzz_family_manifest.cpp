// libFuzzer target: the family manifest parser (engine/model/family_manifest.h) on arbitrary bytes. A family.json
// comes with model folders anyone may publish, so beyond "InputError or a manifest, never a crash": every method it
// accepts is a registry method, every path it keeps is absolute, every option is one the method takes, and a drafter
// list appears only with a draft beside it.
// Seeds: fuzz/corpus/family_manifest (the shipped family, one with options and alternatives, a minimal one).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/methods/method_registry.h"
#include "engine/model/family_manifest.h"
#include "engine/util/error.h"

using namespace specscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  FamilyManifest m;
  try {
    m = FamilyManifest::parse(text, "/fuzz/family.json");
  } catch (const InputError&) {
    return 0;
  }
  auto absolute = [](const std::string& p) { return p.empty() || p[0] == '/'; };
  if (m.target.empty() || !absolute(m.target)) std::abort();
  for (const auto& [name, e] : m.methods) {
    const MethodInfo* info = find_method_info(name);
    if (!info) std::abort();
    if (!absolute(e.draft) || !absolute(e.head) || !absolute(e.model)) std::abort();
    for (const auto& a : e.alternatives)
      if (a.empty() || !absolute(a)) std::abort();
    if (!e.alternatives.empty() && e.draft.empty()) std::abort();
    for (const auto& [key, value] : e.options)
      if (!find_option(*info, key)) std::abort();
  }
  return 0;
}

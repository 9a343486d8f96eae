#include "engine/formats/gguf_file_type.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "engine/util/ascii_case.h"
#include "engine/util/error.h"

namespace specscope {

namespace {

// llama.h's enum llama_ftype (values 4-6 and 33-35 were removed from the format). The names follow llama-quantize's
// type names, the ones in file names and Ollama's tags.
const char* ftype_name(int64_t ftype) {
  switch (ftype) {
    case 0: return "f32";
    case 1: return "f16";
    case 2: return "q4_0";
    case 3: return "q4_1";
    case 7: return "q8_0";
    case 8: return "q5_0";
    case 9: return "q5_1";
    case 10: return "q2_k";
    case 11: return "q3_k_s";
    case 12: return "q3_k_m";
    case 13: return "q3_k_l";
    case 14: return "q4_k_s";
    case 15: return "q4_k_m";
    case 16: return "q5_k_s";
    case 17: return "q5_k_m";
    case 18: return "q6_k";
    case 19: return "iq2_xxs";
    case 20: return "iq2_xs";
    case 21: return "q2_k_s";
    case 22: return "iq3_xs";
    case 23: return "iq3_xxs";
    case 24: return "iq1_s";
    case 25: return "iq4_nl";
    case 26: return "iq3_s";
    case 27: return "iq3_m";
    case 28: return "iq2_s";
    case 29: return "iq2_m";
    case 30: return "iq4_xs";
    case 31: return "iq1_m";
    case 32: return "bf16";
    case 36: return "tq1_0";
    case 37: return "tq2_0";
    case 38: return "mxfp4_moe";
    default: return nullptr;
  }
}

}  // namespace

std::string gguf_file_type_name(const GgufFile& g) {
  // A name for people (and the memory estimate's "bf16"), not a reason to refuse a file: a value of another type or
  // one llama.cpp does not know falls through to the tensors. (1024 marks a type llama.cpp guessed; files do not
  // store it.)
  if (const GgufValue* v = g.find("general.file_type"); v && v->is_integer()) {
    try {
      if (const char* name = ftype_name(g.get_int("general.file_type") & ~int64_t(1024))) return name;
    } catch (const InputError&) {  // an integer past int64: not a type llama.cpp knows either
    }
  }
  std::map<GgmlType, uint64_t> layer_bytes, all_bytes;
  for (const auto& t : g.tensors()) {
    all_bytes[t.type] += t.nbytes;
    if (t.name.rfind("blk.", 0) == 0) layer_bytes[t.type] += t.nbytes;
  }
  const auto& bytes = layer_bytes.empty() ? all_bytes : layer_bytes;
  if (bytes.empty()) return "";
  const auto most = std::max_element(bytes.begin(), bytes.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  return ascii_lower(std::string(ggml_type_name(most->first)));
}

}  // namespace specscope

#pragma once
// A pickle *interpreter* for the subset that torch.save writes for a state dict. Nothing is ever executed: the
// opcodes build plain values in an arena, and the only callables are a fixed whitelist of globals whose effect is
// reproduced here (collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter) plus the
// persistent ids ('storage', torch.<T>Storage, key, location, numel). Any other global (os.system,
// builtins.eval, ...) or opcode is refused with InputError. Bounded: time and memory are linear in the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/util/dtype.h"

namespace specscope::pickle {

enum class Kind : uint8_t { None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, Global, Storage, Tensor };
const char* kind_name(Kind k);

struct Value {
  Kind kind = Kind::None;
  int64_t i = 0;                // Bool, Int
  double f = 0;                 // Float
  std::string s;                // Str, Bytes; Global: "module.name"; Storage: the archive key
  std::vector<uint32_t> items;  // Tuple, List: elements; Dict: key, value, key, value, ... (insertion order)
  // Storage: element type and count. Tensor: `storage` is the index of its Storage value.
  DType dtype = DType::F32;
  int64_t numel = 0;
  uint32_t storage = 0;
  int64_t offset = 0;  // Tensor: storage offset in elements
  std::vector<int64_t> shape, stride;
};

struct Program {
  std::vector<Value> values;  // the arena; containers refer to elements by index
  uint32_t root = 0;          // the value STOP returned
};

// Interprets a protocol 2-5 pickle. Throws InputError(where, ...) on anything malformed or not allowed.
Program interpret(const uint8_t* data, size_t size, const std::string& where);

}  // namespace specscope::pickle

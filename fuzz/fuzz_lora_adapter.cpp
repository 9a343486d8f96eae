// libFuzzer target: a peft LoRA adapter (engine/model/lora_adapter.h) from arbitrary bytes. The input is
// adapter_config.json, a NUL byte, then adapter_model.safetensors; both are written to a scratch directory (the
// loader reads files) next to nothing else, so base_model_name_or_path can only resolve to "." or a real path.
// A parsed adapter is then merged into a small stand-in model (two 4-head layers, f32/bf16 matrices of 32 x 32
// and 64 x 32), so the shape checks and the merge arithmetic run too. Loading and merging must either succeed or
// throw InputError: never crash, hang or touch memory out of bounds.
// Seeds: fuzz/corpus/lora_adapter, two small adapters in this layout shaped for the stand-in model (one with
// rank/alpha patterns, one rsLoRA): a config, a NUL byte, then the safetensors bytes.
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/model/config.h"
#include "engine/model/lora_adapter.h"
#include "engine/model/weights.h"
#include "engine/util/error.h"

namespace fs = std::filesystem;
using namespace specscope;

namespace {

TensorView matrix(std::vector<uint16_t>& store, DType t, int rows, int cols, const char* name) {
  store.assign(size_t(rows) * cols * (t == DType::F32 ? 2 : 1), 0x3c00);
  TensorView v;
  v.name = name;
  v.dtype = t;
  v.shape = {rows, cols};
  v.data = store.data();
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fs::path dir = fs::temp_directory_path() / ("specscope_fuzz_lora_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const uint8_t* nul = static_cast<const uint8_t*>(memchr(data, 0, size));
  const size_t cfg_len = nul ? size_t(nul - data) : size;
  std::ofstream(dir / "adapter_config.json", std::ios::binary)
      .write(reinterpret_cast<const char*>(data), std::streamsize(cfg_len));
  fs::remove(dir / "adapter_model.safetensors");
  if (nul)
    std::ofstream(dir / "adapter_model.safetensors", std::ios::binary)
        .write(reinterpret_cast<const char*>(nul + 1), std::streamsize(size - cfg_len - 1));
  static std::vector<std::vector<uint16_t>> buffers(16);
  ModelWeights w;
  w.layers.resize(2);
  int b = 0;
  for (auto& L : w.layers) {
    const DType t = b == 0 ? DType::F32 : DType::BF16;
    L.wq = matrix(buffers[size_t(b++)], t, 32, 32, "wq");
    L.wk = matrix(buffers[size_t(b++)], t, 32, 32, "wk");
    L.wv = matrix(buffers[size_t(b++)], t, 32, 32, "wv");
    L.wo = matrix(buffers[size_t(b++)], t, 32, 32, "wo");
    L.w_gate = matrix(buffers[size_t(b++)], t, 64, 32, "w_gate");
    L.w_up = matrix(buffers[size_t(b++)], t, 64, 32, "w_up");
    L.w_down = matrix(buffers[size_t(b++)], t, 32, 64, "w_down");
    b = 8;
  }
  try {
    const LoraAdapter a = LoraAdapter::open(dir.string());
    merge_lora(a, ModelConfig{}, w);
  } catch (const InputError&) {
  }
  return 0;
}

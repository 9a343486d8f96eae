// libFuzzer target: GgufFile::parse on arbitrary bytes must either return a file whose tensors lie inside the
// buffer or throw InputError; never crash, hang or read out of bounds. Then every metadata getter runs on every
// key, and every tensor of a type we compute with (up to 2^18 elements) is dequantized, dotted with a vector and
// (Q8_0/Q4_0/Q4_1/Q5_0/Q5_1/F16/BF16) requantized, so the block decoders see arbitrary bits, NaN and infinite scales included.
// Seed corpus: fuzz/corpus/gguf (copies of tests/fixtures/gguf/small.gguf and align64.gguf).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/formats/gguf.h"
#include "engine/formats/gguf_quant.h"
#include "engine/util/error.h"

using namespace specscope;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    GgufFile g = GgufFile::parse(data, size, "fuzz");
    volatile float sink = 0;
    for (const auto& [key, v] : g.metadata()) {
      // Each getter either returns or refuses the type with InputError.
      try { sink = sink + float(g.get_string(key).size()); } catch (const InputError&) {}
      try { sink = sink + float(g.get_int(key)); } catch (const InputError&) {}
      try { sink = sink + float(g.get_uint(key)); } catch (const InputError&) {}
      try { sink = sink + float(g.get_float(key)); } catch (const InputError&) {}
      try { sink = sink + float(g.get_bool(key)); } catch (const InputError&) {}
      try { sink = sink + float(g.get_string_array(key).size()); } catch (const InputError&) {}
      try { sink = sink + float(g.get_int_array(key).size()); } catch (const InputError&) {}
      try { sink = sink + float(g.get_float_array(key).size()); } catch (const InputError&) {}
      try { sink = sink + float(g.get_bool_array(key).size()); } catch (const InputError&) {}
    }
    int64_t budget = int64_t(1) << 20;  // elements dequantized per input
    for (const auto& t : g.tensors()) {
      if (t.nbytes && (t.data < data || t.data + t.nbytes > data + size)) __builtin_trap();
      if (t.nbytes != t.row_bytes() * uint64_t(t.rows())) __builtin_trap();
      (void)t.shape_str();
      if (!ggml_can_dequantize(t.type) || t.numel() == 0 || t.numel() > (int64_t(1) << 18) || t.numel() > budget)
        continue;
      budget -= t.numel();
      std::vector<float> w = g.dequantize(t);
      std::vector<float> x(size_t(t.cols()));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 7) - 3) * 0.25f;
      for (int64_t r = 0; r < t.rows(); ++r) {
        sink = sink + vec_dot(t.type, t.row(r), x.data(), t.cols());
        sink = sink + vec_dot_with(VecDotKernel::Scalar, t.type, t.row(r), x.data(), t.cols());
      }
      if (ggml_can_quantize(t.type)) {
        std::vector<uint8_t> q(t.nbytes);
        for (int64_t r = 0; r < t.rows(); ++r)
          quantize_row(t.type, w.data() + r * t.cols(), q.data() + size_t(r) * t.row_bytes(), t.cols());
        std::vector<float> back(w.size());
        dequantize_row(t.type, q.data(), back.data(), t.numel());
        sink = sink + back[0];
      }
    }
  } catch (const InputError&) {
  }
  return 0;
}

#pragma once
// The form a small model's dense weights take on the CPU when a context or head asks for one (a drafter beside its
// target, whose bytes compete with the target's for the caches): as loaded, int8 with one scale per row
// (int8_panels.h), or 4 bits with one scale per 32 weights (int4_panels.h). Options draft-weights and head-weights
// name it; the drafts change with it, the verified output does not.
#include <cstdint>
#include <optional>
#include <string_view>

#include "engine/util/tensor.h"

namespace specscope::cpu {

enum class WeightForm : uint8_t { AsLoaded, Int8, Int4 };

const char* weight_form_name(WeightForm f);  // "as-loaded", "int8", "int4"
std::optional<WeightForm> parse_weight_form(std::string_view name);
// Whether this CPU has the form's kernel (the requantized forms run on AVX-512 VNNI or on AVX2, each with F16C for
// the scales: int8_panels_supported, int4_panels_supported); AsLoaded always.
bool weight_form_supported(WeightForm f);
// Gives W a requantized copy in form f (W.requantized, W.requantized_bits) when f is supported here and W is dense;
// block-quantized weights keep their own integer kernels, and AsLoaded changes nothing.
void requantize(TensorView& W, WeightForm f);
// Y [n][m] = X [n][k] . W^T (+ bias) through W's requantized copy (W.requantized must be set).
void linear_requantized(const float* X, int n, const TensorView& W, const float* bias, float* Y);

}  // namespace specscope::cpu

#include "engine/cpu/weight_form.h"

#include <stdexcept>

#include "engine/cpu/int4_panels.h"
#include "engine/cpu/int8_panels.h"
#include "engine/cpu/op_profile.h"

namespace specscope::cpu {

const char* weight_form_name(WeightForm f) {
  switch (f) {
    case WeightForm::Int8: return "int8";
    case WeightForm::Int4: return "int4";
    default: return "as-loaded";
  }
}

std::optional<WeightForm> parse_weight_form(std::string_view name) {
  for (auto f : {WeightForm::AsLoaded, WeightForm::Int8, WeightForm::Int4})
    if (name == weight_form_name(f)) return f;
  return std::nullopt;
}

bool weight_form_supported(WeightForm f) {
  switch (f) {
    case WeightForm::Int8: return int8_panels_supported();
    case WeightForm::Int4: return int4_panels_supported();
    default: return true;
  }
}

void requantize(TensorView& W, WeightForm f) {
  if (f == WeightForm::AsLoaded || dtype_is_block(W.dtype) || !weight_form_supported(f)) return;
  if (f == WeightForm::Int8) {
    W.requantized = pack_int8_panels(W);
    W.requantized_bits = 8;
  } else {
    W.requantized = pack_int4_panels(W);
    W.requantized_bits = 4;
  }
}

void linear_requantized(const float* X, int n, const TensorView& W, const float* bias, float* Y) {
  if (W.requantized_bits == 8) {
    const auto& p = *static_cast<const Int8Panels*>(W.requantized.get());
    const ProfileScope profile(Op::Linear, double(W.numel()) * std::max(n, 0), double(p.m) * double(p.k));
    return linear_int8_panels(X, n, p, bias, Y);
  }
  if (W.requantized_bits == 4) {
    const auto& p = *static_cast<const Int4Panels*>(W.requantized.get());
    const ProfileScope profile(Op::Linear, double(W.numel()) * std::max(n, 0), double(p.panel_bytes) * p.panels);
    return linear_int4_panels(X, n, p, bias, Y);
  }
  throw std::logic_error("linear_requantized: '" + W.name + "' has no requantized copy");
}

}  // namespace specscope::cpu

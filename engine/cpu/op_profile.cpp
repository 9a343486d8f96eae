#include "engine/cpu/op_profile.h"

namespace specscope::cpu {
namespace {
thread_local OpProfile::Table* t_active = nullptr;
}

std::string_view op_name(Op op) {
  switch (op) {
    case Op::Linear: return "linear";
    case Op::LmHead: return "lm_head";
    case Op::Attention: return "attention";
    case Op::Norm: return "norm";
    case Op::Rope: return "rope";
    case Op::Elementwise: return "elementwise";
    case Op::Embedding: return "embedding";
    case Op::kCount: break;
  }
  return "?";
}

thread_local bool OpProfile::open_ = false;
OpProfile::Table* OpProfile::active() { return t_active; }

OpProfile::Recording::Recording() : previous_(t_active) { t_active = &table_; }
OpProfile::Recording::~Recording() { t_active = previous_; }
const OpProfile::Table& OpProfile::Recording::totals() const { return table_; }
void OpProfile::Recording::clear() { table_ = Table{}; }

}  // namespace specscope::cpu

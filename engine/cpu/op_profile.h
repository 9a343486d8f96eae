#pragma once
// Where a forward's time goes, by kind of operation: what `specscope-cli bench` reports beside the roofline
// (engine/cpu/roofline.h) to say which part of an n-token step is far from its bound.
//
// Off by default and then costs one thread-local branch per operation. OpProfile::Recording turns it on for
// the calling thread (the one running the forward: the team's workers never time anything); each
// ProfileScope adds its wall time, multiply-adds and bytes of weights read to that thread's totals.
#include <array>
#include <chrono>
#include <cstdint>
#include <string_view>

namespace specscope::cpu {

enum class Op : int { Linear, LmHead, Attention, Norm, Rope, Elementwise, Embedding, kCount };
std::string_view op_name(Op op);

struct OpTotals {
  double seconds = 0;
  double macs = 0;          // multiply-adds
  double weight_bytes = 0;  // bytes of weights streamed (linear layers)
  int64_t calls = 0;
};

class OpProfile {
 public:
  using Table = std::array<OpTotals, size_t(Op::kCount)>;
  // Records on the calling thread while alive (nesting is not supported: the inner one wins until it ends).
  class Recording {
   public:
    Recording();
    ~Recording();
    Recording(const Recording&) = delete;
    Recording& operator=(const Recording&) = delete;
    const Table& totals() const;
    void clear();

   private:
    Table* previous_;
    Table table_{};
  };
  static Table* active();  // the calling thread's table while recording, else null

 private:
  friend class ProfileScope;
  static thread_local bool open_;  // a ProfileScope is timing on this thread
};

// Times one operation on the calling thread when it records. Scopes opened inside another one add nothing: the
// outer one (e.g. the LM head around its linear()) owns the time.
class ProfileScope {
 public:
  explicit ProfileScope(Op op, double macs = 0, double weight_bytes = 0) {
    if (OpProfile::Table* t = OpProfile::active(); t && !OpProfile::open_) {
      OpProfile::open_ = true;
      table_ = t;
      op_ = op;
      macs_ = macs;
      bytes_ = weight_bytes;
      start_ = std::chrono::steady_clock::now();
    }
  }
  ~ProfileScope() {
    if (!table_) return;
    OpProfile::open_ = false;
    OpTotals& o = (*table_)[size_t(op_)];
    o.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    o.macs += macs_;
    o.weight_bytes += bytes_;
    o.calls += 1;
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  OpProfile::Table* table_ = nullptr;
  Op op_ = Op::Linear;
  double macs_ = 0, bytes_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace specscope::cpu

// The roofline `bench` sets each step against (engine/cpu/roofline.h) measures the peaks of the instruction set the
// kernels run: with AVX2 forced on an AVX-512 CPU (SPECSCOPE_MATMUL_ISA=avx2, set_isa) the steps run AVX2's kernels,
// and an AVX-512 peak beside them would put the bound too low wherever 512-bit FMAs are twice as fast.
#include <gtest/gtest.h>

#include <string>

#include "engine/cpu/matmul.h"
#include "engine/cpu/roofline.h"

namespace specscope {
namespace {

bool any_path_names(const cpu::Roofline& r, const std::string& isa) {
  for (const auto& p : r.peaks)
    if (p.path.find(isa) != std::string::npos) return true;
  return false;
}

TEST(Roofline, MeasuresThePeaksOfTheInstructionSetTheKernelsRun) {
  for (cpu::Isa isa : {cpu::Isa::Avx512, cpu::Isa::Avx2}) {
    if (!cpu::isa_supported(isa)) continue;
    ASSERT_EQ(cpu::set_isa(isa), isa);
    const cpu::Roofline r = cpu::measure_roofline(size_t(1) << 20);
    const std::string name = cpu::active_isa();
    SCOPED_TRACE(name);
    const cpu::PathPeak* fma = r.peak("f32 fma");
    ASSERT_NE(fma, nullptr);
    EXPECT_EQ(fma->path, "f32 fma (" + name + ")");
    EXPECT_GT(fma->macs_per_second, 0);
    EXPECT_GT(r.read_bytes_per_second, 0);
    if (isa == cpu::Isa::Avx2) {
      EXPECT_FALSE(any_path_names(r, "avx512")) << "an AVX-512 peak beside AVX2's kernels";
      EXPECT_EQ(r.peak("bf16 dot"), nullptr) << "no bf16 dot kernel runs with AVX2";
    }
  }
  cpu::set_isa(cpu::Isa::Auto);
}

}  // namespace
}  // namespace specscope

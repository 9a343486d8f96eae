// Backend selection (engine/model/backend.h): names, automatic fallback to the CPU, and clear errors when CUDA
// is asked for but absent — in the library and through the CLI's --backend flag.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "engine/model/backend.h"
#include "engine/model/model.h"
#include "engine/util/error.h"
#include "tests/test_support.h"

using namespace specscope;

TEST(Backend, NamesParseAndBadOnesAreInputErrors) {
  EXPECT_EQ(parse_backend("auto"), Backend::Auto);
  EXPECT_EQ(parse_backend("cpu"), Backend::Cpu);
  EXPECT_EQ(parse_backend("cuda"), Backend::Cuda);
  EXPECT_THROW(parse_backend("tpu"), InputError);
}

TEST(Backend, AutoFallsBackToTheCpuWithoutAGpuBackend) {
  // This test binary registers no GPU backend: auto is the CPU, and cuda is refused with the reason.
  ASSERT_FALSE(gpu_backend_built());
  EXPECT_EQ(resolve_backend(Backend::Auto), Backend::Cpu);
  try {
    resolve_backend(Backend::Cuda);
    ADD_FAILURE() << "cuda without a backend must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--backend"), std::string::npos) << e.what();
  }
  auto model = Model::load(test::fixture("models/llama_bytelevel_f32"));
  EXPECT_EQ(new_context(*model, Backend::Auto, 64)->backend_name(), "cpu");
}

TEST(Backend, CliReportsAMissingCudaDeviceAsBadInput) {
  // Whether or not this build has the CUDA backend, the machines CI runs on have no GPU: exit code 2 and a reason.
  auto r = test::run_cli("run --model " + test::fixture("models/llama_bytelevel_f32") +
                         " --prompt hi --max-tokens 2 --no-record --backend cuda");
  if (r.out.find("cuda") == std::string::npos || r.exit_code == 0) {
    GTEST_SKIP() << "a CUDA device is visible here; covered by cuda_parity_test";
  }
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--backend"), std::string::npos) << r.out;
}

TEST(Backend, RunJsonNamesTheBackendAndTheDevice) {
  // --backend auto on a machine without a GPU: the CPU, and the summary says so and on what (the CPU model).
  auto r = test::run_cli("run --model " + test::fixture("models/llama_bytelevel_f32") +
                         " --prompt hi --max-tokens 2 --no-record --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j;  // the summary: the JSON line whose type is "summary" (the step records come before it)
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty() && line[0] == '{') {
      const auto parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_object() && parsed.value("type", "") == "summary") j = parsed;
    }
  ASSERT_TRUE(j.is_object()) << r.out;
  if (j.at("backend") == "cuda") GTEST_SKIP() << "a CUDA device is visible here";
  EXPECT_EQ(j.at("backend"), "cpu");
  EXPECT_FALSE(j.at("device").get<std::string>().empty()) << r.out;
}

#pragma once
// Error checks for the CUDA runtime and cuBLAS: a failed call throws std::runtime_error naming the call, the
// file and the line (a GPU failure is an internal error, not bad input).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace specscope::cuda {

inline void check(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("CUDA error in ") + what + " (" + file + ":" + std::to_string(line) +
                             "): " + cudaGetErrorString(e));
}
inline void check(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLAS error ") + std::to_string(int(s)) + " in " + what + " (" + file +
                             ":" + std::to_string(line) + ")");
}

}  // namespace specscope::cuda

#define CUDA_CHECK(call) ::specscope::cuda::check((call), #call, __FILE__, __LINE__)

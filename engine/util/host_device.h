#pragma once
// SPEC_HD marks small header functions that both the C++ engine and the CUDA kernels compile: nvcc sees
// __host__ __device__, a plain C++ compiler sees an inline function.
#if defined(__CUDACC__)
#define SPEC_HD __host__ __device__ __forceinline__
#else
#define SPEC_HD inline
#endif

#pragma once
// Registers the CUDA backend with the engine (engine/model/backend.h). Executables built with it call this
// once in main(); without a visible device the engine keeps running on the CPU.
namespace specscope::cuda {
void register_backend();
}

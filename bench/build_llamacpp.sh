#!/usr/bin/env bash
# Builds the llama.cpp that bench/compare_llamacpp.sh measures SpecScope against, from the source that the pinned
# llama-cpp-python sdist vendors (so the C++ tools and the Python binding are one and the same llama.cpp), and a
# venv holding that sdist's binding linked to the libraries built here (no second 20-minute build inside pip).
#   bash bench/build_llamacpp.sh          prints the directory holding bin/llama-bench etc. on its last line
#   bash bench/build_llamacpp.sh --cuda 90
#       llama-bench alone with llama.cpp's CUDA backend for that GPU architecture (90: H100/H200), for a GPU machine
#       (issue 23: "what a user would pick instead"; scripts/gpu-pack.sh carries it in its peers part). Built here
#       with the CUDA toolkit at /usr/local/cuda, because the GPU machine's few minutes cannot hold a build of
#       ggml-cuda (about 280 steps, ~30 minutes on 2 cores; resumable: run it again). Static ggml and llama, the CUDA
#       runtime and cuBLAS from the machine (libcudart.so.13, libcublas.so.13), the CPU part for any AVX2 host
#       (GGML_NATIVE off). No binding venv. Prints the directory holding bin/llama-bench.
#   bash bench/build_llamacpp.sh --no-amx
#       llama-bench alone for this host's AVX-512/VNNI/BF16 without llama.cpp's AMX buffer (the ISA
#       flags of GGML_NATIVE, AMX left out; its interleaved "repack" copies stay). On Sapphire Rapids the AMX buffer's
#       matrix product crashes for Q8_0/Q4_K (llama.cpp issue #20824), and llama-bench --repack 0 would take the
#       repacked AVX-512 kernels away too, so this is what a user of that CPU runs. No binding venv. Prints the
#       directory holding bin/llama-bench (compare_llamacpp.sh --no-amx uses it).
# Idempotent: a finished build (its stamp file) is reused. Cache: ${XDG_CACHE_HOME:-$HOME/.cache}/specscope/llamacpp.
# The binding's venv: $LLAMACPP_VENV (default ~/.cache/specscope/llamacpp-venv), as bench/llamacpp_bench.py expects.
set -euo pipefail
LLAMA_CPP_PYTHON_VERSION=0.3.36   # the one pin; README cites it
JOBS="${JOBS:-2}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/specscope/llamacpp"
src="$cache/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION"
build="$cache/build-$LLAMA_CPP_PYTHON_VERSION"
venv="${LLAMACPP_VENV:-$HOME/.cache/specscope/llamacpp-venv}"
die() { echo "build_llamacpp.sh: $*" >&2; exit 1; }
for t in python3 cmake c++ tar; do command -v "$t" >/dev/null || die "needs $t on PATH (apt-get install cmake g++ python3-venv)"; done
cuda_arch="" no_amx=0
case "${1:-}" in
  --cuda) cuda_arch=${2:?"--cuda needs an architecture, e.g. 90"} ;;
  --no-amx) no_amx=1 ;;
  "") ;;
  *) die "unknown argument $1 (--cuda ARCH, --no-amx or nothing)" ;;
esac
# Only the binding needs a venv; the CUDA llama-bench and the AMX-less build are the C++ tools alone.
[ -n "$cuda_arch" ] || [ "$no_amx" = 1 ] || python3 -m venv --help >/dev/null 2>&1 ||
  die "needs python3's venv module (apt-get install python3-venv)"
mkdir -p "$cache"

if [ ! -d "$src/vendor/llama.cpp" ]; then
  # --no-binary: the sdist, whose vendor/llama.cpp is the exact source the binding was released with.
  sdist="$cache/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
  [ -f "$sdist" ] || python3 -m pip download --quiet --no-binary :all: --no-deps \
      "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$cache" >&2 || die "could not download the llama-cpp-python $LLAMA_CPP_PYTHON_VERSION sdist from PyPI"
  tar -xzf "$sdist" -C "$cache" || die "could not unpack $sdist"
fi

if [ -n "$cuda_arch" ]; then
  build="$cache/build-$LLAMA_CPP_PYTHON_VERSION-cuda$cuda_arch"
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  [ -x "$nvcc" ] || die "--cuda needs nvcc (the CUDA toolkit at /usr/local/cuda)"
  if [ ! -f "$build/.built" ]; then
    cmake -S "$src/vendor/llama.cpp" -B "$build" -G "$(command -v ninja >/dev/null && echo Ninja || echo 'Unix Makefiles')" \
        -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF \
        -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_OPENMP=ON -DGGML_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES="$cuda_arch" -DGGML_CUDA_NCCL=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_EXAMPLES=OFF >&2 || die "cmake configure failed (see above)"
    cmake --build "$build" -j"$JOBS" --target llama-bench >&2 || die "llama.cpp CUDA build failed (see above)"
    touch "$build/.built"
  fi
  echo "$build/bin"
  exit 0
fi

if [ "$no_amx" = 1 ]; then
  build="$cache/build-$LLAMA_CPP_PYTHON_VERSION-noamx"
  flag() { grep -q -w "$1" /proc/cpuinfo && echo ON || echo OFF; }  # the ISA extension GGML_NATIVE would use
  if [ ! -f "$build/.built" ]; then
    cmake -S "$src/vendor/llama.cpp" -B "$build" -G "$(command -v ninja >/dev/null && echo Ninja || echo 'Unix Makefiles')" \
        -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_OPENMP=ON \
        -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX_VNNI="$(flag avx_vnni)" \
        -DGGML_AVX512="$(flag avx512f)" -DGGML_AVX512_VBMI="$(flag avx512vbmi)" \
        -DGGML_AVX512_VNNI="$(flag avx512_vnni)" -DGGML_AVX512_BF16="$(flag avx512_bf16)" \
        -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TOOLS=ON \
        -DLLAMA_BUILD_EXAMPLES=OFF >&2 || die "cmake configure failed (see above)"
    cmake --build "$build" -j"$JOBS" --target llama-bench >&2 || die "llama.cpp build failed (see above)"
    touch "$build/.built"
  fi
  echo "$build/bin"
  exit 0
fi

if [ ! -f "$build/.built" ]; then
  # Shared libraries so that the binding loads the very libllama/libggml the tools use. GGML_NATIVE: the host's
  # AVX-512/VNNI/BF16 kernels, as llama-cpp-python's own CMAKE_ARGS build did. No network code (OPENSSL off; this
  # version ignores LLAMA_CURL, which is kept for older ones), no tests, server or unified app.
  cmake -S "$src/vendor/llama.cpp" -B "$build" -G "$(command -v ninja >/dev/null && echo Ninja || echo 'Unix Makefiles')" \
      -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON -DGGML_OPENMP=ON -DLLAMA_CURL=OFF \
      -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
      -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_EXAMPLES=ON >&2 || die "cmake configure failed (see above)"
  # llama-bench: decode and n-token forward; llama-speculative: draft+target decoding; llama-quantize: the files.
  cmake --build "$build" -j"$JOBS" --target llama llama-bench llama-speculative llama-quantize >&2 \
    || die "llama.cpp build failed (see above)"
  touch "$build/.built"
fi

if [ ! -f "$venv/.specscope-llamacpp-$LLAMA_CPP_PYTHON_VERSION" ]; then
  # The binding is pure ctypes: its Python package from the same sdist, with llama_cpp/lib pointing at this build.
  python3 -m venv "$venv" || die "could not create $venv"
  "$venv/bin/pip" install --quiet "numpy>=1.20" "typing-extensions>=4.5" "diskcache>=5.6.1" "jinja2>=2.11.3" >&2 \
    || die "pip could not install the binding's dependencies into $venv"
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  rm -rf "$site/llama_cpp"
  cp -r "$src/llama_cpp" "$site/llama_cpp"
  mkdir -p "$site/llama_cpp/lib"
  for so in "$build"/bin/lib*.so*; do ln -sf "$so" "$site/llama_cpp/lib/"; done
  "$venv/bin/python" -c 'import llama_cpp' || die "the binding in $venv does not import"
  touch "$venv/.specscope-llamacpp-$LLAMA_CPP_PYTHON_VERSION"
fi
echo "$build/bin"

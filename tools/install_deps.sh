#!/usr/bin/env bash
# Installs what building and testing aotc needs on a Debian/Ubuntu machine: compilers, CMake,
# protobuf, the ONNX C++ protobuf classes and backend test data (Debian packages), GoogleTest, and
# the Python packages used to build example models and reference outputs. CUDA is expected at
# $CUDA_HOME or /usr/local/cuda (nvcc is only needed to compile models, not to build aotc).
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# gcc-aarch64-linux-gnu: the cross compiler for Jetson libraries (host code for aarch64).
# clang + libclang-rt-dev (libFuzzer and the sanitizer runtimes): the fuzz harnesses (tools/fuzz.sh,
# CTest fuzz_regression).
packages=(build-essential cmake g++ libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
          libgtest-dev googletest python3 python3-pip gcc-aarch64-linux-gnu clang libclang-rt-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[install_deps] apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Python: onnx to build example models, onnxruntime + numpy for reference outputs. onnx is pinned:
# its package generates the node tests of the newest release in the build
# (tools/gen_node_test_data.py reads the pin from the next line and refuses another version), so the
# 1.23 conformance figures are reproducible. Change it together with docs/conformance.md's figures.
onnx_version=1.23.2
if ! python3 -c 'import onnxruntime, numpy' 2>/dev/null ||
   ! python3 -c "import onnx, sys; sys.exit(onnx.__version__ != '$onnx_version')" 2>/dev/null; then
  echo "[install_deps] pip install onnx==$onnx_version onnxruntime numpy"
  python3 -m pip install -q "onnx==$onnx_version" onnxruntime numpy 2>/dev/null ||
    python3 -m pip install -q --break-system-packages "onnx==$onnx_version" onnxruntime numpy
fi

# CUTLASS headers (library-kernel templates such as templates/cutlass_conv2d_fprop.cu.in include
# them): the PyPI package ships them under cutlass_library/source/include, where aotc finds them.
if ! python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("cutlass_library") is None)' 2>/dev/null; then
  echo "[install_deps] pip install nvidia-cutlass"
  # --no-deps: only the headers are used (aotc locates the package without importing it); the
  # package's Python dependencies (cuda-python, scipy, ...) are for its own generator.
  python3 -m pip install -q --no-deps nvidia-cutlass 2>/dev/null ||
    python3 -m pip install -q --no-deps --break-system-packages nvidia-cutlass
fi

# scikit-learn: its bundled digits data set (no download) is the real data of the int8 accuracy
# test (models/digits_int8.py, CTest models_digits_int8).
if ! python3 -c 'import sklearn' 2>/dev/null; then
  echo "[install_deps] pip install scikit-learn"
  python3 -m pip install -q scikit-learn 2>/dev/null ||
    python3 -m pip install -q --break-system-packages scikit-learn
fi

cuda="${CUDA_HOME:-/usr/local/cuda}"
if [ -x "$cuda/bin/nvcc" ]; then
  echo "[install_deps] CUDA: $("$cuda/bin/nvcc" --version | tail -n 2 | head -n 1)"
else
  echo "[install_deps] note: no nvcc at $cuda/bin/nvcc: aotc builds, but compiling models needs CUDA (set CUDA_HOME)"
fi

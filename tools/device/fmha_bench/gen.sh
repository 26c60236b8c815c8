#!/usr/bin/env bash
# Builds tools/device/fmha_bench/bench.cu here (no GPU needed) into .deps/fmha/fmha_bench.bin, which the
# device tool carries (.deps). Needs the nvidia-cutlass package (tools/install_deps.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."
src="$(python3 -c 'import cutlass_library, os; print(os.path.dirname(cutlass_library.__file__))')/source"
mkdir -p .deps/fmha
/usr/local/cuda/bin/nvcc -O3 -std=c++17 --expt-relaxed-constexpr -DNDEBUG -gencode arch=compute_90a,code=sm_90a \
  -I"$src/include" -I"$src/tools/util/include" -I"$src/examples/88_hopper_fmha" -I"$src/examples/common" \
  tools/device/fmha_bench/bench.cu -o .deps/fmha/fmha_bench.bin
echo "wrote .deps/fmha/fmha_bench.bin"

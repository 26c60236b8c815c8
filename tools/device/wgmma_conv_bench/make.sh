#!/usr/bin/env bash
# Builds the standalone sm_90a convolution bench of docs/perf_notes.md v39 on the CPU machine:
# a host program per configuration records CUTLASS's params and tensor maps for every problem of
# shapes.txt (the mechanism aotc now uses: templates/host_params.cuh), and `bench` replays them on
# the GPU (the driver re-encodes the descriptors), checks each against a direct convolution and
# times it. Usage: bash make.sh OUTDIR [NDEBUG=1]; then on the GPU machine
#   OUTDIR/bench shapes.txt OUTDIR/rec_v0.txt ... OUTDIR/rec_v7.txt
# NDEBUG=0 reproduces device call 1 (CUTLASS's device asserts compiled in). VARIANTS=s23 builds the
# twenty-third session's six configurations (variants.py; then rec_v0 .. rec_v5), and BENCH_COLD=1
# on the GPU adds a time per launch with L2 flushed before it. Other problems: records from the
# same host programs, e.g. ResNet-50's bs32 1x1 convolutions (twenty-third session, call 3):
#   cd OUTDIR && cp .../shapes_1x1.txt . && for v in 0 1 2 3 4 5; do ./host_v$v shapes_1x1.txt rec1_v$v.txt; done
#   ./bench shapes_1x1.txt rec1_v0.txt ... rec1_v5.txt
# (shapes: kernel-name 5 17 N H W C K R S pad_h pad_w pad_h_end pad_w_end stride_h stride_w dil_h dil_w y_ld residual)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: make.sh OUTDIR}"
mkdir -p "$out"
export S="${CUTLASS_SOURCE:-$(python3 -c 'import cutlass_library, os; print(os.path.join(os.path.dirname(cutlass_library.__file__), "source"))')}"
nd=""; [ "${NDEBUG:-1}" = 1 ] && nd="-DNDEBUG"
cp "$here/conv_sm90.cu" "$here/bench.cu" "$here/shapes.txt" "$out/"
cp "$here/../../../templates/library_params.cuh" "$here/../../../templates/host_params.cuh" "$out/"
cd "$out"
python3 "$here/variants.py"
bash hostvariants.sh
/usr/local/cuda/bin/nvcc -std=c++17 --expt-relaxed-constexpr -O3 $nd -I. -I"$S/include" -I"$S/tools/util/include" \
  -gencode arch=compute_90a,code=sm_90a -o bench bench.cu -lcuda

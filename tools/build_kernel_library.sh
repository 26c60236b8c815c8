#!/usr/bin/env bash
# Builds aotc's kernel library: the CUTLASS 3.x kernels (sm_90a wgmma convolutions, GEMMs,
# attention) that the given models use, each compiled alone from a file that names nothing of a
# model, and each one's compile-time params builder (a host program, codegen/host_params.h),
# stored in the kernel cache's format (codegen/device_source.h, codegen/kernel_cache.h).
# aotc reads the library by default from <its folder>/../share/aotc/kernels (or $AOTC_KERNEL_LIBRARY,
# or --kernel-library DIR) and copies a kernel it holds instead of compiling it: the kernels that
# dominate a cold build (about 50 s of nvcc each on a 2-core machine) are then paid once, here.
#
# Without model arguments it builds from the configuration table: every sm_90 wgmma convolution
# row of ir/ops/conv_configs.h (WGMMA_ROWS below; a CPU test checks it against the table) with
# every activation exporters fuse into a convolution (models/kernel_library_models.py: none, Relu,
# ReLU6, HardSwish, SiLU, Sigmoid, Gelu, LeakyRelu), fp16 - so that networks nobody built the
# library from hit it too. `cmake --build build --target kernel_library` runs that.
#
# usage: tools/build_kernel_library.sh [--aotc PATH] [--out DIR] [--arch A] [--precision P]...
#                                      [--activations LIST] [model.onnx...]
#   --aotc         the aotc to use and to install beside (default build/bin/aotc)
#   --out          the library folder (default <aotc's folder>/../share/aotc/kernels)
#   --arch         target(s) as aotc takes them (default sm_90; the library serves only the same flags)
#   --precision    fp16 (default), bf16 or fp32; repeatable (models only; the table is fp16)
#   --activations  the table's activations, comma list (default all of kernel_library_models.py's)
#   models         ONNX files, built whole instead of the table
# A model whose build fails stops the script. Kernels already in the library are not compiled again.
set -euo pipefail
cd "$(dirname "$0")/.."
# The rule rows of ir/ops/conv_configs.h's kWgmma math (conv_configs_of(ConvMath::kWgmma)).
WGMMA_ROWS="wg128x64x32_s6_2cta wg128x32x32_s6_2cta wg128x128x64_auto wg64x128x64_auto wg128x64x64_s4_2cta"
aotc=build/bin/aotc
out=""
arch=sm_90
precisions=()
models=()
activations=""
while [ $# -gt 0 ]; do
  case "$1" in
    --aotc) aotc="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --arch) arch="$2"; shift 2 ;;
    --precision) precisions+=("$2"); shift 2 ;;
    --activations) activations="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    -*) echo "build_kernel_library.sh: unknown option $1" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
[ ${#precisions[@]} -gt 0 ] || precisions=(fp16)
if [ ! -x "$aotc" ]; then
  echo "build_kernel_library.sh: $aotc not found; build it first (cmake --build build --target aotc)" >&2
  exit 2
fi
[ -n "$out" ] || out="$(cd "$(dirname "$aotc")/.." && pwd)/share/aotc/kernels"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
start=$SECONDS
# One aotc build, adding its CUTLASS 3.x kernels and their builders to the library.
add() {  # add MODEL PRECISION [aotc options...]
  local m="$1" p="$2"
  shift 2
  echo "[build_kernel_library] $(basename "$m") --precision $p --arch $arch $*"
  "$aotc" "$m" -o "$work/lib.so" --precision "$p" --arch "$arch" --no-cache \
    --kernel-library "$out" --add-to-kernel-library "$@" 2>&1 | grep -E "kernel library|codegen:|error" || true
  [ -f "$work/lib.so" ] || { echo "build_kernel_library.sh: aotc failed on $m ($p $*)" >&2; exit 1; }
  rm -f "$work/lib.so"
}
if [ ${#models[@]} -eq 0 ]; then
  python3 models/kernel_library_models.py "$work/table" >/dev/null
  for act in ${activations//,/ }; do
    [ -f "$work/table/conv_$act.onnx" ] || { echo "build_kernel_library.sh: unknown activation $act" >&2; exit 2; }
  done
  for m in "$work"/table/conv_*.onnx; do
    act=$(basename "$m" .onnx); act=${act#conv_}
    if [ -n "$activations" ] && [[ ",$activations," != *",$act,"* ]]; then continue; fi
    for row in $WGMMA_ROWS; do add "$m" fp16 --conv-config "$row"; done
  done
else
  for m in "${models[@]}"; do
    for p in "${precisions[@]}"; do add "$m" "$p"; done
  done
fi
echo "[build_kernel_library] $(ls "$out" | grep -c '\.fatbin$') entries (kernels and their params builders) in $out, $((SECONDS - start)) s"

#!/usr/bin/env bash
# Builds aotc's kernel library: the CUTLASS 3.x kernels (sm_90a wgmma convolutions, GEMMs,
# attention) that the given models use, each compiled alone from a file that names nothing of a
# model, and each one's compile-time params builder (a host program, codegen/host_params.h),
# stored in the kernel cache's format (codegen/device_source.h, codegen/kernel_cache.h).
# aotc reads the library by default from <its folder>/../share/aotc/kernels (or $AOTC_KERNEL_LIBRARY,
# or --kernel-library DIR) and copies a kernel it holds instead of compiling it: the kernels that
# dominate a cold build (about 50 s of nvcc each on a 2-core machine) are then paid once, here.
#
# usage: tools/build_kernel_library.sh [--aotc PATH] [--out DIR] [--arch A] [--precision P]... [model.onnx...]
#   --aotc       the aotc to use and to install beside (default build/bin/aotc)
#   --out        the library folder (default <aotc's folder>/../share/aotc/kernels)
#   --arch       target(s) as aotc takes them (default sm_90; the library serves only the same flags)
#   --precision  fp16 (default), bf16 or fp32; repeatable
#   models       ONNX files; default ResNet-50 at batch 1 and 32 (models/resnet50_onnx.py)
# A model whose build fails stops the script. Kernels already in the library are not compiled again.
set -euo pipefail
cd "$(dirname "$0")/.."
aotc=build/bin/aotc
out=""
arch=sm_90
precisions=()
models=()
while [ $# -gt 0 ]; do
  case "$1" in
    --aotc) aotc="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --arch) arch="$2"; shift 2 ;;
    --precision) precisions+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
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
if [ ${#models[@]} -eq 0 ]; then
  for b in 1 32; do
    python3 models/resnet50_onnx.py "$work/resnet50_bs$b.onnx" --batch "$b" >/dev/null
    models+=("$work/resnet50_bs$b.onnx")
  done
fi
mkdir -p "$out"
start=$SECONDS
for m in "${models[@]}"; do
  for p in "${precisions[@]}"; do
    echo "[build_kernel_library] $m --precision $p --arch $arch"
    "$aotc" "$m" -o "$work/lib.so" --precision "$p" --arch "$arch" --no-cache \
      --kernel-library "$out" --add-to-kernel-library 2>&1 | grep -E "kernel library|codegen:|error" || true
    [ -f "$work/lib.so" ] || { echo "build_kernel_library.sh: aotc failed on $m ($p)" >&2; exit 1; }
    rm -f "$work/lib.so"
  done
done
echo "[build_kernel_library] $(ls "$out" | grep -c '\.fatbin$') entries (kernels and their params builders) in $out, $((SECONDS - start)) s"

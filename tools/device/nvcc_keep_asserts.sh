#!/usr/bin/env bash
# nvcc without -DNDEBUG: what aotc ran before the twenty-second session (CUTLASS's device-side
# asserts compiled in). For A/Bs only: aotc --nvcc /abs/path/tools/device/nvcc_keep_asserts.sh.
# Its --version text gets a line more, so the kernel cache never hands it (or aotc) the other
# build's fatbins (the key hashes that text and the arguments aotc passes, which still hold
# -DNDEBUG). Finds the real nvcc like aotc does (CUDA_HOME, /usr/local/cuda, PATH).
nvcc="${CUDA_HOME:+$CUDA_HOME/bin/nvcc}"
[ -x "${nvcc:-}" ] || nvcc=/usr/local/cuda/bin/nvcc
[ -x "$nvcc" ] || nvcc=nvcc
if [ "$#" -eq 1 ] && [ "$1" = "--version" ]; then
  "$nvcc" --version && echo "aotc A/B: device asserts kept (no -DNDEBUG)"
  exit $?
fi
args=()
for a in "$@"; do [ "$a" = "-DNDEBUG" ] || args+=("$a"); done
exec "$nvcc" "${args[@]}"

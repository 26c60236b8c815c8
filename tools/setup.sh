#!/usr/bin/env bash
# One command for a new machine: installs dependencies, builds aotc, compiles the bundled tiny
# example CNN into libtiny_cnn.so, builds a small C program against it and runs it when a GPU is
# present. Usage: tools/setup.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"

tools/install_deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target aotc aotc-run

example="$build/example"
mkdir -p "$example"
python3 models/tiny_cnn.py "$example/tiny_cnn.onnx"
aotc="$(find "$build" -type f -name aotc -perm -u+x | head -n 1)"
"$aotc" "$example/tiny_cnn.onnx" -o "$example/libtiny_cnn.so" --report "$example/report.json"
cc -std=c11 -Wall -I"$example" tools/example/app.c -L"$example" -ltiny_cnn -Wl,-rpath,'$ORIGIN' \
   -o "$example/tiny_cnn_app"
echo "[setup] built $example/libtiny_cnn.so and $example/tiny_cnn_app"

if "$example/tiny_cnn_app"; then
  echo "[setup] the example ran on the GPU"
else
  code=$?
  if [ "$code" -eq 3 ]; then
    echo "[setup] the library was built; running it needs an NVIDIA GPU and driver (none found here)"
  else
    echo "[setup] the example failed (exit $code)"
    exit "$code"
  fi
fi

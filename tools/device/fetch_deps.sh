#!/usr/bin/env bash
# Fills .deps/ (git-ignored) with what a GPU call needs and the GPU machine lacks, so the device
# tool can carry it (carry [".deps"]; tools/device/setup_deps.sh unpacks it there):
#   the Debian packages libonnx-dev, libonnx1, libonnxifi, libgtest-dev, googletest (apt-get download)
#   the nvidia-cutlass wheel (pip download; the same version the installed package has, or 4.2.0.0)
# Usage: tools/device/fetch_deps.sh [DIR]   (default .deps; re-running skips what is there)
set -euo pipefail
dir="${1:-.deps}"
mkdir -p "$dir"
cd "$dir"
debs=(libonnx-dev libonnx1 libonnxifi libgtest-dev googletest)
need=()
for p in "${debs[@]}"; do ls "${p}"_*.deb >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq >/dev/null 2>&1 || true
  apt-get download "${need[@]}" >/dev/null
fi
if ! ls nvidia_cutlass-*.whl >/dev/null 2>&1; then
  ver="$(python3 -c 'import importlib.metadata as m; print(m.version("nvidia-cutlass"))' 2>/dev/null || echo 4.2.0.0)"
  python3 -m pip download -q --no-deps --only-binary=:all: "nvidia-cutlass==$ver" -d . >/dev/null
fi
ls -la

#!/usr/bin/env bash
# Prepares the build dependencies the GPU machine lacks, from what travelled in the working tree:
# Debian .deb files in .deps/ (libonnx-dev, libonnx1, libonnxifi, maybe libgtest-dev/googletest)
# are unpacked with dpkg -x into a prefix under /tmp; GoogleTest is taken from that prefix, the
# system, or built from sources (the prefix, /usr/src/googletest, or a carried folder).
# AOTC_IGNORE_SYSTEM_GTEST=1 skips the system's GoogleTest (to test the source build here).
# Usage: tools/device/setup_deps.sh DEPS_DIR PREFIX ENV_FILE   (writes shell assignments to ENV_FILE:
#   AOTC_PREFIX_PATH, AOTC_LD_PATH, AOTC_BUILD_TESTS, AOTC_NODE_TEST_DATA, AOTC_DEPS_NOTE)
set -uo pipefail
deps="${1:-.deps}"
prefix="${2:-/tmp/aotc-deps}"
env_file="${3:-/tmp/aotc-deps.env}"
jobs="$(nproc 2>/dev/null || echo 4)"
mkdir -p "$prefix"
note=""
multiarch="$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"

unpack_deb() {  # dpkg -x, or ar + tar where dpkg is missing
  local deb="$1"
  if command -v dpkg >/dev/null 2>&1; then
    dpkg -x "$deb" "$prefix"
  else
    local tmp
    tmp="$(mktemp -d)"
    (cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$prefix")
    rm -rf "$tmp"
  fi
}

debs=0
if [ -d "$deps" ]; then
  while IFS= read -r deb; do
    if unpack_deb "$deb"; then
      debs=$((debs + 1))
      echo "unpacked $(basename "$deb")"
    else
      echo "FAILED to unpack $deb"
    fi
  done < <(find "$deps" -maxdepth 2 -name '*.deb' | sort)
fi
echo "unpacked $debs .deb file(s) from $deps into $prefix"

# CUTLASS headers (header-only) from a carried nvidia-cutlass wheel: aotc finds them via CUTLASS_DIR.
cutlass_dir=""
wheel="$(find "$deps" -maxdepth 1 -name 'nvidia_cutlass-*.whl' 2>/dev/null | sort | tail -n 1)"
if [ -n "$wheel" ] && command -v python3 >/dev/null 2>&1; then
  python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); [z.extract(n, sys.argv[2]) for n in z.namelist() if n.startswith(("cutlass_library/source/include/", "cutlass_library/source/examples/41_fused_multi_head_attention/", "cutlass_library/source/examples/88_hopper_fmha/", "cutlass_library/source/tools/util/include/"))]' \
    "$wheel" "$prefix/cutlass" && cutlass_dir="$prefix/cutlass/cutlass_library/source/include" &&
    echo "CUTLASS headers from $(basename "$wheel")"
fi

usr="$prefix/usr"
libdir="$usr/lib/$multiarch"
# ONNX's exported CMake targets check that every file of the export set exists, including the
# onnxifi libraries we never link; placeholders keep find_package(ONNX) working when the
# libonnxifi .deb did not travel.
if [ -f "$libdir/cmake/ONNX/ONNXTargets.cmake" ]; then
  for f in "$libdir/libonnxifi_dummy.so" "$usr/lib/libonnxifi.so" "$libdir/libonnxifi_loader.a"; do
    if [ ! -e "$f" ]; then
      mkdir -p "$(dirname "$f")" && : >"$f" && echo "placeholder (not linked): $f"
    fi
  done
  note="ONNX from .deps"
elif [ -f "/usr/lib/$multiarch/cmake/ONNX/ONNXConfig.cmake" ]; then
  note="ONNX from the system"
else
  note="NO ONNX C++ package (carry libonnx-dev, libonnx1 .debs in .deps/)"
fi

# GoogleTest: prefix (libgtest-dev .deb) > system > build from sources > tests off.
build_tests=OFF
gtest_src=""
if [ -f "$libdir/cmake/GTest/GTestConfig.cmake" ]; then
  build_tests=ON; note="$note; GTest from .deps"
elif [ -z "${AOTC_IGNORE_SYSTEM_GTEST:-}" ] && ls /usr/lib/*/cmake/GTest/GTestConfig.cmake /usr/lib/cmake/GTest/GTestConfig.cmake \
       /usr/local/lib/cmake/GTest/GTestConfig.cmake >/dev/null 2>&1; then
  build_tests=ON; note="$note; GTest from the system"
else
  for cand in "$usr/src/googletest" /usr/src/googletest "$deps"/googletest* "$deps"/googletest*/*; do
    if [ -f "$cand/CMakeLists.txt" ] && [ -d "$cand/googletest" ]; then gtest_src="$cand"; break; fi
  done
  ginst="$prefix/gtest-install"
  if [ -d "$ginst/lib/cmake/GTest" ] || [ -d "$ginst/lib64/cmake/GTest" ]; then
    build_tests=ON; note="$note; GTest built earlier in $ginst"; extra_prefix="$ginst"
  elif [ -n "$gtest_src" ]; then
    gbuild="$prefix/gtest-build"
    gen=()
    if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
    if cmake "${gen[@]}" -S "$gtest_src" -B "$gbuild" -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_INSTALL_PREFIX="$ginst" -DBUILD_GMOCK=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
         >/dev/null && cmake --build "$gbuild" -j "$jobs" >/dev/null && cmake --install "$gbuild" >/dev/null; then
      build_tests=ON; note="$note; GTest built from $gtest_src"
      extra_prefix="$ginst"
    else
      note="$note; GTest build from $gtest_src FAILED: tests off"
    fi
  else
    note="$note; no GoogleTest anywhere: configured with -DAOTC_BUILD_TESTS=OFF"
  fi
fi

# ONNX backend node tests (libonnx-testdata .deb): some suites read the Debian path directly, so
# where that path is absent it is linked to the unpacked copy (the GPU machine is disposable).
node_data=""
kNodeData=/usr/include/onnx/backend/test/data/node
if [ -d "$kNodeData" ]; then
  node_data="$kNodeData"
elif [ -d "$usr$kNodeData" ] || [ -d "$usr/share/libonnx-testdata/data/node" ]; then
  # The .deb ships the data under usr/share and a relative link under usr/include.
  node_data="$usr/share/libonnx-testdata/data/node"
  [ -d "$node_data" ] || node_data="$usr$kNodeData"
  if [ ! -e "$kNodeData" ] && mkdir -p "$(dirname "$kNodeData")" 2>/dev/null &&
     ln -s "$node_data" "$kNodeData" 2>/dev/null; then
    node_data="$kNodeData"; note="$note; node tests linked at $kNodeData"
  else
    note="$note; node tests at $node_data"
  fi
else
  note="$note; no ONNX node test data"
fi

prefix_path="$usr"
if [ -n "${extra_prefix:-}" ]; then prefix_path="$usr;$extra_prefix"; fi
{
  echo "AOTC_PREFIX_PATH='$prefix_path'"
  echo "AOTC_LD_PATH='$libdir'"
  echo "AOTC_BUILD_TESTS=$build_tests"
  echo "AOTC_NODE_TEST_DATA='$node_data'"
  echo "AOTC_DEPS_NOTE='$note'"
  [ -n "$cutlass_dir" ] && echo "export CUTLASS_DIR='$cutlass_dir'"
} >"$env_file"
echo "$note"
cat "$env_file"

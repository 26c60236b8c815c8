#!/usr/bin/env bash
# Packs the libFuzzer harnesses built here (tools/fuzz.sh; clang, ASan + UBSan) for a machine
# without clang (the GPU machine: 64 cores, Ubuntu 24.04): one archive, .deps/fuzz/aotc-fuzz.tar.xz,
# holding bin/fuzz_<harness> (debug info stripped, symbols kept so sanitizer reports name
# functions; reproduce a finding here with the unstripped build for lines), fuzz_seeds/<harness>/
# (identical seed folders stored once, as a link), lib/ (libonnx_proto.so.1 and libprotobuf.so.32
# as the harnesses link them here: the other machine puts lib/ on LD_LIBRARY_PATH) and MANIFEST
# (commit, sizes, sha256). The unpacked folder is a --build-dir for `tools/fuzz.sh --no-build`.
# tools/device_run.sh FUZZ_RUNS=N unpacks and runs it. Fails if the archive passes --max-mb.
# Usage: tools/fuzz_pack.sh [--build-dir build-fuzz] [--out .deps/fuzz] [--no-build] [--jobs N]
#                           [--node-tests DIR] [--max-mb 20]
#        tools/fuzz_pack.sh --unpack ARCHIVE DIR    (what the other machine does; prints DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-fuzz out=.deps/fuzz do_build=1 jobs=2 node_tests=() max_mb=20
harnesses=(model_bytes model_mutator external_data)
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --jobs) jobs="$2"; shift 2 ;;
    --node-tests) node_tests=(--node-tests "$2"); shift 2 ;;
    --max-mb) max_mb="$2"; shift 2 ;;
    --unpack)
      mkdir -p "$3"
      tar -xJf "$2" -C "$3" --strip-components=1
      echo "$3"
      exit 0 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "fuzz_pack.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [ "$do_build" = 1 ]; then
  tools/fuzz.sh --build-dir "$build" --jobs "$jobs" ${node_tests[@]+"${node_tests[@]}"} --build-only
fi
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
root="$stage/aotc-fuzz"
mkdir -p "$root/bin" "$root/fuzz_seeds" "$root/lib" "$out"
first_seeds=""
for h in "${harnesses[@]}"; do
  bin="$build/bin/fuzz_$h"
  [ -x "$bin" ] || { echo "fuzz_pack.sh: FAILED: no $bin (build it: tools/fuzz.sh --build-only)" >&2; exit 1; }
  strip --strip-debug -o "$root/bin/fuzz_$h" "$bin"
  seeds="$build/fuzz_seeds/$h"
  [ -d "$seeds" ] || { echo "fuzz_pack.sh: FAILED: no seeds $seeds" >&2; exit 1; }
  if [ -n "$first_seeds" ] && diff -rq "$seeds" "$build/fuzz_seeds/$first_seeds" >/dev/null 2>&1; then
    ln -s "$first_seeds" "$root/fuzz_seeds/$h"
  else
    cp -r "$seeds" "$root/fuzz_seeds/$h"
    [ -n "$first_seeds" ] || first_seeds="$h"
  fi
done
# The shared libraries the harnesses need beyond the C/C++ runtime (the sanitizers are linked in).
for so in libonnx_proto.so.1 libprotobuf.so.32; do
  path="$(ldd "$root/bin/fuzz_model_bytes" | awk -v n="$so" '$1 == n { print $3 }')"
  [ -n "$path" ] && [ -f "$path" ] || { echo "fuzz_pack.sh: FAILED: the harnesses do not link $so here" >&2; exit 1; }
  cp -L "$path" "$root/lib/$so"
done
{
  echo "aotc fuzz harnesses, packed $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -m) from commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (uncommitted changes)')"
  echo "run: LD_LIBRARY_PATH=DIR/lib tools/fuzz.sh --no-build --build-dir DIR --fork N --runs R"
  (cd "$root" && find bin lib -type f -exec sha256sum {} + | sort -k 2)
  for h in "${harnesses[@]}"; do echo "seeds $h: $(find -L "$root/fuzz_seeds/$h" -type f | wc -l) files"; done
} >"$root/MANIFEST"
archive="$out/aotc-fuzz.tar.xz"
tar -C "$stage" -cf - aotc-fuzz | xz -T0 -9 >"$archive.tmp"
mv "$archive.tmp" "$archive"
bytes=$(stat -c %s "$archive")
echo "fuzz_pack.sh: $archive: $((bytes / 1024)) KiB ($(du -sh "$root" | cut -f1) unpacked)"
if [ "$bytes" -gt $((max_mb * 1024 * 1024)) ]; then
  echo "fuzz_pack.sh: FAILED: the archive is over --max-mb $max_mb" >&2
  exit 1
fi

#!/usr/bin/env bash
# Runs every A/B variant library of a device_run.sh case (AB_AOTC_ARGS: CASE/ab, CASE/ab2, ...) on
# the case's test inputs and says whether its outputs are byte-identical to the main library's
# (CASE/outputs, written by device_run.sh's check), and its metric against the expected outputs.
# Usage (after device_run.sh, same WORK):  bash tools/device/ab_outputs.sh CASE [CASE...]
set -u
WORK="${WORK:-${TMPDIR:-/tmp}/aotc-gpu-run}"
BUILD_DIR="${AOTC_BUILD_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/build-device}"
PY="${PY:-python3}"
status=0
for name in "$@"; do
  c="$WORK/cases/$name"
  label="${name%%_bs*}"; rest="${name#*_bs}"; batch="${rest%%_*}"; precision="${rest#*_}"
  # device_steps.py cases: LABEL BATCH MODEL DATA per exported batch size.
  data="$("$PY" tools/device/device_steps.py cases "$WORK/models" "$label" | awk -v b="$batch" '$2 == b {print $4}')"
  for vd in "$c"/ab*; do
    [ -d "$vd" ] || continue
    lib="$(ls "$vd"/lib*.so 2>/dev/null | head -1)"
    [ -n "$lib" ] || { echo "$name/$(basename "$vd"): no library"; status=1; continue; }
    rm -rf "$vd/outputs"
    "$BUILD_DIR/bin/aotc-run" "$lib" --expect-dir "$data" --output-dir "$vd/outputs" </dev/null >"$vd/check.log" 2>&1
    same=yes
    for f in "$c"/outputs/output_*; do
      cmp -s "$f" "$vd/outputs/$(basename "$f")" || same=no
    done
    [ -e "$(ls "$c"/outputs/output_* 2>/dev/null | head -1)" ] || same="no main outputs"
    metric="$("$PY" tools/device/device_steps.py compare --expected "$data" --actual "$vd/outputs" \
                --precision "$precision" --json "$vd/metric.json" 2>&1 | tail -n 1)"
    echo "$name/$(basename "$vd"): outputs identical to the main library: $same; against the expected: $metric"
    [ "$same" = yes ] || status=1
  done
done
exit $status

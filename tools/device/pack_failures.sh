#!/usr/bin/env bash
# After tools/device_run.sh on the GPU machine: pack the exported models of the cases that did not
# compile, did not run, or failed a check beyond fp16's known accuracy miss, into one archive
# small enough to come back from the device tool (a file under 16 MiB), so they can be
# reproduced on the development machine (`aotc check`, the CPU reference).
# Usage: bash tools/device/pack_failures.sh WORK OUT_ARCHIVE [MAX_MB=15]
set -uo pipefail
work="${1:?WORK folder of device_run.sh}" out="${2:?archive path}" max_mb="${3:-15}"
list=() logs=()
for c in "$work"/cases/*/; do
  c="${c%/}"; name="$(basename "$c")"
  crc="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("rc", 1))' "$c/compile.json" 2>/dev/null || echo 1)"
  verdict="$(tail -n 1 "$c/check.log" 2>/dev/null)"
  # fp16's accuracy miss is known (docs/fp16_accuracy.md); everything else is packed.
  if [ "$crc" = 0 ] && { [[ "$verdict" == *PASS* ]] || [[ "$verdict" == *"fp16 FAIL: over the fp16 limits"* ]]; } && [ -s "$c/check.log" ]; then continue; fi
  model="${name%_bs*}"
  logs+=("$c/compile.log" "$c/check.log")
  d="$work/models/$model"
  [ -f "$d/model.onnx" ] || continue
  size_mb=$(( $(du -sm "$d" | cut -f1) ))
  if [ "$size_mb" -le "$max_mb" ]; then list+=("$d"); fi
  echo "pack_failures: $name (compile rc $crc, check '${verdict:-none}') model ${size_mb} MB"
done
existing=()
for f in ${logs[@]+"${logs[@]}"} ${list[@]+"${list[@]}"}; do [ -e "$f" ] && existing+=("${f#"$work"/}"); done
if [ ${#existing[@]} -eq 0 ]; then echo "pack_failures: nothing failed"; exit 0; fi
tar czf "$out" -C "$work" "${existing[@]}"
bytes=$(stat -c %s "$out")
if [ "$bytes" -gt $((16 * 1024 * 1024 - 4096)) ]; then
  echo "pack_failures: $out is $bytes bytes, over the device tool's 16 MiB; packing the logs only"
  logs_only=()
  for f in ${logs[@]+"${logs[@]}"}; do [ -e "$f" ] && logs_only+=("${f#"$work"/}"); done
  tar czf "$out" -C "$work" "${logs_only[@]}"
fi
echo "pack_failures: $out $(stat -c %s "$out") bytes"

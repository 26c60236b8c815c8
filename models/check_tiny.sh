#!/usr/bin/env bash
# Runs aotc-model-check (the whole-model CPU check) on every exported model folder under ROOT
# (each folder holding model.onnx and test_data_set*/), e.g. the tiny exports of
# models/model_zoo.py on the GPU machine. Folders holding export_error.txt instead are listed as
# export failures with the error's last line. Extra arguments go to the checker (e.g. --lower).
# usage: models/check_tiny.sh ROOT [--checker PATH] [checker options...]
#   default checker: $AOTC_MODEL_CHECK, else build/bin/aotc-model-check next to this script's repo.
# Exit 0 only when every model passed and no export failed.
set -uo pipefail
if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
  sed -n '2,8p' "$0"
  exit 2
fi
root=$1
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
checker=${AOTC_MODEL_CHECK:-$repo/build/bin/aotc-model-check}
args=()
while [[ $# -gt 0 ]]; do
  if [[ $1 == --checker ]]; then
    checker=$2
    shift 2
  else
    args+=("$1")
    shift
  fi
done
if [[ ! -x $checker ]]; then
  echo "check_tiny: no checker at $checker (build the aotc-model-check target or pass --checker)" >&2
  exit 2
fi
status=0 models=0
while IFS= read -r dir; do
  models=$((models + 1))
  if [[ -f $dir/model.onnx ]]; then
    result=$("$checker" "${args[@]}" "$dir" 2>&1) || status=1
    grep -v '^[0-9]*/[0-9]* passed$' <<< "$result"
  else
    echo "EXPORT-FAILED ${dir#"$root"/}: $(tail -n 1 "$dir/export_error.txt")"
    status=1
  fi
done < <(find "$root" -mindepth 1 \( -name model.onnx -o -name export_error.txt \) -printf '%h\n' | sort -u)
if [[ $models -eq 0 ]]; then
  echo "check_tiny: no model folder under $root" >&2
  exit 2
fi
exit $status

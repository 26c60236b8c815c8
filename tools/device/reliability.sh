#!/usr/bin/env bash
# The GPU side of issue 10, run by tools/device_run.sh when RELIABILITY=1 (after the cases are
# compiled): for each library in RELIABILITY_CASES (a CNN and a transformer) abi_stress stress
# (16 handles sharing weights, own workspaces, x 8 threads x STRESS_RUNS runs, bit-for-bit against a
# single-threaded reference) and misuse (the docs/abi.md matrix, sticky fault last), then
# compute-sanitizer memcheck and racecheck over aotc-run --bench 2 and over short abi_stress runs
# of those libraries, and over the GPU CTest suite (SANITIZER_CTEST_ARGS). Every sub-step has its
# own time cap. Writes logs to WORK/logs/reliability/ and a markdown section to MD_FILE.
# Usage: tools/device/reliability.sh WORK BUILD_DIR MD_FILE
# Env: RELIABILITY_CASES="resnet50_bs1_fp16 gpt2_bs1_fp16"  STRESS_RUNS=10000 (per thread)
#      STRESS_HANDLES=16 STRESS_THREADS=8 STRESS_SECONDS=150 (cap per library)
#      SANITIZER_TOOLS="memcheck racecheck" SANITIZER_SECONDS=240 (cap per library and tool)
#      SANITIZER_CTEST_ARGS="-L gpu" SANITIZER_CTEST_SECONDS=150 (cap per tool; "" skips the suite)
#      SANITIZER_CTEST_JOBS=8  COMPUTE_SANITIZER (path)  RACECHECK_EXCLUDE="kns=nvjet"  RACECHECK_EXTRA (options)
#      RELIABILITY_PARTS="stress misuse sanitize ctest" (a subset splits the work over device calls)
#      RELIABILITY_TAG (suffix of the log folder and abi_stress binary, for instances run side by side)
#      RELIABILITY_DEADLINE (epoch seconds; device_run.sh sets it from its budget): every cap shrinks
#      to fit, and a part with under 10 s left is reported as skipped, not run.
# racecheck runs over aotc-run and the suite; memcheck also over the two abi_stress runs (the
# kernels are the same, so racecheck there would repeat aotc-run's).
set -uo pipefail
work="$1" build="$2" md="$3"
repo="$(cd "$(dirname "$0")/../.." && pwd)"
tag="${RELIABILITY_TAG:-}"  # instances run side by side (device_run.sh RELIABILITY_GROUPS) keep apart
logs="$work/logs/reliability${tag:+_$tag}"
mkdir -p "$logs"
cases="${RELIABILITY_CASES:-resnet50_bs1_fp16 gpt2_bs1_fp16}"
stress_runs="${STRESS_RUNS:-10000}"
tools="${SANITIZER_TOOLS:-memcheck racecheck}"
ctest_args="${SANITIZER_CTEST_ARGS--L gpu}"
parts="${RELIABILITY_PARTS:-stress misuse sanitize ctest}"
deadline="${RELIABILITY_DEADLINE:-0}"
has_part() { [[ " $parts " == *" $1 "* ]]; }
failures=0
rows=()
row() { rows+=("| $1 | $2 | $3 | $4 |"); echo "reliability: $1 | $2 | $3 | $4"; }

# run_capped SECONDS LOG CMD...: CMD in its own session, killed with its children after SECONDS.
# Returns 124 without running when the deadline leaves under 10 s.
run_capped() {
  local seconds="$1" log="$2" pid watcher rc left
  shift 2
  if [ "$deadline" -gt 0 ]; then
    left=$((deadline - $(date +%s)))
    if [ "$left" -lt 10 ]; then echo "skipped: time budget" >"$log"; return 124; fi
    [ "$left" -lt "$seconds" ] && seconds="$left"
  fi
  setsid "$@" >"$log" 2>&1 &
  pid=$!
  ( sleep "$seconds"; kill -TERM -- -"$pid" 2>/dev/null; sleep 10; kill -KILL -- -"$pid" 2>/dev/null ) &
  watcher=$!
  wait "$pid"
  rc=$?
  kill "$watcher" 2>/dev/null
  wait "$watcher" 2>/dev/null
  return "$rc"
}

# ---- abi_stress, built with the C compiler alone (no CUDA headers) ----
stress_bin="$work/abi_stress${tag:+_$tag}"
if ! cc -std=c11 -O2 -Wall -pthread "$repo/tools/device/abi_stress.c" "$repo/tools/device/abi_misuse.c" \
     -ldl -o "$stress_bin" >"$logs/build.log" 2>&1; then
  row "build abi_stress" "-" "FAILED" "$(head -c 200 "$logs/build.log" | tr '\n' ' ')"
  failures=$((failures + 1))
fi

sanitizer="${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}"
for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
         /usr/local/cuda-*/bin/compute-sanitizer; do
  [ -n "$sanitizer" ] && break
  [ -x "$c" ] && sanitizer="$c"
done

# racecheck skips cuBLASLt's Hopper GEMM kernels (nvjet_sm90_*): they synchronise through TMA and
# mbarriers, which racecheck does not follow, and every hazard it reported on GPT-2 and ResNet-50
# (eleventh session: 56 and 64 errors) was inside them; excluding them keeps a hazard in aotc's
# kernels from hiding among theirs. RACECHECK_EXCLUDE="" checks every kernel.
racecheck_options=()
exclude_filter="${RACECHECK_EXCLUDE-kns=nvjet}"
# (The option is --kernel-name-exclude since the rename of --kernel-regex-exclude; the help text
# may go to stderr: the eleventh session's probe read stdout only and found neither.)
if [ -n "$sanitizer" ] && [ -n "$exclude_filter" ]; then
  sanitizer_help="$("$sanitizer" --help 2>&1)"
  for option in --kernel-name-exclude --kernel-regex-exclude; do
    if grep -q -- "$option" <<<"$sanitizer_help"; then racecheck_options=("$option" "$exclude_filter"); break; fi
  done
fi
# RACECHECK_EXTRA="--racecheck-memcpy-async no": more racecheck options (words), each option kept
# only when the tool's help names it (the eleventh session's "Internal Sanitizer Error" on the
# CUTLASS convolutions, which copy with cp.async: does racecheck pass without tracking it?).
if [ -n "$sanitizer" ] && [ -n "${RACECHECK_EXTRA:-}" ]; then
  [ -n "${sanitizer_help:-}" ] || sanitizer_help="$("$sanitizer" --help 2>&1)"
  read -r -a extra_words <<<"$RACECHECK_EXTRA"
  for ((i = 0; i < ${#extra_words[@]}; ++i)); do
    w="${extra_words[i]}"
    if [[ "$w" == --* ]] && ! grep -q -- "$w" <<<"$sanitizer_help"; then
      echo "reliability: $w is not an option of $sanitizer; left out" >&2
      [[ "${extra_words[i + 1]:-}" != --* ]] && i=$((i + 1))
      continue
    fi
    racecheck_options+=("$w")
  done
fi

# sanitizer_errors LOG...: "ERRORS SUMMARIES RECORDS": the errors compute-sanitizer reported over
# the logs (racecheck: "RACECHECK SUMMARY: H hazards displayed (E errors, W warnings)"; the other
# tools: "ERROR SUMMARY: E errors"), how many logs had a summary, and the error records printed
# in logs without one (a run stopped at its time cap prints no summary, but every error record -
# "========= Invalid __global__ read ...", "========= Internal Sanitizer Error ..." - is printed
# as it happens: 0 records there means nothing was found in what ran).
sanitizer_errors() {
  local n=0 s=0 recs=0 f e
  for f in "$@"; do
    [ -f "$f" ] || continue
    e="$(awk '/RACECHECK SUMMARY:/ { if (match($0, /\([0-9]+ error/)) { r = substr($0, RSTART + 1, RLENGTH - 7) + 0; got = 1 } }
              /ERROR SUMMARY: [0-9]+ error/ { for (i = 1; i <= NF; ++i) if ($i == "SUMMARY:") m = $(i + 1) + 0; gotm = 1 }
              /^========= [^ ]/ && !/COMPUTE-SANITIZER|SUMMARY|Target application returned|^========= *$/ { rec += 1 }
              END { if (got) print r; else if (gotm) print m; else print "none " rec + 0 }' "$f")"
    if [ "${e%% *}" = none ]; then recs=$((recs + ${e##* })); continue; fi
    n=$((n + e))
    s=$((s + 1))
  done
  echo "$n $s $recs"
}
# sanitized TOOLS NAME LABEL SECONDS CMD...: one compute-sanitizer row per tool.
sanitized() {
  local tools_here="$1" name="$2" label="$3" seconds="$4" tool log t0 dt rc errs summaries
  shift 4
  for tool in $tools_here; do
    log="$logs/${name}_${tool}_${label// /_}.log"
    t0=$(date +%s)
    # racecheck: the create-time timing of cuBLASLt candidates (8 algorithms x a graph of 10
    # calls per matmul, cuBLASLt's kernels, not ours) is switched off: under racecheck it alone
    # outlasted the cap on ResNet-50 (tenth session); the kernels run() launches are the same.
    local env_here=() extra=()
    [ "$tool" = racecheck ] && env_here=(env AOTC_NO_MATMUL_TUNE=1) && extra=(${racecheck_options[@]+"${racecheck_options[@]}"})
    run_capped "$seconds" "$log" ${env_here[@]+"${env_here[@]}"} "$sanitizer" --tool "$tool" ${extra[@]+"${extra[@]}"} \
      --error-exitcode 99 --print-limit 50 "$@"
    rc=$?
    dt=$(($(date +%s) - t0))
    if grep -q '^skipped: time budget' "$log"; then row "$tool: $label" "$name" "skipped" "time budget"; continue; fi
    read -r errs summaries _records < <(sanitizer_errors "$log")
    if [ "$summaries" -ge 1 ] && [ "$errs" = 0 ] && [ "$rc" = 0 ]; then
      row "$tool: $label" "$name" "0 errors" "${dt} s"
    else
      row "$tool: $label" "$name" "FAILED" "$errs errors in $summaries summaries, rc $rc, ${dt} s (log: reliability/$(basename "$log"))"
      failures=$((failures + 1))
    fi
  done
}

# The per-library parts; a group of RELIABILITY_PARTS=ctest alone needs no library.
if ! has_part stress && ! has_part misuse && ! has_part sanitize; then cases=""; fi
for name in $cases; do
  lib="$work/cases/$name/lib$name.so"
  if [ ! -f "$lib" ]; then
    row "all checks" "$name" "FAILED" "no library $lib (is the case in MODELS / PRECISIONS / BATCHES?)"
    failures=$((failures + 1))
    continue
  fi
  if [ -x "$stress_bin" ] && has_part stress; then
    run_capped $((${STRESS_SECONDS:-150} + 60)) "$logs/${name}_stress.log" "$stress_bin" stress "$lib" "$name" \
      --runs "$stress_runs" --handles "${STRESS_HANDLES:-16}" --threads "${STRESS_THREADS:-8}" \
      --seconds "${STRESS_SECONDS:-150}"
    rc=$?
    line="$(grep '^stress:' "$logs/${name}_stress.log" | tail -n 1 | sed 's/^stress: //')"
    if [ "$rc" = 124 ] && grep -q '^skipped' "$logs/${name}_stress.log"; then
      row "abi_stress stress" "$name" "skipped" "time budget"
    elif [ "$rc" = 0 ] && ! grep -q 'time cap' "$logs/${name}_stress.log"; then
      row "abi_stress stress" "$name" "passed" "$line"
    else
      row "abi_stress stress" "$name" "FAILED (rc $rc)" "${line:-$(tail -n 2 "$logs/${name}_stress.log" | tr '\n' ' ' | cut -c1-200)}"
      failures=$((failures + 1))
    fi
  fi
  if [ -x "$stress_bin" ] && has_part misuse; then
    run_capped 120 "$logs/${name}_misuse.log" "$stress_bin" misuse "$lib" "$name"
    rc=$?
    line="$(grep '^misuse:' "$logs/${name}_misuse.log" | tail -n 1 | sed 's/^misuse: //')"
    if [ "$rc" = 124 ] && grep -q '^skipped' "$logs/${name}_misuse.log"; then
      row "abi_stress misuse" "$name" "skipped" "time budget"
    elif [ "$rc" = 0 ]; then
      row "abi_stress misuse" "$name" "passed" "$line"
    else
      row "abi_stress misuse" "$name" "FAILED (rc $rc)" "${line:-no summary}; $(grep -m 3 'FAILED' "$logs/${name}_misuse.log" | cut -c1-60 | tr '\n' ';')"
      failures=$((failures + 1))
    fi
  fi
  has_part sanitize || continue
  if [ -z "$sanitizer" ]; then
    row "compute-sanitizer" "$name" "FAILED" "compute-sanitizer not found (set COMPUTE_SANITIZER)"
    failures=$((failures + 1))
    continue
  fi
  sanitized "$tools" "$name" "aotc-run --bench 2" "${SANITIZER_SECONDS:-240}" "$build/bin/aotc-run" "$lib" --bench 2 --warmup 1
  if [ -x "$stress_bin" ] && [[ " $tools " == *" memcheck "* ]]; then
    sanitized memcheck "$name" "abi_stress misuse --no-fault" "${SANITIZER_SECONDS:-240}" "$stress_bin" misuse "$lib" "$name" --no-fault
    sanitized memcheck "$name" "abi_stress stress 4 handles x 2 threads x 10 runs" "${SANITIZER_SECONDS:-240}" \
      "$stress_bin" stress "$lib" "$name" --handles 4 --threads 2 --runs 10 --inputs 2 --migrate-every 5
  fi
done

# ---- the GPU CTest suite under each tool (every process of it: --target-processes all) ----
if [ -n "$ctest_args" ] && [ -n "$sanitizer" ] && has_part ctest; then
  for tool in $tools; do
    dir="$logs/ctest_$tool"
    rm -rf "$dir" && mkdir -p "$dir"
    t0=$(date +%s)
    # shellcheck disable=SC2086  # ctest_args is a list of ctest options
    local_extra=()
    [ "$tool" = racecheck ] && local_extra=(${racecheck_options[@]+"${racecheck_options[@]}"})
    run_capped "${SANITIZER_CTEST_SECONDS:-150}" "$logs/ctest_$tool.log" "$sanitizer" --tool "$tool" ${local_extra[@]+"${local_extra[@]}"} \
      --target-processes all --error-exitcode 99 --print-limit 50 --log-file "$dir/%p.log" \
      ctest --test-dir "$build" $ctest_args -j "${SANITIZER_CTEST_JOBS:-8}" --timeout 600 --output-on-failure
    rc=$?
    dt=$(($(date +%s) - t0))
    if grep -q '^skipped: time budget' "$logs/ctest_$tool.log"; then row "$tool: ctest $ctest_args" "GPU suite" "skipped" "time budget"; continue; fi
    read -r errs summaries records < <(sanitizer_errors "$dir"/*.log)
    passed=$(grep -cE 'Test +#[0-9]+: .* Passed' "$logs/ctest_$tool.log")
    failed=$(grep -cE 'Test +#[0-9]+: .*(\*\*\*|Failed|Exception|Timeout)' "$logs/ctest_$tool.log")
    skipped=$(grep -cE 'Test +#[0-9]+: .*Skipped' "$logs/ctest_$tool.log")
    total="$(grep -oE 'tests (passed|failed) out of [0-9]+' "$logs/ctest_$tool.log" | grep -oE '[0-9]+$' | tail -n 1)"
    figures="$passed passed, $failed failed, $skipped skipped of ${total:-? (time cap reached)}; $errs errors in $summaries summaries, $records error records in logs without a summary; ${dt} s"
    if [ "$errs" = 0 ] && [ "$failed" = 0 ] && [ "$rc" = 0 ] && [ -n "$total" ]; then
      row "$tool: ctest $ctest_args" "GPU suite" "0 errors" "$figures"
    else
      row "$tool: ctest $ctest_args" "GPU suite" "FAILED (rc $rc)" "$figures"
      failures=$((failures + 1))
    fi
    # Keep the folder small: only the logs of processes with errors (plus one clean one).
    grep -E -L 'SUMMARY: [1-9]|\([1-9][0-9]* error' "$dir"/*.log 2>/dev/null | tail -n +2 | xargs -r rm -f
  done
fi

{
  echo
  echo "## Reliability (RELIABILITY=1: tools/device/reliability.sh)"
  echo
  echo "| check | library / suite | result | figures |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "abi_stress: $(basename "$stress_bin") stress = ${STRESS_HANDLES:-16} handles sharing the owner's weights, each with its own cuMemAlloc'ed workspace, x ${STRESS_THREADS:-8} threads x $stress_runs runs per thread (2 handles per thread, traded through a locked pool every 1000 runs), outputs compared bit for bit with a single-threaded reference; misuse = docs/abi.md's matrix, codes and untouched outputs, the sticky-fault rows last. Logs: logs.tar.gz, logs/$(basename "$logs")/. racecheck rows run with AOTC_NO_MATMUL_TUNE=1 (no create-time cuBLASLt timing)$([ "${#racecheck_options[@]}" -gt 0 ] && echo " and ${racecheck_options[*]} (RACECHECK_EXCLUDE, default kns=nvjet: cuBLASLt's TMA/mbarrier GEMM kernels; RACECHECK_EXTRA)" || echo "; every kernel checked")."
} >"$md"
exit "$failures"

#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/; clang, ASan + UBSan) in their own build folder and
# runs each for a given time or number of executions over its seed corpus plus the inputs found
# before (kept in BUILD_DIR/corpus/<harness>), then prints per harness: executions, exec/s, seconds,
# new inputs, crashes. Crash, sanitizer-report and timeout inputs go to BUILD_DIR/artifacts/.
# Exit 1 if any harness found something (or could not be built), 0 otherwise.
#
#   tools/fuzz.sh                          # every harness for 60 s
#   tools/fuzz.sh --seconds 3600 model_mutator
#   tools/fuzz.sh --runs 1000000 --build-dir build-fuzz
#   tools/fuzz.sh --reproduce build-fuzz/artifacts/model_bytes-crash-...   # rerun one input
#   tools/fuzz.sh --fork 64 --runs 10000000 --max-seconds 3000      # all cores, per harness
#
# Options: --build-dir DIR (default build-fuzz), --seconds N | --runs N (per harness), --seed N
# (libFuzzer's -seed: with --runs and a fresh corpus folder the same inputs every time),
# --jobs N (build), --node-tests DIR (more seed models), --regression (CTest's fuzz_regression:
# the same run, named so in the output), --no-build, --build-only, --nice N (default 19),
# --fork N (libFuzzer's fork mode: N worker processes, new inputs merged into the corpus folder;
# crashes, timeouts and out-of-memory inputs are written and counted, and the run goes on),
# --max-seconds N (with --runs: stop a harness after N s if the runs are not done; the table says
# so), --summary FILE (the table again, with the machine, into FILE).
# --no-build runs what BUILD_DIR holds: bin/fuzz_<harness> and fuzz_seeds/<harness>/, also as
# unpacked from tools/fuzz_pack.sh's archive (no clang needed then).
# Per input: 10 s at most (-timeout=10), 2.5 GiB of memory (-rss_limit_mb; the harnesses lower the
# folding total to 256 MiB, so a valid model stays well under it).
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-fuzz seconds=60 runs="" seed="" jobs=2 node_tests="" regression=0 do_build=1 niceness=19 reproduce=""
fork=0 max_seconds="" summary="" build_only=0
harnesses=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --seconds) seconds="$2"; runs=""; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --node-tests) node_tests="$2"; shift 2 ;;
    --regression) regression=1; shift ;;
    --no-build) do_build=0; shift ;;
    --build-only) build_only=1; shift ;;
    --fork) fork="$2"; shift 2 ;;
    --max-seconds) max_seconds="$2"; shift 2 ;;
    --summary) summary="$2"; shift 2 ;;
    --nice) niceness="$2"; shift 2 ;;
    --reproduce) reproduce="$2"; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) harnesses+=("$1"); shift ;;
  esac
done
all=(model_bytes model_mutator external_data)
[ ${#harnesses[@]} -gt 0 ] || harnesses=("${all[@]}")

cxx="$(command -v clang++ || command -v clang++-18 || command -v clang++-14 || true)"
cc="$(command -v clang || command -v clang-18 || command -v clang-14 || true)"
if [ "$do_build" = 1 ] && { [ -z "$cxx" ] || [ -z "$cc" ]; }; then
  echo "fuzz.sh: FAILED: no clang/clang++ on PATH; the libFuzzer harnesses need clang (tools/install_deps.sh installs clang and libclang-rt-dev)" >&2
  exit 1
fi

if [ "$do_build" = 1 ]; then
  # -O1 and line tables only: the harnesses spend their time in sanitizer checks, and a full -O2 -g
  # build of the compiler's libraries takes much longer on a 2-core machine.
  cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" -DAOTC_FUZZ=ON \
        -DAOTC_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
        -DAOTC_NODE_TESTS_FOR_SEEDS="$node_tests" >/dev/null ||
    { echo "fuzz.sh: FAILED: configuring $build (clang's libFuzzer runtime: libclang-rt-dev)" >&2; exit 1; }
  nice -n 10 cmake --build "$build" -j "$jobs" --target fuzz_harnesses fuzz_seeds >"$build/build.log" 2>&1 ||
    { tail -n 30 "$build/build.log" >&2; echo "fuzz.sh: FAILED: building the harnesses (log: $build/build.log)" >&2; exit 1; }
fi

[ "$build_only" = 1 ] && exit 0

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
if [ -n "$reproduce" ]; then
  name="$(basename "$reproduce")"; name="${name%%-*}"
  exec "$build/bin/fuzz_$name" -timeout=10 -rss_limit_mb=2560 "$reproduce"
fi

mkdir -p "$build/corpus" "$build/artifacts" "$build/logs" "$build/tmp"
# The harnesses' scratch folders: inside the build folder, so a run that stops on a finding (no
# exit handlers) leaves nothing in /tmp.
TMPDIR="$(cd "$build/tmp" && pwd)"
export TMPDIR
failed=0
table="$(printf '%-16s %12s %9s %8s %6s %8s %8s %6s  %s' harness executions exec/s seconds new crashes timeouts ooms log)"
echo "$table"
count_artifacts() { find "$build/artifacts" -maxdepth 1 -name "$1-$2-*" | wc -l; }  # HARNESS KIND
for h in "${harnesses[@]}"; do
  bin="$build/bin/fuzz_$h"
  [ -x "$bin" ] || { echo "fuzz.sh: FAILED: no harness $bin" >&2; failed=1; continue; }
  mkdir -p "$build/corpus/$h"
  # One log per run: two runs on one build folder (a long run beside the CTest fuzz regression)
  # used to share logs/HARNESS.log, and the summary read the other run's count.
  log="$build/logs/$h.$(date -u +%Y%m%dT%H%M%SZ).$$.log"
  limit=(-max_total_time="$seconds")
  if [ -n "$runs" ]; then
    limit=(-runs="$runs")
    [ -n "$max_seconds" ] && limit+=(-max_total_time="$max_seconds")
  fi
  [ -n "$seed" ] && limit+=(-seed="$seed")
  # Fork mode goes on after a finding (each is written to artifacts/ and counted below).
  [ "$fork" -gt 0 ] && limit+=(-fork="$fork" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  b_crash=$(count_artifacts "$h" crash) b_leak=$(count_artifacts "$h" leak)
  b_timeout=$(count_artifacts "$h" timeout) b_oom=$(count_artifacts "$h" oom)
  corpus_before=$(find "$build/corpus/$h" -type f | wc -l)
  start=$SECONDS
  rc=0
  # The first folder collects new inputs; the seeds are read only.
  nice -n "$niceness" "$bin" "${limit[@]}" -timeout=10 -rss_limit_mb=2560 -print_final_stats=1 \
       -artifact_prefix="$build/artifacts/$h-" "$build/corpus/$h" "$build/fuzz_seeds/$h" >"$log" 2>&1 || rc=$?
  elapsed=$((SECONDS - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  # Fork mode and a run that stopped on a finding print no final stats: the last progress line
  # (or fork mode's "fuzzed for N iterations") has the count.
  [ -n "$execs" ] || execs=$(sed -n 's/^INFO: fuzzed for \([0-9]*\) iterations.*/\1/p' "$log" | tail -n 1)
  [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  [ -n "$rate" ] || rate=$(awk -v n="${execs:-0}" -v t="$elapsed" 'BEGIN { if (t > 0) printf "%d", n / t; else print "?" }')
  new=$(( $(find "$build/corpus/$h" -type f | wc -l) - corpus_before ))
  crashes=$(( $(count_artifacts "$h" crash) - b_crash + $(count_artifacts "$h" leak) - b_leak ))
  timeouts=$(( $(count_artifacts "$h" timeout) - b_timeout ))
  ooms=$(( $(count_artifacts "$h" oom) - b_oom ))
  if [ "$rc" != 0 ] && [ $((crashes + timeouts + ooms)) = 0 ]; then crashes=1; fi  # died without writing an artifact
  note=""
  if [ -n "$runs" ] && [ "${execs:-0}" -lt "$runs" ] 2>/dev/null; then note=" (stopped at the time limit)"; fi
  line="$(printf '%-16s %12s %9s %8s %6s %8s %8s %6s  %s%s' "$h" "${execs:-?}" "${rate:-?}" "$elapsed" "${new:-?}" "$crashes" "$timeouts" "$ooms" "$log" "$note")"
  echo "$line"
  table="$table"$'\n'"$line"
  if [ $((crashes + timeouts + ooms)) != 0 ]; then
    failed=1
    grep -m 3 -E "ERROR: (AddressSanitizer|libFuzzer|UndefinedBehaviorSanitizer|LeakSanitizer)|runtime error|aotc fuzz:|SUMMARY" "$log" >&2 || tail -n 20 "$log" >&2
  fi
done
if [ -n "$summary" ]; then
  {
    echo "$table"
    echo "machine: $(nproc) cores, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1), $(date -u '+%Y-%m-%d %H:%M UTC'); fork ${fork}; per input -timeout=10 -rss_limit_mb=2560"
  } >"$summary"
fi
what=fuzz; [ "$regression" = 1 ] && what="fuzz regression"
if [ "$failed" != 0 ]; then
  echo "$what: FAILED (inputs in $build/artifacts; rerun one with tools/fuzz.sh --build-dir $build --no-build --reproduce FILE)" >&2
  exit 1
fi
echo "$what: passed (${harnesses[*]})"

#!/usr/bin/env bash
# The one script for the GPU machine (one device call, < 10 min): set up carried dependencies,
# build aotc, run the test suites, export the models with seeded random weights and ONNX Runtime
# references, compile each with aotc, check it against ONNX Runtime, time it against PyTorch eager
# and torch.compile, and print ONE table. Each step is timed; a failing step is reported and the
# rest goes on. Usage (repo root):  OUT=/some/dir bash tools/device_run.sh
# The dependencies it carries in .deps/ (Debian packages, the nvidia-cutlass wheel) are fetched on
# the build machine by tools/device/fetch_deps.sh (once per checkout; the device tool's carry: .deps).
# Env: MODELS="resnet50 mobilenet_v2"  BATCHES="1 32" (default: each model's own)  SKIP_BUILD=1
#      BUILD_TARGETS="aotc aotc-run gpu_tests" (build only these)
#      SKIP_CTEST=1  SKIP_EXPORT=1 (reuse $WORK/models)  SKIP_AOTC=1 (no compile / check / bench)  SKIP_PEERS=1  AOTC_PARALLEL=0 (compile
#      the cases one after another: clean per-model compile times)  PEER_MODES="eager
#      reduce-overhead max-autotune"  PEER_ATTENTION=sdpa|eager (transformers peers; default sdpa)
#      EXPORTER="torchscript dynamo dynamo23" (any of them; dynamo23: opset 23, SDPA attention)  ARCH=sm_90  BENCH_ITERS=200
#      CTEST_ARGS (default "-LE conformance": the CPU node-test sweep is CI's job)
#      CONFORMANCE=claimed|all (node tests as .so files on the GPU; default off), CONFORMANCE_TIMEOUT=240
#      CONFORMANCE_DATA=DIR (the node-test folder to run; default the one setup links, which
#      overrides a caller's AOTC_NODE_TEST_DATA: e.g. the unpacked .deps/onnx123_node_tests.tar.gz;
#      several folders run at once, one GPU each: conformance_gpu.json, conformance_gpu_2.json)
#      CONFORMANCE_BACKGROUND=1 (it starts after the build, beside the other steps; give it
#      CONFORMANCE_GPUS="0,1,2" and CONFORMANCE_JOBS, and the other steps CUDA_VISIBLE_DEVICES=3)
#      CTEST_JOBS (default: all cores)  EXPORT_TIMEOUT (s per exporter; default 60 + 30 a model)
#      TIME_BUDGET=540 (s; later steps shrink their limits to fit; the device tool's 600 s also
#      covers ~35 s of its own, so keep it at most ~550)  DEPS_PREFIX=/tmp/aotc-deps
#      PRECISIONS="fp32 fp16" (each case compiled with aotc --precision P, dirs NAME_bsB_P, peers
#      run per precision; PASS: fp32 rel L2 < 1e-4 and max abs < 1e-3 max|ref|, fp16 rel L2 < 1e-2;
#      int8: calibrated on 8 seeded random inputs (device_steps.py calib), rel L2 < 5e-2, no peer)
#      ABLATION=1 (resnet50 bs1/bs32 per precision: baseline --disable-pass fuse_epilogue
#      --disable-pass layout_nhwc, +fusion, +NHWC/TC with AOTC_NO_CUDA_GRAPH=1, +CUDA graphs)
#      JETSON_PTX=1 (resnet50 bs1 fp16 --arch compute_87: PTX JIT-compiled by the driver here)
#      PROFILE_CASES="resnet50_bs32_fp16" (aotc-run --profile, when aotc-run has it)
#      TRACE_CASES="resnet50_bs32_fp16" (tools/device/trace_replay.py: the kernels of graph replays;
#      with the case also in PROFILE_CASES, tools/device/conv_rate.py: the convolutions' TFLOP/s
#      in the replay, on the progress lines and in CASE/conv_rate.log; its AB_AOTC_ARGS libraries
#      are traced too, CASE/ab*/trace.log; per kernel: python3 tools/device/trace_diff.py
#      CASE/trace.json CASE/ab/trace.json --report CASE/report.json, here after the call)
#      NCU_CASES="resnet50_bs1_fp16" NCU_KERNELS="regex:k1[67]_layer3" [NCU_COUNT=2] (Nsight
#      Compute on those cases' libraries, plain launches: ncu's --kernel-name NCU_KERNELS, the
#      first NCU_COUNT matching launches, sections SpeedOfLight, LaunchStats, Occupancy,
#      WarpStateStats, SchedulerStats and NCU_EXTRA's arguments, into CASE/ncu.log; NCU_SASS="regex:k19":
#      also the SASS page (stall samples per instruction) of the first launch it names, CASE/ncu_sass.log; NCU= the ncu binary)
#      ABLATION_MODEL=resnet50 (the model of the ablation and PTX cases)
#      AOTC_EXTRA_ARGS="--pdl early" (appended to every aotc compile of the run)
#      AB_ENV="AOTC_NO_PDL=1" (each main case is timed a second time with these variables set;
#      both medians on its progress line, the second in bench_ab.json)
#      AB_AOTC_ARGS="--disable-pass merge_projection_shortcut" (each main case is also compiled
#      with these aotc arguments appended, into CASE/ab/; the two libraries are timed in turn,
#      twice each, and the four medians are on the progress line; compile-time A/Bs in one call;
#      several variants separated by ';' are each compiled (CASE/ab, CASE/ab2, ...) and timed in
#      the same turns: "as built / A / B" medians; AB_CASES="resnet50_bs32_int8": only those
#      cases get the variants; a variant written "int8:--flag" applies only to the int8 cases
#      (any precision name works as the prefix), so one call can A/B per-precision switches)
#      RELIABILITY=1 (issue 10, after the cases are compiled: tools/device/reliability.sh on
#      RELIABILITY_CASES="resnet50_bs1_fp16 gpt2_bs1_fp16", which must be among the cases, e.g.
#      MODELS="resnet50 gpt2" PRECISIONS=fp16 BATCHES=1: abi_stress stress (STRESS_RUNS=10000 per
#      thread, 16 handles x 8 threads, STRESS_SECONDS=150 cap) and misuse, compute-sanitizer
#      memcheck + racecheck over aotc-run / abi_stress / the GPU CTest suite
#      (SANITIZER_CTEST_ARGS="-L gpu", SANITIZER_CTEST_SECONDS=150); RELIABILITY_PARTS="stress
#      misuse sanitize ctest" picks parts; a section in table.md; RELIABILITY_GROUPS="V=x|W=y;V=z"
#      runs one instance per ';' group at once, each with its '|'-separated variables; a '|' not
#      followed by NAME= stays in the value, e.g. SANITIZER_CTEST_ARGS=-R GpuA|GpuB)
#      FUZZ_RUNS=10000000 (the harnesses packed here by tools/fuzz_pack.sh into .deps/fuzz/,
#      libFuzzer -fork over FUZZ_JOBS=all cores, each harness until FUZZ_RUNS executions or
#      FUZZ_SECONDS (default: the budget left, shared); FUZZ_HARNESSES picks harnesses; corpus
#      and totals stay in $WORK/fuzz for later calls on the same machine; $OUT/fuzz.tar.gz holds
#      the summary, logs and any crash inputs; a section in table.md); FUZZ_BACKGROUND=1 starts
#      it right after setup beside the other steps (give it FUZZ_JOBS < cores and FUZZ_SECONDS)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
repo="$(pwd)"
OUT="${OUT:-$repo/out/device}"
WORK="${WORK:-${TMPDIR:-/tmp}/aotc-gpu-run}"
MODELS="${MODELS:-resnet50 mobilenet_v2}"
BATCHES="${BATCHES:-}"
PEER_MODES="${PEER_MODES:-eager reduce-overhead}"
PRECISIONS="${PRECISIONS:-fp32 fp16}"
ABLATION="${ABLATION:-0}"
JETSON_PTX="${JETSON_PTX:-0}"
PROFILE_CASES="${PROFILE_CASES:-resnet50_bs32_fp16}"
ABLATION_MODEL="${ABLATION_MODEL:-resnet50}"
PEER_TIMEOUT="${PEER_TIMEOUT:-240}"
BENCH_ITERS="${BENCH_ITERS:-200}"
AOTC_PARALLEL="${AOTC_PARALLEL:-1}"
EXPORTER="${EXPORTER:-torchscript}"
BUILD_DIR="${AOTC_BUILD_DIR:-$repo/build-device}"
CTEST_ARGS="${CTEST_ARGS--LE conformance}"
CONFORMANCE="${CONFORMANCE:-}"
DEPS_PREFIX="${DEPS_PREFIX:-/tmp/aotc-deps}"
CTEST_TIMEOUT="${CTEST_TIMEOUT:-150}"
TIME_BUDGET="${TIME_BUDGET:-540}"
PY="${PYTHON:-python3}"
jobs="$(nproc 2>/dev/null || echo 16)"

mkdir -p "$OUT" "$WORK/logs"
rm -rf "$WORK/cases" "$WORK/logs"/* "$WORK/steps.tsv" "$WORK/peers.jsonl" "$WORK/reliability.md" "$WORK/fuzz.md"
mkdir -p "$WORK/cases"
exec 3>&1  # progress lines go to the real stdout even inside steps whose output is logged

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
t_script="$(now)"
remaining() { awk -v a="$t_script" -v b="$(now)" -v t="$TIME_BUDGET" 'BEGIN { printf "%d", t - (b - a) }'; }
cap() {  # cap SECONDS: the smaller of SECONDS and what is left of the budget (at least 5)
  local r; r="$(remaining)"
  if [ "$r" -lt "$1" ]; then echo $((r > 5 ? r : 5)); else echo "$1"; fi
}
say() { echo "[device] $*" >&3; }

run_step() {  # run_step NAME FUNCTION: output to logs/NAME.log, one status line on stdout
  local name="$1"; shift
  local t0 rc dt detail=""
  t0="$(now)"
  if [ "$(remaining)" -le 10 ]; then
    printf '%s\tskipped\t0\n' "$name" >>"$WORK/steps.tsv"
    say "$(printf '%-7s' "$name") skipped: time budget ($TIME_BUDGET s) spent"
    return 1
  fi
  "$@" >"$WORK/logs/$name.log" 2>&1
  rc=$?
  dt="$(since "$t0")"
  printf '%s\t%s\t%s\n' "$name" "$rc" "$dt" >>"$WORK/steps.tsv"
  if [ "$rc" -ne 0 ]; then
    detail="$(grep -iE 'error|fail' "$WORK/logs/$name.log" | tail -n 1 | cut -c1-150)"
  fi
  say "$(printf '%-7s %6s s' "$name" "$dt")  $([ "$rc" -eq 0 ] && echo ok || echo "FAILED (rc $rc) $detail")  [total $(since "$t_script") s]"
  return "$rc"
}

# ---- (a) dependencies carried in .deps/ ------------------------------------------------------
step_setup() {
  bash tools/device/setup_deps.sh "$repo/.deps" "$DEPS_PREFIX" "$WORK/deps.env"
}
# ---- (b) build ---------------------------------------------------------------------------------
step_build() {
  local gen=() gen_name="Unix Makefiles" keep=(-k)
  if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); gen_name="Ninja"; keep=(-k 0); fi
  if [ -f "$BUILD_DIR/CMakeCache.txt" ] &&
     ! grep -q "^CMAKE_GENERATOR:INTERNAL=$gen_name\$" "$BUILD_DIR/CMakeCache.txt"; then
    rm -rf "$BUILD_DIR"  # made by another generator (or machine): start clean
  fi
  cmake "${gen[@]}" -S "$repo" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="${AOTC_PREFIX_PATH:-}" -DAOTC_BUILD_TESTS="${AOTC_BUILD_TESTS:-OFF}" \
    ${AOTC_NODE_TEST_DATA:+-DAOTC_NODE_TEST_DATA="$AOTC_NODE_TEST_DATA"} &&
  # BUILD_TARGETS="aotc aotc-run gpu_tests": only those (a 16-core machine builds the whole
  # tree, tests included, in minutes of the call)
  local targets=()
  for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
  timeout "$(cap 300)" cmake --build "$BUILD_DIR" -j "$jobs" ${targets[@]+"${targets[@]}"} -- "${keep[@]}"
}
# ---- (c) test suites -----------------------------------------------------------------------------
step_ctest() {
  # shellcheck disable=SC2086  # CTEST_ARGS is a list of options
  timeout "$(cap "$CTEST_TIMEOUT")" ctest --test-dir "$BUILD_DIR" -j "${CTEST_JOBS:-$jobs}" --timeout 120 \
    --output-on-failure $CTEST_ARGS >"$OUT/ctest.log" 2>&1
  local rc=$?
  tail -n 3 "$OUT/ctest.log"
  return $rc
}
# ---- (c2) ONNX node tests compiled and run on the GPU (optional) ----------------------------------
kClaimedOps="Conv,Gemm,MatMul,BatchNormalization,Relu,Clip,Sigmoid,Add,Sub,Mul,Div,MaxPool,AveragePool,GlobalAveragePool,Flatten,Reshape,Identity,Constant,Concat,Transpose,Softmax"
step_conformance() {
  local runner="$BUILD_DIR/bin/aotc-conformance" args=()
  if [ ! -x "$runner" ]; then echo "error: $runner missing"; return 2; fi
  if [ "$CONFORMANCE" = claimed ]; then args+=(--ops "$kClaimedOps"); fi
  # The runner stops itself 15 s before the cap (--deadline: the tests not finished are "not
  # run", the log and JSON still written); the timeout is the backstop.
  local secs; secs="$(cap "${CONFORMANCE_TIMEOUT:-240}")"
  # CONFORMANCE_DATA may name several folders: they run at the same time, each on its own GPU
  # when there are several, the cores split by their test counts. The first folder's results are
  # conformance_gpu.json; the others conformance_gpu_2.json, ...
  local dirs=() counts=() total=0 n d i gpus pids=() rc=0
  read -r -a dirs <<<"${CONFORMANCE_DATA:-${AOTC_NODE_TEST_DATA:-/usr/include/onnx/backend/test/data/node}}"
  for d in "${dirs[@]}"; do
    n="$(find "$d/" -mindepth 1 -maxdepth 1 -type d | wc -l)"; [ "$n" -gt 0 ] || n=1  # "$d/": a linked folder too
    counts+=("$n"); total=$((total + n))
  done
  local gpu_ids=()  # CONFORMANCE_GPUS="0,1,2" picks the GPUs (the other steps may hold the rest)
  if [ -n "${CONFORMANCE_GPUS:-}" ]; then IFS=, read -r -a gpu_ids <<<"$CONFORMANCE_GPUS"
  else
    gpus="$(nvidia-smi -L 2>/dev/null | wc -l)"; [ "$gpus" -gt 0 ] || gpus=1
    for ((i = 0; i < gpus; ++i)); do gpu_ids+=("$i"); done
  fi
  gpus="${#gpu_ids[@]}"
  local all_jobs="${CONFORMANCE_JOBS:-$jobs}"
  for i in "${!dirs[@]}"; do
    local share=$(( all_jobs * counts[i] / total )) suffix="" env=()
    [ "$share" -ge 1 ] || share=1
    [ "$i" -gt 0 ] && suffix="_$((i + 1))"
    if [ "${#dirs[@]}" -gt 1 ] || [ -n "${CONFORMANCE_GPUS:-}" ]; then
      # folder i gets GPUs i, i + n, ... of the list (GPU i % gpus when there are fewer)
      local g list=""
      for ((g = i; g < gpus; g += ${#dirs[@]})); do list="${list:+$list,}${gpu_ids[g]}"; done
      env=(env CUDA_VISIBLE_DEVICES="${list:-${gpu_ids[i % gpus]}}")
    fi
    echo "conformance: ${dirs[i]} (${counts[i]} tests) --jobs $share ${env[*]:1}"
    timeout "$((secs + 20))" ${env[@]+"${env[@]}"} "$runner" --gpu --data "${dirs[i]}" ${args[@]+"${args[@]}"} \
      --jobs "$share" --timeout 120 --deadline "$((secs > 30 ? secs - 15 : secs))" --quiet --arch "$ARCH" \
      --log "$WORK/logs/conformance_tests$suffix.log" \
      --json "$OUT/conformance_gpu$suffix.json" </dev/null >"$WORK/logs/conform$suffix.out" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[i]}" || rc=$?
    cat "$WORK/logs/conform$([ "$i" -gt 0 ] && echo "_$((i + 1))").out"
  done
  return $rc
}
# ---- (d) export --------------------------------------------------------------------------------
step_export() {
  local rc=0 m count=0
  for m in $MODELS; do count=$((count + 1)); done
  # One export process per exporter for all models: 60 s plus 30 s a model (the fourteenth
  # session's 12-model sweep ran past a flat 240 s), within the budget; EXPORT_TIMEOUT overrides.
  local export_timeout="${EXPORT_TIMEOUT:-$((60 + 30 * count))}"
  rm -rf "$WORK/models"
  for exporter in $EXPORTER; do
    local args=(--out-dir "$WORK/models" --exporter "$exporter")
    if [ -n "$BATCHES" ]; then args+=(--batches "$BATCHES"); fi
    for m in $MODELS; do args+=(--model "$m"); done
    timeout "$(cap "$export_timeout")" "$PY" models/export_torchvision.py "${args[@]}" || rc=$?
  done
  grep -E 'ORT vs PyTorch|FAILED' "$WORK/logs/export.log" 2>/dev/null | sed 's/^/[device]   /' >&3
  return $rc
}
# ---- (e) aotc compile, check against ONNX Runtime, benchmark -------------------------------------
compile_case() {  # compile_case NAME MODEL BATCH CASE_DIR AOTC_ARGS...: one aotc run, rc and wall time to JSON
  local name="$1" model="$2" batch="$3" c="$4" t0 rc
  shift 4
  t0="$(now)"
  timeout "$(cap 300)" "$BUILD_DIR/bin/aotc" "$model" -o "$c/lib$name.so" --name "$name" \
    --batch "$batch" --report "$c/report.json" "$@" </dev/null >"$c/compile.log" 2>&1
  rc=$?
  echo "{\"rc\": $rc, \"seconds\": $(since "$t0"), \"concurrent\": $([ "$AOTC_PARALLEL" = 0 ] && echo false || echo true), \"args\": \"$*\"}" >"$c/compile.json"
}
json_field() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2" 2>/dev/null; }
plan_args=()
if [ "$ABLATION" != 0 ]; then plan_args+=(--ablation); fi
if [ "$JETSON_PTX" != 0 ]; then plan_args+=(--ptx); fi
# The calibration cache of a model file (one per model folder; every batch size's compile uses it).
calib_cache() { echo "$WORK/calib/$(basename "$(dirname "$1")").json"; }

step_aotc() {
  local aotc_run="$BUILD_DIR/bin/aotc-run" failures=0 plan pids=() profile_ok=0
  local name _label batch precision model data lib graphs role _variant args
  if [ ! -x "$BUILD_DIR/bin/aotc" ] || [ ! -x "$aotc_run" ]; then
    echo "error: $BUILD_DIR/bin/aotc or aotc-run missing (build failed?)"; return 2
  fi
  if "$aotc_run" --help 2>&1 | grep -q -- '--profile'; then profile_ok=1; fi
  # One line per case: NAME LABEL BATCH PRECISION MODEL DATA LIB GRAPHS ROLE VARIANT AOTC_ARGS...
  # (LIB: the case whose library it runs, itself when it compiles one; GRAPHS off: run with
  # AOTC_NO_CUDA_GRAPH=1).
  # shellcheck disable=SC2086  # labels is a space separated list
  plan="$("$PY" tools/device/device_steps.py plan "$WORK/models" $labels --precisions "$PRECISIONS" \
          --arch "$ARCH" --ablation-label "$(first_label "$ABLATION_MODEL")" ${plan_args[@]+"${plan_args[@]}"})"
  # Compile every case first (concurrently unless AOTC_PARALLEL=0: nvcc is mostly one core each),
  # then run and time them one at a time on the GPU.
  while read -r name _label batch precision model data lib graphs role _variant args; do
    [ -n "$name" ] || continue
    mkdir -p "$WORK/cases/$name"
    [ "$lib" = "$name" ] || continue
    if [ "$precision" = int8 ]; then
      # One calibration per model file (8 seeded random batch-1 inputs, aotc calibrate on the CPU
      # reference), cached; every batch size's compile reuses the cache (same model file).
      local ckey cache
      ckey="$(basename "$(dirname "$model")")"
      cache="$(calib_cache "$model")"
      if [ ! -f "$cache" ] && [ ! -f "$WORK/calib/$ckey.failed" ]; then  # one attempt per model
        mkdir -p "$WORK/calib"
        "$PY" tools/device/device_steps.py calib "$data" "$WORK/calib/$ckey" --batch 1 </dev/null >/dev/null 2>&1 || true
        local tc; tc="$(now)"
        if timeout "$(cap 240)" "$BUILD_DIR/bin/aotc" calibrate "$model" --batch 1 --calib "$WORK/calib/$ckey" \
             --calib-cache "$cache" </dev/null >"$WORK/calib/$ckey.log" 2>&1; then
          say "  calibrated $ckey (8 batch-1 inputs, CPU reference) in $(since "$tc") s"
        else
          : >"$WORK/calib/$ckey.failed"
          say "  calibration of $ckey FAILED after $(since "$tc") s: $(grep -m1 -i 'error' "$WORK/calib/$ckey.log" | cut -c1-150)"
        fi
      fi
      args="$args --calib-cache $cache"
    fi
    # shellcheck disable=SC2086  # args is a list of aotc options
    if [ "$AOTC_PARALLEL" = 0 ]; then
      compile_case "$name" "$model" "$batch" "$WORK/cases/$name" $args ${AOTC_EXTRA_ARGS:-}
    else
      compile_case "$name" "$model" "$batch" "$WORK/cases/$name" $args ${AOTC_EXTRA_ARGS:-} &
      pids+=($!)
    fi
  done <<<"$plan"
  for pid in ${pids[@]+"${pids[@]}"}; do wait "$pid"; done
  while read -r name _label batch precision model data lib graphs role _variant args; do
    [ -n "$name" ] || continue
    local c="$WORK/cases/$name" lc="$WORK/cases/$lib" rc dt envs=() quiet=0 bad=0
    if [ "$graphs" = off ]; then envs=(AOTC_NO_CUDA_GRAPH=1); fi
    if [ "$role" = ablation ]; then quiet=1; fi  # the ablation table reports these
    rc="$(json_field "$lc/compile.json" rc)"
    dt="$(json_field "$lc/compile.json" seconds)"
    if [ "${rc:-1}" != 0 ]; then
      [ "$role" = ablation ] || failures=$((failures + 1))
      [ "$quiet" = 1 ] || say "  $name: aotc FAILED (rc ${rc:-?}, ${dt:-?} s): $(grep -m1 'error' "$lc/compile.log" | cut -c1-150)"
      continue
    fi
    timeout "$(cap 120)" env ${envs[@]+"${envs[@]}"} "$aotc_run" "$lc/lib$lib.so" --expect-dir "$data" \
      --model-metric --output-dir "$c/outputs" --json "$c/check.json" </dev/null >"$c/check.log" 2>&1
    rc=$?
    echo "{\"rc\": $rc}" >"$c/check_rc.json"
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; then  # ran (pass or mismatch): our own metric decides
      "$PY" tools/device/device_steps.py compare --expected "$data" --actual "$c/outputs" \
        --precision "$precision" --json "$c/metric.json" </dev/null >>"$c/check.log" 2>&1 || bad=1
    else
      bad=1
    fi
    local inputs=() k=0
    while [ -f "$data/input_$k.pb" ]; do inputs+=("$data/input_$k.pb"); k=$((k + 1)); done
    timeout "$(cap 120)" env ${envs[@]+"${envs[@]}"} "$aotc_run" "$lc/lib$lib.so" "${inputs[@]}" \
      --bench "$BENCH_ITERS" --json "$c/bench.json" </dev/null >"$c/bench.log" 2>&1 || bad=1
    if [ "$profile_ok" = 1 ] && [ "$role" = main ] && [[ " $PROFILE_CASES " == *" $name "* ]]; then
      # AOTC_MATMUL_TUNE_LOG: each tuned matmul's candidates and choice (split-K slices among them)
      # land in profile.log too.
      timeout "$(cap 60)" env AOTC_MATMUL_TUNE_LOG=1 "$aotc_run" "$lc/lib$lib.so" "${inputs[@]}" --profile \
        --profile-json "$c/profile.json" </dev/null >"$c/profile.log" 2>&1 || true
    fi
    if [ "$role" = main ] && [[ " ${NCU_CASES:-} " == *" $name "* ]]; then
      # Where a kernel's time goes (elapsed vs SM-active cycles, stalls, launch shape), for the
      # kernels NCU_KERNELS names; graphs off so that ncu sees each launch.
      timeout "$(cap 120)" env AOTC_NO_CUDA_GRAPH=1 "${NCU:-ncu}" --kernel-name "${NCU_KERNELS:-regex:.}" \
        --launch-count "${NCU_COUNT:-2}" --section SpeedOfLight --section LaunchStats --section Occupancy \
        --section WarpStateStats --section SchedulerStats ${NCU_EXTRA:-} "$aotc_run" "$lc/lib$lib.so" "${inputs[@]}" \
        --bench 1 --warmup 0 </dev/null >"$c/ncu.log" 2>&1 || true
      if [ -n "${NCU_SASS:-}" ]; then
        # Per-instruction SASS with the stall samples of its warps (where the cycles go).
        timeout "$(cap 120)" env AOTC_NO_CUDA_GRAPH=1 "${NCU:-ncu}" --kernel-name "$NCU_SASS" \
          --launch-count 1 --section SourceCounters --section WarpStateStats --page source \
          --print-source sass --csv "$aotc_run" "$lc/lib$lib.so" "${inputs[@]}" --bench 1 --warmup 0 \
          </dev/null >"$c/ncu_sass.log" 2>&1 || true
      fi
      say "  $name: ncu: $(grep -c 'Duration' "$c/ncu.log") kernel launch(es) profiled, CASE/ncu.log"
    fi
    if [ "$role" = main ] && [[ " ${TRACE_CASES:-} " == *" $name "* ]]; then
      # The kernels of graph replays (CUPTI through PyTorch's profiler), and with the profile and
      # the compile report the convolutions' rate in the replay (tools/device/conv_rate.py).
      timeout "$(cap 90)" "$PY" tools/device/trace_replay.py "$lc/lib$lib.so" --name "$lib" --data "$data" \
        --json "$c/trace.json" </dev/null >"$c/trace.log" 2>&1 || true
      if [ -f "$c/trace.json" ] && [ -f "$c/profile.json" ] && [ -f "$lc/report.json" ]; then
        "$PY" tools/device/conv_rate.py --profile "$c/profile.json" --trace "$c/trace.json" \
          --report "$lc/report.json" --json "$c/conv_rate.json" </dev/null >"$c/conv_rate.log" 2>&1 || true
        say "  $name: $(grep -m1 '^convolutions' "$c/conv_rate.log" | cut -c1-200)"
      fi
      say "  $name: $(grep -m1 '^== ' "$c/trace.log" | cut -c1-200)"
    fi
    local ab=""
    if [ -n "${AB_ENV:-}" ] && [ "$role" = main ]; then
      # shellcheck disable=SC2086  # AB_ENV is a list of VAR=value
      timeout "$(cap 120)" env ${envs[@]+"${envs[@]}"} $AB_ENV "$aotc_run" "$lc/lib$lib.so" "${inputs[@]}" \
        --bench "$BENCH_ITERS" --json "$c/bench_ab.json" </dev/null >"$c/bench_ab.log" 2>&1 || true
      ab="; with $AB_ENV: $(grep -o -m1 'median [0-9.]* ms' "$c/bench_ab.log")"
    fi
    if [ -n "${AB_AOTC_ARGS:-}" ] && [ "$role" = main ] &&
       { [ -z "${AB_CASES:-}" ] || [[ " $AB_CASES " == *" $name "* ]]; }; then
      # One library per ';'-separated variant (CASE/ab, CASE/ab2, ...), all timed in the same turns.
      local variants=() v vdirs=() vnames=() ok_variants=()
      IFS=';' read -r -a variants <<<"$AB_AOTC_ARGS"
      if [ "$precision" = int8 ]; then  # the variants reuse the model's calibration cache
        args="$args --calib-cache $(calib_cache "$model")"
      fi
      for v in "${!variants[@]}"; do
        # A "precision:" prefix limits the variant to that precision's cases.
        if [[ "${variants[v]}" =~ ^(fp32|fp16|bf16|int8):(.*)$ ]]; then
          [ "${BASH_REMATCH[1]}" = "$precision" ] || continue
          variants[v]="${BASH_REMATCH[2]}"
        fi
        local vd="$c/ab$([ "$v" -gt 0 ] && echo $((v + 1)))" vn="${lib}_ab$([ "$v" -gt 0 ] && echo $((v + 1)))"
        mkdir -p "$vd"
        # shellcheck disable=SC2086  # args and the variant are argument lists
        if timeout "$(cap 300)" "$BUILD_DIR/bin/aotc" "$model" -o "$vd/lib$vn.so" --name "$vn" \
             --batch "$batch" $args ${variants[v]} </dev/null >"$vd/compile.log" 2>&1; then
          vdirs+=("$vd"); vnames+=("$vn"); ok_variants+=("${variants[v]}")
        else
          ab="$ab; with ${variants[v]}: aotc FAILED: $(grep -m1 'error' "$vd/compile.log" | cut -c1-120)"
        fi
      done
      if [ "${#vdirs[@]}" -gt 0 ]; then
        local turn medians="" i line
        for turn in 1 2; do
          timeout "$(cap 120)" env ${envs[@]+"${envs[@]}"} "$aotc_run" "$lc/lib$lib.so" "${inputs[@]}" \
            --bench "$BENCH_ITERS" </dev/null >"${vdirs[0]}/bench_main_$turn.log" 2>&1 || true
          line="$(grep -o -m1 'median [0-9.]*' "${vdirs[0]}/bench_main_$turn.log" | cut -d' ' -f2)"
          for i in "${!vdirs[@]}"; do
            timeout "$(cap 120)" env ${envs[@]+"${envs[@]}"} "$aotc_run" "${vdirs[i]}/lib${vnames[i]}.so" "${inputs[@]}" \
              --bench "$BENCH_ITERS" </dev/null >"${vdirs[i]}/bench_ab_$turn.log" 2>&1 || true
            line="$line/$(grep -o -m1 'median [0-9.]*' "${vdirs[i]}/bench_ab_$turn.log" | cut -d' ' -f2)"
          done
          medians="$medians $line"
        done
        local joined; joined="$(printf ' / with %s' "${ok_variants[@]}")"
        ab="$ab; as built$joined (ms, twice):$medians"
        if [[ " ${TRACE_CASES:-} " == *" $name "* ]]; then  # the variants' replays too (trace.log there)
          for i in "${!vdirs[@]}"; do
            timeout "$(cap 90)" "$PY" tools/device/trace_replay.py "${vdirs[i]}/lib${vnames[i]}.so" --name "${vnames[i]}" \
              --data "$data" --json "${vdirs[i]}/trace.json" </dev/null >"${vdirs[i]}/trace.log" 2>&1 || true
            ab="$ab; traced with ${ok_variants[i]}: $(grep -m1 -o 'median: .*' "${vdirs[i]}/trace.log" | cut -c1-90)"
          done
        fi
      fi
    fi
    [ "$role" = ablation ] || failures=$((failures + bad))
    [ "$quiet" = 1 ] || say "  $name: compiled in $dt s; $(tail -n 1 "$c/check.log" | cut -c1-150); $(grep -o -m1 'median [0-9.]* ms' "$c/bench.log")$ab"
  done <<<"$plan"
  return $failures
}
# ---- (f) PyTorch peers -------------------------------------------------------------------------
step_peers() {
  local failures=0 precision m
  for precision in $PRECISIONS; do
    [ "$precision" != int8 ] || continue  # no int8 peer here (torch.compile has none; no TensorRT)
    for m in $MODELS; do
      local batches
      batches="$("$PY" tools/device/device_steps.py cases "$WORK/models" "$(first_label "$m")" |
                 awk '{ printf "%s ", $2 }')"
      if [ -z "$batches" ]; then batches="${BATCHES:-}"; fi
      # A peer needs tens of seconds (torch.compile): with under 30 s of the budget left it is
      # skipped, and each one is killed at its cap (the thirteenth session's call 2 ran past the
      # device tool's limit in this step and lost its logs).
      if [ "$(remaining)" -lt 30 ]; then
        echo "peers: $m $precision skipped: $(remaining) s of the budget left" >&2
        failures=$((failures + 1))
        continue
      fi
      local limit; limit="$(cap "$PEER_TIMEOUT")"
      timeout -k 5 "$((limit + 10))" "$PY" bench/torch_peers.py --model "$m" ${batches:+--batches "$batches"} \
        --modes "$PEER_MODES" --precision "$precision" --timeout "$limit" --attention "${PEER_ATTENTION:-sdpa}" \
        --data-dir "$WORK/models/$(first_label "$m")" --jsonl "$WORK/peers.jsonl" \
        >"$WORK/logs/peers_${m}_$precision.json" || failures=$((failures + 1))
    done
  done
  return $failures
}

# ---- (h) reliability (RELIABILITY=1): abi_stress and compute-sanitizer, tools/device/reliability.sh
step_reliability() {
  local deadline=$(( $(date +%s) + $(remaining) - 15 )) rc=0
  if [ -z "${RELIABILITY_GROUPS:-}" ]; then
    RELIABILITY_DEADLINE=$deadline bash tools/device/reliability.sh "$WORK" "$BUILD_DIR" "$WORK/reliability.md"
    rc=$?
  else
    # RELIABILITY_GROUPS="A=1|B=x y;A=2|...": one reliability.sh per group, all at once, each
    # with its group's variables (e.g. its own CUDA_VISIBLE_DEVICES, RELIABILITY_CASES,
    # RELIABILITY_PARTS, SANITIZER_TOOLS); their sections are joined in order.
    local groups=() assigns=() pids=() i
    IFS=';' read -r -a groups <<<"$RELIABILITY_GROUPS"
    for i in "${!groups[@]}"; do
      # '|' separates variables only before NAME=, so a value may hold a regex alternation
      # (SANITIZER_CTEST_ARGS=-R GpuAttention|GpuGelu).
      mapfile -t assigns < <(sed -E 's/\|([A-Za-z_][A-Za-z0-9_]*=)/\n\1/g' <<<"${groups[i]}")
      env "${assigns[@]}" RELIABILITY_TAG="g$((i + 1))" RELIABILITY_DEADLINE="$deadline" \
        bash tools/device/reliability.sh "$WORK" "$BUILD_DIR" "$WORK/reliability_g$((i + 1)).md" \
        >"$WORK/logs/reliability_g$((i + 1)).out" 2>&1 &
      pids+=($!)
    done
    for i in "${!pids[@]}"; do wait "${pids[i]}" || rc=$((rc + $?)); cat "$WORK/logs/reliability_g$((i + 1)).out"; done
    {  # one table: the first section's head, every group's rows, the first section's notes
      sed -n '1,/^|---/p' "$WORK/reliability_g1.md"
      for i in "${!groups[@]}"; do
        grep -E '^\| ' "$WORK/reliability_g$((i + 1)).md" 2>/dev/null | grep -vE '^\| check \|'
      done
      echo; sed -n '/^abi_stress:/,$p' "$WORK/reliability_g1.md"
    } >"$WORK/reliability.md"
  fi
  grep -E '^\| (abi_stress|memcheck|racecheck|all|build|compute)' "$WORK/reliability.md" 2>/dev/null |
    cut -c1-170 | sed 's/^/[device]   /' >&3
  return $rc
}
# ---- (i) fuzzing on every core (FUZZ_RUNS=N): harnesses built here, packed by tools/fuzz_pack.sh --
step_fuzz() {
  local archive="$repo/.deps/fuzz/aotc-fuzz.tar.xz" dir="$WORK/fuzz" seconds rc h harnesses
  read -ra harnesses <<<"${FUZZ_HARNESSES:-model_bytes model_mutator external_data}"
  if [ ! -f "$archive" ]; then
    echo "error: $archive missing (make it on the build machine: tools/fuzz_pack.sh; carry .deps)"; return 2
  fi
  bash tools/fuzz_pack.sh --unpack "$archive" "$dir" || return 2
  seconds="${FUZZ_SECONDS:-$(( ($(remaining) - 40) / ${#harnesses[@]} ))}"
  [ "$seconds" -ge 10 ] || seconds=10
  LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" bash tools/fuzz.sh --no-build \
    --build-dir "$dir" --fork "${FUZZ_JOBS:-$jobs}" --runs "$FUZZ_RUNS" --max-seconds "$seconds" --nice 0 \
    --summary "$dir/summary.txt" "${harnesses[@]}"
  rc=$?
  # Totals over the calls on this machine ($WORK/fuzz stays while it is held).
  awk -v d="$(date -u +%FT%TZ)" 'NR > 1 && $1 != "machine:" && $2 ~ /^[0-9]+$/ { print d "\t" $1 "\t" $2 "\t" $4 "\t" $6 "\t" $7 "\t" $8 }' \
    "$dir/summary.txt" >>"$dir/totals.tsv"
  {
    echo; echo "## Fuzzing (FUZZ_RUNS=$FUZZ_RUNS: libFuzzer -fork=${FUZZ_JOBS:-$jobs}, harnesses from .deps/fuzz/aotc-fuzz.tar.xz)"; echo
    echo '```'; cat "$dir/summary.txt"; echo '```'
    echo "Totals over the calls on this machine (executions, seconds, crashes, timeouts, ooms):"
    for h in "${harnesses[@]}"; do
      awk -F'\t' -v h="$h" '$2 == h { e += $3; s += $4; c += $5; t += $6; o += $7; n += 1 }
        END { printf "- %s: %d executions in %d s over %d call(s); %d crashes, %d timeouts, %d ooms\n", h, e, s, n, c, t, o }' "$dir/totals.tsv"
    done
    echo; sed -n 1,2p "$dir/MANIFEST" | sed 's/^/    /'
  } >"$WORK/fuzz.md"
  # Few files come back: one archive with the summary, the logs' ends and every finding.
  rm -rf "$dir/out" && mkdir -p "$dir/out/logs"
  cp "$dir/summary.txt" "$dir/totals.tsv" "$dir/MANIFEST" "$dir/out/"
  for h in "${harnesses[@]}"; do
    for f in "$dir"/logs/"$h".*.log; do [ -f "$f" ] && tail -n 400 "$f" >"$dir/out/logs/$(basename "$f")"; done
  done
  cp -r "$dir/artifacts" "$dir/out/" 2>/dev/null
  tar -czf "$OUT/fuzz.tar.gz" -C "$dir/out" .
  sed -n '2,$p' "$dir/summary.txt" | sed 's/^/[device]   /' >&3
  return $rc
}

# Folder names of the exports, as models/export_torchvision.py names them: NAME for the
# TorchScript exporter, NAME_dynamo for the dynamo one.
label_of() { if [ "$2" = torchscript ]; then echo "$1"; else echo "${1}_$2"; fi; }
first_label() { local e; for e in $EXPORTER; do label_of "$1" "$e"; return; done; }
labels=""
for m in $MODELS; do for e in $EXPORTER; do labels="$labels $(label_of "$m" "$e")"; done; done

gpu="$(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -n 1)"
if [ -z "${ARCH:-}" ]; then
  cc="$(echo "$gpu" | awk -F', ' '{ print $3 }' | tr -d ' .')"
  ARCH="sm_${cc:-90}"
fi
say "gpu: ${gpu:-none found}; arch $ARCH; $jobs cores; models: $MODELS; budget $TIME_BUDGET s"

run_step setup step_setup
# shellcheck disable=SC1091
# deps.env sets AOTC_BUILD_TESTS=ON when GoogleTest is there; an explicit AOTC_BUILD_TESTS=OFF from
# the caller wins (a run meant without tests otherwise built and ran them: sixth session, call 5).
caller_build_tests="${AOTC_BUILD_TESTS:-}"
[ -f "$WORK/deps.env" ] && . "$WORK/deps.env"
if [ "$caller_build_tests" = OFF ]; then AOTC_BUILD_TESTS=OFF; fi
export LD_LIBRARY_PATH="${AOTC_LD_PATH:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
say "deps: ${AOTC_DEPS_NOTE:-?}"
# FUZZ_BACKGROUND=1: the fuzz step starts now, beside the other steps, on FUZZ_JOBS of the cores
# (the GPU steps leave most of a many-core machine idle), and is waited for before the table.
fuzz_pid=""
if [ -n "${FUZZ_RUNS:-}" ] && [ "${FUZZ_BACKGROUND:-0}" != 0 ]; then
  run_step fuzz step_fuzz &
  fuzz_pid=$!
  say "fuzz    started in the background (${FUZZ_JOBS:-$jobs} jobs)"
fi
if [ -z "${SKIP_BUILD:-}" ]; then run_step build step_build; fi
conform_pid=""
if [ -n "$CONFORMANCE" ] && [ "${CONFORMANCE_BACKGROUND:-0}" != 0 ]; then
  run_step conform step_conformance &
  conform_pid=$!
  say "conform started in the background (${CONFORMANCE_JOBS:-$jobs} jobs, GPUs ${CONFORMANCE_GPUS:-all})"
fi
if [ -z "${SKIP_CTEST:-}" ] && [ "${AOTC_BUILD_TESTS:-OFF}" = ON ]; then run_step ctest step_ctest; fi
if [ -n "$CONFORMANCE" ] && [ -z "$conform_pid" ]; then run_step conform step_conformance; fi
if [ -z "${SKIP_EXPORT:-}" ]; then run_step export step_export; fi
if [ -z "${SKIP_AOTC:-}" ]; then run_step aotc step_aotc; fi
if [ "${RELIABILITY:-0}" != 0 ]; then run_step reliab step_reliability; fi
if [ -n "${FUZZ_RUNS:-}" ] && [ -z "$fuzz_pid" ]; then run_step fuzz step_fuzz; fi
if [ -z "${SKIP_PEERS:-}" ]; then run_step peers step_peers; fi
[ -n "$fuzz_pid" ] && wait "$fuzz_pid"
if [ -n "$conform_pid" ]; then wait "$conform_pid"; fi
if [ -n "$CONFORMANCE" ]; then
  grep -iE 'pass|rate|not run' "$WORK/logs/conform.log" | tail -n 8 | sed 's/^/[device]   /'
fi

# ---- (g) the table ------------------------------------------------------------------------------
ctest_line="$(grep -E 'tests passed|tests failed' "$OUT/ctest.log" 2>/dev/null | tail -n 1)"
torch_v="$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
header="gpu: ${gpu:-?} | torch ${torch_v:-?} | arch $ARCH | ctest: ${ctest_line:-not run} | deps: ${AOTC_DEPS_NOTE:-?}
steps (s): $(awk -F'\t' '{ printf "%s %s%s  ", $1, $3, ($2 == "0" ? "" : " [rc " $2 "]") }' "$WORK/steps.tsv") | total $(since "$t_script") s"
"$PY" tools/device/summarize.py --work "$WORK" --out "$OUT" --models "$labels" --header "$header" \
  --precisions "$PRECISIONS" --ablation-label "$(first_label "$ABLATION_MODEL")" ${plan_args[@]+"${plan_args[@]}"}
for section in "$WORK/reliability.md" "$WORK/fuzz.md"; do  # RELIABILITY=1, FUZZ_RUNS
  [ -f "$section" ] && cat "$section" >>"$OUT/table.md"
done

# Logs, reports and small results into one archive (the .so files and outputs stay behind).
(cd "$WORK" && find logs cases models calib steps.tsv peers.jsonl deps.env -type f \
   \( -name '*.log' -o -name '*.json' -o -name '*.jsonl' -o -name '*.txt' -o -name '*.tsv' \
      -o -name '*.env' -o -name '*.h' \) -size -8M 2>/dev/null | tar -czf "$OUT/logs.tar.gz" -T -)
if [ -f "$OUT/ctest.log" ] && [ "$(stat -c %s "$OUT/ctest.log")" -gt 15000000 ]; then
  tail -c 15000000 "$OUT/ctest.log" >"$OUT/ctest.tail.log" && mv "$OUT/ctest.tail.log" "$OUT/ctest.log"
fi

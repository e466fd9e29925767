#!/usr/bin/env bash
# Runs the full benchmark set behind docs/benchmarks.md and keeps the raw output in OUTDIR.
#
#   bench/run_all.sh [BUILD_DIR] [OUTDIR]                    (defaults: build-bench, BUILD_DIR/bench-results)
#   OPENBLAS_DIR=/path/with/libblas.so.3 bench/run_all.sh     also run libtorch on OpenBLAS
#   PIP_TORCH_BIN=build-bench/bench/ember-bench-pip-torch bench/run_all.sh   and PyPI's libtorch
#
#   BENCH_ARGS="--filter sgemm" bench/run_all.sh             extra ember-bench arguments
#
# BUILD_DIR must be configured with -Dbench=true -Dlibtorch_compare=enabled for the libtorch
# column. Waits (up to MAX_WAIT seconds, default 1200) for the 1-minute load average to fall
# under MAX_LOAD (default 1.5) before each run, and records the load it actually ran at.
set -euo pipefail
build=${1:-build-bench}
out=${2:-$build/bench-results}
max_load=${MAX_LOAD:-1.5}
max_wait=${MAX_WAIT:-1200}
mkdir -p "$out"

wait_quiet() {
  local waited=0
  while [ "$(awk -v m="$max_load" '{print ($1 > m)}' /proc/loadavg)" = 1 ] && [ "$waited" -lt "$max_wait" ]; do
    sleep 15
    waited=$((waited + 15))
  done
  echo "load before run: $(cut -d' ' -f1-3 /proc/loadavg) (waited ${waited}s)" | tee -a "$out/load.txt"
}

wait_quiet
"$build/bench/ember-bench" ${BENCH_ARGS:-} --json-out "$out/results.jsonl" | tee "$out/table.txt"
if [ -n "${OPENBLAS_DIR:-}" ]; then
  wait_quiet
  LD_LIBRARY_PATH=$OPENBLAS_DIR "$build/bench/ember-bench" --filter sgemm | tee "$out/table_openblas.txt"
fi
if [ -n "${PIP_TORCH_BIN:-}" ]; then
  wait_quiet
  "$PIP_TORCH_BIN" ${BENCH_ARGS:-} | tee "$out/table_pip_torch.txt"
fi
wait_quiet
"$(dirname "$0")/compile_time.sh" "$build" 3 | tee "$out/compile_time.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt"

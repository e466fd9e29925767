#!/usr/bin/env bash
# Builds the libFuzzer targets for Ember's file parsers and runs each for SECONDS (default
# 60); exits non-zero on any finding (crash, sanitizer report, leak, timeout, out-of-memory).
#
#   tests/fuzz/run.sh [SECONDS]
#
# Targets: fuzz_safetensors, fuzz_npy, fuzz_npz (this directory). They link only the parsers,
# which read from byte spans and make no tensors (see src/io/format_common.hpp), so they are
# compiled here directly with clang++ -fsanitize=fuzzer,address,undefined instead of through a
# second Meson build of the whole library. Needs clang and its compiler-rt (Debian 12:
# `apt-get install clang libclang-rt-14-dev`), fmt's headers and zlib.
#
# Seeds come from tests/fuzz/corpus/<target>/ and stay untouched; what the fuzzer finds
# goes to $FUZZ_DIR/corpus-<target>/ (default build-fuzz/), crashers to
# $FUZZ_DIR/crash-<target>-*. Reproduce one with: build-fuzz/fuzz_npz build-fuzz/crash-npz-...
# Environment: FUZZ_DIR, FUZZ_CXX (default clang++), FUZZ_JOBS (builds and fuzzers run at once, default 2).
set -euo pipefail
SECONDS_PER_TARGET=${1:-60}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${FUZZ_DIR:-$ROOT/build-fuzz}
CXX=${FUZZ_CXX:-clang++}
TARGETS=(safetensors npy npz)
mkdir -p "$OUT"

# fmt header-only: Debian's libfmt is built by g++, and clang++ mangles some of its template
# instantiations differently.
FLAGS=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
  -DFMT_HEADER_ONLY -I"$ROOT/include" -I"$ROOT/src/io")
PARSERS=(error.cpp io/text.cpp io/format_common.cpp io/json_reader.cpp io/safetensors_format.cpp
  io/npy_format.cpp io/zip.cpp)
# shellcheck disable=SC2207
LIBS=($(pkg-config --libs zlib 2>/dev/null || echo -lz))

echo "== building with $($CXX --version | head -n 1)"
objs=()
pids=()
for src in "${PARSERS[@]}"; do
  obj="$OUT/$(echo "$src" | tr / _).o"
  objs+=("$obj")
  "$CXX" "${FLAGS[@]/-fsanitize=fuzzer,/-fsanitize=fuzzer-no-link,}" -c "$ROOT/src/$src" -o "$obj" &
  pids+=($!)
  if (( ${#pids[@]} >= ${FUZZ_JOBS:-2} )); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done
for t in "${TARGETS[@]}"; do
  "$CXX" "${FLAGS[@]}" "$ROOT/tests/fuzz/fuzz_$t.cpp" "${objs[@]}" "${LIBS[@]}" -o "$OUT/fuzz_$t"
done

# Each target fuzzes on one core; FUZZ_JOBS of them run at once (same time per target, less
# wall time: CI's fuzz stage went from 220 s to about 160 s on two cores).
fuzz_one() {  # fuzz_one TARGET: runs it, returns its exit status
  local t=$1 dict=$ROOT/tests/fuzz/$1.dict
  [[ -f $dict ]] || dict=$ROOT/tests/fuzz/npy.dict
  mkdir -p "$OUT/corpus-$t"
  # -rss_limit_mb: a member may inflate to ~1000x its compressed size (max_inflated_size).
  "$OUT/fuzz_$t" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2560 -max_len=65536 \
    -dict="$dict" -print_final_stats=1 -artifact_prefix="$OUT/crash-$t-" \
    "$OUT/corpus-$t" "$ROOT/tests/fuzz/corpus/$t" > "$OUT/fuzz_$t.log" 2>&1
}
report() {  # report TARGET STATUS
  local t=$1
  if [[ $2 -ne 0 ]]; then
    echo "FAIL: fuzz_$t found a problem; the end of its log ($OUT/fuzz_$t.log):"
    tail -n 60 "$OUT/fuzz_$t.log"
    return 1
  fi
  grep -E "^(Done|stat::number_of_executed_units|stat::new_units_added)" "$OUT/fuzz_$t.log" || true
  echo "ok: fuzz_$t: $(grep -c . <(ls "$OUT/corpus-$t")) inputs in its corpus"
}

status=0
running=()  # "pid target" of the targets in flight, oldest first
finish_oldest() {
  local pid=${running[0]%% *} t=${running[0]#* } rc=0
  running=("${running[@]:1}")
  wait "$pid" || rc=$?
  report "$t" "$rc" || status=1
}
for t in "${TARGETS[@]}"; do
  echo "== fuzz_$t for ${SECONDS_PER_TARGET} s"
  fuzz_one "$t" &
  running+=("$! $t")
  if (( ${#running[@]} >= ${FUZZ_JOBS:-2} )); then finish_oldest; fi
done
while (( ${#running[@]} > 0 )); do finish_oldest; done
exit $status

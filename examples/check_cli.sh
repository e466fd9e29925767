#!/usr/bin/env bash
# The examples' command lines: bad values end with one line and status 2 (a flag) or 1 (a
# failure during the run), never a crash, hang or abort. Run by `meson test` with a text file
# of a few KB (the README) as $1 and the example programs after it. In a cross build Meson sets
# MESON_EXE_WRAPPER to the emulator that runs them (qemu-aarch64).
set -u
text=$1
dir=$(dirname "$2")
read -r -a wrapper <<<"${MESON_EXE_WRAPPER:-}"
# Each command's limit; an emulator runs them 5-20x slower (fashion_mnist's synthetic
# evaluation took over a minute under qemu-aarch64 on a busy 2-core machine).
limit=60
[[ ${#wrapper[@]} -gt 0 ]] && limit=600
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# expect STATUS TEXT COMMAND...: the command exits with STATUS within $limit s, and its stderr
# contains TEXT.
expect() {
  local want=$1 text=$2
  shift 2
  timeout "$limit" "${wrapper[@]}" "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  if [[ $rc -ne $want ]] || ! grep -qF -- "$text" "$tmp/err"; then
    echo "FAIL: $* -> exit $rc (want $want), stderr: $(head -c 300 "$tmp/err")"
    failures=$((failures + 1))
  fi
}

printf 'x' >"$tmp/one.txt"
expect 1 "too short for --seq 64" "$dir/char_transformer" --text "$tmp/one.txt" --steps 1
expect 1 "divisible by num_heads" "$dir/char_transformer" --text "$text" --d-model 6 --steps 1
expect 2 "--seq must be at least 1" "$dir/char_transformer" --seq 0
expect 2 "--precision must be f32 or bf16" "$dir/char_transformer" --precision fp8
expect 2 "--length must be at least 2" "$dir/sequence_lstm" --length 1
expect 2 "--hidden must be at least 1" "$dir/sequence_lstm" --hidden 0
expect 2 "--lr expects a finite number" "$dir/robot_dynamics" --lr nan
expect 2 "--ticks must be at least 1" "$dir/robot_dynamics" --ticks 0
expect 2 "--batch must be at least 1" "$dir/fashion_mnist" --batch 0
expect 2 "unknown argument --bogus" "$dir/tensor_tour" --bogus
mkdir -p "$tmp/empty"
expect 1 "[load_mnist]" "$dir/fashion_mnist" --data "$tmp/empty"
expect 1 "[save_safetensors]" "$dir/fashion_mnist" --epochs 0 --checkpoint "$tmp/no/such/dir/x.safetensors"
# The tour ends with its key=value line.
"${wrapper[@]}" "$dir/tensor_tour" | tail -n 1 | grep -q '^tour=done ' || { echo "FAIL: tensor_tour's last line"; failures=$((failures + 1)); }

[[ $failures -eq 0 ]] && echo "examples: every bad command line ended cleanly"
exit $((failures > 0))

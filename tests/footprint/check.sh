#!/usr/bin/env bash
# check.sh BINARY [MAX_BYTES] [SANITIZE]: runs the footprint program, then checks that it links
# no autograd and no CUDA symbols and that its stripped size is at most MAX_BYTES (2 MiB).
# The size limit is not applied under sanitizers (SANITIZE != none): they inflate every binary.
set -euo pipefail
bin=$1
max=${2:-2097152}
sanitize=${3:-none}
fail=0

# In a cross build Meson names the emulator that runs the program (qemu-aarch64).
read -r -a wrapper <<<"${MESON_EXE_WRAPPER:-}"
"${wrapper[@]}" "$bin" || { echo "FAIL: $bin exited with $?"; fail=1; }

syms=$(nm -C "$bin" 2>/dev/null; nm -C -D "$bin" 2>/dev/null)
bad=$(grep -i 'cuda\|autograd' <<<"$syms" || true)
if [[ $sanitize != none ]]; then
  # clang's UBSan (-fsanitize=function) emits the type_info of each function type called
  # through a pointer, such as "typeinfo for void (ember::autograd::AutogradMeta*)" (the
  # pointer type of a deleter): a name, not autograd code.
  bad=$(grep -v 'typeinfo \(name \)\?for [^<(]* (' <<<"$bad" || true)
fi
if [[ -n $bad ]]; then
  echo "FAIL: autograd/CUDA symbols in an InferencePolicy binary:"
  head -n 40 <<<"$bad"
  fail=1
else
  echo "ok: no autograd or CUDA symbols ($(wc -l <<<"$syms") symbols checked)"
fi
if ldd "$bin" 2>/dev/null | grep -q 'libember'; then
  echo "FAIL: linked against a shared libember; the footprint binary must link Ember statically"
  fail=1
fi

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
strip -o "$tmp" "$bin"
bytes=$(stat -c %s "$tmp")
echo "stripped size: $bytes bytes ($(( (bytes + 1023) / 1024 )) KiB), limit $max bytes"
size "$tmp" || true
if [[ $sanitize != none ]]; then
  echo "(size limit not applied: sanitizer build, b_sanitize=$sanitize)"
elif (( bytes > max )); then
  echo "FAIL: stripped binary is $bytes bytes, over the limit of $max"
  fail=1
fi
exit $fail

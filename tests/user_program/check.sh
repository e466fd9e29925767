#!/usr/bin/env bash
# check.sh ARCHIVE: the user program's object (program.cpp) must not hold the DefaultPolicy
# layer chain: the library compiles it once (include/ember/core/tensor_instances.hpp). Two
# signs that it does: out-of-line pieces of the chain (layer Impls, the backend switch, an op's
# kernel entry run<Backends>, the profiler's op description), and, since inlining can leave no
# symbol of its own, a use of the autograd layer's thread-local grad mode, which the chain reads
# on every op and this program does not use itself.
set -euo pipefail
all=$(nm -C "$1")
defined=$(nm -C --defined-only "$1")
bad=$(grep -E 'Autograd::Impl<|ProfileLayer::Impl<|Autocast::Impl<|visit_backend<|BackendCall<|ops::[A-Za-z0-9_]+::run<|profiler::detail::describe' <<<"$defined" || true)
bad+=$(grep -E 'autograd::detail::t_modes' <<<"$all" || true)
if [[ -n $bad ]]; then
  echo "FAIL: the user program compiles (parts of) the layer chain itself; its entry belongs in include/ember/core/tensor_instances.hpp:"
  head -n 20 <<<"$bad"
  exit 1
fi
echo "ok: no layer-chain code among $(wc -l <<<"$all") symbols"

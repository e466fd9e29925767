#!/usr/bin/env bash
# Wall time to compile and link a 20-line program that includes <ember/ember.hpp> at -O2, and
# a 20-line nn/optim training loop (twice: with <ember/nn.hpp> and <ember/optim.hpp>, and with
# only the headers it uses), against the built Ember library (best of N runs, ccache
# bypassed), and the same for minimal libtorch programs when Debian's libtorch-dev is installed (reference).
#
#   bench/compile_time.sh [BUILD_DIR] [RUNS]        (defaults: build-bench, 3)
#   CXX=clang++ bench/compile_time.sh               (compiler; default g++)
#
# Prints one line per program: "<name>: best X.XX s of N (runs: a b c)".
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build-bench}" && pwd)
runs=${2:-3}
CXX=${CXX:-g++}
export CCACHE_DISABLE=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ls "$build"/src/libember.* > /dev/null 2>&1 || { echo "no libember in $build/src: build Ember first" >&2; exit 1; }
# Ember's compile and link flags for this build directory, from Meson's uninstalled .pc file.
# The .pc lists -lember as a plain flag (so that the installed file stays relocatable): its
# uninstalled twin knows neither the headers nor the library's place in the build tree.
ember_flags="-I$src/include -L$build/src $(PKG_CONFIG_PATH="$build/meson-uninstalled" pkg-config --cflags --libs ember-uninstalled)"

cat > "$tmp/ember_prog.cpp" <<'CPP'
#include <ember/ember.hpp>

#include <cstdio>

int main() {
  ember::manual_seed(0);
  ember::Tensor x = ember::randn({64, 32});
  ember::Tensor w = ember::randn({32, 16});
  ember::Tensor b = ember::zeros({16});
  ember::Tensor h = ember::mm(x, w) + b;
  ember::Tensor y = ember::softmax(h.relu(), 1);
  ember::Tensor s = y.sum();
  std::printf("sum = %f\n", s.item<float>());
  ember::Tensor z = (x * 2.0 - 1.0).exp().mean({0});
  std::printf("numel = %lld, mean[0] = %f\n", static_cast<long long>(z.numel()),
              z[0].item<float>());
  std::printf("%s\n", (y.sizes() == ember::Shape{64, 16}) ? "ok" : "bad");
  return 0;
}
CPP

# The nn/optim side: a 20-line training loop (modules are templates on the policy; the
# default policy's heavy parts are compiled into the library, so this stays a few seconds).
cat > "$tmp/ember_nn_prog.cpp" <<'CPP'
#include <ember/nn.hpp>
#include <ember/optim.hpp>

#include <cstdio>

int main() {
  using namespace ember;
  manual_seed(0);
  nn::Sequential net{nn::Linear(4, 16), nn::ReLU(), nn::Linear(16, 1)};
  optim::Adam opt(net->parameters(), optim::AdamOptions(1e-2));
  Tensor x = randn({64, 4}), y = x.sum({1}, true);
  Tensor loss;
  for (int step = 0; step < 100; ++step) {
    opt.zero_grad();
    loss = nn::F::mse_loss(net(x), y);
    loss.backward();
    opt.step();
  }
  std::printf("loss = %f\n", loss.item<float>());
  return 0;
}
CPP

# The same loop including only the headers it uses instead of <ember/nn.hpp> and
# <ember/optim.hpp> (each header compiles alone; CI checks that).
sed -e 's|#include <ember/nn.hpp>|#include <ember/nn/functional.hpp>\
#include <ember/nn/modules/activation.hpp>\
#include <ember/nn/modules/container.hpp>\
#include <ember/nn/modules/linear.hpp>|' -e 's|#include <ember/optim.hpp>|#include <ember/optim/adam.hpp>|' \
  "$tmp/ember_nn_prog.cpp" > "$tmp/ember_nn_lean_prog.cpp"
grep -q 'ember/optim/adam.hpp' "$tmp/ember_nn_lean_prog.cpp" || { echo "the lean program's includes were not rewritten" >&2; exit 1; }

cat > "$tmp/torch_nn_prog.cpp" <<'CPP'
#include <torch/torch.h>

#include <cstdio>

int main() {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(4, 16), torch::nn::ReLU(), torch::nn::Linear(16, 1));
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-2));
  torch::Tensor x = torch::randn({64, 4}), y = x.sum(1, true);
  torch::Tensor loss;
  for (int step = 0; step < 100; ++step) {
    opt.zero_grad();
    loss = torch::mse_loss(net->forward(x), y);
    loss.backward();
    opt.step();
  }
  std::printf("loss = %f\n", loss.item<float>());
  return 0;
}
CPP

cat > "$tmp/torch_prog.cpp" <<'CPP'
#include <torch/torch.h>

#include <cstdio>

int main() {
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({64, 32});
  torch::Tensor w = torch::randn({32, 16});
  torch::Tensor b = torch::zeros({16});
  torch::Tensor h = torch::mm(x, w) + b;
  torch::Tensor y = torch::softmax(h.relu(), 1);
  torch::Tensor s = y.sum();
  std::printf("sum = %f\n", s.item<float>());
  torch::Tensor z = (x * 2.0 - 1.0).exp().mean({0});
  std::printf("numel = %lld, mean[0] = %f\n", static_cast<long long>(z.numel()),
              z[0].item<float>());
  std::printf("%s\n", (y.sizes() == torch::IntArrayRef{64, 16}) ? "ok" : "bad");
  return 0;
}
CPP

# time_best NAME RUNS CMD...: runs CMD RUNS times, prints the best wall time.
time_best() {
  local name=$1 n=$2 best="" all=""
  shift 2
  for ((i = 0; i < n; i++)); do
    local t0 t1 t
    t0=$(date +%s.%N)
    "$@" > "$tmp/log" 2>&1 || { echo "$name: compile failed:" >&2; tail -20 "$tmp/log" >&2; return 1; }
    t1=$(date +%s.%N)
    t=$(echo "$t1 - $t0" | bc -l)
    all="$all $(printf '%.2f' "$t")"
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
  done
  printf '%s: best %.2f s of %d (runs:%s)\n' "$name" "$best" "$n" "$all"
}

echo "compiler: $($CXX --version | head -1); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
time_best "ember   (20 lines, -O2, compile+link)" "$runs" \
  $CXX -O2 "$tmp/ember_prog.cpp" -o "$tmp/ember_prog" $ember_flags -Wl,-rpath,"$build/src"
"$tmp/ember_prog" > /dev/null || echo "warning: the ember program did not run" >&2
time_best "ember nn (20-line training loop, -O2, compile+link)" "$runs" \
  $CXX -O2 "$tmp/ember_nn_prog.cpp" -o "$tmp/ember_nn_prog" $ember_flags -Wl,-rpath,"$build/src"
"$tmp/ember_nn_prog" > /dev/null || echo "warning: the ember nn program did not run" >&2
time_best "ember nn, only the headers it uses (same loop, -O2, compile+link)" "$runs" \
  $CXX -O2 "$tmp/ember_nn_lean_prog.cpp" -o "$tmp/ember_nn_lean_prog" $ember_flags -Wl,-rpath,"$build/src"
"$tmp/ember_nn_lean_prog" > /dev/null || echo "warning: the lean ember nn program did not run" >&2

torch_inc=/usr/include/torch/csrc/api/include
if [ -f "$torch_inc/torch/torch.h" ]; then
  time_best "libtorch (20 lines, -O2, compile+link)" "$runs" \
    $CXX -std=c++17 -O2 -isystem "$torch_inc" "$tmp/torch_prog.cpp" -o "$tmp/torch_prog" \
    -Wl,--no-as-needed -ltorch -ltorch_cpu -lc10 -Wl,--as-needed
  "$tmp/torch_prog" > /dev/null || echo "warning: the libtorch program did not run" >&2
  time_best "libtorch nn (20-line training loop, -O2, compile+link)" "$runs" \
    $CXX -std=c++17 -O2 -isystem "$torch_inc" "$tmp/torch_nn_prog.cpp" -o "$tmp/torch_nn_prog" \
    -Wl,--no-as-needed -ltorch -ltorch_cpu -lc10 -Wl,--as-needed
  "$tmp/torch_nn_prog" > /dev/null || echo "warning: the libtorch nn program did not run" >&2
else
  echo "libtorch: not installed (apt-get install libtorch-dev), skipped"
fi

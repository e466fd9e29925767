#!/usr/bin/env bash
# Builds ember-bench against the libtorch inside PyPI's torch wheel (a second libtorch
# reference, next to Debian's libtorch-dev that -Dlibtorch_compare=enabled uses). The wheel is
# only unpacked, never installed: its torch/include and torch/lib form a complete libtorch.
#
#   pip download torch --no-deps -d /tmp/torchwheel
#   (cd /tmp/torchwheel && unzip -q torch-*.whl 'torch/include/*' 'torch/lib/*' 'torch/version.py')
#   bench/build_pip_torch.sh /tmp/torchwheel/torch [build-bench]
#   build-bench/bench/ember-bench-pip-torch --filter sgemm
#
# Needs the Ember library already built in the build directory (ninja -C build-bench).
set -euo pipefail
torch=${1:?usage: build_pip_torch.sh TORCH_DIR [BUILD_DIR]}
build=${2:-build-bench}
src=$(cd "$(dirname "$0")/.." && pwd)
torch=$(cd "$torch" && pwd)
build=$(cd "$build" && pwd)
obj=$build/bench/pip-torch.p
mkdir -p "$obj"
CXX=${CXX:-g++}

ls "$build"/src/libember.* > /dev/null 2>&1 || { echo "no libember in $build/src: build Ember first" >&2; exit 1; }
# Ember's compile and link flags for this build directory, from Meson's uninstalled .pc file.
ember_flags=$(PKG_CONFIG_PATH="$build/meson-uninstalled" pkg-config --cflags --libs ember-uninstalled)
ver=$(sed -n "s/^__version__ = '\(.*\)'/\1/p" "$torch/version.py" 2>/dev/null || true)

# torch 2.x headers require C++20 (Debian's 1.13 ones, C++17).
$CXX -O2 -std=c++20 -fPIC -w -DPIP_TORCH_VERSION="\"${ver:-unknown}\"" \
  -isystem "$torch/include" -isystem "$torch/include/torch/csrc/api/include" \
  -c "$src/bench/libtorch_workloads.cpp" -o "$obj/libtorch_workloads.o"
$CXX -O2 $ember_flags -c "$src/bench/ember_bench.cpp" -o "$obj/ember_bench.o"
$CXX "$obj/ember_bench.o" "$obj/libtorch_workloads.o" -o "$build/bench/ember-bench-pip-torch" \
  $ember_flags -Wl,-rpath,"$build/src" -ldl \
  -L"$torch/lib" -Wl,-rpath,"$torch/lib" -Wl,--no-as-needed -ltorch_cpu -lc10 -Wl,--as-needed
echo "built $build/bench/ember-bench-pip-torch (torch ${ver:-unknown} from $torch)"

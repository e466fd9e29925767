# Shared by scripts/test, scripts/demo and .ci/run (sourced, not run).

# Debian packages the build and the tests need. ccache is optional (used when present).
EMBER_APT_PACKAGES=(meson ninja-build pkg-config g++ binutils libeigen3-dev xtensor-dev libxsimd-dev
  libfmt-dev libspdlog-dev doctest-dev cmake make zlib1g-dev ccache)

# .ci/run's clang-built stages need these: clang with libFuzzer and the sanitizer runtimes
# (sanitize, tsan, fuzz, clang), llvm-symbolizer (llvm-14, not pulled in by clang without its
# recommends: without it the sanitizers' reports have no function names, and UBSan's
# suppressions, which match them, do not apply), fmt's headers and zlib (the fuzzed parsers).
# Each stage installs them by calling ember_install_deps with EMBER_APT_PACKAGES set to this
# list, in a subshell (scripts/test needs no clang).
EMBER_CLANG_APT_PACKAGES=(clang libclang-rt-14-dev llvm-14 libfmt-dev zlib1g-dev pkg-config)

# scripts/test-aarch64 (and .ci/run's aarch64 stage) add these: the cross compiler, QEMU's
# user-mode emulator, and arm64 builds of the libraries Ember links (Debian's multiarch).
EMBER_AARCH64_APT_PACKAGES=(g++-aarch64-linux-gnu qemu-user libfmt-dev:arm64 libspdlog-dev:arm64 zlib1g-dev:arm64)

# Installs the packages from EMBER_APT_PACKAGES that are missing (apt-get update only then).
ember_install_deps() {
  [[ ${EMBER_NO_INSTALL:-0} == 1 ]] && return 0
  if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    echo "== not a Debian-like system: install by hand: ${EMBER_APT_PACKAGES[*]}"
    return 0
  fi
  local missing=() p
  for p in "${EMBER_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  echo "== installing: ${missing[*]}"
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null; then sudo=(sudo); else
      echo "== need root (or sudo) to install: ${missing[*]}" >&2
      return 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  # Packages of another architecture (name:arm64) need it added to dpkg before the update.
  local arch
  for arch in $(printf '%s\n' "${missing[@]}" | sed -n 's/.*:\([a-z0-9]*\)$/\1/p' | sort -u); do
    if [[ $arch != "$(dpkg --print-architecture)" ]] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
      "${sudo[@]}" dpkg --add-architecture "$arch"
    fi
  done
  "${sudo[@]}" apt-get update
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
}

# True when an nvcc is found that can compile a trivial kernel.
ember_nvcc_usable() {
  local nvcc
  nvcc=$(command -v nvcc || true)
  [[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
  [[ -n $nvcc ]] || return 1
  local d rc=0
  d=$(mktemp -d)
  printf '__global__ void k(float* x) { x[0] = 1.f; }\nint main() { return 0; }\n' > "$d/t.cu"
  timeout 120 "$nvcc" -o "$d/t" "$d/t.cu" >/dev/null 2>&1 || rc=1
  rm -rf "$d"
  return $rc
}

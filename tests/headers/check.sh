#!/usr/bin/env bash
# Every public header alone in a translation unit, through the compiler's front end at
# -Wall -Wextra -Werror: each header includes what it uses and its non-template code is
# warning-free. (Templates are only checked where instantiated: CI also builds
# tests/clang/train.cpp at -Werror under both compilers.)
#
#   tests/headers/check.sh [JOBS]             (CXX: the compiler, default clang++)
#   tests/headers/check.sh [JOBS] --together  every header in one unit instead: the warnings
#                                             only, in a few seconds (a second compiler's pass)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
jobs=2
together=
for arg in "$@"; do
  case $arg in
    --together) together=$arg ;;
    *[!0-9]* | '') echo "unknown argument '$arg' (expected JOBS or --together)"; exit 2 ;;
    *) jobs=$arg ;;
  esac
done
export CXX=${CXX:-clang++}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export root tmp
# The interop headers include Eigen and xtensor, which a user of them has.
export EXTRA_FLAGS="$(pkg-config --cflags eigen3 2>/dev/null || echo -I/usr/include/eigen3)"

check_one() {
  local header=$1 name
  name=$(echo "$header" | tr / _)
  echo "#include <$header>" > "$tmp/$name.cpp"
  # shellcheck disable=SC2086
  if ! $CXX -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I"$root/include" $EXTRA_FLAGS "$tmp/$name.cpp" \
      > "$tmp/$name.log" 2>&1; then
    echo "FAIL $header"
    cat "$tmp/$name.log"
  fi
}
export -f check_one

headers=$(cd "$root/include" && find ember -name '*.hpp' | sort)
[[ -n $headers ]] || { echo "no headers under $root/include/ember"; exit 1; }
count=$(echo "$headers" | wc -l)
if [[ $together == --together ]]; then
  sed 's/.*/#include <&>/' <<<"$headers" > "$tmp/all.cpp"
  # shellcheck disable=SC2086
  $CXX -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I"$root/include" $EXTRA_FLAGS "$tmp/all.cpp"
  echo "ok: all $count headers in one unit compile under $CXX -Wall -Wextra -Werror"
  exit 0
fi
failures=$(echo "$headers" | xargs -P "$jobs" -I{} bash -c 'check_one "$1"' _ {})
if [[ -n $failures ]]; then
  echo "$failures"
  echo "$(echo "$failures" | grep -c '^FAIL ') of $count headers failed alone under $CXX"
  exit 1
fi
echo "ok: all $count headers compile alone under $CXX -Wall -Wextra -Werror"

#!/usr/bin/env python3
"""Compiles the library's C++ sources with clang to LLVM IR at -O0 (-S -emit-llvm, output
discarded) and -Werror, with the very flags a GCC build directory compiles them with (its
compile_commands.json): a Meson project that uses clang builds Ember as a subproject with it.
IR generation, unlike -fsyntax-only, also reports what clang checks late (an always-inline
intrinsic used without its target feature, inline asm); machine code is not made, so this
costs a fraction of a second build. Every instruction-set variant of a kernel file is checked:
they take different preprocessor paths.

    tests/clang/check_sources.py BUILD_DIR [JOBS]

Prints one line per failing file with clang's diagnostics, and exits 1 when any failed.
"""
import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

CLANG = os.environ.get("CLANGXX", "clang++")
# Flags of a build's compile line that clang does not take or that write files.
DROP_WITH_VALUE = {"-o", "-MQ", "-MF", "-MT"}
DROP = {"-MD", "-MMD", "-Winvalid-pch"}


def clang_command(entry):
    args = shlex.split(entry["command"])
    while args and os.path.basename(args[0]) in ("ccache", "sccache"):
        args = args[1:]
    out = [CLANG]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in DROP_WITH_VALUE:
            skip = True
            continue
        if a in DROP or a.startswith("-fdiagnostics-color"):
            continue
        if a.startswith("-O"):
            continue  # -O0 is added: the IR is not kept, and optimising it would cost time
        out.append(a)
    return out + ["-O0", "-S", "-emit-llvm", "-o", os.devnull, "-Werror", "-fno-color-diagnostics"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = os.path.realpath(sys.argv[1])
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    root = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    library = [os.path.join(root, d) + os.sep for d in ("src", "kernels_cpu")]
    todo, seen = [], set()
    for e in entries:
        path = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if not path.endswith(".cpp") or not any(path.startswith(d) for d in library):
            continue
        cmd = clang_command(e)
        key = (path, tuple(cmd))
        if key not in seen:
            seen.add(key)
            todo.append((path, e["directory"], cmd))
    if not todo:
        sys.exit(f"no library sources in {build}/compile_commands.json")

    def check(item):
        path, directory, cmd = item
        r = subprocess.run(cmd, cwd=directory, capture_output=True, text=True)
        return path, r.returncode, r.stderr

    failed = 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for path, rc, err in pool.map(check, todo):
            if rc != 0:
                failed += 1
                print(f"FAIL {os.path.relpath(path, root)}\n{err}")
    print(f"{CLANG} -S -emit-llvm -O0 -Werror: {len(todo) - failed} of {len(todo)} library compilations passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

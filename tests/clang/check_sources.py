#!/usr/bin/env python3
"""Runs the library's C++ sources through clang's front end (-fsyntax-only), with the very
flags a GCC build directory compiles them with (its compile_commands.json), so that CI proves
Ember builds with clang (a Meson project using clang builds Ember as a subproject with it)
without compiling the library a second time. Every instruction-set variant of a kernel file is
checked: they take different preprocessor paths.

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
        out.append(a)
    return out + ["-fsyntax-only", "-fno-color-diagnostics"]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    library = [os.path.join(root, d) + os.sep for d in ("src", "kernels_cpu")]
    todo, seen = [], set()
    for e in entries:
        path = os.path.normpath(os.path.join(e["directory"], e["file"]))
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
    print(f"clang -fsyntax-only: {len(todo) - failed} of {len(todo)} library compilations passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

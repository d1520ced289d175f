#!/usr/bin/env python3
"""Prints the build outputs that the tests ctest would select need, as Ninja targets.

    ctest_programs.py BUILD_DIR [CTEST ARGS...]

For the tests that `ctest -N CTEST ARGS` lists in BUILD_DIR (a configured Ninja build tree),
every file of the build tree named in a test's command or properties (the program, a tool
passed as an argument, a path in its ENVIRONMENT), plus every shared library and module the
tree builds (libcairn, the HDF5 filter plugin: loaded, never named). A test whose program is a
target not built yet has no command in ctest's listing; its add_test() line in the
CTestTestfile.cmake files names the program. Paths are relative to
BUILD_DIR, one line, space-separated, so that a build of a selection of tests (scripts/test.sh's
sanitizer step) compiles only what those tests run. Exits non-zero when ctest or ninja fails.
"""
import json
import os
import re
import subprocess
import sys


def _strings(value):
    """Every string inside a JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(argv[1])
    listed = subprocess.run(["ctest", "--test-dir", build, "-N", "--show-only=json-v1", *argv[2:]],
                            capture_output=True, text=True, check=True)
    tests = json.loads(listed.stdout).get("tests", [])
    outputs = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"],
                             capture_output=True, text=True, check=True).stdout
    known = {line.split(": ")[0] for line in outputs.splitlines() if ": " in line}
    wanted = {t for t in known if re.search(r"\.so(\.[0-9]+)*$", t)}
    declared = {}  # test name -> its add_test() line
    for folder, _, files in os.walk(build):
        if "CTestTestfile.cmake" in files:
            with open(os.path.join(folder, "CTestTestfile.cmake")) as f:
                for line in f:
                    m = re.match(r"add_test\(\[=\[(.*?)\]=\]", line)
                    if m:
                        declared[m.group(1)] = line
    prefix = build + os.sep
    for test in tests:
        texts = [test.get("command", []), test.get("properties", []),
                 declared.get(test.get("name"), "")]
        for text in _strings(texts):
            for token in re.split(r"[\s=;:,\"()]+", text):
                if token.startswith(prefix):
                    relative = os.path.relpath(token, build)
                    if relative in known:
                        wanted.add(relative)
    print(" ".join(sorted(wanted)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Doxygen input filter for the Fortran module `cairn` (lib/fortran/cairn.F90).

cairn.F90 builds the module from the files it #includes (lib/fortran/*.inc and the generic
interfaces that lib/fortran/arrays.cmake generates). Doxygen reads each file on its own and does
not insert included files, so this filter writes cairn.F90 with every `#include "<name>"`
replaced by that file's text, found next to cairn.F90 or in one of the directories given
before the file name: Doxygen then sees one module with all its procedures.

In a module whose default is private, Doxygen 1.9 applies `public :: <names>` to procedures
but to one generic interface only, and to no derived type declared without `, public`; the
filter marks each such public interface and type with Doxygen's `\\public` in its doc comment,
so the reference shows exactly the names the module exports.

In doc comments (`!>`, `!<`), `%` (a component: `view%data`) is doubled: Doxygen would take
it for its "do not link" marker and drop it.

Warnings name lines of the expanded text: run this script on cairn.F90 to see them.
Usage (Doxyfile): FILTER_PATTERNS = *.F90="<this script> <generated dir>"; Doxygen appends the
file name. An include found nowhere is an error (exit status 1).
"""

import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')
DOC_LINE = re.compile(r"^\s*!>")
PUBLIC = re.compile(r"^\s*public\s*::(.*?)(&?)\s*$", re.I)
DECLARES = re.compile(r"^(\s*)(?:interface\s+(\w+)|type\s*(?:,\s*bind\s*\(\s*c\s*\))?\s*::\s*(\w+))",
                      re.I)


def expand(path, dirs, out):
    for line in open(path, encoding="utf-8"):
        match = INCLUDE.match(line)
        if not match:
            out.append(line)
            continue
        for folder in [os.path.dirname(path)] + dirs:
            candidate = os.path.join(folder, match.group(1))
            if os.path.isfile(candidate):
                expand(candidate, dirs, out)
                break
        else:
            sys.exit(f"{path}: {match.group(1)} not found in {[os.path.dirname(path)] + dirs}")


def public_names(lines):
    """The names of every `public :: a, b, &` statement (continued ones included)."""
    names, continued = set(), False
    for line in lines:
        code = line.split("!")[0]
        match = PUBLIC.match(code)
        if match:
            text, continued = match.group(1), bool(match.group(2))
        elif continued:
            text = code.rstrip().rstrip("&")
            continued = code.rstrip().endswith("&")
        else:
            continue
        names.update(n.strip().lower() for n in text.rstrip("&").split(",") if n.strip())
    return names


def main(args):
    *dirs, path = args
    lines = []
    expand(path, dirs, lines)
    public = public_names(lines)
    out = []
    for line in lines:
        match = DECLARES.match(line)
        if match and (match.group(2) or match.group(3)).lower() in public:
            out.append(f"{match.group(1)}!> \\public\n")
        code, marker, doc = line.partition("!>") if DOC_LINE.match(line) else line.partition("!<")
        line = code + marker + (doc.replace("%", "%%") if marker else "")
        out.append(line)
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])

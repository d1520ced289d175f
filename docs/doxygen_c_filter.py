#!/usr/bin/env python3
"""Doxygen input filter for the C headers (cairn.h, cairn/c/*.h), whose comments are plain C comments (/* ... */).

Turns them into Doxygen comments without moving a line, so warnings keep their line numbers:
  - the comment that opens the file becomes the file's documentation (\\file);
  - a comment on its own line documents the declaration after it (/** ... */), except the
    section rules (/* ---- name */) and, inside a struct, the headings of groups of fields;
  - a comment after code on the same line documents that code (/**< ... */);
  - <word> is escaped (\\<word\\>): in the C headers it is text ("<prefix><step>"), not HTML.
Usage (Doxyfile): FILTER_PATTERNS = *.h=<this script>; Doxygen passes the file name.
"""

import os
import re
import sys


def main(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    out = []
    in_struct = False
    in_comment = False
    first_comment = True
    for line in lines:
        stripped = line.lstrip()
        if in_comment:
            out.append(re.sub(r"<(\w+)>", r"\\<\1\\>", line))
            if "*/" in line:
                in_comment = False
            continue
        if re.match(r"(typedef\s+)?struct\b[^;]*\{\s*$", stripped):
            in_struct = True
        elif in_struct and stripped.startswith("}"):
            in_struct = False
        if stripped.startswith("/*"):
            if first_comment:
                line = line.replace("/*", "/** \\file " + os.path.basename(path), 1)
            elif not stripped.startswith("/* ---") and not in_struct:
                line = line.replace("/*", "/**", 1)
            first_comment = False
            if "*/" not in stripped:
                in_comment = True
        else:
            match = re.match(r"(.*?\S.*?)/\*(.*)$", line)
            if match and not match.group(1).lstrip().startswith("//"):
                line = match.group(1) + "/**<" + match.group(2)
                if "*/" not in match.group(2):
                    in_comment = True
        if not line.lstrip().startswith("#"):
            # <prefix><step> in a comment is text, not an HTML tag.
            line = re.sub(r"<(\w+)>", r"\\<\1\\>", line)
        out.append(line)
    sys.stdout.write("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])

#!/usr/bin/env python3
"""The fields of cairn.h's structs, of the Fortran module's bind(C) types and of layout_c.c.

test_fortran_layout compares offsets and sizes of the fields that layout_c.c lists; a field
appended to a C struct but missing from both layout_c.c and the Fortran type can hide in the
struct's tail padding (an int after an int), where no size differs. This test reads the
sources themselves: every bind(C) type of lib/fortran must have the fields of its C struct, by
name and in order, and layout_c.c must list them all.

Usage: layout_fields.py <source dir>. Exits 1, naming the struct and the fields, on a mismatch.
"""
import pathlib
import re
import sys


def c_structs(include_dir):
    """{struct name: [field names]} of every `typedef struct NAME {...} NAME;` in the C ABI."""
    structs = {}
    for header in sorted(include_dir.glob("*.h")):
        text = re.sub(r"/\*.*?\*/", "", header.read_text(), flags=re.S)
        for name, body in re.findall(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*\1\s*;", text, re.S):
            fields = []
            for declaration in body.split(";"):
                declaration = declaration.strip()
                if not declaration:
                    continue
                match = re.search(r"(\w+)\s*(\[[^\]]*\])?$", declaration)
                if match is None:
                    raise SystemExit(f"{header}: cannot read the field '{declaration}' of {name}")
                fields.append(match.group(1))
            structs[name] = fields
    return structs


def fortran_types(fortran_dir):
    """{C struct name: (file, [component names])} of every bind(C) type of the module."""
    types = {}
    for source in sorted(list(fortran_dir.glob("*.inc")) + list(fortran_dir.glob("*.F90"))):
        lines = source.read_text().splitlines()
        current = None
        for line in lines:
            code = line.split("!", 1)[0].strip().lower()
            start = re.match(r"type\s*,\s*bind\s*\(\s*c\s*\)\s*::\s*(\w+)$", code)
            if start:
                current = start.group(1)
                fields = []
                continue
            if current is None:
                continue
            if re.match(r"end\s*type\b", code):
                name = current[:-2] if current.endswith("_c") else current
                if not name.startswith("cairn_"):
                    name = "cairn_" + name
                types[name] = (source.name, fields)
                current = None
            elif "::" in code:
                names = re.sub(r"\([^)]*\)", "", code.split("::", 1)[1])
                fields.extend(n.strip() for n in names.split(",") if n.strip())
    return types


def layout_c_lists(layout_c):
    """{struct name: [field names]} of the FIELD(struct, field) lists of layout_c.c."""
    lists = {}
    for struct, field in re.findall(r"FIELD\(\s*(\w+)\s*,\s*(\w+)\s*\)", layout_c.read_text()):
        lists.setdefault(struct, []).append(field)
    return lists


def main():
    root = pathlib.Path(sys.argv[1])
    structs = c_structs(root / "include" / "cairn" / "c")
    types = fortran_types(root / "lib" / "fortran")
    lists = layout_c_lists(root / "tests" / "fortran" / "layout_c.c")
    failures = []
    if not types:
        failures.append("no bind(C) type found in lib/fortran")
    for name, (source, fields) in sorted(types.items()):
        if name not in structs:
            failures.append(f"{source}: bind(C) type of {name}, which no C header defines")
            continue
        if fields != structs[name]:
            failures.append(f"{source}: {name} has the fields {fields} in Fortran, "
                            f"{structs[name]} in C")
        if lists.get(name) != structs[name]:
            failures.append(f"layout_c.c: {name} lists {lists.get(name)}, C has {structs[name]}")
    for failure in failures:
        print(failure)
    print(f"layout_fields: {len(types)} bind(C) types checked, {len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

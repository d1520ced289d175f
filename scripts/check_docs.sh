#!/usr/bin/env bash
# Checks that the documentation names only things that exist:
#   scripts/check_docs.sh [FILE.md ...]   (default: README.md, every docs/*.md but the API
#                                          reference's mainpage*.md, BENCHMARKS.md, CHANGELOG.md)
# Outside fenced code blocks, each file must name
#   - repository paths that exist: words starting with lib/ include/ scripts/ tests/ apps/
#     docs/ spack/ .ci/, and file names ending in a source or script extension (a name
#     without a leading folder, like tree_writer.hpp or format/posix/row.cpp, must end some
#     repository path); <placeholder>, * and {a,b} match any part of one path element;
#   - relative Markdown link targets that exist, and anchors (#...) that are headings of the
#     target file;
#   - in inline code, C++ symbols that exist: qualified names (TreeSaveOptions::posix) must be
#     spelled out in include/ or lib/, or each part declared there inside the one before;
#     C names (cairn_manager_save, CAIRN_FORMAT_POSIX), calls (storage_formats()) and
#     CamelCase names (ShardWriter) must occur in include/ or lib/, or, for build options,
#     test names and the programs' own functions, in CMake files, scripts/, apps/ or tests/.
# IGNORED_* below lists the few names the docs use on purpose although they are none of these.
# Prints one line per problem and exits 1 when there is any; exits 0 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 - "$@" <<'PY'
import os
import re
import subprocess
import sys

# Names the docs mention on purpose although they are no repository file or cairn symbol.
IGNORED_PATH_PREFIXES = ("build", "share/", "/", "$", "~", "apps/bench/__pycache__")
IGNORED_NAMES = {
    # Orbax, JAX and HDF5 names quoted for comparison (docs/orbax.md).
    "StandardCheckpointHandler", "PyTreeCheckpointHandler", "JsonCheckpointHandler",
    "CompositeCheckpointHandler", "FixedIntervalPolicy", "AnyPreservationPolicy",
    "StepAlreadyExistsError", "NamedSharding", "StandardSave", "StandardRestore",
    "checkpoint_manager_test.py", "preservation_policy_test.py",
    # Files that a build generates or an install creates.
    "cairn/config.hpp", "cairnConfig.cmake", "include/cairn/fortran",
    # Removed names that CHANGELOG.md records.
    "StructureHash",
}
DOCS = sys.argv[1:] or (["README.md"] +
                        sorted(os.path.join("docs", name) for name in os.listdir("docs")
                               if name.endswith(".md") and not name.startswith("mainpage")) +
                        ["BENCHMARKS.md", "CHANGELOG.md"])
ROOTS = ("lib/", "include/", "scripts/", "tests/", "apps/", "docs/", "spack/", ".ci/")
EXTENSIONS = ("hpp", "cpp", "h", "c", "py", "sh", "f90", "F90", "inc", "cmake", "md", "txt",
              "sbatch", "in")

problems = []


def problem(doc, text, offset, what):
    problems.append(f"{doc}:{text.count(chr(10), 0, offset) + 1}: {what}")


# --- what exists -------------------------------------------------------------------------
try:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"],
                            capture_output=True, text=True, check=True).stdout.split("\n")
except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file but builds
    listed = [os.path.relpath(os.path.join(base, name))
              for base, subdirs, names in os.walk(".")
              if not subdirs.__setitem__(slice(None), [d for d in subdirs
                                                      if not d.startswith(("build", ".git"))])
              for name in names]
files = sorted(p for p in listed if p and os.path.isfile(p))
dirs = {os.path.dirname(p) for p in files}
for d in list(dirs):
    while d:
        d = os.path.dirname(d)
        dirs.add(d)


def path_pattern(token):
    """A regex for one doc path: <x>, * and {a,b} stand for parts of one path element."""
    out, i = "", 0
    while i < len(token):
        c = token[i]
        if c == "<":
            j = token.find(">", i)
            out, i = out + r"[^/]+", (j + 1 if j > 0 else len(token))
            continue
        if c == "{":
            j = token.find("}", i)
            if j > 0:
                out += "(?:" + "|".join(re.escape(a) for a in token[i + 1:j].split(",")) + ")"
                i = j + 1
                continue
        out += r"[^/]*" if c == "*" else ("|" if c == "|" else re.escape(c))
        i += 1
    return out


def path_exists(token, doc):
    if token.startswith(("./", "../")):
        return os.path.exists(os.path.normpath(os.path.join(os.path.dirname(doc), token)))
    is_dir = token.endswith("/")
    token = token.rstrip("/")
    anchored = token.startswith(ROOTS) or token.startswith(".ci/")
    if not re.search(r"[<>*{|]", token):
        if anchored:
            return os.path.exists(token)
        return any(p == token or p.endswith("/" + token)
                   for p in (dirs if is_dir else list(files) + list(dirs)))
    # a|b alternatives apply to the path element they are in: p|a|r<k> is (p|a|r)<k>.
    parts = [path_pattern(part) if "|" not in part else
             "(?:" + "|".join(path_pattern(a) if i == len(part.split("|")) - 1 else
                               re.escape(a) for i, a in enumerate(part.split("|"))) + ")"
             for part in token.split("/")]
    pattern = ("^" if anchored else r"(?:^|/)") + "/".join(parts) + "$"
    regex = re.compile(pattern)
    return any(regex.search(p) for p in (dirs if is_dir else list(files) + list(dirs)))


# --- the symbols of include/ and lib/ ----------------------------------------------------
def source_files(top):
    for base, subdirs, names in os.walk(top):
        subdirs[:] = [d for d in subdirs if not d.startswith(("build", "."))]
        for name in names:
            if name.endswith((".hpp", ".cpp", ".h", ".c", ".inc", ".F90", ".f90", ".in",
                              ".cmake", ".txt")):
                yield os.path.join(base, name)


STRIP = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
DECL = re.compile(r"\b(?:struct|class|union|enum(?:\s+class)?|namespace)\s+([A-Za-z_][\w:]*)"
                  r"[^;{()]*\{")
WORD = re.compile(r"~?[A-Za-z_]\w*")
source_text, words, blocks = [], set(), {}
for path in list(source_files("include")) + list(source_files("lib")):
    text = open(path, encoding="utf-8", errors="replace").read()
    source_text.append(text)
    words.update(WORD.findall(text))
    if not path.endswith((".hpp", ".cpp", ".h", ".c")):
        continue
    code = STRIP.sub(lambda m: " " * len(m.group(0)), text)
    for m in DECL.finditer(code):
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        for name in m.group(1).split("::"):
            blocks.setdefault(name, []).append((code, m.end(), i))
source_text = "\n".join(source_text)
# Build options, targets, environment variables, test names and the programs' own functions
# live in CMake files, scripts, apps/ and tests/: bare names and calls may come from there.
code_words = set(words)
for path in ["CMakeLists.txt"] + list(source_files("cmake")) + list(source_files("apps")) + \
        list(source_files("tests")) + [os.path.join("scripts", n) for n in os.listdir("scripts")]:
    if os.path.isfile(path) and path.endswith((".txt", ".cmake", ".sh", ".py", ".hpp", ".cpp",
                                               ".h", ".c", ".F90", ".f90")):
        code_words.update(WORD.findall(open(path, encoding="utf-8", errors="replace").read()))

member_cache = {}


def declared_in(outer, inner):
    key = (outer, inner)
    if key not in member_cache:
        pattern = re.compile(r"(?<![\w:])" + re.escape(inner) + r"\b")
        member_cache[key] = any(pattern.search(code, b, e) for code, b, e in blocks.get(outer, ()))
    return member_cache[key]


def qualified_ok(name):
    parts = name.split("::")
    if parts[0] == "std" or re.search(r"(?<![\w:])" + re.escape(name) + r"(?!\w)", source_text):
        return True
    return all(declared_in(a, b) for a, b in zip(parts, parts[1:]))


IDENT = r"~?[A-Za-z_]\w*"
QUALIFIED = re.compile(rf"(?<![\w.:]){IDENT}(?:::{IDENT})+")
CALL = re.compile(rf"^({IDENT}(?:::{IDENT})*)\((?:[^()]|\([^()]*\))*\)$")
C_NAME = re.compile(r"(?<![\w.:/-])(?:cairn_[a-z0-9_]+|CAIRN_[A-Z0-9_]+)\b(?![.\-/])")
CAMEL = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+$")


def check_code_span(doc, text, offset, span):
    span = span.strip()
    if span in IGNORED_NAMES:
        return
    for m in QUALIFIED.finditer(span):
        name = m.group(0)
        if name not in IGNORED_NAMES and not qualified_ok(name):
            problem(doc, text, offset, f"symbol '{name}' is not declared in include/ or lib/")
    for m in C_NAME.finditer(span):
        if m.group(0) not in code_words and m.group(0) not in IGNORED_NAMES:
            problem(doc, text, offset, f"name '{m.group(0)}' is not in the code or the build")
    call = CALL.match(span)
    if call and "::" not in call.group(1) and not re.search(r"[A-Z]\w*_", call.group(1)):
        name = call.group(1)
        if name not in code_words and name not in IGNORED_NAMES:
            problem(doc, text, offset, f"function '{name}()' is not in the code")
    if CAMEL.match(span) and span not in code_words:
        problem(doc, text, offset, f"name '{span}' is not in the code")


# --- the docs ----------------------------------------------------------------------------
def headings_of(path):
    slugs, seen = set(), {}
    fenced = False
    for line in open(path, encoding="utf-8"):
        if re.match(r"^\s*```", line):
            fenced = not fenced
        m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).replace("`", "").lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            slugs.add(slug if n == 0 else f"{slug}-{n}")
    return slugs


PATH = re.compile(r"(?<![\w/.\-<>$~])((?:\.ci|lib|include|scripts|tests|apps|docs|spack)/"
                  r"[\w.\-/<>*{},|]*|[\w.\-/<>*{},|]*\.(?:" + "|".join(EXTENSIONS) + r"))"
                  r"(?![\w])")
LINK = re.compile(r"\]\(([^)\s]+)\)")

for doc in DOCS:
    if not os.path.isfile(doc):
        problems.append(f"{doc}: no such file")
        continue
    lines = open(doc, encoding="utf-8").read().split("\n")
    fenced, kept = None, []
    for line in lines:
        m = re.match(r"^(\s*)```", line)
        if fenced is None and m:
            fenced = m.group(1)
            kept.append("")
        elif fenced is not None:
            if re.match(r"^" + fenced + r"```\s*$", line):
                fenced = None
            kept.append("")
        else:
            kept.append(line)
    text = "\n".join(kept)
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        path = os.path.normpath(os.path.join(os.path.dirname(doc), file)) if file else doc
        if not os.path.exists(path):
            problem(doc, text, m.start(), f"link target '{target}' does not exist")
        elif anchor and path.endswith(".md") and anchor not in headings_of(path):
            problem(doc, text, m.start(), f"link '{target}': no heading '#{anchor}' in {path}")
    for m in PATH.finditer(text):
        token = m.group(1).rstrip(".,;:")
        if "/" not in token and not re.search(r"\.(?:" + "|".join(EXTENSIONS) + r")$", token):
            continue
        if token.startswith(IGNORED_PATH_PREFIXES) or token in IGNORED_NAMES:
            continue
        if not path_exists(token, doc):
            problem(doc, text, m.start(), f"path '{token}' does not exist")
    for m in re.finditer(r"`([^`]+)`", text):
        check_code_span(doc, text, m.start(), m.group(1))

def line_key(line):
    doc, number = line.split(":")[:2]
    return (DOCS.index(doc) if doc in DOCS else 0, int(number) if number.isdigit() else 0)


for line in sorted(problems, key=line_key):
    print(line, flush=True)
if problems:
    print(f"check_docs: {len(problems)} problem(s) in {', '.join(DOCS)}", file=sys.stderr)
    sys.exit(1)
print(f"check_docs: {', '.join(DOCS)} name only existing files and symbols")
PY

#!/usr/bin/env bash
# The Slurm batch scripts cairn installs as templates (apps/heat2d/slurm/*.sbatch, installed in
# share/cairn) are the ones docs/slurm.md shows: each must appear there verbatim, as a ```sh
# block.
#   readme_templates.sh DOC TEMPLATE...
set -euo pipefail
readme="$1"
shift
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Every ```sh block of the page, one file each.
awk -v dir="$work" '/^```sh$/ { n++; inside = 1; next } inside && /^```$/ { inside = 0; next }
                    inside { print > (dir "/block" n) }' "$readme"
for template in "$@"; do
  found=""
  for block in "$work"/block*; do
    if cmp -s "$template" "$block"; then found="$block"; break; fi
  done
  [ -n "$found" ] || { echo "FAIL: $(basename "$readme") does not show $template verbatim"; exit 1; }
  echo "$(basename "$readme") shows $(basename "$template") verbatim"
done

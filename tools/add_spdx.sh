#!/usr/bin/env bash
# Puts `SPDX-License-Identifier: Apache-2.0` (see LICENSE) at the top of every
# source file git tracks that lacks it: C++/CUDA files get a // line first,
# scripts get a # line after their #! line, Bazel and CMake files a # line
# first. Files that already name an SPDX licence are left alone, so it is safe
# to run again (after a merge, say).
#
#   tools/add_spdx.sh [--check] [--exclude PATH_PREFIX]...
#       --check   changes nothing; lists the files without the line and exits 1
#                 if there are any.
#       --exclude leaves files under PATH_PREFIX alone (repeatable).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

check=0 excludes=()
while (($#)); do
  case "$1" in
    --check) check=1 ;;
    --exclude) (($# >= 2)) || { echo "--exclude needs a path prefix" >&2; exit 2; }; excludes+=("$2"); shift ;;
    *) echo "usage: tools/add_spdx.sh [--check] [--exclude PATH_PREFIX]..." >&2; exit 2 ;;
  esac
  shift
done

tag="SPDX-License-Identifier: Apache-2.0"

# The comment style of a file, or nothing if it is not a source file.
style() {
  case "$1" in
    *.cc | *.h | *.cu | *.cuh | *.hpp | *.cpp) echo slash ;;
    *.sh | *.py | run_tests | run_example | .ci/run) echo script ;;
    *.bzl | */BUILD | BUILD | *.BUILD.tpl | WORKSPACE | */WORKSPACE | CMakeLists.txt | */CMakeLists.txt | *.cmake | *.cmake.in) echo hash ;;
  esac
}

missing=0
while IFS= read -r -d '' f; do
  for e in "${excludes[@]+"${excludes[@]}"}"; do [[ "$f" == "$e"* ]] && continue 2; done
  kind="$(style "$f")"
  [[ -n "$kind" && -f "$f" ]] || continue
  head -n 3 "$f" | grep -q "SPDX-License-Identifier" && continue
  missing=$((missing + 1))
  if ((check)); then echo "$f"; continue; fi
  tmp="$(mktemp)"
  case "$kind" in
    slash) { echo "// $tag"; cat "$f"; } >"$tmp" ;;
    hash) { echo "# $tag"; cat "$f"; } >"$tmp" ;;
    script)
      if head -n 1 "$f" | grep -q '^#!'; then
        { head -n 1 "$f"; echo "# $tag"; tail -n +2 "$f"; } >"$tmp"
      else
        { echo "# $tag"; cat "$f"; } >"$tmp"
      fi ;;
  esac
  cat "$tmp" >"$f"  # keeps the file's mode
  rm -f "$tmp"
done < <(git ls-files -z)

if ((check)); then
  echo "add_spdx: $missing file(s) without '$tag'"
  ((missing == 0))
else
  echo "add_spdx: added '$tag' to $missing file(s)"
fi

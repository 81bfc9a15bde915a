#!/usr/bin/env bash
# Static checks as a test: clang-format clean, cppcheck and clang-tidy without findings.
# Usage: lint.sh SOURCE_DIR BUILD_DIR (BUILD_DIR holds compile_commands.json).
set -euo pipefail
src=$1
build=$2
cd "$src"
mapfile -t files < <(git ls-files '*.c' '*.h' 2>/dev/null || find engine server tests -name '*.[ch]')
clang-format --dry-run -Werror "${files[@]}"
echo "clang-format: ${#files[@]} files clean"
cppcheck --quiet --enable=warning,performance,portability --std=c11 --error-exitcode=1 \
  --inline-suppr -I engine/include engine server
echo "cppcheck: clean"
mapfile -t tidy < <(printf '%s\n' "${files[@]}" | grep -E '^(engine|server)/.*\.c$')
if ! out=$(clang-tidy -p "$build" --quiet "${tidy[@]}" 2>&1); then
  echo "$out" | grep -v "warnings generated"
  exit 1
fi
echo "clang-tidy: ${#tidy[@]} files clean"

#!/usr/bin/env bash
# Configures and builds grainlab into build/ (Release) — the binaries land in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
# GRAINLAB_TEST_COMMANDS stays off outside tests: it lets a worker break its limits on purpose
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAINLAB_TEST_COMMANDS="${GRAINLAB_TEST_COMMANDS:-OFF}" >/dev/null
cmake --build build

#!/usr/bin/env bash
# Builds grainlab and runs the pour scene headless, printing its measurements as JSON Lines
# (the daemon grainlabd takes over this command once it exists).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/grainlab run --scene pour --quality 1 --seconds 20 "$@"

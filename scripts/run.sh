#!/usr/bin/env bash
# Builds grainlab and starts the daemon with its defaults: HTTP on 127.0.0.1:8080, the stream's
# port 8081 reserved, data in ./data, the client from web_client/. Extra arguments go to it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/grainlabd "$@"

#!/usr/bin/env bash
# Readers never wait on a simulation (issue 16, item 1): GET /api/sessions, /metrics and a
# websocket join stay quick while one session steps the heaviest world allowed, and DELETE ends it
# at once with a step in flight. bench/latency.py measures; the bounds here are generous (a slow,
# loaded 2-core machine), far under what a lock held across the step gave (10 s and more).
set -euo pipefail
daemon=$1
mult=${GRAINLAB_TIMEOUT_MULTIPLIER:-1}
exec python3 "$(dirname "$0")/../../bench/latency.py" "$daemon" --rounds 30 \
  --check $((1000 * mult)) $((3000 * mult))

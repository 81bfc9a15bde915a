#!/usr/bin/env bash
# Installs what grainlab needs to build, run and test on Debian 12, from Debian's packages only.
# Idempotent; run as root (CI and fresh machines are root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
pkgs=(ca-certificates gcc libc6-dev make cmake ninja-build pkg-config libseccomp-dev
  libmicrohttpd-dev libjansson-dev libzstd-dev libwebsockets-dev libsqlite3-dev sqlite3 clang-format clang-tidy cppcheck curl python3)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

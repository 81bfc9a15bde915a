#!/usr/bin/env bash
# Installs what grainlab needs to build, run and test on Debian 12: Debian's packages (libpq for a
# cluster's results database, and PostgreSQL 15 itself, which test_results_db starts on its own),
# and the browser client's libraries from npm at the versions web_client/package-lock.json pins.
# Idempotent; run as root (CI and fresh machines are root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
pkgs=(ca-certificates gcc libc6-dev make cmake ninja-build pkg-config libseccomp-dev
  libmicrohttpd-dev libjansson-dev libzstd-dev libwebsockets-dev libssl-dev libsqlite3-dev libcurl4-openssl-dev sqlite3 clang-format clang-tidy cppcheck curl python3 python3-vtk9 python3-numpy chromium nginx systemd
  # the cluster's record (--results-db) and test_results_db's real server
  libpq-dev postgresql-15
  # tests/service/test_container.sh: podman builds deploy/Containerfile on a debootstrap base;
  # runc for machines where crun refuses the cgroups (hybrid mode)
  podman runc debootstrap)
# Node.js and npm from Debian unless the machine has them already (e.g. NodeSource's, which bundles npm)
command -v node >/dev/null || pkgs+=(nodejs)
command -v npm >/dev/null || pkgs+=(npm)
# kubectl (test_k8s: deploy/k8s/ read offline) from Debian unless the machine has one already:
# another package that owns /usr/bin/kubectl (e.g. the Google Cloud SDK's) conflicts with it
command -v kubectl >/dev/null || pkgs+=(kubernetes-client)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# the client's three.js, uPlot, fzstd and qrcode-generator (served by grainlabd), playwright-core
# and axe-core (browser tests) and
# @seriousme/openapi-schema-validator (test_openapi: schema/openapi.yaml against OpenAPI 3.1)
cd "$(dirname "$0")/../web_client"
[ -d node_modules ] && npm ls --omit=optional >/dev/null 2>&1 || npm ci --no-audit --no-fund

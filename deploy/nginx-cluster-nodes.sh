#!/usr/bin/env bash
# Writes grainlab-nodes.conf for deploy/nginx-cluster.conf from the cluster's nodes, one argument
# each: NODE=HOST:HTTP_PORT:WS_PORT (e.g. n0=10.0.0.10:8080:8081). Prints to stdout.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: nginx-cluster-nodes.sh NODE=HOST:HTTP_PORT:WS_PORT..." >&2; exit 2; }
any="" any_ws="" names=""
for spec in "$@"; do
  # the same node ids grainlabd takes (server/common/node.h): a router must not route on others
  if ! [[ $spec =~ ^([a-z][a-z0-9]{0,7})=([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):([0-9]{1,5}):([0-9]{1,5})$ ]]; then
    echo "nginx-cluster-nodes.sh: '$spec' is not NODE=HOST:HTTP_PORT:WS_PORT" >&2
    exit 2
  fi
  node=${BASH_REMATCH[1]} host=${BASH_REMATCH[2]} http=${BASH_REMATCH[3]} ws=${BASH_REMATCH[4]}
  echo "upstream grainlab_${node} { server ${host}:${http}; keepalive 8; }"
  echo "upstream grainlab_${node}_ws { server ${host}:${ws}; }"
  any+=" server ${host}:${http};"
  any_ws+=" server ${host}:${ws};"
  names+=" ${node} ${node};"
done
echo "upstream grainlab_any {${any} keepalive 16; }"
echo "upstream grainlab_any_ws {${any_ws} }"
echo "map \$grainlab_named \$grainlab_node {${names} default \"\"; }"

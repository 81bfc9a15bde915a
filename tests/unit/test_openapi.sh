#!/usr/bin/env bash
# schema/openapi.yaml against the OpenAPI 3.1 schema, with a real validator
# (@seriousme/openapi-schema-validator, pinned in web_client's lockfile, installed by
# scripts/install-deps.sh). The validator is first shown a broken copy (an unquoted comma in a flow
# mapping, which YAML reads as a second key), so a validator that passes everything fails here.
set -u
client=${1:?usage: test_openapi.sh web_client openapi.yaml}
spec=${2:?usage: test_openapi.sh web_client openapi.yaml}
validate="$client/node_modules/.bin/validate-api"
pass=0
fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ ! -x "$validate" ]; then
  echo "FAIL no validator at $validate (run scripts/install-deps.sh)"
  exit 1
fi
if grep -q '^openapi: 3\.1\.' "$spec"; then ok "the spec says openapi: 3.1.x"; else
  bad "openapi version: $(grep '^openapi:' "$spec")"
fi
# the broken copy: the first quoted 201 description unquoted again
sed "0,/'201': {description: '\([^'{]*,[^']*\)'}/s//'201': {description: \1}/" "$spec" >"$tmp/broken.yaml"
if cmp -s "$spec" "$tmp/broken.yaml"; then
  bad "could not make the broken copy (no quoted 201 description with a comma)"
elif "$validate" "$tmp/broken.yaml" >"$tmp/broken.out" 2>&1; then
  bad "the validator passed the broken copy: $(head -c 300 "$tmp/broken.out")"
else
  ok "the validator rejects an unquoted comma in a flow mapping: $(grep -o '"unevaluatedProperty": "[^"]*"' "$tmp/broken.out" | head -1)"
fi
if "$validate" "$spec" >"$tmp/out" 2>&1; then
  ok "schema/openapi.yaml is a valid OpenAPI 3.1 document: $(tr -d '\n\t' <"$tmp/out")"
else
  bad "schema/openapi.yaml: $(head -c 2000 "$tmp/out")"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

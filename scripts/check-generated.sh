#!/usr/bin/env bash
# Fails when gen/ differs from a fresh `buf generate`: the committed generated
# code must always match the protos.
set -euo pipefail
cd "$(dirname "$0")/.."
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
buf generate --output "$fresh"
if ! diff -r gen "$fresh/gen"; then
  echo "gen/ is stale: run 'npm run generate' and commit the result" >&2
  exit 1
fi
echo "gen/ matches the protos"

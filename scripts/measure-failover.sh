#!/usr/bin/env bash
# Failover figures for docs/operations.md (data tier): runs the Galera and read-replica test files
# RUNS times (default 3) against throwaway engines and prints the times they measure.
# Usage: npm run -s build && bash scripts/measure-failover.sh [RUNS]
set -euo pipefail
runs="${1:-3}"
echo "machine: $(nproc) cores, $(uname -sr), node $(node --version), $(mariadbd --version | head -1)"
for i in $(seq 1 "$runs"); do
  echo "--- run $i"
  npx vitest run test/e2e/galera-cluster.test.ts test/e2e/read-replicas.test.ts 2>&1 |
    grep -E "node 1 killed|ingest errors|exact totals [0-9]+ ms|write [0-9]:|replica used again|primary down:|Test Files|Duration" |
    sed -E 's/\x1b\[[0-9;]*m//g'
done

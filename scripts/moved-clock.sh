#!/usr/bin/env bash
# Runs tests with the clock moved forward, to find the next test that assumes a date is still in the future
# (issue 45: the suite broke on 1 December 2026 because two tests did).
#
#   bash scripts/moved-clock.sh <offset> [vitest arguments…]     e.g.  bash scripts/moved-clock.sh +1y --project unit
#   bash scripts/moved-clock.sh <offset>                          the date-sensitive files below (what .ci/run runs)
#
# Everything runs under Debian's faketime (libfaketime, LD_PRELOAD): vitest, the servers and CLIs the tests spawn,
# and a throwaway MariaDB of its own on a free loopback port, so the database's UNIX_TIMESTAMP() agrees with
# Node's Date.now() (the system server on 3306 keeps the real time and is not used). Monotonic clocks stay real
# (FAKETIME_DONT_FAKE_MONOTONIC), so timers and time-outs behave. The MariaDB is stopped by its PID on any exit.
set -euo pipefail
cd "$(dirname "$0")/.."

offset=${1:?usage: scripts/moved-clock.sh <offset, e.g. +1y or +10y> [vitest arguments…]}
shift
# Without vitest arguments: the whole unit tier, and every integration and end-to-end file whose answers depend on
# how its dates stand to today: races (scheduled, live, in review, series that reach now), retention horizons,
# key expiry, signing keys, the release floor, ingest's time bounds, the demo, the seed and the pages' examples.
# (The whole suite passed a year and ten years ahead on 7 December 2026; the full run is 15 minutes per clock.)
if [ $# -eq 0 ]; then
  set -- test/unit/ \
    test/integration/race- test/integration/races- test/integration/wager-retention \
    test/integration/rest-beyond-retention test/integration/webhook-retention test/integration/signing-keys \
    test/integration/release-floor test/integration/api-key-service test/integration/ingest-validation \
    test/e2e/races-cli test/e2e/api-doc-examples test/e2e/demo-race test/e2e/seed-verify test/e2e/cli-edges \
    test/e2e/verify-doc-examples test/e2e/webhook-receiver-examples
fi
command -v faketime >/dev/null || { echo "faketime is missing: apt-get install faketime" >&2; exit 2; }

export FAKETIME_DONT_FAKE_MONOTONIC=1
dir=$(mktemp -d /tmp/topwagers-moved-clock.XXXXXX)
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT

# A port below the ephemeral range that nobody listens on.
port=""
for candidate in $(shuf -i 20000-29999 -n 50); do
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then port=$candidate; break; fi
done
[ -n "$port" ] || { echo "no free port for the moved-clock MariaDB" >&2; exit 1; }

mariadb-install-db --no-defaults --datadir="$dir/data" --user=root --auth-root-authentication-method=normal \
  --skip-test-db >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; exit 1; }
# libfaketime's own variables on mariadbd itself (as `faketime -f` sets them), not the faketime wrapper: the wrapper
# forks, so its PID is not the server's and stopping it would leave mariadbd running.
env LD_PRELOAD='/usr/$LIB/faketime/libfaketime.so.1' FAKETIME="$offset" mariadbd --no-defaults --datadir="$dir/data" --port="$port" --socket="$dir/sock" \
  --bind-address=127.0.0.1 --user=root --skip-log-bin --max-connections=1000 >"$dir/mariadb.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  mariadb-admin --protocol=tcp -h 127.0.0.1 -P "$port" -uroot ping >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/mariadb.log" >&2; exit 1; }
  sleep 0.2
done
db_now=$(mariadb --protocol=tcp -h 127.0.0.1 -P "$port" -uroot -N -e 'SELECT FROM_UNIXTIME(UNIX_TIMESTAMP())')
node_now=$(faketime -f "$offset" node -e 'process.stdout.write(new Date().toISOString())')
echo "clock moved $offset: MariaDB on 127.0.0.1:$port says $db_now UTC, Node says $node_now"

TEST_DATABASE_URL="mysql://root@127.0.0.1:$port/topwagers_test" faketime -f "$offset" npx vitest run "$@"

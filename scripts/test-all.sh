#!/usr/bin/env bash
# npm run test:all: every suite, long ones included (docs/decisions.md, "What runs where: npm test
# and npm run test:all"):
# - on SQLite, the fuzz, property and kill -9 suites at their full sizes (what `npm test` runs
#   small; FUZZ_RUNS, PROPERTY_RUNS and CRASH_ROUNDS set in the environment still choose);
# - the suites that run on an engine again on PostgreSQL (TEST_DATABASE_URL), PgBouncer's too;
# - the cluster: 3 identity and 2 notes processes behind haproxy on one PostgreSQL and Redis.
# A PostgreSQL or Redis that cannot be reached fails the run; it is never skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"

node scripts/ensure-test-tools.ts --postgres

# Each pass runs whatever the one before found, so one run shows every failure; the exit status
# is the run's.
failed=()

echo "== every suite on SQLite, at full sizes"
TEST_ENGINES=sqlite npm run --silent test:suites || failed+=("SQLite")

# Only the suites that take their engines from testEngines() (@agentpass/db/testing): the others
# choose no engine (they run on SQLite, or on no database), and ran in the pass above.
mapfile -t on_engines < <(grep -rl --include="*.test.ts" "testEngines" \
  apps/*/test packages/*/test scripts/test | sort)
echo "== the ${#on_engines[@]} suites that run on an engine, on PostgreSQL ($TEST_DATABASE_URL)"
TEST_ENGINES=postgres node --conditions=agentpass-source --test --test-concurrency=3 "${on_engines[@]}" || failed+=("PostgreSQL")

echo "== the cluster: 3 identity and 2 notes processes behind haproxy, under faults"
npm run --silent test:cluster || failed+=("cluster")

if [ ${#failed[@]} -gt 0 ]; then
  echo "== failed: ${failed[*]}" >&2
  exit 1
fi

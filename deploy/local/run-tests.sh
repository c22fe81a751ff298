#!/usr/bin/env bash
# Used by `make test`: run the pytest suite (tests/, or the test paths given) against a real Kafka and Redis,
# exit with pytest's code (no tests collected counts as a failure). Extra args go to pytest.
#
# - If the local stack (PLYLOG_HOME, default .plylog/) is running, e.g. from `make run`,
#   the tests use it, missing parts are started, and only those are stopped afterwards.
# - Otherwise a throwaway stack is started in .plylog/test/ (same ports) and removed
#   afterwards with its data: a freshly formatted broker is ready in ~2 s, a restarted one
#   needs ~9 s, and your own .plylog/ data stays untouched.
# - The fault tests in tests/cluster start a cluster of their own (`plylog up --cluster
#   --infra-only`: 3 Kafka nodes, a Redis Cluster of 3 primaries + 3 replicas) in a temporary
#   PLYLOG_HOME on free ports, and remove it at the end of the session (~8 min on 2 busy cores).
#   Skip them with PYTEST_ARGS='-m "not cluster"'.
set -uo pipefail
cd "$(dirname "$0")/../.."

PLYLOG=$PWD/.venv/bin/plylog
started=$(mktemp "${TMPDIR:-/tmp}/plylog-started.XXXXXX")
throwaway=0

if "$PLYLOG" status --check >/dev/null 2>&1; then
  echo "make test: using the running local stack in ${PLYLOG_HOME:-.plylog}/"
else
  export PLYLOG_HOME="${PLYLOG_HOME:-$PWD/.plylog}/test"
  throwaway=1
fi

cleanup() {
  if [ "$throwaway" = 1 ]; then
    echo "make test: removing the test stack in ${PLYLOG_HOME}"
    "$PLYLOG" down --purge || echo "make test: plylog down failed" >&2
  elif [ -s "$started" ]; then
    echo "make test: stopping what it started: $(tr '\n' ' ' < "$started")"
    "$PLYLOG" down --only-listed "$started" || echo "make test: plylog down failed" >&2
  fi
  rm -f "$started"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! "$PLYLOG" up --infra-only --write-started "$started"; then
  echo "make test: could not start Kafka and Redis (see the error above; if part of a" \
       "stack from make run is still up, make down first)" >&2
  exit 1
fi

# Paths among the arguments (e.g. tests/e2e) narrow the run to them; without any, the whole suite.
targets=(tests/)
for arg in "$@"; do
  case "$arg" in tests/*|./tests/*) targets=(); break ;; esac
done
.venv/bin/python -m pytest "${targets[@]}" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "make test: pytest collected no tests; counting that as a failure" >&2
  rc=1
fi
exit "$rc"

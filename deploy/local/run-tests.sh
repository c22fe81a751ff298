#!/usr/bin/env bash
# Used by `make test`: start the Kafka + Redis that are not already running, run the whole
# pytest suite (tests/), stop exactly what this script started, exit with pytest's code.
# Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/../.."

PLYLOG=.venv/bin/plylog
started=$(mktemp "${TMPDIR:-/tmp}/plylog-started.XXXXXX")

cleanup() {
  if [ -s "$started" ]; then
    echo "make test: stopping what it started: $(tr '\n' ' ' < "$started")"
    "$PLYLOG" down --only-listed "$started" || echo "make test: plylog down failed" >&2
  fi
  rm -f "$started"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! "$PLYLOG" up --infra-only --write-started "$started"; then
  echo "make test: could not start Kafka and Redis (see the error above)" >&2
  exit 1
fi

.venv/bin/python -m pytest tests/ "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "make test: pytest collected no tests; counting that as a failure" >&2
  rc=1
fi
exit "$rc"

#!/usr/bin/env bash
# Integration tests: the real cellgate binary over TCP / unix sockets.
#
#   CELLGATE_BIN=/abs/path/cellgate SANITIZE=0|1|thread bash tests/integration/run.sh [pytest args]
#
# Called by `make test-integration` from the repo root. Under SANITIZE=1 the
# binary is the ASan+UBSan build: sanitizer reports go to the daemon's stderr,
# which the harness scans (a report, or a non-zero exit after SIGTERM, fails
# the test that owned the daemon), and the slow tests are skipped.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$repo"

SANITIZE="${SANITIZE:-0}"
if [ -z "${CELLGATE_BIN:-}" ]; then
    case "$SANITIZE" in
    1) CELLGATE_BIN="$repo/build-san/cellgate" ;;
    thread) CELLGATE_BIN="$repo/build-tsan/cellgate" ;;
    *) CELLGATE_BIN="$repo/cellgate" ;;
    esac
fi
case "$CELLGATE_BIN" in /*) ;; *) CELLGATE_BIN="$repo/$CELLGATE_BIN" ;; esac
if [ ! -x "$CELLGATE_BIN" ]; then
    echo "run.sh: $CELLGATE_BIN is not an executable (build it first: make)" >&2
    exit 2
fi
export CELLGATE_BIN SANITIZE
# bench/fill.c makes a million keys for the tests that need that many.
build="$repo/build"; [ "$SANITIZE" = "1" ] && build="$repo/build-san"
[ "$SANITIZE" = "thread" ] && build="$repo/build-tsan"
CELLGATE_FILL="${CELLGATE_FILL:-$build/bench-fill}"
if [ ! -x "$CELLGATE_FILL" ]; then
    echo "run.sh: $CELLGATE_FILL is not an executable (build it first: make ${CELLGATE_FILL#$repo/})" >&2
    exit 2
fi
export CELLGATE_FILL

PY=/usr/bin/python3   # Debian's python3 has python3-pytest and python3-redis
if ! "$PY" -c 'import pytest, redis' 2>/dev/null; then
    echo "run.sh: $PY lacks pytest or redis (apt-get install python3-pytest python3-redis)" >&2
    exit 2
fi

if [[ " $* " == *" -n "* ]] && ! "$PY" -c 'import xdist' 2>/dev/null; then
    echo "run.sh: -n needs pytest-xdist (apt-get install python3-pytest-xdist)" >&2
    exit 2
fi

marks=()
if [ "$SANITIZE" = "1" ]; then
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=99:halt_on_error=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
    export LSAN_OPTIONS="${LSAN_OPTIONS:-exitcode=99}"
    marks=(-m "not slow")    # the million-key test is slow under ASan
elif [ "$SANITIZE" = "thread" ]; then
    # ThreadSanitizer: every report printed, the exit code 66 at the end
    # (the harness fails the test that owned the daemon); the suppressions
    # are for third-party libraries only (tests/stress/tsan.supp).
    export TSAN_OPTIONS="${TSAN_OPTIONS:-suppressions=$repo/tests/stress/tsan.supp:halt_on_error=0:exitcode=66:second_deadlock_stack=1}"
    marks=(-m "not slow")
fi

# No bytecode or cache directories in the checkout.
export PYTHONDONTWRITEBYTECODE=1

# Extra arguments go to pytest; naming test files or ids replaces the default
# of the whole directory.
targets=(tests/integration)
for a in "$@"; do
    if [ -e "${a%%::*}" ]; then targets=(); break; fi
done

echo "integration tests: $CELLGATE_BIN (SANITIZE=$SANITIZE)"
start=$(date +%s)
rc=0
# A bound for a hang, not a timing: the ASan pass takes about 7 minutes on
# a quiet 2-core machine, and CI's machines are slower.
timeout -k 10 900 "$PY" -m pytest -q -p no:cacheprovider -rxXfE "${marks[@]}" \
    "${targets[@]}" "$@" || rc=$?
end=$(date +%s)
echo "integration tests: $((end - start)) s, exit $rc"
exit "$rc"

#!/usr/bin/env bash
# tests/unit/run.sh CHECK_UNIT [JOBS]: every unit suite (CHECK_UNIT --list)
# in a process of its own, JOBS (2) at a time; each suite's summary line,
# its whole output when it fails, and the total. One process per suite
# keeps each runner small: in one process Check's runner grows suite after
# suite, and under ASan every test's fork and leak check pays for all of
# it (12 minutes on 2 cores, against 4 and a half this way).
#
# Inside a suite the tests run one after another in its process (CK_FORK=no,
# unless the caller sets CK_FORK): a fork per test, with ASan's leak check at
# each child's exit, took half the time of the sanitizer run. So each suite's
# teardown must leave its modules as its setup found them, and LeakSanitizer
# reports a leak at the suite's exit. Check's per-test timeouts work only
# when it forks, so each suite gets `timeout` instead.
set -uo pipefail
export CK_FORK="${CK_FORK:-no}"
SUITE_TIMEOUT=${SUITE_TIMEOUT:-900}

bin=$1
jobs=${2:-2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

"$bin" --list > "$dir/list" || exit 1
xargs -P "$jobs" -I{} sh -c 'timeout "$3" "$0" "$1" > "$2/$1.log" 2>&1; echo $? > "$2/$1.rc"' \
    "$bin" {} "$dir" "$SUITE_TIMEOUT" < "$dir/list"

rc=0
suites=0
checks=0
while read -r s; do
    suites=$((suites + 1))
    line=$(grep -o 'Checks: [0-9]*, Failures: [0-9]*, Errors: [0-9]*' "$dir/$s.log")
    printf '%-16s %s\n' "$s" "${line:-(no summary)}"
    n=$(sed -n 's/.*Checks: \([0-9]*\).*/\1/p' "$dir/$s.log" | head -n 1)
    checks=$((checks + ${n:-0}))
    if [ "$(cat "$dir/$s.rc" 2>/dev/null)" != 0 ]; then
        cat "$dir/$s.log"
        echo "unit suite $s failed"
        rc=1
    fi
done < "$dir/list"
echo "unit: $checks checks in $suites suites, exit $rc"
exit "$rc"

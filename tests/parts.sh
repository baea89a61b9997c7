#!/usr/bin/env bash
# tests/parts.sh NAME COMMAND [NAME COMMAND ...]: make test's parts, in
# order, each timed. The first part that fails stops the run. Either way
# the time of every part that ran, and the total, are printed at the end,
# so a run that got slower says which part did.
set -uo pipefail

names=()
times=()
rc=0
begin=$(date +%s)

while (($# >= 2)); do
    name=$1
    cmd=$2
    shift 2
    echo "==== $name: $cmd"
    start=$(date +%s)
    bash -c "$cmd"
    rc=$?
    names+=("$name")
    times+=($(($(date +%s) - start)))
    if ((rc != 0)); then
        echo "==== $name failed (exit $rc)"
        break
    fi
done

echo
echo "make test, each part's time:"
for i in "${!names[@]}"; do
    printf '  %-28s %4d s\n' "${names[$i]}" "${times[$i]}"
done
total=$(($(date +%s) - begin))
printf '  %-28s %4d s (%d min %02d s)\n' "total" "$total" $((total / 60)) $((total % 60))
exit "$rc"

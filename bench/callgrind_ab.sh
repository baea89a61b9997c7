#!/usr/bin/env bash
# bench/callgrind_ab.sh: instructions per pipelined CL.THROTTLE of several
# builds and modes, compared fairly: bench/callgrind.sh's CL.THROTTLE line
# with the wall clock frozen (CG_FAKECLOCK=1), the variants alternated
# within each of CG_REPS (3) rounds, then each variant's median and runs.
#
#   bash bench/callgrind_ab.sh base=/tmp/base/cellgate new=./cellgate \
#        new+cluster=./cellgate:cluster
#
# A variant is label=binary, with ":cluster" for cluster-enabled yes (every
# slot owned). Other knobs as callgrind.sh's (CG_N_SMALL, CG_N_LARGE,
# CG_ONLY: another line than CL.THROTTLE). Output: one line per variant,
# "label  median  runs...", and its ratio to the first variant.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${CG_REPS:-3}
ONLY=${CG_ONLY:-CL.THROTTLE}
[ "$#" -gt 0 ] || { echo "usage: $0 label=bin[:cluster]..." >&2; exit 2; }
declare -A RUNS
for ((rep = 1; rep <= REPS; rep++)); do
    for v in "$@"; do
        label=${v%%=*} bin=${v#*=} cluster=""
        case $bin in *:cluster) bin=${bin%:cluster} cluster=1 ;; esac
        ir=$(CELLGATE_BIN=$bin CG_ONLY=$ONLY CG_FAKECLOCK=1 CG_CLUSTER_ENABLED=$cluster \
             bash bench/callgrind.sh | awk -v l="$ONLY" 'index($0, l) == 1 { print $NF }')
        # callgrind.sh writes its profile there; this script keeps none.
        git checkout -q bench/results/callgrind-cl-throttle.txt 2>/dev/null || true
        RUNS[$label]="${RUNS[$label]:-} $ir"
        echo "round $rep: $label $ir" >&2
    done
done
printf '%s, Ir/request, wall clock frozen, median of %d alternated rounds\n' "$ONLY" "$REPS"
first=""
for v in "$@"; do
    label=${v%%=*}
    # shellcheck disable=SC2086  # the runs are words
    med=$(printf '%s\n' ${RUNS[$label]} | sort -n | awk '{ a[NR] = $1 }
        END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
    first=${first:-$med}
    printf '  %-24s %8s   runs:%s   %+.1f %%\n' "$label" "$med" "${RUNS[$label]}" \
        "$(awk -v a="$med" -v b="$first" 'BEGIN { print (a / b - 1) * 100 }')"
done

#!/usr/bin/env bash
# bench/multicore.sh: would more event loops (one per core, keys sharded by
# hash) make cellgate faster on this machine?
#
# A loop-per-core cellgate behaves, for throughput, like N independent
# single-loop cellgates each serving its share of the keys. This runs that
# stand-in: for N = 1 .. BENCH_MAX_LOOPS it starts N cellgates and N
# redis-benchmark clients at once (CL.THROTTLE, random keys, -P 16), sums
# their throughput, and prints the machine's CPU count next to it. When the
# sum stops growing with N, the cores are already busy (with the clients as
# much as with the server) and more loops cannot help here.
#
# Knobs: BENCH_REPS (3), BENCH_N_PIPELINE (1000000 requests in total per
# step, split over the N clients), BENCH_MAX_LOOPS (nproc, at least 2),
# CELLGATE_BIN (./cellgate).
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${BENCH_REPS:-3}
TOTAL=${BENCH_N_PIPELINE:-1000000}
MAX=${BENCH_MAX_LOOPS:-$(nproc)}
[ "$MAX" -ge 2 ] || MAX=2
BIN=${CELLGATE_BIN:-./cellgate}
PY=/usr/bin/python3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cellgate-multicore.XXXXXX")
. bench/lib.sh
trap bench_cleanup EXIT

start_servers() { # n: start n cellgates; their ports go to PORTS
    PORTS=()
    for _ in $(seq "$1"); do
        local port
        port=$(free_port)
        "$BIN" --port "$port" --bind 127.0.0.1 --save "" >>"$WORK/log" 2>&1 &
        PIDS+=($!)
        wait_pong "$port"
        PORTS+=("$port")
    done
}

# total_rps n: n clients at once, one per server; prints the summed rps.
total_rps() {
    local n=$1 i per=$((TOTAL / $1)) clients=()
    for i in $(seq 0 $((n - 1))); do
        timeout 120 redis-benchmark -p "${PORTS[$i]}" -c 50 -P 16 -n "$per" \
            -r 100000 --csv CL.THROTTLE 'key:__rand_int__' 15 30 60 \
            >"$WORK/out.$i" 2>/dev/null &
        clients+=($!)
    done
    wait "${clients[@]}" || true
    for i in $(seq 0 $((n - 1))); do
        tail -n 1 "$WORK/out.$i" | cut -d, -f2 | tr -d '"'
    done | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

echo "multicore: $(nproc) CPUs; N cellgates + N redis-benchmark clients at once," \
     "CL.THROTTLE -c 50 -P 16 -r 100000, $TOTAL requests per step, median of $REPS"
printf '  %-8s %14s %10s\n' "loops" "total rps" "vs N=1"
base=""
for n in $(seq "$MAX"); do
    start_servers "$n"
    runs=()
    for _ in $(seq "$REPS"); do
        runs+=("$(total_rps "$n")")
    done
    stop_pids
    med=$(printf '%s\n' "${runs[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    [ -n "$base" ] || base=$med
    printf '  %-8s %14s %10s\n' "$n" "$med" \
        "$(awk -v a="$med" -v b="$base" 'BEGIN { printf "%.2fx", a / b }')"
done

#!/usr/bin/env bash
# bench/perf.sh: where the server's CPU time goes, kernel included.
#
# callgrind (bench/callgrind.sh) counts the instructions cellgate executes in
# user space; it cannot see the time spent in the kernel on the server's
# behalf (socket reads and writes, loopback TCP, epoll). This samples the
# server process with `perf record -e cpu-clock` while redis-benchmark drives
# it, for cellgate and for a stock redis-server in the same invocation, and
# reports for each run:
#
#   cpu us/req   the server's user+system CPU time (/proc/PID/stat) / requests
#   kernel %     share of the samples in the kernel, and the same as us/req
#   user %       share in user space: the server binary, its libraries, vDSO
#
# plus the hottest symbols of the cellgate CL.THROTTLE run. Written to
# bench/results/perf-profile.txt (and printed).
#
# Knobs: PERF_N (1000000 requests per pipelined run, a tenth of that
# unpipelined), PERF_FREQ (sampling Hz, 1999), CELLGATE_BIN (./cellgate).
set -euo pipefail
cd "$(dirname "$0")/.."

N_PIPE=${PERF_N:-1000000}
N_ONE=$((N_PIPE / 10))
FREQ=${PERF_FREQ:-1999}
BIN=${CELLGATE_BIN:-./cellgate}
PY=/usr/bin/python3
OUT=bench/results/perf-profile.txt

for t in perf redis-server redis-benchmark redis-cli; do
    command -v "$t" >/dev/null || { echo "perf.sh: $t not found (make bench-perf installs linux-perf)" >&2; exit 1; }
done
[ -x "$BIN" ] || { echo "perf.sh: $BIN not built" >&2; exit 1; }
mkdir -p bench/results
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cellgate-perf.XXXXXX")
. bench/lib.sh
trap bench_cleanup EXIT

# utime + stime of a process, in clock ticks (fields 14 and 15 of stat; the
# command name in field 2 has no spaces here).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

CG_PORT=$(free_port)
"$BIN" --port "$CG_PORT" --bind 127.0.0.1 --save "" >"$WORK/cellgate.log" 2>&1 &
CG_PID=$!
PIDS+=("$CG_PID")
RD_PORT=$(free_port)
redis-server --port "$RD_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    >"$WORK/redis.log" 2>&1 &
RD_PID=$!
PIDS+=("$RD_PID")
wait_pong "$CG_PORT"
wait_pong "$RD_PORT"
HZ=$(getconf CLK_TCK)

# sample label pid port pipeline n command...: one profiled run.
sample() {
    local label=$1 pid=$2 port=$3 pipe=$4 n=$5 data t0 t1 perf_pid
    shift 5
    data=$WORK/$(echo "$label" | tr -c 'A-Za-z0-9\n' _).data
    perf record -q -e cpu-clock -F "$FREQ" -p "$pid" -o "$data" >/dev/null 2>&1 &
    perf_pid=$!
    sleep 0.3  # perf attaches before the load starts
    t0=$(cpu_ticks "$pid")
    timeout 120 redis-benchmark -p "$port" -c 50 -P "$pipe" -n "$n" -r 100000 -q "$@" \
        >"$WORK/bench.out" 2>&1 || { cat "$WORK/bench.out" >&2; kill -INT "$perf_pid"; return 1; }
    t1=$(cpu_ticks "$pid")
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
    perf report -i "$data" --no-children --sort dso --stdio -g none -q \
        >"$WORK/dso.txt" 2>/dev/null
    awk -v label="$label" -v ticks=$((t1 - t0)) -v hz="$HZ" -v n="$n" '
        { share = $1; sub(/%/, "", share); dso = $2
          if (dso ~ /^\[kernel/) kernel += share; else user += share }
        END { us = ticks / hz * 1e6 / n; total = kernel + user
              if (total == 0) total = 1
              printf "%-28s %9d %8.2f %8.1f %8.2f %8.1f %8.2f\n", label, n, us,
                     100 * kernel / total, us * kernel / total,
                     100 * user / total, us * user / total }' "$WORK/dso.txt"
    if [ "$label" = "cellgate CL.THROTTLE -P16" ]; then
        cp "$WORK/dso.txt" "$WORK/top-dso.txt"
        perf report -i "$data" --no-children --sort dso,sym --stdio -g none -q \
            >"$WORK/sym.txt" 2>/dev/null
        head -n 25 "$WORK/sym.txt" >"$WORK/top-sym.txt"
    fi
}

{
    echo "perf record -e cpu-clock on the server process while redis-benchmark -c 50 -r 100000 drives it"
    echo "  cellgate  $("$BIN" --version 2>&1 | head -n 1)"
    echo "  redis     $(redis-server --version)"
    echo "  loadavg   $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "  cpu us/req: server user+system CPU time / requests; kernel and user split it by perf samples"
    echo
    printf '%-28s %9s %8s %8s %8s %8s %8s\n' run requests "cpu us" "kernel%" "kern us" "user%" "user us"
    sample "cellgate PING_MBULK -P16" "$CG_PID" "$CG_PORT" 16 "$N_PIPE" -t ping_mbulk
    sample "Redis PING_MBULK -P16" "$RD_PID" "$RD_PORT" 16 "$N_PIPE" -t ping_mbulk
    sample "cellgate CL.THROTTLE -P16" "$CG_PID" "$CG_PORT" 16 "$N_PIPE" \
        CL.THROTTLE 'key:__rand_int__' 15 30 60
    sample "Redis INCR -P16" "$RD_PID" "$RD_PORT" 16 "$N_PIPE" INCR 'key:__rand_int__'
    sample "cellgate CL.THROTTLE -P1" "$CG_PID" "$CG_PORT" 1 "$N_ONE" \
        CL.THROTTLE 'key:__rand_int__' 15 30 60
    sample "Redis PING_MBULK -P1" "$RD_PID" "$RD_PORT" 1 "$N_ONE" -t ping_mbulk
    echo
    echo "cellgate CL.THROTTLE -P16, samples by object:"
    grep -v '^[[:space:]]*$' "$WORK/top-dso.txt" | sed 's/^/  /'
    echo
    echo "cellgate CL.THROTTLE -P16, hottest symbols (self):"
    sed 's/^/  /' "$WORK/top-sym.txt"
} | tee "$OUT"

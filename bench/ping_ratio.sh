#!/usr/bin/env bash
# bench/ping_ratio.sh: is a CL.THROTTLE cheaper for the server than Redis's
# PING? (issue 35, item 4)
#
# The bar: cellgate's server CPU per CL.THROTTLE, no more than Redis's
# server CPU per PING (PING_MBULK), pipelined (-P 16) and not (-P 1),
# redis-benchmark -c 50, CL.THROTTLE keys random over -r 100000, one
# event-loop thread each (io-threads 1).
#
# In one invocation this starts ./cellgate (io-threads 1, no persistence)
# and redis-server (7.0.15 from Debian, io-threads 1, no persistence) on
# free 127.0.0.1 ports, warms both, then runs PR_REPS repetitions; each
# runs, at -P 1 and then at -P PR_PIPELINE, `CL.THROTTLE key:__rand_int__
# PR_LIMIT` on cellgate and PING_MBULK on Redis, back to back, cellgate
# first on odd repetitions and Redis first on even ones. Around every run it
# reads the server's CPU time from /proc/PID/task/*/schedstat (ns, user and
# kernel) and divides it by the requests. The report gives both servers'
# medians and min-max, the paired ratio of each repetition (the two runs of
# one repetition and one -P), the median of those and the ratio of the
# medians.
#
# Then, unless turned off:
#  - syscalls per request (PR_SYSCALLS=1): one more run per server and -P
#    counted with perf stat on the syscall tracepoints (read, write, writev,
#    epoll_wait, epoll_pwait, epoll_ctl, all);
#  - instructions per request (PR_CALLGRIND=1): each line runs the server
#    under valgrind's callgrind twice, with a small and a large number of
#    requests, and divides the difference in instructions by the difference
#    in requests, as bench/callgrind.sh does, so start-up and shutdown
#    cancel out; the same difference per function gives the top functions
#    by self and by inclusive instructions per request. Lines: cellgate
#    CL.THROTTLE and Redis PING_MBULK at -P 16 and -P 1 with -c 50, cellgate
#    PING_MBULK at -P 16 (its protocol layer alone), and both at -P 1 with
#    -c 1 (every request its own loop pass: under callgrind the server is
#    slower than the client, so at -c 50 a loop pass serves several clients
#    and the per-pass costs look smaller than they are natively).
#
# Report: PR_OUT (bench/results/ping-ratio.txt), the runs in PR_CSV
# (bench/results/ping-ratio.csv). Exit 0, 1 when a run failed, 3 when the
# bar was missed and PR_STRICT=1.
#
# Knobs (environment):
#   PR_REPS        repetitions                                  (9)
#   PR_N1          requests per -P 1 run                        (100000)
#   PR_NP          requests per pipelined run                   (1000000)
#   PR_PIPELINE    the pipelined -P                             (16)
#   PR_CLIENTS     -c                                           (50)
#   PR_KEYSPACE    -r of CL.THROTTLE's keys                     (100000)
#   PR_LIMIT       CL.THROTTLE's max_burst count period   ("100000 1 86400":
#                  one token a day and a burst of 100,000, so every request
#                  is allowed and writes its key and no key expires during
#                  the bench: the same work in every run. With bench/run.sh's
#                  "15 30 60" the mix drifts from run to run, as TATs pile up
#                  into "limited" replies that write nothing, and under
#                  callgrind keys expire or not with the machine's speed)
#   BENCH_FILL     the key filler (build/bench-fill): all PR_KEYSPACE keys
#                  are created before the timed runs and before each
#                  callgrind run's load, which then measures live keys only
#   PR_TIMEOUT     seconds before one run is killed             (120)
#   PR_SYSCALLS=0  skip the syscall counts
#   PR_CALLGRIND=0 skip the instruction counts
#   CG_N_SMALL, CG_N_LARGE      requests of the two pipelined callgrind runs
#                               (20000, 120000)
#   CG_N1_SMALL, CG_N1_LARGE    the same at -P 1 -c 50 (5000, 30000)
#   CG_C1_SMALL, CG_C1_LARGE    the same at -P 1 -c 1  (2000, 12000)
#   CG_TOP         functions listed per line and cost kind     (25)
#   PR_CG_ONLY     run only the callgrind lines whose label holds this text
#   PR_CG_KEEP     a folder to keep each line's two callgrind outputs in
#   PR_ONLY_CALLGRIND=1  no timed runs, no syscall counts: instructions only
#   CELLGATE_BIN   (./cellgate)   REDIS_BIN (redis-server)
#   CELLGATE_BIN_B a second cellgate build (say, the one before a change):
#                  it runs beside the first in every repetition (the three
#                  servers' order rotating), gets its own rows, syscall and
#                  callgrind lines, and the report adds B over A, paired
#   PR_OUT, PR_CSV the report and the runs
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${PR_REPS:-9}
N1=${PR_N1:-100000}
NP=${PR_NP:-1000000}
PIPE=${PR_PIPELINE:-16}
CLIENTS=${PR_CLIENTS:-50}
KEYSPACE=${PR_KEYSPACE:-100000}
read -r -a LIMIT <<<"${PR_LIMIT:-100000 1 86400}"
FILL=${BENCH_FILL:-build/bench-fill}
RUN_TIMEOUT=${PR_TIMEOUT:-120}
CELLGATE_BIN=${CELLGATE_BIN:-./cellgate}
REDIS_BIN=${REDIS_BIN:-redis-server}
OUT=${PR_OUT:-bench/results/ping-ratio.txt}
CSV=${PR_CSV:-bench/results/ping-ratio.csv}
CG_N_SMALL=${CG_N_SMALL:-20000}
CG_N_LARGE=${CG_N_LARGE:-120000}
CG_N1_SMALL=${CG_N1_SMALL:-5000}
CG_N1_LARGE=${CG_N1_LARGE:-30000}
CG_C1_SMALL=${CG_C1_SMALL:-2000}
CG_C1_LARGE=${CG_C1_LARGE:-12000}
CG_TOP=${CG_TOP:-25}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

for v in REPS N1 NP PIPE CLIENTS KEYSPACE RUN_TIMEOUT CG_N_SMALL CG_N_LARGE \
         CG_N1_SMALL CG_N1_LARGE CG_C1_SMALL CG_C1_LARGE CG_TOP; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "ping_ratio: $v must be a positive integer" >&2; exit 2; }
done
[ "${#LIMIT[@]}" = 3 ] || { echo "ping_ratio: PR_LIMIT must be three numbers" >&2; exit 2; }
die() { echo "ping_ratio: $*" >&2; exit 1; }
[ -x "$CELLGATE_BIN" ] || die "$CELLGATE_BIN not found: run make first (make bench-ping builds it)"
[ -x "$FILL" ] || die "$FILL not found: make bench-ping builds it"
for t in "$REDIS_BIN" redis-benchmark redis-cli timeout; do
    command -v "$t" >/dev/null || die "$t not found (make deps)"
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cellgate-ping-ratio.XXXXXX")
PIDS=()
. bench/lib.sh
trap bench_cleanup EXIT

# The server's CPU time so far, ns: its threads' schedstat (time on a CPU,
# user and kernel).
cpu_ns() {
    cat "/proc/$1/task/"*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

# wait_ours port pid: the server on port answers and is our process.
wait_ours() {
    local info
    for _ in $(seq 200); do
        kill -0 "$2" 2>/dev/null || return 1
        if [ "$(redis-cli -h 127.0.0.1 -p "$1" PING 2>/dev/null)" = PONG ]; then
            info=$(redis-cli -h 127.0.0.1 -p "$1" INFO server 2>/dev/null | tr -d '\r')
            case $'\n'$info$'\n' in *$'\n'"process_id:$2"$'\n'*) return 0 ;; esac
            return 1
        fi
        sleep 0.05
    done
    return 1
}

# The servers: name, binary, log; the ports and pids once started.
declare -A BIN=([cellgate]=$CELLGATE_BIN [redis]=$REDIS_BIN) PORT=() PID=()
SERVERS=(cellgate redis)
if [ -n "${CELLGATE_BIN_B:-}" ]; then
    [ -x "$CELLGATE_BIN_B" ] || die "$CELLGATE_BIN_B not found"
    BIN[cellgate-b]=$CELLGATE_BIN_B
    SERVERS=(cellgate cellgate-b redis)
fi
is_cellgate() { [ "$1" != redis ]; }

# server_cmd server port: the server's command line, in CMD.
server_cmd() {
    CMD=("${BIN[$1]}" --port "$2" --bind 127.0.0.1 --save "" --appendonly no \
         --io-threads 1 --dir "$WORK")
}

start_server() { # server: sets PORT[server] and PID[server]
    local port pid
    for _ in 1 2 3 4 5; do
        port=$(free_port)
        server_cmd "$1" "$port"
        "${CMD[@]}" >>"$WORK/$1.log" 2>&1 &
        pid=$!
        if wait_ours "$port" "$pid"; then
            PIDS+=("$pid")
            PORT[$1]=$port
            PID[$1]=$pid
            return 0
        fi
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    die "$1 did not start"
}

# load_args server port pipeline clients n: redis-benchmark's arguments for
# one run, in LOAD.
load_args() {
    LOAD=(-h 127.0.0.1 -p "$2" -c "$4" -P "$3" -n "$5" --csv)
    if is_cellgate "$1"; then
        LOAD+=(-r "$KEYSPACE" CL.THROTTLE 'key:__rand_int__' "${LIMIT[@]}")
    else
        LOAD+=(-t ping_mbulk)
    fi
}

FAILED=0
# run rep pipeline server n: one timed run, appended to the CSV.
run() {
    local rep=$1 pipe=$2 server=$3 n=$4 port=${PORT[$3]} pid=${PID[$3]} c0 c1 rc=0
    local TIMEFORMAT='%3U %3S %3R' cli wall rps
    c0=$(cpu_ns "$pid")
    load_args "$server" "$port" "$pipe" "$CLIENTS" "$n"
    { time timeout "$RUN_TIMEOUT" redis-benchmark "${LOAD[@]}" \
        >"$WORK/run.out" 2>"$WORK/run.err"; } 2>"$WORK/run.time" || rc=$?
    c1=$(cpu_ns "$pid")
    read -r cli wall < <(awk 'END { printf "%.3f %.3f\n", $1 + $2, $3 }' "$WORK/run.time")
    rps=$(tail -n 1 "$WORK/run.out" | cut -d, -f2 | tr -d '"')
    if [ "$rc" != 0 ] || [ -z "$rps" ] || grep -qi error "$WORK/run.err" "$WORK/run.out"; then
        echo "ping_ratio: rep $rep -P $pipe $server failed (exit $rc):" >&2
        head -n 5 "$WORK/run.err" "$WORK/run.out" >&2
        tail -n 5 "$WORK/$server.log" >&2 || true
        FAILED=1
        return 1
    fi
    printf '%s,%s,%s,%s,%s,%s,%s,%s,%s\n' "$rep" "$pipe" "$CLIENTS" "$n" "$server" \
        "$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')" \
        "$cli" "$wall" "$rps" >>"$WORK/runs.csv"
    printf '  rep %d -P %-3s %-10s %7.3f us/req %11s rps\n' "$rep" "$pipe" "$server" \
        "$(awk -v a="$c0" -v b="$c1" -v n="$n" 'BEGIN { print (b - a) / 1e3 / n }')" "$rps"
}

# every rep pipeline n: each server once, the order rotating from one
# repetition to the next (with two servers: cellgate first on odd ones).
every() {
    local k=${#SERVERS[@]} i
    for i in $(seq 0 $((k - 1))); do
        run "$1" "$2" "${SERVERS[$(((i + $1 - 1) % k))]}" "$3" || return 1
    done
}

for server in "${SERVERS[@]}"; do
    start_server "$server"
    is_cellgate "$server" || continue
    sanity=$(redis-cli -h 127.0.0.1 -p "${PORT[$server]}" CL.THROTTLE bench:sanity 15 30 60 | tr '\n' ' ')
    [ "$sanity" = "0 16 15 -1 2 " ] || die "$server's CL.THROTTLE answers [$sanity], not [0 16 15 -1 2]"
done

{
    echo "date:      $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host:      $(uname -n) $(uname -r), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')"
    echo "cellgate:  $("$CELLGATE_BIN" --version 2>&1 | head -n 1) (tree $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- lib protocol algorithms conf server 2>/dev/null || echo ', sources changed since'))"
    echo "redis:     $("$REDIS_BIN" --version | sed 's/ sha=.*//'), $(redis-benchmark --version)"
    for server in "${SERVERS[@]}"; do
        server_cmd "$server" PORT
        printf '%-10s %s\n' "$server:" "${CMD[*]/#$WORK/TMP}" | sed 's/--save  /--save "" /'
    done
    echo "load:      cellgate: redis-benchmark -c $CLIENTS -P {1,$PIPE} -r $KEYSPACE CL.THROTTLE key:__rand_int__ ${LIMIT[*]}"
    echo "           over $KEYSPACE keys that bench-fill creates first (callgrind runs too)"
    echo "           Redis:    redis-benchmark -c $CLIENTS -P {1,$PIPE} -t ping_mbulk"
    echo "runs:      $REPS repetitions x (-P 1: $N1 requests, -P $PIPE: $NP requests) per server, the order rotating from one repetition to the next"
    echo "loadavg:   $(cut -d' ' -f1-3 /proc/loadavg) at the start"
} >"$WORK/head.txt"
cat "$WORK/head.txt"

ONLY_CG=${PR_ONLY_CALLGRIND:-0}
[ "$ONLY_CG" = 1 ] && REPS=0 PR_SYSCALLS=0
# Warm-up, not recorded: the loopback path, both servers' code, and
# cellgate's key table at its working size.
for server in "${SERVERS[@]}"; do
    [ "$ONLY_CG" = 1 ] && break
    timeout "$RUN_TIMEOUT" redis-benchmark -h 127.0.0.1 -p "${PORT[$server]}" -c "$CLIENTS" \
        -P "$PIPE" -n 200000 -q -t ping_mbulk >/dev/null 2>&1 || true
    is_cellgate "$server" || continue
    "$FILL" "${PORT[$server]}" key: 0 "$KEYSPACE" CL.THROTTLE __key__ "${LIMIT[@]}" >/dev/null ||
        die "filling $server's $KEYSPACE keys failed"
    timeout "$RUN_TIMEOUT" redis-benchmark -h 127.0.0.1 -p "${PORT[$server]}" -c "$CLIENTS" \
        -P "$PIPE" -n "$NP" -r "$KEYSPACE" -q CL.THROTTLE 'key:__rand_int__' "${LIMIT[@]}" \
        >/dev/null 2>&1 || true
done

echo '"rep","pipeline","clients","requests","server","server_cpu_s","client_cpu_s","wall_s","rps"' \
    >"$WORK/runs.csv"
start=$SECONDS
for rep in $(seq "$REPS"); do
    every "$rep" 1 "$N1" || break
    every "$rep" "$PIPE" "$NP" || break
done
echo "ping_ratio: timed runs took $((SECONDS - start)) s; loadavg $(cut -d' ' -f1-3 /proc/loadavg)"
echo "loadavg:   $(cut -d' ' -f1-3 /proc/loadavg) after the timed runs" >>"$WORK/head.txt"

# ---- syscalls per request ------------------------------------------------
SYS_FILES=()
if [ "${PR_SYSCALLS:-1}" != 0 ] && [ "$FAILED" = 0 ] && command -v perf >/dev/null &&
   perf stat -e syscalls:sys_enter_read true >/dev/null 2>&1; then
    events=raw_syscalls:sys_enter
    for e in read write writev epoll_wait epoll_pwait epoll_ctl; do
        events+=",syscalls:sys_enter_$e"
    done
    for pipe in 1 "$PIPE"; do
        for server in "${SERVERS[@]}"; do
            n=$N1
            [ "$pipe" = 1 ] || n=$NP
            f=$WORK/sys.$server.$pipe
            printf '# requests %s\n# %s -P %s\n' "$n" \
                "$(is_cellgate "$server" && echo "$server CL.THROTTLE" || echo 'Redis PING_MBULK')" \
                "$pipe" >"$f"
            perf stat -x, -e "$events" -p "${PID[$server]}" -o "$WORK/perf.out" &
            perf_pid=$!
            sleep 0.3
            load_args "$server" "${PORT[$server]}" "$pipe" "$CLIENTS" "$n"
            timeout "$RUN_TIMEOUT" redis-benchmark "${LOAD[@]}" >/dev/null 2>&1 || FAILED=1
            kill -INT "$perf_pid"
            wait "$perf_pid" || true
            cat "$WORK/perf.out" >>"$f"
            SYS_FILES+=("$f")
        done
    done
fi

stop_pids

# ---- instructions per request ----------------------------------------------
# cg_total out server pipeline clients n: one server lifetime under callgrind
# serving n requests.
cg_total() {
    local out=$1 server=$2 pipe=$3 clients=$4 n=$5 port pid
    port=$(free_port)
    server_cmd "$server" "$port"
    valgrind --tool=callgrind --callgrind-out-file="$out" "${CMD[@]}" >"$WORK/cg.log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do
        [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ] && break
        sleep 0.1
    done
    if is_cellgate "$server" && [ "$6" != ping ]; then
        # Both runs: it cancels out of the difference.
        "$FILL" "$port" key: 0 "$KEYSPACE" CL.THROTTLE __key__ "${LIMIT[@]}" \
            >"$WORK/cg.fill" 2>&1 || FAILED=1
    fi
    if ! is_cellgate "$server" || [ "$6" = ping ]; then
        timeout 600 redis-benchmark -p "$port" -c "$clients" -P "$pipe" -n "$n" -q \
            -t ping_mbulk >"$WORK/cg.bench" 2>&1 || FAILED=1
    else
        timeout 600 redis-benchmark -p "$port" -c "$clients" -P "$pipe" -n "$n" -q \
            -r "$KEYSPACE" CL.THROTTLE 'key:__rand_int__' "${LIMIT[@]}" \
            >"$WORK/cg.bench" 2>&1 || FAILED=1
    fi
    kill -TERM "$pid"
    wait "$pid" || true
}

cg_line() { # label server what pipeline clients n_small n_large
    local label=$1 server=$2 what=$3 pipe=$4 clients=$5 small=$6 large=$7
    case $label in *"${PR_CG_ONLY:-}"*) ;; *) return 0 ;; esac
    echo "ping_ratio: callgrind: $label" >&2
    cg_total "$WORK/cg.small" "$server" "$pipe" "$clients" "$small" "$what"
    cg_total "$WORK/cg.large" "$server" "$pipe" "$clients" "$large" "$what"
    echo "$label  (callgrind, $small and $large requests)"
    "$PY" bench/ping_ratio.py cgdiff "$WORK/cg.small" "$WORK/cg.large" "$small" "$large" "$CG_TOP"
    echo
    if [ -n "${PR_CG_KEEP:-}" ]; then
        mkdir -p "$PR_CG_KEEP"
        local f
        f=$(echo "$label" | tr -c 'A-Za-z0-9.\n' _ | sed 's/__*/_/g; s/_$//')
        cp "$WORK/cg.small" "$PR_CG_KEEP/$f.small"
        cp "$WORK/cg.large" "$PR_CG_KEEP/$f.large"
    fi
}

: >"$WORK/cg.txt"
if [ "${PR_CALLGRIND:-1}" != 0 ] && [ "$FAILED" = 0 ] && command -v valgrind >/dev/null; then
    {
        cg_line "cellgate CL.THROTTLE -P $PIPE -c $CLIENTS" cellgate throttle "$PIPE" "$CLIENTS" "$CG_N_SMALL" "$CG_N_LARGE"
        cg_line "Redis PING_MBULK -P $PIPE -c $CLIENTS" redis ping "$PIPE" "$CLIENTS" "$CG_N_SMALL" "$CG_N_LARGE"
        cg_line "cellgate PING_MBULK -P $PIPE -c $CLIENTS (reference)" cellgate ping "$PIPE" "$CLIENTS" "$CG_N_SMALL" "$CG_N_LARGE"
        cg_line "cellgate CL.THROTTLE -P 1 -c $CLIENTS" cellgate throttle 1 "$CLIENTS" "$CG_N1_SMALL" "$CG_N1_LARGE"
        cg_line "Redis PING_MBULK -P 1 -c $CLIENTS" redis ping 1 "$CLIENTS" "$CG_N1_SMALL" "$CG_N1_LARGE"
        cg_line "cellgate CL.THROTTLE -P 1 -c 1 (one request per loop pass)" cellgate throttle 1 1 "$CG_C1_SMALL" "$CG_C1_LARGE"
        cg_line "Redis PING_MBULK -P 1 -c 1 (one request per loop pass)" redis ping 1 1 "$CG_C1_SMALL" "$CG_C1_LARGE"
        if [ -n "${CELLGATE_BIN_B:-}" ]; then
            cg_line "cellgate-b CL.THROTTLE -P $PIPE -c $CLIENTS" cellgate-b throttle "$PIPE" "$CLIENTS" "$CG_N_SMALL" "$CG_N_LARGE"
            cg_line "cellgate-b CL.THROTTLE -P 1 -c $CLIENTS" cellgate-b throttle 1 "$CLIENTS" "$CG_N1_SMALL" "$CG_N1_LARGE"
            cg_line "cellgate-b CL.THROTTLE -P 1 -c 1 (one request per loop pass)" cellgate-b throttle 1 1 "$CG_C1_SMALL" "$CG_C1_LARGE"
        fi
    } >"$WORK/cg.txt"
fi

# ---- report -------------------------------------------------------------------
sum_rc=0
{
    cat "$WORK/head.txt"
    echo
    [ "$ONLY_CG" = 1 ] || "$PY" bench/ping_ratio.py runs "$WORK/runs.csv" || sum_rc=$?
    if [ "${#SYS_FILES[@]}" -gt 0 ]; then
        echo "syscalls per request (perf stat on the syscall tracepoints, one more run each)"
        "$PY" bench/ping_ratio.py syscalls "${SYS_FILES[@]}"
        echo
    fi
    if [ -s "$WORK/cg.txt" ]; then
        echo "instructions per request (user space; function costs are the difference of"
        echo "the two runs per function over the difference in requests)"
        echo
        cat "$WORK/cg.txt"
    fi
    [ "$FAILED" = 0 ] || echo "SOME RUNS FAILED: the figures above are incomplete"
} >"$WORK/report.txt"
mkdir -p "$(dirname "$OUT")"
cp "$WORK/report.txt" "$OUT"
[ "$ONLY_CG" = 1 ] || cp "$WORK/runs.csv" "$CSV"
cat "$OUT"
echo "ping_ratio: report in $OUT$([ "$ONLY_CG" = 1 ] || echo ", runs in $CSV")"
[ "$FAILED" = 0 ] || exit 1
[ "$sum_rc" = 3 ] && [ "${PR_STRICT:-0}" = 1 ] && exit 3
exit 0

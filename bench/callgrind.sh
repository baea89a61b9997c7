#!/usr/bin/env bash
# bench/callgrind.sh: instructions executed per request inside cellgate.
#
# Wall-clock throughput on a shared 2-core VM moves by 10-50 % from run to
# run; the number of instructions the server executes per request does not.
# For each command this starts ./cellgate under callgrind twice, sends
# CG_N_SMALL and then CG_N_LARGE pipelined requests (redis-benchmark -P 16,
# random keys), and reports
#
#     Ir/request = (Ir(large run) - Ir(small run)) / (N_LARGE - N_SMALL)
#
# so start-up, shutdown and connection set-up cancel out. The last line
# sends CL.THROTTLE inside MULTI/EXEC transactions of 16 (bench/tx_load.py),
# MULTI and EXEC counted in the cost of the 16. The profile of the
# large CL.THROTTLE run (functions by self Ir) is written to
# bench/results/callgrind-cl-throttle.txt.
#
# The line "CL.THROTTLE, appendonly yes everysec" runs the same load with
# the journal on (its files in a scratch folder), so the journal's cost per
# request reads off against the CL.THROTTLE line of the same invocation.
#
# The string lines (last) send the commands of make bench's string rows:
# INCR+EXPIRE pairs on one key (bench-seq; a pair counts as 2 requests),
# SET NX EX on new keys (-r 100000000), GET of 100,000 keys that bench-fill
# creates before the load (the same fill in both runs, so it cancels out)
# and INCRBY. A line whose load gets an error reply (a cellgate without
# string keys: ERR unknown command) prints n/a and the error, the other
# lines still run, and the script exits 1. CELLGATE_BIN=redis-server
# CG_ONLY=GET measures Redis's instructions for one of them.
#
# The SET3 and HANDOFF lines send the set row (SADD+SISMEMBER+SCARD) and
# the BLPOP/LPUSH hand-off row of make bench (bench-handoff: n counts
# hand-offs).
#
# The script lines (last) send the script rows of make bench: EVALSHA of the
# fixed-window script (INCR, EXPIRE on the first hit; SCRIPT LOAD first),
# EVAL of its body, and RL.FIXED for the same limit.
#
# The ShouldRateLimit line sends bench/grpc.py's gRPC call (one descriptor,
# one hot key that never runs out) from h2load, 4 connections of 32 calls in
# flight, to a grpc-port beside the RESP port: the instructions of a gRPC
# call (HTTP/2, protobuf, the decision) against the CL.THROTTLE line's.
# Its profile is written to bench/results/callgrind-should-rate-limit.txt.
#
# Knobs: CG_N_SMALL (20000), CG_N_LARGE (120000), CELLGATE_BIN (./cellgate),
# CG_CLUSTER_ENABLED=1 (cluster-enabled yes, every slot owned),
# CG_FAKECLOCK=1 (the wall clock frozen, below),
# CG_ONLY (a label: run that line only), CG_STRINGS=0 (skip the string
# lines), CG_SCRIPTS=0 (skip the script lines), CG_PROFILE_EVALSHA=file (the
# EVALSHA run's profile), BENCH_SEQ (build/bench-seq), BENCH_FILL
# (build/bench-fill), BENCH_HANDOFF (build/bench-handoff), CG_COLL=0 (skip
# the set and hand-off lines), CG_GRPC=0 (skip the ShouldRateLimit line).
#
# CG_FAKECLOCK=1 freezes the daemon's wall clock through the tests' shim
# (tests/conformance/fakeclock.c, LD_PRELOAD): under valgrind a run lasts
# tens of seconds and its length varies with the machine's load, and the
# expiry wheel's and the timers' work per request grows with it, so two
# builds (or standalone against cluster-enabled yes) differ by a few
# percent for no reason of their own. With the clock frozen no key expires
# and no timer moves during the load; only what a request costs remains.
# bench/callgrind_ab.sh alternates builds and modes and gives medians.
set -euo pipefail
cd "$(dirname "$0")/.."

N_SMALL=${CG_N_SMALL:-20000}
N_LARGE=${CG_N_LARGE:-120000}
BIN=${CELLGATE_BIN:-./cellgate}
# CG_CLUSTER_ENABLED=1: every daemon runs with cluster-enabled yes and owns
# every slot (the routing cost of Redis Cluster's mode).
CLUSTER_ARGS=""
SEQ=${BENCH_SEQ:-build/bench-seq}
HANDOFF=${BENCH_HANDOFF:-build/bench-handoff}
FILL=${BENCH_FILL:-build/bench-fill}
PY=/usr/bin/python3
OUT=bench/results

for t in valgrind callgrind_annotate redis-benchmark redis-cli awk; do
    command -v "$t" >/dev/null || { echo "callgrind: $t not found (make bench-callgrind installs valgrind)" >&2; exit 1; }
done
[ -x "$BIN" ] || [ -x "$(command -v "$BIN")" ] || { echo "callgrind: $BIN not built" >&2; exit 1; }
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cellgate-callgrind.XXXXXX")
PID=""
# shellcheck disable=SC2317  # invoked by the trap below
cleanup() {
    if [ -n "$PID" ]; then
        kill -TERM "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# The frozen clock (CG_FAKECLOCK=1): the shim built once per invocation, a
# file of epoch ns it reads (FAKE_NS, 2030-01-01 as the tests' clock).
FAKE_NS=1893456000000000000
FAKE_ENV=()
if [ "${CG_FAKECLOCK:-0}" = 1 ]; then
    gcc -O2 -Wall -Werror -shared -fPIC -o "$WORK/fakeclock.so" \
        tests/conformance/fakeclock.c -ldl
    FAKE_ENV=(env "FAKECLOCK_FILE=$WORK/clock" "LD_PRELOAD=$WORK/fakeclock.so")
fi
# set_clock ns: the frozen clock's time (a no-op on the real clock).
set_clock() {
    [ "${#FAKE_ENV[@]}" = 0 ] && return 0
    printf '%s\n' "$1" >"$WORK/clock.tmp" && mv "$WORK/clock.tmp" "$WORK/clock"
}

. bench/lib.sh

# The ShouldRateLimit line's limit and call: RateLimitRequest{domain
# "bench", descriptors [{entries [user=alice]}]} in a gRPC frame.
printf 'domain: bench\ndescriptors:\n  - key: user\n    rate_limit: {unit: second, requests_per_unit: 4000000000}\n' \
    >"$WORK/rls.yaml"
"$PY" -c '
import sys
f = lambda n, p: bytes([n << 3 | 2, len(p)]) + p
m = f(1, b"bench") + f(2, f(1, f(1, b"user") + f(2, b"alice")))
sys.stdout.buffer.write(b"\0" + len(m).to_bytes(4, "big") + m)' >"$WORK/rls.body"

# total_ir n [--tx | --seq | --fill-get | --load body sha] command...: Ir of one daemon
# lifetime serving n requests (--fill-get: after bench-fill has created the
# GET keys). On a failed load: the load's output on stderr, the daemon
# stopped, status 1.
total_ir() {
    local n=$1 port out rc=0
    shift
    port=$(free_port)
    out=$WORK/cg.$n
    rm -rf "$WORK/data" && mkdir -p "$WORK/data"
    [ -z "${CG_CLUSTER_ENABLED:-}" ] ||
        CLUSTER_ARGS="--cluster-enabled yes --cluster-port $(free_port)"
    local grpc_args=""
    if [ "$1" = --grpc ]; then
        GRPC_PORT=$(free_port)
        grpc_args="--limits-file $WORK/rls.yaml --grpc-port $GRPC_PORT"
    fi
    set_clock "$FAKE_NS"
    "${FAKE_ENV[@]}" valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$BIN" --port "$port" --bind 127.0.0.1 --save "" --dir "$WORK/data" \
        $DAEMON_ARGS $CLUSTER_ARGS $grpc_args >"$WORK/log" 2>&1 &
    PID=$!
    for _ in $(seq 300); do
        [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ] && break
        sleep 0.1
    done
    if [ -n "${CG_CLUSTER_ENABLED:-}" ]; then
        # Every slot here, then wait for cluster_state:ok (a primary waits
        # 2 s after its start, as Redis's).
        redis-cli -p "$port" CLUSTER ADDSLOTSRANGE 0 16383 >/dev/null
        # A frozen clock steps past that wait once, then stays still.
        set_clock "$((FAKE_NS + 5000000000))"
        for _ in $(seq 300); do
            redis-cli -p "$port" CLUSTER INFO 2>/dev/null |
                grep -q '^cluster_state:ok' && break
            sleep 0.1
        done
    fi
    case $1 in
        --tx)
            # CL.THROTTLE inside MULTI/EXEC, 16 per transaction (tx_load.py).
            timeout 300 "$PY" bench/tx_load.py "$port" "$n" >"$WORK/bench.out" 2>&1 || rc=1 ;;
        --seq)
            shift
            timeout 300 "$SEQ" -p "$port" -c 50 -P 16 -n "$n" -r 100000 -q "$@" \
                >"$WORK/bench.out" 2>&1 || rc=1 ;;
        --grpc)
            # ShouldRateLimit from h2load (see the header); every call OK.
            timeout 600 h2load -n "$n" -c 4 -m 32 -d "$WORK/rls.body" \
                -H 'content-type: application/grpc' -H 'te: trailers' \
                "http://127.0.0.1:$GRPC_PORT/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit" \
                >"$WORK/bench.out" 2>&1 || rc=1
            grep -q " $n succeeded" "$WORK/bench.out" || rc=1 ;;
        --handoff)
            # n hand-offs to 50 clients blocked in BLPOP (bench-handoff).
            timeout 300 "$HANDOFF" -p "$port" -c 50 -P 16 -n "$n" -q \
                >"$WORK/bench.out" 2>&1 || rc=1 ;;
        *)
            if [ "$1" = --load ]; then
                # SCRIPT LOAD of the body first (both runs: it cancels out).
                [ "$(redis-cli -p "$port" SCRIPT LOAD "$2" 2>&1)" = "$3" ] || rc=1
                shift 3
            fi
            if [ "$1" = --fill-get ]; then
                shift
                "$FILL" "$port" get: 0 100000 SET __key__ 17 EX 86400 \
                    >"$WORK/bench.out" 2>&1 || rc=1
            fi
            [ "$rc" = 1 ] ||
                timeout 300 redis-benchmark -p "$port" -c 50 -P 16 -n "$n" -r 100000 -q "$@" \
                    >"$WORK/bench.out" 2>&1 || rc=1
            # redis-benchmark 7 exits 1 on an error reply, but not always.
            grep -q '^Error' "$WORK/bench.out" && rc=1 ;;
    esac
    if [ "$rc" = 1 ]; then
        cat "$WORK/bench.out" >&2
        kill -TERM "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
        PID=""
        return 1
    fi
    kill -TERM "$PID"
    wait "$PID" || true
    PID=""
    sed -n 's/^summary: //p; s/^totals: //p' "$out" | head -n 1 | cut -d' ' -f1
}

printf '%-44s %12s\n' "command (redis-benchmark -c 50 -P 16 -r 100000)" "Ir/request"
DAEMON_ARGS=""
FAILED=0
report() { # label command...
    local label=$1 small large
    shift
    if [ -n "${CG_ONLY:-}" ] && [ "$CG_ONLY" != "$label" ]; then
        return 0
    fi
    if ! small=$(total_ir "$N_SMALL" "$@" 2>"$WORK/err") ||
       ! large=$(total_ir "$N_LARGE" "$@" 2>"$WORK/err"); then
        tr '\r' '\n' <"$WORK/err" | grep -v '^ *$' >"$WORK/err.lines" || true
        printf '%-44s %12s  %s\n' "$label" n/a \
            "$(grep -m1 -io 'error.*' "$WORK/err.lines" | cut -c1-100)"
        sed 's/^/    /' "$WORK/err.lines" | head -n 3 >&2
        FAILED=1
        return 0
    fi
    if [ "$label" = CL.THROTTLE ]; then
        callgrind_annotate --threshold=99 "$WORK/cg.$N_LARGE" \
            >"$WORK/annotate" 2>/dev/null || true
        head -n 60 "$WORK/annotate" >"$OUT/callgrind-cl-throttle.txt"
    fi
    if [ "$label" = ShouldRateLimit ]; then
        callgrind_annotate --threshold=99 "$WORK/cg.$N_LARGE" \
            >"$WORK/annotate" 2>/dev/null || true
        head -n 80 "$WORK/annotate" >"$OUT/callgrind-should-rate-limit.txt"
    fi
    if [ "$label" = EVALSHA_FW ] && [ -n "${CG_PROFILE_EVALSHA:-}" ]; then
        callgrind_annotate --threshold=99 "$WORK/cg.$N_LARGE" \
            >"$WORK/annotate" 2>/dev/null || true
        head -n 80 "$WORK/annotate" >"$CG_PROFILE_EVALSHA"
    fi
    printf '%-44s %12.0f\n' "$label" \
        "$(awk -v a="$large" -v b="$small" -v n="$N_LARGE" -v m="$N_SMALL" \
            'BEGIN { print (a - b) / (n - m) }')"
}

report PING_MBULK -t ping_mbulk
report CL.THROTTLE CL.THROTTLE 'key:__rand_int__' 15 30 60
report RL.FIXED RL.FIXED 'fixed:__rand_int__' 30 60
report RL.SLIDING RL.SLIDING 'sliding:__rand_int__' 30 60
report RL.LOG RL.LOG 'log:__rand_int__' 30 60
report RL.TIERS RL.TIERS 'tiers:__rand_int__' 10 1 30 60
# Every request denied (quantity 2 over a burst of 1), over 100,000 keys:
# the deny path, RL.TOPDENIED's summary replacing a slot at nearly each one.
report "CL.THROTTLE, denied" CL.THROTTLE 'key:__rand_int__' 0 1 60 2
report "CL.THROTTLE in MULTI/EXEC (16 per EXEC)" --tx
DAEMON_ARGS="--appendonly yes --appendfsync everysec"
report "CL.THROTTLE, appendonly yes everysec" CL.THROTTLE 'key:__rand_int__' 15 30 60
DAEMON_ARGS="--appendonly yes --appendfsync always"
report "CL.THROTTLE, appendonly yes always" CL.THROTTLE 'key:__rand_int__' 15 30 60
DAEMON_ARGS=""
# The string rows of make bench (see the header).
if [ "${CG_STRINGS:-1}" != 0 ]; then
    report INCR+EXPIRE --seq INCR 'ctr:__rand_int__' ';' EXPIRE 'ctr:__rand_int__' 3600
    report SET_NX_EX -r 100000000 SET 'snx:__rand_int__' abcdefgh NX EX 3600
    report GET --fill-get GET 'get:__rand_int__'
    report INCRBY INCRBY 'cnt:__rand_int__' 7
fi
# The script rows of make bench: the fixed window (INCR, EXPIRE on the
# first hit) through EVALSHA after SCRIPT LOAD and through EVAL, and
# RL.FIXED for the same limit. CG_SCRIPTS=0 skips them;
# CG_PROFILE_EVALSHA=file writes the EVALSHA run's profile there.
FW_BODY="local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end return n"
FW_SHA=$(printf '%s' "$FW_BODY" | sha1sum | cut -d' ' -f1)
if [ "${CG_SCRIPTS:-1}" != 0 ]; then
    report EVALSHA_FW --load "$FW_BODY" "$FW_SHA" EVALSHA "$FW_SHA" 1 'fws:__rand_int__' 60
    report EVAL_FW EVAL "$FW_BODY" 1 'fwe:__rand_int__' 60
    report RL.FIXED_FW RL.FIXED 'fwr:__rand_int__' 1000 60
fi
# The set and blocking rows of make bench: SADD+SISMEMBER+SCARD on one key
# (3 requests an iteration; over -r 100000 keys created as they come) and
# the BLPOP/LPUSH hand-off (a request is one hand-off). CG_COLL=0 skips them.
if [ "${CG_COLL:-1}" != 0 ]; then
    report SET3 --seq SADD 'st:__rand_int__' 'm__iter%16__' ';' \
        SISMEMBER 'st:__rand_int__' 'm__iter%32__' ';' SCARD 'st:__rand_int__'
    report HANDOFF --handoff
fi
# A gRPC call (grpc-port): ShouldRateLimit, one descriptor. CG_GRPC=0 skips it.
if [ "${CG_GRPC:-1}" != 0 ]; then
    report ShouldRateLimit --grpc
fi
if [ -z "${CG_ONLY:-}" ] || [ "$CG_ONLY" = CL.THROTTLE ]; then
    echo "profile of the CL.THROTTLE run: $OUT/callgrind-cl-throttle.txt"
fi
exit "$FAILED"

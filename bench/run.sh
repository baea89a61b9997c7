#!/usr/bin/env bash
# bench/run.sh: cellgate vs redis-server, measured with redis-benchmark.
#
# Run from the repository root after building ./cellgate (`make bench` does
# both). Starts cellgate and a throw-away redis-server on free 127.0.0.1
# ports in this same invocation, runs every test against both, alternating
# servers, BENCH_REPS times, then bench/summarize.py prints medians and
# ratios and writes bench/results/. Both servers are stopped on any exit.
#
# Knobs (environment):
#   BENCH_REPS        repetitions of the whole matrix               (5)
#   BENCH_N           requests per run at -P 1                      (100000)
#   BENCH_N_PIPELINE  requests per run at -P BENCH_PIPELINE         (10 * BENCH_N)
#   BENCH_N_LUA       requests per Lua GCRA run at -P 1             (BENCH_N / 2)
#   BENCH_N_LUA_PIPELINE  the same at -P BENCH_PIPELINE     (BENCH_N_PIPELINE / 10)
#                     (the script is ~2x slower than the other tests unpipelined
#                     and ~8x slower pipelined; fewer requests keep its runs
#                     at ~1-2 s like the others)
#   BENCH_CLIENTS     redis-benchmark -c                            (50)
#   BENCH_PIPELINE    the pipelined setting, redis-benchmark -P     (16)
#   BENCH_KEYSPACE    redis-benchmark -r for the keyed tests        (100000)
#   BENCH_TIMEOUT     seconds before one redis-benchmark run is killed (120)
#   BENCH_BIG_KEYS    live keys of the flat-cost and memory runs     (10000000)
#   BENCH_MEM_KEYS    the smaller memory measurement point          (1000000)
#   BENCH_CALLGRIND=0 skip the instructions-per-request runs (bench/callgrind.sh)
#   BENCH_PERF=0      skip the kernel/user CPU profile (bench/perf.sh)
#   BENCH_FILL        the bench-fill binary (make bench builds it)  (build/bench-fill)
#   BENCH_SEQ         the bench-seq binary (make bench builds it)   (build/bench-seq)
#   BENCH_HANDOFF     the bench-handoff binary (make bench builds it) (build/bench-handoff)
#   BENCH_STRINGS=0   skip the string rows (INCR+EXPIRE, SET NX EX, GET, INCRBY)
#   BENCH_STRINGS_CELLGATE=0  run the string rows on Redis only (for checking
#                     this script against a cellgate without string keys; the
#                     report then has no cellgate figure for them)
#   BENCH_COLL=0     skip the collection rows (sorted-set log, LPUSH+LTRIM,
#                     HINCRBY, SADD+SISMEMBER+SCARD, BLPOP/LPUSH hand-off)
#   BENCH_COLL_CELLGATE=0  run the collection rows on Redis only
#   BENCH_COLL_KEYSPACE  -r of the collection rows                 (10000)
#   BENCH_N_HANDOFF   hand-offs per BLPOP/LPUSH run at -P 1          (BENCH_N / 5)
#   BENCH_N_HANDOFF_PIPELINE  the same at -P BENCH_PIPELINE  (BENCH_N_PIPELINE / 20)
#                     (a hand-off costs the server ~10x a pipelined command:
#                     a blocked client's read and reply of its own)
#   BENCH_NX_KEYSPACE -r of the SET NX EX runs, in database 9, flushed
#                     before each run, so nearly every SET creates its key
#                                                                   (100000000)
#   BENCH_SCRIPTS=0   skip the script rows (EVALSHA and EVAL of bench/fixed_window.lua
#                     on both servers, RL.FIXED with the same limit on cellgate)
#   BENCH_SCRIPTS_CELLGATE=0  run the script rows on Redis only
#   BENCH_ONLY_SCRIPTS=1  run the script rows alone: no other row, no memory,
#                     flat-cost, callgrind or perf phase (bench/results/scripts.txt)
#   BENCH_N_SCRIPT    requests per script run at -P 1               (BENCH_N)
#   BENCH_N_SCRIPT_PIPELINE  the same at -P BENCH_PIPELINE  (BENCH_N_PIPELINE / 4)
#   BENCH_STRICT=1    exit 1 when a target of the report fails
#   BENCH_NO_INSTALL=1  never apt-get gnuplot-nox (the chart is skipped)
#   CELLGATE_BIN      the binary to measure                         (./cellgate)
#
# Exit status: 0 when every run succeeded, 1 when a run failed (an error
# reply, a timeout, a server that died) or the setup did; the table is still
# printed for what did run.

set -euo pipefail

cd "$(dirname "$0")/.."

REPS=${BENCH_REPS:-5}
N1=${BENCH_N:-100000}
NP=${BENCH_N_PIPELINE:-$((10 * N1))}
NL1=${BENCH_N_LUA:-$((N1 / 2))}
NLP=${BENCH_N_LUA_PIPELINE:-$((NP / 10))}
CLIENTS=${BENCH_CLIENTS:-50}
PIPE=${BENCH_PIPELINE:-16}
KEYSPACE=${BENCH_KEYSPACE:-100000}
RUN_TIMEOUT=${BENCH_TIMEOUT:-120}
CELLGATE_BIN=${CELLGATE_BIN:-./cellgate}
BIG_KEYS=${BENCH_BIG_KEYS:-10000000}
MEM_KEYS=${BENCH_MEM_KEYS:-1000000}
FILL=${BENCH_FILL:-build/bench-fill}
SEQ=${BENCH_SEQ:-build/bench-seq}
HANDOFF=${BENCH_HANDOFF:-build/bench-handoff}
STRINGS=${BENCH_STRINGS:-1}
STRINGS_CG=${BENCH_STRINGS_CELLGATE:-1}
NX_KEYSPACE=${BENCH_NX_KEYSPACE:-100000000}
COLL=${BENCH_COLL:-1}
COLL_CG_WANTED=${BENCH_COLL_CELLGATE:-1}
COLL_KEYSPACE=${BENCH_COLL_KEYSPACE:-10000}
NH1=${BENCH_N_HANDOFF:-$((N1 / 5))}
NHP=${BENCH_N_HANDOFF_PIPELINE:-$((NP / 20))}
SCRIPTS=${BENCH_SCRIPTS:-1}
SCRIPTS_CG_WANTED=${BENCH_SCRIPTS_CELLGATE:-1}
ONLY_SCRIPTS=${BENCH_ONLY_SCRIPTS:-0}
NS1=${BENCH_N_SCRIPT:-$N1}
NSP=${BENCH_N_SCRIPT_PIPELINE:-$((NP / 4))}
if [ "$ONLY_SCRIPTS" = 1 ]; then
    SCRIPTS=1 STRINGS=0 COLL=0
fi
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# Every test shares these limiter parameters: burst 15, 30 per 60 s (the
# redis-cell README example), quantity 1.
LIMIT_ARGS=(15 30 60)

for v in REPS N1 NP NL1 NLP CLIENTS PIPE KEYSPACE RUN_TIMEOUT BIG_KEYS MEM_KEYS NX_KEYSPACE \
         COLL_KEYSPACE NS1 NSP NH1 NHP; do
    if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
        echo "bench: $v must be a positive integer (got '${!v}')" >&2
        exit 2
    fi
done

die() { echo "bench: $*" >&2; exit 1; }

[ -x "$CELLGATE_BIN" ] || die "$CELLGATE_BIN not found: run 'make' first (or use 'make bench')"
[ -x "$FILL" ] || die "$FILL not found: 'make bench' builds it"
{ [ "$STRINGS" = 0 ] && [ "$COLL" = 0 ]; } || [ -x "$SEQ" ] ||
    die "$SEQ not found: 'make bench' builds it (BENCH_STRINGS=0 skips the string rows)"
[ "$COLL" = 0 ] || [ -x "$HANDOFF" ] ||
    die "$HANDOFF not found: 'make bench' builds it (BENCH_COLL=0 skips the collection rows)"
[ "$MEM_KEYS" -le "$BIG_KEYS" ] || die "BENCH_MEM_KEYS must not exceed BENCH_BIG_KEYS"
for t in redis-server redis-benchmark redis-cli timeout; do
    command -v "$t" >/dev/null || die "$t not found (make deps installs redis-server and redis-tools)"
done

# gnuplot only draws the chart; without it everything else still runs.
if ! command -v gnuplot >/dev/null; then
    if [ "${BENCH_NO_INSTALL:-0}" != 1 ] && ! dpkg -s gnuplot-nox >/dev/null 2>&1 \
        && [ "$(id -u)" = 0 ]; then
        echo "bench: installing gnuplot-nox for the chart"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 &&
              apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null 2>&1; } ||
            true
    fi
    command -v gnuplot >/dev/null ||
        echo "bench: gnuplot unavailable: the PNG chart will be skipped"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/cellgate-bench.XXXXXX")
RAW=$WORK/raw.csv
FAILS=$WORK/failures.txt
: >"$FAILS"
CG_PID=""
RS_PID=""
BIG_PID=""
KEEP_WORK=0

stop_pid() { # pid: SIGTERM, up to 5 s to exit, then SIGKILL
    local pid=$1
    [ -n "$pid" ] || return 0
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "bench: pid $pid ignored SIGTERM; sending SIGKILL" >&2
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# shellcheck disable=SC2317  # invoked by the traps below
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_pid "$CG_PID"
    stop_pid "$RS_PID"
    stop_pid "$BIG_PID"
    if [ "$KEEP_WORK" = 1 ] || [ "$rc" != 0 ]; then
        echo "bench: logs and raw output kept in $WORK" >&2
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() { # a port the kernel just handed out on 127.0.0.1 (then freed)
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_ready port pid: wait until the server answers PING and reports our
# pid in INFO (so we never benchmark some other process that owns the port).
wait_ready() {
    local port=$1 pid=$2 info
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || return 1
        if [ "$(redis-cli -h 127.0.0.1 -p "$port" PING 2>/dev/null)" = PONG ]; then
            info=$(redis-cli -h 127.0.0.1 -p "$port" INFO server 2>/dev/null | tr -d '\r')
            case $'\n'$info$'\n' in *$'\n'"process_id:$pid"$'\n'*) return 0 ;; esac
            return 1
        fi
        sleep 0.05
    done
    return 1
}

# start_cellgate / start_big / start_redis: try a few free ports (another
# process may take one between free_port and bind); set CG_PORT/CG_PID,
# BIG_PORT/BIG_PID (a second cellgate for the flat-cost and memory runs: its
# own process, so its RSS is its own), RS_PORT/RS_PID.
start_cellgate_as() { # VAR-prefix logname
    local port pid
    for _ in 1 2 3 4 5; do
        port=$(free_port)
        "$CELLGATE_BIN" --port "$port" --bind 127.0.0.1 --save "" >>"$WORK/$2.log" 2>&1 &
        pid=$!
        printf -v "$1_PORT" '%s' "$port"
        printf -v "$1_PID" '%s' "$pid"
        wait_ready "$port" "$pid" && return 0
        stop_pid "$pid"
        printf -v "$1_PID" '%s' ""
    done
    tail -n 20 "$WORK/$2.log" >&2
    die "$2 did not start"
}
start_cellgate() { start_cellgate_as CG cellgate; }
start_big() { start_cellgate_as BIG cellgate-big; }

start_redis() {

    for _ in 1 2 3 4 5; do
        RS_PORT=$(free_port)
        redis-server --port "$RS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
            --logfile "$WORK/redis.log" &
        RS_PID=$!
        wait_ready "$RS_PORT" "$RS_PID" && return 0
        stop_pid "$RS_PID"
        RS_PID=""
    done
    tail -n 20 "$WORK/redis.log" >&2
    die "redis-server did not start"
}

start_cellgate
start_redis

SHA=$(redis-cli -h 127.0.0.1 -p "$RS_PORT" SCRIPT LOAD "$(cat bench/gcra.lua)")
[[ $SHA =~ ^[0-9a-f]{40}$ ]] || die "SCRIPT LOAD of bench/gcra.lua failed: $SHA"

# Sanity: both limiters answer the README example the same way on a fresh
# key ([0, 16, 15, -1, 2]) before anything is timed.
cg_reply=$(redis-cli -h 127.0.0.1 -p "$CG_PORT" CL.THROTTLE bench:sanity "${LIMIT_ARGS[@]}" | tr '\n' ' ')
lua_reply=$(redis-cli -h 127.0.0.1 -p "$RS_PORT" EVALSHA "$SHA" 1 bench:sanity "${LIMIT_ARGS[@]}" 1 | tr '\n' ' ')
echo "bench: sanity CL.THROTTLE bench:sanity ${LIMIT_ARGS[*]}: cellgate [${cg_reply% }] Lua GCRA [${lua_reply% }]"
[ "$cg_reply" = "0 16 15 -1 2 " ] || die "cellgate CL.THROTTLE sanity reply is wrong: [$cg_reply]"
[ "$lua_reply" = "0 16 15 -1 2 " ] || die "Lua GCRA sanity reply is wrong: [$lua_reply]"

# Sanity of the string rows: the same commands on a fresh key must get the
# same replies from both servers, or cellgate's figures for them would not
# measure the same work. A cellgate without string keys (ERR unknown
# command) fails the bench, the other rows still run, and its string runs
# are skipped instead of failing one by one. STR_CG=1: measure cellgate too.
STR_CG=0
string_probe() { # port: the replies, one line
    local c
    for c in "SET bench:str 5 NX EX 100" "SET bench:str 6 NX EX 100" "GET bench:str" \
             "INCR bench:str" "INCRBY bench:str 7" "EXPIRE bench:str 3600" "TTL bench:str" \
             "INCR bench:ctr" "EXPIRE bench:ctr 3600" "GET bench:ctr" "DEL bench:str bench:ctr"; do
        # shellcheck disable=SC2086  # the words of the command
        printf '[%s] ' "$(redis-cli -h 127.0.0.1 -p "$1" $c 2>&1 | tr '\n' ' ')"
    done
}
if [ "$STRINGS" != 0 ]; then
    rs_str=$(string_probe "$RS_PORT")
    cg_str=$(string_probe "$CG_PORT")
    echo "bench: sanity of the string rows on Redis:    $rs_str"
    echo "bench: sanity of the string rows on cellgate: $cg_str"
    [ "$rs_str" = "[OK ] [ ] [5 ] [6 ] [13 ] [1 ] [3600 ] [1 ] [1 ] [1 ] [2 ] " ] ||
        die "Redis answers the string sanity commands unexpectedly: $rs_str"
    if [ "$STRINGS_CG" = 0 ]; then
        echo "bench: BENCH_STRINGS_CELLGATE=0: the string rows run on Redis only (no cellgate figures)"
    elif [ "$cg_str" = "$rs_str" ]; then
        STR_CG=1
    else
        echo "bench: cellgate's string replies differ from Redis's (no string keys yet?):" \
             "its string rows are skipped and the bench will fail" | tee -a "$FAILS" >&2
        echo "    Redis    $rs_str" | tee -a "$FAILS" >&2
        echo "    cellgate $cg_str" | tee -a "$FAILS" >&2
    fi
fi

# The same for the collection rows: a cellgate without lists, hashes and
# sorted sets gets no figures for them (and fails the bench).
COLL_CG=0
coll_probe() { # port: the replies, one line
    local c
    for c in "ZADD bench:zl 5 m5" "ZADD bench:zl 6 m6" "ZREMRANGEBYSCORE bench:zl -inf (6" \
             "ZCARD bench:zl" "LPUSH bench:l 1 2 3" "LTRIM bench:l 0 1" "LRANGE bench:l 0 -1" \
             "HINCRBY bench:h count 1" "HINCRBY bench:h count 1" "HSET bench:h tokens 5" \
             "SADD bench:s m1 m2" "SADD bench:s m2 m3" "SISMEMBER bench:s m3" "SCARD bench:s" \
             "LPUSH bench:b x" "BLPOP bench:b 0" \
             "DEL bench:zl bench:l bench:h bench:s"; do
        # shellcheck disable=SC2086  # the words of the command
        printf '[%s] ' "$(redis-cli -h 127.0.0.1 -p "$1" $c 2>&1 | tr '\n' ' ')"
    done
}
if [ "$COLL" != 0 ]; then
    rs_coll=$(coll_probe "$RS_PORT")
    cg_coll=$(coll_probe "$CG_PORT")
    echo "bench: sanity of the collection rows on Redis:    $rs_coll"
    echo "bench: sanity of the collection rows on cellgate: $cg_coll"
    [ "$rs_coll" = "[1 ] [1 ] [1 ] [1 ] [3 ] [OK ] [3 2 ] [1 ] [2 ] [1 ] [2 ] [1 ] [1 ] [3 ] [1 ] [bench:b x ] [4 ] " ] ||
        die "Redis answers the collection sanity commands unexpectedly: $rs_coll"
    if [ "$COLL_CG_WANTED" = 0 ]; then
        echo "bench: BENCH_COLL_CELLGATE=0: the collection rows run on Redis only"
    elif [ "$cg_coll" = "$rs_coll" ]; then
        COLL_CG=1
    else
        echo "bench: cellgate's collection replies differ from Redis's (no collections yet?):" \
             "its collection rows are skipped and the bench will fail" | tee -a "$FAILS" >&2
        echo "    Redis    $rs_coll" | tee -a "$FAILS" >&2
        echo "    cellgate $cg_coll" | tee -a "$FAILS" >&2
    fi
fi

# The script rows: the fixed window as a script (INCR, EXPIRE on the first
# hit, the count returned; the client compares it with its limit), loaded
# with SCRIPT LOAD on both servers and called through EVALSHA, and the same
# body sent whole through EVAL (node-redis, the NestJS storage); beside them
# RL.FIXED on cellgate, the native command for the same limit. FW_LIMIT is
# never reached during the bench (about 30 calls a key a minute): every call
# takes the path that writes the key, as every script call INCRs.
# Before any timing, the decision check: on a fresh key, EVALSHA's and
# EVAL's counts are 1..7 on both servers, and RL.FIXED with limit 5 allows
# exactly the calls whose count is <= 5, with remaining = 5 - count.
FW_BODY="local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end return n"
FW_WINDOW=60
FW_LIMIT=1000
FW_SHA=""
SCR_CG=0
DECISION=()
fw_counts() { # port command...: the replies of 7 calls, one line
    local port=$1 i
    shift
    for i in 1 2 3 4 5 6 7; do
        printf '%s ' "$(redis-cli -h 127.0.0.1 -p "$port" "$@" 2>&1 | tr '\n' ' ' | sed 's/ *$//')"
    done
}
if [ "$SCRIPTS" != 0 ]; then
    FW_SHA=$(redis-cli -h 127.0.0.1 -p "$RS_PORT" SCRIPT LOAD "$FW_BODY")
    [ "$FW_SHA" = "$(printf '%s' "$FW_BODY" | sha1sum | cut -d' ' -f1)" ] ||
        die "SCRIPT LOAD of the fixed-window script on Redis answered '$FW_SHA'"
    rs_sha=$(fw_counts "$RS_PORT" EVALSHA "$FW_SHA" 1 bench:fw "$FW_WINDOW")
    rs_eval=$(fw_counts "$RS_PORT" EVAL "$FW_BODY" 1 bench:fwe "$FW_WINDOW")
    rs_ttl=$(redis-cli -h 127.0.0.1 -p "$RS_PORT" TTL bench:fw)
    DECISION=("1 Redis:    EVALSHA counts [${rs_sha% }], EVAL counts [${rs_eval% }], TTL $rs_ttl")
    echo "bench: decision check on ${DECISION[0]#1 }"
    [ "$rs_sha" = "1 2 3 4 5 6 7 " ] && [ "$rs_eval" = "$rs_sha" ] ||
        die "Redis answers the fixed-window script unexpectedly"
    if [ "$SCRIPTS_CG_WANTED" = 0 ]; then
        echo "bench: BENCH_SCRIPTS_CELLGATE=0: the script rows run on Redis only"
    else
        cg_sha_reply=$(redis-cli -h 127.0.0.1 -p "$CG_PORT" SCRIPT LOAD "$FW_BODY" 2>&1)
        cg_sha=$(fw_counts "$CG_PORT" EVALSHA "$FW_SHA" 1 bench:fw "$FW_WINDOW")
        cg_eval=$(fw_counts "$CG_PORT" EVAL "$FW_BODY" 1 bench:fwe "$FW_WINDOW")
        cg_ttl=$(redis-cli -h 127.0.0.1 -p "$CG_PORT" TTL bench:fw 2>&1)
        DECISION+=("2 cellgate: EVALSHA counts [${cg_sha% }], EVAL counts [${cg_eval% }], TTL $cg_ttl")
        echo "bench: decision check on ${DECISION[1]#2 }"
        decided=1
        i=0
        for n in $cg_sha; do
            i=$((i + 1))
            rl=$(redis-cli -h 127.0.0.1 -p "$CG_PORT" RL.FIXED bench:rf 5 "$FW_WINDOW" 2>&1 | tr '\n' ' ')
            if [ "$n" -le 5 ]; then want="0 5 $((5 - n)) -1 "; else want="1 5 0 "; fi
            DECISION+=("3$i call $i: script count $n ($([ "$n" -le 5 ] && echo allowed || echo limited) at limit 5), RL.FIXED bench:rf 5 $FW_WINDOW -> [${rl% }]")
            echo "bench:   ${DECISION[-1]#3$i }"
            case $rl in "$want"*) ;; *) decided=0 ;; esac
        done
        if [ "$cg_sha_reply" = "$FW_SHA" ] && [ "$cg_sha" = "$rs_sha" ] &&
           [ "$cg_eval" = "$rs_eval" ] && [ "$cg_ttl" = "$rs_ttl" ] && [ "$decided" = 1 ]; then
            SCR_CG=1
        else
            echo "bench: cellgate's script or RL.FIXED replies differ (SCRIPT LOAD: $cg_sha_reply):" \
                 "its script rows are skipped and the bench will fail" | tee -a "$FAILS" >&2
        fi
    fi
fi

# raw.csv: our columns, then redis-benchmark's own --csv columns.
echo '"rep","pipeline","clients","requests","server","test","server_cpu_s","client_cpu_s","wall_s","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"' >"$RAW"

{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host=$(uname -n) $(uname -sr), $(nproc) CPUs"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //')"
    echo "loadavg_start=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "cellgate=$("$CELLGATE_BIN" --version 2>&1 | head -n1) ($(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- . 2>/dev/null || echo ', dirty tree'))"
    echo "redis=$(redis-server --version | sed 's/ sha=.*//'), $(redis-benchmark --version 2>/dev/null || echo 'redis-benchmark ?')"
    echo "reps=$REPS"
    echo "clients=$CLIENTS"
    echo "keyspace=$KEYSPACE"
    echo "n_1=$N1"
    echo "n_$PIPE=$NP"
    echo "pipelines=1 $PIPE"
    echo "strings=$STRINGS"
    if [ "$STRINGS" = 0 ]; then echo "strings_cellgate=skipped"
    elif [ "$STRINGS_CG" = 0 ]; then echo "strings_cellgate=skipped"
    elif [ "$STR_CG" = 1 ]; then echo "strings_cellgate=measured"
    else echo "strings_cellgate=unsupported"; fi
    echo "nx_keyspace=$NX_KEYSPACE"
    echo "collections=$COLL"
    echo "coll_keyspace=$COLL_KEYSPACE"
    echo "handoff_n=$NH1/$NHP"
    echo "scripts=$SCRIPTS"
    echo "only_scripts=$ONLY_SCRIPTS"
    echo "fw_limit=$FW_LIMIT"
    echo "fw_window=$FW_WINDOW"
    echo "fw_body=$FW_BODY"
    for d in "${DECISION[@]}"; do echo "decision_${d%% *}=${d#* }"; done
    echo "n_script_1=$NS1"
    echo "n_script_$PIPE=$NSP"
    if [ "$SCRIPTS" = 0 ] || [ "$SCRIPTS_CG_WANTED" = 0 ]; then echo "scripts_cellgate=skipped"
    elif [ "$SCR_CG" = 1 ]; then echo "scripts_cellgate=measured"
    else echo "scripts_cellgate=unsupported"; fi
    if [ "$COLL" = 0 ] || [ "$COLL_CG_WANTED" = 0 ]; then echo "collections_cellgate=skipped"
    elif [ "$COLL_CG" = 1 ]; then echo "collections_cellgate=measured"
    else echo "collections_cellgate=unsupported"; fi
} >"$WORK/meta.txt"

# CPU time (user + system) a process has used so far: read around every
# run, so the report can give the server's own CPU cost per request, which
# the client's speed does not limit.
# In nanoseconds, from the threads' schedstat (time on a CPU, user and
# kernel), so that a run's figure is not rounded to 10 ms ticks (1-6 % of a
# pipelined run's server CPU); /proc/PID/stat's ticks where schedstat is
# missing.
CLK_TCK=$(getconf CLK_TCK)
cpu_ns() {
    if [ -r "/proc/$1/schedstat" ]; then
        cat "/proc/$1/task/"*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'
    else
        awk -v hz="$CLK_TCK" '{ printf "%.0f\n", ($14 + $15) * 1e9 / hz }' \
            "/proc/$1/stat" 2>/dev/null || echo 0
    fi
}

# bench rep pipeline server test n [--seq] redis-benchmark-args...
# One timed redis-benchmark run; appends its CSV rows to raw.csv, prefixed
# with our columns. -t runs keep redis-benchmark's test names; a custom
# command's row (named after the whole command line) is renamed to $test.
# --seq: bench-seq instead (same options and CSV; the commands separated by
# ';' share one random key per iteration, and n counts every command).
# --handoff: bench-handoff (-c clients blocked in BLPOP, a producer
# LPUSHing to them -P at a time; n counts hand-offs).
FAILED=0
bench() {
    local rep=$1 pipe=$2 server=$3 test=$4 n=$5 port rc=0 line name rest
    local client=redis-benchmark
    shift 5
    if [ "${1:-}" = --seq ]; then
        client=$SEQ
        shift
    elif [ "${1:-}" = --handoff ]; then
        client=$HANDOFF
        shift
    fi
    local pid
    case $server in
        cellgate) port=$CG_PORT pid=$CG_PID ;;
        cellgate-big) port=$BIG_PORT pid=$BIG_PID ;;
        *) port=$RS_PORT pid=$RS_PID ;;
    esac
    local out=$WORK/run.out err=$WORK/run.err cpu0 cpu1
    # The client's CPU time too (bash's `time` counts the waited-for
    # redis-benchmark under timeout): with both, the report shows which
    # side was the bottleneck of a run.
    local TIMEFORMAT='%3U %3S %3R' client_s wall_s
    cpu0=$(cpu_ns "$pid")
    { time timeout "$RUN_TIMEOUT" "$client" -h 127.0.0.1 -p "$port" -c "$CLIENTS" \
        -P "$pipe" -n "$n" --csv "$@" >"$out" 2>"$err"; } 2>"$WORK/run.time" || rc=$?
    cpu1=$(cpu_ns "$pid")
    local cpu_s
    cpu_s=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')
    read -r client_s wall_s < <(awk 'END { printf "%.3f %.3f\n", $1 + $2, $3 }' "$WORK/run.time")
    local rows=0
    while IFS= read -r line; do
        line=${line%$'\r'}
        case $line in '"test"'*|'') continue ;; esac
        # The name is quoted and may hold commas (an EVAL's body), never a quote.
        name=${line%%\",*}\"
        rest=${line#*\",}
        [ "$test" = "-" ] || name="\"$test\""
        printf '%s,%s,%s,%s,"%s",%s,%s,%s,%s,%s\n' "$rep" "$pipe" "$CLIENTS" "$n" \
            "$server" "$name" "$cpu_s" "$client_s" "$wall_s" "$rest" >>"$RAW"
        rows=$((rows + 1))
    done <"$out"
    local label=$test
    [ "$label" = "-" ] && label=$(tail -n +2 "$out" | cut -d, -f1 | tr -d '"' | paste -sd+)
    if [ "$rc" != 0 ] || [ "$rows" = 0 ] || grep -qi 'error' "$err"; then
        FAILED=1
        {
            echo "rep $rep -P $pipe $server $label: redis-benchmark exit $rc$([ "$rc" = 124 ] && echo " (timed out after ${RUN_TIMEOUT}s)"), $rows result rows"
            sed 's/^/    /' "$err" | head -n 5
        } | tee -a "$FAILS" >&2
    fi
    printf '  rep %d  -P %-3s %-8s %-22s %s\n' "$rep" "$pipe" "$server" "$label" \
        "$(tail -n +2 "$out" | sed 's/^"[^"]*",//' | cut -d, -f1 | tr -d '"' | tr '\n' ' ')rps"
    # A server that died takes the rest of the matrix with it.
    if ! kill -0 "$CG_PID" 2>/dev/null; then
        echo "bench: cellgate (pid $CG_PID) died during '$label'; last log lines:" | tee -a "$FAILS" >&2
        tail -n 20 "$WORK/cellgate.log" | sed 's/^/    /' | tee -a "$FAILS" >&2
        CG_PID=""
        return 1
    fi
    if [ "$server" = cellgate-big ] && ! kill -0 "$BIG_PID" 2>/dev/null; then
        echo "bench: the second cellgate (pid $BIG_PID) died during '$label'" | tee -a "$FAILS" >&2
        tail -n 20 "$WORK/cellgate-big.log" | sed 's/^/    /' | tee -a "$FAILS" >&2
        BIG_PID=""
        return 1
    fi
    if ! kill -0 "$RS_PID" 2>/dev/null; then
        echo "bench: redis-server (pid $RS_PID) died during '$label'" | tee -a "$FAILS" >&2
        RS_PID=""
        return 1
    fi
}

# The pairs of one repetition, for one pipeline setting. Odd repetitions run
# cellgate first, even ones Redis first, so that neither server always gets
# the slot right after the other's (cache, CPU frequency, neighbours).
# One test per redis-benchmark run: a run's server CPU time is divided by
# its own requests, so two tests in one run would count double.
cellgate_ping()  { bench "$1" "$2" cellgate - "$3" -t ping_inline &&
                   bench "$1" "$2" cellgate - "$3" -t ping_mbulk; }
redis_ping()     { bench "$1" "$2" redis    - "$3" -t ping_inline &&
                   bench "$1" "$2" redis    - "$3" -t ping_mbulk; }
cellgate_limit() { bench "$1" "$2" cellgate CL.THROTTLE "$3" -r "$KEYSPACE" \
                       CL.THROTTLE 'key:__rand_int__' "${LIMIT_ARGS[@]}"; }
cellgate_fixed() { bench "$1" "$2" cellgate RL.FIXED "$3" -r "$KEYSPACE" \
                       RL.FIXED 'fixed:__rand_int__' 30 60; }
cellgate_sliding() { bench "$1" "$2" cellgate RL.SLIDING "$3" -r "$KEYSPACE" \
                       RL.SLIDING 'sliding:__rand_int__' 30 60; }
cellgate_log()    { bench "$1" "$2" cellgate RL.LOG "$3" -r "$KEYSPACE" \
                       RL.LOG 'log:__rand_int__' 30 60; }
cellgate_entries() { bench "$1" "$2" cellgate RL.ENTRIES "$3" -r "$KEYSPACE" \
                       RL.ENTRIES 'log:__rand_int__'; }
cellgate_tiers()  { bench "$1" "$2" cellgate RL.TIERS "$3" -r "$KEYSPACE" \
                       RL.TIERS 'tiers:__rand_int__' 10 1 30 60; }
redis_incr()     { bench "$1" "$2" redis    INCR "$3" -r "$KEYSPACE" -t incr; }
redis_lua()      { bench "$1" "$2" redis    LUA_GCRA "$4" -r "$KEYSPACE" \
                       EVALSHA "$SHA" 1 'key:__rand_int__' "${LIMIT_ARGS[@]}" 1; }

# The string rows: the same commands to both servers, 16-byte key names
# (a 4-byte prefix and redis-benchmark's 12 digits).
#   INCR+EXPIRE  the counter idiom: INCR ctr:K then EXPIRE ctr:K 3600, the same
#                K (bench-seq); after the first runs every K exists
#   SET_NX_EX    SET snx:K abcdefgh NX EX 3600 in database 9, flushed before
#                each run (untimed), over BENCH_NX_KEYSPACE: nearly every
#                request creates its key
#   GET          GET get:K over keys that hold "17" with a TTL (filled before
#                the matrix)
#   INCRBY       INCRBY cnt:K 7 (no TTL), like Redis's -t incr
# Each test runs on both servers back to back, cellgate first on odd
# repetitions and Redis first on even ones.
quiet() { # pid: wait (up to 3 s) until it uses under 2 % of a CPU
    local a b
    for _ in $(seq 30); do
        a=$(cpu_ns "$1")
        sleep 0.1
        b=$(cpu_ns "$1")
        [ $((b - a)) -lt 2000000 ] && return 0
    done
}
string_run() { # server rep pipeline n test
    local server=$1 port pid
    [ "$server" = cellgate ] && [ "$STR_CG" != 1 ] && return 0
    case $server in
        cellgate) port=$CG_PORT pid=$CG_PID ;;
        *) port=$RS_PORT pid=$RS_PID ;;
    esac
    case $5 in
        INCR+EXPIRE)
            bench "$2" "$3" "$server" INCR+EXPIRE "$4" --seq -r "$KEYSPACE" \
                INCR 'ctr:__rand_int__' ';' EXPIRE 'ctr:__rand_int__' 3600 ;;
        SET_NX_EX)
            redis-cli -h 127.0.0.1 -p "$port" -n 9 FLUSHDB >/dev/null
            quiet "$pid"
            bench "$2" "$3" "$server" SET_NX_EX "$4" --dbnum 9 -r "$NX_KEYSPACE" \
                SET 'snx:__rand_int__' abcdefgh NX EX 3600 ;;
        GET)
            bench "$2" "$3" "$server" GET "$4" -r "$KEYSPACE" GET 'get:__rand_int__' ;;
        INCRBY)
            bench "$2" "$3" "$server" INCRBY "$4" -r "$KEYSPACE" INCRBY 'cnt:__rand_int__' 7 ;;
    esac
}
string_pair() { # rep pipeline n test: both servers, in the repetition's order
    [ "$STRINGS" = 0 ] && return 0
    if [ $(($1 % 2)) = 1 ]; then
        string_run cellgate "$@" && string_run redis "$@"
    else
        string_run redis "$@" && string_run cellgate "$@"
    fi
}
strings_rep() { # rep pipeline n
    if [ $(($1 % 2)) = 1 ]; then
        string_pair "$@" INCR+EXPIRE && string_pair "$@" SET_NX_EX &&
        string_pair "$@" GET && string_pair "$@" INCRBY
    else
        string_pair "$@" INCRBY && string_pair "$@" GET &&
        string_pair "$@" SET_NX_EX && string_pair "$@" INCR+EXPIRE
    fi
}

# The collection rows: the same commands to both servers, over
# COLL_KEYSPACE keys (16-byte names), filled before the matrix:
#   ZLOG         the sorted-set sliding log, pipelined like its users do:
#                ZADD zl:K I mI ; ZREMRANGEBYSCORE zl:K -inf (I-W ; ZCARD zl:K
#                with I the iteration's number (bench-seq's __iter__,
#                continued from run to run on each server) and W = 9 x the
#                keys: a log holds this entry and ~9 earlier ones (10 on
#                average, Poisson)
#   LPUSH+LTRIM  LPUSH lst:K I ; LTRIM lst:K 0 9 over 10-element lists
#   HINCRBY      HINCRBY hc:K count 1 over 2-field hashes
#   SET3         SADD st:K m(I%16) ; SISMEMBER st:K m(I%32) ; SCARD st:K over
#                sets filled with m0..m7, so each holds 8 to 16 members
#                (non-integer members: Redis 7.0 keeps them in a hash
#                table); an iteration is 3 commands
#   HANDOFF      -c clients blocked in BLPOP hb:i 0 on keys of their own, a
#                producer LPUSHing to each, -P at a time (bench/handoff.c):
#                a request is one value handed over
ZLOG_W=$((9 * COLL_KEYSPACE))
declare -A ZLOG_BASE=([cellgate]=0 [redis]=0)
zlog_args() { # server: the bench-seq arguments of one ZLOG run
    echo --seq -r "$COLL_KEYSPACE" --iter-base "${ZLOG_BASE[$1]}" \
        ZADD 'zl:__rand_int__' __iter__ 'm__iter__' ';' \
        ZREMRANGEBYSCORE 'zl:__rand_int__' -inf "(__iter-${ZLOG_W}__" ';' \
        ZCARD 'zl:__rand_int__'
}
coll_run() { # server rep pipeline n test
    local server=$1
    [ "$server" = cellgate ] && [ "$COLL_CG" != 1 ] && return 0
    case $5 in
        ZLOG)
            # shellcheck disable=SC2046  # the words of zlog_args
            bench "$2" "$3" "$server" ZLOG "$4" $(zlog_args "$server") || return 1
            ZLOG_BASE[$server]=$(( ${ZLOG_BASE[$server]} + ($4 + 2) / 3 )) ;;
        LPUSH+LTRIM)
            bench "$2" "$3" "$server" LPUSH+LTRIM "$4" --seq -r "$COLL_KEYSPACE" \
                LPUSH 'lst:__rand_int__' 1700000000.123 ';' LTRIM 'lst:__rand_int__' 0 9 ;;
        HINCRBY)
            bench "$2" "$3" "$server" HINCRBY "$4" -r "$COLL_KEYSPACE" \
                HINCRBY 'hc:__rand_int__' count 1 ;;
        SET3)
            bench "$2" "$3" "$server" SET3 "$4" --seq -r "$COLL_KEYSPACE" \
                SADD 'st:__rand_int__' 'm__iter%16__' ';' \
                SISMEMBER 'st:__rand_int__' 'm__iter%32__' ';' SCARD 'st:__rand_int__' ;;
        HANDOFF)
            bench "$2" "$3" "$server" HANDOFF "$([ "$3" = 1 ] && echo "$NH1" || echo "$NHP")" \
                --handoff ;;
    esac
}
coll_pair() { # rep pipeline n test: both servers, in the repetition's order
    [ "$COLL" = 0 ] && return 0
    if [ $(($1 % 2)) = 1 ]; then
        coll_run cellgate "$@" && coll_run redis "$@"
    else
        coll_run redis "$@" && coll_run cellgate "$@"
    fi
}
colls_rep() { # rep pipeline n
    if [ $(($1 % 2)) = 1 ]; then
        coll_pair "$@" ZLOG && coll_pair "$@" LPUSH+LTRIM && coll_pair "$@" HINCRBY &&
        coll_pair "$@" SET3 && coll_pair "$@" HANDOFF
    else
        coll_pair "$@" HANDOFF && coll_pair "$@" SET3 &&
        coll_pair "$@" HINCRBY && coll_pair "$@" LPUSH+LTRIM && coll_pair "$@" ZLOG
    fi
}
# coll_fill port server: the keys of the collection rows, untimed: 10-element
# lists, 2-field hashes, 8-member sets, and logs run up to their steady state
# (W iterations).
coll_fill() {
    "$FILL" "$1" lst: 0 "$COLL_KEYSPACE" RPUSH __key__ 1 2 3 4 5 6 7 8 9 10 &&
    "$FILL" "$1" hc: 0 "$COLL_KEYSPACE" HSET __key__ count 0 tokens 5 &&
    "$FILL" "$1" st: 0 "$COLL_KEYSPACE" SADD __key__ m0 m1 m2 m3 m4 m5 m6 m7 &&
    # shellcheck disable=SC2046  # the words of zlog_args
    timeout "$RUN_TIMEOUT" "$SEQ" -h 127.0.0.1 -p "$1" -c "$CLIENTS" -P "$PIPE" \
        -n $((3 * ZLOG_W)) -q $(zlog_args "$2" | cut -d' ' -f2-) >/dev/null &&
    ZLOG_BASE[$2]=$ZLOG_W
}

# The script rows (see the decision check above), -r KEYSPACE, 16-byte key
# names: EVALSHA_FW and EVAL_FW on both servers back to back (cellgate first
# on odd repetitions), then RL.FIXED_FW on cellgate.
script_run() { # server rep pipeline n test
    local server=$1
    [ "$server" = cellgate ] && [ "$SCR_CG" != 1 ] && return 0
    case $5 in
        EVALSHA_FW)
            bench "$2" "$3" "$server" EVALSHA_FW "$4" -r "$KEYSPACE" \
                EVALSHA "$FW_SHA" 1 'fws:__rand_int__' "$FW_WINDOW" ;;
        EVAL_FW)
            bench "$2" "$3" "$server" EVAL_FW "$4" -r "$KEYSPACE" \
                EVAL "$FW_BODY" 1 'fwe:__rand_int__' "$FW_WINDOW" ;;
        RL.FIXED_FW)
            bench "$2" "$3" "$server" RL.FIXED_FW "$4" -r "$KEYSPACE" \
                RL.FIXED 'fwr:__rand_int__' "$FW_LIMIT" "$FW_WINDOW" ;;
    esac
}
script_pair() { # rep pipeline n test: both servers, in the repetition's order
    if [ $(($1 % 2)) = 1 ]; then
        script_run cellgate "$@" && script_run redis "$@"
    else
        script_run redis "$@" && script_run cellgate "$@"
    fi
}
scripts_rep() { # rep pipeline n (n: requests of a script run)
    [ "$SCRIPTS" = 0 ] && return 0
    if [ $(($1 % 2)) = 1 ]; then
        script_pair "$@" EVALSHA_FW && script_pair "$@" EVAL_FW &&
        script_run cellgate "$1" "$2" "$3" RL.FIXED_FW
    else
        script_run cellgate "$1" "$2" "$3" RL.FIXED_FW &&
        script_pair "$@" EVAL_FW && script_pair "$@" EVALSHA_FW
    fi
}

one_rep() { # rep pipeline n n_lua
    if [ $(($1 % 2)) = 1 ]; then
        cellgate_ping "$@" && redis_ping "$@" &&
        cellgate_limit "$@" && redis_incr "$@" && redis_lua "$@" &&
        cellgate_fixed "$@" && cellgate_sliding "$@" && cellgate_log "$@" &&
        cellgate_entries "$@" && cellgate_tiers "$@" && strings_rep "$1" "$2" "$3" &&
        colls_rep "$1" "$2" "$3"
    else
        redis_ping "$@" && cellgate_ping "$@" && strings_rep "$1" "$2" "$3" &&
        colls_rep "$1" "$2" "$3" &&
        cellgate_tiers "$@" &&
        cellgate_log "$@" && cellgate_entries "$@" && cellgate_sliding "$@" &&
        cellgate_fixed "$@" && redis_incr "$@" && redis_lua "$@" &&
        cellgate_limit "$@"
    fi
}

# Warm-up (not recorded): page in both servers and the loopback path.
for port in "$CG_PORT" "$RS_PORT"; do
    timeout "$RUN_TIMEOUT" redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" \
        -n 20000 -q -t ping_mbulk >/dev/null 2>&1 || true
done

# The keys the GET rows read: KEYSPACE counters holding "17" with a TTL.
if [ "$STRINGS" != 0 ]; then
    "$FILL" "$RS_PORT" get: 0 "$KEYSPACE" SET __key__ 17 EX 86400 ||
        die "filling the GET keys of Redis failed"
    if [ "$STR_CG" = 1 ]; then
        "$FILL" "$CG_PORT" get: 0 "$KEYSPACE" SET __key__ 17 EX 86400 ||
            die "filling the GET keys of cellgate failed"
    fi
fi

if [ "$COLL" != 0 ]; then
    coll_fill "$RS_PORT" redis || die "filling the collection keys of Redis failed"
    if [ "$COLL_CG" = 1 ]; then
        coll_fill "$CG_PORT" cellgate || die "filling the collection keys of cellgate failed"
    fi
fi

echo "bench: cellgate pid $CG_PID on 127.0.0.1:$CG_PORT, redis-server pid $RS_PID on 127.0.0.1:$RS_PORT"
echo "bench: $REPS reps x (-P 1: n=$N1, Lua n=$NL1, scripts n=$NS1 | -P $PIPE: n=$NP, Lua n=$NLP, scripts n=$NSP), -c $CLIENTS, -r $KEYSPACE$([ "$ONLY_SCRIPTS" = 1 ] && echo ', script rows only')"
start=$SECONDS
aborted=0
for rep in $(seq "$REPS"); do
    if [ "$ONLY_SCRIPTS" != 1 ]; then
        one_rep "$rep" 1 "$N1" "$NL1" || { aborted=1; break; }
    fi
    scripts_rep "$rep" 1 "$NS1" || { aborted=1; break; }
    if [ "$ONLY_SCRIPTS" != 1 ]; then
        one_rep "$rep" "$PIPE" "$NP" "$NLP" || { aborted=1; break; }
    fi
    scripts_rep "$rep" "$PIPE" "$NSP" || { aborted=1; break; }
done
echo "bench: runs took $((SECONDS - start)) s"

# ---- memory per key and flat cost ---------------------------------------
# A second cellgate gets BIG_KEYS keys with 16-byte names ("key:" and 12
# digits) from bench-fill; INFO memory is sampled before, at MEM_KEYS and
# at BIG_KEYS keys, each time after the key table has finished growing.
# With CL.THROTTLE's keys still live (1 token per day: none expires during
# the bench), its throughput over all of them is compared, run by run, with
# the main cellgate's over 1,000 keys, with the same parameters.
MEM=$WORK/memory.csv
echo '"limiter","keys","used_memory","used_memory_rss"' >"$MEM"
FLAT_ARGS=(100000 1 86400)

settle() { # wait (bounded) until no rehash is running on port $1
    local v
    for _ in $(seq 1200); do
        v=$(redis-cli -h 127.0.0.1 -p "$1" INFO memory | tr -d '\r' |
            sed -n 's/^mem_overhead_db_hashtable_rehashing://p')
        [ "$v" = 0 ] && return 0
        sleep 0.1
    done
    echo "bench: the key table of port $1 was still rehashing after 120 s" | tee -a "$FAILS" >&2
    FAILED=1
}

mem_sample() { # limiter keys: append INFO memory of the big server
    local info
    info=$(redis-cli -h 127.0.0.1 -p "$BIG_PORT" INFO memory | tr -d '\r')
    printf '"%s",%s,%s,%s\n' "$1" "$2" \
        "$(sed -n 's/^used_memory://p' <<<"$info")" \
        "$(sed -n 's/^used_memory_rss://p' <<<"$info")" >>"$MEM"
}

memory_run() { # limiter command-args... (with __key__ for the key)
    local name=$1 keys
    shift
    start_big
    mem_sample "$name" 0
    "$FILL" "$BIG_PORT" key: 0 "$MEM_KEYS" "$@" || { FAILED=1; return 1; }
    settle "$BIG_PORT"
    mem_sample "$name" "$MEM_KEYS"
    if [ "$BIG_KEYS" -gt "$MEM_KEYS" ]; then
        "$FILL" "$BIG_PORT" key: "$MEM_KEYS" $((BIG_KEYS - MEM_KEYS)) "$@" ||
            { FAILED=1; return 1; }
        settle "$BIG_PORT"
        mem_sample "$name" "$BIG_KEYS"
    fi
    keys=$(redis-cli -h 127.0.0.1 -p "$BIG_PORT" DBSIZE)
    [ "$keys" = "$BIG_KEYS" ] || {
        echo "bench: $name: DBSIZE $keys after filling $BIG_KEYS keys" | tee -a "$FAILS" >&2
        FAILED=1
    }
}

flat_rep() { # rep: 1,000 keys on the main cellgate vs BIG_KEYS on the big one
    local small=(bench "$1" "$PIPE" cellgate FLAT_1K "$NP" -r 1000
                 CL.THROTTLE 'flat:__rand_int__' "${FLAT_ARGS[@]}")
    local big=(bench "$1" "$PIPE" cellgate-big FLAT_BIG "$NP" -r "$BIG_KEYS"
               CL.THROTTLE 'key:__rand_int__' "${FLAT_ARGS[@]}")
    if [ $(($1 % 2)) = 1 ]; then "${small[@]}" && "${big[@]}"
    else "${big[@]}" && "${small[@]}"; fi
}

if [ "$aborted" = 0 ] && [ "$ONLY_SCRIPTS" != 1 ]; then
    start=$SECONDS
    echo "bench: filling $BIG_KEYS CL.THROTTLE keys for the memory and flat-cost runs"
    redis-cli -h 127.0.0.1 -p "$CG_PORT" FLUSHALL >/dev/null
    if memory_run CL.THROTTLE CL.THROTTLE __key__ "${FLAT_ARGS[@]}"; then
        for rep in $(seq "$REPS"); do
            flat_rep "$rep" || { aborted=1; break; }
        done
    fi
    stop_pid "$BIG_PID"
    BIG_PID=""
    if [ "$aborted" = 0 ]; then
        echo "bench: filling $BIG_KEYS RL.FIXED keys"
        memory_run RL.FIXED RL.FIXED __key__ 100 86400 || true
        stop_pid "$BIG_PID"
        BIG_PID=""
    fi
    echo "bench: memory and flat-cost runs took $((SECONDS - start)) s"
fi
echo "loadavg_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$WORK/meta.txt"
echo "big_keys=$BIG_KEYS" >>"$WORK/meta.txt"
echo "mem_keys=$MEM_KEYS" >>"$WORK/meta.txt"

# phase script out: run one of the bench scripts into out; a failure is
# reported with its output and fails the bench.
phase() {
    CELLGATE_BIN=$CELLGATE_BIN BENCH_SEQ=$SEQ BENCH_FILL=$FILL BENCH_HANDOFF=$HANDOFF bash "$1" >"$2" 2>&1 || {
        echo "bench: $1 failed" | tee -a "$FAILS" >&2
        cat "$2" >&2
        FAILED=1
    }
}

# ---- instructions per request (callgrind) --------------------------------
CG_OUT=$WORK/callgrind.txt
: >"$CG_OUT"
if [ "$aborted" = 0 ] && [ "$ONLY_SCRIPTS" != 1 ] && [ "${BENCH_CALLGRIND:-1}" != 0 ] &&
   command -v valgrind >/dev/null; then
    echo "bench: instructions per request under callgrind"
    # Its string lines only where the string rows measured cellgate.
    CG_STRINGS=$STR_CG phase bench/callgrind.sh "$CG_OUT"
fi

# ---- kernel and user CPU per request (perf) -------------------------------
if [ "$aborted" = 0 ] && [ "$ONLY_SCRIPTS" != 1 ] && [ "${BENCH_PERF:-1}" != 0 ] &&
   command -v perf >/dev/null; then
    echo "bench: server CPU by kernel and user space under perf"
    phase bench/perf.sh "$WORK/perf.txt"
fi

[ "$aborted" = 1 ] && FAILED=1
[ "$FAILED" = 1 ] && KEEP_WORK=1

# BENCH_ONLY_SCRIPTS=1 leaves latest.* alone: its report is
# bench/results/scripts.txt, its runs scripts.csv.
OUTDIR=bench/results
[ "$ONLY_SCRIPTS" = 1 ] && OUTDIR=$WORK/out
sum_rc=0
"$PY" bench/summarize.py --raw "$RAW" --meta "$WORK/meta.txt" --failures "$FAILS" \
    --memory "$MEM" --callgrind "$CG_OUT" \
    --pipeline "$PIPE" --outdir "$OUTDIR" || sum_rc=$?
if [ "$ONLY_SCRIPTS" = 1 ] && [ -f "$OUTDIR/latest.txt" ]; then
    cp "$OUTDIR/latest.txt" bench/results/scripts.txt
    cp "$RAW" bench/results/scripts.csv
    echo "bench: report in bench/results/scripts.txt, runs in bench/results/scripts.csv"
fi

if [ "$FAILED" = 1 ]; then
    echo "bench: FAILED: some runs failed (see above and $WORK)" >&2
    exit 1
fi
# summarize.py exits 3 when the bar fails; that only fails the bench when asked.
if [ "$sum_rc" = 3 ]; then
    [ "${BENCH_STRICT:-0}" = 1 ] && exit 1
    exit 0
fi
exit "$sum_rc"

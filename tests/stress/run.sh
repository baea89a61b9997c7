#!/usr/bin/env bash
# The stress run: one cellgate on a free loopback port, the driver
# (tests/stress/stress.c) against it for a bounded time, the daemon stopped
# by its PID and its log checked.
#
#   bash tests/stress/run.sh CELLGATE_BIN STRESS_BIN [daemon args...]
#
# Environment:
#   STRESS_SECONDS   how long the driver runs (default 30)
#   STRESS_SEED      the driver's seed (default: a new one, printed)
#   STRESS_WORKERS   worker clients (default 64)
#   STRESS_IO_TIMEOUT  seconds a reply may take before it is a failure
#                    (default 60; a sanitizer build is slow)
#   SANITIZE         1: the binary is the ASan+UBSan build; thread: the
#                    ThreadSanitizer build (tests/stress/tsan.supp)
#   STRESS_REFERENCE 1: the binary is Debian's redis-server (make
#                    stress-reference), started with the same limits in
#                    its own words and io-threads 2 with threaded reads;
#                    the driver runs with --reference
#
# The daemon runs with --io-threads 2, small output limits
# (client-output-pause-limit 256kb, client-output-hard-limit 8mb) and
# busy-reply-threshold 100, which the driver needs; extra arguments are
# added after those (--appendonly yes ...). It fails when the driver
# fails, when the daemon does not exit 0 within 30 s of SIGTERM, or when
# its log holds a sanitizer report.
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 CELLGATE_BIN STRESS_BIN [daemon args...]" >&2
    exit 2
fi
for f in "$1" "$2"; do
    if [ ! -x "$f" ] || [ -d "$f" ]; then
        echo "run.sh: $f is not an executable (build it first)" >&2
        exit 2
    fi
done
# Absolute paths: "cellgate" alone would be looked up in PATH.
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
driver="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
shift 2
command -v redis-cli >/dev/null || { echo "run.sh: redis-cli missing (apt-get install redis-tools)" >&2; exit 2; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
seconds="${STRESS_SECONDS:-30}"
workers="${STRESS_WORKERS:-64}"
io_timeout="${STRESS_IO_TIMEOUT:-60}"
sanitize="${SANITIZE:-0}"
seed_args=()
[ -n "${STRESS_SEED:-}" ] && seed_args=(--seed "$STRESS_SEED")
[ "${STRESS_REFERENCE:-0}" = 1 ] && seed_args+=(--reference)

case "$sanitize" in
1)
    export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=99:halt_on_error=1}"
    export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
    export LSAN_OPTIONS="${LSAN_OPTIONS:-exitcode=99}"
    ;;
thread)
    # Every report is printed (halt_on_error=0) and makes the exit code 66.
    export TSAN_OPTIONS="${TSAN_OPTIONS:-suppressions=$here/tsan.supp:halt_on_error=0:exitcode=66:second_deadlock_stack=1:history_size=4}"
    ;;
esac

work="$(mktemp -d "${TMPDIR:-/tmp}/cellgate-stress.XXXXXX")"
log="$work/cellgate.log"
pid=""
cleanup() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

start=$(date +%s)
started=0
for attempt in 1 2 3 4 5; do
    port="$(free_port)"
    if [ "${STRESS_REFERENCE:-0}" = 1 ]; then
        "$bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
            --io-threads 2 --io-threads-do-reads yes \
            --client-output-buffer-limit "normal 8mb 8mb 0 pubsub 8mb 8mb 0" \
            --busy-reply-threshold 100 --maxclients 2000 "$@" >>"$log" 2>&1 &
    else
        "$bin" --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
            --io-threads 2 --client-output-pause-limit 256kb \
            --client-output-hard-limit 8mb --busy-reply-threshold 100 \
            --maxclients 2000 "$@" >>"$log" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 1 600); do          # up to 60 s (a TSan build starts slowly)
        kill -0 "$pid" 2>/dev/null || break
        if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = "PONG" ]; then
            started=1
            break
        fi
        sleep 0.1
    done
    [ "$started" = 1 ] && break
    if kill -0 "$pid" 2>/dev/null; then
        echo "run.sh: cellgate (pid $pid) did not answer PING within 60 s" >&2
        tail -n 50 "$log" >&2
        exit 1
    fi
    wait "$pid" 2>/dev/null || true
    pid=""
    # Not a lost race for the port: give up.
    grep -q "listening socket\|Address already in use" "$log" || break
done
if [ "$started" != 1 ]; then
    echo "run.sh: cellgate did not start:" >&2
    tail -n 50 "$log" >&2
    exit 1
fi
echo "stress: daemon $bin (pid $pid, port $port, SANITIZE=$sanitize) $*"

rc=0
timeout -k 10 $((seconds + 3 * io_timeout + 120)) "$driver" --port "$port" \
    --seconds "$seconds" --workers "$workers" --io-timeout "$io_timeout" \
    "${seed_args[@]}" || rc=$?

problems=()
[ "$rc" = 0 ] || problems+=("the driver exited $rc")
if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 300); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -KILL "$pid" 2>/dev/null || true
        problems+=("cellgate did not exit within 30 s of SIGTERM (killed)")
    fi
    drc=0
    wait "$pid" || drc=$?
    [ "$drc" = 0 ] || problems+=("cellgate exited $drc after SIGTERM")
else
    drc=0
    wait "$pid" || drc=$?
    problems+=("cellgate had exited (code $drc) before the end of the run")
fi
pid=""
for marker in "ERROR: AddressSanitizer" "runtime error:" "LeakSanitizer" \
              "WARNING: ThreadSanitizer" "ThreadSanitizer:"; do
    if grep -q "$marker" "$log"; then
        problems+=("sanitizer report in the daemon's log ($marker)")
        break
    fi
done
end=$(date +%s)
if [ ${#problems[@]} -ne 0 ]; then
    for p in "${problems[@]}"; do echo "stress: FAIL $p" >&2; done
    echo "--- cellgate log ($log), last 200 lines ---" >&2
    tail -n 200 "$log" >&2
    echo "stress: $((end - start)) s, FAILED (SANITIZE=$sanitize)"
    exit 1
fi
rm -rf "$work"
echo "stress: $((end - start)) s, passed (SANITIZE=$sanitize)"

# bench/lib.sh: helpers shared by the bench scripts (sourced, not run).
# The sourcing script sets PY (a python3) and WORK (its temporary folder)
# and appends the servers it starts to PIDS; bench_cleanup stops them and
# removes WORK.

PIDS=()

# A port the kernel just handed out on 127.0.0.1 (then freed).
free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_pong port: wait up to 5 s for a server on port to answer PING.
wait_pong() {
    for _ in $(seq 100); do
        [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ] && return 0
        sleep 0.05
    done
    echo "$(basename "$0"): no server answers on port $1" >&2
    return 1
}

# Stop every server in PIDS (SIGTERM, then wait for it).
stop_pids() {
    for p in "${PIDS[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    PIDS=()
}

bench_cleanup() {
    stop_pids
    rm -rf "$WORK"
}

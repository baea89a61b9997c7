#!/usr/bin/env bash
# make docker-test: build the Dockerfile with podman (this machine has no
# Docker engine; tests/docker/podman-env.sh prepares podman), run the
# image with its port published on 127.0.0.1 only, and check what a user
# of the sidecar relies on. Prints "N passed, M failed"; exits 1 on failure.
set -uo pipefail
cd "$(dirname "$0")/../.."

SETUP=tests/docker/podman-env.sh
IMAGE=cellgate:docker-test
NAME=cellgate-docker-test-$$
passed=0
failed=0

ok()   { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cleanup() {
    podman rm -f "$NAME" "$NAME-opts" "$NAME-sick" "$NAME-p1" "$NAME-p2" >/dev/null 2>&1 || true
    podman volume rm -f "$NAME-data" >/dev/null 2>&1 || true
}
trap cleanup EXIT

eval "$(bash "$SETUP")" || { echo "podman setup failed"; exit 1; }

if ! podman build -q -t "$IMAGE" . >/tmp/cellgate-docker-build.log 2>&1; then
    cat /tmp/cellgate-docker-build.log
    echo "0 passed, 1 failed"
    exit 1
fi
ok "image builds"

size=$(podman image inspect "$IMAGE" --format '{{.Size}}')
check "runtime image under 100 MB ($size bytes)" test "$size" -lt 100000000
check "image runs as a non-root user" \
    test "$(podman image inspect "$IMAGE" --format '{{.Config.User}}')" = "10001:10001"

wait_pong() { # port
    for _ in $(seq 100); do
        [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ] && return 0
        sleep 0.1
    done
    return 1
}

port=$(free_port)
podman run -d --name "$NAME" -p "127.0.0.1:$port:6379" "$IMAGE" >/dev/null 2>&1
check "container answers PING on the published port" wait_pong "$port"
check "CL.THROTTLE through redis-cli" \
    test "$(redis-cli -p "$port" CL.THROTTLE user123 15 30 60 | tr '\n' ' ')" = "0 16 15 -1 2 "
check "a Lua script with cjson and bit (the image carries their libraries)" \
    test "$(redis-cli -p "$port" EVAL "return cjson.encode({bit.band(12, 10)})" 0)" = "[8]"
check "RL.FIXED's CALENDAR finds its zone in the image (tzdata's zoneinfo)" \
    test "$(redis-cli -p "$port" RL.FIXED cal 2 day CALENDAR Europe/Paris | head -n 3 | tr '\n' ' ')" = "0 2 1 "
check "a leap-second zone (right/) is not carried, and refused by name" \
    sh -c "redis-cli -p $port RL.FIXED cal2 2 day CALENDAR right/UTC | grep -q 'unknown time zone'"
check "HEALTHCHECK (cellgate --ping) reports healthy" \
    podman healthcheck run "$NAME"
check "SAVE writes the snapshot into /data as the unprivileged user" \
    test "$(redis-cli -p "$port" SAVE)" = OK
check "the daemon process is not root" \
    test "$(podman top "$NAME" huser 2>/dev/null | tail -n 1 | tr -d ' ')" = 10001
start=$(date +%s%N)
podman stop -t 10 "$NAME" >/dev/null 2>&1
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "stops on SIGTERM in under 2 s (${ms} ms)" test "$ms" -lt 2000
check "clean exit code after SIGTERM" \
    test "$(podman inspect "$NAME" --format '{{.State.ExitCode}}')" = 0
check "shutdown logged" sh -c "podman logs '$NAME' 2>&1 | grep -q 'Received SIGTERM'"

# Persistence on by default: the shipped config's save rules save on
# SIGTERM, so a container started again on the same /data volume continues
# every limiter instead of handing out a fresh quota.
podman volume create "$NAME-data" >/dev/null 2>&1
port=$(free_port)
podman run -d --name "$NAME-p1" -v "$NAME-data:/data" -p "127.0.0.1:$port:6379" "$IMAGE" \
    >/dev/null 2>&1
wait_pong "$port"
# CL.THROTTLE k 5 1 3600 3: 6 at most, 3 taken: 3 remain after the first
# call; a second one in the same key leaves 0, a forgotten key 3 again.
first=$(redis-cli -p "$port" CL.THROTTLE k 5 1 3600 3 | sed -n 3p)
podman stop -t 10 "$NAME-p1" >/dev/null 2>&1
port=$(free_port)
podman run -d --name "$NAME-p2" -v "$NAME-data:/data" -p "127.0.0.1:$port:6379" "$IMAGE" \
    >/dev/null 2>&1
wait_pong "$port"
check "a container restarted on its /data volume continues its limiters" \
    test "$first-$(redis-cli -p "$port" CL.THROTTLE k 5 1 3600 3 | sed -n 3p)" = "3-0"
check "the restarted container logged loading its snapshot" \
    sh -c "podman logs '$NAME-p2' 2>&1 | grep -q 'Loaded 1 keys'"

# Options are plain arguments after the image name.
port=$(free_port)
podman run -d --name "$NAME-opts" -p "127.0.0.1:$port:6379" "$IMAGE" \
    --maxmemory 64mb --requirepass s3cret >/dev/null 2>&1
check "options given as arguments reach the daemon" sh -c \
    "sleep 1; redis-cli -p $port -a s3cret --no-auth-warning CONFIG GET maxmemory | tail -n 1 | grep -qx 67108864"

# The health check follows the port the daemon was given; a daemon that
# stops answering (SIGSTOP) is reported unhealthy.
port=$(free_port)
podman run -d --name "$NAME-sick" -p "127.0.0.1:$port:7000" "$IMAGE" --port 7000 >/dev/null 2>&1
check "a daemon on --port 7000 answers there" wait_pong "$port"
check "HEALTHCHECK follows --port 7000 and reports healthy" \
    podman healthcheck run "$NAME-sick"
podman kill --signal STOP "$NAME-sick" >/dev/null 2>&1
check "HEALTHCHECK fails when the daemon does not answer" \
    sh -c "! podman healthcheck run '$NAME-sick' >/dev/null 2>&1"
podman kill --signal CONT "$NAME-sick" >/dev/null 2>&1

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

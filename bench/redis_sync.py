#!/usr/bin/python3
"""bench/redis_sync.py: a full sync from a running redis-server 7.0 into
cellgate, beside the same sync into a second redis-server.

Run from the repository root after `make`. In one invocation: a
redis-server primary filled with BENCH_SYNC_KEYS keys (DEBUG POPULATE);
then, for repl-diskless-sync no and yes (delay 0), BENCH_REPS rounds of:
a fresh cellgate and a fresh redis-server each sent REPLICAOF in turn,
timed from REPLICAOF to master_link_status:up (INFO polled every 5 ms),
each replica stopped before the next starts. Medians per replica and mode.

Knobs: BENCH_REPS (3), BENCH_SYNC_KEYS (1000000), CELLGATE_BIN. Prints the
table and writes bench/results/redis_sync.txt.
"""
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CELLGATE = os.environ.get("CELLGATE_BIN", os.path.join(REPO, "cellgate"))
REDIS = "/usr/bin/redis-server"
REPS = int(os.environ.get("BENCH_REPS", "3"))
KEYS = int(os.environ.get("BENCH_SYNC_KEYS", "1000000"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cli(port, *args):
    return subprocess.run(["redis-cli", "-p", str(port)] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=600).stdout


def wait_pong(port, proc):
    for _ in range(3000):
        if proc.poll() is not None:
            raise SystemExit("server on port %d exited" % port)
        if cli(port, "PING").strip() == "PONG":
            return
        time.sleep(0.01)
    raise SystemExit("server on port %d never answered" % port)


def start(argv, port, work):
    proc = subprocess.Popen(argv, stdout=open(os.path.join(work, "%d.log" % port), "w"),
                            stderr=subprocess.STDOUT)
    wait_pong(port, proc)
    return proc


def stop(proc):
    proc.terminate()
    proc.wait(60)


def replica(kind, work):
    port = free_port()
    d = tempfile.mkdtemp(dir=work)
    if kind == "cellgate":
        argv = [CELLGATE, "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                "--save", ""]
    else:
        argv = [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                "--save", "", "--appendonly", "no"]
    return port, start(argv, port, work)


def timed_sync(port, primary_port):
    t0 = time.monotonic()
    cli(port, "REPLICAOF", "127.0.0.1", primary_port)
    while "master_link_status:up" not in cli(port, "INFO", "replication"):
        if time.monotonic() - t0 > 600:
            raise SystemExit("no sync in 600 s")
        time.sleep(0.005)
    return time.monotonic() - t0


def main():
    work = tempfile.mkdtemp(prefix="bench-redis-sync-")
    pport = free_port()
    primary = start([REDIS, "--port", str(pport), "--bind", "127.0.0.1", "--dir", work,
                     "--save", "", "--appendonly", "no", "--enable-debug-command", "yes",
                     "--repl-diskless-sync-delay", "0"], pport, work)
    lines = []
    try:
        cli(pport, "DEBUG", "POPULATE", KEYS)
        lines.append("keys: %s" % cli(pport, "DBSIZE").strip())
        for diskless in ("no", "yes"):
            cli(pport, "CONFIG", "SET", "repl-diskless-sync", diskless)
            times = {"cellgate": [], "redis-server": []}
            for _ in range(REPS):
                for kind in times:
                    port, proc = replica(kind, work)
                    try:
                        times[kind].append(timed_sync(port, pport))
                        if cli(port, "DBSIZE").strip() != str(KEYS):
                            raise SystemExit("%s synced %s keys" % (kind, cli(port, "DBSIZE")))
                    finally:
                        stop(proc)
            for kind, ts in times.items():
                lines.append("repl-diskless-sync %-3s %-12s median %.2f s  (%s)"
                             % (diskless, kind, statistics.median(ts),
                                ", ".join("%.2f" % t for t in ts)))
    finally:
        stop(primary)
        shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    os.makedirs(os.path.join(REPO, "bench", "results"), exist_ok=True)
    with open(os.path.join(REPO, "bench", "results", "redis_sync.txt"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""bench/replication.py: what replicas cost a primary.

Run from the repository root after `make` (`make bench-replication`;
`make bench` runs it last). In one invocation:

  1. CPU: two primaries on free loopback ports, one with two replicas
     (each its own cellgate) and one alone; BENCH_REPS rounds of
     redis-benchmark -c 50 -P 16 -r 100000 CL.THROTTLE against each in
     turn; the primary's own CPU per request (threads' schedstat plus
     reaped children, as bench/journal.py counts it), medians, ratio.
  2. A full sync at BENCH_SYNC_KEYS keys: a replica attaches while one
     client PINGs the primary in a loop; the longest PING round trip, and
     how long the sync took.

Knobs: BENCH_REPS (5), BENCH_N (1000000), BENCH_SYNC_KEYS (1000000),
CELLGATE_BIN, BENCH_FILL. Writes bench/results/replication.txt.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from journal import Daemon, benchmark, ping_loop, FILL  # noqa: E402

REPS = int(os.environ.get("BENCH_REPS", "5"))
N = int(os.environ.get("BENCH_N", "1000000"))
SYNC_KEYS = int(os.environ.get("BENCH_SYNC_KEYS", "1000000"))


def attach(replica, primary):
    replica.cli("REPLICAOF", "127.0.0.1", str(primary.port))
    for _ in range(600):
        if "master_link_status:up" in replica.cli("INFO", "replication"):
            return
        time.sleep(0.05)
    raise SystemExit("bench/replication.py: a replica did not sync")


def cost(root, out):
    # The primaries run on CPU 0, the replicas (and redis-benchmark, by the
    # scheduler's choice) on the other: replicas on machines of their own
    # would not take the primary's core; sharing it, their wakeups would
    # bill the primary for context switches that are this VM's, not
    # replication's.
    pin = 0 if (os.cpu_count() or 1) >= 2 else None
    alone = Daemon(root, "alone", [], cpu=pin)
    primary = Daemon(root, "primary", [], cpu=pin)
    replicas = [Daemon(root, "replica%d" % i, [], nice=19,
                       cpu=None if pin is None else 1) for i in range(2)]
    try:
        for r in replicas:
            attach(r, primary)
        results = {"alone": [], "2 replicas": []}
        for d in (alone, primary):
            benchmark(d, 16, 200000)            # warm-up
        for rep in range(REPS):
            pairs = [("alone", alone), ("2 replicas", primary)]
            for name, d in (pairs if rep % 2 == 0 else pairs[::-1]):
                results[name].append(benchmark(d, 16, N))
                print("  rep %d  %-11s %.3f us/req  %.0f rps"
                      % ((rep + 1, name) + results[name][-1][:2]), flush=True)
    finally:
        for d in [alone, primary] + replicas:
            d.stop()
    med = {k: statistics.median(x[0] for x in v) for k, v in results.items()}
    out.append("primary's server CPU per pipelined CL.THROTTLE (-c 50 -P 16 "
               "-r 100000, %d x %d requests, medians)" % (REPS, N))
    out.append("  no replica      %.3f us" % med["alone"])
    out.append("  two replicas    %.3f us  (%.3fx)" % (med["2 replicas"],
                                                     med["2 replicas"] / med["alone"]))


def sync_stall(root, out):
    primary = Daemon(root, "big", [])
    # On this 2-core VM the replica (loading 50 MB) and the primary's
    # forked writer would otherwise take the primary's core from it: the
    # replica runs at the lowest priority, as if on another machine.
    replica = Daemon(root, "late", [], nice=19)
    try:
        subprocess.run([FILL, str(primary.port), "key:", "0", str(SYNC_KEYS),
                        "CL.THROTTLE", "__key__", "15", "30", "3600"],
                       check=True, capture_output=True, timeout=600)
        stop, worst = threading.Event(), [0.0]
        t = threading.Thread(target=ping_loop, args=(primary.port, stop, worst))
        t.start()
        time.sleep(0.5)
        before = worst[0]
        t0 = time.monotonic()
        attach(replica, primary)
        took = time.monotonic() - t0
        time.sleep(0.3)
        stop.set()
        t.join()
        out.append("full sync of %s keys: %.2f s; longest PING on the primary "
                   "%.1f ms (%.1f ms before it)"
                   % (replica.cli("DBSIZE"), took, worst[0] * 1000, before * 1000))
    finally:
        primary.stop()
        replica.stop()


def main():
    root = tempfile.mkdtemp(prefix="cellgate-repl-bench-")
    out = []
    try:
        cost(root, out)
        sync_stall(root, out)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    text = "\n".join(out) + "\n"
    print(text, end="")
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/replication.txt", "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())

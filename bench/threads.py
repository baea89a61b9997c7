#!/usr/bin/python3
"""bench/threads.py: what the I/O threads cost and buy (issue 35, item 3).

Run from the repository root after `make` (`make bench-threads` does both).
In one invocation it starts two cellgate daemons on free loopback ports,
`--io-threads 1` and `--io-threads THREADS_N` (2), fills both with the
same KEYS keys (bench-fill), then runs THREADS_REPS (5) repetitions, each
a non-pipelined redis-benchmark run (-c 50 -P 1, THREADS_REQ requests of
`CL.THROTTLE key:__rand_int__ 100000 1 86400` over the keys: every request
allowed, every key live, the same work in every run) against each daemon,
the order alternating. Around every run it reads each thread's CPU time
from /proc/PID/task/TID/schedstat (ns) and names the thread by its comm:
the main thread, which executes every command, and io_thd_1... Per run:

  - the executor's CPU per request: the main thread's; with io-threads 1
    the only thread, which does the socket work too;
  - every thread's CPU per request, and their sum;
  - the capacity the executor's cost implies: 1 / (its CPU per request),
    requests a second one core of executor could decide;
  - p50 and p99 latency from redis-benchmark (--csv).

The report gives medians over the repetitions and the ratios of the medians
(threaded / single), with the paired ratio of each repetition beside them:
the bars are executor <= 0.25x and total <= 1.25x the single thread's CPU
per request. THREADS_PIN=1 also runs both pinned (the server on CPU 1, the
client on CPU 0; needs two CPUs) and reports those latencies beside.

Knobs: THREADS_REPS (5), THREADS_REQ (200000), THREADS_N (2), KEYS
(100000), THREADS_PIN (0), CELLGATE_BIN (./cellgate), THREADS_OUT
(bench/results/threads.txt).
"""
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BIN = os.path.abspath(os.environ.get("CELLGATE_BIN", "./cellgate"))
REPS = int(os.environ.get("THREADS_REPS", "5"))
REQ = int(os.environ.get("THREADS_REQ", "200000"))
NTHREADS = int(os.environ.get("THREADS_N", "2"))
KEYS = int(os.environ.get("KEYS", "100000"))
PIN = os.environ.get("THREADS_PIN", "0") == "1"
OUT = os.environ.get("THREADS_OUT", "bench/results/threads.txt")
LIMIT = ["CL.THROTTLE", "key:__rand_int__", "100000", "1", "86400"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    def __init__(self, root, name, threads, cpus=None):
        self.name = name
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir)
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "log"), "wb")
        self.proc = subprocess.Popen(
            ["taskset", "-c", cpus] * (cpus is not None) +
            [BIN, "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
             self.dir, "--save", "", "--io-threads", str(threads)],
            stdout=self.log, stderr=self.log)
        for _ in range(200):
            if self.cli("PING") == "PONG":
                return
            time.sleep(0.05)
        raise SystemExit("bench/threads.py: %s did not start" % name)

    def cli(self, *args):
        p = subprocess.run(["redis-cli", "-p", str(self.port)] + list(args),
                           capture_output=True, text=True)
        return p.stdout.strip()

    def threads_cpu(self):
        """{thread name: CPU ns} of the daemon's threads."""
        out = {}
        task_dir = "/proc/%d/task" % self.proc.pid
        for tid in os.listdir(task_dir):
            try:
                with open(os.path.join(task_dir, tid, "comm")) as f:
                    name = f.read().strip()
                with open(os.path.join(task_dir, tid, "schedstat")) as f:
                    ns = int(f.read().split()[0])
            except OSError:
                continue                    # a thread that just ended
            if not name.startswith("io_thd"):
                name = "main"
            out[name] = out.get(name, 0) + ns
        return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)
        self.log.close()


def run(d, client_cpu=None):
    """Per-thread CPU us per request, p50 and p99 ms of one run."""
    before = d.threads_cpu()
    cmd = (["taskset", "-c", client_cpu] * (client_cpu is not None) +
           ["redis-benchmark", "-p", str(d.port), "-c", "50", "-P", "1",
            "-n", str(REQ), "-r", str(KEYS), "--csv"] + LIMIT)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    after = d.threads_cpu()
    per = {k: (after.get(k, 0) - before.get(k, 0)) / 1000.0 / REQ
           for k in after}
    row = [r for r in p.stdout.splitlines() if r.startswith('"CL.THROTTLE')]
    fields = [f.strip('"') for f in row[-1].split(",")] if row else []
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
    # "p95_latency_ms","p99_latency_ms","max_latency_ms"
    p50 = float(fields[4]) if len(fields) > 6 else float("nan")
    p99 = float(fields[6]) if len(fields) > 6 else float("nan")
    return per, p50, p99


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    root = tempfile.mkdtemp(prefix="cellgate-threads-")
    single = Daemon(root, "single", 1)
    threaded = Daemon(root, "threaded", NTHREADS)
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    for d in (single, threaded):
        warm = subprocess.run(
            ["redis-benchmark", "-p", str(d.port), "-c", "50", "-P", "16",
             "-n", str(KEYS * 4), "-r", str(KEYS), "-q"] + LIMIT,
            capture_output=True, text=True, timeout=900)
        if warm.returncode != 0:
            raise SystemExit("bench/threads.py: warm-up failed: " + warm.stderr)
    rows = []
    for rep in range(REPS):
        order = (single, threaded) if rep % 2 == 0 else (threaded, single)
        got = {}
        for d in order:
            got[d.name] = run(d)
        rows.append(got)
        s_per, _, s99 = got["single"]
        t_per, _, t99 = got["threaded"]
        say("rep %d: single %.2f us/req (p99 %.2f ms); threaded main %.2f, "
            "%s, total %.2f us/req (p99 %.2f ms)" % (
                rep + 1, sum(s_per.values()), s99, t_per.get("main", 0),
                ", ".join("%s %.2f" % (k, v) for k, v in sorted(t_per.items())
                          if k != "main"), sum(t_per.values()), t99))
    pinned = None
    if PIN and os.cpu_count() >= 2:
        for d in (single, threaded):
            d.stop()
        single = Daemon(root, "single-pinned", 1, cpus="1")
        threaded = Daemon(root, "threaded-pinned", NTHREADS, cpus="1")
        pinned = {d.name: run(d, client_cpu="0") for d in (single, threaded)}
    single.stop()
    threaded.stop()

    s_tot = [sum(r["single"][0].values()) for r in rows]
    t_main = [r["threaded"][0].get("main", 0) for r in rows]
    t_tot = [sum(r["threaded"][0].values()) for r in rows]
    pair_exec = [m / s for m, s in zip(t_main, s_tot) if s > 0]
    pair_tot = [t / s for t, s in zip(t_tot, s_tot) if s > 0]
    say()
    say("cellgate %s, io-threads 1 against io-threads %d, CL.THROTTLE %s, "
        "-c 50 -P 1, %d requests a run over %d keys, %d repetitions "
        "(medians; paired ratios per repetition in brackets)" % (
            BIN, NTHREADS, " ".join(LIMIT[2:]), REQ, KEYS, REPS))
    say("load average at the end: %s" % open("/proc/loadavg").read().split()[0])
    say()
    say("| | single thread | io-threads %d | ratio |" % NTHREADS)
    say("|---|---|---|---|")
    say("| executor (main thread) CPU per request | %.2f us | %.2f us | "
        "**%.2fx** (%.2f-%.2f) |" % (med(s_tot), med(t_main),
                                      med(t_main) / med(s_tot),
                                      min(pair_exec), max(pair_exec)))
    say("| all threads' CPU per request | %.2f us | %.2f us | **%.2fx** "
        "(%.2f-%.2f) |" % (med(s_tot), med(t_tot), med(t_tot) / med(s_tot),
                          min(pair_tot), max(pair_tot)))
    say("| executor capacity (1 / its CPU per request) | %.0f req/s | "
        "%.0f req/s | %.2fx |" % (1e6 / med(s_tot), 1e6 / med(t_main),
                                  med(s_tot) / med(t_main)))
    say("| p50 / p99 latency | %.3f / %.3f ms | %.3f / %.3f ms | |" % (
        med([r["single"][1] for r in rows]), med([r["single"][2] for r in rows]),
        med([r["threaded"][1] for r in rows]),
        med([r["threaded"][2] for r in rows])))
    io = {}
    for r in rows:
        for k, v in r["threaded"][0].items():
            if k != "main":
                io.setdefault(k, []).append(v)
    for k in sorted(io):
        say("| %s CPU per request | | %.2f us | |" % (k, med(io[k])))
    if pinned:
        say()
        say("pinned (server on CPU 1, redis-benchmark on CPU 0): p50/p99 "
            "single %.3f/%.3f ms, io-threads %d %.3f/%.3f ms" % (
                pinned["single-pinned"][1], pinned["single-pinned"][2],
                NTHREADS, pinned["threaded-pinned"][1],
                pinned["threaded-pinned"][2]))
    bar_exec = med(t_main) / med(s_tot) <= 0.25
    bar_tot = med(t_tot) / med(s_tot) <= 1.25
    say()
    say("bars: executor <= 0.25x: %s; total <= 1.25x: %s" % (
        "met" if bar_exec else "missed", "met" if bar_tot else "missed"))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("bench/threads.py: report in %s" % OUT)


if __name__ == "__main__":
    sys.exit(main())

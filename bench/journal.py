#!/usr/bin/python3
"""bench/journal.py: what the journal (appendonly) costs.

Run from the repository root after `make` (`make bench-journal` does both;
`make bench` runs it after bench/run.sh). In one invocation it starts three
cellgate daemons on free loopback ports, each with its own folder and no
snapshots: journal off, appendonly yes + everysec, appendonly yes + always.
Then:

  1. CPU: BENCH_REPS rounds of redis-benchmark -c 50 -P 16 (random keys,
     -r 100000) against each, in a rotating order; the server's own CPU
     time (its threads' /proc schedstat, plus the rewrites' children it
     reaped: a run waits for a rewrite it started) per request, medians,
     and the ratio to the journal-off daemon. The same at -P 1 for throughput and
     p99 under always.
  2. Bytes: a fresh everysec daemon (no automatic rewrite) takes BENCH_N
     pipelined decisions over 100,000 keys, then over 100 hot keys; the
     journal's growth per decision and per record (records counted by
     reading the file).
  3. Compaction: BENCH_REWRITE_KEYS keys (bench-fill), then BGREWRITEAOF
     while one client PINGs in a loop: the longest PING round trip and the
     fork time the log reports.

Knobs: BENCH_REPS (5), BENCH_N (1000000), BENCH_N_P1 (100000),
BENCH_REWRITE_KEYS (1000000), CELLGATE_BIN (./cellgate), BENCH_FILL
(build/bench-fill). Writes bench/results/journal.txt.
"""
import os
import re
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

BIN = os.path.abspath(os.environ.get("CELLGATE_BIN", "./cellgate"))
FILL = os.path.abspath(os.environ.get("BENCH_FILL", "build/bench-fill"))
REPS = int(os.environ.get("BENCH_REPS", "5"))
N = int(os.environ.get("BENCH_N", "1000000"))
N_P1 = int(os.environ.get("BENCH_N_P1", "100000"))
REWRITE_KEYS = int(os.environ.get("BENCH_REWRITE_KEYS", "1000000"))
CLK_TCK = os.sysconf("SC_CLK_TCK")
LIMIT = ["CL.THROTTLE", "key:__rand_int__", "15", "30", "60"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    def __init__(self, root, name, args, nice=0, cpu=None):
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir)
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "log"), "wb")
        self.proc = subprocess.Popen(
            ["taskset", "-c", str(cpu)] * (cpu is not None) +
            ["nice", "-n", str(nice)] * (nice != 0) +
            [BIN, "--port", str(self.port), "--bind", "127.0.0.1", "--dir",
             self.dir, "--save", ""] + args, stdout=self.log, stderr=self.log)
        for _ in range(200):
            if self.cli("PING") == "PONG":
                return
            time.sleep(0.05)
        raise SystemExit("bench/journal.py: %s did not start" % name)

    def cli(self, *args):
        p = subprocess.run(["redis-cli", "-p", str(self.port)] + list(args),
                           capture_output=True, text=True)
        return p.stdout.strip()

    def info(self, field):
        m = re.search(r"^%s:(\S+)" % field, self.cli("INFO", "persistence"), re.M)
        return m.group(1) if m else None

    def cpu_seconds(self):
        """CPU time of the server's threads (schedstat: ns, not 10 ms
        ticks) and of the children it reaped (the rewrites' forked writers:
        their work is the journal's too)."""
        ns = 0
        task_dir = "/proc/%d/task" % self.proc.pid
        for tid in os.listdir(task_dir):
            try:
                with open(os.path.join(task_dir, tid, "schedstat")) as f:
                    ns += int(f.read().split()[0])
            except OSError:
                pass                        # a thread that just ended
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return ns / 1e9 + (int(fields[13]) + int(fields[14])) / CLK_TCK

    def settle(self):
        """Wait for a rewrite started by the last run to finish and be
        reaped, so its CPU counts for that run."""
        for _ in range(600):
            if self.info("aof_rewrite_in_progress") in (None, "0"):
                return
            time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)
        self.log.close()


def benchmark(d, pipe, n, keyspace=100000):
    """(server CPU us per request, requests/s, p99 ms) of one run."""
    c0 = d.cpu_seconds()
    p = subprocess.run(["redis-benchmark", "-p", str(d.port), "-c", "50",
                        "-P", str(pipe), "-n", str(n), "-r", str(keyspace),
                        "--csv"] + LIMIT, capture_output=True, text=True,
                       timeout=600)
    d.settle()
    c1 = d.cpu_seconds()
    rows = [line.replace('"', "").split(",") for line in p.stdout.splitlines()]
    if p.returncode != 0 or len(rows) < 2:
        raise SystemExit("bench/journal.py: redis-benchmark failed: %s" % p.stderr)
    head, vals = rows[0], rows[1]
    rps = float(vals[head.index("rps")])
    p99 = float(vals[head.index("p99_latency_ms")])
    return 1e6 * (c1 - c0) / n, rps, p99


def journal_records(folder):
    """Records and bytes of the incr files in folder."""
    count = size = 0
    for name in os.listdir(folder):
        if not name.endswith(".incr.journal"):
            continue
        data = open(os.path.join(folder, name), "rb").read()
        off = 8
        while off + 12 <= len(data):
            n, = struct.unpack_from("<I", data, off)
            off += 12 + n
            count += 1
        size += len(data) - 8
    return count, size


def cost(root, out):
    modes = [("off", []),
             ("everysec", ["--appendonly", "yes", "--appendfsync", "everysec"]),
             ("always", ["--appendonly", "yes", "--appendfsync", "always"])]
    daemons = {name: Daemon(root, name, args) for name, args in modes}
    results = {name: [] for name, _ in modes}
    try:
        for d in daemons.values():          # warm-up: fill the key range
            benchmark(d, 16, 200000)
        for rep in range(REPS):
            order = [m for m, _ in modes]
            order = order[rep % 3:] + order[:rep % 3]
            for name in order:
                results[name].append(benchmark(daemons[name], 16, N))
                print("  rep %d  -P 16  %-9s %.3f us/req  %.0f rps  p99 %.2f ms"
                      % ((rep + 1, name) + results[name][-1]), flush=True)
        p1 = {}
        for name in ("off", "always"):
            p1[name] = [benchmark(daemons[name], 1, N_P1) for _ in range(3)]
    finally:
        for d in daemons.values():
            d.stop()
    med = {k: [statistics.median(x[i] for x in v) for i in range(3)]
           for k, v in results.items()}
    out.append("server CPU per pipelined CL.THROTTLE (redis-benchmark -c 50 "
               "-P 16 -r 100000, %d x %d requests, medians)" % (REPS, N))
    out.append("  %-22s %12s %10s %12s %10s" % ("mode", "cpu us/req", "vs off",
                                                "rps", "p99 ms"))
    for name, _ in modes:
        cpu, rps, p99 = med[name]
        out.append("  %-22s %12.3f %9.3fx %12.0f %10.2f"
                   % (name if name == "off" else "appendonly " + name, cpu,
                      cpu / med["off"][0], rps, p99))
    out.append("-P 1 (3 x %d requests, medians)" % N_P1)
    for name in ("off", "always"):
        cpu, rps, p99 = [statistics.median(x[i] for x in p1[name])
                         for i in range(3)]
        out.append("  %-22s %12.3f %10s %12.0f %10.2f"
                   % (name if name == "off" else "appendonly always", cpu, "",
                      rps, p99))


def sizes(root, out):
    d = Daemon(root, "bytes", ["--appendonly", "yes", "--appendfsync",
                               "everysec", "--auto-aof-rewrite-percentage", "0"])
    folder = os.path.join(d.dir, "appendonlydir")
    try:
        out.append("journal bytes (appendonly yes, everysec, %d decisions "
                   "at -P 16 each)" % N)
        for label, keyspace in (("100,000 keys", 100000), ("100 hot keys", 100)):
            r0, b0 = journal_records(folder)
            benchmark(d, 16, N, keyspace)
            time.sleep(0.5)
            r1, b1 = journal_records(folder)
            out.append("  %-14s %8.1f bytes/decision %8.1f bytes/record "
                       "%6.3f records/decision" % (label, (b1 - b0) / N,
                                                  (b1 - b0) / max(1, r1 - r0),
                                                  (r1 - r0) / N))
    finally:
        d.stop()


def ping_loop(port, stop, worst):
    s = socket.create_connection(("127.0.0.1", port))
    while not stop.is_set():
        t0 = time.perf_counter()
        s.sendall(b"PING\r\n")
        got = b""
        while not got.endswith(b"\r\n"):
            got += s.recv(64)
        worst[0] = max(worst[0], time.perf_counter() - t0)
    s.close()


def compaction(root, out):
    d = Daemon(root, "rewrite", ["--appendonly", "yes", "--appendfsync",
                                 "everysec", "--auto-aof-rewrite-percentage",
                                 "0"])
    try:
        subprocess.run([FILL, str(d.port), "key:", "0", str(REWRITE_KEYS),
                        "CL.THROTTLE", "__key__", "15", "30", "3600"],
                       check=True, capture_output=True, timeout=600)
        time.sleep(1.0)
        stop, worst = threading.Event(), [0.0]
        t = threading.Thread(target=ping_loop, args=(d.port, stop, worst))
        t.start()
        time.sleep(0.5)
        base_worst = worst[0]
        t0 = time.monotonic()
        d.cli("BGREWRITEAOF")
        while d.info("aof_rewrite_in_progress") != "0" or \
                d.info("aof_rewrites") == "0":
            time.sleep(0.01)
        took = time.monotonic() - t0
        time.sleep(0.2)
        stop.set()
        t.join()
        log = open(os.path.join(d.dir, "log")).read()
        fork = re.findall(r"rewrite started by pid \d+ \(fork took (\d+) us\)", log)
        out.append("compaction at %d keys: BGREWRITEAOF took %.2f s, fork %s us, "
                   "longest PING %.1f ms (%.1f ms before it)"
                   % (int(d.cli("DBSIZE")), took, fork[-1] if fork else "?",
                      worst[0] * 1000, base_worst * 1000))
    finally:
        d.stop()


def main():
    for tool in ("redis-benchmark", "redis-cli"):
        if shutil.which(tool) is None:
            raise SystemExit("bench/journal.py: %s not found (make deps)" % tool)
    root = tempfile.mkdtemp(prefix="cellgate-journal-bench-")
    out = []
    try:
        print("bench/journal.py: %s, %d CPUs" % (BIN, os.cpu_count()), flush=True)
        cost(root, out)
        sizes(root, out)
        compaction(root, out)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    text = "\n".join(out) + "\n"
    print(text, end="")
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/journal.txt", "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())

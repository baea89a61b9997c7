#!/usr/bin/python3
"""bench/cluster_reshard.py: redis-cli --cluster reshard of every slot, and
BENCH_RESHARD_KEYS INCR+EXPIRE counters, from one primary to another:
cellgate beside redis-server 7.0.15, in one invocation.

For each server: two nodes started with cluster-enabled yes (defaults
otherwise: nodes.conf fsynced on every slot change, as Redis does), all
16384 slots added to the first, the two made to MEET; the counters written
to the first through redis-cli --pipe (INCR, then EXPIRE 3600, as the
INCR/EXPIRE pattern does); then, timed, Debian's redis-cli --cluster
reshard --cluster-slots 16384 --cluster-yes from the first to the second
(its default pipeline of 10 keys per MIGRATE). Meanwhile a prober pings the
source node every millisecond on its own connection and records the
longest wait for a reply: the pause a client sees on a migrating node.

Knobs: BENCH_RESHARD_KEYS (1000000), BENCH_REPS (1: rounds of one run
each, alternated), CELLGATE_BIN. Prints
keys per second, the reshard's time, the prober's longest and 99.9th
percentile wait, and writes bench/results/cluster_reshard.txt.
"""
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CELLGATE = os.environ.get("CELLGATE_BIN", os.path.join(REPO, "cellgate"))
REDIS = "/usr/bin/redis-server"
KEYS = int(os.environ.get("BENCH_RESHARD_KEYS", "1000000"))
REPS = int(os.environ.get("BENCH_REPS", "1"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def cli(port, *args, timeout=600):
    out = subprocess.run(["redis-cli", "-p", str(port)] + [str(a) for a in args],
                         capture_output=True, text=True, timeout=timeout)
    return out.stdout.strip()


def wait(pred, what, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise SystemExit("timed out waiting for " + what)


class Node:
    def __init__(self, binary, work):
        self.port, self.bus = free_port(), free_port()
        while self.bus == self.port:
            self.bus = free_port()
        self.work = os.path.join(work, str(self.port))
        os.makedirs(self.work)
        argv = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.work,
                "--save", "", "--appendonly", "no", "--cluster-enabled", "yes",
                "--cluster-port", str(self.bus), "--cluster-config-file", "nodes.conf"]
        self.proc = subprocess.Popen(argv, stdout=open(os.path.join(self.work, "log"), "w"),
                                     stderr=subprocess.STDOUT)
        wait(lambda: self.proc.poll() is None and cli(self.port, "PING") == "PONG",
             "node on port %d" % self.port, 30)
        self.id = cli(self.port, "CLUSTER", "MYID")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)


def fill(port, keys):
    """INCR + EXPIRE for each counter, through redis-cli --pipe."""
    def resp(*args):
        out = "*%d\r\n" % len(args)
        for a in args:
            a = str(a)
            out += "$%d\r\n%s\r\n" % (len(a.encode()), a)
        return out
    proto = "".join(resp("INCR", "c:%d" % i) + resp("EXPIRE", "c:%d" % i, 3600)
                    for i in range(keys)).encode()
    out = subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=proto,
                         capture_output=True, timeout=600)
    if b"errors: 0" not in out.stdout:
        raise SystemExit("fill failed: %r" % out.stdout[-300:])


class Prober(threading.Thread):
    """PING every millisecond; the waits for replies."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.waits = []
        self.stop_event = threading.Event()

    def run(self):
        while not self.stop_event.is_set():
            t = time.perf_counter()
            self.sock.sendall(b"PING\r\n")
            got = b""
            while not got.endswith(b"\r\n"):
                got += self.sock.recv(64)
            self.waits.append(time.perf_counter() - t)
            time.sleep(0.001)

    def finish(self):
        self.stop_event.set()
        self.join(10)
        self.sock.close()
        w = sorted(self.waits)
        return w[-1], w[int(len(w) * 0.999)]


def one_run(binary):
    work = tempfile.mkdtemp(prefix="bench-reshard-")
    a, b = Node(binary, work), Node(binary, work)
    try:
        cli(a.port, "CLUSTER", "ADDSLOTSRANGE", 0, 16383)
        cli(a.port, "CLUSTER", "MEET", "127.0.0.1", b.port, b.bus)
        wait(lambda: all("cluster_state:ok" in cli(n.port, "CLUSTER", "INFO") and
                         "cluster_known_nodes:2" in cli(n.port, "CLUSTER", "INFO")
                         for n in (a, b)), "the two nodes to agree")
        fill(a.port, KEYS)
        assert int(cli(a.port, "DBSIZE")) == KEYS
        prober = Prober(a.port)
        prober.start()
        t = time.monotonic()
        out = subprocess.run(["redis-cli", "--cluster", "reshard", "127.0.0.1:%d" % a.port,
                              "--cluster-from", a.id, "--cluster-to", b.id,
                              "--cluster-slots", "16384", "--cluster-yes"],
                             capture_output=True, text=True, timeout=3600)
        elapsed = time.monotonic() - t
        longest, p999 = prober.finish()
        if out.returncode != 0:
            raise SystemExit("reshard failed:\n" + out.stdout[-2000:] + out.stderr[-2000:])
        assert int(cli(b.port, "DBSIZE")) == KEYS and int(cli(a.port, "DBSIZE")) == 0
        return elapsed, longest, p999
    finally:
        a.stop()
        b.stop()
        shutil.rmtree(work, ignore_errors=True)


def main():
    rows = []
    servers = (("cellgate", CELLGATE), ("redis-server 7.0", REDIS))
    # Alternated, cellgate then Redis in each round: a slow spell of the
    # machine falls on both.
    results = {name: [] for name, _ in servers}
    for _ in range(REPS):
        for name, binary in servers:
            results[name].append(one_run(binary))
    for name, _ in servers:
        runs = results[name]
        elapsed = statistics.median(r[0] for r in runs)
        longest = max(r[1] for r in runs)
        p999 = statistics.median(r[2] for r in runs)
        rows.append((name, KEYS / elapsed, elapsed, longest * 1000, p999 * 1000))
    lines = ["redis-cli --cluster reshard of 16384 slots and %d INCR+EXPIRE counters, "
             "one primary to another (median of %d)" % (KEYS, REPS),
             "%-18s %12s %10s %16s %16s" % ("server", "keys/s", "seconds",
                                            "longest PING ms", "p99.9 PING ms")]
    for name, kps, el, lo, p in rows:
        lines.append("%-18s %12.0f %10.1f %16.1f %16.2f" % (name, kps, el, lo, p))
    lines.append("cellgate / redis keys per second: %.2f" % (rows[0][1] / rows[1][1]))
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    os.makedirs(os.path.join(REPO, "bench", "results"), exist_ok=True)
    with open(os.path.join(REPO, "bench", "results", "cluster_reshard.txt"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()

"""What forwarding a ShouldRateLimit descriptor to its owner costs, next to
deciding it where the call lands (cluster-mode yes, two nodes).

Node A serves slots 0-8191, node B 8192-16383. Every call goes to A's
grpc-port from grpcio, one at a time (BENCH_N calls a rep), with one
descriptor whose counter is either A's (decided locally) or B's (A asks B
over RESP, then answers). Reports the client's latency (median and 99th
percentile, medians over BENCH_REPS reps) and the CPU both servers spent
per call. Writes bench/results/rl_shards.txt.

Knobs: BENCH_REPS (5), BENCH_N (5000), CELLGATE_BIN (./cellgate).
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# grpcio, not bench/grpc.py (a script's folder comes first on the path).
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
import grpc  # noqa: E402

sys.path.insert(0, HERE)
from journal import BIN, free_port  # noqa: E402

REPS = int(os.environ.get("BENCH_REPS", "5"))
N = int(os.environ.get("BENCH_N", "5000"))
PATH = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
LIMITS = """domain: bench
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 4000000000}
"""


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = (crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def field(number, payload):
    return bytes([number << 3 | 2, len(payload)]) + payload


def message(user):
    entry = field(1, b"user") + field(2, user)
    return field(1, b"bench") + field(2, field(1, entry))


def user_on(node):
    """A user value whose counter bench_user_<v> is on node 0 or 1."""
    for i in range(1000):
        v = b"u%d" % i
        if (crc16(b"bench_user_" + v) % 16384 >= 8192) == (node == 1):
            return v
    raise SystemExit("no user found")


class Node:
    def __init__(self, root, name, conf, port, gport):
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir)
        self.log = open(os.path.join(self.dir, "log"), "wb")
        self.proc = subprocess.Popen([BIN, conf, "--port", str(port), "--bind", "127.0.0.1",
                                      "--dir", self.dir, "--grpc-port", str(gport)],
                                     stdout=self.log, stderr=self.log)
        self.port, self.gport = port, gport
        for _ in range(200):
            p = subprocess.run(["redis-cli", "-p", str(port), "PING"],
                               capture_output=True, text=True)
            if p.stdout.strip() == "PONG":
                return
            time.sleep(0.05)
        raise SystemExit("bench/rl_shards.py: %s did not start" % name)

    def cpu_seconds(self):
        ns = 0
        task_dir = "/proc/%d/task" % self.proc.pid
        for tid in os.listdir(task_dir):
            try:
                with open(os.path.join(task_dir, tid, "schedstat")) as f:
                    ns += int(f.read().split()[0])
            except OSError:
                pass
        return ns / 1e9

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def run(call, body, nodes):
    lat = []
    c0 = sum(n.cpu_seconds() for n in nodes)
    for _ in range(N):
        t0 = time.perf_counter()
        call(body, timeout=5)
        lat.append(time.perf_counter() - t0)
    c1 = sum(n.cpu_seconds() for n in nodes)
    lat.sort()
    return lat[len(lat) // 2] * 1e6, lat[int(len(lat) * 0.99)] * 1e6, (c1 - c0) / N * 1e6


def main():
    root = tempfile.mkdtemp(prefix="cellgate-shards-bench-")
    out = []
    nodes = []
    try:
        limits = os.path.join(root, "limits.yaml")
        with open(limits, "w") as f:
            f.write(LIMITS)
        ports = [free_port(), free_port()]
        conf = os.path.join(root, "cluster.conf")
        with open(conf, "w") as f:
            f.write("cluster-mode yes\nsave \"\"\nlimits-file %s\n"
                    "cluster-node %s 127.0.0.1:%d 0-8191\n"
                    "cluster-node %s 127.0.0.1:%d 8192-16383\n"
                    % (limits, "a" * 40, ports[0], "b" * 40, ports[1]))
        nodes = [Node(root, "a", conf, ports[0], free_port()),
                 Node(root, "b", conf, ports[1], free_port())]
        channel = grpc.insecure_channel("127.0.0.1:%d" % nodes[0].gport)
        call = channel.unary_unary(PATH)
        bodies = {"local": message(user_on(0)), "forwarded": message(user_on(1))}
        runs = {k: [] for k in bodies}
        for k, b in bodies.items():
            run(call, b, nodes)                                 # warm-up
        for rep in range(REPS):
            for k, b in bodies.items():
                runs[k].append(run(call, b, nodes))
            print("  rep %d  local %.0f us  forwarded %.0f us (p50)"
                  % (rep + 1, runs["local"][-1][0], runs["forwarded"][-1][0]), flush=True)
        channel.close()
        out.append("ShouldRateLimit, one descriptor, one call at a time from grpcio to node A; "
                   "medians of %d x %d calls" % (REPS, N))
        for k in bodies:
            p50 = statistics.median(r[0] for r in runs[k])
            p99 = statistics.median(r[1] for r in runs[k])
            cpu = statistics.median(r[2] for r in runs[k])
            out.append("  %-46s p50 %6.0f us  p99 %6.0f us  servers' CPU %5.1f us/call"
                       % ("counter on A (decided where the call lands)" if k == "local"
                          else "counter on B (A asks B over RESP)", p50, p99, cpu))
    finally:
        for n in nodes:
            n.stop()
        shutil.rmtree(root, ignore_errors=True)
    text = "\n".join(out) + "\n"
    print(text, end="")
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/rl_shards.txt", "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())

"""What a ShouldRateLimit call costs cellgate next to a CL.THROTTLE.

Server CPU per call (schedstat of the daemon's threads), medians of
BENCH_REPS runs, in one invocation against one daemon:
  - ShouldRateLimit with one descriptor, from h2load (nghttp2-client):
    BENCH_CONNS connections, BENCH_STREAMS calls in flight on each;
  - CL.THROTTLE over RESP from redis-benchmark, 50 clients pipelining 16;
  - RL.CHECK over RESP the same way: the same named limit without gRPC.
Each decides on one hot key that never runs out, so every call does the
whole work of an allowed decision. Writes bench/results/grpc.txt.

Knobs: BENCH_REPS (9), BENCH_N (200000), BENCH_CONNS (4), BENCH_STREAMS
(32), CELLGATE_BIN (./cellgate).
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from journal import Daemon, free_port  # noqa: E402

REPS = int(os.environ.get("BENCH_REPS", "9"))
N = int(os.environ.get("BENCH_N", "200000"))
CONNS = int(os.environ.get("BENCH_CONNS", "4"))
STREAMS = int(os.environ.get("BENCH_STREAMS", "32"))
PATH = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
LIMITS = """domain: bench
descriptors:
  - key: user
    rate_limit: {unit: second, requests_per_unit: 4000000000}
"""


def field(number, payload):
    """A length-delimited protobuf field (lengths below 128 here)."""
    return bytes([number << 3 | 2, len(payload)]) + payload


def grpc_body():
    """RateLimitRequest{domain "bench", descriptors [{entries [user=alice]}]}
    framed as a gRPC message (flag 0, 32-bit length)."""
    entry = field(1, b"user") + field(2, b"alice")
    message = field(1, b"bench") + field(2, field(1, entry))
    return b"\x00" + len(message).to_bytes(4, "big") + message


def run_h2load(d, body_path):
    c0 = d.cpu_seconds()
    p = subprocess.run(["h2load", "-n", str(N), "-c", str(CONNS), "-m", str(STREAMS),
                        "-d", body_path, "-H", "content-type: application/grpc",
                        "-H", "te: trailers",
                        "http://127.0.0.1:%d%s" % (d.grpc_port, PATH)],
                       capture_output=True, text=True, timeout=600)
    c1 = d.cpu_seconds()
    if p.returncode != 0 or "%d succeeded" % N not in p.stdout:
        raise SystemExit("bench/grpc.py: h2load failed:\n%s%s" % (p.stdout, p.stderr))
    return 1e6 * (c1 - c0) / N


def run_resp(d, *command):
    c0 = d.cpu_seconds()
    p = subprocess.run(["redis-benchmark", "-p", str(d.port), "-c", "50", "-P", "16",
                        "-n", str(N), "-q"] + list(command),
                       capture_output=True, text=True, timeout=600)
    c1 = d.cpu_seconds()
    if p.returncode != 0:
        raise SystemExit("bench/grpc.py: redis-benchmark failed: %s" % p.stderr)
    return 1e6 * (c1 - c0) / N


def main():
    root = tempfile.mkdtemp(prefix="cellgate-grpc-bench-")
    out = []
    try:
        limits = os.path.join(root, "limits.yaml")
        with open(limits, "w") as f:
            f.write(LIMITS)
        body = os.path.join(root, "body")
        with open(body, "wb") as f:
            f.write(grpc_body())
        gport = free_port()
        d = Daemon(root, "server", ["--limits-file", limits, "--grpc-port", str(gport)])
        d.grpc_port = gport
        runs = {"grpc": [], "throttle": [], "check": []}
        try:
            run_h2load(d, body)                                     # warm-up
            run_resp(d, "CL.THROTTLE", "hot", "100000000", "100000000", "100")
            for rep in range(REPS):
                runs["grpc"].append(run_h2load(d, body))
                runs["throttle"].append(
                    run_resp(d, "CL.THROTTLE", "hot", "100000000", "100000000", "100"))
                runs["check"].append(run_resp(d, "RL.CHECK", "bench", "user=alice"))
                print("  rep %d  ShouldRateLimit %.3f us  CL.THROTTLE %.3f us  "
                      "RL.CHECK %.3f us" % (rep + 1, runs["grpc"][-1],
                                            runs["throttle"][-1], runs["check"][-1]),
                      flush=True)
        finally:
            d.stop()
        med = {k: statistics.median(v) for k, v in runs.items()}
        out.append("server CPU per call, one hot key, medians of %d x %d calls" % (REPS, N))
        rows = [("CL.THROTTLE over RESP (redis-benchmark -c 50 -P 16)", "throttle"),
                ("RL.CHECK over RESP, one descriptor (the same)", "check"),
                ("ShouldRateLimit over gRPC, one descriptor (h2load -c %d -m %d)"
                 % (CONNS, STREAMS), "grpc")]
        for label, k in rows:
            out.append("  %-64s %.3f us  (%.2fx)" % (label, med[k], med[k] / med["throttle"]))
        # Each rep measures the three back to back, so a rep's own ratio
        # cancels what drifts between reps (other load, frequency).
        for label, k in (("RL.CHECK", "check"), ("ShouldRateLimit", "grpc")):
            ratios = [a / b for a, b in zip(runs[k], runs["throttle"])]
            out.append("  %s / CL.THROTTLE, median of the %d reps' own ratios: %.2fx "
                       "(range %.2f-%.2f)" % (label, REPS, statistics.median(ratios),
                                              min(ratios), max(ratios)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    text = "\n".join(out) + "\n"
    print(text, end="")
    os.makedirs("bench/results", exist_ok=True)
    with open("bench/results/grpc.txt", "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())

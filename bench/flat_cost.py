#!/usr/bin/python3
"""bench/flat_cost.py: does a decision cost the same among 10 M live keys
as among 1,000? (issue 35's bar: server CPU per pipelined CL.THROTTLE at
10 M keys within 10 % of 1,000 keys, io-threads 1.)

Run from the repository root after `make all build/bench-fill`. In one
invocation it starts two cellgate daemons (io-threads 1, no persistence)
on free loopback ports, has build/bench-fill create FLAT_SMALL (1,000)
CL.THROTTLE keys in one and FLAT_BIG (10,000,000) in the other (16-byte
names as redis-benchmark's __rand_int__ makes them, one token a day, so
every request is allowed, writes its key and none expires), then runs
FLAT_REPS (5) repetitions, the order alternating, each a redis-benchmark
run (-c 50 -P 16, FLAT_REQ requests of `CL.THROTTLE key:__rand_int__
100000 1 86400`, -r over the daemon's keys) against each. Server CPU per
request is every thread's schedstat around the run over its requests
(bench/threads.py's Daemon). The report gives the medians, the ratio of
the medians (big / small) and the paired ratio of each repetition.

Knobs: FLAT_SMALL (1000), FLAT_BIG (10000000), FLAT_REPS (5), FLAT_REQ
(2000000), BENCH_FILL (build/bench-fill), CELLGATE_BIN (./cellgate),
FLAT_OUT (bench/results/flat-cost.txt).
"""
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from threads import BIN, LIMIT, Daemon  # noqa: E402

SMALL = int(os.environ.get("FLAT_SMALL", "1000"))
BIG = int(os.environ.get("FLAT_BIG", "10000000"))
REPS = int(os.environ.get("FLAT_REPS", "5"))
REQ = int(os.environ.get("FLAT_REQ", "2000000"))
FILL = os.environ.get("BENCH_FILL", "build/bench-fill")
OUT = os.environ.get("FLAT_OUT", "bench/results/flat-cost.txt")


def fill(d, n):
    subprocess.run([FILL, str(d.port), "key:", "0", str(n)] + LIMIT[:1] +
                   ["__key__"] + LIMIT[2:], check=True,
                   stdout=subprocess.DEVNULL)
    got = int(d.cli("DBSIZE"))
    if got != n:
        raise SystemExit("bench/flat_cost.py: %s holds %d keys, not %d" %
                         (d.name, got, n))


def cpu_per_request(d, keys):
    """Server CPU us per request of one pipelined run over `keys` keys."""
    before = sum(d.threads_cpu().values())
    p = subprocess.run(["redis-benchmark", "-p", str(d.port), "-c", "50",
                        "-P", "16", "-n", str(REQ), "-r", str(keys), "-q"] +
                       LIMIT, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit("bench/flat_cost.py: redis-benchmark: " + p.stderr)
    return (sum(d.threads_cpu().values()) - before) / 1000.0 / REQ


def main():
    if not os.access(FILL, os.X_OK):
        raise SystemExit("bench/flat_cost.py: %s not built "
                         "(make build/bench-fill)" % FILL)
    root = tempfile.mkdtemp(prefix="cellgate-flat-")
    small = Daemon(root, "small", 1)
    big = Daemon(root, "big", 1)
    fill(small, SMALL)
    fill(big, BIG)
    keys = {"small": SMALL, "big": BIG}
    rows = []
    for rep in range(REPS):
        order = (small, big) if rep % 2 == 0 else (big, small)
        got = {d.name: cpu_per_request(d, keys[d.name]) for d in order}
        rows.append(got)
        print("rep %d: %d keys %.3f us/req, %d keys %.3f us/req" % (
            rep + 1, SMALL, got["small"], BIG, got["big"]), flush=True)
    small.stop()
    big.stop()
    s = statistics.median(r["small"] for r in rows)
    b = statistics.median(r["big"] for r in rows)
    paired = [r["big"] / r["small"] for r in rows]
    report = [
        "cellgate %s, io-threads 1, CL.THROTTLE %s, -c 50 -P 16, %d requests "
        "a run, %d repetitions" % (BIN, " ".join(LIMIT[2:]), REQ, REPS),
        "server CPU per request, median: %d keys %.3f us, %d keys %.3f us" % (
            SMALL, s, BIG, b),
        "big / small: ratio of medians %.3f, paired %s (median %.3f)" % (
            b / s, " ".join("%.2f" % x for x in paired),
            statistics.median(paired)),
        "bar: within 10 %% (<= 1.10): %s" % ("met" if b / s <= 1.10
                                            else "missed"),
    ]
    print("\n".join(report))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("\n".join(report) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Memory per key of each limiter: start cellgate on a free loopback port,
create N keys with 16-byte names per algorithm, and report the growth of
INFO used_memory (and RSS) divided by N. Run: /usr/bin/python3 bench/memory.py [N]
"""
import os
import socket
import subprocess
import sys
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("CELLGATE_BIN", os.path.join(ROOT, "cellgate"))

CASES = [
    ("CL.THROTTLE", lambda k: ("CL.THROTTLE", k, 15, 30, 3600)),
    ("RL.FIXED", lambda k: ("RL.FIXED", k, 100, 3600)),
    ("RL.SLIDING", lambda k: ("RL.SLIDING", k, 100, 3600)),
    ("RL.LOG (1 entry)", lambda k: ("RL.LOG", k, 100, 3600)),
    ("RL.LOG (10 entries, 8-byte META)", None),
    ("RL.TIERS (2 tiers, 1 bucket)", lambda k: ("RL.TIERS", k, 10, 1, 100, 3600)),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def key(i):
    return "k:%014d" % i            # 16 bytes


def fill(r, make, n, repeat=1, meta=False):
    for start in range(0, n, 5000):
        p = r.pipeline(transaction=False)
        for i in range(start, min(n, start + 5000)):
            for j in range(repeat):
                if meta:
                    p.execute_command("RL.LOG", key(i), 100, 3600, "META", "user%04d" % j)
                else:
                    p.execute_command(*make(key(i)))
        p.execute()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    port = free_port()
    proc = subprocess.Popen([BIN, "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
                            stderr=subprocess.DEVNULL)
    try:
        r = redis.Redis(port=port)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        print("memory per key, %d keys with 16-byte names (cellgate %s)"
              % (n, r.info("server")["cellgate_version"]))
        print("  %-34s %10s %10s" % ("limiter", "used/key", "rss/key"))
        for name, make in CASES:
            r.flushall()
            time.sleep(0.3)
            m0 = r.info("memory")
            if make is None:
                fill(r, None, n, repeat=10, meta=True)
            else:
                fill(r, make, n)
            assert r.dbsize() == n, (name, r.dbsize())
            m1 = r.info("memory")
            print("  %-34s %10.1f %10.1f" % (
                name, (m1["used_memory"] - m0["used_memory"]) / n,
                (m1["used_memory_rss"] - m0["used_memory_rss"]) / n))
        r.flushall()
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()

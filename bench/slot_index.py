#!/usr/bin/python3
"""The per-slot key index's memory (store.c, "Slots"): INFO used_memory
after N keys (1,000,000 by default; 16-byte names "key:" and 12 digits,
SET to an integer by build/bench-fill) on a standalone cellgate (index
off), a cellgate with cluster-mode emulated (index on) and a redis-server
with cluster-enabled yes owning every slot (Redis 7.0's own index: 16
bytes a key in its dict entries), each started on a free loopback port in
this invocation; bytes per key of each and the index's cost (on - off).
Then the time a client takes to read every key back slot by slot
(COUNTKEYSINSLOT, then GETKEYSINSLOT <slot> <count>: what redis-cli
--cluster reshard asks before each MIGRATE, a page of the whole slot), 256
slots a pipeline, on the cellgate with the index and on Redis: each call
costs the keys it returns, not the table (redis-py's parsing of the keys
takes most of that time on either server).

Run:  /usr/bin/python3 bench/slot_index.py [N]   (after make build/bench-fill)
"""
import os
import socket
import subprocess
import sys
import tempfile
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CELLGATE = os.environ.get("CELLGATE_BIN", os.path.join(ROOT, "cellgate"))
FILL = os.environ.get("BENCH_FILL", os.path.join(ROOT, "build", "bench-fill"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(argv):
    port = free_port()
    proc = subprocess.Popen(argv + ["--port", str(port), "--bind", "127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port, socket_timeout=60)
    for _ in range(300):
        try:
            if r.ping():
                return proc, port, r
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("did not start: %s" % argv)


def used(r):
    return r.info("memory")["used_memory"]


def read_back(r, n):
    """Seconds to read every key back, a slot a call (GETKEYSINSLOT <slot>
    <its count>), 256 slots a pipeline; and the keys read."""
    t0 = time.monotonic()
    got = 0
    for first in range(0, 16384, 256):
        p = r.pipeline(transaction=False)
        for slot in range(first, first + 256):
            p.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
        counts = p.execute()
        p = r.pipeline(transaction=False)
        for slot, c in zip(range(first, first + 256), counts):
            p.execute_command("CLUSTER", "GETKEYSINSLOT", slot, c)
        got += sum(len(x) for x in p.execute())
    return time.monotonic() - t0, got


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
    work = tempfile.mkdtemp(prefix="slot-index-")
    cases = [
        ("cellgate, index off", [CELLGATE, "--save", "", "--dir", work], False),
        ("cellgate, index on (emulated)", [CELLGATE, "--save", "", "--dir", work,
                                           "--cluster-mode", "emulated"], True),
        ("redis-server 7, cluster-enabled", ["redis-server", "--save", "", "--appendonly", "no",
                                             "--dir", work, "--cluster-enabled", "yes",
                                             "--cluster-config-file",
                                             os.path.join(work, "nodes-%d.conf" % os.getpid())],
         True),
    ]
    per_key = {}
    print("%-34s %12s %10s %12s" % ("%d keys" % n, "used_memory", "B/key", "read back s"))
    for label, argv, cluster in cases:
        proc, port, r = start(argv)
        try:
            if "redis-server" in argv[0]:
                r.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
                for _ in range(100):
                    if b"cluster_state:ok" in r.execute_command("CLUSTER", "INFO"):
                        break
                    time.sleep(0.1)
            before = used(r)
            subprocess.run([FILL, str(port), "key:", "0", str(n), "SET", "__key__", "1"],
                           check=True, stdout=subprocess.DEVNULL)
            assert r.dbsize() == n
            after = used(r)
            per_key[label] = (after - before) / n
            secs = ""
            if cluster:
                s, got = read_back(r, n)
                assert got == n, (got, n)
                secs = "%.2f" % s
            print("%-34s %12d %10.2f %12s" % (label, after, per_key[label], secs))
        finally:
            proc.terminate()
            proc.wait(60)
    on, off = per_key["cellgate, index on (emulated)"], per_key["cellgate, index off"]
    print("the index's cost: %.2f bytes a key (and 128 KiB once)" % (on - off))


if __name__ == "__main__":
    main()

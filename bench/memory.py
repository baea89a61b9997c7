#!/usr/bin/python3
"""Memory per key: the growth of INFO used_memory (and RSS) divided by the
keys, N keys with 16-byte names per case (200,000 by default).

Starts cellgate and, beside it, a redis-server (`--save '' --appendonly no`)
on free loopback ports, in this same invocation. Two groups of rows:

  limiters      CL.THROTTLE, RL.*: cellgate only (redis-server has no such
                commands)
  string keys   INCR + EXPIRE counters and SET values: the same commands
                to both servers, bytes per key of each and cellgate / Redis;
                the TARGETS line checks the issue's bar (an INCR counter
                with a TTL under a 16-byte name: at most 64 B in cellgate)
  collections   what rate limiters keep in lists, hashes, sorted sets and
                sets (issues 28 and 37), each key with a TTL, the same
                commands to both servers: a 10-entry sorted-set log
                (13-digit ms scores, 15-byte members), a 10-entry list of
                14-byte timestamps, a 2-field hash (Laravel's /
                AspNetCoreRateLimit's counters), a 10-member set of
                integers (an intset in Redis) and one of 9-byte strings

Every string case checks what it created (each reply, DBSIZE, a value and a
TTL) before it counts anything. A server that answers an error, say
`ERR unknown command 'INCR'` from a cellgate without string keys, gets
"n/a" and the error in its column, and the script exits 1 after printing
everything else.

Run:  /usr/bin/python3 bench/memory.py [N]
                  [--only limiters|strings|collections] [--skip-cellgate]
      /usr/bin/python3 bench/memory.py --at 1000000,10000000 [--skip-redis]
  --skip-cellgate   string and collection rows on redis-server alone (for
                    checking this script; the figures to quote need both)
  --at N1,N2,...    the issue's memory bar at millions of keys: the keys
                    are made by build/bench-fill (16-byte names, "key:" and
                    12 digits, as bench/run.sh's memory rows), one count
                    after the other on the same server, and sampled at each
                    count once the key table has finished growing: a
                    CL.THROTTLE key (as bench/run.sh fills them: one token
                    a day) on cellgate, and an INCR counter with EXPIRE
                    3600 on cellgate and on Redis (--skip-redis: cellgate
                    alone)
Environment: CELLGATE_BIN (./cellgate), REDIS_SERVER (redis-server),
BENCH_FILL (build/bench-fill, for --at).
Needs the redis Python package (python3-redis).
"""
import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("CELLGATE_BIN", os.path.join(ROOT, "cellgate"))
REDIS_SERVER = os.environ.get("REDIS_SERVER", "redis-server")
FILL = os.environ.get("BENCH_FILL", os.path.join(ROOT, "build", "bench-fill"))

BATCH = 5000
TTL = 3600
TARGET_CASE = "INCR counter + EXPIRE (16-byte name)"
TARGET_BYTES = 64

LIMITER_CASES = [
    ("CL.THROTTLE", lambda k: ("CL.THROTTLE", k, 15, 30, 3600)),
    ("RL.FIXED", lambda k: ("RL.FIXED", k, 100, 3600)),
    ("RL.SLIDING", lambda k: ("RL.SLIDING", k, 100, 3600)),
    ("RL.LOG (1 entry)", lambda k: ("RL.LOG", k, 100, 3600)),
    ("RL.LOG (10 entries, 8-byte META)", None),
    ("RL.TIERS (2 tiers, 1 bucket)", lambda k: ("RL.TIERS", k, 10, 1, 100, 3600)),
]

VALUE_8 = b"abcdefgh"           # not a number: stored as a string by both
VALUE_100 = bytes(range(33, 133))  # 100 bytes, printable and not a number


def ok_reply(v):
    return v is True or v == b"OK"


# (name, commands for key k, expected reply of each, value GET returns,
#  whether the key has a TTL). Replies as redis-py returns them.
STRING_CASES = [
    (TARGET_CASE, lambda k: [("INCR", k), ("EXPIRE", k, TTL)],
     (lambda v: v == 1, lambda v: v == 1), b"1", True),
    ("SET NX EX, value \"1\"", lambda k: [("SET", k, "1", "NX", "EX", TTL)],
     (ok_reply,), b"1", True),
    ("SET NX EX, 8-byte value", lambda k: [("SET", k, VALUE_8, "NX", "EX", TTL)],
     (ok_reply,), VALUE_8, True),
    ("SET, 100-byte value, no TTL", lambda k: [("SET", k, VALUE_100)],
     (ok_reply,), VALUE_100, False),
]


LOG_T0 = 1700000000000          # the logs' first timestamp (ms)


def zlog(k):
    """A sliding log of 10 requests, 100 ms apart, and its window."""
    args = []
    for j in range(10):
        t = LOG_T0 + 100 * j
        args += [t, "%013d-%d" % (t, j)]
    return [("ZADD", k, *args), ("EXPIRE", k, TTL)]


def tlist(k):
    """limits' moving window: 10 timestamps, newest first."""
    return [("LPUSH", k, *["%.3f" % (LOG_T0 / 1000 + j * 0.1) for j in range(10)]),
            ("EXPIRE", k, TTL)]


def hcounter(k):
    return [("HSET", k, "count", 7, "ts", LOG_T0), ("EXPIRE", k, TTL)]


def iset(k):
    """A set of 10 integers (an intset in Redis): held job ids, say."""
    return [("SADD", k, *[str(1000 + 7 * j) for j in range(10)]), ("EXPIRE", k, TTL)]


def sset(k):
    """A set of 10 short strings (a hash table in Redis): a queue's
    workers or a semaphore's holders."""
    return [("SADD", k, *["worker:%02d" % j for j in range(10)]),
            ("EXPIRE", k, TTL)]


def expect(n):
    return lambda v: v == n


# (name, commands for key k, expected reply of each, length command and
#  length every key must have). Replies as redis-py returns them.
COLL_CASES = [
    ("sorted-set log, 10 entries + TTL", zlog, (expect(10), expect(1)), "ZCARD", 10),
    ("list, 10 entries + TTL", tlist, (expect(10), expect(1)), "LLEN", 10),
    ("hash, 2 fields + TTL", hcounter, (expect(2), expect(1)), "HLEN", 2),
    ("set, 10 integers + TTL", iset, (expect(10), expect(1)), "SCARD", 10),
    ("set, 10 strings + TTL", sset, (expect(10), expect(1)), "SCARD", 10),
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def key(i):
    return "k:%014d" % i            # 16 bytes


class CaseError(Exception):
    """A server did not do what the case needs (an error reply, a wrong
    count or value): its figure would mean nothing."""


class Server:
    def __init__(self, label, argv):
        self.label = label
        self.port = free_port()
        self.proc = subprocess.Popen(argv + ["--port", str(self.port)],
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.r = redis.Redis(port=self.port)
        for _ in range(200):
            if self.proc.poll() is not None:
                raise SystemExit(f"memory: {label} exited at start "
                                 f"(status {self.proc.returncode})")
            try:
                self.r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        else:
            raise SystemExit(f"memory: {label} does not answer on port {self.port}")
        info = self.r.info("server")
        if info.get("process_id") != self.proc.pid:
            raise SystemExit(f"memory: port {self.port} is answered by pid "
                             f"{info.get('process_id')}, not the {label} we started")
        self.version = info.get("cellgate_version") or info.get("redis_version", "?")

    @contextlib.contextmanager
    def filler(self):
        """A connection of its own for the fill, closed before the sample
        is taken, so that neither server counts its buffers (a pipeline
        of 5,000 requests) in the keys' cost."""
        r = redis.Redis(port=self.port)
        try:
            yield r
        finally:
            r.connection_pool.disconnect()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def settle(self):
        """INFO memory once the key table has finished growing: cellgate
        reports mem_overhead_db_hashtable_rehashing; Redis 7.0 does not, so
        for both wait (up to 10 s) until used_memory holds still for 0.4 s."""
        last, same = None, 0
        for _ in range(100):
            m = self.r.info("memory")
            if m.get("mem_overhead_db_hashtable_rehashing", 0) == 0:
                if m["used_memory"] == last:
                    same += 1
                    if same >= 2:
                        return m
                else:
                    same = 0
                last = m["used_memory"]
            time.sleep(0.2)
        return m


def run_pipeline(r, commands, checks, first):
    """Send commands (a list of tuples) in one pipeline; every reply must
    pass its check (checks cycle over the commands of one key)."""
    p = r.pipeline(transaction=False)
    for c in commands:
        p.execute_command(*c)
    replies = p.execute(raise_on_error=False)
    for j, v in enumerate(replies):
        if isinstance(v, Exception):
            raise CaseError(f"{' '.join(map(str, commands[j]))[:60]}: {v}")
        if not checks[j % len(checks)](v):
            raise CaseError(f"{' '.join(map(str, commands[j]))[:60]}: "
                            f"unexpected reply {v!r} (key {first + j // len(checks)})")


def fill_limiter(r, make, n, meta=False):
    for start in range(0, n, BATCH):
        p = r.pipeline(transaction=False)
        for i in range(start, min(n, start + BATCH)):
            if meta:
                for j in range(10):
                    p.execute_command("RL.LOG", key(i), 100, 3600, "META", "user%04d" % j)
            else:
                p.execute_command(*make(key(i)))
        p.execute()


def measure_string(srv, case, n):
    """(used B/key, rss B/key) of one string case on one server."""
    name, make, checks, value, has_ttl = case
    srv.r.flushall()
    m0 = srv.settle()
    with srv.filler() as r:
        for start in range(0, n, BATCH):
            cmds = []
            for i in range(start, min(n, start + BATCH)):
                cmds += make(key(i))
            run_pipeline(r, cmds, checks, start)
        if r.dbsize() != n:
            raise CaseError(f"DBSIZE {r.dbsize()} after {n} keys")
        for i in (0, n - 1):
            got = r.get(key(i))
            if got != value:
                raise CaseError(f"GET {key(i)} answered {got!r}, not {value!r}")
            ttl = r.ttl(key(i))
            if (0 < ttl <= TTL) if has_ttl else ttl == -1:
                continue
            raise CaseError(f"TTL {key(i)} answered {ttl}")
    m1 = srv.settle()
    srv.r.flushall()
    return ((m1["used_memory"] - m0["used_memory"]) / n,
            (m1["used_memory_rss"] - m0["used_memory_rss"]) / n)


def measure_coll(srv, case, n):
    """(used B/key, rss B/key) of one collection case on one server."""
    name, make, checks, length_cmd, length = case
    srv.r.flushall()
    m0 = srv.settle()
    with srv.filler() as r:
        for start in range(0, n, BATCH):
            cmds = []
            for i in range(start, min(n, start + BATCH)):
                cmds += make(key(i))
            run_pipeline(r, cmds, checks, start)
        if r.dbsize() != n:
            raise CaseError(f"DBSIZE {r.dbsize()} after {n} keys")
        for i in (0, n - 1):
            got = r.execute_command(length_cmd, key(i))
            if got != length:
                raise CaseError(f"{length_cmd} {key(i)} answered {got!r}, not {length}")
            ttl = r.ttl(key(i))
            if not 0 < ttl <= TTL:
                raise CaseError(f"TTL {key(i)} answered {ttl}")
    m1 = srv.settle()
    srv.r.flushall()
    return ((m1["used_memory"] - m0["used_memory"]) / n,
            (m1["used_memory_rss"] - m0["used_memory_rss"]) / n)


# --at: (name, bench-fill commands for each key, servers, GET's answer or
# None, the TTL range a key must have). The limiter's arguments are
# bench/run.sh's memory rows'.
AT_CASES = [
    ("CL.THROTTLE (bench-fill, 1 token a day)",
     [["CL.THROTTLE", "__key__", "100000", "1", "86400"]], ("cellgate",),
     None, (86000, 86400)),
    (TARGET_CASE,
     [["INCR", "__key__"], ["EXPIRE", "__key__", str(TTL)]],
     ("cellgate", "redis-server"), b"1", (TTL - 600, TTL)),
]


def fill_range(srv, commands, first, count):
    """bench-fill each command over keys [first, first + count)."""
    for c in commands:
        subprocess.run([FILL, str(srv.port), "key:", str(first), str(count)] + c,
                       check=True, stdout=subprocess.DEVNULL)


def check_at(srv, n, value, ttl_range):
    """The keys bench-fill made, as a user sees them."""
    if srv.r.dbsize() != n:
        raise CaseError(f"DBSIZE {srv.r.dbsize()} after {n} keys")
    for i in (0, n - 1):
        k = "key:%012d" % i
        if value is not None and srv.r.get(k) != value:
            raise CaseError(f"GET {k} answered {srv.r.get(k)!r}, not {value!r}")
        ttl = srv.r.ttl(k)
        if not ttl_range[0] <= ttl <= ttl_range[1]:
            raise CaseError(f"TTL {k} answered {ttl}")


def measure_at(srv, case, points):
    """used_memory growth per key at each count of points (ascending)."""
    name, commands, _, value, ttl_range = case
    srv.r.flushall()
    m0 = srv.settle()
    out, done = [], 0
    for n in points:
        fill_range(srv, commands, done, n - done)
        done = n
        check_at(srv, n, value, ttl_range)
        m = srv.settle()
        out.append(((m["used_memory"] - m0["used_memory"]) / n,
                    (m["used_memory_rss"] - m0["used_memory_rss"]) / n))
    srv.r.flushall()
    return out


def run_at(points, with_redis):
    """The --at rows; returns whether one failed."""
    if not os.access(FILL, os.X_OK):
        raise SystemExit(f"memory: {FILL} not built (make build/bench-fill)")
    servers = {}
    failed = False
    try:
        servers["cellgate"] = Server("cellgate", [BIN, "--bind", "127.0.0.1",
                                                  "--save", ""])
        if with_redis:
            servers["redis-server"] = Server(
                "redis-server", [REDIS_SERVER, "--bind", "127.0.0.1", "--save",
                                 "", "--appendonly", "no"])
        print("memory per key at " + ", ".join(f"{n:,}" for n in points) +
              " keys with 16-byte names (bench-fill; INFO used_memory and RSS "
              "growth / keys)")
        for s in servers.values():
            print(f"  {s.label:<13} {s.version} (pid {s.proc.pid}, port {s.port})")
        print("")
        print("  %-40s %-13s %12s %10s %10s" % ("case", "server", "keys",
                                               "used/key", "rss/key"))
        for case in AT_CASES:
            for label in case[2]:
                s = servers.get(label)
                if s is None:
                    continue
                try:
                    rows = measure_at(s, case, points)
                except (CaseError, redis.ResponseError,
                        subprocess.CalledProcessError) as e:
                    failed = True
                    print("  %-40s %-13s %12s   %s" % (case[0], label, "n/a",
                                                       str(e)[:150]))
                    continue
                for n, (used, rss) in zip(points, rows):
                    print("  %-40s %-13s %12s %10.1f %10.1f" % (
                        case[0], label, f"{n:,}", used, rss))
    finally:
        for s in servers.values():
            s.stop()
    return failed


def print_both(title, cases, measure, cg, rs, n):
    """Rows of cases measured on both servers (cg None: skipped); returns
    ({name: {label: figures}}, whether one failed)."""
    print("")
    print("  %-40s %10s %10s %8s %10s %10s" % (
        title, "cellgate", "Redis", "cg/Redis", "cg rss", "Redis rss"))
    results, failed = {}, False
    for case in cases:
        name = case[0]
        row, errs = {}, []
        for s in (cg, rs):
            if s is None:
                continue
            try:
                row[s.label] = measure(s, case, n)
            except (CaseError, redis.ResponseError) as e:
                failed = True
                errs.append(f"{s.label}: {str(e)[:150]}")
        results[name] = row
        c, rd = row.get("cellgate"), row.get("redis-server")

        def f(v, i):
            return "n/a" if v is None else f"{v[i]:.1f}"
        ratio = f"{c[0] / rd[0]:.2f}" if c and rd and rd[0] else "n/a"
        print("  %-40s %10s %10s %8s %10s %10s" % (
            name, "skipped" if cg is None else f(c, 0), f(rd, 0), ratio,
            "skipped" if cg is None else f(c, 1), f(rd, 1)))
        for e in errs:
            print(f"      {e}")
    return results, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=200000,
                    help="keys per case (200000)")
    ap.add_argument("--only", choices=("limiters", "strings", "collections"),
                    help="one group of rows only")
    ap.add_argument("--skip-cellgate", action="store_true",
                    help="string rows on redis-server alone (testing this script)")
    ap.add_argument("--at", metavar="N1,N2,...",
                    help="CL.THROTTLE keys and INCR counters filled by "
                         "bench-fill, sampled at each count")
    ap.add_argument("--skip-redis", action="store_true",
                    help="with --at: cellgate alone")
    args = ap.parse_args()
    if args.at is not None:
        try:
            points = sorted({int(x) for x in args.at.split(",")})
        except ValueError:
            ap.error("--at wants counts separated by commas")
        if points[0] < 1:
            ap.error("--at counts must be positive")
        return 1 if run_at(points, not args.skip_redis) else 0
    n = args.n
    if n < 1:
        ap.error("N must be positive")
    do_limiters = args.only in (None, "limiters") and not args.skip_cellgate
    do_strings = args.only in (None, "strings")
    do_colls = args.only in (None, "collections")
    if (do_strings or do_colls) and shutil.which(REDIS_SERVER) is None:
        raise SystemExit(f"memory: {REDIS_SERVER} not found (make deps installs "
                         "redis-server); --only limiters runs without it")

    servers = []
    failed = False
    try:
        cg = None
        if not args.skip_cellgate:
            cg = Server("cellgate", [BIN, "--bind", "127.0.0.1", "--save", ""])
            servers.append(cg)
        rs = None
        if do_strings or do_colls:
            rs = Server("redis-server", [REDIS_SERVER, "--bind", "127.0.0.1",
                                         "--save", "", "--appendonly", "no"])
            servers.append(rs)
        print(f"memory per key, {n:,} keys with 16-byte names per case "
              "(INFO used_memory and RSS growth / keys)")
        for s in servers:
            print(f"  {s.label:<13} {s.version} (pid {s.proc.pid}, port {s.port})")

        if do_limiters:
            print("")
            print("  %-40s %10s %10s" % ("limiter (cellgate only)", "used/key", "rss/key"))
            for name, make in LIMITER_CASES:
                try:
                    cg.r.flushall()
                    m0 = cg.settle()
                    with cg.filler() as r:
                        fill_limiter(r, make, n, meta=make is None)
                    if cg.r.dbsize() != n:
                        raise CaseError(f"DBSIZE {cg.r.dbsize()} after {n} keys")
                    m1 = cg.settle()
                    print("  %-40s %10.1f %10.1f" % (
                        name, (m1["used_memory"] - m0["used_memory"]) / n,
                        (m1["used_memory_rss"] - m0["used_memory_rss"]) / n))
                except (CaseError, redis.ResponseError) as e:
                    failed = True
                    print("  %-40s %10s   cellgate: %s" % (name, "n/a", str(e)[:150]))
            cg.r.flushall()

        results = {}
        if do_strings:
            print("")
            print("  %-40s %10s %10s %8s %10s %10s" % (
                "string keys (both servers)", "cellgate", "Redis", "cg/Redis",
                "cg rss", "Redis rss"))
            for case in STRING_CASES:
                name = case[0]
                row, errs = {}, []
                for s in (cg, rs):
                    if s is None:
                        continue
                    try:
                        row[s.label] = measure_string(s, case, n)
                    except (CaseError, redis.ResponseError) as e:
                        failed = True
                        errs.append(f"{s.label}: {str(e)[:150]}")
                results[name] = row
                c, rd = row.get("cellgate"), row.get("redis-server")

                def f(v, i):
                    return "n/a" if v is None else f"{v[i]:.1f}"
                ratio = f"{c[0] / rd[0]:.2f}" if c and rd and rd[0] else "n/a"
                print("  %-40s %10s %10s %8s %10s %10s" % (
                    name, "skipped" if cg is None else f(c, 0), f(rd, 0), ratio,
                    "skipped" if cg is None else f(c, 1), f(rd, 1)))
                for e in errs:
                    print(f"      {e}")

            print("")
            print("TARGETS (PASS, or MISS with the measured figure)")
            row = results.get(TARGET_CASE, {})
            c, rd = row.get("cellgate"), row.get("redis-server")
            redis_txt = "n/a" if rd is None else f"{rd[0]:.1f} B"
            if cg is None:
                print(f"  skipped  memory: {TARGET_CASE}: cellgate not run "
                      f"(--skip-cellgate); Redis {redis_txt}/key")
            elif c is None:
                print(f"  MISS  memory: {TARGET_CASE}: cellgate n/a (see the error "
                      f"above); Redis {redis_txt}/key")
            else:
                verdict = "PASS" if c[0] <= TARGET_BYTES else "MISS"
                print(f"  {verdict}  memory: {TARGET_CASE}, {n:,} keys: cellgate "
                      f"{c[0]:.1f} B/key (target <= {TARGET_BYTES}); Redis "
                      f"{redis_txt}/key" + (f", {c[0] / rd[0]:.2f}x" if rd else ""))

        if do_colls:
            _, bad = print_both("collections, TTL each (both servers)", COLL_CASES,
                                measure_coll, cg, rs, n)
            failed = failed or bad
    finally:
        for s in servers:
            s.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""bench/rdb_load.py: an RDB file of 1,000,000 keys that redis-server 7.0
wrote, loaded by cellgate and by redis-server, in one invocation.

Run from the repository root after `make`. A redis-server writes two
files (SAVE): BENCH_LOAD_KEYS strings (DEBUG POPULATE), and as many small
collections (a quarter each of 2-field hashes, 3-element lists, 3-member
sets, 2-member sorted sets: listpacks and intsets in the file). Then, for
each file, BENCH_REPS rounds of: redis-server and cellgate started in turn
on it (--dir --dbfilename, no saving), timed from the start to the first
PING answered (redis-cli polled every 10 ms), DBSIZE checked, stopped.
Medians per server and file.

Knobs: BENCH_REPS (3), BENCH_LOAD_KEYS (1000000), CELLGATE_BIN. Prints the
table and writes bench/results/rdb_load.txt.
"""
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from redis_sync import CELLGATE, REDIS, REPO, cli, free_port, start, stop

REPS = int(os.environ.get("BENCH_REPS", "3"))
KEYS = int(os.environ.get("BENCH_LOAD_KEYS", "1000000"))
BATCH = 10000


def fill_collections(port):
    """KEYS small collections, a quarter of each type, sent through
    redis-cli --pipe."""
    lines = []
    for i in range(KEYS):
        kind = i % 4
        if kind == 0:
            lines.append("HSET h:%d f1 %d f2 v%d" % (i, i, i))
        elif kind == 1:
            lines.append("RPUSH l:%d a%d b %d" % (i, i, i))
        elif kind == 2:
            lines.append("SADD s:%d %d %d %d" % (i, i, i + 1, i + 2))
        else:
            lines.append("ZADD z:%d 1 a%d 2.5 b" % (i, i))
    subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input="\n".join(lines) + "\n",
                   text=True, capture_output=True, check=True, timeout=600)


def write_file(work, name, fill):
    """A redis-server SAVEs name in work after fill(port)."""
    port = free_port()
    proc = start([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--dir", work,
                  "--dbfilename", name, "--save", "", "--appendonly", "no",
                  "--enable-debug-command", "yes"], port, work)
    try:
        fill(port)
        if cli(port, "DBSIZE").strip() != str(KEYS):
            raise SystemExit("%s: DBSIZE %s" % (name, cli(port, "DBSIZE").strip()))
        cli(port, "SAVE")
    finally:
        stop(proc)
    return os.path.getsize(os.path.join(work, name))


def timed_load(kind, work, name):
    port = free_port()
    d = tempfile.mkdtemp(dir=work)
    os.link(os.path.join(work, name), os.path.join(d, name))
    if kind == "cellgate":
        argv = [CELLGATE, "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                "--dbfilename", name, "--save", ""]
    else:
        argv = [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
                "--dbfilename", name, "--save", "", "--appendonly", "no"]
    t0 = time.monotonic()
    proc = start(argv, port, work)
    took = time.monotonic() - t0
    try:
        if cli(port, "DBSIZE").strip() != str(KEYS):
            raise SystemExit("%s loaded %s keys of %s" % (kind, cli(port, "DBSIZE"), name))
    finally:
        stop(proc)
        shutil.rmtree(d, ignore_errors=True)
    return took


def main():
    work = tempfile.mkdtemp(prefix="bench-rdb-load-")
    files = [("strings.rdb", "strings (DEBUG POPULATE)",
              lambda port: cli(port, "DEBUG", "POPULATE", KEYS)),
             ("collections.rdb", "small hashes, lists, sets, sorted sets", fill_collections)]
    lines = []
    try:
        for name, what, fill in files:
            size = write_file(work, name, fill)
            times = {"redis-server": [], "cellgate": []}
            for _ in range(REPS):
                for kind in times:
                    times[kind].append(timed_load(kind, work, name))
            r, c = (statistics.median(times[k]) for k in ("redis-server", "cellgate"))
            lines.append("%d keys, %s, %.1f MB: redis-server %.2f s, cellgate %.2f s "
                         "(%.2fx)  [%s | %s]"
                         % (KEYS, what, size / 1e6, r, c, c / r,
                            ", ".join("%.2f" % t for t in times["redis-server"]),
                            ", ".join("%.2f" % t for t in times["cellgate"])))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    os.makedirs(os.path.join(REPO, "bench", "results"), exist_ok=True)
    with open(os.path.join(REPO, "bench", "results", "rdb_load.txt"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()

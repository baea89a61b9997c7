#!/usr/bin/python3
"""bench/cutover.py: how long the documented cut-over from a running
redis-server 7.0 to cellgate holds writes (docs/migrate.md, "The cut-over,
step by step"), measured with tools/cellgate-cutover itself.

Run from the repository root after `make`. Each of BENCH_REPS rounds: a
redis-server primary filled with BENCH_CUTOVER_KEYS keys (DEBUG POPULATE), a
fresh cellgate, redis-benchmark's 20 clients sending INCR to the Redis; then
the tool (loaded as a module, its log lines timestamped on this process's
monotonic clock) runs steps 1 to 7 while a probe client sends INCR to
cellgate every millisecond. Per round:

  pause -> promoted   from CLIENT PAUSE WRITE on Redis to REPLICAOF NO ONE
                      answered by cellgate (what the tool prints);
  pause -> write      from CLIENT PAUSE WRITE to the probe's first INCR that
                      cellgate accepted (a client's view: the writes are
                      taken from here);
  held                from CLIENT PAUSE WRITE to CLIENT UNPAUSE on Redis.

Medians over the rounds. Knobs: BENCH_REPS (5), BENCH_CUTOVER_KEYS (100000),
CELLGATE_BIN. Prints the table and writes bench/results/cutover.txt.
"""
import importlib.machinery
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from redis_sync import CELLGATE, REPO, REDIS, cli, free_port, start, stop

REPS = int(os.environ.get("BENCH_REPS", "5"))
KEYS = int(os.environ.get("BENCH_CUTOVER_KEYS", "100000"))
PAUSE_MS = 10000


def load_tool():
    path = os.path.join(REPO, "tools", "cellgate-cutover")
    loader = importlib.machinery.SourceFileLoader("cellgate_cutover", path)
    spec = importlib.util.spec_from_loader("cellgate_cutover", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def probe(tool, port, done, first_ok):
    """INCR on cellgate every millisecond until one is accepted."""
    conn = tool.Conn("127.0.0.1:%d" % port)
    while not done.is_set():
        try:
            conn.call("INCR", "cutover:probe")
            first_ok.append(time.monotonic())
            return
        except RuntimeError:            # -READONLY while it follows Redis
            time.sleep(0.001)


def one_round(tool, work, pport):
    cport = free_port()
    d = tempfile.mkdtemp(dir=work)
    cg = start([CELLGATE, "--port", str(cport), "--bind", "127.0.0.1", "--dir", d,
                "--save", ""], cport, work)
    load = subprocess.Popen(["redis-benchmark", "-p", str(pport), "-c", "20", "-n",
                             "100000000", "-r", "100000", "-t", "incr", "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    events = []
    tool.log = lambda t0, msg: events.append((time.monotonic(), msg))
    done, first_ok = threading.Event(), []
    try:
        cli(cport, "REPLICAOF", "127.0.0.1", pport)
        for _ in range(6000):
            if "master_link_status:up" in cli(cport, "INFO", "replication"):
                break
            time.sleep(0.01)
        t = threading.Thread(target=probe, args=(tool, cport, done, first_ok))
        t.start()
        time.sleep(0.5)                 # the load runs through the stream a while
        sys.argv = ["cellgate-cutover", "--redis", "127.0.0.1:%d" % pport,
                    "--cellgate", "127.0.0.1:%d" % cport, "--pause-ms", str(PAUSE_MS)]
        rc = tool.main()
        t.join(10)
        done.set()
        if rc != 0 or not first_ok:
            raise SystemExit("the cut-over failed: %r" % events)
        at = {}
        for when, msg in events:
            for name, prefix in (("paused", "Redis: CLIENT PAUSE"),
                                 ("promoted", "cellgate: REPLICAOF NO ONE"),
                                 ("unpaused", "Redis: CLIENT UNPAUSE")):
                if msg.startswith(prefix):
                    at[name] = when
        ms = lambda a, b: (b - a) * 1000
        return (ms(at["paused"], at["promoted"]), ms(at["paused"], first_ok[0]),
                ms(at["paused"], at["unpaused"]))
    finally:
        done.set()
        load.terminate()
        load.wait(60)
        stop(cg)


def main():
    tool = load_tool()
    work = tempfile.mkdtemp(prefix="bench-cutover-")
    rows = []
    try:
        for _ in range(REPS):
            pport = free_port()
            primary = start([REDIS, "--port", str(pport), "--bind", "127.0.0.1", "--dir",
                             work, "--save", "", "--appendonly", "no",
                             "--enable-debug-command", "yes"], pport, work)
            try:
                cli(pport, "DEBUG", "POPULATE", KEYS)
                rows.append(one_round(tool, work, pport))
            finally:
                stop(primary)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    names = ("pause -> promoted", "pause -> write accepted", "writes held on Redis")
    lines = ["cut-over of a redis-server (%d keys, 20 INCR clients) to cellgate, %d rounds"
             % (KEYS, REPS)]
    for i, name in enumerate(names):
        vals = [r[i] for r in rows]
        lines.append("%-26s median %6.1f ms  (%s)" % (name, statistics.median(vals),
                                                      ", ".join("%.1f" % v for v in vals)))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    os.makedirs(os.path.join(REPO, "bench", "results"), exist_ok=True)
    with open(os.path.join(REPO, "bench", "results", "cutover.txt"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()

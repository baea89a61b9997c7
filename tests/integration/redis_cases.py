"""Redis 7.0.15's own tests (tests/unit/type/set.tcl, zset.tcl, hash.tcl,
list.tcl, scripting.tcl, functions.tcl, pubsub.tcl, keyspace.tcl, multi.tcl),
case by case, as
command scripts in redis_tcl/: each behaviour a Redis case checks, run on
redis-server and on cellgate side by side, every reply compared byte for
byte in RESP2 or RESP3 (docs/compat.md, "Redis's own tests, case by case",
says which script holds which case and which cases are not carried over).

A script is one command a line, split as a shell splits it ("@NL@" is a
newline inside an argument); "#" starts a comment. A line may begin with
"%name" to run on another connection (opened on first use, in the same
protocol). Directives:
  @sorted CMD ...    the command's array reply, sorted (through EVAL), for
                     replies in Redis's hash order
  @repeat N CMD ...  run N times, "{i}" replaced by 0..N-1; not compared
  @block CMD ...     send a blocking command and wait until the server
                     counts one more blocked client; its reply is read
                     later by @read
  @send CMD ...      send without reading (CLIENT REPLY OFF, a command
                     queued behind a blocked one)
  @read              read and compare one reply
  @save NAME CMD ... keep each server's bulk reply; "$$NAME" as an argument
                     later passes each server its own
Nothing sleeps: a blocked client is waited for through INFO."""
import os
import re
import shlex
import time

import harness

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "redis_tcl")
SORTED = "local t=redis.call(unpack(ARGV)) table.sort(t) return t"


def blocked_clients(ctl):
    info = ctl.command("INFO", "clients")
    return int(re.search(rb"blocked_clients:(\d+)", info).group(1))


class Side:
    """One server's connections and saved replies."""

    def __init__(self, port, proto):
        self.port, self.proto = port, proto
        self.conns, self.saved = {}, {}
        self.ctl = harness.RawConn(port)

    def conn(self, name):
        if name not in self.conns:
            c = harness.RawConn(self.port)
            if self.proto == 3:
                c.command("HELLO", "3")
            self.conns[name] = c
        return self.conns[name]

    def args(self, words):
        return [self.saved[w[2:]] if w.startswith("$$") else w for w in words]

    def block(self, conn, words):
        before = blocked_clients(self.ctl)
        conn.send(harness.resp_command(*self.args(words)))
        deadline = time.monotonic() + 10
        while blocked_clients(self.ctl) <= before:
            assert time.monotonic() < deadline, "not blocked: %r" % (words,)
            time.sleep(0.002)

    def close(self):
        for c in list(self.conns.values()) + [self.ctl]:
            c.close()


def step(side, name, words):
    """Run one line on one server: the reply to compare, or None."""
    conn = side.conn(name)
    op = words[0]
    if op == "@repeat":
        for i in range(int(words[1])):
            conn.command(*[w.replace("{i}", str(i)) for w in words[2:]])
        return None
    if op == "@block":
        side.block(conn, words[1:])
        return None
    if op == "@send":
        conn.send(harness.resp_command(*side.args(words[1:])))
        return None
    if op == "@read":
        return conn.reply_bytes()
    if op == "@sorted":
        return conn.command("EVAL", SORTED, "0", *words[1:])
    if op == "@save":
        reply = conn.command(*side.args(words[2:]))
        side.saved[words[1]] = reply.split(b"\r\n", 1)[1][:-2]
        return reply
    return conn.command(*side.args(words))


def run(script, cg_port, rd_port, proto):
    """The lines whose replies differ: [(line, redis's, cellgate's)]."""
    sides = [Side(rd_port, proto), Side(cg_port, proto)]
    diffs = []
    try:
        for s in sides:
            s.conn("main").command("FLUSHALL")
            s.conn("main").command("FUNCTION", "FLUSH")
        with open(os.path.join(HERE, script), encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                words = [w.replace("@NL@", "\n") for w in shlex.split(line)]
                name = "main"
                if words[0].startswith("%"):
                    name, words = words[0][1:], words[1:]
                want, got = (step(s, name, words) for s in sides)
                if want != got:
                    diffs.append((line[:120], want, got))
    finally:
        for s in sides:
            s.close()
    return diffs

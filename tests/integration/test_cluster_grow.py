"""cluster-enabled yes, managed by Debian's redis-cli --cluster (7.0.15):
six cellgates made a cluster with --cluster create --cluster-replicas 1,
grown by a fourth primary (add-node, rebalance --cluster-use-empty-masters),
emptied again (rebalance --cluster-weight <id>=0) and shrunk (del-node),
all under live traffic from redis-py's RedisCluster and ioredis's Cluster.
Every limiter's decisions must match a model of its limit: no limit
exceeded, none reset by a move, no request lost. Then a reshard killed
halfway leaves a slot open and --cluster fix closes it; and a standalone
redis-server's keys come in with --cluster import."""
import json
import logging
import os
import signal
import subprocess
import threading
import time

import pytest
from redis.cluster import RedisCluster

import cluster_live
import harness
from harness import reference_slot as keyslot
from test_node_clients import CLIENTS, ensure_node_modules

pytestmark = pytest.mark.plain_too

# redis-py logs a traceback for every redirect it follows (4.3.4's
# log.exception): thousands during a rebalance, at the traffic's expense.
logging.getLogger("redis.cluster").setLevel(logging.CRITICAL)

# A day's worth of 20 for the throttles and limits: nothing is given back
# while a test runs, so each key admits exactly 20 however its requests
# fall and wherever its state moves.
LIMIT = 20
WINDOW_S = 86400
# The same limit three more ways: a Lua script over INCR, a sorted-set log
# in a script, and cellgate's own fixed and sliding windows.
SCRIPT_COUNTER = """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
if n > tonumber(ARGV[2]) then return 0 end
return 1
"""
SCRIPT_LOG = """
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""


class Traffic:
    """Threads of redis-py RedisCluster clients, each with keys of its own,
    sending every kind of limiter round after round until stopped. Every
    request gets a reply or is recorded as an error."""

    # (Against Redis itself, CLUSTER_REFERENCE=redis, only what Redis has.)
    KINDS = ("counter", "script", "log") if cluster_live.REFERENCE else \
        ("throttle", "counter", "script", "log", "fixed", "sliding")

    def __init__(self, port, threads=3, keys=40):
        self.port = port
        self.stop_event = threading.Event()
        self.sent = {}          # key -> requests answered
        self.allowed = {}       # key -> requests admitted
        self.errors = []
        self.keys = [[(kind, "py:%s:%d:%d" % (kind, t, i))
                      for i in range(keys) for kind in self.KINDS] for t in range(threads)]
        for _, key in sum(self.keys, []):
            self.sent[key] = self.allowed[key] = 0
        self.threads = [threading.Thread(target=self.run, args=(keys,), daemon=True)
                        for keys in self.keys]

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stop_event.set()
        for t in self.threads:
            t.join(120)
            assert not t.is_alive(), "a traffic thread did not stop"

    def request(self, rc, kind, key, seq):
        if kind == "throttle":
            return rc.execute_command("CL.THROTTLE", key, LIMIT - 1, LIMIT, WINDOW_S)[0] == 0
        if kind == "counter":
            n = rc.incr(key)
            if n == 1:
                rc.expire(key, 3600)
            return True
        if kind == "script":
            return rc.eval(SCRIPT_COUNTER, 1, key, 3600, LIMIT) == 1
        if kind == "log":
            return rc.eval(SCRIPT_LOG, 1, key, int(time.time() * 1000), WINDOW_S * 1000,
                           LIMIT, "m%d" % seq) == 1
        if kind == "fixed":
            return rc.execute_command("RL.FIXED", key, LIMIT, WINDOW_S)[0] == 0
        return rc.execute_command("RL.SLIDING", key, LIMIT, WINDOW_S)[0] == 0

    def send(self, rc, kind, key, seq):
        """One request. redis-py 4.3.4 fails on an -ASK to a node it has
        not met yet (its slot cache predates add-node: get_node() gives
        None, then AttributeError), before sending anything there; the
        server said ASK, so nothing ran, and the request is sent again once
        the client has re-read the map."""
        for _ in range(5):
            try:
                return self.request(rc, kind, key, seq)
            except AttributeError as e:
                if "server_type" not in str(e):
                    raise
                rc.nodes_manager.initialize()
        return self.request(rc, kind, key, seq)

    def run(self, keys):
        rc = RedisCluster(host="127.0.0.1", port=self.port, socket_timeout=30)
        seq = 0
        deadline = time.monotonic() + 600
        while not self.stop_event.is_set() and time.monotonic() < deadline \
                and len(self.errors) < 20:
            for kind, key in keys:
                seq += 1
                try:
                    ok = self.send(rc, kind, key, seq)
                except Exception as e:      # recorded: the test fails on any
                    self.errors.append("%s %s: %r" % (kind, key, e))
                    continue
                self.sent[key] += 1
                self.allowed[key] += 1 if ok else 0
        rc.close()

    def verify(self, rc):
        assert self.errors == []
        for key, sent in self.sent.items():
            kind = key.split(":")[1]
            assert sent > LIMIT, "too little traffic on %s (%d)" % (key, sent)
            if kind == "counter":
                assert int(rc.get(key)) == sent, key
            else:
                # Exactly the limit: more is a limit exceeded, less a
                # decision lost or a state reset that was later refused.
                assert self.allowed[key] == LIMIT, (key, self.allowed[key])
            if kind == "log":
                assert rc.zcard(key) == LIMIT, key


class IoredisTraffic:
    def __init__(self, port, workdir, keys=30):
        ensure_node_modules()
        self.stop_file = os.path.join(str(workdir), "stop-ioredis")
        self.proc = subprocess.Popen(["node", "cluster_traffic.mjs", str(port), self.stop_file,
                                      str(keys)], cwd=CLIENTS, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)

    def stop_and_verify(self, rc):
        with open(self.stop_file, "w"):
            pass
        out, err = self.proc.communicate(timeout=120)
        assert self.proc.returncode == 0, out + err
        got = json.loads(out.strip().splitlines()[-1])
        assert got["errors"] == []
        for key, (sent, allowed) in got["throttle"].items():
            assert sent > LIMIT, (key, sent)
            assert allowed == LIMIT, (key, allowed)
        for key, sent in got["incr"].items():
            assert int(rc.get(key)) == sent, key


def rounds_pass(traffic, n=2, timeout=120):
    """Wait until every key has had n more requests answered: the clients
    got through whatever the cluster just did."""
    before = dict(traffic.sent)
    assert harness.wait_until(
        lambda: all(traffic.sent[k] >= before[k] + n for k in before) or traffic.errors,
        timeout), "traffic stalled"
    assert traffic.errors == []


def test_grow_and_shrink_under_live_traffic(start_daemon, tmp_path):
    c = cluster_live.Cluster(start_daemon, tmp_path, 6)
    c.create(replicas=1)
    c.check()
    entry = c.nodes[0]
    traffic = Traffic(entry.port).start()
    io = None if cluster_live.REFERENCE else IoredisTraffic(entry.port, tmp_path)
    rounds_pass(traffic)

    # Grow: a fourth primary, given its share of the slots.
    new = c.add_node()
    c.cli("add-node", new.addr(), entry.addr())
    c.wait_converged()
    # With a tenth of the others' weight it gets 529 slots: every slot move
    # is a few round trips and nodes.conf saves on each primary (as in
    # Redis, a few ms here), so an equal share (4,096 each way) alone would
    # take most of a minute, longer under ASan.
    c.cli("rebalance", entry.addr(), "--cluster-use-empty-masters",
          "--cluster-weight", "%s=0.1" % new.myid())
    c.wait_converged()
    c.check()
    assert len(new.nodes()[new.myid()]["slots"]) > 0
    rounds_pass(traffic)

    # Shrink: empty it again and take it out.
    new_id = new.myid()
    c.cli("rebalance", entry.addr(), "--cluster-weight", "%s=0" % new_id)

    c.wait_converged()
    assert new.nodes()[new_id]["slots"] == []
    c.cli("del-node", entry.addr(), new_id)
    # 7.0's del-node ends with CLUSTER RESET SOFT to the node removed: it
    # forgets the cluster, and the cluster forgets it.
    c.nodes.remove(new)
    assert new.info()["cluster_known_nodes"] == "1"
    assert all(new_id not in n.nodes() for n in c.live())
    c.wait_converged()
    c.check()
    rounds_pass(traffic)

    traffic.stop()
    rc = RedisCluster(host="127.0.0.1", port=entry.port)
    traffic.verify(rc)
    if io is not None:
        io.stop_and_verify(rc)
    # Each key lives on exactly one primary, the owner of its slot.
    for key in list(traffic.sent)[:50]:
        slot = rc.keyslot(key)
        holders = [n.index for n in c.live()
                   if "master" in n.nodes()[n.myid()]["flags"]
                   and n.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) > 0
                   and key.encode() in n.client().execute_command(
                       "CLUSTER", "GETKEYSINSLOT", slot, 1000)]
        assert len(holders) == 1, (key, holders)
    rc.close()


def open_slots(node):
    """Slots node shows as migrating or importing in CLUSTER NODES."""
    return [s for rec in node.nodes().values() for s in rec["slots"] if s.startswith("[")]


def test_fix_closes_a_slot_a_killed_reshard_left_open(start_daemon, tmp_path):
    c = cluster_live.Cluster(start_daemon, tmp_path, 3)
    c.create(replicas=0)
    a, b = c.nodes[0], c.nodes[1]
    rc = RedisCluster(host="127.0.0.1", port=a.port)
    # 3,000 keys in the first slot of a's range, moved one per MIGRATE: a
    # reshard of one slot from a takes that slot, and is still on it when
    # it is killed.
    first = min(int(s.partition("-")[0]) for s in a.nodes()[a.myid()]["slots"])
    tag = next("{t%d}" % i for i in range(10**6) if keyslot("{t%d}" % i) == first)
    pipe = rc.pipeline()
    for i in range(3000):
        pipe.set("%s:%d" % (tag, i), i)
    pipe.execute()
    slot = first
    src, dst = a, b
    proc = subprocess.Popen([cluster_live.REDIS_CLI, "--cluster", "reshard", src.addr(),
                             "--cluster-from", src.myid(), "--cluster-to", dst.myid(),
                             "--cluster-slots", "1", "--cluster-pipeline", "1",
                             "--cluster-yes"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        assert harness.wait_until(lambda: any(str(slot) in s for s in open_slots(src)), 120), \
            "the reshard never reached the heavy slot"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    assert open_slots(src) or open_slots(dst)
    text = c.cli("check", src.addr(), check=False)
    assert "open slot" in text.lower() or "[WARNING]" in text, text
    c.cli("fix", src.addr(), "--cluster-yes")
    c.wait_converged()
    c.check()
    assert open_slots(src) == [] and open_slots(dst) == []
    # Not a key lost or doubled.
    assert sum(n.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
               for n in c.live()) == 3000
    assert [rc.get("%s:%d" % (tag, i)) for i in (0, 1499, 2999)] == [b"0", b"1499", b"2999"]
    rc.close()


def _in(slot, spec):
    if spec.startswith("["):
        return False
    first, _, last = spec.partition("-")
    return int(first) <= slot <= int(last or first)


def test_import_from_a_standalone_redis(start_daemon, tmp_path):
    c = cluster_live.Cluster(start_daemon, tmp_path, 3)
    c.create(replicas=0)
    src = harness.RedisServer(str(tmp_path / "redis")).start()
    r = src.client()
    for i in range(500):
        r.set("s:%d" % i, i)
        r.expire("s:%d" % i, 3600)
    r.rpush("list", *range(50))
    r.zadd("log", {"m%d" % i: i for i in range(30)})
    r.hset("hash", mapping={"f%d" % i: i for i in range(20)})
    r.sadd("set", "a", "b", "c")
    c.cli("import", c.nodes[0].addr(), "--cluster-from", "127.0.0.1:%d" % src.port,
          "--cluster-copy")
    c.check()
    rc = RedisCluster(host="127.0.0.1", port=c.nodes[0].port)
    assert [rc.get("s:%d" % i) for i in (0, 250, 499)] == [b"0", b"250", b"499"]
    assert 3500 < rc.ttl("s:7") <= 3600
    assert rc.lrange("list", 0, -1) == [str(i).encode() for i in range(50)]
    assert rc.zcard("log") == 30 and rc.zscore("log", "m29") == 29
    assert rc.hgetall("hash") == {b"f%d" % i: str(i).encode() for i in range(20)}
    assert rc.smembers("set") == {b"a", b"b", b"c"}
    assert sum(len(n.client().keys("*")) for n in c.live()) == 504
    rc.close()
    src.stop()


def test_kill_9_of_a_primary_promotes_its_replica(start_daemon, tmp_path):
    """The replica of a killed primary takes its slots within the node
    timeout plus a bound while clients keep sending; they follow it; a
    limit is over-admitted at most by the admissions the dead primary made
    within the replication lag before it died (replication is asynchronous:
    docs/cluster.md), here bounded by those of its last LAG_S; the dead node
    comes back as a replica of the new primary."""
    timeout_ms = 1500
    lag_s = 1.0
    c = cluster_live.Cluster(start_daemon, tmp_path, 6, node_timeout=timeout_ms)
    c.create(replicas=1)
    probe = RedisCluster(host="127.0.0.1", port=c.nodes[0].port)
    slot = probe.keyslot("{victim}")
    probe.close()
    view = c.nodes[0].nodes()
    victim_id = next(i for i, r in view.items()
                     if "master" in r["flags"] and any(_in(slot, s) for s in r["slots"]))
    victim = c.node_by_id(victim_id)
    replica = c.node_by_id(next(i for i, r in view.items() if r["primary"] == victim_id))
    survivor = next(n for n in c.nodes if n is not victim)
    stop = threading.Event()
    log = []                        # (key, monotonic time, admitted) answered

    def throttle(rc, key):
        if cluster_live.REFERENCE:
            return rc.eval(SCRIPT_COUNTER, 1, key, 3600, LIMIT) == 1
        return rc.execute_command("CL.THROTTLE", key, LIMIT - 1, LIMIT, WINDOW_S)[0] == 0

    def sender(t):
        """Keys of the victim's slot one after another, LIMIT + 5 requests
        each; a request that fails (the primary died under it) is not
        counted, so the tally of admissions can only be low, never high."""
        rc = RedisCluster(host="127.0.0.1", port=survivor.port, socket_timeout=5)
        k = 0
        deadline = time.monotonic() + 120
        while not stop.is_set() and time.monotonic() < deadline:
            key = "{victim}:%d:%d" % (t, k)
            for _ in range(LIMIT + 5):
                try:
                    ok = throttle(rc, key)
                except Exception:
                    log.append((key, time.monotonic(), None))
                    time.sleep(0.05)
                    try:
                        rc.nodes_manager.initialize()
                    except Exception:
                        pass
                    continue
                log.append((key, time.monotonic(), ok))
            k += 1
        rc.close()

    threads = [threading.Thread(target=sender, args=(t,), daemon=True) for t in range(2)]
    for t in threads:
        t.start()
    assert harness.wait_until(lambda: len(log) > 5 * LIMIT, 30)
    killed_at = time.monotonic()
    victim.kill9()
    assert harness.wait_until(lambda: "master" in survivor.nodes()[replica.myid()]["flags"],
                              timeout_ms / 1000 + 15), "the replica was never promoted"
    promoted_after = time.monotonic() - killed_at
    c.wait_converged()
    # The clients are through: they get answers from the new primary.
    after = len(log)
    assert harness.wait_until(lambda: sum(1 for e in log[after:] if e[1] > killed_at) > 3 * LIMIT,
                              30), "the clients never got going again"
    stop.set()
    for t in threads:
        t.join(30)
    admitted, tail, failed = {}, {}, set()
    for key, at, ok in log:
        admitted[key] = admitted.get(key, 0) + bool(ok)
        if ok is None:
            failed.add(key)
        if ok and killed_at - lag_s <= at <= killed_at:
            tail[key] = tail.get(key, 0) + 1
    for key, n in admitted.items():
        assert n <= LIMIT + tail.get(key, 0), (key, n, tail.get(key, 0))
    # Keys that met no failure, done before the lag window or begun after
    # the failover: exact.
    for key in set(admitted) - failed:
        times = [at for k, at, _ in log if k == key]
        if max(times) < killed_at - lag_s or min(times) > killed_at + promoted_after:
            assert admitted[key] == LIMIT, (key, admitted[key])
    assert promoted_after < timeout_ms / 1000 + 10, promoted_after
    # The dead node restarted rejoins as a replica of its replica.
    victim.start()
    assert harness.wait_until(
        lambda: survivor.nodes().get(victim_id, {}).get("primary") == replica.myid()
        and "slave" in survivor.nodes()[victim_id]["flags"], 60), survivor.nodes()
    c.wait_converged()
    c.check()

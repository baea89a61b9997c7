"""Failover by Debian's redis-sentinel 7.0, unchanged: three Sentinels, one
cellgate primary and two replicas, a redis-py Sentinel client in a loop;
kill -9 the primary."""
import json
import os
import random
import subprocess
import threading
import time

import pytest
import redis
from redis.sentinel import Sentinel

import harness
from test_node_clients import CLIENTS, ensure_node_modules

REDIS_SENTINEL = "/usr/bin/redis-sentinel"
LIMIT = 20                       # per key and hour; the fake clocks stand still


class SentinelProc:
    def __init__(self, workdir, primary_port):
        self.port = harness.free_port()
        self.conf = os.path.join(workdir, "sentinel-%d.conf" % self.port)
        with open(self.conf, "w") as f:
            f.write("port %d\nbind 127.0.0.1\ndir %s\n"
                    "sentinel monitor mymaster 127.0.0.1 %d 2\n"
                    "sentinel down-after-milliseconds mymaster 1000\n"
                    "sentinel failover-timeout mymaster 5000\n"
                    "sentinel parallel-syncs mymaster 1\n"
                    % (self.port, workdir, primary_port))
        self.log = open(os.path.join(workdir, "sentinel-%d.log" % self.port), "wb")
        self.proc = subprocess.Popen([REDIS_SENTINEL, self.conf],
                                     stdout=self.log, stderr=self.log)

    def ask(self, *args):
        return redis.Redis(port=self.port, socket_timeout=2).execute_command(*args)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()


def safe_info(d):
    """INFO replication, or {} while the daemon is being reconfigured."""
    try:
        return d.info("replication")
    except (redis.RedisError, OSError):
        return {}


@pytest.fixture
def sentinels(tmp_path):
    started = []

    def start(primary_port):
        for _ in range(3):
            started.append(SentinelProc(str(tmp_path), primary_port))
        return started

    yield start
    for s in started:
        s.stop()


def test_sentinel_fails_over_to_a_replica_and_the_client_carries_on(
        start_daemon, sentinels):
    primary = start_daemon(fakeclock=True, name="primary")
    replicas = [start_daemon(fakeclock=True, name="replica%d" % i) for i in range(2)]
    for r in replicas:
        r.clock.set(primary.clock.ns)
        assert r.raw().command("REPLICAOF", "127.0.0.1", primary.port) == b"+OK\r\n"
    for r in replicas:
        assert harness.wait_until(
            lambda: r.info("replication").get("master_link_status") == "up", 10)
    sents = sentinels(primary.port)
    # Every Sentinel sees both replicas and the two other Sentinels.
    def ready(s):
        try:
            m = dict(zip(*[iter(s.ask("SENTINEL", "MASTER", "mymaster"))] * 2))
        except redis.RedisError:
            return False
        return m[b"num-slaves"] == b"2" and m[b"num-other-sentinels"] == b"2"
    assert harness.wait_until(lambda: all(ready(s) for s in sents), 20)

    sentinel = Sentinel([("127.0.0.1", s.port) for s in sents], socket_timeout=1)
    client = sentinel.master_for("mymaster", socket_timeout=1)
    keys = ["user:%d" % i for i in range(1000)]
    allowed = {}
    errors = []                               # (monotonic time, error)
    successes = []                            # monotonic times
    stop = threading.Event()

    def load():
        rng = random.Random(3)
        deadline = time.monotonic() + 60
        while not stop.is_set() and time.monotonic() < deadline:
            k = rng.choice(keys)
            try:
                if client.execute_command("CL.THROTTLE", k, LIMIT - 1, 1, 3600)[0] == 0:
                    allowed[k] = allowed.get(k, 0) + 1
                successes.append(time.monotonic())
            except (redis.RedisError, OSError) as e:
                errors.append((time.monotonic(), repr(e)))
                time.sleep(0.05)

    t = threading.Thread(target=load)
    t.start()
    assert harness.wait_until(lambda: len(successes) > 500, 20)
    primary.proc.kill()
    killed_at = time.monotonic()
    primary.proc.wait(10)
    primary.stopped = True
    # Every Sentinel names one of the replicas, and keeps naming it.
    def agreed():
        try:
            ports = {int(x.ask("SENTINEL", "GET-MASTER-ADDR-BY-NAME",
                               "mymaster")[1]) for x in sents}
        except (redis.RedisError, OSError):
            return None
        return ports.pop() if len(ports) == 1 else None
    assert harness.wait_until(lambda: agreed() in [r.port for r in replicas], 30)
    new_addr = agreed()
    # The client carries on by itself: errors only in the failover window.
    assert harness.wait_until(lambda: errors and successes and
                              successes[-1] > errors[-1][0] + 2 and
                              len([x for x in successes if x > errors[-1][0]]) > 200,
                              30)
    stop.set()
    t.join(10)
    assert not [e for e in errors if e[0] < killed_at], errors[:3]
    last_error = errors[-1][0]
    failover_s = min(x for x in successes if x > last_error) - killed_at
    # Over-admission: decisions beyond a key's limit across the failover.
    over = sum(max(0, n - LIMIT) for n in allowed.values())
    print("failover %.2f s (client errors from the kill until the new primary "
          "answered), %d client errors, over-admission %d (of %d allowed), "
          "master switches seen by Sentinel: %s"
          % (failover_s, len(errors), over, sum(allowed.values()),
             [s.ask("SENTINEL", "MASTER", "mymaster")[s.ask("SENTINEL", "MASTER",
              "mymaster").index(b"config-epoch") + 1] for s in sents[:1]]))
    assert failover_s < 10
    assert over <= 20
    assert sentinel.discover_master("mymaster")[1] == new_addr
    # ioredis's own Sentinel support finds the same primary and writes there.
    ensure_node_modules()
    node = subprocess.run(["node", "sentinel.mjs"] + [str(x.port) for x in sents],
                          cwd=CLIENTS, capture_output=True, text=True, timeout=60)
    assert node.returncode == 0, node.stdout + node.stderr
    seen = json.loads(node.stdout.strip().splitlines()[-1])
    assert seen["port"] == new_addr and seen["role"] == "master"
    assert seen["reply"][0] == 0
    other = [r for r in replicas if r.port != new_addr][0]
    assert harness.wait_until(
        lambda: safe_info(other).get("master_port") == new_addr, 15)

    # The old primary, restarted, is made a replica of the new one and
    # catches up (Sentinel waits a few seconds before it reconfigures it).
    old = start_daemon("--port", str(primary.port), fakeclock=True, name="old",
                       port=primary.port)
    old.clock.set(primary.clock.ns)
    assert harness.wait_until(
        lambda: safe_info(old).get("master_port") == agreed()
        and safe_info(old).get("master_link_status") == "up", 30)
    new = [r for r in replicas if r.port == agreed()][0]
    want = new.info("replication")["master_repl_offset"]
    assert harness.wait_until(
        lambda: safe_info(old).get("slave_repl_offset", -1) >= want, 10)
    assert old.raw().command("DBSIZE") == new.raw().command("DBSIZE")

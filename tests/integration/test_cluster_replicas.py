"""cluster-mode yes with replicas: a cluster-node line may name a replica's
primary ("replicaof <id>"). The replica copies its primary, the slot map
lists it, READONLY clients read from it, and a failover (REPLICAOF as
Sentinel sends it, then CLUSTER PROMOTE on every node, as the shipped
client-reconfig-script sends it) moves the shard's slots to it and rewrites
each node's cluster-node lines."""
import os
import subprocess
import time

import pytest
import redis
from redis.cluster import RedisCluster

import harness
from harness import reference_slot as keyslot

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAILOVER_SCRIPT = os.path.join(ROOT, "tools", "cellgate-cluster-failover")
PRIMARY_IDS = ["a" * 40, "b" * 40, "c" * 40]
REPLICA_IDS = ["d" * 40, "e" * 40, "f" * 40]
RANGES = ["0-5460", "5461-10922", "10923-16383"]


def topology_lines(ports):
    """Primaries on ports[0:3], the replica of primary i on ports[3 + i]."""
    lines = []
    for i in range(3):
        lines.append("cluster-node %s 127.0.0.1:%d %s" % (PRIMARY_IDS[i], ports[i], RANGES[i]))
    for i in range(3):
        lines.append("cluster-node %s 127.0.0.1:%d replicaof %s"
                     % (REPLICA_IDS[i], ports[3 + i], PRIMARY_IDS[i]))
    return lines


def node_lines(path):
    with open(path) as f:
        return [line.rstrip("\n") for line in f if line.startswith("cluster-node ")]


def key_in_shard(shard, n=0):
    """The n-th key "k:<i>" whose slot is in shard's range."""
    first, last = (int(x) for x in RANGES[shard].split("-"))
    found = -1
    for i in range(100000):
        if first <= keyslot("k:%d" % i) <= last:
            found += 1
            if found == n:
                return "k:%d" % i
    raise AssertionError("no key")


class ShardedCluster:
    """Three shards of a primary and a replica, each node with its own copy
    of the topology in its own config file (a failover rewrites it)."""

    def __init__(self, start_daemon, tmp_path, fakeclock=False, extra=""):
        self.ports = []
        while len(self.ports) < 6:
            p = harness.free_port()
            if p not in self.ports:
                self.ports.append(p)
        self.tmp = tmp_path
        self.start_daemon = start_daemon
        self.fakeclock = fakeclock
        self.text = "cluster-mode yes\nsave-interval 3600\n%s\n# the topology\n%s\n" % (
            extra, "\n".join(topology_lines(self.ports)))
        self.confs = []
        for p in self.ports:
            path = str(tmp_path / ("node-%d.conf" % p))
            with open(path, "w") as f:
                f.write(self.text)
            self.confs.append(path)
        self.nodes = [self.start(i) for i in range(6)]
        for r in self.nodes[3:]:
            assert harness.wait_until(
                lambda: r.info("replication").get("master_link_status") == "up", 10)

    def start(self, i):
        d = self.start_daemon(config_file=self.confs[i], port=self.ports[i],
                              fakeclock=self.fakeclock, name="node-%d" % i)
        if self.fakeclock:
            d.clock.set(harness.FAKE_EPOCH_NS)
        return d

    def client(self, **kw):
        return RedisCluster(host="127.0.0.1", port=self.ports[0], **kw)

    def synced(self, shard):
        p, r = self.nodes[shard], self.nodes[3 + shard]
        want = p.info("replication")["master_repl_offset"]
        return harness.wait_until(
            lambda: r.info("replication").get("slave_repl_offset", -1) >= want, 10)


@pytest.fixture
def sharded(start_daemon, tmp_path):
    return ShardedCluster(start_daemon, tmp_path)


def moved_to(reply, port):
    return isinstance(reply, bytes) and reply.startswith(b"-MOVED ") and \
        reply.rstrip().endswith(b"127.0.0.1:%d" % port)


def test_cluster_slots_shards_and_nodes_list_each_primarys_replica(sharded):
    ports = sharded.ports
    for node in sharded.nodes:
        slots = node.client().execute_command("CLUSTER", "SLOTS")
        by_first = {s[0]: s for s in slots}
        for i, r in enumerate(RANGES):
            entry = by_first[int(r.split("-")[0])]
            assert entry[2][:3] == [b"127.0.0.1", ports[i], PRIMARY_IDS[i].encode()]
            assert entry[3][:3] == [b"127.0.0.1", ports[3 + i], REPLICA_IDS[i].encode()]
            assert len(entry) == 4
    replica = sharded.nodes[4]
    nodes = replica.raw().command("CLUSTER", "NODES").decode()
    lines = sorted(nodes.split("\r\n", 1)[1].strip().split("\n"))
    assert lines[1] == "%s 127.0.0.1:%d@%d master - 0 0 2 connected 5461-10922" % (
        PRIMARY_IDS[1], ports[1], ports[1] + 10000)
    assert lines[4] == "%s 127.0.0.1:%d@%d myself,slave %s 0 0 2 connected" % (
        REPLICA_IDS[1], ports[4], ports[4] + 10000, PRIMARY_IDS[1])
    shards = replica.client().execute_command("CLUSTER", "SHARDS")
    assert len(shards) == 3
    roles = [[dict(zip(n[::2], n[1::2]))[b"role"] for n in dict(zip(s[::2], s[1::2]))[b"nodes"]]
             for s in shards]
    assert roles == [[b"master", b"replica"]] * 3
    assert replica.raw().command("CLUSTER", "REPLICAS", PRIMARY_IDS[1]) == (
        b"*1\r\n$%d\r\n%s\r\n" % (len(lines[4]), lines[4].encode()))
    assert replica.raw().command("CLUSTER", "SLAVES", REPLICA_IDS[1]) == \
        b"-ERR The specified node is not a master\r\n"
    info = replica.raw().command("CLUSTER", "INFO").decode()
    assert "cluster_known_nodes:6\r\n" in info and "cluster_size:3\r\n" in info
    # redis-py reads the replicas out of CLUSTER SLOTS.
    rc = sharded.client()
    kinds = sorted((n.port, n.server_type) for n in rc.get_nodes())
    assert kinds == sorted([(p, "primary") for p in ports[:3]] +
                           [(p, "replica") for p in ports[3:]])
    rc.close()


def test_replica_copies_its_primary_and_answers_readonly_reads(sharded):
    rc = sharded.client()
    keys = ["k:%d" % i for i in range(300)]
    for k in keys:
        assert rc.execute_command("CL.THROTTLE", k, 4, 5, 60)[0] == 0
    for shard in range(3):
        assert sharded.synced(shard)
    for k in keys[:20]:
        shard = next(i for i, r in enumerate(RANGES)
                     if int(r.split("-")[0]) <= keyslot(k) <= int(r.split("-")[1]))
        primary, replica = sharded.nodes[shard], sharded.nodes[3 + shard]
        conn = replica.raw()
        # Without READONLY a replica sends every key to its primary.
        assert moved_to(conn.command("CL.THROTTLE", k, 4, 5, 60, "PEEK"), primary.port)
        assert conn.command("READONLY") == b"+OK\r\n"
        got = conn.command("CL.THROTTLE", k, 4, 5, 60, "PEEK")
        want = primary.raw().command("CL.THROTTLE", k, 4, 5, 60, "PEEK")
        assert got == want and got.startswith(b"*5\r\n:0\r\n:5\r\n:3\r\n"), (k, got)
        # A write still goes to the primary, and READWRITE ends the reads.
        assert moved_to(conn.command("CL.THROTTLE", k, 4, 5, 60), primary.port)
        assert conn.command("READWRITE") == b"+OK\r\n"
        assert moved_to(conn.command("EXISTS", k), primary.port)
        conn.close()
    # A key of another shard is MOVED to that shard's primary.
    other = key_in_shard(2)
    conn = sharded.nodes[3].raw()
    conn.command("READONLY")
    assert moved_to(conn.command("EXISTS", other), sharded.ports[2])
    # Writes on a replica without keys are refused as on any replica.
    assert conn.command("FLUSHALL") == \
        b"-READONLY You can't write against a read only replica.\r\n"
    assert sharded.nodes[3].raw().command("DBSIZE") == sharded.nodes[0].raw().command("DBSIZE")
    rc.close()


def test_failover_by_replicaof_and_cluster_promote_moves_the_slots(sharded, tmp_path):
    """What Sentinel and the shipped script do, step by step: the shard's
    primary dies, its replica gets REPLICAOF NO ONE and CONFIG REWRITE, then
    the script tells every node; the limits carry on from the replica's
    copy, and every node's file names the new primary."""
    ports, nodes = sharded.ports, sharded.nodes
    key = key_in_shard(0)
    rc = sharded.client()
    for _ in range(3):
        rc.execute_command("CL.THROTTLE", key, 4, 5, 60)
    assert sharded.synced(0)
    nodes[0].proc.kill()
    nodes[0].proc.wait(10)
    nodes[0].stopped = True
    promoted = nodes[3]
    assert promoted.raw().command("REPLICAOF", "NO", "ONE") == b"+OK\r\n"
    assert promoted.raw().command("CONFIG", "REWRITE") == b"+OK\r\n"
    assert promoted.info("replication")["role"] == "master"
    # It serves the shard at once; its quota went on from the copy.
    assert promoted.raw().command("CL.THROTTLE", key, 4, 5, 60).startswith(
        b"*5\r\n:0\r\n:5\r\n:1\r\n")
    want = ["cluster-node %s 127.0.0.1:%d replicaof %s" % (PRIMARY_IDS[0], ports[0], REPLICA_IDS[0]),
            "cluster-node %s 127.0.0.1:%d %s" % (PRIMARY_IDS[1], ports[1], RANGES[1]),
            "cluster-node %s 127.0.0.1:%d %s" % (PRIMARY_IDS[2], ports[2], RANGES[2]),
            "cluster-node %s 127.0.0.1:%d %s" % (REPLICA_IDS[0], ports[3], RANGES[0]),
            "cluster-node %s 127.0.0.1:%d replicaof %s" % (REPLICA_IDS[1], ports[4], PRIMARY_IDS[1]),
            "cluster-node %s 127.0.0.1:%d replicaof %s" % (REPLICA_IDS[2], ports[5], PRIMARY_IDS[2])]
    assert node_lines(sharded.confs[3]) == want
    with open(sharded.confs[3]) as f:
        assert "# the topology\n" in f.read()            # comments stay
    # The other shards still send the key to the dead primary...
    assert moved_to(nodes[1].raw().command("EXISTS", key), ports[0])
    # ...until the script runs, as Sentinel runs it.
    script = subprocess.run([FAILOVER_SCRIPT, "shard-1", "leader", "start", "127.0.0.1",
                             str(ports[0]), "127.0.0.1", str(ports[3])],
                            capture_output=True, text=True, timeout=60)
    assert script.returncode == 0, script.stderr
    assert "5 nodes told" in script.stderr        # all but the dead one
    for i in (1, 2, 4, 5):
        assert moved_to(nodes[i].raw().command("EXISTS", key), ports[3]), i
        assert node_lines(sharded.confs[i]) == want, i
        slots = nodes[i].client().execute_command("CLUSTER", "SLOTS")
        entry = [s for s in slots if s[0] == 0][0]
        assert entry[2][1] == ports[3] and entry[3][1] == ports[0]
    # Running it again (every Sentinel does) changes nothing.
    again = subprocess.run([FAILOVER_SCRIPT, "shard-1", "observer", "start", "127.0.0.1",
                            str(ports[0]), "127.0.0.1", str(ports[3])],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr
    assert all(node_lines(c) == want for c in sharded.confs[1:])
    # A cluster client finds the new primary.
    rc2 = RedisCluster(host="127.0.0.1", port=ports[1])
    assert rc2.execute_command("CL.THROTTLE", key, 4, 5, 60)[:3] == [0, 5, 0]
    assert rc2.execute_command("CL.THROTTLE", key, 4, 5, 60)[0] == 1
    # A restarted node reads the new map from its rewritten file.
    nodes[1].stop()
    nodes[1] = sharded.start(1)
    assert moved_to(nodes[1].raw().command("EXISTS", key), ports[3])
    # The old primary, back with its old file, claims the shard until told
    # to follow (Sentinel sends it REPLICAOF the new primary).
    old = sharded.start(0)
    assert old.raw().command("REPLICAOF", "127.0.0.1", ports[3]) == b"+OK\r\n"
    assert harness.wait_until(
        lambda: old.info("replication").get("master_link_status") == "up", 10)
    assert old.raw().command("CONFIG", "REWRITE") == b"+OK\r\n"
    assert node_lines(sharded.confs[0]) == want
    assert moved_to(old.raw().command("EXISTS", key), ports[3])
    conn = old.raw()
    conn.command("READONLY")
    assert harness.wait_until(lambda: conn.command("CL.THROTTLE", key, 4, 5, 60, "PEEK")
                              .startswith(b"*5\r\n:1\r\n"), 10)
    rc.close()
    rc2.close()


def test_replicaof_must_stay_in_the_shard(sharded):
    replica = sharded.nodes[3].raw()
    want = (b"-ERR REPLICAOF in cluster mode must name another node of this "
            b"node's shard, as its cluster-node line writes it\r\n")
    assert replica.command("REPLICAOF", "127.0.0.1", sharded.ports[1]) == want
    assert replica.command("REPLICAOF", "127.0.0.1", sharded.ports[3]) == want
    assert replica.command("REPLICAOF", "10.9.9.9", 6379) == want
    assert sharded.nodes[3].info("replication")["master_port"] == sharded.ports[0]
    # The primary, pointed at its replica, swaps places with it.
    assert sharded.nodes[0].raw().command("REPLICAOF", "127.0.0.1", sharded.ports[3]) == b"+OK\r\n"
    assert sharded.nodes[0].raw().command("CLUSTER", "MYID") == b"$40\r\n" + PRIMARY_IDS[0].encode() + b"\r\n"
    line = [x for x in sharded.nodes[0].raw().command("CLUSTER", "NODES").decode().split("\r\n", 1)[1].split("\n")
            if x.startswith(PRIMARY_IDS[0])][0]
    assert " myself,slave %s " % REPLICA_IDS[0] in line
    assert sharded.nodes[1].raw().command("CLUSTER", "PROMOTE", "9" * 40) == \
        b"-ERR Unknown node " + b"9" * 40 + b"\r\n"
    assert sharded.nodes[1].raw().command("CLUSTER", "PROMOTE", PRIMARY_IDS[1]) == b"+OK\r\n"


@pytest.mark.parametrize("lines,want", [
    (["cluster-node %s 127.0.0.1:{0} 0-16383" % PRIMARY_IDS[0],
      "cluster-node %s 127.0.0.1:1 replicaof %s" % (REPLICA_IDS[0], REPLICA_IDS[1])],
     "is a replica of %s, which is not among the cluster-node lines" % REPLICA_IDS[1]),
    (["cluster-node %s 127.0.0.1:{0} 0-16383" % PRIMARY_IDS[0],
      "cluster-node %s 127.0.0.1:1 replicaof %s 5" % (REPLICA_IDS[0], PRIMARY_IDS[0])],
     ":3: cluster-node %s: a replica owns no slots" % REPLICA_IDS[0]),
    (["replicaof 127.0.0.1 1", "cluster-node %s 127.0.0.1:{0} 0-16383" % PRIMARY_IDS[0]],
     "replicaof is not used with cluster-mode yes"),
])
def test_bad_replica_topologies_stop_the_start(tmp_path, lines, want):
    port = harness.free_port()
    conf = tmp_path / "c.conf"
    conf.write_text("cluster-mode yes\n" + "\n".join(lines).replace("{0}", str(port)) + "\n")
    r = subprocess.run([harness.BIN, str(conf), "--port", str(port), "--test-config"],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode != 0
    assert want in r.stderr, r.stderr


def test_a_replica_announces_the_address_of_its_line(start_daemon, tmp_path):
    """Sentinel learns replicas from the primary's INFO: it must see the
    addresses the cluster-node lines use, which REPLICAOF and the script
    match against."""
    ports = [harness.free_port(), harness.free_port()]
    conf = tmp_path / "c.conf"
    conf.write_text("cluster-mode yes\n"
                    "cluster-node %s 127.0.0.1:%d 0-16383\n"
                    "cluster-node %s localhost:%d replicaof %s\n"
                    % (PRIMARY_IDS[0], ports[0], REPLICA_IDS[0], ports[1], PRIMARY_IDS[0]))
    primary = start_daemon(config_file=str(conf), port=ports[0])
    start_daemon(config_file=str(conf), port=ports[1])
    assert harness.wait_until(
        lambda: primary.info("replication").get("connected_slaves") == 1, 10)
    slave = primary.info("replication")["slave0"]
    assert (slave["ip"], slave["port"]) == ("localhost", ports[1])

"""cluster-mode emulated: a one-node Redis Cluster that owns every slot, so
cluster-aware clients route limiter commands here unchanged."""
import subprocess

import pytest
import redis
from redis.cluster import RedisCluster

from harness import reference_slot


@pytest.fixture
def node(start_daemon):
    return start_daemon("--cluster-mode", "emulated")


def test_keyslot_follows_redis_cluster_crc16_and_hash_tags(node):
    conn = node.raw()
    # Values from the Redis Cluster specification's examples.
    for key, slot in (("foo", 12182), ("{user1000}.following", 3443),
                      ("user1000", 3443)):
        assert conn.command("CLUSTER", "KEYSLOT", key) == b":%d\r\n" % slot
    for key in (b"", b"{}x", b"a{b}c", b"{a", b"x}{y}", b"{{z}}", b"\xff\x00key"):
        assert conn.command("CLUSTER", "KEYSLOT", key) == b":%d\r\n" % reference_slot(key)


def test_slots_nodes_shards_info_myid(node):
    r = node.client()
    myid = r.execute_command("CLUSTER", "MYID").decode()
    assert len(myid) == 40
    assert node.raw().command("CLUSTER", "SLOTS") == (
        b"*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:%d\r\n$40\r\n%s\r\n"
        b"*0\r\n" % (node.port, myid.encode()))
    nodes = node.raw().command("CLUSTER", "NODES")
    assert b"%s 127.0.0.1:%d@%d myself,master - 0 0 1 connected 0-16383\n" % (
        myid.encode(), node.port, node.port + 10000) in nodes
    info = r.execute_command("CLUSTER", "INFO")
    assert b"cluster_state:ok" in info and b"cluster_slots_assigned:16384" in info
    shards = node.raw().command("CLUSTER", "SHARDS")
    assert shards.startswith(b"*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n")
    assert r.info("cluster")["cluster_enabled"] == 1


def test_redis_py_cluster_client_routes_limiters_here(node):
    rc = RedisCluster(host="127.0.0.1", port=node.port)
    assert rc.execute_command("CL.THROTTLE", "{ip:1.2.3.4}:login", 1, 1, 60) == [0, 2, 1, -1, 60]
    assert rc.execute_command("RL.FIXED", "{ip:1.2.3.4}:daily", 3, 60)[:3] == [0, 3, 2]
    assert node.client().dbsize() == 2
    rc.close()


def test_redis_cli_cluster_mode(node):
    out = subprocess.run(["redis-cli", "-c", "-p", str(node.port),
                          "CL.THROTTLE", "user123", "15", "30", "60"],
                         capture_output=True, timeout=20)
    assert out.stdout == b"0\n16\n15\n-1\n2\n"
    # (redis-benchmark --cluster insists on at least two nodes: "Invalid
    # cluster: 1 node(s).", so it needs the multi-node cluster of issue 7.)


def test_cluster_commands_are_refused_when_not_emulated(r):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("CLUSTER", "SLOTS")
    assert str(e.value) == "This instance has cluster support disabled"

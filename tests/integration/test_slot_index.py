"""The keys of a hash slot (CLUSTER COUNTKEYSINSLOT, CLUSTER GETKEYSINSLOT),
what Redis Cluster's slot migration reads: exact counts after every kind of
write, delete, expiry, flush and restore, after a restart from the snapshot
or the journal, and on a replica after its full sync; pages that give every
key of a slot exactly once."""
import os
import subprocess

import pytest

import harness
from harness import reference_slot as keyslot


@pytest.fixture
def node(start_daemon):
    return start_daemon("--cluster-mode", "emulated")


def count(conn, slot):
    got = conn.command("CLUSTER", "COUNTKEYSINSLOT", slot)
    assert got.startswith(b":"), got
    return int(got[1:-2])


def count_of(conn, key):
    return count(conn, keyslot(key))


def keys_of_slot(client, slot, n):
    return client.execute_command("CLUSTER", "GETKEYSINSLOT", slot, n)


def slots_of(keys):
    by_slot = {}
    for k in keys:
        by_slot[keyslot(k)] = by_slot.get(keyslot(k), 0) + 1
    return by_slot


def test_arguments_and_errors_in_redis_bytes(node):
    c = node.raw()
    for args, want in [
        (("COUNTKEYSINSLOT",), b"-ERR wrong number of arguments for 'cluster|countkeysinslot' command\r\n"),
        (("COUNTKEYSINSLOT", 1, 2), b"-ERR wrong number of arguments for 'cluster|countkeysinslot' command\r\n"),
        (("COUNTKEYSINSLOT", "x"), b"-ERR value is not an integer or out of range\r\n"),
        (("COUNTKEYSINSLOT", "1.5"), b"-ERR value is not an integer or out of range\r\n"),
        (("COUNTKEYSINSLOT", "99999999999999999999"), b"-ERR value is not an integer or out of range\r\n"),
        (("COUNTKEYSINSLOT", -1), b"-ERR Invalid slot\r\n"),
        (("COUNTKEYSINSLOT", 16384), b"-ERR Invalid slot\r\n"),
        (("COUNTKEYSINSLOT", 16383), b":0\r\n"),
        (("GETKEYSINSLOT", 1), b"-ERR wrong number of arguments for 'cluster|getkeysinslot' command\r\n"),
        (("GETKEYSINSLOT", 1, 2, 3), b"-ERR wrong number of arguments for 'cluster|getkeysinslot' command\r\n"),
        (("GETKEYSINSLOT", "x", 1), b"-ERR value is not an integer or out of range\r\n"),
        (("GETKEYSINSLOT", 1, "x"), b"-ERR value is not an integer or out of range\r\n"),
        (("GETKEYSINSLOT", -1, "x"), b"-ERR value is not an integer or out of range\r\n"),
        (("GETKEYSINSLOT", 16384, 1), b"-ERR Invalid slot or number of keys\r\n"),
        (("GETKEYSINSLOT", 1, -1), b"-ERR Invalid slot or number of keys\r\n"),
        (("GETKEYSINSLOT", 0, 0), b"*0\r\n"),
    ]:
        assert c.command("CLUSTER", *args) == want, args
    c.command("SET", "foo", "bar")
    assert c.command("CLUSTER", "COUNTKEYSINSLOT", 12182) == b":1\r\n"
    assert c.command("CLUSTER", "GETKEYSINSLOT", 12182, 5) == b"*1\r\n$3\r\nfoo\r\n"
    assert c.command("CLUSTER", "GETKEYSINSLOT", 12182, 0) == b"*0\r\n"


def test_counts_follow_writes_deletes_expiries_and_flushall(node):
    c = node.raw()
    r = node.client()
    tagged = ["{user1}:%d" % i for i in range(100)]
    for k in tagged:
        assert c.command("CL.THROTTLE", k, 5, 10, 60)[:4] == b"*5\r\n"
    r.set("plain", "v")
    r.incr("counter")
    r.zadd("{user1}:log", {"a": 1})
    r.rpush("{user1}:list", "x")
    assert count_of(c, "{user1}") == 102
    assert count_of(c, "plain") == 1 and count_of(c, "counter") == 1
    # A write that replaces a record (a string turned integer) keeps one key.
    r.set("plain", "12")
    assert count_of(c, "plain") == 1
    assert r.delete(*tagged[:10]) == 10
    r.lpop("{user1}:list")                  # emptied: the key goes
    assert count_of(c, "{user1}") == 91
    r.rename("{user1}:log", "{user2}:log")
    assert count_of(c, "{user1}") == 90 and count_of(c, "{user2}") == 1
    # Expiry, through the wheel (no lookup of these keys).
    for k in tagged[10:40]:
        r.pexpire(k, 30)
    assert harness.wait_until(lambda: count_of(c, "{user1}") == 60, 10)
    # Expiry met by a lookup.
    r.pexpire("plain", 30)
    assert harness.wait_until(lambda: r.get("plain") is None, 5)
    assert count_of(c, "plain") == 0
    # What DBSIZE says is what the slots add up to.
    assert r.dbsize() == 60 + 1 + 1
    r.flushall()
    assert count_of(c, "{user1}") == 0 and count_of(c, "counter") == 0
    assert keys_of_slot(r, keyslot("{user1}"), 10) == []
    r.set("{user1}:again", 1)
    assert count_of(c, "{user1}") == 1


def test_restore_and_restore_replace_count_once(node):
    r = node.client()
    r.set("{d}:src", "payload")
    dump = r.dump("{d}:src")
    r.restore("{d}:copy", 0, dump)
    assert count_of(node.raw(), "{d}") == 2
    r.restore("{d}:copy", 0, dump, replace=True)
    assert count_of(node.raw(), "{d}") == 2
    r.restore("{d}:gone", 1, dump)          # expires in 1 ms
    assert harness.wait_until(lambda: count_of(node.raw(), "{d}") == 2, 10)


def test_getkeysinslot_pages_give_each_key_once(node):
    r = node.client()
    keys = {("{page}:%d" % i).encode() for i in range(250)}
    p = r.pipeline(transaction=False)
    for k in keys:
        p.set(k, 1)
    p.execute()
    slot = keyslot("{page}")
    assert count(node.raw(), slot) == 250
    first = keys_of_slot(r, slot, 100)
    assert len(first) == 100 and len(set(first)) == 100 and set(first) <= keys
    assert set(keys_of_slot(r, slot, 1000)) == keys
    # As redis-cli --cluster reshard moves a slot: a page, gone, the next.
    seen = []
    for _ in range(100):
        page = keys_of_slot(r, slot, 10)
        if not page:
            break
        seen += page
        assert r.delete(*page) == len(page)
    assert len(seen) == 250 and set(seen) == keys
    assert count(node.raw(), slot) == 0


@pytest.mark.parametrize("persistence", ["journal", "snapshot"])
def test_counts_survive_a_restart(start_daemon, persistence):
    args = ["--cluster-mode", "emulated"]
    if persistence == "journal":
        args += ["--appendonly", "yes"]
    d = start_daemon(*args)
    r = d.client()
    p = r.pipeline(transaction=False)
    keys = ["{s%d}:%d" % (i % 13, i) for i in range(3000)] + ["k:%d" % i for i in range(3000)]
    for k in keys:
        p.incr(k)
    for k in keys[::7]:
        p.delete(k)
    p.execute()
    want = slots_of(k for i, k in enumerate(keys) if i % 7 != 0)
    if persistence == "snapshot":
        assert r.save()
    d.stop()
    d.start()
    c = d.raw()
    for slot, n in want.items():
        assert count(c, slot) == n, slot
    assert sum(count(c, s) for s in range(0, 16384, 97)) == \
        sum(want.get(s, 0) for s in range(0, 16384, 97))


def test_a_replica_counts_its_full_sync_and_the_stream(start_daemon, tmp_path):
    ports = []
    while len(ports) < 2:
        p = harness.free_port()
        if p not in ports:
            ports.append(p)
    text = ("cluster-mode yes\ncluster-node %s 127.0.0.1:%d 0-16383\n"
            "cluster-node %s 127.0.0.1:%d replicaof %s\n"
            % ("a" * 40, ports[0], "b" * 40, ports[1], "a" * 40))
    confs = []
    for p in ports:
        path = tmp_path / ("node-%d.conf" % p)
        path.write_text(text)
        confs.append(str(path))
    primary = start_daemon(config_file=confs[0], port=ports[0], name="primary")
    r = primary.client()
    p = r.pipeline(transaction=False)
    keys = ["{r%d}:%d" % (i % 17, i) for i in range(5000)]
    for k in keys:
        p.set(k, "v")
    p.execute()
    replica = start_daemon(config_file=confs[1], port=ports[1], name="replica")
    assert harness.wait_until(
        lambda: replica.info("replication").get("master_link_status") == "up", 20)

    def synced():
        want = primary.info("replication")["master_repl_offset"]
        return replica.info("replication").get("slave_repl_offset", -1) >= want

    assert harness.wait_until(synced, 20)
    rc = replica.raw()
    for i in range(17):
        assert count_of(rc, "{r%d}" % i) == count_of(primary.raw(), "{r%d}" % i) > 0
    # The stream after it: deletes and new keys.
    p = r.pipeline(transaction=False)
    for k in keys[:100]:
        p.delete(k)
    p.set("{r0}:new", 1)
    p.execute()
    assert harness.wait_until(synced, 20)
    for i in range(17):
        assert count_of(rc, "{r%d}" % i) == count_of(primary.raw(), "{r%d}" % i)
    assert set(keys_of_slot(replica.client(), keyslot("{r3}"), 10000)) == \
        set(keys_of_slot(r, keyslot("{r3}"), 10000))


def test_200k_keys_enumerated_slot_by_slot_give_every_key_once(node):
    n = 200000
    subprocess.run([os.environ["CELLGATE_FILL"], str(node.port), "key:", "0", str(n),
                    "SET", "__key__", "1"], check=True, timeout=120,
                   stdout=subprocess.DEVNULL)
    r = node.client()
    assert r.dbsize() == n
    got = []
    total = 0
    for first in range(0, 16384, 512):
        p = r.pipeline(transaction=False)
        for slot in range(first, first + 512):
            p.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot)
        counts = p.execute()
        p = r.pipeline(transaction=False)
        for slot, c in zip(range(first, first + 512), counts):
            p.execute_command("CLUSTER", "GETKEYSINSLOT", slot, c)
        for slot, page in zip(range(first, first + 512), p.execute()):
            assert all(keyslot(k) == slot for k in page)
            got += page
        total += sum(counts)
    assert total == n
    assert len(got) == n and len(set(got)) == n
    assert set(got) == {b"key:%012d" % i for i in range(n)}


def test_config_set_cluster_mode_emulated_indexes_the_keys_already_there(start_daemon):
    d = start_daemon()
    r = d.client()
    p = r.pipeline(transaction=False)
    keys = ["{late%d}:%d" % (i % 5, i) for i in range(2000)]
    for k in keys:
        p.set(k, 1)
    p.execute()
    assert r.config_set("cluster-mode", "emulated")
    c = d.raw()
    for i in range(5):
        assert count_of(c, "{late%d}" % i) == 400
    r.set("{late0}:more", 1)
    assert count_of(c, "{late0}") == 401
    assert len(keys_of_slot(r, keyslot("{late1}"), 1000)) == 400


def test_a_redis_rdb_file_loads_indexed_database_0_only(start_daemon, tmp_path):
    d = str(tmp_path / "redis-save")
    rs = harness.RedisServer(d, extra_args=["--dbfilename", "dump.rdb"]).start()
    try:
        c = rs.client()
        p = c.pipeline(transaction=False)
        keys = ["{rdb%d}:%d" % (i % 11, i) for i in range(5000)]
        for k in keys:
            p.set(k, "v")
        p.execute_command("SELECT", 3)
        for i in range(300):
            p.set("{rdb0}:db3:%d" % i, "v")
        p.execute()
        c.execute_command("SELECT", 0)
        c.save()
    finally:
        rs.stop()
    cg = start_daemon("--dir", d, "--dbfilename", "dump.rdb", "--cluster-mode", "emulated")
    conn = cg.raw()
    for i in range(11):
        assert count_of(conn, "{rdb%d}" % i) == len([k for k in keys if k.startswith("{rdb%d}" % i)])


def test_eviction_uncounts_what_it_evicts(start_daemon):
    d = start_daemon("--cluster-mode", "emulated", "--maxmemory", "4mb",
                     "--maxmemory-policy", "volatile-ttl")
    r = d.client()
    for first in range(0, 200000, 5000):
        p = r.pipeline(transaction=False)
        for i in range(first, first + 5000):
            p.set("{ev%d}:%d" % (i % 3, i), "x" * 40, ex=3600 + i)
        p.execute(raise_on_error=False)
    assert r.info("stats")["evicted_keys"] > 0
    c = d.raw()
    assert sum(count_of(c, "{ev%d}" % i) for i in range(3)) == r.dbsize()

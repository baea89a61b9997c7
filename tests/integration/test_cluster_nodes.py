"""cluster-mode yes: three cellgates on loopback ports share one static
topology (cluster-node lines). Cluster clients (redis-py RedisCluster,
redis-cli -c, redis-benchmark --cluster) must send every key to the node
that owns its slot, limits must hold exactly across clients on all nodes,
and a stopped node must fail only its own slots."""
import json
import os
import signal
import subprocess
import threading
import time

import pytest
import redis
from redis.cluster import RedisCluster

import harness
from harness import reference_slot as keyslot

IDS = ["a" * 40, "b" * 40, "c" * 40]
RANGES = [["0-5460"], ["5461-10922"], ["10923-16383"]]


def owner_index(slot, ranges=RANGES):
    for i, node_ranges in enumerate(ranges):
        for r in node_ranges:
            first, _, last = r.partition("-")
            if int(first) <= slot <= int(last or first):
                return i
    return None


def topology_text(ports, ranges=RANGES, extra=""):
    lines = ["cluster-mode yes", "save-interval 3600", extra]
    for node_id, port, node_ranges in zip(IDS, ports, ranges):
        lines.append("cluster-node %s 127.0.0.1:%d %s" % (node_id, port, " ".join(node_ranges)))
    return "\n".join(lines) + "\n"


class Cluster:
    def __init__(self, start_daemon, tmp_path, ranges=RANGES):
        self.ports = []
        while len(self.ports) < 3:
            p = harness.free_port()
            if p not in self.ports:
                self.ports.append(p)
        self.conf = str(tmp_path / "cluster.conf")
        self.write(ranges)
        self.nodes = [start_daemon(config_file=self.conf, port=p) for p in self.ports]

    def write(self, ranges, extra=""):
        self.ranges = ranges
        tmp = self.conf + ".tmp"
        with open(tmp, "w") as f:
            f.write(topology_text(self.ports, ranges, extra))
        os.replace(tmp, self.conf)

    def client(self, i=0, **kw):
        return RedisCluster(host="127.0.0.1", port=self.ports[i], **kw)

    def holders(self, key):
        """Indexes of the nodes that hold key, asked directly. EXISTS of a
        key a node does not own is answered with MOVED (as Redis does), so
        every node is asked with KEYS, and the owner with EXISTS too."""
        if isinstance(key, str):
            key = key.encode()
        pattern = b"".join(b"\\" + bytes([c]) if c in b"*?[]\\" else bytes([c]) for c in key)
        found = [i for i, n in enumerate(self.nodes)
                 if n.alive() and n.client().keys(pattern) == [key]]
        owner = owner_index(keyslot(key), self.ranges)
        if owner is not None and self.nodes[owner].alive():
            assert self.nodes[owner].client().exists(key) == (1 if found else 0)
        return found


@pytest.fixture
def cluster(start_daemon, tmp_path):
    return Cluster(start_daemon, tmp_path)


def keys_on_each_node(prefix, per_node):
    """per_node keys for each of the three nodes."""
    out = [[], [], []]
    i = 0
    while min(len(k) for k in out) < per_node:
        key = "%s:%d" % (prefix, i)
        node = owner_index(keyslot(key))
        if len(out[node]) < per_node:
            out[node].append(key)
        i += 1
        assert i < 100000
    return out


# ---- what each node says about the cluster --------------------------------

def test_every_node_describes_the_whole_cluster(cluster):
    p = cluster.ports
    for me, node in enumerate(cluster.nodes):
        raw = node.raw()
        assert raw.command("CLUSTER", "MYID") == b"$40\r\n%s\r\n" % IDS[me].encode()
        lines = []
        for i in range(3):
            lines.append("%s 127.0.0.1:%d@%d %s - 0 0 %d connected %s\n" % (
                IDS[i], p[i], p[i] + 10000, "myself,master" if i == me else "master",
                i + 1, " ".join(RANGES[i])))
        nodes = "".join(lines).encode()
        assert raw.command("CLUSTER", "NODES") == b"$%d\r\n%s\r\n" % (len(nodes), nodes)
        slots = b"*3\r\n"
        for i, (first, last) in enumerate(((0, 5460), (5461, 10922), (10923, 16383))):
            slots += (b"*3\r\n:%d\r\n:%d\r\n*4\r\n$9\r\n127.0.0.1\r\n:%d\r\n$40\r\n%s\r\n*0\r\n"
                      % (first, last, p[i], IDS[i].encode()))
        assert raw.command("CLUSTER", "SLOTS") == slots
        shards = node.client().execute_command("CLUSTER", "SHARDS")
        assert [s[1] for s in shards] == [[0, 5460], [5461, 10922], [10923, 16383]]
        assert [s[3][0][1] for s in shards] == [i.encode() for i in IDS]
        assert [s[3][0][3] for s in shards] == p
        info = node.client().execute_command("CLUSTER", "INFO").decode()
        for field in ("cluster_state:ok", "cluster_slots_assigned:16384",
                      "cluster_known_nodes:3", "cluster_size:3",
                      "cluster_my_epoch:%d" % (me + 1)):
            assert field + "\r\n" in info
        assert raw.command("CLUSTER", "KEYSLOT", "{ratelimit:1.2.3.4:}login") == (
            b":%d\r\n" % keyslot("ratelimit:1.2.3.4:"))
        assert node.client().info("cluster")["cluster_enabled"] == 1


def test_moved_crossslot_and_keyless_commands(cluster):
    raw = cluster.nodes[0].raw()
    # "foo" is slot 12182: node 2's.
    assert raw.command("CL.THROTTLE", "foo", 1, 1, 60) == (
        b"-MOVED 12182 127.0.0.1:%d\r\n" % cluster.ports[2])
    assert raw.command("RL.FIXED", "foo", 5, 60) == (
        b"-MOVED 12182 127.0.0.1:%d\r\n" % cluster.ports[2])
    assert raw.command("EXISTS", "{a}1", "{b}1") == (
        b"-CROSSSLOT Keys in request don't hash to the same slot\r\n")
    assert raw.command("DEL", "{x}1", "{x}2").startswith(b"-MOVED %d " % keyslot("x"))
    # A key of its own slots runs here; so do commands without keys.
    own = keys_on_each_node("own", 1)[0][0]
    assert raw.command("CL.THROTTLE", own, 1, 1, 60) == b"*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:60\r\n"
    assert raw.command("PING") == b"+PONG\r\n"
    assert raw.command("DBSIZE") == b":1\r\n"
    # Same hash tag, same slot, same node: related keys stay together.
    tagged = ["{ratelimit:1.2.3.4:}login", "{ratelimit:1.2.3.4:}signup"]
    rc = cluster.client()
    for k in tagged:
        rc.execute_command("CL.THROTTLE", k, 5, 5, 60)
    home = owner_index(keyslot(tagged[0]))
    assert [cluster.holders(k) for k in tagged] == [[home], [home]]
    assert cluster.nodes[home].client().exists(*tagged) == 2
    # Redirections count as rejected calls, as in Redis.
    stats = cluster.nodes[0].client().info("commandstats")
    assert stats["cmdstat_cl.throttle"]["rejected_calls"] == 1
    rc.close()


def test_eval_is_routed_by_the_keys_numkeys_counts(cluster):
    """EVAL's keys are the numkeys arguments after it: routed by them before
    the script runs (MOVED, CROSSSLOT), as Redis; with none (numkeys 0, or
    one EVAL refuses) it runs on any node."""
    raw = cluster.nodes[0].raw()
    redirect = (b"-MOVED", b"-CROSSSLOT", b"-CLUSTERDOWN")
    moved_foo = b"-MOVED 12182 127.0.0.1:%d\r\n" % cluster.ports[2]
    for name, script in (("EVAL", "return 1"), ("EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"),
                         ("EVAL_RO", "return 1"), ("EVALSHA_RO", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db")):
        assert raw.command(name, script, 1, "foo") == moved_foo, name
        assert raw.command(name, script, 1, "foo", "arg") == moved_foo, name
        assert raw.command(name, script, 2, "{a}1", "{b}1") == (
            b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"), name
    assert raw.command("EVAL", "return 1", 2, "{x}1", "{x}2").startswith(
        b"-MOVED %d " % keyslot("x"))
    # The arguments after the keys do not route: "foo" is an argument here.
    own = keys_on_each_node("own", 1)[0][0]
    tagged = ["{%s}1" % own, "{%s}2" % own]
    for line in ((0,), (0, "foo"), (1, own, "foo"), (2, tagged[0], tagged[1]),
                 (3, "foo"), (-1, "foo"), ("x", "foo")):
        reply = raw.command("EVAL", "return 1", *line)
        assert not reply.startswith(redirect), (line, reply)
    # Inside MULTI: refused when queued (EXEC aborts), and EXEC's keys, EVAL's
    # among them, must share one slot.
    assert raw.command("MULTI") == b"+OK\r\n"
    assert raw.command("EVAL", "return 1", 1, "foo") == moved_foo
    assert raw.command("EXEC").startswith(b"-EXECABORT")
    two = keys_on_each_node("mine", 2)[0]
    assert keyslot(two[0]) != keyslot(two[1])
    assert raw.command("MULTI") == b"+OK\r\n"
    assert raw.command("GET", two[0]) == b"+QUEUED\r\n"
    assert raw.command("EVAL", "return 1", 1, two[1]) == b"+QUEUED\r\n"
    assert raw.command("EXEC") == (
        b"-CROSSSLOT Keys in request don't hash to the same slot\r\n")


def test_cluster_options_are_fixed_at_start(cluster, start_daemon):
    r = cluster.nodes[0].client()
    for name, value in (("cluster-node-id", IDS[1]), ("cluster-announce-port", "1"),
                        ("cluster-announce-ip", "x")):
        with pytest.raises(redis.ResponseError, match="can't set immutable config"):
            r.config_set(name, value)
    for value in ("no", "emulated", "yes"):
        with pytest.raises(redis.ResponseError, match="cluster-mode yes is set at start-up only"):
            r.config_set("cluster-mode", value)
    # Between no and emulated it still changes at run time.
    plain = start_daemon()
    raw = plain.raw()
    assert raw.command("CLUSTER", "MYID").startswith(b"-ERR This instance has cluster support")
    assert raw.command("CONFIG", "SET", "cluster-mode", "yes").startswith(
        b"-ERR CONFIG SET failed (possibly related to argument 'cluster-mode') - cluster-mode yes")
    assert raw.command("CONFIG", "SET", "cluster-mode", "emulated") == b"+OK\r\n"
    assert raw.command("CLUSTER", "SLOTS").startswith(b"*1\r\n*3\r\n:0\r\n:16383\r\n")
    assert raw.command("CONFIG", "SET", "cluster-mode", "no") == b"+OK\r\n"
    assert raw.command("CLUSTER", "SLOTS").startswith(b"-ERR This instance has cluster support")


# ---- clients route each key to its owner ---------------------------------

LIMITERS = (
    ("CL.THROTTLE", ("5", "10", "60")),
    ("RL.FIXED", ("5", "60")),
    ("RL.SLIDING", ("5", "60")),
    ("RL.LOG", ("5", "60")),
    ("RL.TIERS", ("5", "1", "20", "60")),
)


def test_redis_py_cluster_sends_each_key_to_the_node_keyslot_names(cluster):
    rc = cluster.client(1)
    keys = []
    for name, args in LIMITERS:
        for i in range(60):
            key = "%s:user%d" % (name.lower(), i)
            assert rc.execute_command(name, key, *args)[0] == 0
            keys.append(key)
    sizes = [n.client().dbsize() for n in cluster.nodes]
    assert sum(sizes) == len(keys) and min(sizes) > 0
    asker = cluster.nodes[2].client()
    for key in keys:
        slot = asker.execute_command("CLUSTER", "KEYSLOT", key)
        assert slot == keyslot(key)
        assert cluster.holders(key) == [owner_index(slot)], key
    rc.close()


def test_redis_cli_cluster_mode_follows_moved(cluster):
    keys = keys_on_each_node("cli", 2)
    for node_keys in keys:
        for key in node_keys:
            out = subprocess.run(["redis-cli", "-c", "-p", str(cluster.ports[0]),
                                  "CL.THROTTLE", key, "15", "30", "60"],
                                 capture_output=True, timeout=20)
            assert out.stdout == b"0\n16\n15\n-1\n2\n", out
    for i, node_keys in enumerate(keys):
        for key in node_keys:
            assert cluster.holders(key) == [i]
    # Without -c the client sees the redirection itself.
    out = subprocess.run(["redis-cli", "-p", str(cluster.ports[0]), "RL.FIXED",
                          keys[1][0], "5", "60"], capture_output=True, timeout=20)
    assert out.stdout == b"MOVED %d 127.0.0.1:%d\n\n" % (keyslot(keys[1][0]), cluster.ports[1])


def test_node_cluster_clients_route_by_slot(cluster):
    """ioredis Cluster and node-redis createCluster (both RESP3)."""
    from test_node_clients import CLIENTS, ensure_node_modules
    ensure_node_modules()
    out = subprocess.run(["node", "cluster.mjs", str(cluster.ports[0])], cwd=CLIENTS,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted(result) == ["ioredis", "node-redis"]
    for allowed in result.values():
        assert len(allowed) == 20 and set(allowed.values()) == {5}
        assert {owner_index(keyslot(k)) for k in allowed} == {0, 1, 2}
        for key in allowed:
            assert cluster.holders(key) == [owner_index(keyslot(key))]


def test_redis_benchmark_cluster_spreads_keys_by_slot(cluster):
    out = subprocess.run(["redis-benchmark", "--cluster", "-p", str(cluster.ports[0]),
                          "-n", "3000", "-r", "1000", "-c", "6", "-q",
                          "CL.THROTTLE", "bench:{tag}:__rand_int__", "10", "100", "60"],
                         capture_output=True, timeout=120)
    text = out.stdout.decode(errors="replace")
    assert out.returncode == 0, text + out.stderr.decode(errors="replace")
    assert "requests per second" in text
    for i in range(3):
        assert "Master %d: %s 127.0.0.1:%d" % (i, IDS[i], cluster.ports[i]) in text
    for i, node in enumerate(cluster.nodes):
        r = node.client()
        keys = r.keys("bench:*")
        assert keys, "node %d got no keys" % i
        assert all(owner_index(keyslot(k)) == i for k in keys)
        # No request was refused: each went where its slot lives.
        assert r.info("errorstats").get("errorstat_MOVED") is None


# ---- limits hold exactly across clients and nodes ------------------------

def test_limits_are_exact_across_30_clients_on_three_nodes(cluster):
    keys = [k for node_keys in keys_on_each_node("quota", 10) for k in node_keys]
    # One key per limiter, kept in the base key's slot by a hash tag.
    counts = {(cmd, k): 0 for k in keys for cmd in ("CL.THROTTLE", "RL.FIXED", "RL.LOG")}
    lock = threading.Lock()
    errors = []
    start = threading.Barrier(30)

    def worker(n):
        try:
            rc = cluster.client(n % 3)
            start.wait(30)
            mine = {}
            for rnd in range(2):
                for j in range(len(keys)):
                    k = keys[(j + n * 7 + rnd) % len(keys)]
                    # burst 9 + 1 = 10 per hour; 7 per hour; 5 per hour
                    for cmd, args in (("CL.THROTTLE", (9, 1, 3600)),
                                      ("RL.FIXED", (7, 3600)),
                                      ("RL.LOG", (5, 3600))):
                        key = "{%s}:%s" % (k, cmd)
                        if rc.execute_command(cmd, key, *args)[0] == 0:
                            mine[(cmd, k)] = mine.get((cmd, k), 0) + 1
            rc.close()
            with lock:
                for key, c in mine.items():
                    counts[key] += c
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(30)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    limit = {"CL.THROTTLE": 10, "RL.FIXED": 7, "RL.LOG": 5}
    wrong = {key: c for key, c in counts.items() if c != limit[key[0]]}
    assert wrong == {}
    assert time.monotonic() - t0 < 120
    # 30 clients x 2 rounds x 30 keys x 3 limiters, each on its owner.
    total = sum(int(n.client().info("commandstats")["cmdstat_rl.log"]["calls"])
                for n in cluster.nodes)
    assert total == 30 * 2 * len(keys)
    for i, node in enumerate(cluster.nodes):
        assert node.client().dbsize() == 3 * 10


# ---- a node stops, and comes back -----------------------------------------

def test_a_stopped_node_fails_only_its_slots_until_it_returns(cluster):
    keys = keys_on_each_node("down", 3)
    rc = cluster.client(0)
    for node_keys in keys:
        for k in node_keys:
            # burst 0: one request per hour, so the second must be refused
            assert rc.execute_command("CL.THROTTLE", k, 0, 1, 3600)[0] == 0
    rc.close()

    dead = cluster.nodes[2]
    assert dead.stop() == []                   # SIGTERM: saves its snapshot
    rc = cluster.client(0, cluster_error_retry_attempts=1)
    for i in (0, 1):
        for k in keys[i]:
            assert rc.execute_command("CL.THROTTLE", k, 0, 1, 3600)[0] == 1
    for k in keys[2]:
        with pytest.raises((redis.ConnectionError, redis.exceptions.ClusterDownError)):
            rc.execute_command("CL.THROTTLE", k, 0, 1, 3600)
    # The survivors still point at the dead node for its slots.
    assert cluster.nodes[1].raw().command("CL.THROTTLE", keys[2][0], 0, 1, 3600) == (
        b"-MOVED %d 127.0.0.1:%d\r\n" % (keyslot(keys[2][0]), cluster.ports[2]))
    rc.close()

    # Back with its snapshot: its keys are still limited where they stood.
    dead.stopped = False
    dead.start()
    rc = cluster.client(1)
    for node_keys in keys:
        for k in node_keys:
            assert rc.execute_command("CL.THROTTLE", k, 0, 1, 3600)[0] == 1
    assert dead.client().dbsize() == 3
    rc.close()


# ---- reloading the topology ----------------------------------------------

def five_moving_five_staying(cluster):
    """Five keys each in node 0's slots 0-1000 and 1001-5460, made on node 0."""
    moving, staying = [], []
    i = 0
    while len(moving) < 5 or len(staying) < 5:
        key = "mv:%d" % i
        slot = keyslot(key)
        if slot <= 1000 and len(moving) < 5:
            moving.append(key)
        elif 1000 < slot <= 5460 and len(staying) < 5:
            staying.append(key)
        i += 1
    rc = cluster.client(0)
    for k in moving + staying:
        rc.execute_command("RL.FIXED", k, 3, 60)
    rc.close()
    assert cluster.nodes[0].client().dbsize() == 10
    return moving, staying


def test_cluster_reload_moves_slots_and_drops_foreign_keys(cluster):
    moving, staying = five_moving_five_staying(cluster)
    n0 = cluster.nodes[0].client()

    # Node 1 takes 0-1000; node 2 loses 16000-16383 to nobody.
    new = [["1001-5460"], ["0-1000", "5461-10922"], ["10923-15999"]]
    cluster.write(new)
    for node in cluster.nodes[:2]:
        assert node.raw().command("CLUSTER", "RELOAD") == b"+OK\r\n"
    assert n0.dbsize() == 5
    assert all(cluster.holders(k) == [] for k in moving)
    assert all(cluster.holders(k) == [0] for k in staying)
    raw0 = cluster.nodes[0].raw()
    assert raw0.command("RL.FIXED", moving[0], 3, 60) == (
        b"-MOVED %d 127.0.0.1:%d\r\n" % (keyslot(moving[0]), cluster.ports[1]))
    assert b" 0-1000 5461-10922\n" in cluster.nodes[1].client().execute_command("CLUSTER", "NODES")
    assert b"Dropped 5 keys" in cluster.nodes[0].log().encode()

    # SIGHUP does the same on node 2.
    cluster.nodes[2].proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    info = b""
    while time.monotonic() < deadline:
        info = cluster.nodes[2].client().execute_command("CLUSTER", "INFO")
        if b"cluster_state:fail" in info:
            break
        time.sleep(0.05)
    assert b"cluster_state:fail\r\ncluster_slots_assigned:16000\r\n" in info
    gap_key = next("gap:%d" % i for i in range(100000) if keyslot("gap:%d" % i) >= 16000)
    assert cluster.nodes[2].raw().command("CL.THROTTLE", gap_key, 1, 1, 60) == (
        b"-CLUSTERDOWN Hash slot not served\r\n")
    rc = cluster.client(2)
    assert rc.execute_command("RL.FIXED", moving[0], 3, 60)[0] == 0
    assert cluster.holders(moving[0]) == [1]
    rc.close()


def test_a_restart_drops_snapshot_keys_of_slots_given_away(cluster):
    moving, staying = five_moving_five_staying(cluster)
    node = cluster.nodes[0]
    assert node.stop() == []                   # saves all ten keys
    cluster.write([["1001-5460"], ["0-1000", "5461-10922"], ["10923-16383"]])
    node.stopped = False
    node.start()
    assert node.client().dbsize() == 5
    assert all(cluster.holders(k) == [0] for k in staying)
    assert node.log().count("Dropped 5 keys of slots this node does not own") == 1


def test_a_bad_reload_keeps_the_running_topology(cluster):
    before = cluster.nodes[0].client().execute_command("CLUSTER", "NODES")
    cluster.write([["0-5460"], ["5000-10922"], ["10923-16383"]])
    with pytest.raises(redis.ResponseError) as e:
        cluster.nodes[0].client().execute_command("CLUSTER", "RELOAD")
    assert str(e.value) == ("%s:5: slot 5000 of cluster-node %s is already owned by %s"
                            % (cluster.conf, IDS[1], IDS[0]))
    assert cluster.nodes[0].client().execute_command("CLUSTER", "NODES") == before
    cluster.nodes[0].proc.send_signal(signal.SIGHUP)
    assert harness.wait_until(
        lambda: "Cluster topology NOT reloaded" in cluster.nodes[0].log(), 10)
    assert cluster.nodes[0].client().execute_command("CLUSTER", "NODES") == before


def test_cluster_reload_is_refused_in_emulated_mode(start_daemon):
    node = start_daemon("--cluster-mode", "emulated")
    assert node.raw().command("CLUSTER", "RELOAD") == (
        b"-ERR CLUSTER RELOAD needs cluster-mode yes\r\n")


# ---- a bad topology stops the start ---------------------------------------

@pytest.mark.parametrize("lines, want", [
    (["cluster-node %s 127.0.0.1:7001 0-9000" % IDS[0],
      "cluster-node %s 127.0.0.1:7002 9000-16383" % IDS[1]],
     "conf:3: slot 9000 of cluster-node %s is already owned by %s" % (IDS[1], IDS[0])),
    (["cluster-node %s 127.0.0.1:7001 0-16384" % IDS[0]],
     "conf:2: cluster-node slot range '0-16384' must be <slot> or <first>-<last> "
     "with slots from 0 to 16383"),
    (["cluster-node %s 127.0.0.1:7002 0-16383" % IDS[0]],
     "no cluster-node has this node's address *:7001: set cluster-node-id"),
    (["cluster-node 1234 127.0.0.1:7001 0-16383"],
     "conf:2: cluster-node id '1234' must be 40 lower-case hex digits"),
    ([], "cluster-mode yes needs cluster-node lines in the config file"),
])
def test_bad_topologies_are_config_errors(tmp_path, lines, want):
    conf = tmp_path / "conf"
    conf.write_text("\n".join(["cluster-mode yes"] + lines) + "\n")
    out = subprocess.run([harness.BIN, str(conf), "--port", "7001", "--test-config"],
                         capture_output=True, timeout=20, env=harness.sanitizer_env(dict(os.environ)))
    assert out.returncode == 1
    assert want in out.stderr.decode()


def test_node_found_by_id_or_announced_address(tmp_path):
    conf = tmp_path / "conf"
    conf.write_text(topology_text([7001, 7002, 7003]))
    for extra in (["--cluster-node-id", IDS[1]],
                  ["--cluster-announce-ip", "127.0.0.1", "--cluster-announce-port", "7002"]):
        out = subprocess.run([harness.BIN, str(conf), "--port", "6000", "--test-config"] + extra,
                             capture_output=True, timeout=20,
                             env=harness.sanitizer_env(dict(os.environ)))
        assert out.returncode == 0, out.stderr


def test_announce_overrides_what_clients_are_told(start_daemon, tmp_path):
    port = harness.free_port()
    conf = tmp_path / "conf"
    conf.write_text(topology_text([port, 7002, 7003]))
    node = start_daemon("--cluster-announce-ip", "node0.example", "--cluster-node-id", IDS[0],
                        "--cluster-announce-port", "16379", config_file=str(conf), port=port)
    nodes = node.client().execute_command("CLUSTER", "NODES").decode()
    assert nodes.startswith("%s node0.example:16379@26379 myself,master - 0 0 1 connected 0-5460\n"
                            % IDS[0])
    assert node.client().execute_command("CLUSTER", "SLOTS")[0][2][:2] == [b"node0.example", 16379]

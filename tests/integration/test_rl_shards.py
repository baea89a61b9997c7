"""Named limits (RL.CHECK) and Envoy's gRPC rate limit service across the
shards of a cluster of three primaries: a static one (cluster-mode yes) and
one as Redis Cluster runs it (cluster-enabled yes: slots added, nodes met
over the bus), the same tests on each.

RL.CHECK is routed by its descriptor's counter key (-MOVED like any key;
COMMAND GETKEYS answers the counter, which redis-py's RedisCluster asks
for; ioredis follows -MOVED). A gRPC call is answered by the node it
reaches: descriptors whose counters live elsewhere are decided by their
owners, asked over RESP, and a dead, silent or malformed owner gives the
rls-failure-mode-deny answer within rls-forward-timeout. Every node's
clock is pinned (fakeclock), so no window rolls over during a test."""
import json
import random
import socket
import subprocess
import threading
import time

import pytest
from redis.cluster import RedisCluster

import harness
from harness import reference_slot as keyslot
from test_cluster_nodes import IDS, RANGES, owner_index
from test_grpc import Client, pb  # noqa: F401 (pb is a fixture)

OK, OVER = 1, 2
HOUR, MINUTE = 3600, 60

LIMITS = {
    "shards.yaml": """
domain: shards
descriptors:
  - key: user
    rate_limit:
      unit: hour
      requests_per_unit: 30
  - key: tenant
    descriptors:
      - key: api
        rate_limit:
          name: per_api
          unit: minute
          requests_per_unit: 20
""",
    # Limits with metadata: rls-response-dynamic-metadata's test.
    "meta.yaml": """
domain: meta
descriptors:
  - key: app
    rate_limit: {unit: hour, requests_per_unit: 2}
    metadata: {first: app, team: {name: apps}}
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 30}
    metadata: {team: {name: users, tier: gold}, plan: paid}
""",
    # A hash tag in the domain puts every counter of it in one slot.
    "edge.yaml": """
domain: "{edge}"
descriptors:
  - key: ip
    rate_limit:
      unit: second
      requests_per_unit: 10
""",
}


def counter(domain, *entries):
    return domain + "".join("_%s_%s" % tuple(e.split("=", 1)) for e in entries)


def users_by_owner(per_node=2):
    """User values whose counters fall on each node, per_node each."""
    found = {0: [], 1: [], 2: []}
    i = 0
    while any(len(v) < per_node for v in found.values()):
        v = "u%d" % i
        o = owner_index(keyslot(counter("shards", "user=" + v).encode()))
        if len(found[o]) < per_node:
            found[o].append(v)
        i += 1
    return found


class Shards:
    """Three cellgates, each with its own config file and a gRPC port. A
    static topology: the cluster-node lines (the same on each node unless
    a test gives one node other ranges). live: cluster-enabled yes, each
    node given its RANGES by ADDSLOTSRANGE, then met over the bus."""

    def __init__(self, start_daemon, tmp_path, extra=(), ranges=None, ports=None,
                 real=(0, 1, 2), hosts=("127.0.0.1",) * 3, live=False, env=None):
        self.tmp = tmp_path
        self.hosts = hosts
        self.live = live
        limits = tmp_path / "limits"
        limits.mkdir(exist_ok=True)
        for name, text in LIMITS.items():
            (limits / name).write_text(text)
        self.limits = str(limits)
        self.ports = list(ports or [])
        while len(self.ports) < 3:
            p = harness.free_port()
            if p not in self.ports:
                self.ports.append(p)
        self.nodes = [None, None, None]
        for i in real:
            conf = str(tmp_path / ("node%d.conf" % i))
            self.write(conf, (ranges or {}).get(i, RANGES))
            gport = harness.free_port()
            bus = ("--cluster-enabled", "yes", "--cluster-port", harness.free_port(),
                   "--cluster-node-timeout", "600000") if live else ()
            # A generous bound unless the test sets one: a sanitizer build
            # on a busy machine may take a while to answer.
            d = start_daemon("--grpc-port", gport, "--rls-forward-timeout", "5000",
                             *bus, *extra, config_file=conf, port=self.ports[i],
                             fakeclock=True, env=env)
            d.grpc_port, d.bus_port = gport, bus[3] if live else None
            self.nodes[i] = d
        if live:
            self.form()

    def write(self, conf, ranges):
        lines = ["save-interval 3600", "limits-file " + self.limits]
        if not self.live:
            lines.insert(0, "cluster-mode yes")
            for node_id, host, port, node_ranges in zip(IDS, self.hosts, self.ports, ranges):
                lines.append("cluster-node %s %s:%d %s" % (node_id, host, port,
                                                           " ".join(node_ranges)))
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def form(self):
        """Slots, MEET, and the wait for every node to say ok. The clocks
        are pinned: each steps past a primary's wait after its start (2 s,
        as Redis's) before the nodes meet, and once more after (the bus
        runs on the wall clock), to the next whole hour, where the tests'
        windows start."""
        for d in self.nodes:
            d.clock.advance(seconds=HOUR - 5)
        for d, node_ranges in zip(self.nodes, RANGES):
            for r in node_ranges:
                first, _, last = r.partition("-")
                assert d.raw().command("CLUSTER", "ADDSLOTSRANGE", first, last) == b"+OK\r\n"
        for d in self.nodes[1:]:
            assert self.nodes[0].raw().command("CLUSTER", "MEET", "127.0.0.1", d.port,
                                               d.bus_port) == b"+OK\r\n"
        for d in self.nodes:
            d.clock.advance(seconds=5)

        def formed():
            for d in self.nodes:
                info = d.raw().command("CLUSTER", "INFO")
                if b"cluster_state:ok" not in info or b"cluster_known_nodes:3" not in info:
                    return False
            return True
        assert harness.wait_until(formed, 60), [d.raw().command("CLUSTER", "NODES")
                                                 for d in self.nodes]

    def client(self, i=0, **kw):
        return RedisCluster(host="127.0.0.1", port=self.ports[i], **kw)

    def stat(self, i, name):
        return self.nodes[i].info("stats")[name]


@pytest.fixture(params=["static", "live"])
def shards(start_daemon, tmp_path, request):
    return Shards(start_daemon, tmp_path, live=request.param == "live")


def test_rl_check_is_routed_by_its_counter_key(shards):
    users = users_by_owner(1)
    for o, (v,) in users.items():
        key = counter("shards", "user=" + v)
        other = (o + 1) % 3
        raw = shards.nodes[other].raw()
        assert raw.command("RL.CHECK", "shards", "user=" + v) == \
            b"-MOVED %d 127.0.0.1:%d\r\n" % (keyslot(key.encode()), shards.ports[o])
        # ENTRY is the same descriptor, written for any bytes.
        assert raw.command("RL.CHECK", "shards", "ENTRY", "user", v, "HITS", "2") == \
            b"-MOVED %d 127.0.0.1:%d\r\n" % (keyslot(key.encode()), shards.ports[o])
        r = shards.nodes[o].client()
        assert r.execute_command("RL.CHECK", "shards", "user=" + v)[:3] == [0, 30, 29]
        # What the forwarding nodes ask: Envoy's DescriptorStatus.
        assert r.execute_command("RL.CHECK", "shards", "ENTRY", "user", v, "STATUS") == \
            [OK, 1, 0, 30, 3, 28, HOUR * 10**9, b""]  # unit 3: HOUR
        # The counter is a key of the owner, and of no other node.
        assert r.exists(key) == 1
        for i in range(3):
            assert shards.nodes[i].raw().command(
                "COMMAND", "GETKEYS", "RL.CHECK", "shards", "user=" + v) == \
                b"*1\r\n$%d\r\n%s\r\n" % (len(key), key.encode())
    # A descriptor without a limit needs no counter: any node answers it.
    for i in range(3):
        assert shards.nodes[i].client().execute_command("RL.CHECK", "nosuch", "a=b") == \
            [0, -1, -1, -1, -1]
    # A hash tag in the domain: every counter of {edge} in slot of "edge".
    raw = shards.nodes[0].raw()
    for ip in ("1.2.3.4", "5.6.7.8"):
        key = b"{edge}_ip_" + ip.encode()
        assert raw.command("COMMAND", "GETKEYS", "RL.CHECK", "{edge}", "ip=" + ip) == \
            b"*1\r\n$%d\r\n%s\r\n" % (len(key), key)
        assert keyslot(key) == keyslot(b"edge")
    assert raw.command("COMMAND", "GETKEYS", "RL.CHECK", "shards") == \
        b"-ERR Invalid number of arguments specified for command\r\n"
    assert raw.command("COMMAND", "GETKEYS", "RL.CHECK", "shards", "bogus") == \
        b"-ERR Invalid arguments specified for command\r\n"
    info = raw.command("COMMAND", "INFO", "RL.CHECK")
    assert b"+movablekeys\r\n" in info and b":0\r\n:0\r\n:0\r\n" in info


def test_redis_py_cluster_client_routes_rl_check(shards):
    users = users_by_owner(2)
    rc = shards.client(0)
    for vs in users.values():
        for v in vs:
            got = [rc.execute_command("RL.CHECK", "shards", "user=" + v)[0] for _ in range(32)]
            assert got == [0] * 30 + [1] * 2
    rc.close()
    # No redirect was needed: redis-py asked COMMAND GETKEYS, then the owner.
    for o, vs in users.items():
        for v in vs:
            assert shards.nodes[o].client().exists(counter("shards", "user=" + v)) == 1


def test_ioredis_cluster_follows_moved_for_rl_check(shards):
    from test_node_clients import CLIENTS, ensure_node_modules
    ensure_node_modules()
    users = users_by_owner(2)
    entries = ["user=" + v for vs in users.values() for v in vs]
    out = subprocess.run(["node", "rl_shards.mjs", str(shards.ports[0]), "shards", "33"]
                         + entries, cwd=CLIENTS, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {e: 30 for e in entries}


def statuses(c, domain, *descriptors):
    return c.check(domain, *descriptors)


def test_a_grpc_call_over_three_owners_gets_every_status(shards, pb):
    users = users_by_owner(1)
    descs = [("user=" + users[o][0],) for o in range(3)]
    descs.append(("tenant=acme", "api=search"))
    descs.append(("nosuch=x",))
    for i in range(3):
        c = Client(shards.nodes[i], pb)
        got = c.check("shards", *descs, hits=2)
        n = i + 1
        assert got == (OK, [(OK, 30, 30 - 2 * n, HOUR), (OK, 30, 30 - 2 * n, HOUR),
                            (OK, 30, 30 - 2 * n, HOUR), (OK, 20, 20 - 2 * n, MINUTE),
                            (OK, None, 0, None)])
        c.close()
    # Two of the three users' counters were forwarded by each node.
    assert sum(shards.stat(i, "rls_forwarded_descriptors") for i in range(3)) >= 6
    assert sum(shards.stat(i, "rls_forward_failures") for i in range(3)) == 0
    # The rule's name comes back from its owner.
    owner = owner_index(keyslot(counter("shards", "tenant=acme", "api=search").encode()))
    c = Client(shards.nodes[(owner + 1) % 3], pb)
    r = c.call(c.request("shards", ("tenant=acme", "api=search")), timeout=5)
    assert r.statuses[0].current_limit.name == "per_api"
    # Over the limit on another node: OVER_LIMIT overall.
    got = c.check("shards", ("tenant=acme", "api=search"), hits=15)
    # (A refused request takes nothing: 13 remain.)
    assert got == (OVER, [(OVER, 20, 13, MINUTE)])
    c.close()


def test_grpc_and_resp_callers_share_every_limit_exactly(shards, pb):
    users = users_by_owner(2)
    values = [v for vs in users.values() for v in vs]
    limit = 30
    admitted = {v: 0 for v in values}
    lock = threading.Lock()
    errors = []
    clients = [Client(n, pb) for n in shards.nodes]
    rounds = 12

    def count(v, ok):
        if ok:
            with lock:
                admitted[v] += 1

    def grpc_caller(seed):
        rnd = random.Random(seed)
        try:
            for _ in range(rounds):
                picked = rnd.sample(values, rnd.randint(1, 3))
                c = rnd.choice(clients)
                _, st = c.check("shards", *[("user=" + v,) for v in picked], hits=1)
                for v, s in zip(picked, st):
                    assert s[1] == limit
                    count(v, s[0] == OK)
        except Exception as e:      # noqa: BLE001 (reported below)
            errors.append(repr(e))

    def resp_caller(seed):
        rnd = random.Random(seed)
        rc = shards.client(seed % 3)
        try:
            for _ in range(rounds):
                v = rnd.choice(values)
                reply = rc.execute_command("RL.CHECK", "shards", "user=" + v)
                assert reply[1] == limit
                count(v, reply[0] == 0)
        except Exception as e:      # noqa: BLE001
            errors.append(repr(e))
        finally:
            rc.close()

    threads = [threading.Thread(target=grpc_caller, args=(i,)) for i in range(50)]
    threads += [threading.Thread(target=resp_caller, args=(100 + i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    # About 1,800 requests for 6 counters of 30: each admitted exactly 30.
    assert admitted == {v: limit for v in values}
    for c in clients:
        c.close()
    assert sum(shards.stat(i, "rls_forward_failures") for i in range(3)) == 0


@pytest.mark.parametrize("deny,live", [(False, False), (True, False), (True, True)])
def test_kill_9_of_an_owner_gives_the_failure_answer_within_the_bound(
        start_daemon, tmp_path, pb, deny, live):
    shards = Shards(start_daemon, tmp_path, live=live,
                    extra=("--rls-failure-mode-deny", "yes" if deny else "no",
                           "--rls-forward-timeout", "2000"))
    users = users_by_owner(1)
    dead, alive = 2, 0
    descs = [("user=" + users[dead][0],), ("user=" + users[alive][0],),
             ("user=" + users[1][0],)]
    c = Client(shards.nodes[alive], pb)
    assert c.check("shards", *descs) == (OK, [(OK, 30, 29, HOUR)] * 3)
    shards.nodes[dead].stop(harness.signal.SIGKILL)
    failed = (OVER, None, 0, None) if deny else (OK, None, 0, None)
    for n in range(3):
        t0 = time.monotonic()
        got = c.check("shards", *descs)
        took = time.monotonic() - t0
        # The dead owner's descriptor gets the configured answer, the
        # others their exact figures.
        assert got == (OVER if deny else OK,
                       [failed, (OK, 30, 28 - n, HOUR), (OK, 30, 28 - n, HOUR)])
        assert took < 2.0 + 1.5, took
    assert shards.stat(alive, "rls_forward_failures") == 3
    # RL.CHECK for the dead node's counter is still sent there (-MOVED).
    assert shards.nodes[alive].raw().command("RL.CHECK", "shards", "user=" + users[dead][0]) \
        .startswith(b"-MOVED ")
    c.close()


class FakePeer:
    """A listener in a node's place: it answers nothing (silent), or
    bytes that are no reply (garbage), or a reply too large (huge)."""

    def __init__(self, mode):
        self.mode = mode
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.conns.append(conn)
            conn.settimeout(0.1)
            try:
                conn.recv(65536)
                if self.mode == "garbage":
                    conn.sendall(b"\x00\xffnot RESP at all\r\n")
                elif self.mode == "huge":
                    conn.sendall(b"$4000000\r\n" + b"x" * 1500000)
                elif self.mode == "error":
                    conn.sendall(b"-ERR something else\r\n")
            except OSError:
                pass

    def close(self):
        self.stop.set()
        self.thread.join(5)
        for c in self.conns:
            c.close()
        self.sock.close()


@pytest.mark.parametrize("mode", ["silent", "garbage", "huge", "error"])
def test_a_silent_or_malformed_peer_is_bounded(start_daemon, tmp_path, pb, mode):
    fake = FakePeer(mode)
    try:
        ports = [harness.free_port(), harness.free_port(), fake.port]
        while ports[1] == ports[0]:
            ports[1] = harness.free_port()
        shards = Shards(start_daemon, tmp_path, ports=ports, real=(0, 1),
                        extra=("--rls-failure-mode-deny", "yes",
                               "--rls-forward-timeout", "300"))
        users = users_by_owner(1)
        c = Client(shards.nodes[0], pb)
        for n in range(3):
            t0 = time.monotonic()
            got = c.check("shards", ("user=" + users[2][0],), ("user=" + users[0][0],))
            took = time.monotonic() - t0
            # The fake owner's descriptor: the failure answer; node 0's own
            # one: its real status.
            assert got == (OVER, [(OVER, None, 0, None), (OK, 30, 29 - n, HOUR)])
            # Never past the bound (300 ms) by more than scheduling; a
            # silent owner is waited for that long.
            assert took < 0.3 + 1.5, took
            if mode == "silent":
                assert took >= 0.29, took
        assert shards.nodes[0].alive()
        assert shards.stat(0, "rls_forward_failures") == 3
        if mode == "silent":
            assert shards.stat(0, "rls_forward_timeouts") >= 1
        elif mode in ("garbage", "huge"):
            # Seen for what it is on arrival, not at the timeout.
            assert shards.stat(0, "rls_forward_timeouts") == 0
        c.close()
    finally:
        fake.close()


def test_moved_from_an_owner_is_followed_once(start_daemon, tmp_path, pb):
    # Node 0's lines are out of date: it believes node 1 serves node 2's
    # slots, so it asks node 1, which redirects it to node 2.
    stale = {0: [["0-5460"], ["5461-16383"], []]}
    shards = Shards(start_daemon, tmp_path, ranges=stale)
    users = users_by_owner(1)
    c = Client(shards.nodes[0], pb)
    assert c.check("shards", ("user=" + users[2][0],)) == (OK, [(OK, 30, 29, HOUR)])
    assert shards.stat(0, "rls_forward_redirects") == 1
    assert shards.stat(0, "rls_forward_failures") == 0
    assert shards.nodes[2].client().exists(counter("shards", "user=" + users[2][0])) == 1
    c.close()


def test_a_peer_named_by_dns_is_resolved_off_the_loop(start_daemon, tmp_path, pb):
    # Node 2's line names it "localhost": node 0 resolves the name (libuv's
    # thread pool) before it connects.
    shards = Shards(start_daemon, tmp_path, hosts=("127.0.0.1", "127.0.0.1", "localhost"))
    users = users_by_owner(1)
    c = Client(shards.nodes[0], pb)
    for n in range(3):
        assert c.check("shards", ("user=" + users[2][0],)) == (OK, [(OK, 30, 29 - n, HOUR)])
    assert shards.stat(0, "rls_forward_failures") == 0
    c.close()


def test_nodes_with_requirepass_ask_one_another_with_masterauth(start_daemon, tmp_path, pb):
    shards = Shards(start_daemon, tmp_path,
                    extra=("--requirepass", "s3cret", "--masterauth", "s3cret"))
    users = users_by_owner(1)
    c = Client(shards.nodes[0], pb)
    descs = [("user=" + users[o][0],) for o in range(3)]
    for n in range(2):
        assert c.check("shards", *descs) == (OK, [(OK, 30, 29 - n, HOUR)] * 3)
    c.close()
    # Without masterauth the owners refuse (NOAUTH): the failure answer.
    r = shards.nodes[0].client(password="s3cret")
    r.config_set("masterauth", "")
    r.config_set("rls-failure-mode-deny", "yes")
    # (The open connections authenticated already: a new one is needed.)
    for i in (1, 2):
        shards.nodes[i].client(password="s3cret").execute_command(
            "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
    c = Client(shards.nodes[0], pb)
    got = c.check("shards", *descs)
    assert got == (OVER, [(OK, 30, 27, HOUR), (OVER, None, 0, None), (OVER, None, 0, None)])
    assert r.info("stats")["rls_forward_failures"] == 2
    c.close()


def test_a_second_redirect_gives_the_failure_answer(start_daemon, tmp_path, pb):
    # Node 0 believes node 1 serves node 2's slots, node 1 believes node 0
    # does: node 0 asks node 1, follows its -MOVED to itself once, and its
    # own RL.CHECK answers -MOVED again: a loop, cut at one redirect.
    stale = {0: [["0-5460"], ["5461-16383"], []],
             1: [["0-5460", "10923-16383"], ["5461-10922"], []]}
    shards = Shards(start_daemon, tmp_path, ranges=stale,
                    extra=("--rls-failure-mode-deny", "yes"))
    users = users_by_owner(1)
    c = Client(shards.nodes[0], pb)
    assert c.check("shards", ("user=" + users[2][0],), ("user=" + users[0][0],)) == \
        (OVER, [(OVER, None, 0, None), (OK, 30, 29, HOUR)])
    assert shards.stat(0, "rls_forward_redirects") == 1
    assert shards.stat(0, "rls_forward_failures") == 1
    c.close()


def test_a_forwarded_call_carries_dynamic_metadata(start_daemon, tmp_path, pb):
    """rls-response-dynamic-metadata in cluster-mode yes: the node that
    answers builds the Struct from the statuses the owners gave (the
    metadata of those that passed, by its own rules), also when an owner
    is dead and its descriptor gets the failure answer (OK: it passed)."""
    from test_grpc import as_google_struct
    shards = Shards(start_daemon, tmp_path,
                    extra=("--rls-response-dynamic-metadata", "yes",
                           "--rls-forward-timeout", "2000"))
    owned = {}
    for i in range(10000):
        for key in ("app", "user"):
            v = "%s%d" % (key[0], i)
            o = owner_index(keyslot(counter("meta", "%s=%s" % (key, v)).encode()))
            owned.setdefault((key, o), v)
    app, user = "app=" + owned[("app", 1)], "user=" + owned[("user", 2)]
    c = Client(shards.nodes[0], pb)

    def call(app_hits=None):
        first = (app, app_hits) if app_hits is not None else (app,)
        r = c.call(c.request("meta", first, (user,)), timeout=10)
        return r.overall_code, [s.code for s in r.statuses], as_google_struct(r)
    both = {"first": "app", "team": {"name": "apps", "tier": "gold"}, "plan": "paid"}
    assert call() == (OK, [OK, OK], {
        "domain": "meta", "descriptors": [{"entries": [app]}, {"entries": [user]}],
        "metadata": both})
    # app's owner (node 1) says OVER_LIMIT: only user's metadata.
    assert call(app_hits=2) == (OVER, [OVER, OK], {
        "domain": "meta",
        "descriptors": [{"entries": [app], "hitsAddend": 2.0}, {"entries": [user]}],
        "metadata": {"team": {"name": "users", "tier": "gold"}, "plan": "paid"}})
    # user's owner dies: its failure answer (OK) passes, with its metadata.
    shards.nodes[2].stop(harness.signal.SIGKILL)
    assert call() == (OK, [OK, OK], {
        "domain": "meta", "descriptors": [{"entries": [app]}, {"entries": [user]}],
        "metadata": both})
    assert shards.stat(0, "rls_forward_failures") == 1
    c.close()

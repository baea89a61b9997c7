"""cluster-enabled yes: Redis Cluster's bus between cellgates and with a
real redis-server 7.0.15 (the wire format's interop test), gossip
convergence, nodes.conf, redis-cli --cluster create of six nodes with
replicas, failure detection and failover after kill -9, the old primary
back as a replica, and frames no node may crash on (garbage, truncated,
oversized, wrong version, random bodies) sent to the cluster port.

Timings follow cluster-node-timeout (NODE_TIMEOUT ms here): PFAIL after
one timeout without a PONG, FAIL once a majority of primaries reported it,
an election 0.5-1 s after FAIL (+1 s per better-ranked replica), so every
wait below is a bounded multiple of it."""
import os
import random
import socket
import struct
import subprocess
import time

import pytest
import redis

import harness

NODE_TIMEOUT = 1000
HDR = 2256
WAIT = 20   # s: the bound of every convergence wait (a few node timeouts)


def cluster_args(cport, timeout=NODE_TIMEOUT):
    return ["--cluster-enabled", "yes", "--cluster-port", str(cport),
            "--cluster-node-timeout", str(timeout)]


def start_node(start_daemon, name, timeout=NODE_TIMEOUT, extra=()):
    cport = harness.free_port()
    d = start_daemon(*(cluster_args(cport, timeout) + list(extra)), name=name)
    d.cport = cport
    return d


def start_redis(tmp_path, name):
    cport = harness.free_port()
    r = harness.RedisServer(str(tmp_path / name), extra_args=cluster_args(cport))
    r.start()
    r.cport = cport
    return r


def nodes_of(client):
    """CLUSTER NODES as {id: (addr, flags, primary, link)}."""
    text = client.execute_command("CLUSTER", "NODES")
    if isinstance(text, bytes):
        text = text.decode()
    out = {}
    for line in text.strip().splitlines():
        f = line.split()
        out[f[0]] = (f[1], f[2], f[3], f[7])
    return out


def my_id(client):
    v = client.execute_command("CLUSTER", "MYID")
    return v.decode() if isinstance(v, bytes) else v


def id_in_file(d):
    """The node's name as its nodes.conf says (the myself line)."""
    with open(os.path.join(d.workdir, "nodes.conf")) as f:
        for line in f:
            if "myself" in line.split()[2:3][0]:
                return line.split()[0]
    raise AssertionError("no myself line")


def all_connected(client, n):
    nodes = nodes_of(client)
    return len(nodes) == n and all(
        v[3] == "connected" and "handshake" not in v[1] and "fail" not in v[1]
        for v in nodes.values())


def meet(client, other_port, other_cport):
    assert client.execute_command("CLUSTER", "MEET", "127.0.0.1", other_port,
                                  other_cport) in (b"OK", "OK", True)


# ---- frames built at cluster.h's offsets ------------------------------------


def frame(mtype, body=b"", count=0, sender=b"a" * 40, ver=1, totlen=None,
          mflags=0, exts=0):
    h = bytearray(HDR)
    h[0:4] = b"RCmb"
    total = HDR + len(body) if totlen is None else totlen
    struct.pack_into(">IHHHHQQQ", h, 4, total, ver, 7000, mtype, count, 0, 0, 0)
    h[40:80] = sender
    struct.pack_into(">H", h, 2214, exts)
    struct.pack_into(">HHHB", h, 2246, 0, 17000, 1, 0)
    h[2253] = mflags
    return bytes(h) + body


def bus_conn(d):
    return socket.create_connection(("127.0.0.1", d.cport), timeout=5)


def read_frame(s, timeout=5):
    s.settimeout(timeout)
    data = b""
    while len(data) < 8:
        chunk = s.recv(65536)
        if not chunk:
            return None
        data += chunk
    total = struct.unpack(">I", data[4:8])[0]
    while len(data) < total:
        chunk = s.recv(65536)
        if not chunk:
            return None
        data += chunk
    return data[:total]


def closed_by_peer(s, timeout=5):
    s.settimeout(timeout)
    try:
        while True:
            if not s.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


# ---- robustness ----------------------------------------------------------------


def test_ping_from_a_stranger_is_answered_with_a_pong_in_redis_format(start_daemon):
    d = start_node(start_daemon, "a")
    c = d.client()
    with bus_conn(d) as s:
        s.sendall(frame(0))
        got = read_frame(s)
    assert got is not None and got[:4] == b"RCmb"
    total, ver, port, mtype = struct.unpack(">IHHH", got[4:14])
    assert (total, ver, mtype) == (len(got), 1, 1)
    assert port == d.port
    assert got[40:80].decode() == id_in_file(d)
    assert struct.unpack(">H", got[2248:2250])[0] == d.cport
    assert got[2216:2220] == b"cgC1"          # cellgate's clock, in notused1
    assert c.ping()


def test_bad_frames_close_the_link_or_are_ignored_never_a_crash(start_daemon):
    d = start_node(start_daemon, "a")
    c = d.client()
    # not the bus's signature, as an HTTP probe: the link is closed
    with bus_conn(d) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert closed_by_peer(s)
    # a length past the cap: closed before anything is allocated
    with bus_conn(d) as s:
        s.sendall(b"RCmb" + struct.pack(">I", 0x7fffffff) + b"x" * 100)
        assert closed_by_peer(s)
    # a length under the header's
    with bus_conn(d) as s:
        s.sendall(b"RCmb" + struct.pack(">I", 100) + b"\0" * 100)
        assert closed_by_peer(s)
    # truncated: half a frame, then the peer goes
    with bus_conn(d) as s:
        s.sendall(frame(0)[:1500])
    # wrong version: ignored, the link stays and answers the next PING
    with bus_conn(d) as s:
        s.sendall(frame(0, ver=2))
        s.sendall(frame(0))
        got = read_frame(s)
        assert got is not None and struct.unpack(">H", got[12:14])[0] == 1
    # lengths that disagree with the body: ignored
    with bus_conn(d) as s:
        s.sendall(frame(0, count=50))                       # gossip not there
        s.sendall(frame(3, body=b"x" * 10))                 # FAIL too short
        s.sendall(frame(4, body=struct.pack(">II", 0xffffffff, 9)))
        s.sendall(frame(0, body=struct.pack(">IHH", 12, 0, 0) + b"\0" * 8,
                        mflags=4, exts=1))                  # padding wrong
        s.sendall(frame(0, body=struct.pack(">IHH", 16, 0, 0) + b"x" * 8,
                        mflags=4, exts=1))                  # hostname no NUL
        s.sendall(frame(0))
        got = read_frame(s)
        assert got is not None
    assert c.ping()
    assert d.alive()


def test_random_frames_and_a_hostile_meet_leave_the_node_up(start_daemon):
    d = start_node(start_daemon, "a")
    c = d.client()
    rnd = random.Random(39)
    with bus_conn(d) as s:
        for i in range(300):
            body = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 400)))
            f = bytearray(frame(rnd.randrange(0, 12), body,
                                count=rnd.randrange(0, 5),
                                mflags=rnd.choice([0, 4]),
                                exts=rnd.randrange(0, 3)))
            for _ in range(rnd.randrange(0, 8)):        # flip header bytes,
                at = rnd.randrange(8, HDR)              # keep sig and length
                f[at] = rnd.getrandbits(8)
            s.sendall(bytes(f))
    # a MEET whose gossip names nodes with junk names and addresses
    g = bytearray(104 * 3)
    for i in range(3):
        g[i * 104:i * 104 + 40] = bytes([0x41 + i]) * 40 if i else b"\xff" * 40
        g[i * 104 + 48:i * 104 + 57] = b"127.0.0.1"
        struct.pack_into(">HHH", g, i * 104 + 94, 1, 2, 1)
    with bus_conn(d) as s:
        s.sendall(frame(2, bytes(g), count=3, sender=b"0" * 40))
        read_frame(s)
    assert c.ping()
    assert d.alive()


# ---- meeting, gossip, interop ----------------------------------------------------


def nodes_file_ids(d):
    """{id: flags} from the node's nodes.conf (what it saved)."""
    out = {}
    try:
        with open(os.path.join(d.workdir, "nodes.conf")) as f:
            for line in f:
                p = line.split()
                if len(p) >= 8 and p[0] != "vars":
                    out[p[0]] = (p[2], p[7])
    except OSError:
        pass
    return out


def test_redis_server_and_cellgate_meet_and_list_each_other(start_daemon, tmp_path):
    """The interop test of the format: a redis-server 7.0.15 MEETs a
    cellgate, then a cellgate MEETs the redis-server; each lists the other
    as a connected master, and the cellgate's nodes.conf has it."""
    d = start_node(start_daemon, "a")
    r = start_redis(tmp_path, "redis")
    rc = r.client()
    meet(rc, d.port, d.cport)
    gid = id_in_file(d)
    rid = my_id(rc)
    assert harness.wait_until(lambda: all_connected(rc, 2), WAIT), nodes_of(rc)
    assert nodes_of(rc)[gid][0].startswith("127.0.0.1:%d@%d" % (d.port, d.cport))
    assert harness.wait_until(
        lambda: nodes_file_ids(d).get(rid, ("", ""))[1] == "connected"
        and "handshake" not in nodes_file_ids(d)[rid][0], WAIT), nodes_file_ids(d)
    c = d.client()
    assert harness.wait_until(lambda: all_connected(c, 2), WAIT), nodes_of(c)
    assert nodes_of(c)[rid][0].startswith("127.0.0.1:%d@%d" % (r.port, r.cport))
    r.stop()


def test_cellgate_meets_redis_server(start_daemon, tmp_path):
    d = start_node(start_daemon, "a")
    r = start_redis(tmp_path, "redis")
    c = d.client()
    rc = r.client()
    meet(c, r.port, r.cport)
    assert harness.wait_until(lambda: all_connected(c, 2), WAIT), nodes_of(c)
    assert harness.wait_until(lambda: all_connected(rc, 2), WAIT), nodes_of(rc)
    assert set(nodes_of(c)) == set(nodes_of(rc))
    r.stop()


def test_three_cellgates_meet_through_one_and_agree(start_daemon):
    """a MEETs b, b MEETs c: gossip tells a of c and c of a; every node's
    CLUSTER NODES lists the same three connected masters, and each
    nodes.conf holds them."""
    ds = [start_node(start_daemon, n) for n in "abc"]
    cs = [d.client() for d in ds]
    meet(cs[0], ds[1].port, ds[1].cport)
    meet(cs[1], ds[2].port, ds[2].cport)
    for c in cs:
        assert harness.wait_until(lambda: all_connected(c, 3), WAIT), nodes_of(c)
    ids = set(nodes_of(cs[0]))
    for i, c in enumerate(cs):
        assert set(nodes_of(c)) == ids
        assert harness.wait_until(lambda: set(nodes_file_ids(ds[i])) == ids, WAIT)


# ---- redis-cli --cluster, failure detection, failover ------------------------------


def cluster_create(ds):
    argv = ["redis-cli", "--cluster", "create"] + \
        ["127.0.0.1:%d" % d.port for d in ds] + \
        ["--cluster-replicas", "1", "--cluster-yes"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def cluster_check(d):
    p = subprocess.run(["redis-cli", "--cluster", "check", "127.0.0.1:%d" % d.port],
                       capture_output=True, text=True, timeout=60)
    return p.returncode == 0 and "[ERR]" not in p.stdout and \
        "[WARNING]" not in p.stdout, p.stdout + p.stderr


def kill9(d):
    """kill -9, and the harness told it is gone on purpose."""
    d.proc.kill()
    d.proc.wait(5)
    d.stopped = True


def role(d):
    try:
        return d.client().execute_command("ROLE")[0]
    except redis.RedisError:
        return None


def six_node_cluster(start_daemon):
    ds = [start_node(start_daemon, "n%d" % i) for i in range(6)]
    out = cluster_create(ds)
    assert "[OK] All 16384 slots covered." in out, out
    for d in ds:
        assert harness.wait_until(lambda: cluster_check(d)[0], WAIT), cluster_check(d)[1]
    return ds


def test_cluster_create_six_cellgates_with_replicas_and_failover(start_daemon):
    """redis-cli --cluster create with a replica each; check is clean on
    every node; CLUSTER INFO counts the bus's messages and shows cellgate's
    clock lines. Then kill -9 of a primary: every node flags it fail, its
    replica takes its slots, check is clean again; the old primary, started
    again, comes back as a replica of the winner."""
    ds = six_node_cluster(start_daemon)

    def info():
        return ds[0].client().execute_command("CLUSTER", "INFO").decode()
    # a node's state turns ok after Redis's rejoin delay (2 s from start)
    assert harness.wait_until(lambda: "cluster_state:ok" in info(), WAIT), info()
    info = info()
    assert "cluster_stats_messages_ping_sent:" in info
    assert "total_cluster_links_buffer_limit_exceeded:0" in info
    assert "cluster_clock_peers_measured:" in info
    victim = next(d for d in ds if role(d) == b"master")
    vid = my_id(victim.client())
    replica = next(d for d in ds if d is not victim and nodes_of(d.client())[my_id(
        d.client())][2] == vid)
    victim.proc.kill()
    victim.proc.wait(5)
    live = [d for d in ds if d is not victim]
    # FAIL within a few node timeouts, the election within 0.5-1 s more
    for d in live:
        assert harness.wait_until(
            lambda: "fail" in nodes_of(d.client())[vid][1].split(","), WAIT)
    assert harness.wait_until(lambda: role(replica) == b"master", WAIT)
    rid = my_id(replica.client())
    for d in live:
        assert harness.wait_until(
            lambda: "master" in nodes_of(d.client())[rid][1], WAIT)
    assert harness.wait_until(lambda: cluster_check(replica)[0], WAIT), \
        cluster_check(replica)[1]
    victim.want_port = victim.port
    victim.start()              # same port, --cluster-port and nodes.conf
    assert harness.wait_until(lambda: role(victim) == b"slave", WAIT)
    assert harness.wait_until(
        lambda: nodes_of(victim.client())[vid][2] == rid, WAIT)
    for d in ds:
        assert harness.wait_until(lambda: cluster_check(d)[0], WAIT), cluster_check(d)[1]


def test_manual_failover_default_force_and_takeover(start_daemon):
    """CLUSTER FAILOVER on a replica: the roles swap (its primary agreed,
    paused, caught up); FORCE and TAKEOVER too; a primary refuses it."""
    ds = six_node_cluster(start_daemon)
    with pytest.raises(redis.ResponseError, match="to a replica"):
        next(d for d in ds if role(d) == b"master").client().execute_command(
            "CLUSTER", "FAILOVER")
    by_id = {my_id(d.client()): d for d in ds}
    for mode in ([], ["FORCE"], ["TAKEOVER"]):
        rep = next(d for d in ds if role(d) == b"slave")
        rid = my_id(rep.client())
        primary = by_id[nodes_of(rep.client())[rid][2]]
        # the primary heeds MFSTART only from a node it knows as its
        # replica (it learns that from the replica's pings)
        assert harness.wait_until(
            lambda: nodes_of(primary.client())[rid][2] == my_id(primary.client()),
            WAIT)
        assert rep.client().execute_command("CLUSTER", "FAILOVER", *mode)
        assert harness.wait_until(lambda: role(rep) == b"master", WAIT), mode
    for d in ds:
        assert harness.wait_until(lambda: cluster_check(d)[0], WAIT), cluster_check(d)[1]


def test_publish_reaches_subscribers_on_every_node(start_daemon):
    ds = [start_node(start_daemon, n) for n in "ab"]
    a, b = ds[0].client(), ds[1].client()
    meet(a, ds[1].port, ds[1].cport)
    assert harness.wait_until(lambda: all_connected(b, 2), WAIT)
    p = b.pubsub()
    p.subscribe("news")
    assert p.get_message(timeout=5)["type"] == "subscribe"
    assert a.publish("news", "hello") == 0      # the count is this node's
    msg = p.get_message(timeout=5)
    assert msg is not None and msg["data"] == b"hello"
    p.close()


# ---- a fake node that speaks the bus: replayed, out-of-order, hostile ---------


class FakeNode:
    """A node of our own on the bus: it listens on a cluster port and
    answers every PING or MEET with a PONG under its name, so a cellgate
    that it MEETs completes the handshake and knows it as a master."""

    def __init__(self, name):
        self.name = name
        self.lsn = socket.socket()
        self.lsn.bind(("127.0.0.1", 0))
        self.lsn.listen(8)
        self.cport = self.lsn.getsockname()[1]
        self.stop = False
        self.deaf = False           # True: read nothing more (a stuck peer)
        import threading
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def msg(self, mtype, body=b"", count=0, slots=b"", slaveof=b"",
            cur=1, cfg=1, mflags=0, flags=1):
        f = bytearray(frame(mtype, body, count=count, sender=self.name,
                            mflags=mflags))
        struct.pack_into(">QQ", f, 16, cur, cfg)
        f[80:80 + len(slots)] = slots
        f[2128:2128 + len(slaveof)] = slaveof
        struct.pack_into(">HH", f, 2248, self.cport, flags)
        return bytes(f)

    def _answer(self, conn):
        conn.settimeout(0.5)
        while not self.stop:
            if self.deaf:
                time.sleep(0.05)
                continue
            try:
                f = read_frame(conn, timeout=0.5)
            except (socket.timeout, OSError):
                continue
            if f is None:
                return
            if struct.unpack(">H", f[12:14])[0] in (0, 2):
                try:
                    conn.sendall(self.msg(1))
                except OSError:
                    return

    def _serve(self):
        import threading
        self.lsn.settimeout(0.2)
        while not self.stop:
            try:
                conn, _ = self.lsn.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def close(self):
        self.stop = True
        self.lsn.close()


@pytest.mark.parametrize("seed", [7, 39, 1000])
def test_a_known_node_sending_hostile_and_out_of_order_messages(start_daemon, seed):
    """Once a cellgate knows a node (handshake done), every message of it
    is acted on: random roles, slots, epochs, gossip about real and
    unknown names, FAIL, UPDATE, votes, MFSTART and PUBLISH, in any order.
    The node stays up, answers, and still lists itself."""
    d = start_node(start_daemon, "a")
    c = d.client()
    fake = FakeNode(b"f" * 40)
    try:
        with bus_conn(d) as s:
            s.sendall(fake.msg(2))          # MEET
            assert read_frame(s) is not None
            assert harness.wait_until(
                lambda: "f" * 40 in nodes_of(c)
                and "handshake" not in nodes_of(c)["f" * 40][1], WAIT), nodes_of(c)
            me = my_id(c).encode()
            pool = [me, b"f" * 40, b"e" * 40, b"0" * 40, b"\xff" * 40]
            rnd = random.Random(seed)
            for i in range(400):
                s.sendall(random_known_message(fake, rnd, pool))
                if i % 50 == 0:
                    assert c.ping()
        assert c.ping()
        assert my_id(c) == me.decode()
        c.execute_command("CLUSTER", "INFO")
        assert d.alive()
    finally:
        fake.close()


def random_known_message(fake, rnd, pool):
    slots = bytes(rnd.choice([0, 0, 0xff, rnd.getrandbits(8)])
                  for _ in range(rnd.choice([0, 16, 2048])))
    epoch = rnd.choice([0, 1, 2, 5, 2 ** 63])
    kind = rnd.randrange(9)
    if kind <= 2:                           # PING/PONG/MEET with gossip
        n = rnd.randrange(0, 4)
        g = bytearray(104 * n)
        for i in range(n):
            g[i * 104:i * 104 + 40] = rnd.choice(pool)
            g[i * 104 + 48:i * 104 + 57] = b"127.0.0.1"
            struct.pack_into(">HHH", g, i * 104 + 94, rnd.randrange(65536),
                             rnd.randrange(65536), rnd.getrandbits(10))
        return fake.msg(kind, bytes(g), count=n, slots=slots,
                        slaveof=rnd.choice([b"", rnd.choice(pool)]),
                        cur=epoch, cfg=rnd.choice([0, epoch]),
                        flags=rnd.choice([1, 2, 1 | 4, 8]))
    if kind == 3:
        return fake.msg(3, rnd.choice(pool))                       # FAIL
    if kind == 4:
        return fake.msg(7, struct.pack(">Q", epoch) + rnd.choice(pool)
                        + slots.ljust(2048, b"\0"))                # UPDATE
    if kind == 5:
        return fake.msg(5, mflags=rnd.choice([0, 2]), cur=epoch,
                        slaveof=rnd.choice(pool), slots=slots)     # AUTH_REQUEST
    if kind == 6:
        return fake.msg(rnd.choice([6, 8]), cur=epoch)             # ACK, MFSTART
    if kind == 7:
        return fake.msg(4, struct.pack(">II", 2, 2) + b"chms")     # PUBLISH
    return fake.msg(rnd.choice([9, 10, 11, 300]), b"\0" * 16)      # MODULE...


def test_a_spare_replica_migrates_to_an_orphaned_primary(start_daemon):
    """Replica migration: one primary has two replicas, another loses its
    only one (kill -9): after FAIL and Redis's 5 s delay a replica of the
    first moves to the orphaned primary (cluster-migration-barrier 1)."""
    ds = six_node_cluster(start_daemon)
    spare = start_node(start_daemon, "n6")
    sc = spare.client()
    meet(sc, ds[0].port, ds[0].cport)
    assert harness.wait_until(lambda: all_connected(sc, 7), WAIT), nodes_of(sc)
    rich = next(d for d in ds if role(d) == b"master")
    rich_id = my_id(rich.client())
    assert sc.execute_command("CLUSTER", "REPLICATE", rich_id)
    assert harness.wait_until(
        lambda: sum(1 for v in nodes_of(rich.client()).values()
                    if v[2] == rich_id) == 2, WAIT)
    poor = next(d for d in ds if role(d) == b"master" and d is not rich)
    poor_id = my_id(poor.client())
    victim = next(d for d in ds if nodes_of(d.client())[my_id(d.client())][2] == poor_id)
    vid = my_id(victim.client())
    kill9(victim)
    assert harness.wait_until(
        lambda: "fail" in nodes_of(poor.client())[vid][1], WAIT)
    # 5 s of orphaned state, then one of rich's replicas moves over
    assert harness.wait_until(
        lambda: any(v[2] == poor_id and k != vid
                    for k, v in nodes_of(poor.client()).items()), WAIT), \
        nodes_of(poor.client())


def test_a_peer_that_stops_reading_loses_its_link_at_the_sendbuf_limit(start_daemon):
    """cluster-link-sendbuf-limit: a known node that reads nothing more
    while PUBLISH messages pile up for it has its link freed by the cron
    (total_cluster_links_buffer_limit_exceeded counts it); the node goes on."""
    d = start_node(start_daemon, "a", extra=["--cluster-link-sendbuf-limit", "1mb"])
    c = d.client()
    fake = FakeNode(b"f" * 40)
    try:
        with bus_conn(d) as s:
            s.sendall(fake.msg(2))
            assert read_frame(s) is not None
            assert harness.wait_until(
                lambda: "f" * 40 in nodes_of(c)
                and "handshake" not in nodes_of(c)["f" * 40][1], WAIT)
            fake.deaf = True
            big = "x" * (1 << 20)

            def exceeded():
                c.publish("ch", big)
                info = c.execute_command("CLUSTER", "INFO").decode()
                return "total_cluster_links_buffer_limit_exceeded:0" not in info
            assert harness.wait_until(exceeded, WAIT, interval=0.02)
        assert c.ping()
    finally:
        fake.close()


def test_mixed_cluster_with_redis_primaries_fails_over_to_a_cellgate(start_daemon, tmp_path):
    """redis-cli --cluster create over two redis-server primaries, one
    cellgate primary and three cellgate replicas (a cellgate follows a
    Redis primary too). kill -9 of a redis-server primary: its cellgate
    replica wins an election in which a redis-server votes (7.0's
    FAILOVER_AUTH_REQUEST/ACK against ours) and every node, both kinds,
    agrees on the new owner."""
    r1, r2 = start_redis(tmp_path, "r1"), start_redis(tmp_path, "r2")
    c1, c2, c3, c4 = [start_node(start_daemon, "c%d" % i) for i in range(1, 5)]
    try:
        order = [r1, c1, r2, c2, c3, c4]   # primaries r1 c1 r2, replicas cellgates
        argv = ["redis-cli", "--cluster", "create"] + \
            ["127.0.0.1:%d" % d.port for d in order] + \
            ["--cluster-replicas", "1", "--cluster-yes"]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        r1id = my_id(r1.client())

        def follower():
            for d in (c2, c3, c4):
                if nodes_of(d.client())[my_id(d.client())][2] == r1id:
                    return d
            return None
        assert harness.wait_until(follower, WAIT), nodes_of(c1.client())
        rep = follower()
        assert harness.wait_until(lambda: cluster_check(c1)[0], WAIT), cluster_check(c1)[1]
        r1.proc.kill()
        r1.proc.wait(5)
        assert harness.wait_until(lambda: role(rep) == b"master", WAIT)
        c2id = my_id(rep.client())
        r2c = r2.client()
        assert harness.wait_until(
            lambda: "master" in nodes_of(r2c)[c2id][1]
            and nodes_of(r2c)[c2id] != nodes_of(r2c)[r1id], WAIT), nodes_of(r2c)
        for d in (c1, c2, c3, c4):
            assert harness.wait_until(lambda: cluster_check(d)[0], WAIT), cluster_check(d)[1]
    finally:
        r1.stop()
        r2.stop()

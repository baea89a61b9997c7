"""cluster-enabled yes, one node's view against redis-server 7.0.15's: the
empty start (CLUSTER INFO, NODES, SLOTS, SHARDS and nodes.conf as Redis
writes them), the cluster options in the file, on the command line and in
CONFIG GET/SET/REWRITE, nodes.conf loaded, saved on every change (also
across kill -9), refused when corrupt or locked by another node, every
CLUSTER subcommand's replies and errors in Redis's bytes, and the routing
errors (MOVED, ASK, TRYAGAIN, ASKING, CLUSTERDOWN) with slots set by
ADDSLOTS and SETSLOT.

Both servers load the same hand-written nodes.conf where a second node is
needed: that node's address answers nobody, and cluster-node-timeout is
long enough that no test lasts until it is suspected failing, so both
servers keep the same view and answer byte for byte alike."""
import os
import re
import signal
import subprocess
import time

import pytest

import harness

A = "a" * 40                # myself in the hand-written files
B = "b" * 40                # the other node: it never answers
LONG_TIMEOUT = 600000       # ms: B is never suspected during a test
WAIT = 10                   # s: bound of every wait below


def cluster_args(timeout=LONG_TIMEOUT, cport=None):
    return ["--cluster-enabled", "yes",
            "--cluster-port", str(cport or harness.free_port()),
            "--cluster-node-timeout", str(timeout)]


def two_node_file(b_port):
    """myself (A) serving 0-8191, B (127.0.0.1:b_port, silent) 8192-16383."""
    return ("%s 127.0.0.1:1@2 myself,master - 0 0 1 connected 0-8191\n"
            "%s 127.0.0.1:%d@%d master - 0 0 2 connected 8192-16383\n"
            "vars currentEpoch 2 lastVoteEpoch 0\n"
            % (A, B, b_port, b_port + 1))


def write_file(workdir, text, name="nodes.conf"):
    os.makedirs(workdir, exist_ok=True)
    with open(os.path.join(workdir, name), "w") as f:
        f.write(text)


def read_file(workdir, name="nodes.conf"):
    with open(os.path.join(workdir, name)) as f:
        return f.read()


def start_cellgate(tmp_path, name, text=None, extra=()):
    workdir = str(tmp_path / name)
    if text is not None:
        write_file(workdir, text)
    d = harness.Daemon(workdir, extra_args=cluster_args() + list(extra),
                       name=name)
    return d.start()


def start_redis(tmp_path, name, text=None, extra=()):
    workdir = str(tmp_path / name)
    if text is not None:
        write_file(workdir, text)
    return harness.RedisServer(workdir, extra_args=cluster_args() + list(extra)).start()


@pytest.fixture
def pair(tmp_path):
    """A cellgate and a redis-server, both alone and empty."""
    cg = start_cellgate(tmp_path, "cg")
    ref = start_redis(tmp_path, "ref")
    yield cg, ref
    cg.stop()
    ref.stop()


@pytest.fixture
def pair2(tmp_path):
    """Both loaded from the same two-node nodes.conf (B silent)."""
    b_port = harness.free_port()
    text = two_node_file(b_port)
    cg = start_cellgate(tmp_path, "cg", text)
    ref = start_redis(tmp_path, "ref", text)
    yield cg, ref, b_port
    cg.stop()
    ref.stop()


def raw(port, *args):
    c = harness.RawConn(port=port)
    try:
        return c.command(*args)
    finally:
        c.close()


def raw_seq(port, *commands):
    """Several commands on one connection (ASKING holds for the next)."""
    c = harness.RawConn(port=port)
    try:
        return [c.command(*cmd) for cmd in commands]
    finally:
        c.close()


def same(cg, ref, *args):
    a, b = raw(cg.port, *args), raw(ref.port, *args)
    assert a == b, "%r: cellgate %r, redis %r" % (args, a, b)
    return a


def redis_info(port):
    """CLUSTER INFO's body without cellgate's own lines after Redis's (the
    peers' clocks: cluster_clock_*)."""
    body = raw(port, "CLUSTER", "INFO").split(b"\r\n", 1)[1]
    return b"".join(l for l in body.splitlines(True)
                    if not l.startswith(b"cluster_clock_"))


def same_info(cg, ref):
    a, b = redis_info(cg.port), redis_info(ref.port)
    assert a == b, "CLUSTER INFO: cellgate %r, redis %r" % (a, b)
    return a


def info_field(port, field):
    text = raw(port, "CLUSTER", "INFO").decode()
    m = re.search(r"%s:(\S+)" % field, text)
    return m.group(1) if m else None


def wait_state(port, state):
    assert harness.wait_until(lambda: info_field(port, "cluster_state") == state,
                              WAIT), raw(port, "CLUSTER", "INFO")


def masked(text, *ports):
    """Node names, the given ports and their bus ports masked, ping/pong
    times zeroed, another node's link state masked (whether a link to a
    node that never answers is connecting at that moment is a race, on
    Redis too), node lines sorted (Redis lists its nodes in its hash
    table's order)."""
    text = re.sub(r"[0-9a-f]{40}", "ID", text)
    for p in ports:
        text = re.sub(r":%d@\d+" % p, ":PORT@CPORT", text)
        text = re.sub(r"\b%d\b" % p, "PORT", text)
    text = re.sub(r"(master|slave|noflags)( \S+) \d+ \d+ ", r"\1\2 0 0 ", text)
    text = re.sub(r"^((?:(?!myself)\S+ ){7})(?:dis)?connected\b", r"\1LINK", text,
                  flags=re.M)
    lines = text.split("\n")
    return "\n".join(sorted(l for l in lines if not l.startswith("vars"))
                     + [l for l in lines if l.startswith("vars")])


# ---- the empty start ----------------------------------------------------------

def test_empty_start_matches_redis(pair):
    cg, ref = pair
    # Redis counts itself as size 1 until its first state update (2 s).
    for d in (cg, ref):
        assert harness.wait_until(
            lambda: info_field(d.port, "cluster_size") == "0", WAIT)
    info = same_info(cg, ref)
    assert b"cluster_state:fail\r\n" in info
    assert b"cluster_known_nodes:1\r\ncluster_size:0\r\n" in info
    same(cg, ref, "CLUSTER", "SLOTS")
    assert raw(cg.port, "CLUSTER", "MYID")[:5] == b"$40\r\n"
    nodes = [masked(raw(d.port, "CLUSTER", "NODES").decode(), d.port)
             for d in (cg, ref)]
    assert nodes[0] == nodes[1]
    assert "ID 127.0.0.1:" not in nodes[0]      # no address learned yet
    shards = [masked(raw(d.port, "CLUSTER", "SHARDS").decode(), d.port)
              for d in (cg, ref)]
    assert shards[0] == shards[1]
    files = [re.sub(r"[0-9a-f]{40}", "ID", read_file(d.workdir))
             for d in (cg, ref)]
    assert files[0] == files[1] == (
        "ID :0@0 myself,master - 0 0 0 connected\n"
        "vars currentEpoch 0 lastVoteEpoch 0\n")
    # The name is 40 random hex digits, the file's and MYID's the same.
    myid = raw(cg.port, "CLUSTER", "MYID").split(b"\r\n")[1].decode()
    assert re.fullmatch(r"[0-9a-f]{40}", myid)
    assert read_file(cg.workdir).startswith(myid)
    # A key: no slot is served; SELECT of another database is refused.
    same(cg, ref, "SET", "k", "v")
    same(cg, ref, "SELECT", "1")
    same(cg, ref, "SELECT", "0")
    same(cg, ref, "REPLICAOF", "127.0.0.1", "1")
    assert b"redis_mode:cluster" in raw(cg.port, "INFO", "server")
    assert b"cluster_enabled:1" in raw(cg.port, "INFO", "cluster")


def test_options_like_redis(tmp_path):
    extra = ["--cluster-config-file", "my-nodes.conf",
             "--cluster-require-full-coverage", "no",
             "--cluster-allow-reads-when-down", "yes",
             "--cluster-replica-validity-factor", "3",
             "--cluster-migration-barrier", "2",
             "--cluster-announce-hostname", "h.example",
             "--cluster-preferred-endpoint-type", "hostname"]
    cg = start_cellgate(tmp_path, "cg", extra=extra)
    ref = start_redis(tmp_path, "ref", extra=extra)
    try:
        assert os.path.exists(os.path.join(cg.workdir, "my-nodes.conf"))
        assert not os.path.exists(os.path.join(cg.workdir, "nodes.conf"))
        for name in ("cluster-enabled", "cluster-config-file",
                     "cluster-require-full-coverage",
                     "cluster-allow-reads-when-down",
                     "cluster-allow-pubsubshard-when-down",
                     "cluster-replica-validity-factor",
                     "cluster-slave-validity-factor",
                     "cluster-migration-barrier",
                     "cluster-allow-replica-migration",
                     "cluster-replica-no-failover",
                     "cluster-link-sendbuf-limit",
                     "cluster-announce-ip", "cluster-announce-port",
                     "cluster-announce-bus-port", "cluster-announce-tls-port",
                     "cluster-announce-hostname",
                     "cluster-preferred-endpoint-type"):
            same(cg, ref, "CONFIG", "GET", name)
        # Immutable at run time, as Redis; the others change.
        same(cg, ref, "CONFIG", "SET", "cluster-enabled", "no")
        same(cg, ref, "CONFIG", "SET", "cluster-config-file", "x.conf")
        same(cg, ref, "CONFIG", "SET", "cluster-port", "7000")
        same(cg, ref, "CONFIG", "SET", "cluster-node-timeout", "-1")
        same(cg, ref, "CONFIG", "SET", "cluster-node-timeout", "5000")
        same(cg, ref, "CONFIG", "GET", "cluster-node-timeout")
        same(cg, ref, "CONFIG", "SET", "cluster-announce-ip", "10.1.2.3")
        same(cg, ref, "CONFIG", "SET", "cluster-announce-port", "7001")
        same(cg, ref, "CONFIG", "SET", "cluster-preferred-endpoint-type", "x")
        # The announced address is myself's in the view at once.
        nodes = raw(cg.port, "CLUSTER", "NODES")
        assert b" 10.1.2.3:7001@" in nodes and b",h.example " in nodes
        # Removed, the address is learned again (none yet: alone).
        same(cg, ref, "CONFIG", "SET", "cluster-announce-ip", "")
        for d in (cg, ref):
            assert re.search(rb"[0-9a-f]{40} :7001@\d+,h\.example myself",
                             raw(d.port, "CLUSTER", "NODES"))
    finally:
        cg.stop()
        ref.stop()


def test_config_rewrite_keeps_cluster_options(tmp_path):
    conf = tmp_path / "cg.conf"
    conf.write_text("cluster-enabled yes\ncluster-node-timeout 15000\n"
                    "cluster-port %d\n" % harness.free_port())
    d = harness.Daemon(str(tmp_path / "cg"), config_file=str(conf),
                       name="cg").start()
    try:
        c = d.client()
        assert c.config_set("cluster-node-timeout", "4321")
        assert c.config_set("cluster-allow-reads-when-down", "yes")
        assert c.execute_command("CONFIG", "REWRITE")
        text = conf.read_text()
        assert "cluster-node-timeout 4321" in text
        assert "cluster-allow-reads-when-down yes" in text
        assert "cluster-enabled yes" in text
    finally:
        d.stop()


def run_bin(workdir, *args):
    os.makedirs(workdir, exist_ok=True)
    return subprocess.run([harness.BIN, "--port", str(harness.free_port()),
                           "--bind", "127.0.0.1", "--dir", workdir] +
                          list(args), capture_output=True, text=True,
                          timeout=30, env=harness.sanitizer_env(dict(os.environ)))


def test_cluster_enabled_with_cluster_mode_refused(tmp_path):
    for mode in ("yes", "emulated"):
        p = run_bin(str(tmp_path), "--cluster-enabled", "yes",
                    "--cluster-mode", mode, "--test-config")
        assert p.returncode != 0
        assert ("cluster-enabled yes and cluster-mode %s cannot both be set"
                % mode) in p.stderr
    p = run_bin(str(tmp_path), "--cluster-enabled", "yes", "--replicaof",
                "127.0.0.1", "1", "--test-config")
    assert p.returncode != 0
    assert "replicaof directive not allowed in cluster mode" in p.stderr


# ---- nodes.conf ----------------------------------------------------------------

def test_nodes_file_loaded_and_saved_on_change(pair2):
    cg, ref, b_port = pair2
    for d in (cg, ref):
        wait_state(d.port, "ok")
    nodes = [masked(raw(d.port, "CLUSTER", "NODES").decode(), d.port)
             for d in (cg, ref)]
    assert nodes[0] == nodes[1]
    assert "%s 127.0.0.1:%d@%d master - 0 0 2" % ("ID", b_port, b_port + 1) \
        in nodes[0]
    same_info(cg, ref)
    assert masked(raw(cg.port, "CLUSTER", "SLOTS").decode(), cg.port) == \
        masked(raw(ref.port, "CLUSTER", "SLOTS").decode(), ref.port)
    # Every change is in the file before the reply is read back.
    for cmd in (("CLUSTER", "DELSLOTSRANGE", "100", "199"),
                ("CLUSTER", "SETSLOT", "5", "MIGRATING", B),
                ("CLUSTER", "SETSLOT", "9000", "IMPORTING", B),
                ("CLUSTER", "BUMPEPOCH")):
        same(cg, ref, *cmd)
    raw(cg.port, "PING")
    files = [masked(read_file(d.workdir), d.port) for d in (cg, ref)]
    assert files[0] == files[1]
    assert "myself,master - 0 0 3 connected 0-99 200-8191 [5->-ID] "\
        "[9000-<-ID]\n" in files[0]
    assert read_file(cg.workdir).endswith("vars currentEpoch 3 lastVoteEpoch 0\n")


def test_nodes_file_survives_restart_and_kill9(tmp_path):
    d = start_cellgate(tmp_path, "cg", two_node_file(harness.free_port()))
    myid = raw(d.port, "CLUSTER", "MYID")
    assert myid == b"$40\r\n%s\r\n" % A.encode()
    assert raw(d.port, "CLUSTER", "DELSLOTS", "7") == b"+OK\r\n"
    before = masked(raw(d.port, "CLUSTER", "NODES").decode(), d.port)
    d.stop()
    d.start()
    assert masked(raw(d.port, "CLUSTER", "NODES").decode(), d.port) == before
    assert raw(d.port, "CLUSTER", "ADDSLOTS", "7") == b"+OK\r\n"
    assert raw(d.port, "CLUSTER", "SETSLOT", "8", "MIGRATING", B) == b"+OK\r\n"
    d.stop(signal.SIGKILL)
    text = read_file(d.workdir)
    assert "myself,master - 0 0 1 connected 0-8191 [8->-%s]\n" % B in text
    assert not [f for f in os.listdir(d.workdir) if ".tmp" in f]
    d.start()
    assert b"0-8191 [8->-" + B.encode() in raw(d.port, "CLUSTER", "NODES")
    d.stop()


def test_nodes_file_saves_and_fsyncs_on_a_full_disk(tmp_path):
    """A save of a file of one page rewrites it in place, fsynced where Redis
    fsyncs, so a full disk refuses none (a new file and a rename would
    need a free block), and a kill -9 keeps the last."""
    with harness.small_disk(str(tmp_path / "disk")) as mnt:
        path = os.path.join(mnt, "nodes.conf")
        d = start_cellgate(tmp_path, "cg", extra=("--cluster-config-file", path))
        assert raw(d.port, "CLUSTER", "ADDSLOTSRANGE", "0", "99") == b"+OK\r\n"
        harness.fill_disk(os.path.join(mnt, "filler"))
        # The text grows (a longer range, a new epoch), fsynced (BUMPEPOCH,
        # SAVECONFIG), then shrinks (padding truncated).
        assert raw(d.port, "CLUSTER", "ADDSLOTSRANGE", "100", "16383") == b"+OK\r\n"
        assert raw(d.port, "CLUSTER", "BUMPEPOCH") == b"+BUMPED 1\r\n"
        assert raw(d.port, "CLUSTER", "SAVECONFIG") == b"+OK\r\n"
        with open(path) as f:
            text = f.read()
        assert re.search(r"myself,master - 0 0 1 connected 0-16383\n"
                         r"vars currentEpoch 1 lastVoteEpoch 0\n$", text), text
        assert raw(d.port, "CLUSTER", "DELSLOTSRANGE", "1000", "16383") == b"+OK\r\n"
        raw(d.port, "PING")
        with open(path) as f:
            assert f.read().endswith(" connected 0-999\nvars currentEpoch 1 lastVoteEpoch 0\n")
        d.stop(signal.SIGKILL)
        d.start()                       # the disk still full
        assert b"myself,master - 0 0 1 connected 0-999\n" in raw(d.port, "CLUSTER", "NODES")
        d.stop()


@pytest.mark.parametrize("text,why", [
    ("%s 127.0.0.1:1@2 myself,master - 0 0 0\n" % A, "line 1: fewer than 8"),
    ("%s 127.0.0.1:1@2 myself,master - 0 0 0 connected 0-99999\n" % A,
     "line 1: bad slot"),
    ("vars currentEpoch 1 lastVoteEpoch 0\n"
     "%s 127.0.0.1:1@2 myself,bogus - 0 0 0 connected\n" % A,
     "line 2: unknown flag"),
    ("%s 127.0.0.1:1@2 master - 0 0 0 connected\n" % A,
     "no node is flagged myself"),
    ("xyz 127.0.0.1:1@2 myself,master - 0 0 0 connected\n", "bad node id"),
])
def test_corrupt_nodes_file_refused(tmp_path, text, why):
    workdir = str(tmp_path / "cg")
    write_file(workdir, text)
    p = run_bin(workdir, *cluster_args())
    assert p.returncode != 0
    assert "corrupt cluster config file" in p.stderr and why in p.stderr
    assert read_file(workdir) == text           # left as it was


def test_nodes_file_locked_by_another_node(tmp_path):
    d = start_cellgate(tmp_path, "cg")
    try:
        p = run_bin(d.workdir, *cluster_args())
        assert p.returncode != 0
        assert "is already used by a different Redis Cluster node" in p.stderr
        assert raw(d.port, "PING") == b"+PONG\r\n"
    finally:
        d.stop()


# ---- the subcommands -------------------------------------------------------------

def test_subcommand_replies_and_errors_match_redis(pair):
    cg, ref = pair
    slots = lambda d: masked(raw(d.port, "CLUSTER", "SLOTS").decode(), d.port)
    for cmd in [
            ("CLUSTER", "ADDSLOTS", "1", "2", "3"),
            ("CLUSTER", "ADDSLOTS", "1"),
            ("CLUSTER", "ADDSLOTS", "5", "5"),
            ("CLUSTER", "ADDSLOTS", "x"),
            ("CLUSTER", "ADDSLOTS", "16384"),
            ("CLUSTER", "ADDSLOTS", "-1"),
            ("CLUSTER", "ADDSLOTSRANGE", "10", "20"),
            ("CLUSTER", "ADDSLOTSRANGE", "30", "20"),
            ("CLUSTER", "ADDSLOTSRANGE", "30"),
            ("CLUSTER", "ADDSLOTSRANGE", "30", "40", "50"),
            ("CLUSTER", "ADDSLOTSRANGE", "15", "25"),
            ("CLUSTER", "DELSLOTS", "7"),
            ("CLUSTER", "DELSLOTS"),
            ("CLUSTER", "DELSLOTSRANGE", "10", "12"),
            ("CLUSTER", "DELSLOTSRANGE", "10", "12"),
            ("CLUSTER", "SETSLOT", "1", "MIGRATING", "abc"),
            ("CLUSTER", "SETSLOT", "1", "STABLE"),
            ("CLUSTER", "SETSLOT", "100", "MIGRATING", "abc"),
            ("CLUSTER", "SETSLOT", "1", "IMPORTING", "abc"),
            ("CLUSTER", "SETSLOT", "1", "NODE"),
            ("CLUSTER", "SETSLOT", "1", "NODE", "abc"),
            ("CLUSTER", "SETSLOT", "1", "FOO", "BAR"),
            ("CLUSTER", "SETSLOT", "99999", "STABLE"),
            ("CLUSTER", "SETSLOT", "1"),
            ("CLUSTER", "BUMPEPOCH"),
            ("CLUSTER", "BUMPEPOCH"),
            ("CLUSTER", "SET-CONFIG-EPOCH", "5"),
            ("CLUSTER", "SET-CONFIG-EPOCH", "x"),
            ("CLUSTER", "COUNT-FAILURE-REPORTS", "abc"),
            ("CLUSTER", "FORGET", "abc"),
            ("CLUSTER", "REPLICATE", "abc"),
            ("CLUSTER", "REPLICAS", "abc"),
            ("CLUSTER", "SLAVES", "abc"),
            ("CLUSTER", "FAILOVER"),
            ("CLUSTER", "FAILOVER", "FOO"),
            ("CLUSTER", "FAILOVER", "FORCE", "X"),
            ("CLUSTER", "MEET", "1.2.3.4", "x"),
            ("CLUSTER", "MEET", "1.2.3.4", "5", "y"),
            ("CLUSTER", "MEET", "1.2.3.x", "5"),
            ("CLUSTER", "MEET", "1.2.3.4", "0"),
            ("CLUSTER", "MEET", "1.2.3.4", "70000"),
            ("CLUSTER", "MEET", "1.2.3.4", "5", "6", "7"),
            ("CLUSTER", "MEET", "1.2.3.4"),
            ("CLUSTER", "RESET", "FOO"),
            ("CLUSTER", "RESET", "SOFT", "X"),
            ("CLUSTER", "LINKS"),
            ("CLUSTER", "SAVECONFIG"),
            ("CLUSTER", "KEYSLOT", "{user1000}.following"),
            ("CLUSTER", "COUNTKEYSINSLOT", "1"),
            ("CLUSTER", "GETKEYSINSLOT", "1", "10"),
            ("CLUSTER", "HELP"),
            ("CLUSTER", "NOSUCH"),
            ("CLUSTER", "PROMOTE", "x"),
            ("ASKING",),
            ("ASKING", "x"),
            ("READONLY",),
            ("READWRITE",),
            ("CLUSTER", "FLUSHSLOTS"),
            ("CLUSTER", "ADDSLOTSRANGE", "0", "16383"),
            ("CLUSTER", "FLUSHSLOTS"),
            ("CLUSTER", "RESET"),
    ]:
        same(cg, ref, *cmd)
        assert slots(cg) == slots(ref), cmd
    me = raw(cg.port, "CLUSTER", "MYID").split(b"\r\n")[1]
    assert raw(cg.port, "CLUSTER", "REPLICATE", me) == \
        b"-ERR Can't replicate myself\r\n"
    assert raw(cg.port, "CLUSTER", "FORGET", me) == \
        b"-ERR I tried hard but I can't forget myself...\r\n"
    assert raw(cg.port, "CLUSTER", "REPLICAS", me) == b"*0\r\n"
    assert raw(cg.port, "CLUSTER", "COUNT-FAILURE-REPORTS", me) == b":0\r\n"
    # Keys block FLUSHSLOTS, RESET and REPLICATE, as Redis.
    same(cg, ref, "CLUSTER", "ADDSLOTS", "12182")
    wait_state(cg.port, "fail")
    for d in (cg, ref):
        raw(d.port, "CONFIG", "SET", "cluster-require-full-coverage", "no")
    for d in (cg, ref):
        wait_state(d.port, "ok")
    same(cg, ref, "SET", "foo", "1")
    same(cg, ref, "CLUSTER", "FLUSHSLOTS")
    same(cg, ref, "CLUSTER", "RESET", "HARD")
    same(cg, ref, "CLUSTER", "REPLICATE", B)
    same(cg, ref, "DEL", "foo")
    # RESET HARD: a new name and epochs 0.
    old = raw(cg.port, "CLUSTER", "MYID")
    same(cg, ref, "CLUSTER", "RESET", "HARD")
    assert raw(cg.port, "CLUSTER", "MYID") != old
    same(cg, ref, "CLUSTER", "SET-CONFIG-EPOCH", "7")
    same(cg, ref, "CLUSTER", "SET-CONFIG-EPOCH", "8")
    assert b"cluster_current_epoch:7\r\ncluster_my_epoch:7\r\n" in \
        raw(cg.port, "CLUSTER", "INFO")


def test_meet_makes_a_handshake_node(pair):
    cg, ref = pair
    dead, dead_bus = harness.free_port(), harness.free_port()
    meet = ("CLUSTER", "MEET", "127.0.0.1", str(dead), str(dead_bus))
    same(cg, ref, *meet)
    same(cg, ref, *meet)                    # in progress: OK again
    nodes = raw(cg.port, "CLUSTER", "NODES").decode()
    assert re.search(r" 127\.0\.0\.1:%d@%d handshake - " % (dead, dead_bus),
                     nodes), nodes
    assert "cluster_known_nodes:2" in raw(cg.port, "CLUSTER", "INFO").decode()
    # A handshake node is never saved (as Redis).
    raw(cg.port, "CLUSTER", "SAVECONFIG")
    assert "handshake" not in read_file(cg.workdir)


# ---- routing ---------------------------------------------------------------------

def key_in(slot_range, prefix="k"):
    lo, hi = slot_range
    for i in range(100000):
        k = "%s%d" % (prefix, i)
        if lo <= harness.reference_slot(k) <= hi:
            return k
    raise AssertionError("no key")


def test_moved_ask_tryagain_asking_like_redis(pair2):
    cg, ref, b_port = pair2
    for d in (cg, ref):
        wait_state(d.port, "ok")
    mine = key_in((0, 8191))
    theirs = key_in((8192, 16383))
    same(cg, ref, "SET", mine, "1")
    moved = same(cg, ref, "GET", theirs)
    assert moved == b"-MOVED %d 127.0.0.1:%d\r\n" % (
        harness.reference_slot(theirs), b_port)
    same(cg, ref, "MSET", mine, "1", theirs, "2")          # CROSSSLOT
    # MIGRATING: a present key is served here, an absent one ASKed, a mix
    # of both must try again.
    slot = harness.reference_slot(mine)
    other = "{%s}x" % mine
    same(cg, ref, "CLUSTER", "SETSLOT", str(slot), "MIGRATING", B)
    same(cg, ref, "GET", mine)
    ask = same(cg, ref, "GET", other)
    assert ask == b"-ASK %d 127.0.0.1:%d\r\n" % (slot, b_port)
    same(cg, ref, "MGET", mine, other)                      # TRYAGAIN
    same(cg, ref, "MGET", other, "{%s}y" % mine)            # ASK
    same(cg, ref, "EXISTS", mine, other)
    same(cg, ref, "CLUSTER", "SETSLOT", str(slot), "STABLE")
    same(cg, ref, "GET", other)
    # IMPORTING: MOVED unless the client sent ASKING just before.
    islot = harness.reference_slot(theirs)
    same(cg, ref, "CLUSTER", "SETSLOT", str(islot), "IMPORTING", B)
    same(cg, ref, "GET", theirs)
    for seq in [(("ASKING",), ("GET", theirs), ("GET", theirs)),
                (("ASKING",), ("SET", theirs, "x"), ("GET", theirs)),
                (("ASKING",), ("MGET", theirs, "{%s}z" % theirs)),
                (("ASKING",), ("ASKING",), ("GET", theirs)),
                (("ASKING",), ("MULTI",), ("GET", theirs), ("EXEC",),
                 ("GET", theirs)),
                (("MULTI",), ("GET", theirs), ("EXEC",))]:
        a, b = raw_seq(cg.port, *seq), raw_seq(ref.port, *seq)
        assert a == b, (seq, a, b)
    # A script's keys are routed as the command's.
    same(cg, ref, "EVAL", "return redis.call('get', KEYS[1])", "1", theirs)
    same(cg, ref, "EVAL", "return redis.call('get', KEYS[1])", "1", mine)


def test_clusterdown_like_redis(pair2):
    cg, ref, b_port = pair2
    for d in (cg, ref):
        wait_state(d.port, "ok")
    mine = key_in((0, 8191))
    unbound = key_in((100, 199), prefix="u")
    same(cg, ref, "SET", mine, "1")
    same(cg, ref, "CLUSTER", "DELSLOTSRANGE", "100", "199")
    for d in (cg, ref):
        wait_state(d.port, "fail")
    same(cg, ref, "GET", unbound)               # Hash slot not served
    same(cg, ref, "GET", mine)                  # The cluster is down
    same(cg, ref, "SET", mine, "2")
    same(cg, ref, "EVAL", "return redis.call('get', KEYS[1])", "1", mine)
    same(cg, ref, "PING")
    for d in (cg, ref):
        raw(d.port, "CONFIG", "SET", "cluster-allow-reads-when-down", "yes")
    same(cg, ref, "GET", mine)
    same(cg, ref, "SET", mine, "2")             # only accepts read commands
    same(cg, ref, "EVAL", "return redis.call('set', KEYS[1], 'x')", "1", mine)
    for d in (cg, ref):
        raw(d.port, "CONFIG", "SET", "cluster-require-full-coverage", "no")
    for d in (cg, ref):
        wait_state(d.port, "ok")
    same(cg, ref, "SET", mine, "3")
    same(cg, ref, "GET", unbound)


# ---- replicas ----------------------------------------------------------------------

def test_replicate_follows_the_primary_through_replication(tmp_path):
    p = start_cellgate(tmp_path, "p", extra=["--cluster-node-timeout", "2000"])
    r = start_cellgate(tmp_path, "r", extra=["--cluster-node-timeout", "2000"])
    try:
        pc, rc = p.client(), r.client()
        assert pc.execute_command("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
        rbus = r.extra_args[r.extra_args.index("--cluster-port") + 1]
        assert pc.execute_command("CLUSTER", "MEET", "127.0.0.1", str(r.port), rbus)
        pid = pc.execute_command("CLUSTER", "MYID").decode()
        assert harness.wait_until(
            lambda: pid.encode() in rc.execute_command("CLUSTER", "NODES")
            and b"handshake" not in rc.execute_command("CLUSTER", "NODES"), WAIT)
        wait_state(p.port, "ok")
        pc.set("foo", "bar")
        assert rc.execute_command("CLUSTER", "REPLICATE", pid) == b"OK"
        assert harness.wait_until(lambda: rc.execute_command("ROLE")[0] == b"slave"
                                  and rc.execute_command("ROLE")[3] == b"connected",
                                  WAIT)
        assert b"master_port:%d" % p.port in raw(r.port, "INFO", "replication")
        # Its keys are its primary's: MOVED unless READONLY.
        assert raw(r.port, "GET", "foo") == b"-MOVED 12182 127.0.0.1:%d\r\n" % p.port
        assert harness.wait_until(
            lambda: raw_seq(r.port, ("READONLY",), ("GET", "foo"))[1]
            == b"$3\r\nbar\r\n", WAIT)
        assert raw_seq(r.port, ("READONLY",), ("SET", "foo", "x"))[1] == \
            b"-MOVED 12182 127.0.0.1:%d\r\n" % p.port
        # Both views say so, and the replica's file keeps it.
        rid = rc.execute_command("CLUSTER", "MYID").decode()
        line = [l for l in read_file(r.workdir).splitlines()
                if l.startswith(rid)][0]
        assert " myself,slave %s " % pid in line
        assert harness.wait_until(
            lambda: ("slave %s" % pid).encode() in
            pc.execute_command("CLUSTER", "NODES"), WAIT)
        replicas = pc.execute_command("CLUSTER", "REPLICAS", pid)
        assert len(replicas) == 1 and replicas[0].startswith(rid.encode())
        assert raw(r.port, "CLUSTER", "REPLICATE", rid) == \
            b"-ERR Can't replicate myself\r\n"
        assert raw(p.port, "CLUSTER", "REPLICATE", rid) == \
            b"-ERR I can only replicate a master, not a replica.\r\n"
        # RESET on a replica: a primary again, alone, its data gone (as
        # Redis's emptyData), and it no longer replicates.
        assert raw(r.port, "CLUSTER", "RESET") == b"+OK\r\n"
        assert harness.wait_until(lambda: rc.execute_command("ROLE")[0] ==
                                  b"master", WAIT)
        assert rc.dbsize() == 0
        assert info_field(r.port, "cluster_known_nodes") == "1"
        assert b"myself,master - " in raw(r.port, "CLUSTER", "NODES")
    finally:
        r.stop()
        p.stop()


# ---- redis-cli --cluster: a slot move end to end ------------------------------------

def cli(*args, timeout=120):
    p = subprocess.run(["redis-cli"] + list(args), capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def test_redis_cli_reshard_moves_slots_and_keys(tmp_path):
    """SETSLOT IMPORTING/MIGRATING, GETKEYSINSLOT, MIGRATE (RESTORE-ASKING)
    and SETSLOT NODE as redis-cli drives them: the keys move, every one
    is still read through -MOVED/-ASK, the importing node's epoch is
    bumped, and check is clean."""
    nodes = [start_cellgate(tmp_path, "n%d" % i,
                            extra=["--cluster-node-timeout", "3000"])
             for i in range(3)]
    try:
        addrs = ["127.0.0.1:%d" % d.port for d in nodes]
        rc, out = cli("--cluster", "create", *addrs, "--cluster-yes")
        assert rc == 0, out
        for d in nodes:
            wait_state(d.port, "ok")
        # 60 keys anywhere, and 10 of the slots redis-cli moves first (the
        # lowest of the source's range: 10923 on).
        moved = [key_in((10923, 11222), prefix="m%d-" % i) for i in range(10)]
        keys = ["key%d" % i for i in range(60)] + moved
        for k in keys:
            rc, out = cli("-c", "-p", str(nodes[0].port), "SET", k, k,
                          timeout=30)
            assert out.strip() == "OK", (k, out)
        src, dst = nodes[2], nodes[0]
        src_id = raw(src.port, "CLUSTER", "MYID").split(b"\r\n")[1].decode()
        dst_id = raw(dst.port, "CLUSTER", "MYID").split(b"\r\n")[1].decode()
        epoch_before = int(info_field(dst.port, "cluster_my_epoch"))
        rc, out = cli("--cluster", "reshard", addrs[0], "--cluster-from", src_id,
                      "--cluster-to", dst_id, "--cluster-slots", "300",
                      "--cluster-yes")
        assert rc == 0, out
        assert int(info_field(dst.port, "cluster_my_epoch")) > epoch_before
        rc, out = cli("--cluster", "check", addrs[0])
        assert rc == 0 and "[ERR]" not in out and "[WARNING]" not in out, out
        for k in keys:
            rc, out = cli("-c", "-p", str(nodes[1].port), "GET", k, timeout=30)
            assert out.strip() == k, (k, out)
        for k in moved:         # now the destination's own
            assert raw(dst.port, "GET", k) == b"$%d\r\n%s\r\n" % (
                len(k), k.encode())
            assert raw(src.port, "GET", k).startswith(b"-MOVED ")
    finally:
        for d in nodes:
            d.stop()


def test_loaded_keys_claim_their_slots_as_redis(tmp_path):
    """Keys loaded at start-up in a slot without an owner make it this
    node's; in a slot another node owns they make it importing (Redis's
    verifyClusterConfigWithData()); keys beyond database 0 refuse the
    start."""
    d = start_cellgate(tmp_path, "cg")
    mine = key_in((0, 8191), prefix="a")
    theirs = key_in((8192, 16383), prefix="b")
    c = d.client()
    assert c.execute_command("CLUSTER", "ADDSLOTSRANGE", "0", "16383")
    wait_state(d.port, "ok")
    c.set(mine, "1")
    c.set(theirs, "2")
    assert c.save()
    d.stop()
    b_port = harness.free_port()
    write_file(d.workdir,
               "%s 127.0.0.1:1@2 myself,master - 0 0 1 connected 0-99\n"
               "%s 127.0.0.1:%d@%d master - 0 0 2 connected 8192-16383\n"
               "vars currentEpoch 2 lastVoteEpoch 0\n"
               % (A, B, b_port, b_port + 1))
    d.start()
    try:
        ms, ts = harness.reference_slot(mine), harness.reference_slot(theirs)
        nodes = raw(d.port, "CLUSTER", "NODES").decode()
        mine_line = [l for l in nodes.splitlines() if l.startswith(A)][0]
        assert " 0-99 " in mine_line + " "
        owned = set()
        for r in mine_line.split()[8:]:
            if not r.startswith("["):
                lo, _, hi = r.partition("-")
                owned.update(range(int(lo), int(hi or lo) + 1))
        assert ms in owned and ts not in owned
        assert "[%d-<-%s]" % (ts, B) in mine_line
        assert "[%d-<-%s]" % (ts, B) in read_file(d.workdir)
        assert raw(d.port, "DBSIZE") == b":2\r\n"     # both kept
    finally:
        d.stop()


def test_keys_beyond_database_0_refuse_the_start(tmp_path):
    workdir = str(tmp_path / "plain")
    d = harness.Daemon(workdir, name="plain").start()
    c = d.client()
    c.select(3)
    c.set("k", "v")
    assert c.save()
    d.stop()
    p = run_bin(workdir, *cluster_args())
    assert p.returncode != 0
    assert "You can't have keys in a DB different than DB 0 when in " \
           "Cluster mode." in p.stderr

"""cluster-enabled yes: what a skew between two nodes' wall clocks does to
a limiter key that moves between them, measured with clocks set apart on
purpose (each node on its own fake clock), and each node's view of its
peer's clock in CLUSTER INFO (cellgate's cluster_clock_* lines).

A limiter's state is an absolute time (a GCRA key's theoretical arrival
time): read on a node whose clock is d ahead, it is d nearer, so the key's
wait ends d early; behind, d late, but the key's expiry, which MIGRATE
carries as a TTL (as Redis's), ends the wait on time. The clocks are
pinned, so the figures are exact."""
import re

import pytest

import harness

WAIT = 30           # s: the bound of every wait below
PERIOD = 10         # s: CL.THROTTLE k 0 1 10, one request per 10 s


def start_node(start_daemon, name):
    cport = harness.free_port()
    d = start_daemon("--cluster-enabled", "yes", "--cluster-port", cport,
                     "--cluster-node-timeout", "600000", fakeclock=True, name=name)
    d.cport = cport
    return d


def cluster_info(d):
    return d.raw().command("CLUSTER", "INFO").decode()


def myid(d):
    return d.raw().command("CLUSTER", "MYID")[5:45].decode()


def form(a, b):
    """a serves every slot, b none; met over the bus. The bus runs on the
    wall clock, which is pinned: the clocks step past a primary's wait
    after its start (2 s) before the MEET, once after it, and once more
    when b has heard of a's slots (a primary that was in a minority, b
    alone, waits up to 5 s after, as Redis's rejoin delay)."""
    for d in (a, b):
        d.clock.advance(seconds=5)
    assert a.raw().command("CLUSTER", "ADDSLOTSRANGE", 0, 16383) == b"+OK\r\n"
    assert a.raw().command("CLUSTER", "MEET", "127.0.0.1", b.port, b.cport) == b"+OK\r\n"
    for d in (a, b):
        d.clock.advance(seconds=5)
    assert harness.wait_until(
        lambda: all("cluster_known_nodes:2" in cluster_info(d) for d in (a, b)) and
        "cluster_slots_assigned:16384" in cluster_info(b), WAIT), \
        [cluster_info(d) for d in (a, b)]
    for d in (a, b):
        d.clock.advance(seconds=5)
    assert harness.wait_until(
        lambda: all("cluster_state:ok" in cluster_info(d) for d in (a, b)), WAIT), \
        [cluster_info(d) for d in (a, b)]


def peer_offset(d, peer_id):
    """d's measure of peer_id's clock: offset_ms, rtt_ms."""
    m = re.search(r"cluster_clock_peer_%s:offset_ms=(-?\d+),rtt_ms=(\d+)," % peer_id,
                  cluster_info(d))
    return (int(m.group(1)), int(m.group(2))) if m else None


def move_slot(a, b, key):
    """key's slot from a to b, as redis-cli --cluster reshard moves it."""
    slot = harness.reference_slot(key.encode())
    aid, bid = myid(a), myid(b)
    assert b.raw().command("CLUSTER", "SETSLOT", slot, "IMPORTING", aid) == b"+OK\r\n"
    assert a.raw().command("CLUSTER", "SETSLOT", slot, "MIGRATING", bid) == b"+OK\r\n"
    assert a.raw().command("MIGRATE", "127.0.0.1", b.port, key, 0, 5000) == b"+OK\r\n"
    for d in (b, a):
        assert d.raw().command("CLUSTER", "SETSLOT", slot, "NODE", bid) == b"+OK\r\n"


def throttle(d, key):
    return d.client().execute_command("CL.THROTTLE", key, 0, 1, PERIOD)


@pytest.mark.parametrize("skew_ms", [0, 2000, -3000])
def test_a_key_moved_to_a_node_whose_clock_is_off_by_d_waits_d_less(start_daemon, skew_ms):
    a, b = start_node(start_daemon, "a"), start_node(start_daemon, "b")
    # The node whose clock is ahead is the one stepped forward (a fake
    # clock only moves forward).
    (b if skew_ms > 0 else a).clock.advance(ms=abs(skew_ms))
    form(a, b)
    # Each node measures the other's offset through the bus, exactly here
    # (pinned clocks: the round trip takes no time on them).
    assert harness.wait_until(lambda: peer_offset(a, myid(b)) == (skew_ms, 0), WAIT), \
        cluster_info(a)
    assert harness.wait_until(lambda: peer_offset(b, myid(a)) == (-skew_ms, 0), WAIT), \
        cluster_info(b)
    assert "cluster_clock_max_abs_offset_ms:%d\r\n" % abs(skew_ms) in cluster_info(a)
    # One request per 10 s, taken on a: the next waits 10 s there.
    assert throttle(a, "k") == [0, 1, 0, -1, PERIOD]
    assert throttle(a, "k") == [1, 1, 0, PERIOD, PERIOD]
    move_slot(a, b, "k")
    assert a.raw().command("GET", "k").startswith(b"-MOVED ")
    # On b the state's wait is 10 s minus the skew: d shorter when b is
    # ahead, d longer when behind. The key's expiry is not: MIGRATE
    # carries it as a TTL, as Redis's does, so it stays 10 s.
    wait_s = PERIOD - skew_ms // 1000
    assert throttle(b, "k") == [1, 1, 0, wait_s, wait_s]
    assert b.client().pttl("k") == PERIOD * 1000
    # So the key admits again after the shorter of the two: d early on a
    # node ahead (d of over-admission), on time on a node behind (the key
    # expires, and its state with it, when its wait ends on a's clock).
    # (A key expires once its time is past, as Redis's.)
    b.clock.advance(ms=min(wait_s, PERIOD) * 1000 - 1)
    assert throttle(b, "k")[0] == 1
    b.clock.advance(ms=2)
    assert throttle(b, "k") == [0, 1, 0, -1, PERIOD]

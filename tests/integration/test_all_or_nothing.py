"""RL.ALL: several limiter calls changed all or none (docs/commands.md).

The model is a second cellgate on the same fake time that runs the same
parts one by one, each as its own command, and puts the keys back (DUMP,
then RESTORE ... ABSTTL) whenever a part is denied or fails or the call
ends in PEEK. After every call the reply must be [limited, denied_part,
the parts' replies] as the model's parts answered them (or the failing
part's error with " (part N)"), and every key of both must hold the same
DUMP bytes and expiry. The same runs inside MULTI/EXEC and inside EVAL
scripts, a replica of the server ends with the primary's keys, and the
journal replays to them after kill -9."""
import random

import pytest

import harness
from test_journal import kill9, start
from test_replication import caught_up, follow

KEYS_PER_FAMILY = 3


def cl_throttle(rnd, key):
    part = ["CL.THROTTLE", key, rnd.randint(0, 3), rnd.randint(1, 4),
            rnd.choice([10, 60])]
    if rnd.random() < 0.3:
        part.append(rnd.randint(0, 3))
    if rnd.random() < 0.15:
        part += ["RESERVE", rnd.choice([0, 5, 30])]
    return part


def gcra(rnd, key):
    part = ["GCRA", key, rnd.randint(0, 3), rnd.randint(1, 3),
            rnd.choice(["10", "2.5"])]
    if rnd.random() < 0.3:
        part += ["TOKENS", rnd.randint(1, 3)]
    return part


def windowed(name):
    def make(rnd, key):
        part = [name, key, rnd.randint(1, 4), rnd.choice([10, 60])]
        if rnd.random() < 0.3:
            part += ["COST", rnd.randint(0, 3)]
        if name == "RL.FIXED" and rnd.random() < 0.2:
            part.append("ALIGN")
        if name == "RL.FIXED" and rnd.random() < 0.1:
            part[3:4] = ["day", "CALENDAR", "Europe/Paris"]
        return part
    return make


def rl_log(rnd, key):
    part = windowed("RL.LOG")(rnd, key)
    if rnd.random() < 0.5:
        part += ["META", rnd.choice(["alice", "bob", "a b\r\n\x00"])]
    return part


def rl_tiers(rnd, key):
    part = ["RL.TIERS", key, rnd.randint(1, 3), 10, rnd.randint(3, 6), 60]
    if rnd.random() < 0.3:
        part += ["COST", rnd.randint(0, 2)]
    return part


def rl_acquire(rnd, key):
    # Always a HOLDER: an id the server makes would differ on the model.
    return ["RL.ACQUIRE", key, rnd.randint(1, 3), rnd.choice([10, 60]),
            "HOLDER", rnd.choice(["h1", "h2", "h3", "h4"])]


FAMILIES = {"cl": cl_throttle, "gc": gcra, "fx": windowed("RL.FIXED"),
            "sl": windowed("RL.SLIDING"), "lg": rl_log, "tr": rl_tiers,
            "ls": rl_acquire}
UNIVERSE = ["%s:%d" % (f, i) for f in FAMILIES for i in range(KEYS_PER_FAMILY)]


def random_part(rnd):
    family = rnd.choice(sorted(FAMILIES))
    key = "%s:%d" % (family, rnd.randrange(KEYS_PER_FAMILY))
    if rnd.random() < 0.03:             # another family's key: WRONGTYPE
        key = rnd.choice(UNIVERSE)
    part = FAMILIES[family](rnd, key)
    if family != "gc" and rnd.random() < 0.1:
        part.append("PEEK")
    if family != "gc" and rnd.random() < 0.15:
        part.append("MS")
    if rnd.random() < 0.03:             # junk: the part's own error
        part[2] = "x"
    return [str(a) for a in part]


def random_call(rnd):
    parts = [random_part(rnd) for _ in range(rnd.randint(1, 5))]
    return parts, rnd.random() < 0.1


def rl_all_args(parts, peek):
    args = ["RL.ALL", str(len(parts))]
    for p in parts:
        args += [str(len(p))] + p
    return args + (["PEEK"] if peek else [])


def first_int(reply):
    """A limiter's reply: its first integer (1: denied); None for an error."""
    if not reply.startswith((b"*5\r\n:", b"*6\r\n:")):     # RL.ACQUIRE's six
        return None
    return int(reply.split(b"\r\n")[1][1:])


def key_state(c, key):
    return c.command("DUMP", key), c.command("PEXPIRETIME", key)


def put_back(c, key, state, now_ms):
    """RESTORE key as it was. A key lives through its expiry's millisecond,
    but RESTORE (as Redis's) drops one whose expiry is now: then True, and
    the caller steps past that millisecond, where the key is gone anyway."""
    dump, pexp = state
    c.command("DEL", key)
    if dump == b"$-1\r\n":
        return False
    payload = dump.split(b"\r\n", 1)[1][:-2]
    t = int(pexp[1:-2])
    args = ["RESTORE", key, t if t > 0 else 0, payload] + (["ABSTTL"] if t > 0 else [])
    assert c.command(*args) == b"+OK\r\n"
    return 0 < t <= now_ms


def model_call(m, parts, peek, now_ms):
    """The reply RL.ALL must give, from the parts run one by one on the
    model, whose keys are put back unless every part allowed; and whether
    a key put back expires in this millisecond (see put_back())."""
    keys = sorted({p[1] for p in parts})
    before = {k: key_state(m, k) for k in keys}
    replies = []
    denied = 0
    failed = None
    for i, p in enumerate(parts):
        r = m.command(*p)
        first = first_int(r)
        if first is None:
            failed = (i, r)
            break
        replies.append(r)
        if first and not denied:
            denied = i + 1
    edge = False
    if failed or denied or peek:
        for k in keys:
            edge |= put_back(m, k, before[k], now_ms)
    if failed:
        i, r = failed
        assert r.startswith(b"-"), r
        return r[:-2] + b" (part %d)\r\n" % (i + 1), edge
    return (b"*%d\r\n:%d\r\n:%d\r\n" % (2 + len(parts), bool(denied), denied) +
            b"".join(replies)), edge


def run_call(c, args, mode):
    if mode == "plain":
        return c.command(*args)
    if mode == "multi":
        assert c.command("MULTI") == b"+OK\r\n"
        assert c.command(*args) == b"+QUEUED\r\n"
        reply = c.command("EXEC")
        assert reply.startswith(b"*1\r\n"), reply
        return reply[4:]
    script = "return redis.pcall('RL.ALL', unpack(ARGV))"
    return c.command("EVAL", script, 0, *args[1:])


def same_keys(a, b):
    for k in UNIVERSE:
        assert key_state(a, k) == key_state(b, k), k


@pytest.fixture
def pair(start_daemon):
    """The server, its model and a replica of the server, on one fake time."""
    s = start_daemon(fakeclock=True)
    m = start_daemon(fakeclock=True, name="model")
    r = start_daemon(fakeclock=True, name="replica")
    m.clock.set(s.clock.ns)
    r.clock.set(s.clock.ns)
    follow(r, s)
    return s, m, r


def advance(daemons, seconds):
    for d in daemons:
        d.clock.advance(seconds=seconds)


@pytest.mark.parametrize("mode", ["plain", "multi", "eval"])
def test_random_mixes_change_all_or_nothing_as_the_model(pair, mode):
    s, m, r = pair
    sc, mc = s.raw(), m.raw()
    outcomes = set()
    for seed in range(3):
        rnd = random.Random(seed * 7919 + len(mode))
        for _ in range(120):
            parts, peek = random_call(rnd)
            args = rl_all_args(parts, peek)
            want, edge = model_call(mc, parts, peek, m.clock.ns // 10**6)
            got = run_call(sc, args, mode)
            assert got == want, (args, got, want)
            outcomes.add(want[:1] + want[4:8])
            if edge:
                advance((s, m, r), 0.001)
            same_keys(sc, mc)
            advance((s, m, r), rnd.choice([0, 0, 0.4, 1, 3]))
        assert caught_up(s, r)
        same_keys(sc, r.raw())
    # Each outcome came up: allowed, denied, and a part's error.
    assert {b"*:0\r\n", b"*:1\r\n", b"-"} <= {o[:1] if o[:1] == b"-" else o
                                               for o in outcomes}


def test_the_journal_replays_to_the_same_keys_after_kill_9(start_daemon,
                                                           tmp_path):
    work = str(tmp_path / "data")
    d = start(start_daemon, work, "--appendfsync", "always")
    c = d.raw()
    rnd = random.Random(11)
    for _ in range(150):
        parts, peek = random_call(rnd)
        c.command(*rl_all_args(parts, peek))
        d.clock.advance(seconds=rnd.choice([0, 0, 0.5, 2]))
    want = {k: key_state(c, k) for k in UNIVERSE}
    assert any(dump != b"$-1\r\n" for dump, _ in want.values())
    kill9(d)
    d2 = start(start_daemon, work, clock_ns=d.clock.ns)
    c2 = d2.raw()
    assert {k: key_state(c2, k) for k in UNIVERSE} == want


def test_a_denied_part_leaves_every_key_byte_for_byte(fserver):
    c = fserver.raw()
    c.command("RL.LOG", "log", 5, 60, "META", "m1")
    c.command("CL.THROTTLE", "cell", 1, 1, 60)
    before = [key_state(c, k) for k in ("log", "cell", "new")]
    fserver.clock.advance(seconds=1)
    reply = c.command("RL.ALL", 4, 6, "RL.LOG", "log", 5, 60, "META", "m2",
                      5, "CL.THROTTLE", "cell", 1, 1, 60,
                      4, "RL.FIXED", "new", 1, 60, 4, "RL.FIXED", "new", 1, 60)
    assert reply.startswith(b"*6\r\n:1\r\n:4\r\n"), reply
    fserver.clock.advance(seconds=0)
    assert [key_state(c, k) for k in ("log", "cell", "new")] == before
    assert b"m2" not in c.command("RL.ENTRIES", "log")


def test_a_lease_is_taken_only_with_the_other_parts_and_never_waits(fserver):
    c = fserver.raw()
    assert c.command("RL.ALL", 2, 8, "RL.ACQUIRE", "lease", 1, 60, "HOLDER", "h1",
                     "WAIT", 5, 4, "RL.FIXED", "f", 1, 60) == (
        b"*4\r\n:0\r\n:0\r\n*6\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:60\r\n$2\r\nh1\r\n"
        b"*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:60\r\n")
    # The window is full: the lease of the call is not taken.
    assert c.command("RL.ALL", 2, 8, "RL.ACQUIRE", "other", 1, 60, "HOLDER", "h2",
                     "WAIT", 5, 4, "RL.FIXED", "f", 1, 60) == (
        b"*4\r\n:1\r\n:2\r\n*6\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:60\r\n$2\r\nh2\r\n"
        b"*5\r\n:1\r\n:1\r\n:0\r\n:60\r\n:60\r\n")
    assert c.command("EXISTS", "other") == b":0\r\n"
    # The lease is full: its WAIT does not wait inside RL.ALL (the fake
    # clock stands still, so a wait would never end), the denied reply at
    # once, and the other part's key is left as it was.
    before = key_state(c, "f2")
    assert c.command("RL.ALL", 2, 4, "RL.FIXED", "f2", 5, 60, 8, "RL.ACQUIRE", "lease", 1,
                     60, "HOLDER", "h3", "WAIT", 5) == (
        b"*4\r\n:1\r\n:2\r\n*5\r\n:0\r\n:5\r\n:4\r\n:-1\r\n:60\r\n"
        b"*6\r\n:1\r\n:1\r\n:0\r\n:60\r\n:60\r\n$2\r\nh3\r\n")
    assert key_state(c, "f2") == before
    assert c.command("RL.LEASES", "lease") == b"*1\r\n*2\r\n$2\r\nh1\r\n:60\r\n"


def test_strings_a_part_reads_as_a_tat_are_put_back_as_they_were(fserver):
    c = fserver.raw()
    assert c.command("SET", "n", "5") == b"+OK\r\n"
    assert c.command("SET", "u", "18446744073709551615") == b"+OK\r\n"
    assert c.command("SET", "long", "x" * 100000, "PX", 50000) == b"+OK\r\n"
    keys = ("n", "u", "long")
    before = [key_state(c, k) for k in keys]
    # u's TAT is the end of time: denied by part 2, after n was taken.
    denied = c.command("RL.ALL", 3, 5, "CL.THROTTLE", "n", 5, 1, 60,
                       5, "CL.THROTTLE", "u", 5, 1, 60,
                       4, "RL.FIXED", "f", 1, 60)
    assert denied.startswith(b"*5\r\n:1\r\n:2\r\n*5\r\n:0\r\n"), denied
    assert [key_state(c, k) for k in keys] == before
    peeked = c.command("RL.ALL", 2, 5, "CL.THROTTLE", "n", 5, 1, 60,
                       4, "RL.FIXED", "f", 1, 60, "PEEK")
    assert peeked.startswith(b"*4\r\n:0\r\n:0\r\n"), peeked
    assert [key_state(c, k) for k in keys + ("f",)] == before + [
        (b"$-1\r\n", b":-2\r\n")]
    assert c.command("GET", "n") == b"$1\r\n5\r\n"
    assert c.command("RL.ALL", 2, 5, "CL.THROTTLE", "n", 5, 1, 60,
                     5, "CL.THROTTLE", "long", 5, 1, 60) == \
        b"-ERR value is not an integer or out of range (part 2)\r\n"
    assert [key_state(c, k) for k in keys] == before


def test_the_worked_example_of_docs_commands_md(fserver):
    hour = 3600 * 10**9
    fserver.clock.set((fserver.clock.ns // hour + 1) * hour)
    c = fserver.raw()
    call = ["RL.ALL", 3,
            4, "RL.SLIDING", "key:k1", 1000, 3600,
            4, "RL.SLIDING", "org:acme", 50000, 3600,
            4, "RL.FIXED", "ep:/search", 100, 1]
    assert c.command(*call) == (
        b"*5\r\n:0\r\n:0\r\n"
        b"*5\r\n:0\r\n:1000\r\n:999\r\n:-1\r\n:7200\r\n"
        b"*5\r\n:0\r\n:50000\r\n:49999\r\n:-1\r\n:7200\r\n"
        b"*5\r\n:0\r\n:100\r\n:99\r\n:-1\r\n:1\r\n")
    for _ in range(99):
        c.command(*call)
    # The endpoint's 100/s is spent: the call is denied by part 3, and the
    # key's and the organisation's counts stay where they were.
    assert c.command(*call) == (
        b"*5\r\n:1\r\n:3\r\n"
        b"*5\r\n:0\r\n:1000\r\n:899\r\n:-1\r\n:7200\r\n"
        b"*5\r\n:0\r\n:50000\r\n:49899\r\n:-1\r\n:7200\r\n"
        b"*5\r\n:1\r\n:100\r\n:0\r\n:1\r\n:1\r\n")
    # (PEEK answers what a call would leave: 899, the 100 calls' 100 taken.)
    assert c.command("RL.SLIDING", "key:k1", 1000, 3600, "PEEK") == \
        b"*5\r\n:0\r\n:1000\r\n:899\r\n:-1\r\n:7200\r\n"
    # A trailing PEEK answers the same and changes nothing.
    fserver.clock.advance(seconds=1)
    peeked = c.command(*call, "PEEK")
    assert peeked.startswith(b"*5\r\n:0\r\n:0\r\n"), peeked
    assert c.command(*call) == peeked


ERRORS = [
    (("x", "2", "RL.FIXED", "k"), b"-ERR numparts must be between 1 and 16\r\n"),
    (("0", "2", "RL.FIXED", "k"), b"-ERR numparts must be between 1 and 16\r\n"),
    (("17",) + ("2", "RL.FIXED", "k") * 17,
     b"-ERR numparts must be between 1 and 16\r\n"),
    (("1", "1", "RL.FIXED"),
     b"-ERR argc must be at least 2 and within the arguments (part 1)\r\n"),
    (("2", "4", "RL.FIXED", "k", "1", "60", "5", "RL.FIXED", "k", "1", "60"),
     b"-ERR argc must be at least 2 and within the arguments (part 2)\r\n"),
    (("1", "4", "RL.FIXED", "k", "1", "60", "NOPE"), b"-ERR syntax error\r\n"),
    (("1", "3", "SET", "k", "v"),
     b"-ERR 'SET' is not a limiter command (part 1)\r\n"),
    (("1", "2", "nosuch\r\ncmd", "k"),
     b"-ERR 'nosuch  cmd' is not a limiter command (part 1)\r\n"),
    (("1", "4", "rl.all", "1", "2", "x"),
     b"-ERR rl.all cannot be a part of RL.ALL (part 1)\r\n"),
    (("2", "4", "RL.FIXED", "k", "1", "60", "3", "GCRA", "g", "1"),
     b"-ERR wrong number of arguments for 'gcra' command (part 2)\r\n"),
    (("1", "4", "RL.FIXED", "k", "x", "60"),
     b"-ERR value is not an integer or out of range (part 1)\r\n"),
    (("1", "4", "RL.FIXED", "k", "0", "60"),
     b"-ERR limit and window must be positive (part 1)\r\n"),
    (("2", "4", "RL.FIXED", "k", "1", "60", "5", "CL.THROTTLE", "k", "1", "1", "x"),
     b"-Cell error: Store error: Couldn't parse as integer: x (part 2)\r\n"),
    (("2", "4", "RL.FIXED", "k", "1", "60", "5", "CL.THROTTLE", "k", "1", "1", "60"),
     b"-WRONGTYPE Operation against a key holding the wrong kind of value "
     b"(part 2)\r\n"),
]


def test_errors_byte_for_byte_and_nothing_changes(server):
    c = server.raw()
    for args, err in ERRORS:
        assert c.command("RL.ALL", *args) == err, args
        assert c.command("EXISTS", "k") == b":0\r\n", args
    assert c.command("RL.ALL", 1) == \
        b"-ERR wrong number of arguments for 'rl.all' command\r\n"


def test_events_only_of_a_call_that_keeps_its_changes(server):
    c = server.raw()
    assert c.command("CONFIG", "SET", "notify-keyspace-events", "Eg") == b"+OK\r\n"
    sub = server.raw()
    sub.send(harness.resp_command("SUBSCRIBE", "__keyevent@0__:rl.fixed"))
    sub.reply_bytes()
    message = lambda key: (b"*3\r\n$7\r\nmessage\r\n$23\r\n__keyevent@0__:rl.fixed\r\n"
                           b"$1\r\n%s\r\n" % key)
    try:
        two = ("RL.ALL", 2, 4, "RL.FIXED", "a", 5, 60, 4, "RL.FIXED", "b", 1, 60)
        assert c.command(*two).startswith(b"*4\r\n:0\r\n")
        assert sub.reply_bytes() == message(b"a")
        assert sub.reply_bytes() == message(b"b")
        # Denied by b: a's change is put back and neither publishes.
        assert c.command(*two).startswith(b"*4\r\n:1\r\n:2\r\n")
        assert c.command("RL.ALL", 1, 4, "RL.FIXED", "z", 1, 60, "PEEK") \
            .startswith(b"*3\r\n:0\r\n")
        assert c.command("RL.FIXED", "c", 1, 60).startswith(b"*5\r\n:0\r\n")
        assert sub.reply_bytes() == message(b"c")
    finally:
        c.command("CONFIG", "SET", "notify-keyspace-events", "")


def test_a_watched_key_is_touched_only_by_a_call_that_keeps_it(server):
    c, other = server.raw(), server.raw()
    two = ("RL.ALL", 2, 4, "RL.FIXED", "a", 5, 60, 4, "RL.FIXED", "b", 1, 60)
    assert other.command(*two).startswith(b"*4\r\n:0\r\n")

    def watched_exec(call):
        assert c.command("WATCH", "a") == b"+OK\r\n"
        assert other.command(*call).startswith(b"*4\r\n")
        assert c.command("MULTI") == b"+OK\r\n"
        assert c.command("PING") == b"+QUEUED\r\n"
        return c.command("EXEC")

    # Denied by b, or ending in PEEK: a was taken and put back, unseen.
    assert watched_exec(two) == b"*1\r\n+PONG\r\n"
    assert watched_exec(two[:2] + ("4", "RL.FIXED", "a", "5", "60",
                                   "4", "RL.FIXED", "c", "1", "60", "PEEK")) \
        == b"*1\r\n+PONG\r\n"
    # Kept: the watching transaction fails, as after any write to a.
    kept = two[:2] + ("4", "RL.FIXED", "a", "5", "60",
                      "4", "RL.FIXED", "d", "1", "60")
    assert watched_exec(kept) == b"*-1\r\n"


def test_keys_statistics_and_top_denied(server):
    c = server.raw()
    call = ("RL.ALL", 2, 4, "RL.FIXED", "{t}a", 5, 60, 4, "RL.FIXED", "{t}b", 1, 60)
    assert c.command("COMMAND", "GETKEYS", *call) == \
        b"*2\r\n$4\r\n{t}a\r\n$4\r\n{t}b\r\n"
    assert c.command("COMMAND", "GETKEYS", "RL.ALL", 2, 4, "RL.FIXED", "a") == \
        b"-ERR Invalid arguments specified for command\r\n"
    info = c.command("COMMAND", "INFO", "rl.all")
    assert b"movablekeys" in info
    c.command("CONFIG", "RESETSTAT")
    for _ in range(3):
        c.command(*call)
    stats = server.info("commandstats")
    assert stats["cmdstat_rl.all"]["calls"] == 3
    assert "cmdstat_rl.fixed" not in stats
    # The first call allowed; the next two denied by part 2, counted once
    # each under its key.
    assert c.command("RL.TOPDENIED") == b"*1\r\n*2\r\n$4\r\n{t}b\r\n:2\r\n"
    limits = c.command("INFO", "limits")
    assert b"rl.all" in limits


def test_cluster_routes_by_every_part_key(start_daemon, tmp_path):
    here, other = harness.free_port(), harness.free_port()
    conf = tmp_path / "node.conf"
    conf.write_text("cluster-mode yes\n"
                    "cluster-node %s 127.0.0.1:%d 0-8191\n"
                    "cluster-node %s 127.0.0.1:%d 8192-16383\n"
                    % ("a" * 40, here, "b" * 40, other))
    d = start_daemon(config_file=str(conf), port=here)
    c = d.raw()
    mine = [k for k in ("k%d" % i for i in range(200))
            if harness.reference_slot(k) < 8192]
    theirs = [k for k in ("k%d" % i for i in range(200))
              if harness.reference_slot(k) >= 8192]
    two = lambda a, b: ("RL.ALL", 2, 4, "RL.FIXED", a, 1, 60, 4, "RL.FIXED", b, 1, 60)
    tag = next(t for t in ("t%d" % i for i in range(100))
               if harness.reference_slot(t) < 8192)
    assert c.command(*two("{%s}1" % tag, "{%s}2" % tag)).startswith(
        b"*4\r\n:0\r\n:0\r\n")
    assert c.command(*two(mine[0], mine[1])) == \
        b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    k = theirs[0]
    assert c.command(*two(k, k)) == \
        b"-MOVED %d 127.0.0.1:%d\r\n" % (harness.reference_slot(k), other)
    k = mine[0]
    assert c.command(*two(k, k)).startswith(b"*4\r\n:1\r\n:2\r\n")
    assert c.command("EXISTS", k) == b":0\r\n"
    # In a transaction, its keys count with the other commands' for EXEC.
    assert c.command("MULTI") == b"+OK\r\n"
    assert c.command("RL.FIXED", mine[1], 1, 60) == b"+QUEUED\r\n"
    assert c.command(*two(k, k)) == b"+QUEUED\r\n"
    assert c.command("EXEC") == \
        b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    assert c.command("MULTI") == b"+OK\r\n"
    assert c.command("RL.FIXED", k, 5, 60) == b"+QUEUED\r\n"
    assert c.command(*two(k, k)) == b"+QUEUED\r\n"
    assert c.command("EXEC").startswith(b"*2\r\n*5\r\n:0\r\n")
    # A script's RL.ALL: its keys must be this node's, as any command's.
    script = "return redis.pcall('RL.ALL', unpack(ARGV))"
    for keys in ((theirs[0], theirs[0]), (mine[0], mine[1])):
        reply = c.command("EVAL", script, 0, *two(*keys)[1:])
        assert reply.startswith(b"-ERR Script attempted to access a non local "
                                b"key in a cluster node"), reply
    assert c.command("EVAL", script, 0, *two(k, k)[1:]).startswith(b"*4\r\n")


@pytest.mark.parametrize("live", [False, True], ids=["static", "live"])
def test_cluster_clients_route_rl_all_to_its_keys_owner(start_daemon, tmp_path,
                                                        live):
    """Three nodes, cluster-mode yes or cluster-enabled yes: redis-py's
    RedisCluster asks COMMAND GETKEYS for RL.ALL (movablekeys) and sends it
    to the owner of its keys' slot; every node answers CROSSSLOT for keys of
    two slots and MOVED for a slot of another node."""
    from test_cluster_nodes import owner_index
    from test_rl_shards import Shards
    shards = Shards(start_daemon, tmp_path, live=live)
    rc = shards.client(0)
    try:
        for tag in ("a", "b", "c", "d", "e", "f"):
            keys = ("{%s}key" % tag, "{%s}org" % tag)
            call = ("RL.ALL", 2, 4, "RL.FIXED", keys[0], 2, 3600,
                    4, "RL.FIXED", keys[1], 3, 3600)
            got = [rc.execute_command(*call)[:2] for _ in range(4)]
            assert got == [[0, 0], [0, 0], [1, 1], [1, 1]], (tag, got)
            owner = shards.nodes[owner_index(harness.reference_slot(tag))]
            assert owner.raw().command("RL.FIXED", keys[1], 3, 3600, "PEEK") \
                .startswith(b"*5\r\n:0\r\n:3\r\n:0\r\n")
    finally:
        rc.close()
    c = shards.nodes[0].raw()
    two = ("RL.ALL", 2, 4, "RL.FIXED", "{a}1", 1, 60, 4, "RL.FIXED", "{b}1", 1, 60)
    if harness.reference_slot("a") != harness.reference_slot("b"):
        assert c.command(*two) == \
            b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    mine = [t for t in ("t%d" % i for i in range(100))
            if owner_index(harness.reference_slot(t)) == 0][:2]
    for other, want in ((mine[0], b"*2\r\n*5\r\n:0\r\n"),
                        (mine[1], b"-CROSSSLOT ")):
        assert c.command("MULTI") == b"+OK\r\n"
        assert c.command("RL.FIXED", "{%s}y" % mine[0], 5, 60) == b"+QUEUED\r\n"
        assert c.command("RL.ALL", 1, 4, "RL.FIXED", "{%s}z" % other, 1, 60) == \
            b"+QUEUED\r\n"
        assert c.command("EXEC").startswith(want), other
    far = next(t for t in ("t%d" % i for i in range(100))
               if owner_index(harness.reference_slot(t)) != 0)
    o = owner_index(harness.reference_slot(far))
    one = ("RL.ALL", 1, 4, "RL.FIXED", "{%s}x" % far, 1, 60)
    assert c.command(*one) == b"-MOVED %d 127.0.0.1:%d\r\n" % (
        harness.reference_slot(far), shards.ports[o])

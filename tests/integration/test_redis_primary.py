"""cellgate as a replica of a running redis-server 7.0 (REPLICAOF): the
handshake, the RDB transfer from disk and diskless, Redis's stream of
commands run through the dispatcher, partial resync after a dropped link,
the stop on a command it cannot apply, and the cut-over of a limiter
(docs/migrate.md, "From a running Redis: replication and the cut-over")."""
import random
import threading
import time

import pytest

import harness

DBS = 4
# Keys given a short life expire during the test; the long ones are compared
# by PTTL within this many ms (two reads, one on each server, on a loaded
# machine).
PTTL_SLACK_MS = 3000
SHORT_MS = (50, 400)

LIBRARY = ("#!lua name=cglib\n"
           "redis.register_function('bump', function(keys, args) "
           "redis.call('incrby', keys[1], args[1]) "
           "return redis.call('hset', keys[2], 'by', args[1]) end)")
SCRIPT = ("redis.call('rpush', KEYS[1], ARGV[1]) "
          "redis.call('zincrby', KEYS[2], 1, ARGV[1]) "
          "return redis.call('sadd', KEYS[3], ARGV[1])")


def redis_primary(tmp_path, diskless="no", *args):
    return harness.RedisServer(
        str(tmp_path / "redis"),
        extra_args=["--repl-diskless-sync", diskless,
                    "--repl-diskless-sync-delay", "0"] + list(args)).start()


def replicate(replica, primary):
    c = replica.client()
    assert c.execute_command("REPLICAOF", "127.0.0.1", primary.port) == b"OK"
    assert harness.wait_until(
        lambda: replica.info("replication").get("master_link_status") == "up", 20)


def redis_offset(primary):
    return primary.client().info("replication")["master_repl_offset"]


def caught_up(replica, primary, timeout=20):
    """cellgate's offset equals Redis's (asked again while it moves)."""
    return harness.wait_until(
        lambda: replica.info("replication")["slave_repl_offset"]
        == redis_offset(primary), timeout)


# ---- the traffic ---------------------------------------------------------


def key(rng, kind):
    return "%s:%d" % (kind, rng.randrange(12))


def one_write(rng, c, pending_short):
    """One random write of any type cellgate serves, on client c."""
    kind = rng.choice(["str", "cnt", "list", "hash", "set", "zset", "ttl", "tmp",
                       "key"])
    v = str(rng.randrange(1000))
    if kind == "str":
        k = key(rng, "s")
        rng.choice([lambda: c.set(k, v), lambda: c.append(k, v),
                    lambda: c.set(k, v, ex=1000), lambda: c.getdel(k),
                    lambda: c.mset({k: v, key(rng, "s"): v}),
                    lambda: c.setrange(k, rng.randrange(5), v),
                    lambda: c.set(k, v, keepttl=True),
                    lambda: c.getex(k, px=900000)])()
    elif kind == "cnt":
        k = key(rng, "n")
        rng.choice([lambda: c.incr(k), lambda: c.incrby(k, rng.randrange(-9, 9)),
                    lambda: c.decr(k), lambda: c.incrbyfloat(k, 1.5)])()
    elif kind == "list":
        k = key(rng, "l")
        rng.choice([lambda: c.lpush(k, v, v + "x"), lambda: c.rpush(k, v),
                    lambda: c.lpop(k), lambda: c.rpop(k, 2), lambda: c.ltrim(k, 0, 5),
                    lambda: c.lrem(k, 0, v), lambda: c.lmove(k, key(rng, "l")),
                    lambda: c.linsert(k, "BEFORE", v, "ins")])()
    elif kind == "hash":
        k = key(rng, "h")
        rng.choice([lambda: c.hset(k, mapping={v: v, "f": v}), lambda: c.hdel(k, "f"),
                    lambda: c.hincrby(k, "n", 3), lambda: c.hincrbyfloat(k, "x", 0.25),
                    lambda: c.hsetnx(k, v, "nx")])()
    elif kind == "set":
        k = key(rng, "t")
        rng.choice([lambda: c.sadd(k, v, "m" + v), lambda: c.srem(k, v),
                    lambda: c.spop(k), lambda: c.smove(k, key(rng, "t"), v),
                    lambda: c.sinterstore(key(rng, "t"), [k, key(rng, "t")]),
                    lambda: c.sunionstore(key(rng, "t"), [k, key(rng, "t")])])()
    elif kind == "zset":
        k = key(rng, "z")
        rng.choice([lambda: c.zadd(k, {v: rng.randrange(100), "a": 1.5}),
                    lambda: c.zincrby(k, 2, v), lambda: c.zrem(k, v),
                    lambda: c.zpopmin(k), lambda: c.zremrangebyscore(k, 0, 10),
                    lambda: c.zunionstore(key(rng, "z"), [k, key(rng, "z")])])()
    elif kind == "ttl":
        k = key(rng, rng.choice("snlhtz"))
        rng.choice([lambda: c.expire(k, 500 + rng.randrange(500)),
                    lambda: c.pexpireat(k, int(time.time() * 1000) + 900000),
                    lambda: c.persist(k)])()
    elif kind == "tmp":
        # Keys that expire during the test (Redis sends their DEL).
        ms = rng.randrange(*SHORT_MS)
        k = key(rng, "x")
        rng.choice([lambda: c.set(k, v, px=ms),
                    lambda: (c.rpush(k, v), c.pexpire(k, ms)),
                    lambda: c.incr(k) and c.pexpire(k, ms)])()
        pending_short[0] = max(pending_short[0], time.time() + ms / 1000.0)
    else:
        k = key(rng, rng.choice("snlhtz"))
        rng.choice([lambda: c.delete(k), lambda: c.unlink(k, key(rng, "s")),
                    lambda: c.copy(k, key(rng, "s"), replace=True),
                    lambda: c.rename(k, key(rng, "s")) if c.exists(k) else None])()


def one_step(rng, clients, pending_short):
    """A write, or now and then a transaction, a script, a function, a
    flush or a swap."""
    db = rng.randrange(DBS)
    c = clients[db]
    r = rng.random()
    try:
        if r < 0.06:
            p = c.pipeline(transaction=True)
            for _ in range(rng.randrange(1, 5)):
                one_write(rng, p, pending_short)
            p.execute(raise_on_error=False)
        elif r < 0.10:
            v = str(rng.randrange(50))
            c.eval(SCRIPT, 3, key(rng, "l"), key(rng, "z"), key(rng, "t"), v)
        elif r < 0.13:
            c.fcall("bump", 2, key(rng, "n"), key(rng, "h"), rng.randrange(1, 9))
        elif r < 0.135:
            c.flushdb()
        elif r < 0.14:
            c.swapdb(rng.randrange(DBS), rng.randrange(DBS))
        elif r < 0.16:
            # DUMP and RESTORE (Redis sends RESTORE ... ABSTTL)
            payload = c.dump(key(rng, rng.choice("snlhtz")))
            if payload is not None:
                c.restore(key(rng, "r"), rng.choice([0, 900000]), payload, replace=True)
        else:
            one_write(rng, c, pending_short)
    except Exception as e:   # WRONGTYPE and the like: the primary sends nothing
        if "WRONGTYPE" not in str(e) and "not an integer" not in str(e) \
                and "not a valid float" not in str(e) and "no such key" not in str(e) \
                and "are the same" not in str(e):
            raise


def traffic(rng, clients, n, pending_short):
    for _ in range(n):
        one_step(rng, clients, pending_short)


# ---- comparing ---------------------------------------------------------


def value(c, k, t):
    if t == b"string":
        return c.get(k)
    if t == b"list":
        return c.lrange(k, 0, -1)
    if t == b"hash":
        return sorted(c.hgetall(k).items())
    if t == b"set":
        return sorted(c.smembers(k))
    if t == b"zset":
        return c.zrange(k, 0, -1, withscores=True)
    return ("unexpected type", t)


def keyspace(port):
    """Every db: key -> (type, value, pttl)."""
    import redis
    out = {}
    for db in range(DBS):
        c = redis.Redis(port=port, db=db, socket_timeout=harness.IO_TIMEOUT)
        for k in c.keys("*"):
            t = c.type(k)
            out[(db, k)] = (t, value(c, k, t), c.pttl(k))
        c.close()
    return out


def differences(a, b):
    diffs = []
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if x is None or y is None:
            diffs.append((k, x, y))
            continue
        same_ttl = (x[2] < 0 and x[2] == y[2]) or \
            (x[2] >= 0 and y[2] >= 0 and abs(x[2] - y[2]) <= PTTL_SLACK_MS)
        if x[:2] != y[:2] or not same_ttl:
            diffs.append((k, x, y))
    return diffs


def settle(replica, primary, pending_short):
    """The short-lived keys past their time and deleted by the primary (its
    KEYS expires each it meets, and sends the DEL), then offsets equal."""
    time.sleep(max(0.0, pending_short[0] - time.time()) + 0.05)
    for db in range(DBS):
        c = harness.redis.Redis(port=primary.port, db=db)
        c.keys("*")
        c.close()
    assert caught_up(replica, primary)


# ---- the tests ---------------------------------------------------------


@pytest.mark.parametrize("diskless", ["no", "yes"])
def test_random_traffic_with_a_dropped_link_compares_key_by_key(
        start_daemon, tmp_path, diskless):
    rng = random.Random(3801 if diskless == "no" else 3802)
    primary = redis_primary(tmp_path, diskless)
    try:
        cg = start_daemon()
        clients = [harness.redis.Redis(port=primary.port, db=db) for db in range(DBS)]
        replicate(cg, primary)
        clients[0].function_load(LIBRARY)
        pending_short = [0.0]
        traffic(rng, clients, 500, pending_short)
        assert caught_up(cg, primary)
        # The link dropped in the middle: cellgate continues (+CONTINUE).
        before = clients[0].info("stats")["sync_partial_ok"]
        clients[0].execute_command("CLIENT", "KILL", "TYPE", "replica")
        traffic(rng, clients, 200, pending_short)
        assert harness.wait_until(
            lambda: clients[0].info("stats")["sync_partial_ok"] == before + 1, 20)
        traffic(rng, clients, 500, pending_short)
        settle(cg, primary, pending_short)
        want, got = keyspace(primary.port), keyspace(cg.port)
        assert differences(want, got) == []
        assert len(want) > 40
        assert cg.client().function_list() == clients[0].function_list()
        assert clients[0].info("stats")["sync_full"] == 1
        for c in clients:
            c.close()
    finally:
        primary.stop()


@pytest.mark.parametrize("diskless", ["no", "yes"])
def test_a_full_sync_loads_the_data_there_before(start_daemon, tmp_path, diskless):
    rng = random.Random(3803)
    primary = redis_primary(tmp_path, diskless)
    try:
        clients = [harness.redis.Redis(port=primary.port, db=db) for db in range(DBS)]
        clients[0].function_load(LIBRARY)
        pending_short = [0.0]
        traffic(rng, clients, 400, pending_short)
        if diskless == "no":
            cg = start_daemon()
            replicate(cg, primary)
        else:       # the replicaof option, as Redis takes it
            cg = start_daemon("--replicaof", "127.0.0.1 %d" % primary.port)
            assert harness.wait_until(
                lambda: cg.info("replication").get("master_link_status") == "up", 20)
        traffic(rng, clients, 100, pending_short)
        settle(cg, primary, pending_short)
        want = keyspace(primary.port)
        assert differences(want, keyspace(cg.port)) == []
        assert len(want) > 20
        assert cg.client().function_list() == clients[0].function_list()
        for c in clients:
            c.close()
    finally:
        primary.stop()


def test_info_and_role_as_a_redis_replica_shows_them(start_daemon, tmp_path):
    primary = redis_primary(tmp_path)
    try:
        cg = start_daemon()
        replicate(cg, primary)
        p = primary.client()
        p.set("a", "1")
        p.execute_command("WAIT", 1, 5000)
        assert caught_up(cg, primary)
        info = cg.info("replication")
        mine = primary.client().info("replication")
        for field, want in [("role", "slave"), ("master_host", "127.0.0.1"),
                            ("master_port", primary.port),
                            ("master_link_status", "up"),
                            ("master_sync_in_progress", 0),
                            ("slave_read_repl_offset", mine["master_repl_offset"]),
                            ("slave_repl_offset", mine["master_repl_offset"]),
                            ("slave_priority", 100), ("slave_read_only", 1),
                            ("replica_announced", 1), ("connected_slaves", 0),
                            ("master_failover_state", "no-failover"),
                            ("master_replid", mine["master_replid"]),
                            ("master_repl_offset", mine["master_repl_offset"])]:
            assert info[field] == want, field
        assert cg.client().execute_command("ROLE") == [
            b"slave", b"127.0.0.1", primary.port, b"connected",
            mine["master_repl_offset"]]
        # Redis counts cellgate's ACKs for WAIT, and sees it online.
        assert p.execute_command("WAIT", 1, 5000) == 1
        assert mine["slave0"]["state"] == "online"
        # A replica of Redis serves no replica of its own.
        raw = cg.raw()
        assert raw.command("PSYNC", "?", "-1").startswith(
            b"-ERR a replica of a Redis primary serves no replicas")
        # Promoted: a primary with the data and a new replication ID.
        assert cg.client().execute_command("REPLICAOF", "NO", "ONE") == b"OK"
        info = cg.info("replication")
        assert info["role"] == "master"
        assert info["master_replid"] != mine["master_replid"]
        assert info["master_replid2"] == mine["master_replid"]
        assert cg.client().get("a") == b"1"
        assert cg.client().incr("a") == 2
    finally:
        primary.stop()


def test_a_command_it_cannot_apply_stops_the_link(start_daemon, tmp_path):
    primary = redis_primary(tmp_path)
    try:
        cg = start_daemon()
        replicate(cg, primary)
        p = primary.client()
        p.set("before", "1")
        assert caught_up(cg, primary)
        at = redis_offset(primary) + 1
        p.xadd("stream", {"f": "v"})
        p.set("after", "1")
        p.rpush("list", "x")
        assert harness.wait_until(
            lambda: cg.info("replication").get("master_link_status") == "down", 10)
        info = cg.info("replication")
        reason = info["master_link_down_reason"]
        assert reason.startswith("command 'XADD' at offset %d did not apply: "
                                 "ERR unknown command 'XADD'" % at)
        assert info["slave_repl_offset"] == at - 1
        assert "Replication from the Redis primary 127.0.0.1:%d stopped: command " \
               "'XADD' at offset %d" % (primary.port, at) in cg.log()
        c = cg.client()
        assert c.get("before") == b"1"
        assert c.get("after") is None and c.exists("list") == 0
        # It stays stopped (no retry that would skip the command) ...
        time.sleep(1.2)
        assert cg.info("replication")["master_link_status"] == "down"
        assert c.get("after") is None
        # ... until REPLICAOF starts over.
        p.delete("stream")
        replicate(cg, primary)
        assert caught_up(cg, primary)
        assert c.get("after") == b"1"
        assert "master_link_down_reason" not in cg.info("replication")
    finally:
        primary.stop()


# ---- the cut-over ------------------------------------------------------

LIMIT = 20
WINDOW_MS = 400
# rate-limiter-flexible's fixed window, as its Lua sends it
LIMITER = ("local c = redis.call('incr', KEYS[1]) "
           "if c == 1 then redis.call('pexpire', KEYS[1], ARGV[1]) end "
           "return c")


def cut_over(primary, cg, target, first_on_cg):
    """The procedure of docs/migrate.md, the workload running; the ms from
    CLIENT PAUSE WRITE to the first write the promoted cellgate accepted."""
    time.sleep(0.3)
    replicate(cg, primary)
    time.sleep(0.3)
    p = primary.client()
    paused = time.time()
    p.execute_command("CLIENT", "PAUSE", 10000, "WRITE")
    assert caught_up(cg, primary, 10)
    assert cg.client().execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    target.update(port=cg.port, name="cellgate")
    # The requests Redis holds go nowhere: their clients retry on cellgate.
    p.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
    p.execute_command("CLIENT", "UNPAUSE")
    assert harness.wait_until(lambda: first_on_cg, 10)
    time.sleep(0.8)
    return (first_on_cg[0] - paused) * 1000


def test_a_limiter_cut_over_exceeds_no_limit(start_daemon, tmp_path):
    import redis
    primary = redis_primary(tmp_path)
    try:
        cg = start_daemon()
        target = {"port": primary.port, "name": "redis"}
        admitted = {}          # (window, server) -> admissions
        stop = threading.Event()
        first_on_cg = []
        errors = []

        def worker():
            conns = {}
            while not stop.is_set():
                port, name = target["port"], target["name"]
                c = conns.get(port) or conns.setdefault(
                    port, redis.Redis(port=port, socket_timeout=10))
                w = int(time.time() * 1000) // WINDOW_MS
                try:
                    n = c.eval(LIMITER, 1, "rl:%d" % w, WINDOW_MS * 2)
                except redis.ConnectionError:
                    conns.pop(port).close()       # killed while held: retry
                    continue
                except redis.ResponseError as e:
                    errors.append(str(e))
                    continue
                if n <= LIMIT:
                    admitted[(w, name)] = admitted.get((w, name), 0) + 1
                    if name == "cellgate" and not first_on_cg:
                        first_on_cg.append(time.time())
            for c in conns.values():
                c.close()

        threads = [threading.Thread(target=worker) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            switch_ms = cut_over(primary, cg, target, first_on_cg)
        finally:
            stop.set()
            for t in threads:
                t.join(20)
        assert errors == []
        print("cut-over: CLIENT PAUSE WRITE to the first write on cellgate: "
              "%.1f ms" % switch_ms)
        windows = {}
        for (w, name), n in admitted.items():
            windows.setdefault(w, {})[name] = n
        over = {w: v for w, v in windows.items() if sum(v.values()) > LIMIT}
        assert over == {}
        # Both servers admitted, and the limit was reached on each side.
        assert any(n == LIMIT for (w, name), n in admitted.items() if name == "redis")
        assert any(n == LIMIT for (w, name), n in admitted.items()
                   if name == "cellgate") or any(
            len(v) == 2 and sum(v.values()) == LIMIT for v in windows.values())
    finally:
        primary.stop()


def test_a_key_past_its_expiry_stays_hidden_until_the_primary_deletes_it(
        start_daemon, tmp_path):
    primary = redis_primary(tmp_path, "no", "--enable-debug-command", "yes")
    try:
        cg = start_daemon()
        replicate(cg, primary)
        p = primary.client()
        p.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0)
        p.set("k", "v", px=100)
        p.rpush("l", "a")
        p.pexpire("l", 100)
        assert caught_up(cg, primary)
        time.sleep(0.4)
        c = cg.client()
        # Hidden from reads, as on a Redis replica, but kept (the wheel
        # frees nothing) ...
        assert c.get("k") is None and c.exists("k", "l") == 0
        assert c.pttl("k") == -2 and c.keys("*") == []
        raw = cg.raw()
        assert raw.command("WATCH", "k") == b"+OK\r\n"
        assert raw.command("TYPE", "l") == b"+none\r\n"
        assert c.dbsize() == 2
        # Read-only whatever replica-read-only says.
        assert c.config_set("replica-read-only", "no")
        assert raw.command("SET", "k", "mine").startswith(b"-READONLY")
        # ... until the primary's DEL.
        assert p.get("k") is None
        assert caught_up(cg, primary)
        assert c.dbsize() == 1
        # Promoted, it frees expired keys itself again.
        assert c.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
        assert harness.wait_until(lambda: c.dbsize() == 0, 10)
    finally:
        primary.stop()


def test_info_while_the_transfer_waits_shows_redis_fields(start_daemon, tmp_path):
    # Redis writes its RDB slowly (10 ms a key): cellgate waits for it.
    primary = redis_primary(tmp_path, "no", "--rdb-key-save-delay", 10000)
    try:
        p = primary.client()
        p.mset({"k%d" % i: i for i in range(40)})
        cg = start_daemon()
        cg.client().execute_command("REPLICAOF", "127.0.0.1", primary.port)
        assert harness.wait_until(
            lambda: cg.info("replication").get("master_sync_in_progress") == 1, 10)
        info = cg.info("replication")
        assert (info["master_link_status"], info["master_sync_total_bytes"],
                info["master_sync_read_bytes"], info["master_sync_left_bytes"],
                info["master_sync_perc"], info["master_link_down_since_seconds"]) == \
            ("down", -1, 0, -1, -0.0, -1)
        assert cg.client().execute_command("ROLE")[3] == b"sync"
        assert harness.wait_until(
            lambda: cg.info("replication").get("master_link_status") == "up", 20)
        assert cg.client().dbsize() == 40
    finally:
        primary.stop()


def test_an_rdb_it_cannot_load_stops_the_link_without_more_full_syncs(
        start_daemon, tmp_path):
    primary = redis_primary(tmp_path)
    try:
        p = primary.client()
        p.set("a", "1")
        p.xadd("events", {"f": "v"})
        cg = start_daemon()
        cg.client().execute_command("REPLICAOF", "127.0.0.1", primary.port)
        assert harness.wait_until(
            lambda: "master_link_down_reason" in cg.info("replication"), 10)
        reason = cg.info("replication")["master_link_down_reason"]
        assert reason.startswith("the primary's RDB did not load: ")
        time.sleep(1.2)
        assert p.info("stats")["sync_full"] == 1
        assert cg.client().dbsize() == 0
        # Skipping the stream keys (rdb-unsupported-keys skip), it follows.
        assert cg.client().config_set("rdb-unsupported-keys", "skip")
        replicate(cg, primary)
        assert cg.client().get("a") == b"1" and cg.client().exists("events") == 0
    finally:
        primary.stop()


def test_the_cut_over_tool_runs_the_procedure(start_daemon, tmp_path):
    import subprocess
    primary = redis_primary(tmp_path)
    try:
        p = primary.client()
        p.set("limit:a", 7)
        cg = start_daemon()
        out = subprocess.run(
            [harness.PYTHON, harness.os.path.join(harness.REPO, "tools", "cellgate-cutover"),
             "--redis", "127.0.0.1:%d" % primary.port,
             "--cellgate", "127.0.0.1:%d" % cg.port, "--pause-ms", "20000",
             "--switch", "true"],
            capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        text, at = out.stdout, 0
        for step in ["cellgate: REPLICAOF 127.0.0.1 %d -> OK" % primary.port,
                     "master_link_status:up", "Redis: CLIENT PAUSE 20000 WRITE",
                     "offsets equal: ", "cellgate: REPLICAOF NO ONE",
                     "switch: 'true' exited 0", "Redis: CLIENT KILL TYPE normal",
                     "Redis: CLIENT UNPAUSE"]:
            assert step in text[at:], (step, text)
            at = text.index(step, at)
        assert cg.info("replication")["role"] == "master"
        assert cg.client().incr("limit:a") == 8
        assert p.set("after", 1)        # unpaused
    finally:
        primary.stop()


def test_a_replica_of_redis_ignores_its_maxmemory(start_daemon, tmp_path):
    primary = redis_primary(tmp_path)
    try:
        # The keys are well past maxmemory and make most of used_memory, so
        # evicting them helps whatever the link's buffers and the backlog
        # held meanwhile (up to 2.5 MB seen under ASan).
        cg = start_daemon("--maxmemory", "4mb", "--maxmemory-policy", "volatile-ttl")
        replicate(cg, primary)
        p = primary.client()
        blob = "x" * 10000
        for i in range(1000):       # 10 MB, past cellgate's 4 MB
            p.set("big:%d" % i, blob, ex=1000)
        assert caught_up(cg, primary)
        assert cg.client().dbsize() == 1000
        assert cg.info("replication")["master_link_status"] == "up"
        # Promoted, maxmemory applies again: it evicts down to it.
        assert cg.client().execute_command("REPLICAOF", "NO", "ONE") == b"OK"
        assert harness.wait_until(lambda: cg.client().dbsize() < 1000, 10)
    finally:
        primary.stop()

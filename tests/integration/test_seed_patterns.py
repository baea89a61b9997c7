"""The rate limiters people build on plain Redis strings, as their libraries
send them (shared/spec/redis-compat.md), run with redis-py against Debian's
redis-server 7.0.15 and against cellgate: every test runs once on each
([redis-server] and [cellgate]) and checks what a user of the pattern sees,
the same on both: the replies, the counters, TTLs within a tolerance, keys
gone once their window is over (and not before), and a few replies byte for
byte on a raw socket (+OK against a nil bulk, :1 against $1, ...).

    (a) GET, then MULTI INCR EXPIRE EXEC per IP and second (Redis's INCR page)
    (b) INCR, then EXPIRE when the reply is 1
    (c) rate-limiter-flexible: SET key 0 EX s NX, INCRBY, PTTL, EXPIRE on -1
    (d) rate-limit-redis: PTTL, SET key 1 PX ms, INCR, PEXPIRE, GET+PTTL,
        DECR, DEL
    (e) per-second buckets over {hash-tagged} keys: INCR + EXPIRE each,
        summed with one MGET
    (f) Python limits' fixed window: INCRBY, EXPIRE when new, GET, TTL
    (g) django-ratelimit (django-redis): SET NX PX, EXISTS, INCRBY
    (h) rack-attack: INCRBY + EXPIRE pipelined, EXPIRE key n NX
    (i) SETEX / PSETEX bans (Spring Cloud Gateway, bucket4j, Laravel),
        MGET + SETEX + UNLINK (Symfony), INCRBYFLOAT + TTL
        (AspNetCoreRateLimit)

The libraries run these inside Lua scripts or pipelines; here each step is
its own command, so the races the scripts exist to close are the pattern's
and are not asserted. Windows whose end a test waits for are 1 s (or 600 ms
where the pattern counts in ms); every wait polls with a deadline."""
import time

import pytest
import redis

from harness import IO_TIMEOUT, RawConn

SERVERS = ["redis-server", "cellgate"]

# Slack for a TTL read right after it was set: it may have run down by this
# much (a loaded two-core machine), never gone up.
SLACK_MS = 300
# How long past its end a window may take to be seen gone.
EXPIRY_GRACE_S = 2.0
POLL_S = 0.02


class Target:
    """One server under test: redis-py clients and raw sockets on its port,
    all closed after the test."""

    def __init__(self, name, port):
        self.name = name
        self.port = port
        self._clients = []
        self._raw = None

    def client(self, decode=True):
        c = redis.Redis(host="127.0.0.1", port=self.port, decode_responses=decode,
                        socket_timeout=IO_TIMEOUT, socket_connect_timeout=IO_TIMEOUT)
        self._clients.append(c)
        return c

    def wire(self, *args):
        """The raw bytes of the reply to one command (RESP2)."""
        if self._raw is None:
            self._raw = RawConn(port=self.port)
        return self._raw.command(*args)

    def close(self):
        for c in self._clients:
            c.close()
        if self._raw is not None:
            self._raw.close()


@pytest.fixture(params=SERVERS)
def srv(request):
    if request.param == "redis-server":
        port = request.getfixturevalue("redis_server").port
    else:
        # The shared daemon, FLUSHALL'd, checked alive before and after.
        port = request.getfixturevalue("server").port
    t = Target(request.param, port)
    t.client().flushall()
    yield t
    t.close()


@pytest.fixture
def c(srv):
    return srv.client()


def incr(c, key):
    """INCR itself: redis-py's incr() sends INCRBY key 1 (and decr()
    DECRBY), and these patterns send INCR and DECR."""
    return c.execute_command("INCR", key)


def decr(c, key):
    return c.execute_command("DECR", key)


def assert_fresh_pttl(c, key, window_ms):
    """The key's TTL was just set to window_ms: it has run down a little."""
    pttl = c.pttl(key)
    assert window_ms - SLACK_MS < pttl <= window_ms, (key, pttl)
    return pttl


def wait_gone(c, keys, t_set, window_s):
    """Poll until none of keys exists; the seconds since t_set it took.
    t_set is taken before the last command that set one of their TTLs to
    window_s, so the last of them cannot go sooner: fails if they did, or
    if one is still there EXPIRY_GRACE_S past the window."""
    deadline = t_set + window_s + EXPIRY_GRACE_S
    while True:
        if c.exists(*keys) == 0:
            elapsed = time.monotonic() - t_set
            assert elapsed >= window_s - 0.01, \
                "%r gone after %.3f s, before their %.3f s window" % (keys, elapsed, window_s)
            return elapsed
        assert time.monotonic() < deadline, \
            "%r still there %.1f s after their %.3f s window" % (keys, EXPIRY_GRACE_S, window_s)
        time.sleep(POLL_S)


# ---- (a) GET, then MULTI INCR EXPIRE EXEC ----------------------------------

def limit_api_call(c, ip, ts, limit, window):
    """Redis's INCR page, rate limiter 1: read the counter of this IP and
    second; over the limit: refuse; else count in a transaction. Returns
    (allowed, what GET saw, EXEC's replies)."""
    key = "%s:%d" % (ip, ts)
    current = c.get(key)
    if current is not None and int(current) > limit:
        return False, current, None
    p = c.pipeline(transaction=True)
    incr(p, key)
    p.expire(key, window)
    return True, current, p.execute()


def test_a_get_then_multi_incr_expire_exec_per_ip_and_second(srv, c):
    ts = int(time.time())          # the second the key is named after
    key = "10.0.0.1:%d" % ts
    got = [limit_api_call(c, "10.0.0.1", ts, 3, 1) for _ in range(6)]
    # GET sees the count before this request's INCR, so limit + 1 pass.
    assert got == [(True, None, [1, True]), (True, "1", [2, True]),
                   (True, "2", [3, True]), (True, "3", [4, True]),
                   (False, "4", None), (False, "4", None)]
    assert c.get(key) == "4"
    assert c.ttl(key) == 1
    assert_fresh_pttl(c, key, 1000)
    # Another IP, the same second: its own counter.
    assert limit_api_call(c, "10.0.0.2", ts, 3, 1) == (True, None, [1, True])

    # The transaction on the wire.
    wkey = "10.0.0.3:%d" % ts
    assert srv.wire("GET", wkey) == b"$-1\r\n"
    assert srv.wire("MULTI") == b"+OK\r\n"
    assert srv.wire("INCR", wkey) == b"+QUEUED\r\n"
    assert srv.wire("EXPIRE", wkey, "1") == b"+QUEUED\r\n"
    t_set = time.monotonic()
    assert srv.wire("EXEC") == b"*2\r\n:1\r\n:1\r\n"
    assert srv.wire("GET", wkey) == b"$1\r\n1\r\n"

    wait_gone(c, [key, "10.0.0.2:%d" % ts, wkey], t_set, 1.0)
    assert c.get(key) is None
    assert limit_api_call(c, "10.0.0.1", ts, 3, 1) == (True, None, [1, True])


# ---- (b) INCR, then EXPIRE when the reply is 1 -----------------------------

def test_b_incr_then_expire_when_the_reply_is_1(srv, c):
    key = "rl:b:user42"
    t_set = time.monotonic()
    assert incr(c, key) == 1
    # Between the two commands the key has no TTL: the pattern's gap.
    assert c.ttl(key) == -1
    assert c.expire(key, 1) is True
    first = assert_fresh_pttl(c, key, 1000)
    assert c.ttl(key) == 1
    # Later hits only count; INCR keeps the TTL, and the count goes past
    # the limit (5) on refused requests too.
    counts = [incr(c, key) for _ in range(6)]
    assert counts == [2, 3, 4, 5, 6, 7]
    assert [n <= 5 for n in counts] == [True] * 4 + [False] * 2
    assert 0 < c.pttl(key) <= first
    assert c.get(key) == "7"

    assert srv.wire("GET", key) == b"$1\r\n7\r\n"
    assert srv.wire("INCR", key) == b":8\r\n"
    assert srv.wire("EXPIRE", "rl:b:none", "1") == b":0\r\n"

    wait_gone(c, [key], t_set, 1.0)
    assert c.ttl(key) == -2
    assert incr(c, key) == 1
    assert c.ttl(key) == -1
    assert srv.wire("EXPIRE", key, "1") == b":1\r\n"
    assert srv.wire("TTL", key) == b":1\r\n"


# ---- (c) rate-limiter-flexible ---------------------------------------------

def rlf_consume(c, key, points, duration):
    """rate-limiter-flexible's consume, its script's steps one by one:
    create the window if none, count, read the TTL, give a key that lost
    its TTL one. Returns (SET's reply, consumed, ms before next)."""
    created = c.set(key, 0, ex=duration, nx=True)
    consumed = c.incrby(key, points)
    ms = c.pttl(key)
    if ms == -1:
        assert c.expire(key, duration) is True
        ms = duration * 1000
    return created, consumed, ms


def test_c_rate_limiter_flexible_set_nx_ex_incrby_pttl(srv, c):
    key = "rlflx:ip:10.1.1.1"
    t_set = time.monotonic()
    got = [rlf_consume(c, key, n, 1) for n in (1, 2, 2, 1)]
    assert [g[:2] for g in got] == [(True, 1), (None, 3), (None, 5), (None, 6)]
    # points 5: the fourth consume is refused, with the window's time left.
    assert [g[1] <= 5 for g in got] == [True, True, True, False]
    assert all(1000 - SLACK_MS < g[2] <= 1000 for g in got), got
    assert c.get(key) == "6"
    assert c.ttl(key) == 1

    # A key written without a TTL (plain SET drops it): the pattern's
    # repair gives it one.
    lost = "rlflx:ip:10.1.1.2"
    assert c.set(lost, 3) is True
    assert c.pttl(lost) == -1
    t_lost = time.monotonic()
    assert rlf_consume(c, lost, 1, 1) == (None, 4, 1000)
    assert_fresh_pttl(c, lost, 1000)

    # block(): SET without NX overwrites the value and the TTL.
    blocked = "rlflx:ip:10.1.1.3"
    assert c.set(blocked, 6, ex=10) is True
    assert c.ttl(blocked) == 10
    created, consumed, ms = rlf_consume(c, blocked, 1, 1)
    assert (created, consumed) == (None, 7) and 10000 - SLACK_MS < ms <= 10000
    # delete()
    assert c.delete(blocked) == 1
    assert c.exists(blocked) == 0

    wk = "rlflx:wire"
    assert srv.wire("SET", wk, "0", "EX", "1", "NX") == b"+OK\r\n"
    assert srv.wire("SET", wk, "0", "EX", "1", "NX") == b"$-1\r\n"
    assert srv.wire("INCRBY", wk, "2") == b":2\r\n"

    wait_gone(c, [key, lost, wk], max(t_set, t_lost), 1.0)
    assert rlf_consume(c, key, 1, 1)[:2] == (True, 1)


# ---- (d) rate-limit-redis (express-rate-limit) -----------------------------

def rlr_increment(c, key, window_ms, reset_expiry_on_change=False):
    """rate-limit-redis's increment script, step by step: a key without a
    live TTL starts a window at 1; else count, and optionally push the
    window's end out again. Returns (total hits, ms until reset)."""
    ms = c.pttl(key)
    if ms <= 0:
        assert c.set(key, 1, px=window_ms) is True
        return 1, window_ms
    hits = incr(c, key)
    if reset_expiry_on_change:
        assert c.pexpire(key, window_ms) is True
        ms = window_ms
    return hits, ms


def rlr_get(c, key):
    return c.get(key), c.pttl(key)


def test_d_rate_limit_redis_pttl_set_px_incr_pexpire_get_decr_del(srv, c):
    key = "rl:d:10.2.2.2"
    window = 600
    assert rlr_get(c, key) == (None, -2)
    assert rlr_increment(c, key, window) == (1, window)
    assert_fresh_pttl(c, key, window)
    hits = [rlr_increment(c, key, window) for _ in range(2)]
    assert [h for h, _ in hits] == [2, 3]
    assert all(window - SLACK_MS < ms <= window for _, ms in hits), hits
    value, ms = rlr_get(c, key)
    assert value == "3" and window - SLACK_MS < ms <= window
    # skipSuccessfulRequests takes a hit back; DECR keeps the TTL.
    assert decr(c, key) == 2
    assert 0 < c.pttl(key) <= window
    assert rlr_increment(c, key, window, reset_expiry_on_change=True) == (3, window)
    assert_fresh_pttl(c, key, window)
    # resetKey
    assert c.delete(key) == 1
    assert rlr_get(c, key) == (None, -2)

    assert srv.wire("PTTL", key) == b":-2\r\n"
    t_set = time.monotonic()
    assert srv.wire("SET", key, "1", "PX", str(window)) == b"+OK\r\n"
    assert srv.wire("INCR", key) == b":2\r\n"
    assert srv.wire("PEXPIRE", key, str(window)) == b":1\r\n"
    assert srv.wire("DECR", key) == b":1\r\n"
    assert srv.wire("GET", key) == b"$1\r\n1\r\n"

    wait_gone(c, [key], t_set, window / 1000)
    assert rlr_get(c, key) == (None, -2)
    assert rlr_increment(c, key, window) == (1, window)
    assert srv.wire("DEL", key, "rl:d:none") == b":1\r\n"


# ---- (e) per-second buckets summed with MGET --------------------------------

def bucket_hit(c, user, second, expire_s):
    """Count a request in its second's bucket; the bucket lives as long as
    the window it is summed over. One pipeline, no transaction."""
    key = "{%s}:%d" % (user, second)
    p = c.pipeline(transaction=False)
    incr(p, key)
    p.expire(key, expire_s)
    return p.execute()


def window_sum(c, user, seconds):
    values = c.mget(["{%s}:%d" % (user, s) for s in seconds])
    return values, sum(int(v) for v in values if v is not None)


def test_e_per_second_buckets_incr_expire_summed_with_one_mget(srv, c):
    now = int(time.time())
    window = [now, now + 1, now + 2]           # three buckets, one MGET
    t_set = time.monotonic()
    # The oldest bucket is about to leave the window: it lives 1 s.
    assert [bucket_hit(c, "user:42", now, 1) for _ in range(3)] == \
        [[1, True], [2, True], [3, True]]
    assert [bucket_hit(c, "user:42", now + 1, 10) for _ in range(2)] == \
        [[1, True], [2, True]]
    values, total = window_sum(c, "user:42", window)
    assert values == ["3", "2", None] and total == 5
    assert total >= 5, "limit 5 per window: the next request is refused"
    assert c.ttl("{user:42}:%d" % (now + 1)) == 10
    assert_fresh_pttl(c, "{user:42}:%d" % now, 1000)
    # Another user's buckets are apart.
    assert window_sum(c, "user:43", window) == ([None, None, None], 0)

    keys = ["{user:42}:%d" % s for s in window]
    assert srv.wire("MGET", *keys) == b"*3\r\n$1\r\n3\r\n$1\r\n2\r\n$-1\r\n"

    wait_gone(c, [keys[0]], t_set, 1.0)
    assert window_sum(c, "user:42", window) == ([None, "2", None], 2)
    assert bucket_hit(c, "user:42", now + 2, 10) == [1, True]
    assert window_sum(c, "user:42", window) == ([None, "2", "1"], 3)


# ---- (f) Python limits: fixed window ----------------------------------------

def limits_incr(c, key, expiry, amount=1, elastic_expiry=False):
    """limits' RedisStorage.incr: count; a new window (the count is this
    request's amount) or an elastic one gets its expiry."""
    value = c.incrby(key, amount)
    if elastic_expiry or value == amount:
        assert c.expire(key, expiry) is True
    return value


def limits_get(c, key):
    return int(c.get(key) or 0)


def limits_get_expiry(c, key):
    return int(max(c.ttl(key), 0) + time.time())


def test_f_python_limits_fixed_window_incrby_expire_get_ttl(srv, c):
    key = "LIMITER/test/10.3.3.3/5/1/second"
    # 5 per second, cost 2: hit() is incr(...) <= 5.
    t_set = time.monotonic()
    got = [limits_incr(c, key, 1, amount=2) for _ in range(3)]
    assert got == [2, 4, 6]
    assert [v <= 5 for v in got] == [True, True, False]
    assert limits_get(c, key) == 6
    assert c.ttl(key) == 1
    before = time.time()
    assert int(before) <= limits_get_expiry(c, key) <= int(before) + 2

    # Elastic expiry: every hit pushes the window's end out again.
    elastic = "LIMITER/test/elastic/5/1/second"
    for want in (1, 2, 3):
        assert limits_incr(c, elastic, 1, elastic_expiry=True) == want
        assert c.ttl(elastic) == 1

    # reset(): KEYS over the prefix, then DEL.
    other = "LIMITER/test/10.3.3.4/5/1/minute"
    assert limits_incr(c, other, 60) == 1
    assert sorted(c.keys("LIMITER/*")) == sorted([key, elastic, other])
    assert c.delete(other) == 1

    assert srv.wire("INCRBY", key, "2") == b":8\r\n"
    assert srv.wire("TTL", key) == b":1\r\n"
    assert srv.wire("GET", key) == b"$1\r\n8\r\n"

    wait_gone(c, [key], t_set, 1.0)
    assert limits_get(c, key) == 0
    assert c.ttl(key) == -2
    now = time.time()
    assert int(now) <= limits_get_expiry(c, key) <= int(now) + 1
    assert limits_incr(c, key, 1, amount=2) == 2


# ---- (g) django-ratelimit ----------------------------------------------------

def django_ratelimit_count(c, key, period_ms):
    """django-ratelimit through django-redis: cache.add (SET NX PX) starts
    the window at 1; else cache.incr, whose script counts only a key that
    exists (EXISTS, then INCRBY)."""
    if c.set(key, 1, px=period_ms, nx=True):
        return 1
    if c.exists(key) == 1:
        return c.incrby(key, 1)
    return None   # django-redis: ValueError("Key ... not found")


def test_g_django_ratelimit_set_nx_px_exists_incrby(srv, c):
    key = "rl:g:login:10.4.4.4"
    period = 600
    t_set = time.monotonic()
    counts = [django_ratelimit_count(c, key, period) for _ in range(5)]
    assert counts == [1, 2, 3, 4, 5]
    assert [n > 3 for n in counts] == [False] * 3 + [True] * 2
    assert c.get(key) == "5"
    assert_fresh_pttl(c, key, period)
    # Why incr checks EXISTS first: INCRBY alone makes a key with no TTL.
    assert c.incrby("rl:g:plain", 1) == 1
    assert c.ttl("rl:g:plain") == -1

    assert srv.wire("SET", "rl:g:wire", "1", "PX", str(period), "NX") == b"+OK\r\n"
    assert srv.wire("SET", "rl:g:wire", "1", "PX", str(period), "NX") == b"$-1\r\n"
    assert srv.wire("EXISTS", "rl:g:wire") == b":1\r\n"
    assert srv.wire("INCRBY", "rl:g:wire", "1") == b":2\r\n"
    assert srv.wire("EXISTS", "rl:g:none") == b":0\r\n"

    wait_gone(c, [key, "rl:g:wire"], t_set, period / 1000)
    assert c.exists("rl:g:plain") == 1
    assert django_ratelimit_count(c, key, period) == 1


# ---- (h) rack-attack -----------------------------------------------------------

def rack_attack_count(c, key, period):
    """Rack::Attack's Redis proxy: INCRBY and EXPIRE in one pipeline (every
    hit sets the TTL again)."""
    p = c.pipeline(transaction=False)
    p.incrby(key, 1)
    p.expire(key, period)
    return p.execute()


def rails_cache_increment(c, key, period):
    """Through Rails' RedisCacheStore on a Redis 7: EXPIRE ... NX, so only
    the hit that made the key sets its TTL."""
    p = c.pipeline(transaction=False)
    p.incrby(key, 1)
    p.expire(key, period, nx=True)
    return p.execute()


def test_h_rack_attack_pipelined_incrby_expire_and_expire_nx(srv, c):
    # Rails picks EXPIRE NX when INFO server says 7.x.
    assert c.info("server")["redis_version"].startswith("7.")
    # The key names the period it counts in (epoch seconds / period).
    epoch_period = int(time.time()) // 1
    key = "rack::attack:%d:req/ip:10.5.5.5" % epoch_period
    t_set = time.monotonic()
    assert [rack_attack_count(c, key, 1) for _ in range(3)] == \
        [[1, True], [2, True], [3, True]]
    assert_fresh_pttl(c, key, 1000)

    nx = "rack::attack:%d:logins/ip:10.5.5.5" % epoch_period
    assert [rails_cache_increment(c, nx, 1) for _ in range(3)] == \
        [[1, True], [2, False], [3, False]]
    first = assert_fresh_pttl(c, nx, 1000)
    assert c.ttl(nx) == 1
    # EXPIRE NX leaves a TTL alone and gives one to a key without.
    assert c.expire(nx, 100, nx=True) is False
    assert 0 < c.pttl(nx) <= first
    assert c.set("rl:h:persistent", 5) is True
    assert c.expire("rl:h:persistent", 100, nx=True) is True
    assert c.ttl("rl:h:persistent") == 100

    # Allow2Ban / Fail2Ban: the ban is a key with a TTL.
    ban = "rack::attack:allow2ban:ban:10.5.5.5"
    assert c.setex(ban, 1, 1) is True
    assert c.get(ban) == "1" and c.ttl(ban) == 1

    assert srv.wire("EXPIRE", nx, "1", "NX") == b":0\r\n"
    assert srv.wire("EXPIRE", "rl:h:none", "1", "NX") == b":0\r\n"
    assert srv.wire("INCRBY", nx, "1") == b":4\r\n"

    wait_gone(c, [key, nx, ban], t_set, 1.0)
    assert rails_cache_increment(c, nx, 1) == [1, True]
    assert rack_attack_count(c, key, 1) == [1, True]


# ---- (i) SETEX / PSETEX bans, MGET + SETEX + UNLINK, INCRBYFLOAT + TTL -------

def test_i_setex_and_psetex_bans_spring_bucket4j_laravel(srv, c):
    b = srv.client(decode=False)
    # Spring Cloud Gateway: GET both keys, then SETEX both.
    tokens = "request_rate_limiter.{user-7}.tokens"
    stamp = "request_rate_limiter.{user-7}.timestamp"
    assert c.mget([tokens, stamp]) == [None, None]
    assert c.get(tokens) is None and c.get(stamp) is None
    t_set = time.monotonic()
    assert c.setex(tokens, 1, 9) is True
    assert c.setex(stamp, 1, 1700000000) is True
    assert c.mget([tokens, stamp]) == ["9", "1700000000"]
    assert c.ttl(tokens) == 1

    # bucket4j: binary state, SET NX PX first, then compare and PSETEX.
    state = "bucket4j:user-7"
    v1 = b"\x00\x01\xff\r\n\x00bucket"
    v2 = b"\x00\x02\xfe\x80\x00"
    assert b.set(state, v1, px=600, nx=True) is True
    assert b.set(state, v2, px=600, nx=True) is None
    assert b.get(state) == v1
    assert b.psetex(state, 600, v2) is True
    assert b.get(state) == v2
    assert_fresh_pttl(c, state, 600)

    # Laravel: EXISTS the lockout timer, SETEX it.
    timer = "laravel:login|10.6.6.6:timer"
    assert c.exists(timer) == 0
    assert c.setex(timer, 1, 1700000060) is True
    assert c.exists(timer) == 1

    assert srv.wire("SETEX", "rl:i:ban", "1", "1") == b"+OK\r\n"
    assert srv.wire("PSETEX", "rl:i:ban2", "600", "x") == b"+OK\r\n"
    assert srv.wire("GET", "rl:i:ban2") == b"$1\r\nx\r\n"

    wait_gone(c, [tokens, stamp, state, timer, "rl:i:ban", "rl:i:ban2"], t_set, 1.0)
    assert c.mget([tokens, stamp]) == [None, None]
    assert b.get(state) is None


def test_i_symfony_mget_setex_unlink(srv, c):
    # The cache adapter: MGET the keys, SETEX what it computed, UNLINK on
    # reset. Values are serialized PHP; any bytes do.
    keys = ["sf:limiter:login-10.7.7.7", "sf:limiter:login-10.7.7.8"]
    assert c.mget(keys) == [None, None]
    t_set = time.monotonic()
    p = c.pipeline(transaction=False)
    p.setex(keys[0], 1, 'O:8:"stdClass":1:{s:4:"hits";i:1;}')
    p.setex(keys[1], 10, "i:2;")
    assert p.execute() == [True, True]
    assert c.mget(keys) == ['O:8:"stdClass":1:{s:4:"hits";i:1;}', "i:2;"]
    assert c.ttl(keys[1]) == 10
    assert c.unlink(keys[1], "sf:limiter:none") == 1
    assert c.mget(keys)[1] is None

    assert srv.wire("UNLINK", "sf:limiter:none") == b":0\r\n"
    assert srv.wire("MGET", keys[1], "sf:limiter:none") == b"*2\r\n$-1\r\n$-1\r\n"

    wait_gone(c, [keys[0]], t_set, 1.0)
    assert c.mget(keys) == [None, None]


def aspnet_count(c, key, period_s, amount):
    """AspNetCoreRateLimit's script, step by step: INCRBYFLOAT, and EXPIRE
    when the count is this request's own (a new window)."""
    count = c.execute_command("INCRBYFLOAT", key, amount)
    if float(count) == float(amount):
        assert c.expire(key, period_s) is True
    return count


def test_i_aspnetcore_incrbyfloat_expire_ttl(srv, c):
    key = "rl:i:aspnet:api:10.8.8.8"
    t_set = time.monotonic()
    got = [aspnet_count(c, key, 1, a) for a in ("1", "1", "0.5", "0.1", "0.2")]
    # redis-py reads INCRBYFLOAT as a float; the string is on the wire.
    assert got == [1.0, 2.0, 2.5, 2.6, 2.8]
    assert c.get(key) == "2.8"
    assert c.ttl(key) == 1
    assert_fresh_pttl(c, key, 1000)

    wk = "rl:i:aspnet:wire"
    assert srv.wire("INCRBYFLOAT", wk, "1") == b"$1\r\n1\r\n"
    assert srv.wire("INCRBYFLOAT", wk, "0.5") == b"$3\r\n1.5\r\n"
    assert srv.wire("INCRBYFLOAT", wk, "1e2") == b"$5\r\n101.5\r\n"
    assert srv.wire("EXPIRE", wk, "1") == b":1\r\n"
    # INCRBYFLOAT keeps the TTL.
    assert srv.wire("INCRBYFLOAT", wk, "3.0e0") == b"$5\r\n104.5\r\n"
    assert srv.wire("TTL", wk) == b":1\r\n"
    assert srv.wire("TTL", "rl:i:aspnet:none") == b":-2\r\n"

    wait_gone(c, [key, wk], t_set, 1.0)
    assert c.ttl(key) == -2
    assert aspnet_count(c, key, 1, "1") == 1.0

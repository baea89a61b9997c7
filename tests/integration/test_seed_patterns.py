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
    (j) lists (Redis's INCR page, rate limiter 2): LLEN, EXISTS, MULTI
        RPUSH EXPIRE EXEC, RPUSHX
    (k) the sorted-set sliding log: ZREMRANGEBYSCORE + ZADD + ZCARD +
        EXPIRE in MULTI or a pipeline, ZRANGE 0 0 WITHSCORES
    (l) Python limits' moving window: LINDEX, LPUSH, LTRIM, EXPIRE; LRANGE
    (m) redis-semaphore: acquire (ZREMRANGEBYSCORE, ZCARD, ZADD, PEXPIRE),
        refresh (ZSCORE), release (ZREM)
    (n) Laravel's DurationLimiter: EXISTS, HMSET, HGET, HINCRBY, EXPIRE
    (o) AspNetCoreRateLimit's older hash counter: HMGET, HSET, EXPIRE

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


# ---- (j) lists: who used the quota (RPUSH, LLEN, RPUSHX, EXPIRE) ---------------

def limit_api_call_list(c, ip, limit, window):
    """Redis's INCR page, rate limiter 2: the list of this IP's requests
    (its length the count); the first one creates it with its TTL in a
    transaction, the later ones only append to a list that still exists.
    Returns (allowed, LLEN seen, the write's replies)."""
    current = c.llen(ip)
    if current > limit:
        return False, current, None
    if not c.exists(ip):
        p = c.pipeline(transaction=True)
        p.rpush(ip, ip)
        p.expire(ip, window)
        return True, current, p.execute()
    return True, current, c.rpushx(ip, ip)


def test_j_list_rpush_llen_rpushx_expire(srv, c):
    ip = "10.9.9.9"
    t_set = time.monotonic()
    got = [limit_api_call_list(c, ip, 3, 1) for _ in range(6)]
    assert got == [(True, 0, [1, True]), (True, 1, 2), (True, 2, 3), (True, 3, 4),
                   (False, 4, None), (False, 4, None)]
    assert c.lrange(ip, 0, -1) == [ip] * 4
    assert c.ttl(ip) == 1
    assert_fresh_pttl(c, ip, 1000)
    # RPUSHX on a key that is gone creates nothing.
    assert c.rpushx("10.9.9.10", "x") == 0
    assert c.exists("10.9.9.10") == 0

    wk = "10.9.9.11"
    assert srv.wire("LLEN", wk) == b":0\r\n"
    assert srv.wire("RPUSHX", wk, wk) == b":0\r\n"
    assert srv.wire("MULTI") == b"+OK\r\n"
    assert srv.wire("RPUSH", wk, wk) == b"+QUEUED\r\n"
    assert srv.wire("EXPIRE", wk, "1") == b"+QUEUED\r\n"
    assert srv.wire("EXEC") == b"*2\r\n:1\r\n:1\r\n"
    assert srv.wire("RPUSHX", wk, wk, wk) == b":3\r\n"
    assert srv.wire("LLEN", wk) == b":3\r\n"
    assert srv.wire("LRANGE", wk, "0", "-1") == b"*3\r\n" + b"$9\r\n10.9.9.11\r\n" * 3
    assert srv.wire("TYPE", wk) == b"+list\r\n"
    assert srv.wire("GET", wk).startswith(b"-WRONGTYPE ")

    wait_gone(c, [ip, wk], t_set, 1.0)
    assert c.llen(ip) == 0
    assert limit_api_call_list(c, ip, 3, 1) == (True, 0, [1, True])


# ---- (k) sorted-set sliding log (ZREMRANGEBYSCORE, ZADD, ZCARD, EXPIRE) -------

def sliding_log_hit(c, key, now_ms, window_ms, member, transaction=True):
    """The sorted-set sliding log: drop the entries older than the window,
    log this request, count, keep the key as long as the window. In MULTI
    (or a plain pipeline). Returns the four replies."""
    p = c.pipeline(transaction=transaction)
    p.zremrangebyscore(key, 0, now_ms - window_ms)
    p.zadd(key, {member: now_ms})
    p.zcard(key)
    p.pexpire(key, window_ms) if window_ms % 1000 else p.expire(key, window_ms // 1000)
    return p.execute()


def test_k_sorted_set_sliding_log_multi_and_pipeline(srv, c):
    key = "rl:k:log:user42"
    window = 1000
    base = int(time.time() * 1000)
    t_set = time.monotonic()
    got = [sliding_log_hit(c, key, base + i * 10, window, "req-%d" % i) for i in range(5)]
    assert got == [[0, 1, n, True] for n in range(1, 6)]
    limit = 3
    assert [r[2] <= limit for r in got] == [True] * 3 + [False] * 2
    assert_fresh_pttl(c, key, window)
    # The oldest entry tells when the window frees a place.
    assert c.zrange(key, 0, 0, withscores=True) == [("req-0", float(base))]
    # Entries older than the window are dropped by the next hit.
    later = base + window + 25        # req-0, req-1, req-2 now older
    assert sliding_log_hit(c, key, later, window, "req-late") == [3, 1, 3, True]
    assert c.zrange(key, 0, -1) == ["req-3", "req-4", "req-late"]
    # The same member again only moves its score (ZADD answers 0).
    assert sliding_log_hit(c, key, later + 1, window, "req-late",
                           transaction=False) == [0, 0, 3, True]
    assert c.zscore(key, "req-late") == float(later + 1)

    wk = "rl:k:wire"
    assert srv.wire("MULTI") == b"+OK\r\n"
    assert srv.wire("ZREMRANGEBYSCORE", wk, "0", str(base - window)) == b"+QUEUED\r\n"
    assert srv.wire("ZADD", wk, str(base), "a") == b"+QUEUED\r\n"
    assert srv.wire("ZCARD", wk) == b"+QUEUED\r\n"
    assert srv.wire("EXPIRE", wk, "1") == b"+QUEUED\r\n"
    assert srv.wire("EXEC") == b"*4\r\n:0\r\n:1\r\n:1\r\n:1\r\n"
    assert srv.wire("ZADD", wk, str(base + 1), "b") == b":1\r\n"
    s0, s1 = str(base).encode(), str(base + 1).encode()
    assert srv.wire("ZRANGE", wk, "0", "-1", "WITHSCORES") == \
        b"*4\r\n$1\r\na\r\n$%d\r\n%s\r\n$1\r\nb\r\n$%d\r\n%s\r\n" % (len(s0), s0, len(s1), s1)
    assert srv.wire("ZREMRANGEBYSCORE", wk, "-inf", "(" + str(base + 1)) == b":1\r\n"
    assert srv.wire("ZCARD", wk) == b":1\r\n"
    assert srv.wire("TYPE", wk) == b"+zset\r\n"

    wait_gone(c, [key, wk], t_set, 1.0)
    assert c.zcard(key) == 0


# ---- (l) Python limits: moving window (LINDEX, LPUSH, LTRIM, EXPIRE) ----------

def limits_acquire_moving_window(c, key, limit, expiry, amount=1, now=None):
    """limits' acquire_moving_window script, step by step: the entry at
    index limit - amount is the oldest that would stay; still inside the
    window: refused. Else push this request's timestamps, keep only the
    newest limit, and the key lives as long as the window."""
    now = time.time() if now is None else now
    if amount > limit:
        return False
    entry = c.lindex(key, limit - amount)
    if entry is not None and float(entry) >= now - expiry:
        return False
    c.lpush(key, *([repr(now)] * amount))
    assert c.ltrim(key, 0, limit - 1) is True
    assert c.expire(key, expiry) is True
    return True


def limits_get_moving_window(c, key, limit, expiry, now=None):
    """(oldest timestamp in the window, count): LRANGE over limit + 1."""
    now = time.time() if now is None else now
    count, oldest = 0, None
    for item in c.lrange(key, 0, limit):
        if float(item) > now - expiry:
            count += 1
            oldest = float(item)
        else:
            break
    return oldest, count


def test_l_python_limits_moving_window_lindex_lpush_ltrim_expire(srv, c):
    key = "LIMITER/test/moving/10.10.10.10/3/1/second"
    t0 = time.time()
    t_set = time.monotonic()
    got = [limits_acquire_moving_window(c, key, 3, 1, now=t0 + i * 0.001)
           for i in range(5)]
    assert got == [True, True, True, False, False]
    assert c.llen(key) == 3
    assert c.ttl(key) == 1
    assert limits_get_moving_window(c, key, 3, 1, now=t0 + 0.01) == (t0, 3)
    # Weighted: 2 units need the entry at index 1 to be outside the window.
    assert limits_acquire_moving_window(c, key, 3, 1, amount=2, now=t0 + 0.01) is False
    assert limits_acquire_moving_window(c, key, 3, 1, amount=4) is False
    # A second later the two oldest entries have left the window (the one
    # at index 1 decides): LTRIM keeps the newest 3.
    later = t0 + 1.0015
    assert limits_acquire_moving_window(c, key, 3, 1, amount=2, now=later) is True
    assert c.lrange(key, 0, -1) == [repr(later)] * 2 + [repr(t0 + 0.002)]

    wk = "LIMITER/wire"
    assert srv.wire("LINDEX", wk, "2") == b"$-1\r\n"
    assert srv.wire("LPUSH", wk, "1.5", "2.5") == b":2\r\n"
    assert srv.wire("LTRIM", wk, "0", "0") == b"+OK\r\n"
    assert srv.wire("LINDEX", wk, "0") == b"$3\r\n2.5\r\n"
    assert srv.wire("LINDEX", wk, "-1") == b"$3\r\n2.5\r\n"
    assert srv.wire("LTRIM", wk, "5", "10") == b"+OK\r\n"   # empties: key gone
    assert srv.wire("EXISTS", wk) == b":0\r\n"
    assert srv.wire("EXPIRE", wk, "1") == b":0\r\n"

    wait_gone(c, [key], t_set, 1.0)
    assert limits_get_moving_window(c, key, 3, 1) == (None, 0)


# ---- (m) redis-semaphore: acquire, refresh, release ----------------------------

def semaphore_acquire(c, key, identifier, limit, lock_timeout_ms, now_ms):
    """redis-semaphore's acquire script: expire the holders whose lock
    timed out, then take a place if one is free."""
    c.zremrangebyscore(key, "-inf", now_ms - lock_timeout_ms)
    if c.zcard(key) < limit:
        c.zadd(key, {identifier: now_ms})
        assert c.pexpire(key, lock_timeout_ms) is True
        return 1
    return 0


def semaphore_refresh(c, key, identifier, lock_timeout_ms, now_ms):
    if c.zscore(key, identifier) is not None:
        c.zadd(key, {identifier: now_ms})
        assert c.pexpire(key, lock_timeout_ms) is True
        return 1
    return 0


def test_m_redis_semaphore_acquire_refresh_release(srv, c):
    key = "semaphore:jobs"
    timeout_ms = 1000
    now = int(time.time() * 1000)
    t_set = time.monotonic()
    ids = ["3f1c-a", "3f1c-b", "3f1c-c"]
    assert [semaphore_acquire(c, key, i, 2, timeout_ms, now + n)
            for n, i in enumerate(ids)] == [1, 1, 0]
    assert_fresh_pttl(c, key, timeout_ms)
    assert semaphore_refresh(c, key, ids[0], timeout_ms, now + 10) == 1
    assert semaphore_refresh(c, key, ids[2], timeout_ms, now + 10) == 0
    assert c.zscore(key, ids[0]) == float(now + 10)
    # release
    assert c.zrem(key, ids[1]) == 1
    assert c.zrem(key, ids[1]) == 0
    assert semaphore_acquire(c, key, ids[2], 2, timeout_ms, now + 20) == 1
    # A holder that did not refresh in time is dropped by the next acquire.
    assert semaphore_acquire(c, key, "3f1c-d", 2, timeout_ms, now + 10 + timeout_ms) == 1
    assert c.zrange(key, 0, -1) == [ids[2], "3f1c-d"]

    wk = "semaphore:wire"
    assert srv.wire("ZREMRANGEBYSCORE", wk, "-inf", "100") == b":0\r\n"
    assert srv.wire("ZCARD", wk) == b":0\r\n"
    assert srv.wire("ZADD", wk, "1700000000123", "id-1") == b":1\r\n"
    assert srv.wire("PEXPIRE", wk, str(timeout_ms)) == b":1\r\n"
    assert srv.wire("ZSCORE", wk, "id-1") == b"$13\r\n1700000000123\r\n"
    assert srv.wire("ZSCORE", wk, "id-2") == b"$-1\r\n"
    assert srv.wire("ZREM", wk, "id-1") == b":1\r\n"
    assert srv.wire("EXISTS", wk) == b":0\r\n"     # empty: the key is gone

    wait_gone(c, [key], t_set, timeout_ms / 1000)
    assert c.zcard(key) == 0


# ---- (n) Laravel's DurationLimiter (HMSET, HGET, HINCRBY, EXPIRE) -------------

def laravel_duration_acquire(c, key, now, decay, max_locks):
    """Laravel's DurationLimiter script, step by step: a new or finished
    window is reset (HMSET start/end/count, EXPIRE twice the decay); within
    it, count. Times are compared as strings, as the script's Lua does.
    Returns (acquired, window end, remaining)."""
    def reset():
        assert c.execute_command("HMSET", key, "start", now, "end", now + decay,
                                 "count", 1) is True
        return c.expire(key, decay * 2)

    if c.exists(key) == 0:
        return reset(), now + decay, max_locks - 1
    if str(now) >= c.hget(key, "start") and str(now) <= c.hget(key, "end"):
        count = c.hincrby(key, "count", 1)
        return count <= max_locks, int(c.hget(key, "end")), \
            max_locks - int(c.hget(key, "count"))
    return reset(), now + decay, max_locks - 1


def test_n_laravel_hmset_hget_hincrby_expire(srv, c):
    key = "laravel:duration:api:10.11.11.11"
    now = int(time.time())
    t_set = time.monotonic()
    got = [laravel_duration_acquire(c, key, now, 1, 2) for _ in range(4)]
    assert got == [(True, now + 1, 1), (True, now + 1, 0), (False, now + 1, -1),
                   (False, now + 1, -2)]
    assert c.hgetall(key) == {"start": str(now), "end": str(now + 1), "count": "4"}
    assert c.ttl(key) == 2
    # After the window the next call resets it.
    assert laravel_duration_acquire(c, key, now + 2, 1, 2) == (True, now + 3, 1)
    assert c.hget(key, "count") == "1"

    wk = "laravel:wire"
    assert srv.wire("HMSET", wk, "start", "100", "end", "160", "count", "1") == b"+OK\r\n"
    assert srv.wire("HGET", wk, "start") == b"$3\r\n100\r\n"
    assert srv.wire("HGET", wk, "none") == b"$-1\r\n"
    assert srv.wire("HINCRBY", wk, "count", "1") == b":2\r\n"
    assert srv.wire("HINCRBY", wk, "start", "-101") == b":-1\r\n"
    assert srv.wire("HGETALL", wk) == (b"*6\r\n$5\r\nstart\r\n$2\r\n-1\r\n$3\r\nend\r\n"
                                       b"$3\r\n160\r\n$5\r\ncount\r\n$1\r\n2\r\n")
    assert srv.wire("EXPIRE", wk, "1") == b":1\r\n"
    assert srv.wire("TYPE", wk) == b"+hash\r\n"

    wait_gone(c, [key, wk], t_set, 2.0)
    assert laravel_duration_acquire(c, key, now, 1, 2)[0] is True


# ---- (o) AspNetCoreRateLimit's older hash strategy (HSET, HMGET, EXPIRE) ------

def aspnet_hash_count(c, key, now, period_s):
    """The counter as a hash (timestamp, count): HMGET both; a new window
    is written with HSET and gets its EXPIRE; else count is set again."""
    ts, count = c.hmget(key, ["timestamp", "count"])
    if ts is None:
        assert c.hset(key, mapping={"timestamp": now, "count": 1}) == 2
        assert c.expire(key, period_s) is True
        return now, 1
    count = int(count) + 1
    assert c.hset(key, "count", count) == 0
    return int(ts), count


def test_o_aspnetcore_hset_hmget(srv, c):
    key = "rl:o:aspnet:10.12.12.12"
    now = int(time.time())
    t_set = time.monotonic()
    assert [aspnet_hash_count(c, key, now, 1) for _ in range(3)] == \
        [(now, 1), (now, 2), (now, 3)]
    assert c.ttl(key) == 1
    assert c.hmget(key, ["count", "none", "timestamp"]) == ["3", None, str(now)]

    wk = "rl:o:wire"
    assert srv.wire("HMGET", wk, "timestamp", "count") == b"*2\r\n$-1\r\n$-1\r\n"
    assert srv.wire("HSET", wk, "timestamp", "1700000000", "count", "1") == b":2\r\n"
    assert srv.wire("HSET", wk, "count", "2") == b":0\r\n"
    assert srv.wire("HMGET", wk, "count", "x") == b"*2\r\n$1\r\n2\r\n$-1\r\n"
    assert srv.wire("EXPIRE", wk, "1") == b":1\r\n"
    assert srv.wire("HLEN", wk) == b":2\r\n"

    wait_gone(c, [key, wk], t_set, 1.0)
    assert c.hmget(key, ["timestamp", "count"]) == [None, None]

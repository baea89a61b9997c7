"""maxmemory with its two policies: noeviction fails closed for new keys
only; volatile-ttl drops the keys closest to fresh to make room."""
import pytest
import redis

import harness

OOM = "OOM command not allowed when used memory > 'maxmemory'."


def add_keys(r, prefix, n, period):
    """CL.THROTTLE n new keys in pipelined batches; returns the replies."""
    out = []
    for start in range(0, n, 1000):
        p = r.pipeline(transaction=False)
        for i in range(start, min(n, start + 1000)):
            p.execute_command("CL.THROTTLE", "%s:%d" % (prefix, i), 5, 1, period)
        out += p.execute(raise_on_error=False)
    return out


@pytest.mark.allocator
def test_noeviction_refuses_new_keys_and_keeps_existing_ones(start_daemon):
    d = start_daemon("--maxmemory", "1mb")
    r = d.client()
    assert r.execute_command("CL.THROTTLE", "early", 5, 1, 3600)[0] == 0
    replies = add_keys(r, "k", 40000, 3600)
    errors = [x for x in replies if isinstance(x, redis.ResponseError)]
    assert errors, "the ceiling was never reached"
    assert all(str(e) == OOM for e in errors)
    keys = r.dbsize()
    assert 1000 < keys < 40001
    info = r.info("memory")
    assert info["maxmemory"] == 1048576 and info["maxmemory_policy"] == "noeviction"
    # The ceiling falls near 16,384 keys, where the key table doubles: while
    # its buckets move over (a few cron ticks) both tables are held, so
    # used_memory settles under the ceiling and its slack once that ends.
    assert harness.wait_until(
        lambda: r.info("memory")["used_memory"] < 1048576 + 256 * 1024, 10)
    # An existing key keeps working; another new key is refused; other
    # commands are unaffected.
    assert r.execute_command("CL.THROTTLE", "early", 5, 1, 3600)[:3] == [0, 6, 4]
    # The reply buffers the pipeline filled, freed once it was read, may
    # leave room for more keys: how many depends on how far the replies
    # ran ahead of the reader (a loaded machine, a sanitizer build), but
    # not past the 1 MB ceiling, which a key of 40 bytes or more fills
    # within 26,215 new ones.
    refused = None
    for start in range(0, 30000, 500):
        p = r.pipeline(transaction=False)
        for i in range(start, start + 500):
            p.execute_command("RL.FIXED", "brand-new:%d" % i, 5, 60)
        errors = [x for x in p.execute(raise_on_error=False)
                  if isinstance(x, redis.ResponseError)]
        if errors:
            refused = str(errors[0])
            break
    assert refused == OOM
    assert r.ping() and r.dbsize() < keys + 30000
    assert str(r.info("errorstats")["errorstat_OOM"]).startswith("count=")
    # Raising the ceiling at run time lets new keys in again.
    assert r.config_set("maxmemory", "0")
    assert r.execute_command("RL.FIXED", "brand-new", 5, 60)[0] == 0
    assert r.execute_command("RL.FIXED", "brand-new-2", 5, 60)[0] == 0


@pytest.mark.allocator
def test_volatile_ttl_evicts_the_keys_closest_to_fresh(start_daemon):
    d = start_daemon("--maxmemory", "1mb", "--maxmemory-policy", "volatile-ttl")
    r = d.client()
    add_keys(r, "long", 3000, 86400)          # full again in about a day
    add_keys(r, "short", 3000, 10)            # full again in 10 s
    replies = add_keys(r, "new", 30000, 3600)
    assert not [x for x in replies if isinstance(x, redis.ResponseError)]
    stats = r.info("stats")
    assert stats["evicted_keys"] > 0
    assert r.info("memory")["used_memory"] < 1048576 + 256 * 1024
    short_left = sum(r.exists("short:%d" % i) for i in range(0, 3000, 30))
    long_left = sum(r.exists("long:%d" % i) for i in range(0, 3000, 30))
    assert short_left < long_left, (short_left, long_left)

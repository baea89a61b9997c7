"""RL.TOPDENIED, INFO's top_denied_db lines and /metrics' cellgate_top_denied:
the keys the limiters deny most, per database, in a bounded summary
(top-denied-keys slots)."""
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

import harness


def deny(c, cmd, key, times):
    """times denials of key: the first call of a limit-1 limiter passes."""
    args = {"CL.THROTTLE": (0, 1, 60), "RL.FIXED": (1, 60),
            "RL.SLIDING": (1, 60)}[cmd]
    for _ in range(times + 1):
        c.command(cmd, key, *args)


def pairs(*kv):
    out = b"*%d\r\n" % len(kv)
    for key, n in kv:
        out += b"*2\r\n$%d\r\n%s\r\n:%d\r\n" % (len(key), key, n)
    return out


def test_denials_of_every_limiter_are_ranked_per_database(start_daemon):
    c = start_daemon().raw()
    deny(c, "CL.THROTTLE", b"u1", 4)
    deny(c, "RL.FIXED", b"k2", 2)
    deny(c, "RL.SLIDING", b"k3", 1)
    c.command("CL.THROTTLE", "allowed-only", 5, 1, 60)
    assert c.command("RL.TOPDENIED") == pairs((b"u1", 4), (b"k2", 2), (b"k3", 1))
    assert c.command("rl.topdenied", "count", 1) == pairs((b"u1", 4))
    assert c.command("RL.TOPDENIED", "COUNT", 0) == b"*0\r\n"
    assert c.command("RL.TOPDENIED", "DB", 1) == b"*0\r\n"
    assert c.command("SELECT", 1) == b"+OK\r\n"
    deny(c, "CL.THROTTLE", b"u1", 1)
    assert c.command("RL.TOPDENIED") == pairs((b"u1", 1))
    assert c.command("RL.TOPDENIED", "DB", 0, "COUNT", 2) == \
        pairs((b"u1", 4), (b"k2", 2))
    # Statistics, not data: a flush keeps them, CONFIG RESETSTAT clears them.
    assert c.command("FLUSHALL") == b"+OK\r\n"
    assert c.command("RL.TOPDENIED", "DB", 0, "COUNT", 1) == pairs((b"u1", 4))
    assert c.command("CONFIG", "RESETSTAT") == b"+OK\r\n"
    assert c.command("RL.TOPDENIED", "DB", 0) == b"*0\r\n"


def test_wrong_arguments_get_redis_errors(start_daemon):
    c = start_daemon().raw()
    for args, err in [
            (("COUNT",), b"-ERR syntax error\r\n"),
            (("FOO", 1), b"-ERR syntax error\r\n"),
            (("COUNT", "x"), b"-ERR value is not an integer or out of range\r\n"),
            (("COUNT", -1), b"-ERR value is out of range, must be positive\r\n"),
            (("DB", "x"), b"-ERR value is not an integer or out of range\r\n"),
            (("DB", 16), b"-ERR DB index is out of range\r\n"),
            (("DB", -1), b"-ERR DB index is out of range\r\n")]:
        assert c.command("RL.TOPDENIED", *args) == err, args


def test_info_quotes_the_first_keys(start_daemon):
    d = start_daemon()
    c = d.raw()
    deny(c, "RL.FIXED", b'we"ird\\key\n\xff', 3)
    deny(c, "CL.THROTTLE", b"plain", 2)
    deny(c, "CL.THROTTLE", b"third", 1)
    deny(c, "CL.THROTTLE", b"fourth", 1)
    info = c.command("INFO", "limits")
    line = [l for l in info.split(b"\r\n") if l.startswith(b"top_denied_db")]
    assert line == [b'top_denied_db0:key1="we\\"ird\\\\key\\\\x0a\\\\xff",'
                    b'count1=3,key2="plain",count2=2,key3="fourth",count3=1']


def scrape(port):
    url = "http://127.0.0.1:%d/metrics" % port
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.read().decode()


def top_series(text):
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "cellgate_top_denied":
                out[(s.labels["db"], s.labels["rank"], s.labels["key"])] = s.value
    return out


def test_metrics_show_at_most_ten_series_per_database(start_daemon):
    mport = harness.free_port()
    c = start_daemon("--metrics-port", str(mport)).raw()
    for i in range(15):                       # key k<i> denied i + 1 times
        deny(c, "CL.THROTTLE", b"k%d" % i, i + 1)
    deny(c, "CL.THROTTLE", b'q"\\', 1)
    want = {("0", str(r + 1), "k%d" % (14 - r)): 15 - r for r in range(10)}
    deadline = time.time() + 5
    while True:                               # snapshots follow the cron tick
        got = top_series(scrape(mport))
        if got == want or time.time() > deadline:
            break
        time.sleep(0.05)
    assert got == want
    assert c.command("SELECT", 2) == b"+OK\r\n"
    deny(c, "CL.THROTTLE", b'q"\\', 2)
    deadline = time.time() + 5
    while True:
        got = top_series(scrape(mport))
        if ("2", "1", 'q"\\') in got or time.time() > deadline:
            break
        time.sleep(0.05)
    assert got[("2", "1", 'q"\\')] == 2 and len(got) == 11


def test_the_option_sizes_the_summary_and_is_rewritten(tmp_path, start_daemon):
    conf = tmp_path / "cellgate.conf"
    conf.write_text("top-denied-keys 4\n")
    d = start_daemon(config_file=str(conf))
    c = d.raw()
    assert c.command("CONFIG", "GET", "top-denied-keys") == \
        b"*2\r\n$15\r\ntop-denied-keys\r\n$1\r\n4\r\n"
    deny(c, "CL.THROTTLE", b"a", 3)
    assert c.command("CONFIG", "SET", "top-denied-keys", 2) == b"+OK\r\n"
    # A new size starts an empty summary of that many slots.
    assert c.command("RL.TOPDENIED") == b"*0\r\n"
    deny(c, "CL.THROTTLE", b"x", 3)
    deny(c, "CL.THROTTLE", b"y", 2)
    deny(c, "CL.THROTTLE", b"z", 1)           # takes y's slot: 2 + 1
    assert c.command("RL.TOPDENIED", "COUNT", 100) == \
        pairs((b"x", 3), (b"z", 3))
    assert c.command("CONFIG", "SET", "top-denied-keys", 0) == b"+OK\r\n"
    deny(c, "CL.THROTTLE", b"x", 1)
    assert c.command("RL.TOPDENIED") == b"*0\r\n"
    assert c.command("CONFIG", "SET", "top-denied-keys", -1).startswith(b"-ERR ")
    assert c.command("CONFIG", "SET", "top-denied-keys", 65537).startswith(b"-ERR ")
    assert c.command("CONFIG", "SET", "top-denied-keys", 7) == b"+OK\r\n"
    assert c.command("CONFIG", "REWRITE") == b"+OK\r\n"
    assert "top-denied-keys 7" in conf.read_text().splitlines()


BANNED = """\
domain: api
descriptors:
  - key: banned
    rate_limit: {unit: second, requests_per_unit: 0}
"""


def test_rl_check_counts_under_its_domain(tmp_path, start_daemon):
    limits = tmp_path / "limits"
    limits.mkdir()
    (limits / "api.yaml").write_text(BANNED)
    c = start_daemon("--limits-file", str(limits)).raw()
    for who in ("a", "b", "c"):               # three counters, one domain
        assert c.command("RL.CHECK", "api", "banned=" + who).startswith(b"*5\r\n:1\r\n")
    assert c.command("RL.TOPDENIED") == pairs((b"api", 3))

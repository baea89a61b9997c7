"""Named limits: limits-file in envoyproxy/ratelimit's YAML, decided with
RL.CHECK over RESP. Fixed windows on unit boundaries (fake clock), shadow
mode, unlimited, HITS, PEEK, the other algorithms, atomic under concurrent
clients, and reloads (SIGHUP, CONFIG RELOAD-LIMITS) that apply a good file
and keep the running limits on a bad one."""
import os
import signal
import subprocess
import threading

import redis

import harness
from test_grpc import EXAMPLES     # the first example of that README

SEC = 1000000000
HOUR = 3600

# After the shapes of that README's examples 2 to 6: a default per key,
# nested descriptors, shadow mode, unlimited, a blacklist.
API = """\
domain: api
descriptors:
  # each client address: 3 per minute
  - key: remote_address
    rate_limit:
      unit: minute
      requests_per_unit: 3

  # the login path, per user, nested
  - key: path
    value: /login
    descriptors:
      - key: user
        rate_limit: {unit: hour, requests_per_unit: 2, name: login}

  - key: tier
    value: trial
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}

  - key: tier
    value: internal
    rate_limit: {unlimited: true}

  - key: plan
    value: gcra
    rate_limit: {unit: minute, requests_per_unit: 2, cellgate_algorithm: gcra}

  - key: plan
    value: sliding
    rate_limit: {unit: minute, requests_per_unit: 2, cellgate_algorithm: sliding_window}

  - key: banned
    rate_limit: {unit: second, requests_per_unit: 0}
"""


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def limits_dir(tmp_path):
    d = tmp_path / "limits"
    d.mkdir()
    write(str(d / "api.yaml"), API)
    write(str(d / "mongo.yaml"), EXAMPLES["mongo_cps"])
    return str(d)


def check(c, *args):
    return c.execute_command("RL.CHECK", *args)


def start(start_daemon, tmp_path, **kw):
    d = start_daemon("--limits-file", limits_dir(tmp_path), **kw)
    return d, d.client()


def test_a_limit_counts_in_fixed_windows_on_unit_boundaries(start_daemon, tmp_path):
    d, c = start(start_daemon, tmp_path, fakeclock=True)
    minute = 60 * SEC
    d.clock.set(d.clock.ns - d.clock.ns % minute + minute + 45 * SEC)  # hh:mm:45
    got = [check(c, "api", "remote_address=10.0.0.1") for _ in range(4)]
    assert got == [[0, 3, 2, -1, 15], [0, 3, 1, -1, 15], [0, 3, 0, -1, 15],
                   [1, 3, 0, 15, 15]]
    # Each address has its own counter, named after the descriptor.
    assert check(c, "api", "remote_address=10.0.0.2") == [0, 3, 2, -1, 15]
    assert c.execute_command("TYPE", "api_remote_address_10.0.0.1") == b"fixed"
    assert c.pttl("api_remote_address_10.0.0.1") == 15000
    # At the next minute the window starts again, whatever the first hit.
    d.clock.advance(15)
    assert check(c, "api", "remote_address=10.0.0.1") == [0, 3, 2, -1, 60]
    assert check(c, "api", "remote_address=10.0.0.1", "MS") == [0, 3, 1, -1, 60000]


def test_nested_descriptors_hits_peek_and_no_limit(start_daemon, tmp_path):
    d, c = start(start_daemon, tmp_path, fakeclock=True)
    d.clock.set(d.clock.ns - d.clock.ns % (HOUR * SEC) + HOUR * SEC)      # hh:00
    assert check(c, "api", "path=/login", "user=bob", "PEEK") == [0, 2, 1, -1, HOUR]
    assert c.exists("api_path_/login_user_bob") == 0                       # PEEK
    assert check(c, "api", "path=/login", "user=bob", "HITS", 2) == [0, 2, 0, -1, HOUR]
    assert check(c, "api", "path=/login", "user=bob", "HITS", 0) == [0, 2, 0, -1, HOUR]
    assert check(c, "api", "path=/login", "user=bob") == [1, 2, 0, HOUR, HOUR]
    # Too many for the limit at once: refused, and nothing taken.
    assert check(c, "api", "path=/login", "user=eve", "HITS", 3) == [1, 2, 2, -1, HOUR]
    assert check(c, "api", "path=/login", "user=eve") == [0, 2, 1, -1, HOUR]
    # No limit applies: the path alone (its limit is one level down), an
    # unknown value or domain, an unlimited tier.
    for args in (["path=/login"], ["path=/other", "user=bob"], ["tier=internal"]):
        assert check(c, "api", *args) == [0, -1, -1, -1, -1], args
    assert check(c, "nosuchdomain", "a=b") == [0, -1, -1, -1, -1]
    # Shadow mode: counted, but never refused.
    assert check(c, "api", "tier=trial") == [0, 1, 0, -1, HOUR]
    assert check(c, "api", "tier=trial") == [0, 1, 0, -1, HOUR]
    # requests_per_unit 0 refuses everything, for ever (retry_after -1).
    assert check(c, "api", "banned=x") == [1, 0, 0, -1, 1]      # never allowed
    assert c.dbsize() == 3


def test_cellgate_algorithm_picks_gcra_or_the_sliding_window(start_daemon, tmp_path):
    d, c = start(start_daemon, tmp_path, fakeclock=True)
    d.clock.fresh_epoch()
    assert check(c, "api", "plan=gcra")[:3] == [0, 2, 1]
    assert check(c, "api", "plan=gcra")[:3] == [0, 2, 0]
    assert check(c, "api", "plan=gcra")[:4] == [1, 2, 0, 30]
    assert c.execute_command("TYPE", "api_plan_gcra") == b"string"   # as CL.THROTTLE's
    # NEGATIVE gives tokens back (Envoy's is_negative_hits), never past a
    # full bucket; a window limit gives back units the same way.
    assert check(c, "api", "plan=gcra", "HITS", 1, "NEGATIVE")[:4] == [0, 2, 1, -1]
    assert check(c, "api", "plan=gcra", "HITS", 5, "NEGATIVE")[:4] == [0, 2, 2, -1]
    assert check(c, "api", "plan=gcra")[:3] == [0, 2, 1]
    assert check(c, "api", "plan=sliding", "HITS", 2)[:3] == [0, 2, 0]
    assert check(c, "api", "plan=sliding")[:2] == [1, 2]
    assert check(c, "api", "plan=sliding", "HITS", 3, "NEGATIVE")[:3] == [0, 2, 2]
    assert check(c, "api", "plan=sliding")[:3] == [0, 2, 1]
    assert c.execute_command("TYPE", "api_plan_sliding") == b"sliding"


def test_errors(start_daemon, tmp_path):
    d, c = start(start_daemon, tmp_path)
    r = d.raw()
    assert r.command("RL.CHECK", "api") == \
        b"-ERR wrong number of arguments for 'rl.check' command\r\n"
    assert r.command("RL.CHECK", "api", "PEEK") == \
        b"-ERR RL.CHECK wants at least one key=value entry\r\n"
    assert r.command("RL.CHECK", "api", "=x") == \
        b"-ERR descriptor entries are key=value with a key\r\n"
    assert r.command("RL.CHECK", "api", "a=b", "NOPE") == b"-ERR syntax error\r\n"
    assert r.command("RL.CHECK", "api", "a=b", "HITS", -1) == \
        b"-ERR value is not an integer or out of range\r\n"
    assert r.command("RL.CHECK", "api", *["k%d=v" % i for i in range(17)]) == \
        b"-ERR RL.CHECK takes at most 16 key=value entries\r\n"
    plain = start_daemon()
    assert plain.raw().command("RL.CHECK", "api", "a=b") == \
        b"-ERR no rate limit configuration loaded\r\n"
    assert plain.raw().command("CONFIG", "RELOAD-LIMITS") == \
        b"-ERR limits-file is not set\r\n"


def test_concurrent_callers_share_one_quota_exactly(start_daemon, tmp_path):
    d, _ = start(start_daemon, tmp_path, fakeclock=True)
    d.clock.set(d.clock.ns - d.clock.ns % (HOUR * SEC) + HOUR * SEC)
    allowed = []

    def caller():
        c = redis.Redis(port=d.port)
        for _ in range(10):
            allowed.append(check(c, "api", "path=/login", "user=mallory")[0] == 0)
        c.close()

    threads = [threading.Thread(target=caller) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(allowed) == 500 and allowed.count(True) == 2


def test_sighup_applies_a_good_file_and_keeps_the_old_limits_on_a_bad_one(
        start_daemon, tmp_path):
    d, c = start(start_daemon, tmp_path, fakeclock=True)
    d.clock.set(d.clock.ns - d.clock.ns % (HOUR * SEC) + HOUR * SEC)
    api = str(tmp_path / "limits" / "api.yaml")
    assert check(c, "api", "remote_address=a")[:3] == [0, 3, 2]
    write(api, API.replace("requests_per_unit: 3", "requests_per_unit: 30"))
    d.proc.send_signal(signal.SIGHUP)
    assert harness.wait_until(lambda: check(c, "api", "remote_address=b")[1] == 30, 5)
    assert "Loaded 9 limits in 2 domains" in d.log().split("Received SIGHUP")[1]
    # A broken file: logged with its line, and the running limits stay.
    write(api, API.replace("unit: minute", "unit: fortnight", 1))
    d.proc.send_signal(signal.SIGHUP)
    assert harness.wait_until(lambda: "Limits NOT reloaded" in d.log(), 5)
    assert "api.yaml:6: invalid rate limit unit 'fortnight'" in d.log()
    assert check(c, "api", "remote_address=c")[1] == 30
    # CONFIG RELOAD-LIMITS answers the same way.
    r = d.raw()
    reply = r.command("CONFIG", "RELOAD-LIMITS")
    assert reply.startswith(b"-ERR ") and b"api.yaml:6: invalid rate limit unit " \
        b"'fortnight'" in reply
    write(api, API.replace("requests_per_unit: 3", "requests_per_unit: 7"))
    assert r.command("CONFIG", "RELOAD-LIMITS") == b"+OK\r\n"
    assert check(c, "api", "remote_address=d")[1] == 7


def test_a_bad_file_stops_the_start_with_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("domain: d\ndescriptors:\n  - key: a\n    rate_limt:\n"
                   "      unit: second\n")
    r = subprocess.run([harness.BIN, "--test-config", "--limits-file", str(bad)],
                       capture_output=True, text=True, timeout=10)
    assert r.returncode == 1
    assert r.stderr == "cellgate: %s:4: config error, unknown key 'rate_limt'\n" % bad


def test_config_set_limits_file_loads_it_or_refuses_and_a_restart_agrees(
        start_daemon, tmp_path):
    """Whatever CONFIG SET takes, CONFIG REWRITE writes and a restart loads:
    a limits-file that does not load is refused at once (start-up would
    refuse it), the running limits stay; a good one runs at once."""
    conf = tmp_path / "cellgate.conf"
    conf.write_text("port 0\n")
    d = start_daemon(config_file=str(conf))
    c = d.raw()
    assert c.command("CONFIG", "SET", "limits-file", "/nonexistent") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'limits-file') - "
        b"/nonexistent: No such file or directory\r\n")
    assert c.command("CONFIG", "GET", "limits-file") == \
        b"*2\r\n$11\r\nlimits-file\r\n$0\r\n\r\n"
    unset = c.command("RL.CHECK", "api", "remote_address=1")
    assert unset.startswith(b"-ERR ")
    good = limits_dir(tmp_path)
    assert c.command("CONFIG", "SET", "limits-file", good) == b"+OK\r\n"
    assert c.command("RL.CHECK", "api", "remote_address=1").startswith(b"*5\r\n:0\r\n:3\r\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("domain: api\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n")
    assert c.command("CONFIG", "SET", "limits-file", str(bad), "hz", "20").startswith(
        b"-ERR CONFIG SET failed (possibly related to argument 'limits-file') - ")
    assert c.command("CONFIG", "GET", "hz") == b"*2\r\n$2\r\nhz\r\n$2\r\n10\r\n"
    assert c.command("RL.CHECK", "api", "remote_address=1").startswith(b"*5\r\n:0\r\n:3\r\n")
    assert c.command("CONFIG", "REWRITE") == b"+OK\r\n"
    d.stop()
    again = start_daemon(config_file=str(conf))
    assert again.raw().command("CONFIG", "GET", "limits-file") == (
        b"*2\r\n$11\r\nlimits-file\r\n$%d\r\n%s\r\n" % (len(good), good.encode()))
    assert again.raw().command("CONFIG", "SET", "limits-file", "") == b"+OK\r\n"
    assert again.raw().command("RL.CHECK", "api", "remote_address=1") == unset

"""Persistence on by default (issue 17): with the shipped config, as `make
run` and the image use it, a SIGTERM and a start bring back every key as it
stood: state and PTTL, in every database."""
import os

import redis

import harness
from harness import REPO

SHIPPED_CONF = os.path.join(REPO, "conf", "cellgate.conf")


def fill(port):
    """Keys of every type in databases 0 and 4."""
    for db in (0, 4):
        r = redis.Redis(port=port, db=db)
        for i in range(3):
            r.execute_command("CL.THROTTLE", "cell%d" % i, 4, 1, 60, i + 1)
            r.execute_command("RL.FIXED", "fixed%d" % i, 10, 60, "COST", i + 1)
            r.execute_command("RL.SLIDING", "sliding%d" % i, 10, 60, "COST", i + 1)
            r.execute_command("RL.LOG", "log%d" % i, 10, 60, "META", "who%d" % i)
            r.execute_command("RL.TIERS", "tiers%d" % i, 10, 1, 30, 60, "COST", i + 1)
            r.execute_command("GCRA", "gcra%d" % i, 4, 1, 60, "TOKENS", i + 1)
            r.execute_command("INCREX", "cnt%d" % i, "BYINT", i + 7, "EX", 600)
            r.execute_command("INCREX", "flt%d" % i, "BYFLOAT", "%d.25" % i)


def state(port):
    """Each key's type, PTTL and what a read or a PEEK says of it."""
    out = {}
    for db in (0, 4):
        r = redis.Redis(port=port, db=db)
        for key in sorted(r.keys("*")):
            t = r.type(key).decode()
            k = key.decode()
            if k.startswith("cell") or t == "string":
                seen = r.get(key)
            elif k.startswith("gcra"):      # too many tokens: limited, writes nothing
                seen = r.execute_command("GCRA", key, 4, 1, 60, "TOKENS", 100)
            elif t == "log":
                seen = r.execute_command("RL.ENTRIES", key)
            elif t == "tiers":
                seen = r.execute_command("RL.TIERS", key, 10, 1, 30, 60, "PEEK", "MS")
            else:
                seen = r.execute_command("RL." + t.upper(), key, 10, 60, "PEEK", "MS")
            out[(db, k)] = (t, r.pttl(key), seen)
    return out


def test_sigterm_and_start_with_the_shipped_config_keep_every_key(start_daemon, tmp_path):
    data = str(tmp_path / "data")
    os.makedirs(data)
    d = start_daemon("--dir", data, config_file=SHIPPED_CONF, fakeclock=True)
    fill(d.port)
    before = state(d.port)
    assert len(before) == 2 * 3 * 8
    now = d.clock.ns
    assert d.stop() == []                       # SIGTERM: the default rules save
    assert "DB saved on disk (48 keys" in d.log()
    d2 = start_daemon("--dir", data, config_file=SHIPPED_CONF, fakeclock=now)
    assert "Loaded 48 keys" in d2.log()
    assert state(d2.port) == before


def test_the_default_rules_snapshot_in_the_background(start_daemon, tmp_path):
    # Redis's default "3600 1 300 100 60 10000": 100 writes, 5 minutes on.
    d = start_daemon(config_file=SHIPPED_CONF, fakeclock=True)
    r = d.client()
    assert r.config_get("save") == {"save": "3600 1 300 100 60 10000"}
    for i in range(100):
        r.execute_command("CL.THROTTLE", "k%d" % i, 1, 1, 3600)
    d.clock.advance(seconds=301)
    assert harness.wait_until(
        lambda: "Background saving terminated with success" in d.log(), 10)
    assert r.info("persistence")["rdb_changes_since_last_save"] == 0


def test_a_start_that_fails_writes_no_snapshot(start_daemon, tmp_path):
    # The port is taken: the second daemon loads the first one's file,
    # cannot listen and exits 1 without writing over the file.
    import subprocess
    data = str(tmp_path / "data")
    os.makedirs(data)
    d = start_daemon("--dir", data, config_file=SHIPPED_CONF)
    d.client().execute_command("CL.THROTTLE", "k", 1, 1, 60)
    assert d.raw().command("SAVE") == b"+OK\r\n"
    path = os.path.join(data, "cellgate.snap")
    before = (os.stat(path).st_mtime_ns, open(path, "rb").read())
    empty = str(tmp_path / "empty")
    os.makedirs(empty)
    for folder in (data, empty):
        out = subprocess.run([harness.BIN, SHIPPED_CONF,
                              *harness.io_thread_args(config_file=SHIPPED_CONF),
                              "--port", str(d.port), "--dir", folder],
                             capture_output=True, text=True, timeout=20)
        assert out.returncode == 1
    assert (os.stat(path).st_mtime_ns, open(path, "rb").read()) == before
    assert os.listdir(empty) == []

"""Snapshots: a restart continues every limiter where it stood; a corrupt
file stops start-up unless told to start empty."""
import os
import subprocess
import time

import pytest

import harness
from harness import BIN


def throttle(c, key="k"):
    return c.execute_command("CL.THROTTLE", key, 4, 1, 60)


def restart(start_daemon, old, snapdir, *args):
    """A new daemon on the same snapshot dir, its fake clock where the old
    one's stood."""
    new = start_daemon("--dir", snapdir, *args, fakeclock=True)
    new.clock.set(old.clock.ns)
    return new


def test_sigkill_right_after_save_loses_nothing(start_daemon, tmp_path):
    snapdir = str(tmp_path)
    d = start_daemon("--dir", snapdir, fakeclock=True)
    r = d.client()
    assert [throttle(r)[2] for _ in range(3)] == [4, 3, 2]
    r.execute_command("RL.LOG", "who", 5, 60, "META", "alice")
    r.execute_command("RL.TIERS", "tier", 5, 1, 10, 10, "COST", 3)
    r.execute_command("RL.FIXED", "fixed", 3, 60)
    r.execute_command("RL.SLIDING", "sliding", 3, 60)
    assert d.raw().command("SAVE") == b"+OK\r\n"
    d.proc.kill()
    d.proc.wait(10)
    d.stopped = True
    d2 = restart(start_daemon, d, snapdir)
    r2 = d2.client()
    assert r2.dbsize() == 5
    assert throttle(r2) == [0, 5, 1, -1, 240]       # as if it never stopped
    assert r2.execute_command("RL.ENTRIES", "who")[0][2] == b"alice"
    assert r2.execute_command("RL.TIERS", "tier", 5, 1, 10, 10, "COST", 3)[0] == 1
    assert r2.execute_command("RL.FIXED", "fixed", 3, 60)[2] == 1
    assert r2.execute_command("RL.SLIDING", "sliding", 3, 60)[2] == 1


def test_sigterm_saves_everything_when_snapshots_are_on(start_daemon, tmp_path):
    snapdir = str(tmp_path)
    d = start_daemon("--dir", snapdir, "--save-interval", "3600", fakeclock=True)
    r = d.client()
    for _ in range(5):
        throttle(r, "t")
    assert d.stop() == []
    d2 = restart(start_daemon, d, snapdir, "--save-interval", "3600")
    assert throttle(d2.client(), "t")[0] == 1          # the bucket is still empty
    assert "Loaded 1 keys" in d2.log()


def test_shutdown_nosave_skips_the_exit_save(start_daemon, tmp_path):
    snapdir = str(tmp_path)
    d = start_daemon("--dir", snapdir, "--save-interval", "3600", fakeclock=True)
    throttle(d.client(), "n")
    d.raw().send(b"SHUTDOWN NOSAVE\r\n")
    assert d.proc.wait(10) == 0
    d.stopped = True
    assert not os.path.exists(os.path.join(snapdir, "cellgate.snap"))


def test_keys_that_went_fresh_while_down_are_not_loaded(start_daemon, tmp_path):
    snapdir = str(tmp_path)
    d = start_daemon("--dir", snapdir, fakeclock=True)
    r = d.client()
    r.execute_command("CL.THROTTLE", "short", 0, 1, 1)
    r.execute_command("CL.THROTTLE", "long", 0, 1, 3600)
    r.execute_command("SAVE")
    d.stop()
    d.clock.advance(seconds=10)
    d2 = restart(start_daemon, d, snapdir)
    assert d2.client().keys("*") == [b"long"]


def test_bgsave_and_lastsave(start_daemon, tmp_path):
    d = start_daemon("--dir", str(tmp_path))
    r = d.client()
    throttle(r, "b")
    before = r.lastsave()
    assert d.raw().command("BGSAVE") == b"+Background saving started\r\n"
    for _ in range(100):
        info = r.info("persistence")
        if info["rdb_bgsave_in_progress"] == 0 and info["rdb_changes_since_last_save"] == 0:
            break
        time.sleep(0.05)
    assert info["rdb_last_bgsave_status"] == "ok"
    assert r.lastsave() >= before
    assert os.path.getsize(os.path.join(str(tmp_path), "cellgate.snap")) > 40


def test_periodic_save(start_daemon, tmp_path):
    d = start_daemon("--dir", str(tmp_path), "--save-interval", "1")
    throttle(d.client(), "p")
    path = os.path.join(str(tmp_path), "cellgate.snap")
    for _ in range(60):
        if os.path.exists(path):
            break
        time.sleep(0.1)
    assert os.path.exists(path)


def test_a_save_rule_snapshots_once_its_changes_are_reached(start_daemon, tmp_path):
    # Redis's save "2 3": after more than 2 s, if at least 3 writes.
    d = start_daemon("--dir", str(tmp_path), "--save", "2", "3", fakeclock=True)
    r = d.client()
    throttle(r, "a")
    throttle(r, "b")
    d.clock.advance(seconds=10)
    time.sleep(0.5)                     # several cron ticks: 2 writes, no save
    assert "Background saving started" not in d.log()
    assert d.info("persistence")["rdb_changes_since_last_save"] == 2
    throttle(r, "c")
    d.clock.advance(seconds=1)
    assert harness.wait_until(lambda: "Background saving terminated with success" in d.log(),
                              10)
    assert d.info("persistence")["rdb_changes_since_last_save"] == 0
    assert r.config_get("save") == {"save": "2 3"}


def test_save_rules_in_the_config_file_add_up_and_save_at_exit(start_daemon, tmp_path):
    conf = tmp_path / "c.conf"
    conf.write_text("save 3600 1\nsave 300 100\n")
    d = start_daemon("--dir", str(tmp_path), config_file=str(conf), fakeclock=True)
    r = d.client()
    assert r.config_get("save") == {"save": "3600 1 300 100"}
    throttle(r, "kept")
    assert d.stop() == []               # rules are set: SIGTERM saves
    assert "DB saved on disk" in d.log()
    d2 = restart(start_daemon, d, str(tmp_path))
    assert d2.client().exists("kept") == 1


def write_snapshot(start_daemon, snapdir):
    d = start_daemon("--dir", snapdir)
    r = d.client()
    for i in range(50):
        throttle(r, "c%d" % i)
    r.execute_command("SAVE")
    d.stop()
    return os.path.join(snapdir, "cellgate.snap")


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_corrupt_snapshot_stops_start_up_with_a_clear_message(start_daemon, tmp_path,
                                                                 damage):
    snapdir = str(tmp_path / "s")
    os.makedirs(snapdir)
    path = write_snapshot(start_daemon, snapdir)
    data = bytearray(open(path, "rb").read())
    if damage == "flip":
        data[len(data) // 2] ^= 0x40
    else:
        data = data[:len(data) // 2]
    open(path, "wb").write(bytes(data))
    out = subprocess.run([BIN, *harness.io_thread_args(), "--port", "0",
                          "--unixsocket", str(tmp_path / "x.sock"),
                          "--dir", snapdir], capture_output=True, text=True, timeout=20)
    assert out.returncode == 1
    assert "cannot load the snapshot: %s: checksum mismatch" % path in out.stderr
    assert "snapshot-load-errors start-empty" in out.stderr


def test_start_empty_option_starts_without_the_corrupt_snapshot(start_daemon, tmp_path):
    snapdir = str(tmp_path / "s")
    os.makedirs(snapdir)
    path = write_snapshot(start_daemon, snapdir)
    open(path, "ab").write(b"junk")
    d = start_daemon("--dir", snapdir, "--snapshot-load-errors", "start-empty")
    assert d.client().dbsize() == 0
    assert "starting EMPTY" in d.log()

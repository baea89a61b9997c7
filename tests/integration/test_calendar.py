"""Calendar windows (RL.FIXED ... CALENDAR zone, limits-file `calendar:`)
against the zone database, on the fake clock.

The boundaries are computed here independently, with Python's zoneinfo
(the same /usr/share/zoneinfo, read by other code): every DST change of
Europe/Paris, America/New_York, Australia/Lord_Howe (30 minutes) and
Asia/Kathmandu (+05:45) in 2026-2030 is found by scanning the offsets,
and the day, week (Monday and Sunday starts), hour, month and year
windows around it, every month end (28 to 31 days, the leap day
2028-02-29) and every new year are probed just before, at and just after
their boundaries. Each probe is one RL.FIXED on a fresh key whose
reset_after (MS) is the window's end as the server sees it. The clock
only moves forward, so the probes run in time order, those of one instant
in one pipeline.
"""
import datetime as dt
import os
import subprocess
from zoneinfo import ZoneInfo

import harness

SEC = 1000000000
UTC = dt.timezone.utc
ZONES = ["Europe/Paris", "America/New_York", "Australia/Lord_Howe",
         "Asia/Kathmandu"]
START = int(dt.datetime(2026, 1, 1, tzinfo=UTC).timestamp())
END = int(dt.datetime(2031, 1, 1, tzinfo=UTC).timestamp())
WEEKDAYS = {"monday": 0, "sunday": 6}       # Python's weekday()


def local(z, t):
    return dt.datetime.fromtimestamp(t, z).replace(tzinfo=None)


def transitions(z):
    """Every instant in 2026-2030 at which z's offset changes."""
    found = []
    t = START - 86400
    off = z.utcoffset(dt.datetime.fromtimestamp(t, UTC))
    while t < END:
        nxt = t + 86400
        noff = dt.datetime.fromtimestamp(nxt, z).utcoffset()
        if noff != off:
            lo, hi = t, nxt                 # offset(lo) == off != offset(hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if dt.datetime.fromtimestamp(mid, z).utcoffset() == off:
                    lo = mid
                else:
                    hi = mid
            found.append(hi)
        t, off = nxt, noff
    return [x for x in found if START <= x < END]


def first_instant(z, boundary, changes):
    """The first instant whose local time is at or past boundary (a naive
    local datetime): the earlier of two, or the change itself in a gap."""
    t = int(boundary.replace(tzinfo=z, fold=0).timestamp())
    if local(z, t) == boundary:
        return t
    for c in changes:                       # in a skipped stretch
        if local(z, c - 1) < boundary <= local(z, c):
            return c
    raise AssertionError("no instant for %s in %s" % (boundary, z))


def floor_boundary(unit, l, week_start):
    midnight = l.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "hour":
        b = l.replace(minute=0, second=0, microsecond=0)
        return b, b + dt.timedelta(hours=1)
    if unit == "day":
        return midnight, midnight + dt.timedelta(days=1)
    if unit == "week":
        b = midnight - dt.timedelta(days=(l.weekday() - WEEKDAYS[week_start]) % 7)
        return b, b + dt.timedelta(days=7)
    if unit == "month":
        b = midnight.replace(day=1)
        return b, (b + dt.timedelta(days=32)).replace(day=1)
    b = midnight.replace(month=1, day=1)
    return b, b.replace(year=b.year + 1)


def window_end(z, unit, week_start, t, changes):
    """The end of the window holding t, as the zone database says."""
    b, n = floor_boundary(unit, local(z, t), week_start)
    start, end = first_instant(z, b, changes), first_instant(z, n, changes)
    assert start <= t < end, (z, unit, t)
    return end


def around(t):
    return [t - 1, t, t + 1]


def probes():
    """(instant, zone, unit, week start) for every boundary to check."""
    out = set()
    for name in ZONES:
        z = ZoneInfo(name)
        changes = transitions(z)
        for c in changes:
            day, _ = floor_boundary("day", local(z, c), None)
            for t in around(c) + around(c - 1800) + around(c + 1800):
                out.add((t, name, "hour", "monday"))
                out.add((t, name, "day", "monday"))
            for d in (day, day + dt.timedelta(days=1)):
                for t in around(first_instant(z, d, changes)):
                    out.add((t, name, "day", "monday"))
            for ws in WEEKDAYS:
                week, nxt = floor_boundary("week", local(z, c), ws)
                for w in (week, nxt):
                    for t in around(first_instant(z, w, changes)):
                        out.add((t, name, "week", ws))
        for y in range(2026, 2031):
            for m in range(1, 13):
                b = first_instant(z, dt.datetime(y, m, 1), changes)
                for t in around(b) + [b + 86400 * 28 - 1]:
                    out.add((t, name, "month", "monday"))
                if m == 1:
                    for t in around(b):
                        out.add((t, name, "year", "monday"))
        leap = first_instant(z, dt.datetime(2028, 2, 29), changes)
        for t in around(leap) + around(leap + 86400):
            out.add((t, name, "day", "monday"))
        assert name == "Asia/Kathmandu" or len(changes) == 10, (name, changes)
    return sorted(p for p in out if START <= p[0] < END)


def expected(probe, cache={}):
    t, name, unit, ws = probe
    if name not in cache:
        cache[name] = (ZoneInfo(name), transitions(ZoneInfo(name)))
    z, changes = cache[name]
    return window_end(z, unit, ws, t, changes)


def test_every_boundary_in_four_zones_2026_to_2030_matches_zoneinfo(start_daemon):
    d = start_daemon(fakeclock=(START - 86400) * SEC)
    c = d.client()
    todo = probes()
    assert len(todo) > 1500
    by_instant = {}
    for p in todo:
        by_instant.setdefault(p[0], []).append(p)
    n = 0
    wrong = []
    for t in sorted(by_instant):
        d.clock.set(t * SEC)
        pipe = c.pipeline(transaction=False)
        for p in by_instant[t]:
            args = ["RL.FIXED", "k%d" % n, 1, p[2], "CALENDAR", p[1]]
            if p[2] == "week":
                args += ["WEEKSTART", p[3]]
            pipe.execute_command(*args, "MS")
            n += 1
        for p, got in zip(by_instant[t], pipe.execute()):
            want = [0, 1, 0, -1, (expected(p) - t) * 1000]
            if got != want:
                wrong.append((p, got, want))
    assert wrong == []


def test_month_lengths_leap_day_and_year_in_one_zone(start_daemon):
    """The plain facts, written out: February 2028 has 29 days, 2027 has
    28; Paris's March 2026 loses an hour; a year is 365 or 366 days."""
    t0 = int(dt.datetime(2026, 1, 15, tzinfo=UTC).timestamp())
    d = start_daemon(fakeclock=t0 * SEC)
    c = d.client()

    def reset_at(t, unit, zone="Europe/Paris"):
        d.clock.set(t * SEC)
        return c.execute_command("RL.FIXED", "m%d%s" % (t, unit), 1, unit,
                                 "CALENDAR", zone)[4]

    paris = ZoneInfo("Europe/Paris")

    def start_of(*ymd):
        return int(dt.datetime(*ymd, tzinfo=paris).timestamp())

    # The whole of March 2026 from its first second: 31 days less an hour.
    assert reset_at(start_of(2026, 3, 1), "month") == 31 * 86400 - 3600
    # The day of the change: 23 hours; October 25th: 25.
    assert reset_at(start_of(2026, 3, 29), "day") == 23 * 3600
    assert reset_at(start_of(2026, 10, 25), "day") == 25 * 3600
    assert reset_at(start_of(2027, 2, 1), "month") == 28 * 86400
    assert reset_at(start_of(2028, 1, 1), "year") == 366 * 86400
    assert reset_at(start_of(2028, 2, 1), "month") == 29 * 86400
    assert reset_at(start_of(2028, 2, 29), "day") == 86400
    # Kathmandu's hours start at :15 UTC.
    assert reset_at(start_of(2029, 1, 1) + 3600 * 6, "hour",
                    "Asia/Kathmandu") == 15 * 60


def test_errors_and_a_key_across_zones(start_daemon):
    t0 = int(dt.datetime(2026, 6, 1, 12, tzinfo=UTC).timestamp())
    d = start_daemon(fakeclock=t0 * SEC)
    r = d.raw()
    assert r.command("RL.FIXED", "k", 1, "day", "CALENDAR", "Mars/Base") == \
        b"-ERR unknown time zone 'Mars/Base'\r\n"
    assert r.command("RL.FIXED", "k", 1, "day", "CALENDAR", "../../etc/passwd") == \
        b"-ERR unknown time zone '../../etc/passwd'\r\n"
    assert r.command("RL.FIXED", "k", 1, "day", "CALENDAR", "/etc/localtime") == \
        b"-ERR unknown time zone '/etc/localtime'\r\n"
    assert r.command("RL.FIXED", "k", 1, 86400, "CALENDAR", "UTC") == \
        b"-ERR syntax error, CALENDAR's window must be second, minute, hour, " \
        b"day, week, month or year\r\n"
    assert r.command("RL.FIXED", "k", 1, "day", "CALENDAR", "UTC", "WEEKSTART",
                     "monday") == \
        b"-ERR syntax error, WEEKSTART needs CALENDAR and the week unit\r\n"
    assert r.command("RL.FIXED", "k", 1, 60, "WEEKSTART", "monday") == \
        b"-ERR syntax error, WEEKSTART needs CALENDAR and the week unit\r\n"
    assert r.command("RL.FIXED", "k", 1, "week", "CALENDAR", "UTC", "WEEKSTART",
                     "funday") == \
        b"-ERR syntax error, WEEKSTART must be a day of the week " \
        b"(monday ... sunday)\r\n"
    # Without CALENDAR every reply is as before: a unit name is no integer.
    assert r.command("RL.FIXED", "k", 1, "day") == \
        b"-ERR value is not an integer or out of range\r\n"
    assert r.command("RL.FIXED", "k", 1, 60, "ALIGN") == \
        b"*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:60\r\n"
    # A New York day opened at 08:00 there (12:00 UTC) ends at its midnight
    # (04:00 UTC); asked with Paris's calendar, the same key's window, which
    # started at 04:00 UTC, ends at Paris's first midnight after that
    # (22:00 UTC): the count goes on.
    assert r.command("RL.FIXED", "x", 5, "DAY", "calendar",
                     "America/New_York") == \
        b"*5\r\n:0\r\n:5\r\n:4\r\n:-1\r\n:57600\r\n"
    assert r.command("RL.FIXED", "x", 5, "day", "CALENDAR", "Europe/Paris") == \
        b"*5\r\n:0\r\n:5\r\n:3\r\n:-1\r\n:36000\r\n"
    assert r.command("PTTL", "x") == b":36000000\r\n"
    # The key is an RL.FIXED key like any other: TYPE, expiry, DEBUG RELOAD.
    assert r.command("TYPE", "x") == b"+fixed\r\n"


def test_a_corrupt_zone_file_is_an_error_not_a_crash(start_daemon, tmp_path):
    zdir = tmp_path / "zoneinfo"
    (zdir / "Test").mkdir(parents=True)
    good = open("/usr/share/zoneinfo/Europe/Paris", "rb").read()
    (zdir / "Test" / "Cut").write_bytes(good[:100])
    (zdir / "Test" / "Paris").write_bytes(good)
    t0 = int(dt.datetime(2026, 6, 1, 12, tzinfo=UTC).timestamp())
    d = start_daemon(env={"TZDIR": str(zdir)}, fakeclock=t0 * SEC)
    r = d.raw()
    assert r.command("RL.FIXED", "k", 1, "day", "CALENDAR", "Test/Cut") == \
        b"-ERR time zone 'Test/Cut': its zoneinfo file is not valid TZif\r\n"

    def day_reset(key):
        return r.command("RL.FIXED", key, 1, "day", "CALENDAR", "Test/Paris")

    assert day_reset("a") == b"*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:36000\r\n"
    # A zone is read once: a new file is seen after CONFIG RELOAD-LIMITS
    # (which empties the cache even without a limits-file), not before.
    kathmandu = open("/usr/share/zoneinfo/Asia/Kathmandu", "rb").read()
    (zdir / "Test" / "Paris").write_bytes(kathmandu)
    assert day_reset("b") == b"*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:36000\r\n"
    assert r.command("CONFIG", "RELOAD-LIMITS") == b"-ERR limits-file is not set\r\n"
    assert day_reset("c") == b"*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:22500\r\n"


LIMITS = """\
domain: shop
descriptors:
  - key: customer
    rate_limit:
      unit: day
      requests_per_unit: 2
      calendar: Australia/Lord_Howe
  - key: plan
    rate_limit: {unit: week, requests_per_unit: 1, calendar: America/New_York,
                 week_start: sunday}
  - key: plain
    rate_limit: {unit: month, requests_per_unit: 1}
"""


def test_rl_check_follows_the_calendar_of_its_limit(start_daemon, tmp_path):
    # 2026-04-05 01:00 Lord Howe daylight time (+11): DST ends at 02:00,
    # so that day lasts 24.5 hours and ends at 00:00 +10:30 of the 6th.
    lh = ZoneInfo("Australia/Lord_Howe")
    t0 = int(dt.datetime(2026, 4, 5, 1, tzinfo=lh).timestamp())
    day_end = int(dt.datetime(2026, 4, 6, tzinfo=lh).timestamp())
    ny = ZoneInfo("America/New_York")
    week_end = int(dt.datetime(2026, 4, 5, tzinfo=ny).timestamp())  # a Sunday
    f = tmp_path / "shop.yaml"
    f.write_text(LIMITS)
    d = start_daemon("--limits-file", str(f), fakeclock=t0 * SEC)
    c = d.client()
    assert c.execute_command("RL.CHECK", "shop", "customer=ann", "MS") == \
        [0, 2, 1, -1, (day_end - t0) * 1000]
    assert day_end - t0 == 23 * 3600 + 1800
    assert c.execute_command("RL.CHECK", "shop", "plan=p", "MS") == \
        [0, 1, 0, -1, (week_end - t0) * 1000]
    # Without calendar: that service's 30-day month, epoch-aligned.
    month = 30 * 86400
    assert c.execute_command("RL.CHECK", "shop", "plain=q") == \
        [0, 1, 0, -1, month - t0 % month]


def test_a_bad_calendar_refuses_the_file_with_its_line(tmp_path):
    cases = [
        ("calendar: Mars/Base", "unknown time zone 'Mars/Base'"),
        ("calendar: UTC, week_start: monday",
         "week_start needs the unit week"),
        ("week_start: monday", "week_start needs calendar"),
        ("calendar: UTC, cellgate_algorithm: gcra",
         "calendar applies to fixed_window limits only"),
    ]
    for extra, why in cases:
        bad = tmp_path / "bad.yaml"
        bad.write_text("domain: d\ndescriptors:\n  - key: a\n"
                       "    rate_limit: {unit: day, requests_per_unit: 1, %s}\n"
                       % extra)
        r = subprocess.run([harness.BIN, "--test-config", "--limits-file", str(bad)],
                           capture_output=True, text=True, timeout=10)
        assert r.returncode == 1, extra
        assert r.stderr == "cellgate: %s:4: %s\n" % (bad, why), r.stderr


def test_a_calendar_key_is_saved_dumped_and_restored_as_any_fixed_key(
        start_daemon, tmp_path):
    """The window end is absolute: nothing of the zone is stored, and a
    key read back (snapshot after kill -9, DUMP/RESTORE) goes on counting
    in the same window."""
    t0 = int(dt.datetime(2026, 10, 25, 12, tzinfo=UTC).timestamp())
    snapdir = str(tmp_path / "snap")
    os.makedirs(snapdir)
    d = start_daemon("--dir", snapdir, fakeclock=t0 * SEC)
    c = d.client()
    paris_25h_day = ["RL.FIXED", "k", 3, "day", "CALENDAR", "Europe/Paris"]
    # October 25th 2026 in Paris: 25 hours, ending at 23:00 UTC.
    assert c.execute_command(*paris_25h_day) == [0, 3, 2, -1, 11 * 3600]
    c.restore("copy", c.pttl("k"), c.dump("k"), replace=True)
    assert c.pttl("copy") == 11 * 3600 * 1000
    assert d.raw().command("SAVE") == b"+OK\r\n"
    d.proc.kill()
    d.proc.wait(10)
    d.stopped = True
    d2 = start_daemon("--dir", snapdir, fakeclock=t0 * SEC)
    c2 = d2.client()
    assert c2.execute_command(*paris_25h_day) == [0, 3, 1, -1, 11 * 3600]
    assert c2.execute_command("RL.FIXED", "copy", 3, "day", "CALENDAR",
                              "Europe/Paris") == [0, 3, 1, -1, 11 * 3600]
    d2.clock.set((t0 + 11 * 3600) * SEC)
    assert c2.execute_command(*paris_25h_day) == [0, 3, 2, -1, 24 * 3600]

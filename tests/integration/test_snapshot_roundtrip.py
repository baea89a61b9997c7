"""A saved state loads back to the same state, whatever traffic made it.

Random limiter traffic (every algorithm, COST and refunds, PEEK, MS, META of
any bytes, ALIGN, windows that change from call to call, DEL, the clock
jumping; on CL.THROTTLE's keys also PEXPIRE, PERSIST and INCRBY, which move
a TAT away from the expiry it is kept next to) on one daemon; after each
batch it saves, a second daemon loads
that snapshot at the same instant, and every key is compared: its type, its
PTTL, and what the state says through reads that change nothing (GET,
RL.ENTRIES, PEEK with fixed parameters).
"""
import os
import random

import pytest

BATCHES = 25
PER_BATCH = 250
KEYS = {
    "gcra": ["g%d" % i for i in range(6)],
    "fixed": ["f%d" % i for i in range(6)],
    "sliding": ["s%d" % i for i in range(6)],
    "log": ["l%d" % i for i in range(8)],
    "tiers": ["t%d" % i for i in range(6)],
}
WINDOWS = [1, 2, 5, 10, 60, 3600]


def options(rnd, meta=False, align=False):
    out = []
    if rnd.random() < 0.4:
        out += ["COST", rnd.choice([1, 1, 2, 3, 0, -1, -2, 5])]
    if meta and rnd.random() < 0.6:
        out += ["META", bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 40)))]
    if align and rnd.random() < 0.3:
        out.append("ALIGN")
    if rnd.random() < 0.15:
        out.append("PEEK")
    if rnd.random() < 0.2:
        out.append("MS")
    return out


def random_command(rnd):
    kind = rnd.choice(list(KEYS))
    key = rnd.choice(KEYS[kind])
    if rnd.random() < 0.03:
        return ["DEL", key]
    if kind == "gcra" and rnd.random() < 0.08:
        return rnd.choice([["PEXPIRE", key, rnd.randrange(1, 10 ** 7)],
                           ["PEXPIRE", key, rnd.randrange(1, 3000)],
                           ["PERSIST", key],
                           ["INCRBY", key, rnd.randrange(-5, 6)]])
    if kind == "gcra":
        cmd = ["CL.THROTTLE", key, rnd.randrange(0, 6), rnd.randrange(1, 10),
               rnd.choice(WINDOWS)]
        if rnd.random() < 0.3:
            cmd.append(rnd.randrange(0, 4))
        if rnd.random() < 0.1:
            cmd.append("PEEK")
        return cmd
    if kind == "tiers":
        tiers = []
        for w in sorted(rnd.sample(WINDOWS, rnd.randrange(1, 4))):
            tiers += [rnd.randrange(1, 12), w]
        return ["RL.TIERS", key] + tiers + options(rnd)
    name = {"fixed": "RL.FIXED", "sliding": "RL.SLIDING", "log": "RL.LOG"}[kind]
    return [name, key, rnd.randrange(1, 12), rnd.choice(WINDOWS)] + \
        options(rnd, meta=kind == "log", align=kind == "fixed")


def reads(r, key, kind):
    """What a client can learn of the key without changing it."""
    out = [r.type(key), r.pttl(key)]
    if kind == "gcra":
        out.append(r.get(key))
    elif kind == "log":
        out.append(r.execute_command("RL.ENTRIES", key))
        for w in WINDOWS:
            out.append(r.execute_command("RL.LOG", key, 200, w, "COST", 0, "PEEK", "MS"))
    elif kind == "tiers":
        for w in WINDOWS:
            out.append(r.execute_command("RL.TIERS", key, 10 ** 6, w, "COST", 0, "PEEK", "MS"))
    else:
        name = "RL.FIXED" if kind == "fixed" else "RL.SLIDING"
        for w in WINDOWS:
            out.append(r.execute_command(name, key, 10 ** 6, w, "COST", 0, "PEEK", "MS"))
    return out


def snapshot_of(r):
    state = {}
    for kind, keys in KEYS.items():
        for key in keys:
            state[key] = reads(r, key, kind)
    return state


@pytest.mark.parametrize("seed", [1, 2])
def test_every_state_reloads_to_the_same_state(start_daemon, tmp_path, seed):
    rnd = random.Random(seed)
    snapdir = str(tmp_path / "snap")
    os.makedirs(snapdir)
    a = start_daemon("--dir", snapdir, "--log-max-entries", "200", fakeclock=True)
    ra = a.client()
    for batch in range(BATCHES):
        p = ra.pipeline(transaction=False)
        for _ in range(PER_BATCH):
            p.execute_command(*random_command(rnd))
        replies = p.execute(raise_on_error=False)
        assert not [x for x in replies if isinstance(x, Exception)
                    and "OOM" in str(x)], "no memory limit was set"
        a.clock.advance(ms=rnd.choice([0, 1, 400, 999, 1000, 1500, 4000, 61000]))
        # Read first: reads change nothing, so the snapshot after them must
        # hold exactly what they saw.
        want = snapshot_of(ra)
        assert ra.execute_command("SAVE") is True
        b = start_daemon("--dir", snapdir, fakeclock=a.clock.ns, name="reload%d" % batch)
        got = snapshot_of(b.client())
        for key in want:
            assert got[key] == want[key], (batch, key)
        assert sorted(b.client().keys("*")) == sorted(ra.keys("*"))
        assert b.stop() == []

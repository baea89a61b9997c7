#!/usr/bin/env python3
"""Write the hand-made seeds of the command fuzzer (tests/fuzz/corpus/cmd):
the reproducers of what the first command-level fuzzing found (issue 14),
in fuzz_cmd.c's input format. Run from the repository root:

    /usr/bin/python3 tests/fuzz/make_cmd_seeds.py
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "cmd")

# Ops of fuzz_cmd.c's run_op (the byte modulo 16).
LITERAL, CLOCK, SAVELOAD = 11, 12, 14
# Clock steps of step_clock(), by index.
MS1, MS999, S1, S1_1, S59, H1, D1, BACK5, NS1, MS500 = range(10)


def cmd(*args):
    out = bytes([LITERAL, len(args)])
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += struct.pack("<H", len(a)) + a
    return out


def clock(step):
    return bytes([CLOCK, step])


def save_and_reload():
    return bytes([SAVELOAD])


SEEDS = {
    # 1. META sizes that wrapped; one key's memory bounded.
    "meta-arena-sizes": cmd("CONFIG", "SET", "log-max-entries", "10000000")
    + cmd("CONFIG", "SET", "log-max-entries", "1000000")
    + b"".join(cmd("RL.LOG", "big", 1000000, 864000, "META", b"m" * 300) for _ in range(8))
    + save_and_reload(),
    # 2. A shorter-window PEEK / denied call emptied a key: unloadable snapshot.
    "peek-empties-log": cmd("RL.LOG", "k", 5, 3600) + clock(S1_1)
    + cmd("RL.LOG", "k", 5, 1, "PEEK") + save_and_reload() + cmd("RL.ENTRIES", "k"),
    "denied-empties-tiers": cmd("RL.TIERS", "t", 1, 3600) + clock(S1_1)
    + cmd("RL.TIERS", "t", 1, 1, "COST", 2) + save_and_reload(),
    # 3. PEEK dropped the history and let a denied request through.
    "peek-drops-history": cmd("RL.LOG", "q", 1, 3600) + cmd("RL.LOG", "q", 1, 3600)
    + clock(S1) + clock(MS500) + cmd("RL.LOG", "q", 1, 1, "PEEK")
    + cmd("RL.LOG", "q", 1, 3600) + cmd("RL.TIERS", "r", 1, 3600)
    + cmd("RL.TIERS", "r", 1, 3600) + clock(S1_1) + cmd("RL.TIERS", "r", 1, 1, "PEEK")
    + cmd("RL.TIERS", "r", 1, 3600),
    # 4. maxmemory did not bound growing keys; eviction that cannot help.
    "maxmemory-growth": cmd("CONFIG", "SET", "maxmemory", "100kb")
    + b"".join(cmd("RL.LOG", "grow", 10000, 864000, "META", b"g" * 200) for _ in range(6))
    + cmd("CONFIG", "SET", "maxmemory-policy", "volatile-ttl")
    + b"".join(cmd("CL.THROTTLE", "n%d" % i, 5, 1, 60) for i in range(6))
    + b"".join(cmd("RL.TIERS", "tt", 1000, 3600) + clock(S1) for _ in range(6)),
    # 5. A backtracking pattern against a long key.
    "keys-backtracking": cmd("RL.FIXED", b"a" * 1500, 5, 60)
    + cmd("KEYS", b"*" + b"a" * 1000 + b"b")
    + cmd("SCAN", 0, "MATCH", b"*" + b"[a]" * 300 + b"b", "COUNT", 100),
    # 6. memcpy(NULL, 0) under UBSan.
    "meta-after-no-meta": cmd("RL.LOG", "k", 10, 60) + cmd("RL.LOG", "k", 10, 60, "META", "x")
    + save_and_reload(),
    # 7. CONFIG SET that locked everyone out; values read as C strings.
    "config-lockout": cmd("CONFIG", "SET", "proto-max-args", "1")
    + cmd("CONFIG", "SET", "proto-max-args", b"1\0junk")
    + cmd("CONFIG", "SET", "maxmemory", b"1\0gb")
    + cmd("CONFIG", "SET", b"maxmemory\0xyz", "5")
    + cmd("CONFIG", "SET", "maxmemory", "1mb", "maxmemory", "2mb", "hz", "0")
    + cmd("CL.THROTTLE", "after", 5, 1, 60),
    # 9. CLIENT LIST / INFO cut long lines.
    "client-list-long-name": cmd("CLIENT", "SETNAME", b"n" * 2000)
    + cmd("CLIENT", "LIST") + cmd("CLIENT", "INFO"),
    # Every algorithm, windows that change, refunds, MS, ALIGN, then reload.
    "all-limiters-reload": cmd("CL.THROTTLE", "g", 4, 1, 60) + cmd("RL.FIXED", "f", 3, 60, "ALIGN")
    + cmd("RL.SLIDING", "s", 3, 10, "COST", 2) + cmd("RL.LOG", "l", 3, 60, "META", b"\0\r\n")
    + cmd("RL.TIERS", "t", 2, 1, 5, 10) + clock(S1) + cmd("RL.LOG", "l", 3, 5, "COST", -1)
    + cmd("RL.TIERS", "t", 2, 1, 5, 10, "COST", -3, "MS") + save_and_reload()
    + cmd("RL.ENTRIES", "l") + cmd("SCAN", 0, "TYPE", "log") + clock(BACK5)
    + cmd("CL.THROTTLE", "g", 4, 1, 60, 2, "PEEK"),
    # Transactions: a queue run at one instant, a refused command aborting,
    # a watched key the client itself writes (EXEC answers null), a flush.
    "transactions": cmd("MULTI") + cmd("CL.THROTTLE", "x", 1, 1, 60)
    + cmd("RL.LOG", "y", 2, 60, "META", "m") + cmd("EXEC") + cmd("MULTI")
    + cmd("RL.FIXED", "z", 1) + cmd("EXEC") + cmd("WATCH", "x", "y")
    + cmd("RL.LOG", "y", 2, 60) + cmd("MULTI") + cmd("DEL", "x") + cmd("EXEC")
    + cmd("WATCH", "x") + cmd("FLUSHALL") + cmd("MULTI") + cmd("EXEC")
    + cmd("MULTI") + cmd("SAVE") + cmd("DISCARD") + cmd("UNWATCH"),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in sorted(SEEDS.items()):
        assert len(data) <= 4096, name     # make fuzz's -max_len
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(SEEDS), OUT))


if __name__ == "__main__":
    main()

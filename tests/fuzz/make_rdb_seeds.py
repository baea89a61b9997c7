#!/usr/bin/env python3
"""Write tests/fuzz/corpus/rdb: fuzz_rdb's seeds. Objects (first byte 0,
then the RDB type and the object) of every type and encoding: what a
redis-server 7.0.15 DUMPs (run one on --port; its keys are made here),
the old encodings built from the format (test_rdb_load.old_payloads()),
cellgate's own limiter payload; and small RDB files (first byte 1, then
the file after "REDIS0010") that redis-server SAVEs, with the checksum
zeroed. Run from the repository root:

    redis-server --port 23999 --save '' --dir /tmp &
    python3 tests/fuzz/make_rdb_seeds.py --port 23999
"""
import argparse
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import redis                                     # noqa: E402
from test_rdb_load import old_payloads, rlen     # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "corpus", "rdb")


def write(data):
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--dir", required=True, help="the redis-server's --dir")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    r = redis.Redis(port=a.port)
    r.flushall()
    r.config_set("rdbcompression", "no")
    r.set("s", "hello"), r.set("i", "-300"), r.set("lz", "ab" * 40)
    r.rpush("l", "a", 1, 70000, "x" * 30)
    r.rpush("lb", *["v%d" % i for i in range(200)], "p" * 9000)
    r.sadd("si", 1, 2, -70000), r.sadd("ss", "a", "b")
    r.zadd("z", {"a": 1, "b": float("inf"), "c": 2.5})
    r.zadd("zb", {"m%d" % i: i for i in range(130)})
    r.hset("h", mapping={"f": "v", "n": 5000000000})
    r.hset("hb", mapping={"f%d" % i: i for i in range(520)})
    r.xadd("st", {"f": "v"})
    r.xgroup_create("st", "g", id="0")
    r.xreadgroup("g", "c", {"st": ">"})
    for k in r.keys():
        if k in (b"lb", b"zb", b"hb"):
            continue            # large: in the file seed only
        write(b"\x00" + r.dump(k)[:-10])
    r.config_set("rdbcompression", "yes")
    write(b"\x00" + r.dump("lz")[:-10])
    for _, p in old_payloads():
        write(b"\x00" + p[:-10])
    # cellgate's own: a GCRA state (encoding 3, KEY_REDIS_GCRA = 6).
    write(b"\x00\xc8\x03\x06" + rlen(8) + (12345).to_bytes(8, "little"))
    write(b"\x04\x0f" + r.dump("st")[1:-10])
    r.function_load("#!lua name=seedlib\nredis.register_function('f', "
                    "function() return 1 end)", replace=True)
    r.pexpire("s", 100000000)
    for keep in ((b"s", b"i", b"st"), (b"h", b"si", b"z", b"l")):
        for k in r.keys():
            if k not in keep:
                r.delete(k)
        r.save()
        data = open(os.path.join(a.dir, "dump.rdb"), "rb").read()
        data = data[:-8] + b"\0" * 8          # a zero checksum: unchecked
        write(b"\x01" + data[9:])
        write(b"\x05" + data[9:])


if __name__ == "__main__":
    main()

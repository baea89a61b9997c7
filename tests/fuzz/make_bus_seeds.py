#!/usr/bin/env python3
"""Write tests/fuzz/corpus/bus: fuzz_bus's seeds. The MEET and PING frames
a redis-server 7.0.15 sends on its cluster bus (with a hostname
extension), caught by listening as a fake node it is told to MEET; and
one frame of every other type built here at cluster.h's offsets, alone
and as one stream. Run from the repository root:

    redis-server --port 23998 --cluster-enabled yes --save '' \
        --cluster-config-file /tmp/seeds-nodes.conf --dir /tmp &
    python3 tests/fuzz/make_bus_seeds.py --port 23998
"""
import argparse
import hashlib
import os
import socket
import struct
import sys
import time

import redis

OUT = os.path.join(os.path.dirname(__file__), "corpus", "bus")
HDR = 2256


def write(data):
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def header(mtype, body, count=0, sender=b"a" * 40, mflags=0, exts=0):
    h = bytearray(HDR)
    h[0:4] = b"RCmb"
    struct.pack_into(">IHHHHQQQ", h, 4, HDR + len(body), 1, 7000, mtype,
                     count, 3, 2, 1000)
    h[40:80] = sender
    h[80] = 0xff                                 # slots 0-7
    h[2168:2177] = b"127.0.0.1"
    struct.pack_into(">H", h, 2214, exts)
    struct.pack_into(">HHHB", h, 2246, 0, 17000, 1, 0)
    h[2253] = mflags
    return bytes(h) + body


def gossip(name, port, flags):
    g = bytearray(104)
    g[0:40] = name
    struct.pack_into(">II", g, 40, 1700000000, 1700000001)
    g[48:57] = b"127.0.0.1"
    struct.pack_into(">HHHH", g, 94, port, port + 10000, flags, 0)
    return bytes(g)


def built():
    ext = struct.pack(">IHH", 16, 0, 0) + b"host\0\0\0\0"
    frames = [
        header(1, gossip(b"b" * 40, 7001, 1) + gossip(b"c" * 40, 7002, 6),
               count=2),
        header(0, ext, mflags=4, exts=1),
        header(3, b"d" * 40),
        header(4, struct.pack(">II", 2, 3) + b"chmsg"),
        header(10, struct.pack(">II", 1, 1) + b"xy"),
        header(5, b"", mflags=2),
        header(6, b""),
        header(7, struct.pack(">Q", 9) + b"e" * 40 + b"\x0f" * 2048),
        header(8, b""),
        header(9, struct.pack(">QIB", 1, 3, 7) + b"abc"),
    ]
    for f in frames:
        write(f)
    write(b"".join(frames))


def caught(port):
    """Frames a real redis-server sends to a node it MEETs."""
    r = redis.Redis(port=port)
    r.config_set("cluster-announce-hostname", "seed-host.example")
    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(1)
    fake = lsn.getsockname()[1]
    r.execute_command("CLUSTER", "MEET", "127.0.0.1", str(fake - 10000)
                      if fake > 10000 else str(fake), str(fake))
    lsn.settimeout(5)
    conn, _ = lsn.accept()
    conn.settimeout(5)
    data = b""
    deadline = time.time() + 5
    while len(data) < HDR and time.time() < deadline:
        data += conn.recv(65536)
    conn.close()
    lsn.close()
    totlen = struct.unpack(">I", data[4:8])[0]
    write(data[:totlen])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    built()
    if args.port:
        caught(args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())

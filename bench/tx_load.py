#!/usr/bin/python3
"""bench/tx_load.py PORT N: send N CL.THROTTLE requests to cellgate inside
MULTI/EXEC transactions of TX_SIZE (16) on random keys, the way
redis-benchmark -P 16 sends them outside one, and read every reply.
callgrind.sh runs it for its "inside MULTI/EXEC" figure."""
import random
import socket
import sys

TX_SIZE = 16
CONNS = 8
PIPELINE = 4            # transactions in flight per connection


def cmd(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def transaction(rng):
    body = [cmd("MULTI")]
    for _ in range(TX_SIZE):
        body.append(cmd("CL.THROTTLE", "key:%d" % rng.randrange(100000), 15, 30, 60))
    body.append(cmd("EXEC"))
    return b"".join(body)


class Reader:
    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise SystemExit("tx_load: connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self.line()
        if line[:1] == b"*":
            for _ in range(max(int(line[1:]), 0)):
                self.reply()
        elif line[:1] == b"-":
            raise SystemExit("tx_load: error reply %r" % line)


def main():
    port, n = int(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(1)
    txs = n // TX_SIZE
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(CONNS)]
    readers = [Reader(s) for s in socks]
    sent = 0
    while sent < txs:
        for s, r in zip(socks, readers):
            k = min(PIPELINE, txs - sent)
            if k <= 0:
                break
            s.sendall(b"".join(transaction(rng) for _ in range(k)))
            for _ in range(k * (TX_SIZE + 2)):      # +OK, QUEUED x16, EXEC
                r.reply()
            sent += k
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()

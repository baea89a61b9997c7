"""Writes the seed corpus of fuzz_grpc (tests/fuzz/corpus/grpc): request
messages of ShouldRateLimit and Health/Check (first byte 1 and 2),
HTTP/2 sessions as grpcio really sends them, recorded by a listener that
sends SETTINGS and never answers (first byte 0, the client preface taken
off), and connection-level scripts (first byte 3, the operations
fuzz_grpc.c describes): streams that stall or never end, limits reached on
one connection and on two, flow control that holds an answer back, and a
recorded session fed in pieces as time passes.

    protoc --python_out=/tmp/pb -I. protocol/rls.proto protocol/health.proto
    PYTHONPATH=/tmp/pb /usr/bin/python3 tests/fuzz/make_grpc_seeds.py
"""
import os
import socket
import threading

import grpc
from protocol import health_pb2, rls_pb2

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "grpc")
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
RLS = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"


def descriptor(*entries, hits=None, limit=None):
    d = rls_pb2.RateLimitDescriptor(entries=[
        rls_pb2.RateLimitDescriptor.Entry(key=k, value=v) for k, v in entries])
    if hits is not None:
        d.hits_addend.value = hits
    if limit is not None:
        d.limit.requests_per_unit, d.limit.unit = limit
    return d


REQUESTS = [
    rls_pb2.RateLimitRequest(domain="d", descriptors=[descriptor(("a", "1"))]),
    rls_pb2.RateLimitRequest(domain="d", hits_addend=3, descriptors=[
        descriptor(("b", "x1")), descriptor(("b", "x2"), hits=0)]),
    rls_pb2.RateLimitRequest(domain="d", descriptors=[
        descriptor(("c", "1"), ("d", "2")), descriptor(("e", "9")),
        descriptor(("u", "z"))]),
    rls_pb2.RateLimitRequest(domain="d", descriptors=[
        descriptor(("a", "1"), limit=(5, 2))]),
    rls_pb2.RateLimitRequest(domain="nope", descriptors=[descriptor(("a", "1"))]),
]


def record(send):
    """What a grpcio client writes for send(channel), preface taken off."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    got = []

    def accept():
        c, _ = srv.accept()
        # An empty SETTINGS and the ACK of the client's: then it sends.
        c.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
                  b"\x00\x00\x00\x04\x01\x00\x00\x00\x00")
        c.settimeout(0.5)
        data = b""
        try:
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        got.append(data)
        c.close()

    t = threading.Thread(target=accept)
    t.start()
    ch = grpc.insecure_channel("127.0.0.1:%d" % port)
    try:
        send(ch)
    except grpc.RpcError:
        pass
    t.join(5)
    ch.close()
    srv.close()
    data = got[0] if got else b""
    return data[len(PREFACE):] if data.startswith(PREFACE) else data


# ---- connection-level scripts (fuzz_grpc.c, "the connection level") ------

def op(code, k=0, end=False, health=False, watch=False):
    return bytes([code | k << 3 | end << 4 | health << 5 | watch << 6])


def raw(k, data):
    out = b""
    for i in range(0, len(data), 256):
        chunk = data[i:i + 256]
        out += op(0, k) + bytes([len(chunk) - 1]) + chunk
    return out


def frame(k, type_, flags, id_, payload):
    return op(1, k) + bytes([type_, flags, id_, len(payload)]) + payload


def headers(k, id_, end=False, health=False, watch=False):
    return op(2, k, end, health, watch) + bytes([id_])


def data(k, id_, size64, end=False):
    return op(3, k, end) + bytes([id_, size64])


def window(k, id_, inc):
    return op(4, k) + bytes([id_, inc])


def later(ms10):
    return op(5) + bytes([ms10])


def close(k):
    return op(6, k)


def control(k, kind, *args):
    return op(7, k) + bytes([kind] + list(args) + [0] * (5 - len(args)))


def script(conn_kib512, total_kib, timeout10, *ops):
    """conn_kib512: grpc-max-connection-memory in 512-byte steps - 1;
    total_kib: grpc-max-memory in KiB - 1 (255: none); timeout10: ms/10."""
    return b"\x03" + bytes([conn_kib512, total_kib, timeout10]) + b"".join(ops)


def connection_seeds(recorded):
    call = headers(0, 9) + data(0, 9, 1, end=True)          # a whole call
    return {
        # A stream that stalls after 1 KiB, reset at 300 ms; a call after.
        "conn-stall": script(31, 255, 30, headers(0, 0), data(0, 0, 16),
                             later(10), later(25), call),
        # Ten streams that never end on a connection of 4 KiB: most are
        # answered RESOURCE_EXHAUSTED; then it closes.
        "conn-many": script(7, 255, 0, *[headers(0, i) + data(0, i, 32)
                                         for i in range(10)], close(0)),
        # Two connections, 8 KiB in all: the second one's bodies close the
        # first, which holds the most.
        "conn-two": script(15, 7, 0, *[headers(0, i) + data(0, i, 32)
                                       for i in range(3)],
                           *[headers(1, i) + data(1, i, 32) for i in range(3)]),
        # No window for answers (SETTINGS_INITIAL_WINDOW_SIZE 0): a
        # Health/Check's answer waits, a PING, then its stream's window
        # opens; another waits past the timeout and is reset.
        "conn-window": script(31, 31, 20, control(0, 0, 4, 0, 0, 0, 0),
                              headers(0, 9, health=True), data(0, 9, 1, end=True),
                              control(0, 1, 1, 2, 3, 4, 5), window(0, 10, 1),
                              headers(0, 10, health=True),
                              data(0, 10, 1, end=True), later(30),
                              control(0, 2, 10, 0, 0, 0, 8)),
        # grpcio's own bytes, in pieces, time passing between them.
        "conn-recorded": script(31, 255, 50, *[raw(0, recorded[i:i + 64]) + later(1)
                                               for i in range(0, len(recorded), 64)]),
        # Health/Watch, a streaming call: one keeps its side open and goes
        # silent (reset at the 300 ms idle bound), one half-closes after
        # its request (not bounded so); with no window for answers their
        # pushes wait until 2 KiB reset one; then a client's RST_STREAM.
        "conn-watch": script(31, 255, 30, headers(0, 1, watch=True),
                             data(0, 1, 1), headers(0, 2, watch=True),
                             data(0, 2, 1, end=True), later(10), later(25),
                             control(0, 0, 4, 0, 0, 0, 0),
                             headers(0, 3, watch=True), data(0, 3, 1, end=True),
                             *[later(1) for _ in range(10)],
                             control(0, 2, 2, 0, 0, 0, 8), close(0)),
        # Any frame: a DATA frame with padding on a stream never opened.
        "conn-frame": script(3, 3, 1, frame(0, 0, 8, 1, b"\x04abcdefgh"),
                             headers(1, 0), frame(1, 9, 4, 1, b"")),
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {}
    for i, r in enumerate(REQUESTS):
        seeds["rls-%d" % i] = b"\x01" + r.SerializeToString()
    seeds["health"] = b"\x02" + health_pb2.HealthCheckRequest().SerializeToString()
    seeds["health-unknown"] = b"\x02" + health_pb2.HealthCheckRequest(
        service="x").SerializeToString()
    for i, r in enumerate(REQUESTS[:3]):
        seeds["session-rls-%d" % i] = b"\x00" + record(lambda ch, r=r: ch.unary_unary(
            RLS, request_serializer=rls_pb2.RateLimitRequest.SerializeToString)(
                r, timeout=0.3))
    seeds["session-health"] = b"\x00" + record(lambda ch: ch.unary_unary(
        "/grpc.health.v1.Health/Check")(b"", timeout=0.3))
    seeds.update(connection_seeds(seeds["session-rls-0"][1:]))
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("%d seeds in %s" % (len(seeds), OUT))


if __name__ == "__main__":
    main()

"""Writes the seed corpus of fuzz_grpc (tests/fuzz/corpus/grpc): request
messages of ShouldRateLimit and Health/Check (first byte 1 and 2), and
HTTP/2 sessions as grpcio really sends them, recorded by a listener that
sends SETTINGS and never answers (first byte 0, the client preface taken
off).

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
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("%d seeds in %s" % (len(seeds), OUT))


if __name__ == "__main__":
    main()

"""grpc-port: Envoy's rate limit service (ShouldRateLimit) and gRPC health
checking, called by two real gRPC stacks: Python's grpcio (Debian's
python3-grpcio, messages from protoc) and Node's @grpc/grpc-js with
@grpc/proto-loader (npm, locked). The limits are the examples of
envoyproxy/ratelimit's README, one domain per file; the fake clock pins
the time, so every limit_remaining and duration_until_reset is exact."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

import grpc
import pytest
import redis

import harness
from test_node_clients import CLIENTS, ensure_node_modules

PROTOCOL = os.path.join(harness.REPO, "protocol")
RLS = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
SEC = 1000000000
DAY = 86400
MAX_U32 = 4294967295

# The README's examples 1, 2, 3, 5, 6 and 7, as written there.
EXAMPLES = {
    "mongo_cps": """
domain: mongo_cps
descriptors:
  - key: database
    value: users
    rate_limit:
      unit: second
      requests_per_unit: 500

  - key: database
    value: default
    rate_limit:
      unit: second
      requests_per_unit: 500
""",
    "messaging": """
domain: messaging
descriptors:
  # Only allow 5 marketing messages a day
  - key: message_type
    value: marketing
    descriptors:
      - key: to_number
        rate_limit:
          unit: day
          requests_per_unit: 5

  # Only allow 100 messages a day to any unique phone number
  - key: to_number
    rate_limit:
      unit: day
      requests_per_unit: 100
""",
    "edge_proxy_per_ip": """
domain: edge_proxy_per_ip
descriptors:
  - key: remote_address
    rate_limit:
      unit: second
      requests_per_unit: 10

  # Black list IP
  - key: remote_address
    value: 50.0.0.5
    rate_limit:
      unit: second
      requests_per_unit: 0
""",
    "internal": """
domain: internal
descriptors:
  - key: ldap
    rate_limit:
      unlimited: true

  - key: azure
    rate_limit:
      unit: minute
      requests_per_unit: 100
""",
    "example6": """
domain: example6
descriptors:
  - key: service
    descriptors:
      - key: user
        value: user-a
        rate_limit:
          requests_per_unit: 10
          unit: second
        shadow_mode: true
      - key: user
        value: user-b
        rate_limit:
          requests_per_unit: 20
          unit: second
""",
    "example7": """
domain: example7
descriptors:
  - key: key_1
    value: value_1
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          name: specific_limit
          requests_per_unit: 5
          unit: second
  - key: key_2
    value: value_2
    descriptors:
      - key: user
        value: bkthomps
        rate_limit:
          replaces:
            - name: specific_limit
          requests_per_unit: 10
          unit: second
""",
    # quota_mode as envoyproxy/ratelimit's src/service/ratelimit_test.go
    # ("Multiple descriptors with mixed quota violations") has it: one
    # ordinary limit beside two in quota mode; and a limit to give back to.
    "quota": """
domain: quota
descriptors:
  - key: regular_key
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: quota_key
    quota_mode: true
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: another_quota
    quota_mode: true
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: in_flight
    rate_limit: {unit: second, requests_per_unit: 3}
""",
    # cellgate's calendar: a day of New York, not of UTC.
    "calendar": """
domain: calendar
descriptors:
  - key: tenant
    rate_limit: {unit: day, requests_per_unit: 3, calendar: America/New_York}
""",
}


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """rls_pb2 and health_pb2, generated from the repo's .proto files."""
    out = tmp_path_factory.mktemp("pb")
    subprocess.run(["protoc", "--python_out=%s" % out, "-I", harness.REPO,
                    "protocol/rls.proto", "protocol/health.proto"], check=True)
    sys.path.insert(0, str(out))
    from protocol import health_pb2, rls_pb2
    return rls_pb2, health_pb2


def limits_daemon(start_daemon, tmp_path, files, *args, **kw):
    """A daemon with the limits files {domain: text} (in tmp_path/limits)
    and grpc-port, its clock at 18:00 UTC."""
    limits = tmp_path / "limits"
    limits.mkdir()
    for name, text in files.items():
        (limits / ("%s.yaml" % name)).write_text(text)
    port = harness.free_port()
    d = start_daemon("--limits-file", str(limits), "--grpc-port", port, *args,
                     fakeclock=True, **kw)
    d.clock.set(d.clock.ns - d.clock.ns % (DAY * SEC) + DAY * SEC + 18 * 3600 * SEC)
    d.grpc_port = port
    return d


@pytest.fixture
def rls(start_daemon, tmp_path):
    return limits_daemon(start_daemon, tmp_path, EXAMPLES)


class Client:
    """ShouldRateLimit through grpcio, requests written as tuples."""

    def __init__(self, d, pb):
        self.rls_pb2, self.health_pb2 = pb
        self.channel = grpc.insecure_channel("127.0.0.1:%d" % d.grpc_port)
        self.call = self.channel.unary_unary(
            RLS, request_serializer=self.rls_pb2.RateLimitRequest.SerializeToString,
            response_deserializer=self.rls_pb2.RateLimitResponse.FromString)

    def request(self, domain, *descriptors, hits=0):
        m = self.rls_pb2
        ds = []
        for d in descriptors:
            hits_addend = None
            if isinstance(d, tuple) and isinstance(d[-1], int):
                d, hits_addend = d[:-1], d[-1]
            entries = [m.RateLimitDescriptor.Entry(key=k, value=v)
                       for k, v in (e.split("=", 1) for e in d)]
            desc = m.RateLimitDescriptor(entries=entries)
            if hits_addend is not None:
                # A negative number: that many given back (is_negative_hits).
                desc.hits_addend.value = abs(hits_addend)
                desc.is_negative_hits = hits_addend < 0
            ds.append(desc)
        return m.RateLimitRequest(domain=domain, descriptors=ds, hits_addend=hits)

    def check(self, domain, *descriptors, hits=0):
        """(overall, [(code, limit, remaining, reset seconds)...]). The
        deadline is well past any rls-forward-timeout a test sets (5 s at
        most), so a forwarded call on a loaded machine gets its answer,
        not DEADLINE_EXCEEDED: the tests check answers, not latency."""
        r = self.call(self.request(domain, *descriptors, hits=hits), timeout=30)
        return r.overall_code, [
            (s.code, s.current_limit.requests_per_unit if s.HasField("current_limit") else None,
             s.limit_remaining,
             s.duration_until_reset.seconds if s.HasField("duration_until_reset") else None)
            for s in r.statuses]

    def close(self):
        self.channel.close()


def send_until_closed(port, data, timeout):
    """Send data on a new connection; everything read until the server
    closes it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(data)
    got = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    s.close()
    return got


OK, OVER = 1, 2
SIX_HOURS = 6 * 3600          # from 18:00 UTC to the end of the day


def test_requests_per_unit_pass_then_over_limit_with_exact_figures(rls, pb):
    c = Client(rls, pb)
    marketing = ("message_type=marketing", "to_number=2061111111")
    number = ("to_number=2061111111",)
    got = [c.check("messaging", marketing, number) for _ in range(6)]
    assert got[:5] == [(OK, [(OK, 5, 4 - i, SIX_HOURS), (OK, 100, 99 - i, SIX_HOURS)])
                       for i in range(5)]
    # The marketing limit is spent: the whole request is over the limit
    # (the other descriptor still counts, as it does there).
    assert got[5] == (OVER, [(OVER, 5, 0, SIX_HOURS), (OK, 100, 94, SIX_HOURS)])
    # Another number has its own counters.
    assert c.check("messaging", ("message_type=marketing", "to_number=2062222222")) == \
        (OK, [(OK, 5, 4, SIX_HOURS)])
    # The window ends at midnight UTC, whatever the first request's time.
    rls.clock.advance(SIX_HOURS)
    assert c.check("messaging", marketing) == (OK, [(OK, 5, 4, DAY)])
    c.close()


def test_a_calendar_limit_resets_at_midnight_in_its_zone(rls, pb):
    # 18:00 UTC in January is 13:00 in New York: 11 hours to its midnight,
    # and the window starts again then, not at 00:00 UTC.
    c = Client(rls, pb)
    assert c.check("calendar", ("tenant=t1",)) == (OK, [(OK, 3, 2, 11 * 3600)])
    rls.clock.advance(11 * 3600 - 1)
    assert c.check("calendar", ("tenant=t1",)) == (OK, [(OK, 3, 1, 1)])
    rls.clock.advance(1)
    assert c.check("calendar", ("tenant=t1",)) == (OK, [(OK, 3, 2, DAY)])
    c.close()


def test_matching_order_blacklist_unknown_and_unlimited(rls, pb):
    c = Client(rls, pb)
    assert c.check("edge_proxy_per_ip", ("remote_address=50.0.0.1",)) == \
        (OK, [(OK, 10, 9, 1)])
    assert c.check("edge_proxy_per_ip", ("remote_address=50.0.0.5",)) == \
        (OVER, [(OVER, 0, 0, 1)])
    # No limit: OK, no current_limit, remaining 0; unlimited: MaxUint32.
    assert c.check("edge_proxy_per_ip", ("path=/",)) == (OK, [(OK, None, 0, None)])
    assert c.check("nosuch", ("a=b",)) == (OK, [(OK, None, 0, None)])
    assert c.check("internal", ("ldap=x",)) == (OK, [(OK, None, MAX_U32, None)])
    assert c.check("internal", ("azure=x",)) == (OK, [(OK, 100, 99, 60)])
    c.close()


def test_shadow_mode_answers_ok_and_keeps_counting(rls, pb):
    c = Client(rls, pb)
    a = [c.check("example6", ("service=auth-service", "user=user-a")) for _ in range(12)]
    assert a[:10] == [(OK, [(OK, 10, 9 - i, 1)]) for i in range(10)]
    assert a[10:] == [(OK, [(OK, 10, 0, 1)])] * 2
    b = [c.check("example6", ("service=auth-service", "user=user-b"))[0] for _ in range(21)]
    assert b == [OK] * 20 + [OVER]
    c.close()


def test_hits_addend_weighs_per_request_and_per_descriptor(rls, pb):
    c = Client(rls, pb)
    d = ("remote_address=10.1.1.1",)
    assert c.check("edge_proxy_per_ip", d, hits=4) == (OK, [(OK, 10, 6, 1)])
    assert c.check("edge_proxy_per_ip", d + (5,)) == (OK, [(OK, 10, 1, 1)])
    assert c.check("edge_proxy_per_ip", d + (0,)) == (OK, [(OK, 10, 1, 1)])   # a look
    # Too many at once: refused, and nothing taken (cellgate's rule).
    assert c.check("edge_proxy_per_ip", d, hits=2) == (OVER, [(OVER, 10, 1, 1)])
    assert c.check("edge_proxy_per_ip", d) == (OK, [(OK, 10, 0, 1)])
    c.close()


def test_replaces_drops_the_named_limit_of_the_same_request(rls, pb):
    c = Client(rls, pb)
    one = ("key_1=value_1", "user=bkthomps")
    two = ("key_2=value_2", "user=bkthomps")
    # Together, the 10/s limit replaces the 5/s one, which is not counted.
    for i in range(7):
        assert c.check("example7", one, two) == \
            (OK, [(OK, None, 0, None), (OK, 10, 9 - i, 1)])
    # Alone, the 5/s limit applies, untouched by the calls above.
    assert [c.check("example7", one)[1][0][:3] for _ in range(6)] == \
        [(OK, 5, 4), (OK, 5, 3), (OK, 5, 2), (OK, 5, 1), (OK, 5, 0), (OVER, 5, 0)]
    c.close()


def test_health_errors_and_a_stranger_do_not_disturb_others(rls, pb):
    rls_pb2, health_pb2 = pb
    ch = grpc.insecure_channel("127.0.0.1:%d" % rls.grpc_port)
    check = ch.unary_unary("/grpc.health.v1.Health/Check",
                           request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
                           response_deserializer=health_pb2.HealthCheckResponse.FromString)
    assert check(health_pb2.HealthCheckRequest(), timeout=5).status == 1          # SERVING
    assert check(health_pb2.HealthCheckRequest(
        service="envoy.service.ratelimit.v3.RateLimitService"), timeout=5).status == 1

    def error(path, payload):
        with pytest.raises(grpc.RpcError) as e:
            ch.unary_unary(path)(payload, timeout=5)
        return e.value.code(), e.value.details()

    assert error("/grpc.health.v1.Health/Check", b"\x0a\x03abc") == \
        (grpc.StatusCode.NOT_FOUND, "unknown service")
    assert error("/no.Such/Thing", b"") == \
        (grpc.StatusCode.UNIMPLEMENTED, "unknown service no.Such")
    assert error("/envoy.service.ratelimit.v3.RateLimitService/Other", b"") == \
        (grpc.StatusCode.UNIMPLEMENTED, "unknown method Other for service "
         "envoy.service.ratelimit.v3.RateLimitService")
    assert error(RLS, b"\xff\xff\xff") == \
        (grpc.StatusCode.INVALID_ARGUMENT, "the request is not a valid RateLimitRequest")
    assert error(RLS, b"\x0a" + b"\x80\x80\x80\x03" + b"x" * (6 << 20)) == \
        (grpc.StatusCode.RESOURCE_EXHAUSTED, "the message is larger than the server accepts")
    assert error(RLS, rls_pb2.RateLimitRequest(domain="x").SerializeToString()) == \
        (grpc.StatusCode.UNKNOWN, "rate limit descriptor list must not be empty")
    # A client that speaks HTTP/1.1 (no preface) is closed at once (all it
    # got is the server's SETTINGS frame), and the others carry on.
    data = send_until_closed(rls.grpc_port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 5)
    assert data[3:4] == b"\x04" and len(data) == 9 + int.from_bytes(data[:3], "big")
    c = Client(rls, pb)
    assert c.check("mongo_cps", ("database=users",)) == (OK, [(OK, 500, 499, 1)])
    assert rls.raw().command("PING") == b"+PONG\r\n"
    c.close()
    ch.close()


def test_grpc_js_and_proto_loader_get_the_same_answers(rls):
    ensure_node_modules()
    day = {"entries": [{"key": "message_type", "value": "marketing"},
                       {"key": "to_number", "value": "2063333333"}]}
    requests = [{"domain": "messaging", "descriptors": [day]}] * 6 + [
        {"domain": "internal", "descriptors": [{"entries": [{"key": "ldap", "value": "x"}]}]},
        {"domain": "messaging", "descriptors": [dict(day, hits_addend={"value": 0})]}]
    node = subprocess.run(["node", "grpc.mjs", str(rls.grpc_port), PROTOCOL,
                           json.dumps(requests)], cwd=CLIENTS, capture_output=True,
                          text=True, timeout=60)
    assert node.returncode == 0, node.stdout + node.stderr
    out = json.loads(node.stdout.strip().splitlines()[-1])
    got = [(a["overall_code"], [(s["code"], s["current_limit"]["requests_per_unit"]
                                 if s["current_limit"] else None, s["limit_remaining"],
                                 s["duration_until_reset"]["seconds"]
                                 if s["duration_until_reset"] else None)
                                for s in a["statuses"]]) for a in out["answers"]]
    assert got[:5] == [("OK", [("OK", 5, 4 - i, SIX_HOURS)]) for i in range(5)]
    assert got[5] == ("OVER_LIMIT", [("OVER_LIMIT", 5, 0, SIX_HOURS)])
    assert got[6] == ("OK", [("OK", None, MAX_U32, None)])
    # hits_addend 0 looks without counting: 5 of 5 used is still within.
    assert got[7] == ("OK", [("OK", 5, 0, SIX_HOURS)])
    assert out["health"] == {"status": "SERVING"}


def test_resp_and_grpc_callers_share_one_quota_exactly(rls, pb):
    """50 callers at once, half through RL.CHECK and half through
    ShouldRateLimit, on one descriptor of 100 a minute."""
    results = []
    lock = threading.Lock()

    def over_resp():
        c = redis.Redis(port=rls.port)
        got = [c.execute_command("RL.CHECK", "internal", "azure=shared")[0] == 0
               for _ in range(8)]
        with lock:
            results.extend(got)
        c.close()

    def over_grpc():
        c = Client(rls, pb)
        got = [c.check("internal", ("azure=shared",))[0] == OK for _ in range(8)]
        with lock:
            results.extend(got)
        c.close()

    threads = [threading.Thread(target=over_resp if i % 2 else over_grpc) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 400
    assert results.count(True) == 100
    assert rls.raw().command("RL.CHECK", "internal", "azure=shared", "PEEK").startswith(
        b"*5\r\n:1\r\n:100\r\n:0\r\n")


def test_statistics_per_descriptor_as_that_service_counts_them(start_daemon, tmp_path, pb):
    """total_hits, over_limit, near_limit, within_limit and shadow_mode on
    /metrics, with that service's stats keys (the matched path; request
    values only where detailed_metric asks), and at most 10,000 keys."""
    from test_metrics import free_port, samples, scrape
    limits = tmp_path / "limits"
    limits.mkdir()
    (limits / "example6.yaml").write_text(EXAMPLES["example6"])
    (limits / "detailed.yaml").write_text(
        "domain: detailed\ndescriptors:\n  - key: user\n    detailed_metric: true\n"
        "    rate_limit: {unit: hour, requests_per_unit: 1}\n")
    mport, gport = free_port(), harness.free_port()
    d = start_daemon("--limits-file", str(limits), "--grpc-port", gport,
                     "--metrics-port", mport, fakeclock=True)
    d.grpc_port = gport
    c = Client(d, pb)
    for _ in range(12):         # limit 10, shadow mode
        c.check("example6", ("service=auth-service", "user=user-a"))
    r = d.client()
    for _ in range(3):
        r.execute_command("RL.CHECK", "example6", "service=s", "user=user-b", "HITS", 9)
    r.execute_command("RL.CHECK", "example6", "service=s", "user=user-b", "PEEK")
    pipe = r.pipeline(transaction=False)
    for i in range(10050):
        pipe.execute_command("RL.CHECK", "detailed", "user=u%d" % i)
    pipe.execute()

    def metric(name, domain, key):
        # (prometheus_client's parser names a counter's sample <name>_total)
        return got.get(("ratelimit_service_rate_limit_%s_total" % name,
                        (("domain", domain), ("key", key))))
    deadline = time.monotonic() + 5
    while True:                              # the scrape follows the cron tick
        got = samples(scrape(mport)[2])
        if metric("total_hits", "detailed", "__other__") == 52 or \
                time.monotonic() > deadline:
            break
        time.sleep(0.05)
    a = "service.user_user-a"
    assert [metric(n, "example6", a) for n in
            ("total_hits", "within_limit", "near_limit", "over_limit", "shadow_mode")] == \
        [12, 10, 2, 2, 2]
    # 9, then 9 (2 past the near mark of 16), then 9 refused (18 + 9: 7 over
    # the limit, 2 more near it); the PEEK counts nothing.
    b = "service.user_user-b"
    assert [metric(n, "example6", b) for n in
            ("total_hits", "within_limit", "near_limit", "over_limit", "shadow_mode")] == \
        [27, 18, 4, 7, 0]
    # 10,000 keys: example6's 2, then 9,998 users; the rest in __other__.
    assert metric("total_hits", "detailed", "user_u0") == 1
    assert metric("total_hits", "detailed", "user_u9997") == 1
    assert metric("total_hits", "detailed", "user_u9998") is None
    assert metric("total_hits", "detailed", "__other__") == 52
    c.close()


def test_ratelimit_headers_of_the_descriptor_nearest_its_limit(start_daemon, tmp_path, pb):
    """grpc-response-headers yes: RateLimit-Limit, -Remaining and -Reset of
    the descriptor with the least left (the last one over its limit), as
    envoyproxy/ratelimit adds them; none without a limit, none when off."""
    limits = tmp_path / "limits"
    limits.mkdir()
    (limits / "messaging.yaml").write_text(EXAMPLES["messaging"])
    gport = harness.free_port()
    d = start_daemon("--limits-file", str(limits), "--grpc-port", gport,
                     "--grpc-response-headers", "yes", fakeclock=True)
    d.clock.set(d.clock.ns - d.clock.ns % (DAY * SEC) + DAY * SEC + 18 * 3600 * SEC)
    d.grpc_port = gport
    c = Client(d, pb)
    marketing = ("message_type=marketing", "to_number=1")
    number = ("to_number=1",)

    def headers(*descriptors):
        r = c.call(c.request("messaging", *descriptors), timeout=5)
        return [(h.key, h.value) for h in r.response_headers_to_add]
    want = lambda limit, left: [("RateLimit-Limit", str(limit)),       # noqa: E731
                                ("RateLimit-Remaining", str(left)),
                                ("RateLimit-Reset", str(SIX_HOURS))]
    assert headers(number, marketing) == want(5, 4)       # 99 left vs 4 left
    for _ in range(4):
        headers(marketing)
    assert headers(marketing, number) == want(5, 0)       # over its limit
    assert headers(("nomatch=x",)) == []
    assert d.raw().command("CONFIG", "SET", "grpc-response-headers", "no") == b"+OK\r\n"
    assert headers(number) == []
    c.close()


def test_maxclients_and_timeout_hold_for_grpc_connections(start_daemon, tmp_path, pb):
    limits = tmp_path / "limits"
    limits.mkdir()
    (limits / "mongo.yaml").write_text(EXAMPLES["mongo_cps"])
    gport = harness.free_port()
    d = start_daemon("--limits-file", str(limits), "--grpc-port", gport,
                     "--maxclients", 3, "--timeout", 1)
    d.grpc_port = gport
    resp = [d.raw() for _ in range(3)]
    for r in resp:
        assert r.command("PING") == b"+PONG\r\n"
    # maxclients counts RESP and gRPC connections together: a fourth is
    # closed at once, before HTTP/2 starts.
    s = socket.create_connection(("127.0.0.1", gport), timeout=5)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
    try:
        got = s.recv(64)
    except ConnectionResetError:       # closed with the preface unread
        got = b""
    assert got == b""
    s.close()
    for r in resp:
        r.close()

    def connected():
        try:
            return d.info("clients")["connected_clients"]
        except redis.ConnectionError:   # still full: the closes are on their way
            return None
    assert harness.wait_until(lambda: connected() in (0, 1), 5)
    # An idle gRPC connection goes after `timeout` seconds, as a RESP one.
    got = send_until_closed(gport, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                            b"\x00\x00\x00\x04\x00\x00\x00\x00\x00", 10)
    assert got[3:4] == b"\x04"                          # its SETTINGS, then the close
    c = Client(d, pb)
    assert c.check("mongo_cps", ("database=users",)) == (OK, [(OK, 500, 499, 1)])
    c.close()


def test_grpc_port_is_fixed_at_start(rls):
    # (In a cluster it serves too: test_rl_shards.py.)
    assert rls.raw().command("CONFIG", "SET", "grpc-port", "1") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'grpc-port') - "
        b"can't set immutable config\r\n")


# ---- the memory of gRPC connections ------------------------------------------
#
# Calls whose request streams never end hold their bodies; the limits
# bound them: grpc-max-connection-memory per connection (the call past it
# is answered RESOURCE_EXHAUSTED), grpc-max-memory for all of them (the
# connection holding the most is closed) and grpc-stream-timeout (a stream
# open that long is reset). INFO counts them apart from used_memory.

MB = 1 << 20
BODY = MB + 5                   # a 1 MiB message and its gRPC prefix
HEALTH = "/grpc.health.v1.Health/Check"
SERVING = b"\x08\x01"           # HealthCheckResponse{status: SERVING}
WAIT = 30                       # seconds any one wait may take (ASan, load)


def grpc_daemon(start_daemon, *args):
    """A daemon with grpc-port and the given options (no limits file:
    Health/Check answers, ShouldRateLimit would not be needed)."""
    gport = harness.free_port()
    d = start_daemon("--grpc-port", gport, "--loglevel", "verbose", *args)
    d.grpc_port = gport
    return d


class HeldCalls:
    """ShouldRateLimit calls on a connection of their own whose requests
    each send one message and then never end (until close()): grpcio
    writes the message as the server's flow control lets it, then waits."""

    def __init__(self, d):
        self.channel = grpc.insecure_channel(
            "127.0.0.1:%d" % d.grpc_port,
            options=[("grpc.use_local_subchannel_pool", 1)])    # its own
        grpc.channel_ready_future(self.channel).result(timeout=WAIT)
        self.stream = self.channel.stream_unary(RLS)
        self.health = self.channel.unary_unary(HEALTH)
        self.ended = threading.Event()
        self.calls = []

    def _request(self, size):
        yield b"x" * size
        self.ended.wait(120)            # bounded: no thread outlives a run

    def open(self, size=MB):
        f = self.stream.future(self._request(size))
        self.calls.append(f)
        return f

    def close(self):
        for f in self.calls:
            f.cancel()
        self.ended.set()
        self.channel.close()


def grpc_memory(d):
    """(everything gRPC connections hold, their request bodies' part)."""
    m = d.info("memory")
    return m["mem_clients_grpc"], m["mem_clients_grpc_requests"]


def grpc_clients(d, grpc_port):
    """CLIENT LIST's lines of grpc-port's connections, as dicts."""
    lines = d.client(decode_responses=True).execute_command("CLIENT", "LIST")
    out = []
    for line in lines.splitlines():
        f = dict(kv.split("=", 1) for kv in line.split(" "))
        if f["laddr"].endswith(":%d" % grpc_port):
            out.append(f)
    return out


def held_or_refused(d, call, held_before):
    """Wait until the server holds call's body (request memory grew by
    BODY) or answered it; True when held."""
    def settled():
        return call.done() or grpc_memory(d)[1] >= held_before + BODY
    assert harness.wait_until(settled, WAIT), grpc_memory(d)
    return not call.done()


def refusal(call):
    e = call.exception(timeout=WAIT)
    assert e is not None
    return e.code(), e.details()


@pytest.mark.allocator
def test_one_connection_is_held_to_grpc_max_connection_memory(start_daemon):
    """Calls that never end on one connection: each holds its 1 MiB body
    until the next would pass 4mb, and that one and the ones after are
    answered RESOURCE_EXHAUSTED at once; the connection's other calls go
    on, and what it held falls back when the calls go."""
    d = grpc_daemon(start_daemon, "--grpc-max-connection-memory", "4mb",
                    "--grpc-stream-timeout", "0")
    assert grpc_memory(d) == (0, 0)
    c = HeldCalls(d)
    idle = grpc_memory(d)[0]
    assert 0 < idle < 256 * 1024                # HTTP/2 state, no request
    held = []
    for _ in range(3):                          # 3 x BODY fit in 4 MiB
        held.append(c.open())
        assert held_or_refused(d, held[-1], (len(held) - 1) * BODY)
    total, requests = grpc_memory(d)
    assert requests == 3 * BODY and total > requests + idle / 2
    for _ in range(2):                          # a fourth would not fit
        f = c.open()
        assert not held_or_refused(d, f, 3 * BODY)
        assert refusal(f) == (grpc.StatusCode.RESOURCE_EXHAUSTED,
                              "the connection's requests hold more memory "
                              "than the server allows")
    assert grpc_memory(d)[1] == 3 * BODY        # the refused ones hold nothing
    assert d.info("stats")["grpc_connection_memory_limit_refused_calls"] == 2
    [line] = grpc_clients(d, d.grpc_port)
    assert int(line["qbuf"]) == 3 * BODY and int(line["qbuf-free"]) == 0
    assert int(line["tot-mem"]) >= grpc_memory(d)[0]
    assert line["flags"] == "N" and line["resp"] == "0"
    # The connection itself goes on: another call is answered.
    assert c.health(b"", timeout=WAIT) == SERVING
    assert not any(f.done() for f in held)
    # Cancelled, the held calls give their memory back; closed, the
    # connection the rest.
    for f in held:
        f.cancel()
    assert harness.wait_until(lambda: grpc_memory(d)[1] == 0, WAIT)
    assert grpc_memory(d)[0] < 256 * 1024
    c.close()
    assert harness.wait_until(lambda: grpc_memory(d) == (0, 0), WAIT)
    assert "calls answered RESOURCE_EXHAUSTED" in d.log()


@pytest.mark.allocator
def test_grpc_max_memory_closes_the_connection_holding_the_most(start_daemon):
    """Three connections against grpc-max-memory 4mb: when the third's
    request would pass it, the first (holding 2 MiB, the most) is closed,
    as Redis's maxmemory-clients evicts the biggest client; the others
    keep their calls."""
    d = grpc_daemon(start_daemon, "--grpc-max-memory", "4mb",
                    "--grpc-max-connection-memory", "3mb",
                    "--grpc-stream-timeout", "0")
    a, b, c = HeldCalls(d), HeldCalls(d), HeldCalls(d)
    first = [a.open(), a.open()]
    for i, f in enumerate(first):
        assert held_or_refused(d, f, i * BODY)
    second = b.open()
    assert held_or_refused(d, second, 2 * BODY)
    ids = {conn["id"] for conn in grpc_clients(d, d.grpc_port)}
    assert len(ids) == 3
    third = c.open()
    for f in first:                         # closed under them
        assert f.exception(timeout=WAIT).code() == grpc.StatusCode.UNAVAILABLE
    assert harness.wait_until(lambda: grpc_memory(d)[1] == 2 * BODY, WAIT)
    assert not second.done() and not third.done()
    assert d.info("stats")["grpc_memory_limit_disconnections"] == 1
    assert len(grpc_clients(d, d.grpc_port)) == 2
    assert "the most, when gRPC requests reached grpc-max-memory" in d.log()
    # Within the limit again, the others go on.
    assert b.health(b"", timeout=WAIT) == SERVING
    more = c.open()
    assert held_or_refused(d, more, 2 * BODY)
    assert grpc_memory(d)[1] == 3 * BODY
    for x in (a, b, c):
        x.close()
    assert harness.wait_until(lambda: grpc_memory(d) == (0, 0), WAIT)


@pytest.mark.allocator
def test_a_stream_open_past_grpc_stream_timeout_is_reset(start_daemon):
    """A request that never ends is reset (RST_STREAM CANCEL) once it has
    been open 300 ms, and what it held goes; the connection goes on."""
    d = grpc_daemon(start_daemon, "--grpc-stream-timeout", "300")
    c = HeldCalls(d)
    started = time.monotonic()
    f = c.open(64 * 1024)
    e = f.exception(timeout=WAIT)
    assert time.monotonic() - started >= 0.3      # never before its time
    assert e is not None and e.code() == grpc.StatusCode.CANCELLED, e
    assert d.info("stats")["grpc_stream_timeouts"] == 1
    assert grpc_memory(d)[1] == 0
    assert c.health(b"", timeout=WAIT) == SERVING
    assert d.info("stats")["grpc_stream_timeouts"] == 1    # a whole call is not
    c.close()
    assert harness.wait_until(lambda: grpc_memory(d) == (0, 0), WAIT)


@pytest.mark.allocator
def test_grpc_memory_is_not_used_memory_and_evicts_no_key(start_daemon):
    """maxmemory compares used_memory, which gRPC's memory is not part of:
    megabytes held by calls move neither used_memory nor a key, though
    INFO shows them in mem_clients_grpc."""
    d = grpc_daemon(start_daemon, "--maxmemory-policy", "volatile-ttl",
                    "--grpc-stream-timeout", "0")
    filler = d.client()
    p = filler.pipeline(transaction=False)
    for i in range(2000):
        p.execute_command("CL.THROTTLE", "k:%d" % i, 5, 1, 60)
    p.execute()
    filler.connection_pool.disconnect()     # its buffers go before the measure
    r = d.client()
    assert harness.wait_until(
        lambda: r.info("clients")["connected_clients"] == 1, WAIT)
    used = r.info("memory")["used_memory"]
    r.config_set("maxmemory", used + 64 * 1024)
    c = HeldCalls(d)
    held = [c.open() for _ in range(4)]
    assert harness.wait_until(lambda: grpc_memory(d)[1] == 4 * BODY, WAIT), \
        grpc_memory(d)
    mem = r.info("memory")
    assert mem["mem_clients_grpc"] > 4 * BODY
    assert abs(mem["used_memory"] - used) < 16 * 1024, (mem["used_memory"], used)
    for i in range(20):                         # room for keys still
        assert r.execute_command("CL.THROTTLE", "new:%d" % i, 5, 1, 60)[0] == 0
    assert r.info("stats")["evicted_keys"] == 0
    assert r.dbsize() == 2020
    assert not any(f.done() for f in held)
    c.close()


def test_grpc_memory_options_are_set_at_run_time_and_rewritten(start_daemon, tmp_path):
    """CONFIG SET applies to every connection's next read; GET and
    REWRITE see the values."""
    conf = tmp_path / "cellgate.conf"
    conf.write_text("grpc-max-memory 256mb\n")
    gport = harness.free_port()
    d = start_daemon("--grpc-port", gport, "--grpc-stream-timeout", "0",
                     config_file=str(conf))
    d.grpc_port = gport
    r = d.client(decode_responses=True)
    c = HeldCalls(d)
    held = c.open()
    assert held_or_refused(d, held, 0)
    assert r.config_set("grpc-max-connection-memory", "1mb")
    f = c.open()
    assert not held_or_refused(d, f, BODY)
    assert refusal(f)[0] == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert r.config_set("grpc-max-memory", "2mb")
    assert r.config_set("grpc-stream-timeout", "250")
    assert r.config_get("grpc-*memory") == {"grpc-max-memory": "2097152",
                                            "grpc-max-connection-memory": "1048576"}
    assert held.exception(timeout=WAIT).code() == grpc.StatusCode.CANCELLED
    assert r.execute_command("CONFIG", "REWRITE") == "OK"
    text = conf.read_text()
    assert "grpc-max-memory 2mb" in text and "grpc-stream-timeout 250" in text
    assert "grpc-max-connection-memory 1mb" in text
    c.close()


def test_connected_clients_counts_grpc_connections_as_client_list_shows_them(
        start_daemon):
    d = grpc_daemon(start_daemon)
    r = d.client()
    assert harness.wait_until(
        lambda: r.info("clients")["connected_clients"] == 1, WAIT)
    held = HeldCalls(d)
    try:
        assert harness.wait_until(
            lambda: r.info("clients")["connected_clients"] == 2, WAIT)
        listed = r.execute_command("CLIENT", "LIST").decode().strip().split("\n")
        assert len(listed) == 2
    finally:
        held.close()
    assert harness.wait_until(
        lambda: r.info("clients")["connected_clients"] == 1, WAIT)


# ---- quota_mode, shadow mode and negative hits --------------------------------

REGULAR, QUOTA, ANOTHER = ("regular_key=r",), ("quota_key=q",), ("another_quota=a",)


def test_quota_mode_refuses_only_for_an_ordinary_limit_or_all_quota_ones(rls, pb):
    """envoyproxy/ratelimit's rule: an over descriptor in quota mode keeps
    its OVER_LIMIT status but refuses only when every quota descriptor of
    the request is over, or when an ordinary one is."""
    c = Client(rls, pb)
    assert c.check("quota", REGULAR, QUOTA, ANOTHER) == \
        (OK, [(OK, 2, 1, 1), (OK, 1, 0, 1), (OK, 3, 2, 1)])
    assert c.check("quota", REGULAR, QUOTA, ANOTHER) == \
        (OK, [(OK, 2, 0, 1), (OVER, 1, 0, 1), (OK, 3, 1, 1)])
    assert c.check("quota", REGULAR, QUOTA, ANOTHER) == \
        (OVER, [(OVER, 2, 0, 1), (OVER, 1, 0, 1), (OK, 3, 0, 1)])
    assert c.check("quota", QUOTA, ANOTHER) == (OVER, [(OVER, 1, 0, 1), (OVER, 3, 0, 1)])
    # A descriptor with no limit is not in quota mode: q alone decides.
    assert c.check("quota", QUOTA, ("nothing=x",)) == \
        (OVER, [(OVER, 1, 0, 1), (OK, None, 0, None)])
    r = rls.client(decode_responses=True)
    assert r.execute_command("RL.CHECK", "quota", "quota_key=q") == [1, 1, 0, 1, 1]
    # rls-quota-mode: every descriptor is (an unlimited one is neither).
    assert r.config_set("rls-quota-mode", "yes")
    assert c.check("quota", REGULAR, ("nothing=x",)) == \
        (OK, [(OVER, 2, 0, 1), (OK, None, 0, None)])
    assert c.check("quota", REGULAR) == (OVER, [(OVER, 2, 0, 1)])
    assert c.check("internal", ("azure=z",), ("ldap=l",))[0] == OK
    c.close()


def test_global_shadow_mode_answers_ok_and_keeps_each_status(rls, pb, tmp_path):
    c = Client(rls, pb)
    r = rls.client(decode_responses=True)
    assert r.config_get("rls-shadow-mode") == {"rls-shadow-mode": "no"}
    assert [c.check("quota", REGULAR)[0] for _ in range(3)] == [OK, OK, OVER]
    assert r.config_set("rls-shadow-mode", "yes")
    assert r.config_get("rls-*-mode") == {"rls-shadow-mode": "yes",
                                          "rls-quota-mode": "no"}
    # The request passes; the descriptor still says it is over.
    assert c.check("quota", REGULAR) == (OK, [(OVER, 2, 0, 1)])
    # RL.CHECK's first integer is the request's answer: allowed, no wait.
    assert r.execute_command("RL.CHECK", "quota", "regular_key=r") == [0, 2, 0, -1, 1]
    assert r.execute_command("RL.CHECK", "quota", "regular_key=r", "STATUS")[0] == OVER
    assert r.config_set("rls-shadow-mode", "no")
    assert c.check("quota", REGULAR) == (OVER, [(OVER, 2, 0, 1)])
    c.close()


def test_negative_hits_give_units_back_floored_at_zero(rls, pb):
    c = Client(rls, pb)
    d = ("in_flight=x",)
    assert c.check("quota", d + (3,)) == (OK, [(OK, 3, 0, 1)])
    assert c.check("quota", d) == (OVER, [(OVER, 3, 0, 1)])
    assert c.check("quota", d + (-2,)) == (OK, [(OK, 3, 2, 1)])
    assert c.check("quota", d + (-10,)) == (OK, [(OK, 3, 3, 1)])     # floored
    assert c.check("quota", d + (3,)) == (OK, [(OK, 3, 0, 1)])
    # Giving back to a full counter is OK, whatever it would take.
    assert c.check("quota", d + (-1,)) == (OK, [(OK, 3, 1, 1)])
    r = rls.client(decode_responses=True)
    assert r.execute_command("RL.CHECK", "quota", "in_flight=x", "HITS", 1) == [0, 3, 0, -1, 1]
    assert r.execute_command("RL.CHECK", "quota", "in_flight=x", "HITS", 2,
                             "NEGATIVE") == [0, 3, 2, -1, 1]
    assert r.execute_command("RL.CHECK", "quota", "in_flight=x", "HITS", 9,
                             "NEGATIVE") == [0, 3, 3, -1, 1]
    c.close()


def test_quota_shadow_and_negative_hits_through_grpc_js(rls):
    ensure_node_modules()
    r = rls.client(decode_responses=True)

    def desc(entry, hits=None, negative=False):
        k, v = entry.split("=", 1)
        d = {"entries": [{"key": k, "value": v}]}
        if hits is not None:
            d["hits_addend"] = {"value": hits}
        if negative:
            d["is_negative_hits"] = True
        return d

    def run(requests):
        node = subprocess.run(["node", "grpc.mjs", str(rls.grpc_port), PROTOCOL,
                               json.dumps(requests)], cwd=CLIENTS, capture_output=True,
                              text=True, timeout=60)
        assert node.returncode == 0, node.stdout + node.stderr
        out = json.loads(node.stdout.strip().splitlines()[-1])
        return [(a["overall_code"], [(s["code"], s["limit_remaining"])
                                     for s in a["statuses"]]) for a in out["answers"]]

    three = [desc("regular_key=j"), desc("quota_key=j"), desc("another_quota=j")]
    got = run([{"domain": "quota", "descriptors": three}] * 3 + [
        {"domain": "quota", "descriptors": [desc("in_flight=j", 3)]},
        {"domain": "quota", "descriptors": [desc("in_flight=j", 2, True)]}])
    assert got == [
        ("OK", [("OK", 1), ("OK", 0), ("OK", 2)]),
        ("OK", [("OK", 0), ("OVER_LIMIT", 0), ("OK", 1)]),
        ("OVER_LIMIT", [("OVER_LIMIT", 0), ("OVER_LIMIT", 0), ("OK", 0)]),
        ("OK", [("OK", 0)]),
        ("OK", [("OK", 2)])]
    assert r.config_set("rls-shadow-mode", "yes")
    assert run([{"domain": "quota", "descriptors": [desc("regular_key=j")]}]) == \
        [("OK", [("OVER_LIMIT", 0)])]


def test_shadow_quota_modes_are_rewritten_and_counted(start_daemon, tmp_path, pb):
    from test_metrics import free_port, samples, scrape
    limits = tmp_path / "limits"
    limits.mkdir()
    (limits / "quota.yaml").write_text(EXAMPLES["quota"])
    conf = tmp_path / "cellgate.conf"
    conf.write_text("rls-shadow-mode no\n")
    mport, gport = free_port(), harness.free_port()
    d = start_daemon("--limits-file", str(limits), "--grpc-port", gport,
                     "--metrics-port", mport, config_file=str(conf), fakeclock=True)
    d.clock.set(d.clock.ns - d.clock.ns % SEC + SEC)
    d.grpc_port = gport
    r = d.client(decode_responses=True)
    assert r.config_set("rls-shadow-mode", "yes")
    assert r.config_set("rls-quota-mode", "yes")
    assert r.execute_command("CONFIG", "REWRITE") == "OK"
    text = conf.read_text()
    assert "rls-shadow-mode yes" in text and "rls-quota-mode yes" in text
    assert r.config_set("rls-quota-mode", "no")
    c = Client(d, pb)
    for _ in range(4):                       # 2 allowed, 2 let through
        c.check("quota", REGULAR)
    c.check("quota", ("in_flight=m", -5))
    r.execute_command("RL.CHECK", "quota", "in_flight=m", "HITS", 2, "NEGATIVE")
    c.close()
    def metric(name, labels=()):
        return got.get(("ratelimit_service_%s_total" % name, labels))
    key = (("domain", "quota"), ("key", "in_flight"))
    deadline = time.monotonic() + 5
    while True:                              # the scrape follows the cron tick
        got = samples(scrape(mport)[2])
        if metric("rate_limit_total_negative_hits", key) == 7 or \
                time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert metric("global_shadow_mode") == 2
    assert metric("rate_limit_total_negative_hits", key) == 7
    assert metric("rate_limit_total_hits", key) == 0
    assert metric("rate_limit_over_limit", (("domain", "quota"), ("key", "regular_key"))) == 2


# ---- dynamic_metadata (rls-response-dynamic-metadata) ----------------------
#
# The Structs below are what envoyproxy/ratelimit's ratelimitToMetadata()
# builds (src/service/ratelimit.go at f2fb157): "domain", "descriptors"
# (descriptorToStruct(): "entries" as "key=value", "limit" as Go's String()
# of the override, "hitsAddend" when the descriptor has one), "hitsAddend"
# when the request's is not 0, and "metadata", mergeMetadata() of the limits
# of the descriptors that passed (the first value of a key wins; Structs
# merge). The limits and requests are those of its test/service/
# ratelimit_test.go (TestMetadataReturnedForPassedDescriptors,
# TestMetadataReturnedForAllPassedDescriptors,
# TestOverlappingMetadataReturnsTheFirstValue: request
# [[regular=limit], [quota=limit]], hits_addend 1, limits 10 and 5 a
# minute, metadata name service_1 / service_2) and test/config/metadata.yaml
# (TestMetadata: metadata on a key-only second level, and a nested one).
METADATA = {
    "quota-domain": """
domain: quota-domain
descriptors:
  - key: regular
    value: limit
    rate_limit: {unit: minute, requests_per_unit: 10}
    metadata:
      name: service_1
  - key: quota
    value: limit
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 5}
    metadata:
      name: service_2
  - key: quota
    value: other
    quota_mode: true
    rate_limit: {unit: minute, requests_per_unit: 5}
    metadata:
      some_other_name: service_2
  - key: free
    rate_limit: {unlimited: true}
    metadata:
      name: unlimited
""",
    "test-domain": """
domain: test-domain
descriptors:
  # Top level key/value with no default rate limit.
  - key: key1
    value: value1
    descriptors:
      # 2nd level key only with default rate limit.
      - key: subkey1
        rate_limit:
          unit: second
          requests_per_unit: 5
        metadata:
          name: service_1

      # 2nd level key/value with limit. Specific override at 2nd level.
      - key: subkey1
        value: subvalue1
        rate_limit:
          unit: second
          requests_per_unit: 10

  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20
    metadata:
      service_with_quota:
        name: service_2
  # Every kind of YAML scalar, as yaml.v2 reads it into a Go value and
  # structpb.NewValue turns that into a Value.
  - key: key3
    rate_limit: {unit: minute, requests_per_unit: 20}
    metadata:
      service_with_quota: {name: not_this_one, tier: gold}
      count: 3
      ratio: 0.25
      big: 1_000_000
      hex: 0x1F
      octal: 0o17
      old_octal: 017
      enabled: yes
      disabled: Off
      nothing: ~
      quoted: "123"
      date: 2024-01-01
      words: [a, 1, true, null, {x: y}]     # y: yaml.v2's YAML 1.1 boolean
      empty: {}
""",
}


@pytest.fixture
def meta_daemon(start_daemon, tmp_path):
    return limits_daemon(start_daemon, tmp_path, METADATA,
                         "--rls-response-dynamic-metadata", "yes")


def as_google_struct(r):
    """The answer's field 6 read as google.protobuf.Struct itself (the
    bytes of rls.proto's copy must be struct.proto's), as a dict."""
    from google.protobuf import json_format, struct_pb2
    if not r.HasField("dynamic_metadata"):
        return None
    s = struct_pb2.Struct.FromString(r.dynamic_metadata.SerializeToString())
    return json_format.MessageToDict(s)


def entries(*descriptors):
    return [{"entries": list(d)} for d in descriptors]


def test_dynamic_metadata_as_ratelimit_builds_it(meta_daemon, pb):
    c = Client(meta_daemon, pb)
    r = meta_daemon.client(decode_responses=True)

    def call(domain, *descriptors, hits=0):
        resp = c.call(c.request(domain, *descriptors, hits=hits), timeout=5)
        return resp.overall_code, as_google_struct(resp)
    regular, quota = ("regular=limit",), ("quota=limit",)
    # TestOverlappingMetadataReturnsTheFirstValue: both pass, the first
    # descriptor's name wins.
    assert call("quota-domain", regular, quota, hits=1) == (OK, {
        "domain": "quota-domain", "descriptors": entries(regular, quota),
        "hitsAddend": 1.0, "metadata": {"name": "service_1"}})
    # TestMetadataReturnedForAllPassedDescriptors: both pass, both names.
    assert call("quota-domain", regular, ("quota=other",), hits=1) == (OK, {
        "domain": "quota-domain", "descriptors": entries(regular, ("quota=other",)),
        "hitsAddend": 1.0,
        "metadata": {"name": "service_1", "some_other_name": "service_2"}})
    # TestMetadataReturnedForPassedDescriptors (QUOTA_MODE): the quota
    # descriptor is over, the request is OK, only the first one's metadata.
    call("quota-domain", quota, hits=4)          # 1 + 4: all 5 used
    assert r.config_set("rls-quota-mode", "yes")
    assert call("quota-domain", regular, quota, hits=1) == (OK, {
        "domain": "quota-domain", "descriptors": entries(regular, quota),
        "hitsAddend": 1.0, "metadata": {"name": "service_1"}})
    # No descriptor passed (hits_addend 0: no "hitsAddend"; an unlimited
    # one passes but brings nothing, as isUnlimited keeps it out there).
    assert call("quota-domain", quota, ("free=x",)) == (OVER, {
        "domain": "quota-domain", "descriptors": entries(quota, ("free=x",))})
    assert r.config_set("rls-quota-mode", "no")
    c.close()


def test_dynamic_metadata_of_nested_and_typed_metadata(meta_daemon, pb):
    """test/config/metadata.yaml's limits; the YAML scalars as yaml.v2
    resolves them; a descriptor's override and hits_addend in its Struct."""
    c = Client(meta_daemon, pb)
    m = c.rls_pb2
    # TestMetadata: key1_value1.subkey1 (any value) has name service_1; the
    # subvalue1 limit beside it has none.
    got = as_google_struct(c.call(c.request(
        "test-domain", ("key1=value1", "subkey1=something"),
        ("key1=value1", "subkey1=subvalue1")), timeout=5))
    assert got["metadata"] == {"name": "service_1"}
    # key2's nested Struct merges with key3's: service_with_quota's name
    # stays service_2 (the first), key3's tier is added.
    req = c.request("test-domain", ("key2=something",), ("key3=x",))
    req.descriptors[0].limit.requests_per_unit = 7
    req.descriptors[0].limit.unit = m.RATE_LIMIT_UNIT_MINUTE
    req.descriptors[1].hits_addend.value = 0
    got = as_google_struct(c.call(req, timeout=5))
    assert got == {
        "domain": "test-domain",
        "descriptors": [
            # Go's fmt of the override: its set fields, prototext names.
            {"entries": ["key2=something"], "limit": "requests_per_unit:7 unit:MINUTE"},
            {"entries": ["key3=x"], "hitsAddend": 0.0}],
        # key2's limit is Envoy's override here: no metadata of the file
        # (that service's override is a RateLimit without Metadata).
        "metadata": {
            "service_with_quota": {"name": "not_this_one", "tier": "gold"},
            "count": 3.0, "ratio": 0.25, "big": 1000000.0, "hex": 31.0,
            "octal": 15.0, "old_octal": 15.0, "enabled": True, "disabled": False,
            "nothing": None, "quoted": "123", "date": "2024-01-01",
            "words": ["a", 1.0, True, None, {"x": True}], "empty": {}}}
    req = c.request("test-domain", ("key2=something",), ("key3=x",))
    got = as_google_struct(c.call(req, timeout=5))
    assert got["metadata"]["service_with_quota"] == {"name": "service_2", "tier": "gold"}
    assert got["descriptors"] == entries(("key2=something",), ("key3=x",))
    # An override of only a unit, one of an unknown unit, and an empty one
    # (Go prints no field: "").
    req = c.request("test-domain", ("a=b",), ("c=d",), ("e=f",))
    req.descriptors[0].limit.unit = m.RATE_LIMIT_UNIT_HOUR
    req.descriptors[1].limit.requests_per_unit = 3
    req.descriptors[1].limit.unit = 9
    req.descriptors[2].limit.SetInParent()
    got = as_google_struct(c.call(req, timeout=5))
    assert [d["limit"] for d in got["descriptors"]] == \
        ["unit:HOUR", "requests_per_unit:3 unit:9", ""]
    assert "metadata" not in got
    c.close()


def test_dynamic_metadata_is_off_by_default_and_set_at_run_time(start_daemon, tmp_path, pb):
    conf = tmp_path / "cellgate.conf"
    conf.write_text("rls-quota-mode no\n")
    d = limits_daemon(start_daemon, tmp_path, {"quota-domain": METADATA["quota-domain"]},
                      config_file=str(conf))
    c = Client(d, pb)
    r = d.client(decode_responses=True)
    resp = c.call(c.request("quota-domain", ("regular=limit",)), timeout=5)
    assert not resp.HasField("dynamic_metadata")
    assert r.config_get("rls-response-dynamic-metadata") == \
        {"rls-response-dynamic-metadata": "no"}
    assert r.config_set("rls-response-dynamic-metadata", "yes")
    resp = c.call(c.request("quota-domain", ("regular=limit",)), timeout=5)
    assert as_google_struct(resp)["metadata"] == {"name": "service_1"}
    assert r.execute_command("CONFIG", "REWRITE") == "OK"
    assert "rls-response-dynamic-metadata yes" in conf.read_text()
    with pytest.raises(redis.ResponseError):
        r.config_set("rls-response-dynamic-metadata", "maybe")
    # A limits file whose metadata is not a mapping is refused.
    (tmp_path / "limits" / "bad.yaml").write_text(
        "domain: bad\ndescriptors:\n  - key: k\n    metadata: [1, 2]\n")
    with pytest.raises(redis.ResponseError, match="bad.yaml:4: metadata must be a mapping"):
        r.execute_command("CONFIG", "RELOAD-LIMITS")
    c.close()


def grpc_js_struct(s):
    """@grpc/proto-loader's Struct (oneofs: the set field named by kind)
    as a plain value, the dict MessageToDict makes."""
    def value(v):
        kind = v["kind"]
        if kind == "struct_value":
            return grpc_js_struct(v[kind])
        if kind == "list_value":
            return [value(x) for x in v[kind]["values"]]
        if kind == "null_value":
            return None
        return v[kind]
    return {k: value(v) for k, v in s["fields"].items()}


def test_dynamic_metadata_through_grpc_js(meta_daemon):
    ensure_node_modules()
    regular = {"entries": [{"key": "regular", "value": "limit"}]}
    quota = {"entries": [{"key": "quota", "value": "other"}],
             "limit": {"requests_per_unit": 10, "unit": "RATE_LIMIT_UNIT_SECOND"}}
    node = subprocess.run(["node", "grpc.mjs", str(meta_daemon.grpc_port), PROTOCOL,
                           json.dumps([{"domain": "quota-domain", "hits_addend": 2,
                                        "descriptors": [regular, quota]},
                                       {"domain": "test-domain", "descriptors": [
                                           {"entries": [{"key": "key3", "value": "v"}],
                                            "hits_addend": {"value": 4}}]}])],
                          cwd=CLIENTS, capture_output=True, text=True, timeout=60)
    assert node.returncode == 0, node.stdout + node.stderr
    out = json.loads(node.stdout.strip().splitlines()[-1])
    first, second = (grpc_js_struct(a["dynamic_metadata"]) for a in out["answers"])
    # quota=other's limit is Envoy's override: no metadata of the file.
    assert first == {"domain": "quota-domain", "hitsAddend": 2,
                     "descriptors": [{"entries": ["regular=limit"]},
                                     {"entries": ["quota=other"],
                                      "limit": "requests_per_unit:10 unit:SECOND"}],
                     "metadata": {"name": "service_1"}}
    assert second["descriptors"] == [{"entries": ["key3=v"], "hitsAddend": 4}]
    assert second["metadata"]["words"] == ["a", 1, True, None, {"x": True}]
    assert second["metadata"]["service_with_quota"] == {"name": "not_this_one", "tier": "gold"}

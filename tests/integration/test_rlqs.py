"""Envoy's Rate Limit Quota Service on grpc-port (server/envoy/rlqs.c):
StreamRateLimitQuotas called by Python's grpcio through the project's
protocol/rlqs.proto, itself checked field by field against Envoy v1.39.0.
Simulated Envoys behave as the rate_limit_quota filter's documentation
says (api/envoy/extensions/filters/http/rate_limit_quota/v3/
rate_limit_quota.proto and rlqs.proto at that release): they report each
bucket every reporting_interval (allowed, denied, time elapsed), allow
everything while a bucket has no assignment (no_assignment_behavior's
default) or once it expired (the expired behaviour falls back to it),
and enforce the token bucket or blanket rule they were last sent, a new
bucket starting full (TokenBucket: "the number of tokens that the bucket
initially contains"), the same assignment again only extending its time to
live. The fake clock runs 60 simulated seconds in a few real ones."""
import os
import queue
import subprocess
import sys
import threading
import time

import grpc
import pytest

import harness
from test_metrics import samples, scrape, wait_samples

PATH = "/envoy.service.rate_limit_quota.v3.RateLimitQuotaService/StreamRateLimitQuotas"
SEC = 1000000000
WAIT = 10

LIMITS = """
domain: quota
descriptors:
  - key: service
    value: api
    rate_limit: {unit: second, requests_per_unit: 100}
  - key: service
    value: spare
    rate_limit: {unit: second, requests_per_unit: 100}
  - key: service
    value: gone
    rate_limit: {unit: second, requests_per_unit: 100}
  - key: path
    value: /login
    descriptors:
      - key: user
        rate_limit: {unit: minute, requests_per_unit: 6}
  - key: tier
    value: free
    rate_limit: {unlimited: true}
  - key: tier
    value: trial
    shadow_mode: true
    rate_limit: {unit: second, requests_per_unit: 5}
  - key: tier
    value: blocked
    rate_limit: {unit: second, requests_per_unit: 0}
"""

# ---- the proto against Envoy's ------------------------------------------

# (message, field, number, type, label), transcribed from Envoy v1.39.0's
# generated Go (go-control-plane tag envoy/v1.39.0, commit ca8ce173:
# envoy/service/rate_limit_quota/v3/rlqs.pb.go, envoy/type/v3/
# ratelimit_strategy.pb.go, token_bucket.pb.go, ratelimit_unit.pb.go, whose
# struct tags read `protobuf:"<wire>,<number>,<opt|rep>,name=<field>"`),
# with google.protobuf's Duration and UInt32Value. Types as protoc's
# FieldDescriptorProto names them; a message or enum type by its name.
ENVOY_V1_39_0 = [
    ("RateLimitQuotaUsageReports", "domain", 1, "string", "optional"),
    ("RateLimitQuotaUsageReports", "bucket_quota_usages", 2,
     "RateLimitQuotaUsageReports.BucketQuotaUsage", "repeated"),
    ("RateLimitQuotaUsageReports.BucketQuotaUsage", "bucket_id", 1, "BucketId", "optional"),
    ("RateLimitQuotaUsageReports.BucketQuotaUsage", "time_elapsed", 2, "Duration", "optional"),
    ("RateLimitQuotaUsageReports.BucketQuotaUsage", "num_requests_allowed", 3, "uint64", "optional"),
    ("RateLimitQuotaUsageReports.BucketQuotaUsage", "num_requests_denied", 4, "uint64", "optional"),
    ("RateLimitQuotaResponse", "bucket_action", 1,
     "RateLimitQuotaResponse.BucketAction", "repeated"),
    ("RateLimitQuotaResponse.BucketAction", "bucket_id", 1, "BucketId", "optional"),
    ("RateLimitQuotaResponse.BucketAction", "quota_assignment_action", 2,
     "RateLimitQuotaResponse.BucketAction.QuotaAssignmentAction", "optional"),
    ("RateLimitQuotaResponse.BucketAction", "abandon_action", 3,
     "RateLimitQuotaResponse.BucketAction.AbandonAction", "optional"),
    ("RateLimitQuotaResponse.BucketAction.QuotaAssignmentAction", "assignment_time_to_live", 2,
     "Duration", "optional"),
    ("RateLimitQuotaResponse.BucketAction.QuotaAssignmentAction", "rate_limit_strategy", 3,
     "RateLimitStrategy", "optional"),
    ("BucketId", "bucket", 1, "BucketId.BucketEntry", "repeated"),     # map<string, string>
    ("BucketId.BucketEntry", "key", 1, "string", "optional"),
    ("BucketId.BucketEntry", "value", 2, "string", "optional"),
    ("RateLimitStrategy", "blanket_rule", 1, "RateLimitStrategy.BlanketRule", "optional"),
    ("RateLimitStrategy", "requests_per_time_unit", 2,
     "RateLimitStrategy.RequestsPerTimeUnit", "optional"),
    ("RateLimitStrategy", "token_bucket", 3, "TokenBucket", "optional"),
    ("RateLimitStrategy.RequestsPerTimeUnit", "requests_per_time_unit", 1, "uint64", "optional"),
    ("RateLimitStrategy.RequestsPerTimeUnit", "time_unit", 2, "RateLimitUnit", "optional"),
    ("TokenBucket", "max_tokens", 1, "uint32", "optional"),
    ("TokenBucket", "tokens_per_fill", 2, "UInt32Value", "optional"),
    ("TokenBucket", "fill_interval", 3, "Duration", "optional"),
    ("Duration", "seconds", 1, "int64", "optional"),
    ("Duration", "nanos", 2, "int32", "optional"),
    ("UInt32Value", "value", 1, "uint32", "optional"),
]
# The oneofs and enums of that release.
ENVOY_ONEOFS = {
    "RateLimitQuotaResponse.BucketAction": ("bucket_action",
                                            ["quota_assignment_action", "abandon_action"]),
    "RateLimitStrategy": ("strategy", ["blanket_rule", "requests_per_time_unit", "token_bucket"]),
}
ENVOY_ENUMS = {
    "RateLimitStrategy.BlanketRule": {"ALLOW_ALL": 0, "DENY_ALL": 1},
    "RateLimitUnit": {"UNKNOWN": 0, "SECOND": 1, "MINUTE": 2, "HOUR": 3, "DAY": 4,
                      "MONTH": 5, "YEAR": 6},
}


@pytest.fixture(scope="module")
def pb(tmp_path_factory):
    """rlqs_pb2, generated from the repo's protocol/rlqs.proto."""
    out = tmp_path_factory.mktemp("pb")
    subprocess.run(["protoc", "--python_out=%s" % out, "-I", harness.REPO,
                    "protocol/rlqs.proto"], check=True)
    sys.path.insert(0, str(out))
    from protocol import rlqs_pb2
    return rlqs_pb2


def walk(desc, prefix=""):
    """Every message of a file descriptor, nested ones by dotted name."""
    for m in desc.message_types_by_name.values() if prefix == "" else desc.nested_types:
        name = prefix + m.name
        yield name, m
        yield from walk(m, name + ".")


def test_proto_matches_envoy_v1_39_0(pb):
    from google.protobuf.descriptor import FieldDescriptor as F
    d = pb.DESCRIPTOR
    assert d.package == "envoy.service.rate_limit_quota.v3"
    svc = d.services_by_name["RateLimitQuotaService"]
    m = svc.methods_by_name["StreamRateLimitQuotas"]
    assert "/%s/%s" % (svc.full_name, m.name) == PATH
    assert m.input_type.name == "RateLimitQuotaUsageReports"
    assert m.output_type.name == "RateLimitQuotaResponse"
    assert m.client_streaming and m.server_streaming
    types = {v: k[5:].lower() for k, v in vars(F).items() if k.startswith("TYPE_")}
    labels = {F.LABEL_OPTIONAL: "optional", F.LABEL_REPEATED: "repeated"}
    pkg = d.package + "."
    got = []
    for name, msg in walk(d):
        for f in msg.fields:
            t = types[f.type]
            if f.type in (F.TYPE_MESSAGE, F.TYPE_ENUM):
                t = (f.message_type or f.enum_type).full_name[len(pkg):]
            got.append((name, f.name, f.number, t, labels[f.label]))
    assert sorted(got) == sorted(ENVOY_V1_39_0)
    assert d.message_types_by_name["BucketId"].fields_by_name["bucket"].message_type \
        .GetOptions().map_entry
    for name, msg in walk(d):
        for o in msg.oneofs:
            assert ENVOY_ONEOFS[name] == (o.name, [f.name for f in o.fields])
    assert {n for n, msg in walk(d) if msg.oneofs} == set(ENVOY_ONEOFS)
    enums = {"RateLimitUnit": d.enum_types_by_name["RateLimitUnit"],
             "RateLimitStrategy.BlanketRule":
             d.message_types_by_name["RateLimitStrategy"].enum_types_by_name["BlanketRule"]}
    for name, e in enums.items():
        assert {v.name: v.number for v in e.values} == ENVOY_ENUMS[name]


# ---- a daemon and simulated Envoys -----------------------------------------

@pytest.fixture
def rlqs(start_daemon, tmp_path):
    """A daemon with LIMITS, grpc-port and /metrics on a fake clock at a
    whole second."""
    limits = tmp_path / "limits"
    limits.mkdir()
    (limits / "quota.yaml").write_text(LIMITS)
    port, mport = harness.free_port(), harness.free_port()
    d = start_daemon("--limits-file", str(limits), "--grpc-port", port,
                     "--metrics-port", mport, fakeclock=True)
    d.clock.fresh_epoch()
    d.grpc_port, d.metrics_port, d.limits = port, mport, limits
    d.channel = grpc.insecure_channel("127.0.0.1:%d" % port)
    yield d
    d.channel.close()


END = object()


class Stream:
    """One StreamRateLimitQuotas call: reports go in through a queue, the
    answers come out through another, read by a thread (every wait is
    bounded)."""

    def __init__(self, d, pb):
        self.pb = pb
        self.out = queue.Queue()
        self.answers = queue.Queue()
        call = d.channel.stream_stream(
            PATH, request_serializer=lambda m: m if isinstance(m, bytes) else m.SerializeToString(),
            response_deserializer=pb.RateLimitQuotaResponse.FromString)
        self.call = call(self._requests())
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _requests(self):
        while True:
            m = self.out.get(timeout=120)   # bounded: no thread outlives a run
            if m is END:
                return
            yield m

    def _read(self):
        try:
            for m in self.call:
                self.answers.put(m)
        except grpc.RpcError:
            pass
        self.answers.put(END)

    def report(self, domain, *usages):
        """usages: (bucket dict, allowed, denied, elapsed seconds)."""
        u = [self.pb.RateLimitQuotaUsageReports.BucketQuotaUsage(
            bucket_id=self.pb.BucketId(bucket=b), num_requests_allowed=a,
            num_requests_denied=dn,
            time_elapsed=self.pb.Duration(seconds=int(e), nanos=int(round(e % 1 * 1e9))))
            for b, a, dn, e in usages]
        self.out.put(self.pb.RateLimitQuotaUsageReports(domain=domain, bucket_quota_usages=u))

    def send_raw(self, data):
        self.out.put(data)

    def next(self, timeout=WAIT):
        return self.answers.get(timeout=timeout)

    def drain(self):
        got = []
        while True:
            try:
                got.append(self.answers.get_nowait())
            except queue.Empty:
                return got

    def status(self):
        while self.next() is not END:
            pass
        return self.call.code(), self.call.details()

    def close(self):
        self.out.put(END)
        self.call.cancel()
        self.thread.join(WAIT)


def actions(resp):
    """{frozenset(bucket items): ('token', max, per_fill, fill_s, ttl_s) |
    ('allow'|'deny', ttl_s) | ('abandon',)} of one response."""
    out = {}
    for a in resp.bucket_action:
        key = frozenset(a.bucket_id.bucket.items())
        if a.HasField("abandon_action"):
            out[key] = ("abandon",)
            continue
        q = a.quota_assignment_action
        ttl = q.assignment_time_to_live.seconds + q.assignment_time_to_live.nanos / 1e9
        s = q.rate_limit_strategy
        if s.HasField("token_bucket"):
            tb = s.token_bucket
            out[key] = ("token", tb.max_tokens, tb.tokens_per_fill.value,
                        tb.fill_interval.seconds + tb.fill_interval.nanos / 1e9, ttl)
        else:
            out[key] = ("deny" if s.blanket_rule == 1 else "allow", ttl)
    return out


def bucket(**kw):
    return frozenset(kw.items())


def test_each_kind_of_bucket_gets_its_assignment(rlqs, pb):
    s = Stream(rlqs, pb)
    s.report("quota", ({"service": "api"}, 0, 0, 1), ({"tier": "free"}, 5, 0, 1),
             ({"tier": "blocked"}, 0, 3, 1), ({"tier": "trial"}, 2, 0, 1),
             ({"name": "nothing", "env": "prod"}, 1, 0, 1))
    got = actions(s.next())
    # The whole pool to the one Envoy: 100 / 1.1 * 0.98 = 89.09 a second,
    # a bucket of a tenth of it filled back at that rate.
    kind, tokens, per_fill, fill, ttl = got[bucket(service="api")]
    assert (kind, tokens, per_fill, ttl) == ("token", 8, 8, 4.0)
    assert tokens / fill == pytest.approx(100 / 1.1 * 0.98, rel=1e-6)
    assert got[bucket(tier="free")] == ("allow", 4.0)          # unlimited
    assert got[bucket(tier="blocked")] == ("deny", 4.0)        # 0 a second
    assert got[bucket(tier="trial")] == ("allow", 4.0)         # shadow_mode
    assert got[bucket(name="nothing", env="prod")] == ("allow", 4.0)   # unknown
    s.close()

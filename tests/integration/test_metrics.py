"""The Prometheus endpoint: parsed with prometheus_client's own text
parser (Debian's python3-prometheus-client)."""
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

import harness


def free_port():
    return harness.free_port()


def scrape(port, path="/metrics"):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as resp:
        return resp.status, resp.headers.get("Content-Type"), resp.read().decode()


def samples(text):
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_parse_and_count_requests_and_decisions(start_daemon):
    mport = free_port()
    d = start_daemon("--metrics-port", str(mport))
    r = d.client()
    for _ in range(3):
        r.execute_command("CL.THROTTLE", "m", 1, 1, 60)
    r.execute_command("RL.SLIDING", "s", 5, 60)
    try:
        r.execute_command("CL.THROTTLE", "m", 1, 0, 1)
    except Exception:
        pass
    want = ("cellgate_limiter_requests_total",
            (("command", "cl.throttle"), ("decision", "denied")))
    deadline = time.time() + 5
    while True:                              # snapshots follow the cron tick
        status, ctype, text = scrape(mport)
        got = samples(text)
        if got.get(want) == 1 or time.time() > deadline:
            break
        time.sleep(0.05)
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
    assert got[want] == 1
    assert got[("cellgate_limiter_requests_total",
                (("command", "cl.throttle"), ("decision", "allowed")))] == 2
    assert got[("cellgate_limiter_requests_total",
                (("command", "rl.sliding"), ("decision", "allowed")))] == 1
    assert got[("cellgate_requests_total",
                (("command", "cl.throttle"), ("outcome", "ok")))] == 3
    assert got[("cellgate_requests_total",
                (("command", "cl.throttle"), ("outcome", "error")))] == 1
    assert got[("cellgate_command_duration_seconds_count",
                (("command", "cl.throttle"),))] == 4
    assert got[("cellgate_command_duration_seconds_bucket",
                (("command", "cl.throttle"), ("le", "+Inf")))] == 4
    assert got[("cellgate_keys", ())] == 2
    assert got[("cellgate_connected_clients", ())] >= 1
    assert got[("cellgate_used_memory_bytes", ())] > 0


def test_healthz_and_errors(start_daemon):
    mport = free_port()
    start_daemon("--metrics-port", str(mport))
    assert scrape(mport, "/healthz")[0::2] == (200, "ok\n")
    with pytest.raises(urllib.error.HTTPError) as e:
        scrape(mport, "/nope")
    assert e.value.code == 404
    req = urllib.request.Request("http://127.0.0.1:%d/metrics" % mport, data=b"x",
                                 method="POST")
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=5)
    assert e.value.code == 405


def test_metrics_are_off_by_default(server):
    assert server.client().config_get("metrics-port") == {"metrics-port": "0"}


LIMITS = """domain: api
descriptors:
  - key: remote_address
    rate_limit: { unit: second, requests_per_unit: 10 }
  - key: path
    value: '/lo"g\\in'
    descriptors:
      - key: user
        rate_limit: { unit: minute, requests_per_unit: 5, name: login }
  - key: path
    value: /api/*
    rate_limit: { unit: month, requests_per_unit: 100 }
  - key: free
    rate_limit: { unlimited: true }
"""


def wait_samples(mport, pred):
    deadline = time.time() + 5
    while True:                              # snapshots follow the cron tick
        got = samples(scrape(mport)[2])
        if pred(got) or time.time() > deadline:
            return got
        time.sleep(0.05)


def named(got, family="cellgate_named_limit"):
    return {dict(labels)["key"]: (dict(labels)["domain"], dict(labels).get("unit"), v)
            for (name, labels), v in got.items() if name == family}


def test_configured_limits_as_gauges_keyed_as_their_counters(start_daemon, tmp_path):
    """Each limit with a number, labelled with the stats key its
    ratelimit_service_* counters use (label values escaped alike); an
    unlimited entry has none; a reload replaces them."""
    path = tmp_path / "limits.yaml"
    path.write_text(LIMITS)
    mport = free_port()
    d = start_daemon("--metrics-port", str(mport), "--limits-file", str(path),
                     "--maxmemory", "10mb")
    c = d.client()
    c.execute_command("RL.CHECK", "api", 'path=/lo"g\\in', "user=7")
    c.execute_command("RL.CHECK", "api", "path=/api/v1")
    key = 'path_/lo"g\\in.user'
    # (prometheus_client's parser names a counter's samples *_total.)
    got = wait_samples(mport, lambda g: ("ratelimit_service_rate_limit_total_hits_total",
                                         (("domain", "api"), ("key", key))) in g)
    assert named(got) == {"remote_address": ("api", "second", 10),
                          key: ("api", "minute", 5),
                          "path_/api/*": ("api", "month", 100)}
    assert named(got, "cellgate_named_limit_unit_seconds") == {
        "remote_address": ("api", "second", 1), key: ("api", "minute", 60),
        "path_/api/*": ("api", "month", 30 * 86400)}
    for k in (key, "path_/api/*"):
        assert got[("ratelimit_service_rate_limit_total_hits_total",
                    (("domain", "api"), ("key", k)))] == 1
    assert 'key="path_/lo\\"g\\\\in.user"' in scrape(mport)[2]
    assert got[("cellgate_maxmemory_bytes", ())] == 10 * 1024 * 1024
    assert got[("cellgate_connected_replicas", ())] == 0
    assert not [k for k in got if k[0] == "cellgate_replica_link_up"]   # a primary
    path.write_text("domain: web\ndescriptors:\n  - key: ip\n"
                    "    rate_limit: { unit: hour, requests_per_unit: 7 }\n")
    assert c.execute_command("CONFIG", "RELOAD-LIMITS") == b"OK"
    got = wait_samples(mport, lambda g: "ip" in named(g))
    assert named(got) == {"ip": ("web", "hour", 7)}

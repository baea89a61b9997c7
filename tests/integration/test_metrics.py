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

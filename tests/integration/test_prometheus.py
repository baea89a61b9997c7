"""The shipped monitoring files against a real Prometheus (Debian's
`prometheus`, started here on a loopback port, never its systemd service):
docs/deploy/prometheus.yml scrapes a primary and its replica under load
(RL.CHECK on the named limits of docs/deploy/limits/api.yaml and CL.THROTTLE,
both denying), and every PromQL expression of docs/deploy/grafana-dashboard.json
and docs/deploy/cellgate-alerts.yml returns data through /api/v1/query;
promtool accepts the files as shipped. Grafana is not packaged: the
dashboard is type-checked against Grafana's published schema instead
(@grafana/schema's Dashboard, tests/dashboard, compiled with tsc)."""
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import pytest
import yaml

import harness

DEPLOY = os.path.join(harness.REPO, "docs", "deploy")
SCHEMA = os.path.join(harness.REPO, "tests", "dashboard")
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
SCRAPE_S = 1
# What Grafana puts in the dashboard's variables; the instance variable's
# "All" is its allValue.
GRAFANA_VARS = {"$__rate_interval": "30s", "$instance": ".*"}
# An alert's threshold at the end of its expression: without it the
# expression shows the value the alert compares, which exists while all is
# well (the conditions themselves are made true below where cheap).
THRESHOLD = re.compile(r"\s*(==|!=|>=|<=|>|<)\s*[0-9.]+\s*$")


def binaries():
    missing = [b for b in (PROMETHEUS, PROMTOOL) if not os.access(b, os.X_OK)]
    assert not missing, "install Debian's prometheus package (make deps): %s" % missing


def promtool(*args):
    r = subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_promtool_accepts_the_shipped_config_rules_and_their_unit_tests():
    binaries()
    promtool("check", "config", os.path.join(DEPLOY, "prometheus.yml"))
    out = promtool("check", "rules", os.path.join(DEPLOY, "cellgate-alerts.yml"))
    assert "SUCCESS: 5 rules found" in out
    # Each alert fires after its `for:` on made-up series, with its labels
    # and annotations as written.
    assert "SUCCESS" in promtool("test", "rules",
                                 os.path.join(DEPLOY, "cellgate-alerts.test.yml"))


class Prometheus:
    """/usr/bin/prometheus on a free port with a copy of the shipped config
    pointed at targets; stopped by PID."""

    def __init__(self, workdir, targets):
        self.dir = workdir
        os.makedirs(workdir, exist_ok=True)
        with open(os.path.join(DEPLOY, "prometheus.yml")) as f:
            conf = yaml.safe_load(f)
        conf["global"]["scrape_interval"] = "%ds" % SCRAPE_S
        conf["global"]["evaluation_interval"] = "%ds" % SCRAPE_S
        shutil.copy(os.path.join(DEPLOY, "cellgate-alerts.yml"), workdir)
        (job,) = [j for j in conf["scrape_configs"] if j["job_name"] == "cellgate"]
        job["scrape_interval"] = "%ds" % SCRAPE_S
        job["scrape_timeout"] = "%ds" % SCRAPE_S
        job["static_configs"] = [{"targets": ["127.0.0.1:%d" % p for p in targets]}]
        self.config = os.path.join(workdir, "prometheus.yml")
        with open(self.config, "w") as f:
            yaml.safe_dump(conf, f)
        promtool("check", "config", self.config)
        self.port = harness.free_port()
        self.log = open(os.path.join(workdir, "prometheus.log"), "wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + self.config,
             "--storage.tsdb.path=" + os.path.join(workdir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port,
             "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=workdir)
        assert harness.wait_until(self.ready, 30, 0.2), self.tail()

    def tail(self):
        with open(os.path.join(self.dir, "prometheus.log"), "rb") as f:
            return f.read()[-3000:].decode(errors="replace")

    def ready(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.port,
                                        timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def query(self, expr):
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (
            self.port, urllib.parse.urlencode({"query": expr}))
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", (expr, body)
        return body["data"]["result"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


@pytest.fixture
def prometheus(tmp_path):
    binaries()
    started = []

    def start(targets):
        p = Prometheus(str(tmp_path / "prometheus"), targets)
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop()


def dashboard_exprs():
    with open(os.path.join(DEPLOY, "grafana-dashboard.json")) as f:
        dash = json.load(f)
    out = []
    for panel in dash["panels"]:
        for t in panel.get("targets", []):
            expr = t["expr"]
            for var, value in GRAFANA_VARS.items():
                expr = expr.replace(var, value)
            assert "$" not in expr, (panel["title"], expr)
            out.append((panel["title"], expr))
    assert len(out) >= 20
    # A query variable's label_values(<selector>, <label>): the selector,
    # whose series must carry the label.
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            m = re.fullmatch(r"label_values\((.+), (\w+)\)", var["query"]["query"])
            assert m, var
            out.append(("variable " + var["name"], "group by (%s) (%s)" % (
                m.group(2), m.group(1))))
    return out


def alert_rules():
    with open(os.path.join(DEPLOY, "cellgate-alerts.yml")) as f:
        rules = yaml.safe_load(f)
    return {r["alert"]: r["expr"].strip() for g in rules["groups"] for r in g["rules"]}


class Load:
    """Limiter traffic on the primary until stopped: a login limit of 5 a
    minute (docs/deploy/limits/api.yaml) asked about 20 times a second, an
    address's 100 a minute well within, and CL.THROTTLE on a key allowing 1
    a minute, so both commands deny."""

    def __init__(self, daemon):
        self.c = daemon.client()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        n = 0
        while not self.done.wait(0.05):
            self.c.execute_command("RL.CHECK", "api", "header_match=login",
                                   "remote_address=10.0.0.7")
            if n % 40 == 0:     # about 0.5 a second: 30 % of 100 a minute
                self.c.execute_command("RL.CHECK", "api", "remote_address=10.0.0.8")
            self.c.execute_command("CL.THROTTLE", "user:42", 0, 1, 60)
            n += 1

    def stop(self):
        self.done.set()
        self.thread.join(10)
        assert not self.thread.is_alive()


def scraped(prom, n, count):
    """Both targets scraped at least count times lately."""
    got = prom.query('count_over_time(up{job="cellgate"}[1m]) >= %d' % count)
    return len(got) == n


def test_every_dashboard_and_alert_expression_returns_data(start_daemon, prometheus):
    limits = os.path.join(DEPLOY, "limits", "api.yaml")
    mports = [harness.free_port(), harness.free_port()]
    primary = start_daemon("--metrics-port", mports[0], "--limits-file", limits,
                           "--maxmemory", "1gb", "--appendonly", "yes", name="primary")
    replica = start_daemon("--metrics-port", mports[1], "--limits-file", limits,
                           "--maxmemory", "1gb", name="replica")
    assert replica.raw().command("REPLICAOF", "127.0.0.1", primary.port) == b"+OK\r\n"
    assert harness.wait_until(
        lambda: replica.info("replication").get("master_link_status") == "up", 10)
    prom = prometheus(mports)
    load = Load(primary)
    try:
        assert harness.wait_until(lambda: scraped(prom, 2, 8), 40, 0.5), prom.tail()
        # Denials seen by the decision counters, and in the summary.
        assert harness.wait_until(lambda: prom.query(
            'cellgate_top_denied{job="cellgate",key="user:42"}'), 10, 0.5)
        empty = [(title, expr) for title, expr in dashboard_exprs()
                 if not prom.query(expr)]
        assert empty == []
        rules = alert_rules()
        assert sorted(rules) == ["CellgateDown", "CellgateMemoryNearMaxmemory",
                                 "CellgateMisconf", "CellgateNamedLimitUtilisationHigh",
                                 "CellgateReplicaLinkDown"]
        for name, expr in rules.items():
            bare = THRESHOLD.sub("", expr)
            assert bare != expr, name
            assert prom.query(bare), (name, bare)
        # 20 logins a second against 5 a minute: the utilisation alert's
        # condition holds as written, for that limit only (rate() over a
        # 5m window of a few seconds' samples reads low, never high).
        hot = prom.query(rules["CellgateNamedLimitUtilisationHigh"])
        assert {(s["metric"]["domain"], s["metric"]["key"]) for s in hot} == {
            ("api", "header_match_login.remote_address")}
        # The replica has the configured limits too, and a link that is up.
        assert prom.query('cellgate_replica_link_up{job="cellgate"} == 1')
        assert len(prom.query('cellgate_named_limit{job="cellgate"}')) == 4
    finally:
        load.stop()
    # The primary gone: its target down and the replica's link down, as
    # CellgateDown and CellgateReplicaLinkDown compare them.
    assert primary.stop() == []
    assert harness.wait_until(lambda: prom.query(rules["CellgateDown"]) and
                              prom.query(rules["CellgateReplicaLinkDown"]), 20, 0.5)


def test_the_dashboard_types_as_grafanas_dashboard_schema():
    """The dashboard's JSON as a value of @grafana/schema's Dashboard type
    (its string enums read as their values: tests/dashboard/loose.ts):
    unknown fields, wrong types and missing required fields fail tsc."""
    harness.npm_install_locked(SCHEMA)
    with open(os.path.join(SCHEMA, "node_modules.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)            # one build/ at a time
        with open(os.path.join(DEPLOY, "grafana-dashboard.json")) as f:
            dashboard = f.read()
        os.makedirs(os.path.join(SCHEMA, "build"), exist_ok=True)
        with open(os.path.join(SCHEMA, "build", "dashboard.ts"), "w") as f:
            f.write("import type { Dashboard } from '@grafana/schema';\n"
                    "import type { Loose } from '../loose';\n"
                    "export const dashboard: Loose<Dashboard> = %s;\n" % dashboard)
        out = subprocess.run([os.path.join(SCHEMA, "node_modules", ".bin", "tsc"), "-p", "."],
                             cwd=SCHEMA, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]

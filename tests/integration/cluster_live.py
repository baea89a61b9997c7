"""A cluster of cluster-enabled nodes on loopback ports, managed as users
manage one: with Debian's redis-cli --cluster (7.0.15). The nodes are
cellgates (harness.Daemon), or Debian's redis-server when
CLUSTER_REFERENCE=redis is set, so a test's own logic can be checked
against Redis itself (a developer's run, not the suite's).

Every wait is bounded; a node's client port and bus port are both picked
free (the bus port is given with --cluster-port, so it need not be the
client port + 10000)."""
import os
import re
import signal
import subprocess
import time

import redis

import harness

REDIS_CLI = "/usr/bin/redis-cli"
REFERENCE = os.environ.get("CLUSTER_REFERENCE") == "redis"


class RedisNode:
    """redis-server in cluster mode, with harness.Daemon's few methods
    that this module uses."""

    def __init__(self, workdir, args):
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.args = args
        self.proc = None
        self.port = None

    def start(self, port):
        self.port = port
        self.proc = subprocess.Popen(
            [harness.REDIS_SERVER, "--bind", "127.0.0.1", "--port", str(port),
             "--save", "", "--appendonly", "no", "--dir", self.workdir] + self.args,
            stdout=open(os.path.join(self.workdir, "redis.log"), "ab"),
            stderr=subprocess.STDOUT)
        assert harness.wait_until(self._pong, harness.START_TIMEOUT), "redis-server did not start"
        return self

    def _pong(self):
        try:
            return redis.Redis(port=self.port, socket_timeout=1).ping()
        except redis.ConnectionError:
            return False

    def client(self, **kw):
        return redis.Redis(port=self.port, **kw)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM):
        if self.alive():
            self.proc.send_signal(sig)
            self.proc.wait(30)

    def log(self):
        try:
            with open(os.path.join(self.workdir, "redis.log"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""


class Node:
    """One node: its process, ports and config, restartable."""

    def __init__(self, cluster, index):
        self.cluster = cluster
        self.index = index
        self.workdir = os.path.join(cluster.workdir, "n%d" % index)
        os.makedirs(self.workdir, exist_ok=True)
        self.port = harness.free_port()
        self.bus_port = harness.free_port()
        self.proc = None

    def args(self):
        return ["--cluster-enabled", "yes", "--cluster-port", str(self.bus_port),
                "--cluster-node-timeout", str(self.cluster.node_timeout),
                "--cluster-config-file", "nodes.conf"] + list(self.cluster.extra_args)

    def start(self):
        """Start the node, or start it again in its folder (its nodes.conf)
        on its ports."""
        if REFERENCE:
            self.proc = RedisNode(self.workdir, self.args()).start(self.port)
        elif self.proc is not None:
            self.proc.start()
        else:
            self.proc = self.cluster.start_daemon(*self.args(), port=self.port,
                                                  name="node%d" % self.index)
        return self

    def kill9(self):
        """kill -9: no goodbye, no sanitizer exit check (there is none)."""
        if REFERENCE:
            self.proc.stop(signal.SIGKILL)
            return
        d = self.proc
        d.proc.kill()
        d.proc.wait(10)
        d.stopped = True
        d.close_clients()
        with harness._live_lock:
            if d in harness._live:
                harness._live.remove(d)

    def alive(self):
        return self.proc is not None and self.proc.alive()

    def client(self, **kw):
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10, **kw)

    def addr(self):
        return "127.0.0.1:%d" % self.port

    def myid(self):
        return self.client().execute_command("CLUSTER", "MYID").decode()

    def nodes(self):
        """CLUSTER NODES as {id: {"addr", "flags", "primary", "slots"}}."""
        out = {}
        text = self.client().execute_command("CLUSTER", "NODES")
        text = text.decode() if isinstance(text, bytes) else text
        for line in text.splitlines():
            f = line.split()
            out[f[0]] = {"addr": f[1], "flags": set(f[2].split(",")), "primary": f[3],
                         "link": f[7], "slots": f[8:]}
        return out

    def info(self):
        text = self.client().execute_command("CLUSTER", "INFO")
        text = text.decode() if isinstance(text, bytes) else text
        return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


class Cluster:
    def __init__(self, start_daemon, workdir, n, node_timeout=2000, extra_args=()):
        self.start_daemon = start_daemon
        self.workdir = str(workdir)
        self.node_timeout = node_timeout
        self.extra_args = extra_args
        self.nodes = []
        for _ in range(n):
            self.add_node()

    def add_node(self):
        node = Node(self, len(self.nodes)).start()
        self.nodes.append(node)
        return node

    def cli(self, *args, timeout=300, check=True):
        """redis-cli --cluster <args>; the output with colours off."""
        out = subprocess.run([REDIS_CLI, "--cluster"] + [str(a) for a in args],
                             capture_output=True, text=True, timeout=timeout,
                             env=dict(os.environ, TERM="dumb"))
        text = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)
        if check:
            assert out.returncode == 0, "redis-cli --cluster %s:\n%s" % (" ".join(map(str, args)), text)
        return text

    def create(self, replicas=1, nodes=None):
        nodes = nodes or self.nodes
        self.cli("create", *[n.addr() for n in nodes], "--cluster-replicas", replicas,
                 "--cluster-yes")
        self.wait_converged(nodes)
        self.wait_synced()

    def check(self, node=None):
        """redis-cli --cluster check is clean: every slot covered, no open
        slot, every node agrees."""
        node = node or self.live()[0]
        text = self.cli("check", node.addr())
        assert "[OK] All nodes agree about slots configuration." in text, text
        assert "[OK] All 16384 slots covered." in text, text
        assert "[WARNING]" not in text and "[ERR]" not in text, text
        return text

    def live(self):
        return [n for n in self.nodes if n.alive()]

    def views(self, nodes=None):
        return {n.index: n.nodes() for n in (nodes or self.live())}

    def converged(self, nodes=None):
        """Every live node knows every live node, none in handshake or
        failing and all linked, with the same slots and roles, and says the
        cluster is ok; a node known but not running (killed) is flagged
        fail."""
        nodes = nodes or self.live()
        addrs = {n.addr() for n in nodes}
        try:
            views = [n.nodes() for n in nodes]
        except redis.RedisError:
            return False
        shapes = set()
        for v in views:
            if {r["addr"].split("@")[0] for r in v.values()} & addrs != addrs:
                return False
            for rec in v.values():
                if rec["addr"].split("@")[0] not in addrs:
                    if "fail" not in rec["flags"]:
                        return False
                elif rec["flags"] & {"handshake", "fail", "fail?", "noaddr"} \
                        or rec["link"] != "connected":
                    return False
            shapes.add(tuple(sorted((i, r["primary"], tuple(r["slots"]),
                                     "master" in r["flags"]) for i, r in v.items())))
        if len(shapes) != 1:
            return False
        # A node that just joined keeps cluster_state:fail a moment (Redis's
        # writable delay and rejoin delay) and refuses keys meanwhile.
        return all(n.info().get("cluster_state") == "ok" for n in nodes)

    def wait_converged(self, nodes=None, timeout=60):
        assert harness.wait_until(lambda: self.converged(nodes), timeout), \
            "the nodes never agreed:\n%r" % self.views(nodes)

    def synced(self):
        """Every live replica's link to its primary is up."""
        for n in self.live():
            info = n.client().info("replication")
            if info.get("role") == "slave" and info.get("master_link_status") != "up":
                return False
        return True

    def wait_synced(self, timeout=60):
        assert harness.wait_until(self.synced, timeout), "a replica never synced"

    def primaries(self):
        v = self.live()[0].nodes()
        return [i for i, r in v.items() if "master" in r["flags"] and r["slots"]]

    def node_by_id(self, node_id):
        for n in self.live():
            if n.myid() == node_id:
                return n
        return None

    def slot_owner_port(self, slot):
        """The port serving slot, per the first live node's CLUSTER SLOTS."""
        for first, last, primary, *_ in self.live()[0].client().execute_command("CLUSTER", "SLOTS"):
            if first <= slot <= last:
                return primary[1]
        return None

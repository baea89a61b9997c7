"""Redis 7.0.15's configuration, whole: every option redis-server knows is
taken by cellgate in a file, on the command line and by CONFIG SET/GET/
REWRITE, with Redis's value syntax and error bytes (docs/compat.md lists
which options are honoured and what the others do).

Each test starts redis-server 7.0.15 beside cellgate where the answer to
compare with is Redis's own."""
import os
import shutil
import subprocess

import pytest
import redis

import harness

DEBIAN_CONF = "/etc/redis/redis.conf"

# Redis's "CONFIG sanity" test (tests/unit/introspection.tcl at 7.0.15)
# reads every value with CONFIG GET * and sets it back, skipping these:
# the immutable options and a few it cannot set to themselves.
SANITY_SKIP = set("""
rdbchecksum daemonize io-threads-do-reads tcp-backlog always-show-logo
syslog-enabled cluster-enabled disable-thp aclfile unixsocket pidfile
syslog-ident appendfilename appenddirname supervised syslog-facility
databases io-threads logfile unixsocketperm replicaof slaveof requirepass
server_cpulist bio_cpulist aof_rewrite_cpulist bgsave_cpulist set-proc-title
cluster-config-file cluster-port oom-score-adj oom-score-adj-values
enable-protected-configs enable-debug-command enable-module-command
dbfilename dir socket-mark-id
tls-prefer-server-ciphers tls-session-cache-timeout tls-session-cache-size
tls-session-caching tls-cert-file tls-key-file tls-client-cert-file
tls-client-key-file tls-dh-params-file tls-ca-cert-file tls-ca-cert-dir
tls-protocols tls-ciphers tls-ciphersuites tls-port
""".split())


def start_cellgate(workdir, conf, *args):
    """cellgate with conf as its only source of bind and port (the
    harness's Daemon would add --bind 127.0.0.1, which the Debian file's
    two addresses must not be replaced by)."""
    log = open(os.path.join(workdir, "cellgate.out"), "ab")
    args = harness.io_thread_args(args, conf) + list(args)
    proc = subprocess.Popen([harness.BIN, conf] + args,
                            stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                            env=harness.sanitizer_env(dict(os.environ)),
                            cwd=workdir)
    log.close()
    return proc


def wait_ready(proc, port, password=None):
    def up():
        if proc.poll() is not None:
            return True
        try:
            return redis.Redis(port=port, password=password,
                               socket_timeout=1).ping()
        except (redis.ConnectionError, redis.TimeoutError):
            return False
    assert harness.wait_until(up, harness.START_TIMEOUT), "no PONG"
    assert proc.poll() is None, "exited with %s" % proc.returncode
    return redis.Redis(port=port, password=password,
                       socket_timeout=harness.IO_TIMEOUT)


def stop(proc, client=None):
    if client is not None:
        client.close()
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(harness.STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return proc.returncode


def start_redis(workdir, conf, port, password=None):
    proc = subprocess.Popen([harness.REDIS_SERVER, conf],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=workdir)
    return proc, wait_ready(proc, port, password)


def debian_conf(workdir, port):
    """Debian's redis.conf with only the lines a test must change: port
    (a free one), daemonize (no: the test owns the process), pidfile,
    logfile and dir (inside workdir)."""
    edits = {"port": str(port), "daemonize": "no",
             "pidfile": os.path.join(workdir, "server.pid"),
             "logfile": os.path.join(workdir, "server.log"),
             "dir": workdir}
    out = []
    with open(DEBIAN_CONF) as f:
        for line in f:
            words = line.split()
            if words and words[0] in edits:
                line = "%s %s\n" % (words[0], edits[words[0]])
            out.append(line)
    path = os.path.join(workdir, "redis.conf")
    with open(path, "w") as f:
        f.writelines(out)
    return path


def settings_of(conf):
    """The option names a config file sets (first word of each line)."""
    names = []
    with open(conf) as f:
        for line in f:
            words = line.split()
            if words and not words[0].startswith("#"):
                names.append(words[0].lower())
    return names


def test_debian_redis_conf_starts_cellgate_with_redis_s_values(tmp_path):
    cdir, rdir = tmp_path / "cellgate", tmp_path / "redis"
    cdir.mkdir()
    rdir.mkdir()
    cport, rport = harness.free_port(), harness.free_port()
    cconf = debian_conf(str(cdir), cport)
    rconf = debian_conf(str(rdir), rport)
    check = subprocess.run([harness.BIN, cconf, "--test-config"],
                           capture_output=True,
                           env=harness.sanitizer_env(dict(os.environ)))
    assert check.returncode == 0, check.stderr
    assert b"configuration OK" in check.stdout + check.stderr
    proc = start_cellgate(str(cdir), cconf)
    rproc, ref = start_redis(str(rdir), rconf, rport)
    try:
        r = wait_ready(proc, cport)
        assert r.set("k", "v") and r.get("k") == b"v"
        # every option the file sets answers as Redis's does, but the
        # lines changed for the test
        for name in set(settings_of(cconf)) - {"port", "pidfile", "logfile",
                                               "dir"}:
            assert r.config_get(name) == ref.config_get(name), name
        assert r.config_get("bind") == {"bind": "127.0.0.1 -::1"}
    finally:
        stop(rproc, ref)
        assert stop(proc) == 0, open(cdir / "cellgate.out").read()


def test_config_get_star_lists_every_name_redis_server_lists(server,
                                                             redis_server):
    ours = set(server.client().config_get("*"))
    theirs = set(redis_server.client().config_get("*"))
    assert len(theirs) == 192
    assert theirs - ours == set()


def test_config_sanity_every_value_read_sets_back(start_daemon):
    """Redis's "CONFIG sanity": CONFIG SET of the value CONFIG GET * gave,
    for every name but those Redis skips, then the same CONFIG GET *."""
    d = start_daemon()
    r = d.client(decode_responses=True)
    before = r.config_get("*")
    refused = {}
    for name, value in before.items():
        if name in SANITY_SKIP:
            continue
        try:
            r.config_set(name, value)
        except redis.ResponseError as e:
            refused[name] = str(e)
    assert refused == {}
    assert r.config_get("*") == before


def test_redis_s_immutable_options_refuse_config_set_with_redis_s_words(
        start_daemon, redis_server):
    d = start_daemon()
    for name, value in (("daemonize", "no"), ("rdbchecksum", "yes"),
                        ("syslog-ident", "redis"), ("io-threads", "1"),
                        ("databases", "16"), ("socket-mark-id", "0")):
        assert raw_error(d.raw(), name, value) == \
            raw_error(harness.RawConn(port=redis_server.port), name, value)


def raw_error(conn, name, value):
    reply = conn.command("CONFIG", "SET", name, value)
    conn.close()
    return reply


# A value of every class Redis 7.0.15 refuses, each with its own words:
# booleans, integers (malformed, out of range, unsigned), sizes, enums,
# flag lists, and each option of a syntax of its own.
BAD_VALUES = [
    ("protected-mode", "maybe"), ("lazyfree-lazy-expire", ""),
    ("tcp-keepalive", "abc"), ("tcp-keepalive", "-1"),
    ("active-expire-effort", "11"), ("active-defrag-cycle-min", "0"),
    ("acllog-max-len", "-1"), ("list-max-listpack-size", "1.5"),
    ("hash-max-listpack-value", "12q"), ("stream-node-max-bytes", "-5"),
    ("repl-diskless-load", "sometimes"), ("oom-score-adj", "maybe"),
    ("acl-pubsub-default", "none"), ("appendfsync", "often"),
    ("shutdown-on-sigint", "save nosave"), ("shutdown-on-sigterm", "later"),
    ("shutdown-on-sigterm", ""),
    ("client-output-buffer-limit", "normal 0 0"),
    ("client-output-buffer-limit", "master 0 0 0"),
    ("client-output-buffer-limit", "pubsub 1x 0 0"),
    ("client-output-buffer-limit", "pubsub 1mb 0 -1"),
    ("oom-score-adj-values", "0 200"), ("oom-score-adj-values", "0 200 3000"),
    ("notify-keyspace-events", "KQ"), ("notify-keyspace-events", "K E"),
    ("latency-tracking-info-percentiles", "50 abc"),
    ("latency-tracking-info-percentiles", "101"),
    ("maxmemory-clients", "ten"), ("maxmemory-clients", "101%"),
    ("bind", " ".join("127.0.0.%d" % i for i in range(1, 18))),
    ("proc-title-template", "{title}"), ("proc-title-template", "{bad} x"),
    ("cluster-announce-hostname", "bad_host"),
    ("no-such-option", "1"),
]


@pytest.mark.parametrize("name,value", BAD_VALUES)
def test_bad_values_are_refused_with_redis_s_error_bytes(server, redis_server,
                                                         name, value):
    assert raw_error(server.raw(), name, value) == \
        raw_error(harness.RawConn(port=redis_server.port), name, value)


# Values other than the default for the options that are not booleans or
# integers (those flip, or take their default plus one), each valid in
# both servers. Kept at their defaults, so that both servers start as the
# test's children: daemonize (no fork), watchdog-period (a SIGALRM
# watchdog under a loaded machine), tls-port, tls-replication and
# tls-cluster (they would load certificates), activedefrag (Debian's
# redis-server, built on the system's jemalloc, refuses it).
OTHER_VALUES = {
    "bind": "127.0.0.1", "save": "900 1", "timeout": "3600",
    "client-query-buffer-limit": "512mb", "proto-max-bulk-len": "256mb",
    "maxmemory": "100mb",
    "requirepass": "pw", "masterauth": "pw2", "masteruser": "u",
    "aclfile": None, "unixsocket": None, "unixsocketperm": "700",
    "dir": None, "pidfile": None, "logfile": None, "port": None,
    "cluster-port": None,
    "dbfilename": "x.rdb", "appendfilename": "x.aof", "appenddirname": "xdir",
    "cluster-config-file": "nodes-x.conf", "cluster-announce-ip": "10.0.0.1",
    "cluster-announce-hostname": "host-a", "replica-announce-ip": "10.0.0.2",
    "syslog-ident": "cg", "server_cpulist": "0", "bio_cpulist": "0",
    "aof_rewrite_cpulist": "0", "bgsave_cpulist": "0",
    "ignore-warnings": "ARM64-COW-BUG", "proc-title-template": "{title} {port}",
    "bind-source-addr": "127.0.0.1", "supervised": "auto",
    "syslog-facility": "local1", "repl-diskless-load": "swapdb",
    "loglevel": "verbose", "maxmemory-policy": "volatile-ttl",
    "appendfsync": "always", "oom-score-adj": "absolute",
    "acl-pubsub-default": "allchannels", "sanitize-dump-payload": "yes",
    "enable-protected-configs": "yes", "enable-debug-command": "yes",
    "enable-module-command": "yes", "cluster-preferred-endpoint-type":
    "hostname", "propagation-error-behavior": "panic",
    "tls-auth-clients": "no", "tls-cert-file": "/nonexistent/c.pem",
    "tls-key-file": "/nonexistent/k.pem", "tls-key-file-pass": "kp",
    "tls-client-cert-file": "/nonexistent/cc.pem",
    "tls-client-key-file": "/nonexistent/ck.pem",
    "tls-client-key-file-pass": "ckp", "tls-dh-params-file": "/nonexistent/dh",
    "tls-ca-cert-file": "/nonexistent/ca.pem", "tls-ca-cert-dir": "/nonexistent",
    "tls-protocols": "TLSv1.2", "tls-ciphers": "DEFAULT",
    "tls-ciphersuites": "TLS_AES_128_GCM_SHA256",
    "client-output-buffer-limit": "pubsub 64mb 16mb 90",
    "oom-score-adj-values": "0 100 900", "notify-keyspace-events": "KEA",
    "latency-tracking-info-percentiles": "50 99.99",
    "shutdown-on-sigint": "save now", "shutdown-on-sigterm": "nosave force",
    "maxmemory-clients": "10%", "replicaof": "127.0.0.1 1",
}
KEPT_DEFAULT = {"daemonize", "watchdog-period", "tls-port", "tls-replication",
                "tls-cluster", "activedefrag"}
# Each server has its own: not compared.
OWN = {"port", "dir", "pidfile", "logfile", "unixsocket", "cluster-port"}
HIDDEN = ["rdb-key-save-delay", "key-load-delay", "watchdog-period",
          "use-exit-on-panic", "loading-process-events-interval-bytes"]


def text(reply):
    """A CONFIG GET reply as str: redis-py gives str or bytes by version."""
    def s(x):
        return x.decode() if isinstance(x, bytes) else x
    return {s(k): s(v) for k, v in reply.items()}


def non_default(name, default):
    if name in OTHER_VALUES:
        return OTHER_VALUES[name]
    if default in ("yes", "no"):
        return "no" if default == "yes" else "yes"
    return str(int(default) + 1)


def every_option_file(path, values, workdir, port):
    own = {"port": str(port), "dir": workdir, "daemonize": "no",
           "pidfile": os.path.join(workdir, "server.pid"),
           "logfile": os.path.join(workdir, "server.log"),
           "unixsocket": os.path.join(workdir, "s.sock"),
           "aclfile": os.path.join(os.path.dirname(workdir), "users.acl")}
    with open(path, "w") as f:
        for name, value in sorted(values.items()):
            value = own.get(name, value)
            f.write('%s "%s"\n' % (name, value.replace('"', '\\"')))


def test_every_redis_option_set_off_its_default_answers_as_redis_s(
        tmp_path, redis_server):
    ref = redis_server.client()
    defaults = text(ref.config_get("*"))
    for name in HIDDEN:
        defaults.update(text(ref.config_get(name)))
    aliases = {"slaveof", "slave-read-only", "slave-priority",
               "slave-announce-ip", "slave-announce-port",
               "min-slaves-to-write", "min-slaves-max-lag",
               "repl-ping-slave-period", "lua-time-limit",
               "cluster-slave-no-failover", "slave-lazy-flush",
               "slave-serve-stale-data", "slave-ignore-maxmemory",
               "cluster-slave-validity-factor", "list-max-ziplist-size",
               "hash-max-ziplist-entries", "zset-max-ziplist-entries",
               "hash-max-ziplist-value", "zset-max-ziplist-value"}
    values = {n: non_default(n, v) for n, v in defaults.items()
              if n not in aliases and n not in KEPT_DEFAULT}
    assert len(values) + len(KEPT_DEFAULT) == 178
    with open(tmp_path / "users.acl", "w") as f:
        f.write("user default on >pw ~* &* +@all\n")
    cdir, rdir = tmp_path / "cellgate", tmp_path / "redis"
    cdir.mkdir()
    rdir.mkdir()
    cport, rport = harness.free_port(), harness.free_port()
    values["cluster-port"] = str(harness.free_port())
    cconf, rconf = str(tmp_path / "c.conf"), str(tmp_path / "r.conf")
    # Both refuse replicaof beside cluster-enabled ("replicaof directive
    # not allowed in cluster mode"): neither file has it.
    del values["replicaof"]
    every_option_file(cconf, values, str(cdir), cport)
    # Each listens on its cluster port (the bus): one each.
    every_option_file(rconf, dict(values, **{"cluster-port": str(harness.free_port())}),
                      str(rdir), rport)
    check = subprocess.run([harness.BIN, cconf, "--test-config"],
                           capture_output=True,
                           env=harness.sanitizer_env(dict(os.environ)))
    assert check.returncode == 0, check.stderr
    proc = start_cellgate(str(cdir), cconf)
    rproc, theirs = start_redis(str(rdir), rconf, rport, password="pw")
    try:
        ours = wait_ready(proc, cport, password="pw")
        for name in sorted(set(values) - OWN):
            assert text(ours.config_get(name)) == \
                text(theirs.config_get(name)), name
            # (the reference runs with --bind 127.0.0.1, Redis's default is
            # "* -::*")
            assert name == "bind" or \
                text(ours.config_get(name)) != {name: defaults[name]}, name
    finally:
        stop(rproc, theirs)
        stop(proc, ours)


def test_config_rewrite_then_restart_keeps_redis_s_options(start_daemon,
                                                           tmp_path):
    conf = tmp_path / "rw.conf"
    conf.write_text("client-output-buffer-limit normal 0 0 0\n"
                    "client-output-buffer-limit replica 256mb 64mb 60\n"
                    "lazyfree-lazy-eviction no\n")
    d = start_daemon(config_file=str(conf))
    r = d.client(decode_responses=True)
    changed = {"client-output-buffer-limit": "pubsub 64mb 16mb 90",
               "lazyfree-lazy-eviction": "yes", "maxmemory-clients": "10%",
               "notify-keyspace-events": "KEA", "tcp-keepalive": "60",
               "oom-score-adj-values": "0 100 900",
               "latency-tracking-info-percentiles": "50 99.99",
               "shutdown-on-sigint": "now save", "list-max-ziplist-size": "-3",
               "hash-max-listpack-value": "1kb", "activedefrag": "yes",
               "proc-title-template": "{title} {port}"}
    for name, value in changed.items():
        assert r.config_set(name, value)
    want = {name: r.config_get(name)[name] for name in changed}
    assert r.config_rewrite()
    d.stop()
    d.start()
    r = d.client(decode_responses=True)
    assert {name: r.config_get(name)[name] for name in changed} == want
    assert want["client-output-buffer-limit"] == \
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 67108864 16777216 90"
    assert want["shutdown-on-sigint"] == "save now"
    text = conf.read_text()
    # a line a class, sizes in units, as Redis rewrites it
    assert "\nclient-output-buffer-limit normal 0 0 0\n" \
        "client-output-buffer-limit slave 256mb 64mb 60\n" \
        "client-output-buffer-limit pubsub 64mb 16mb 90\n" in "\n" + text
    assert "lazyfree-lazy-eviction yes\n" in text


def test_tcp_keepalive_sets_probes_on_new_client_sockets(start_daemon):
    """ss shows a server socket's keepalive timer once nothing is left
    to send (an unacknowledged reply's retransmit timer shows first)."""
    d = start_daemon("--tcp-keepalive", "200")

    def timer_of(conn):
        peer = "127.0.0.1:%d" % conn.sock.getsockname()[1]
        out = subprocess.run(["ss", "-tno", "state", "established",
                              "( sport = :%d )" % d.port],
                             capture_output=True, text=True).stdout
        lines = [line for line in out.splitlines() if peer in line.split()]
        return lines[0] if len(lines) == 1 else ""
    a = d.raw()
    assert a.command("PING") == b"+PONG\r\n"
    assert harness.wait_until(lambda: "keepalive" in timer_of(a), 10), \
        timer_of(a)
    assert a.command("CONFIG", "SET", "tcp-keepalive", "0") == b"+OK\r\n"
    b = d.raw()
    assert b.command("PING") == b"+PONG\r\n"
    assert harness.wait_until(lambda: "timer" not in timer_of(b) and
                              timer_of(b) != "", 10), timer_of(b)
    # the change is for new connections, as in Redis
    assert harness.wait_until(lambda: "keepalive" in timer_of(a), 10), \
        timer_of(a)

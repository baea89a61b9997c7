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
    proc = subprocess.Popen([harness.BIN, conf] + list(args),
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
    ("no-such-option", "1"),
]


@pytest.mark.parametrize("name,value", BAD_VALUES)
def test_bad_values_are_refused_with_redis_s_error_bytes(server, redis_server,
                                                         name, value):
    assert raw_error(server.raw(), name, value) == \
        raw_error(harness.RawConn(port=redis_server.port), name, value)

"""How the process tells the world it started and stops: systemd's
NOTIFY_SOCKET (supervised), daemonize with its pidfile, and the log file
reopened on SIGHUP for logrotate."""
import os
import signal
import socket
import subprocess
import threading
import time

import harness
from harness import BIN

KEYS = 500_000


def notify_socket(path):
    """A datagram socket standing in for systemd's; path "@x" is abstract."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind("\0" + path[1:] if path.startswith("@") else path)
    s.settimeout(60)
    return s


def fields(datagram):
    return dict(line.split("=", 1) for line in datagram.decode().splitlines() if line)


def dbsize(port):
    c = harness.RawConn(port)
    try:
        return c.command("DBSIZE")
    finally:
        c.close()


def test_systemd_hears_ready_only_after_a_large_snapshot_loaded_then_stopping(
        start_daemon, tmp_path):
    snapdir = str(tmp_path / "data")
    os.makedirs(snapdir)
    first = start_daemon("--dir", snapdir, name="filler")
    subprocess.run([os.environ["CELLGATE_FILL"], str(first.port), "key:", "0", str(KEYS),
                    "CL.THROTTLE", "__key__", "15", "30", "3600"],
                   check=True, capture_output=True, timeout=300)
    assert first.raw().command("SAVE") == b"+OK\r\n"
    assert first.stop() == []

    sock = notify_socket(str(tmp_path / "notify.sock"))
    seen = []               # (fields, what the port said at that moment)
    box = {}

    def listen():
        while True:
            try:
                msg = fields(sock.recv(4096))
            except OSError:
                return
            d = box.get("daemon")
            if "READY" in msg:
                seen.append((msg, dbsize(d.port)))
            elif "STATUS" in msg and "STOPPING" not in msg and d is not None:
                try:
                    socket.create_connection(("127.0.0.1", d.port), timeout=1).close()
                    seen.append((msg, "accepted"))
                except OSError:
                    seen.append((msg, "refused"))
            else:
                seen.append((msg, None))
            if "STOPPING" in msg:
                return

    # The daemon object exists (and has its port) before its process does.
    d = harness.Daemon(str(tmp_path / "notified"), name="notified",
                       extra_args=["--dir", snapdir, "--supervised", "systemd"],
                       env={"NOTIFY_SOCKET": str(tmp_path / "notify.sock")})
    d.port = harness.free_port()
    d.want_port = d.port
    box["daemon"] = d
    t = threading.Thread(target=listen)
    t.start()
    try:
        d.start()
        assert harness.wait_until(lambda: len(seen) >= 2, 60)
        (loading, port_then), (ready, size_then) = seen[:2]
        # While the snapshot loads the port is closed; READY comes once
        # every key is there.
        assert loading == {"STATUS": "Loading the data set"}
        assert port_then == "refused"
        assert ready == {"READY": "1", "STATUS": "Ready to accept connections"}
        assert size_then == b":%d\r\n" % KEYS
        log = d.log()
        assert log.index("Loaded %d keys" % KEYS) < log.index("Ready to accept connections")
        d.proc.send_signal(signal.SIGTERM)
        t.join(30)
        assert seen[-1][0] == {"STOPPING": "1", "STATUS": "Shutting down"}
        assert d.wait_exit(30) == 0
    finally:
        sock.close()
        t.join(5)
        if d.alive():
            d.proc.kill()


def test_auto_tells_systemd_when_notify_socket_is_set_and_no_never_does(
        start_daemon, tmp_path):
    name = "@cellgate-test-%d" % os.getpid()
    sock = notify_socket(name)
    try:
        d = start_daemon("--supervised", "auto", env={"NOTIFY_SOCKET": name})
        assert fields(sock.recv(4096)) == {"STATUS": "Loading the data set"}
        assert fields(sock.recv(4096))["READY"] == "1"
        assert d.stop() == []
        assert fields(sock.recv(4096))["STOPPING"] == "1"

        d = start_daemon("--supervised", "no", env={"NOTIFY_SOCKET": name})
        assert d.stop() == []
        sock.settimeout(0.5)
        try:
            got = sock.recv(4096)
        except socket.timeout:
            got = None
        assert got is None
    finally:
        sock.close()


def test_systemd_without_notify_socket_warns_and_serves(start_daemon):
    assert "NOTIFY_SOCKET" not in os.environ
    d = start_daemon("--supervised", "systemd")
    assert d.raw().command("PING") == b"+PONG\r\n"
    assert ("systemd supervision requested, but the NOTIFY_SOCKET environment "
            "variable was not found") in d.log()


def run_daemonized(tmp_path, *args):
    port = harness.free_port()
    p = subprocess.run([BIN, *harness.io_thread_args(args), "--port", str(port),
                        "--bind", "127.0.0.1", "--save", "",
                        "--dir", str(tmp_path), "--daemonize", "yes"] + list(args),
                       capture_output=True, text=True, timeout=60,
                       env=harness.sanitizer_env(dict(os.environ)), cwd=str(tmp_path))
    return port, p


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def test_daemonize_returns_once_serving_and_the_pidfile_goes_at_exit(tmp_path):
    pidfile = tmp_path / "cellgate.pid"
    logfile = tmp_path / "cellgate.log"
    port, p = run_daemonized(tmp_path, "--pidfile", str(pidfile), "--logfile", str(logfile))
    pid = int(pidfile.read_text()) if pidfile.exists() else None
    try:
        assert p.returncode == 0, p.stderr
        assert p.stdout == "" and p.stderr == ""
        # Serving already when the starting command returned.
        assert dbsize(port) == b":0\r\n"
        assert pid is not None and pid_alive(pid)
        c = harness.RawConn(port)
        assert c.command("CONFIG", "GET", "pidfile") == \
            b"*2\r\n$7\r\npidfile\r\n$%d\r\n%s\r\n" % (len(str(pidfile)), str(pidfile).encode())
        assert c.command("CONFIG", "SET", "daemonize", "no") == (
            b"-ERR CONFIG SET failed (possibly related to argument 'daemonize') - "
            b"can't set immutable config\r\n")
        c.close()
        os.kill(pid, signal.SIGTERM)
        assert harness.wait_until(lambda: not pid_alive(pid), 30)
        assert not pidfile.exists()
        text = logfile.read_text()
        assert "Ready to accept connections" in text and "bye bye" in text
        for marker in harness.SANITIZER_MARKERS:
            assert marker not in text
    finally:
        if pid is not None and pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_daemonize_that_cannot_start_exits_1_with_the_reason(tmp_path):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    pidfile = tmp_path / "cellgate.pid"
    try:
        p = subprocess.run([BIN, *harness.io_thread_args(), "--port", str(port),
                            "--bind", "127.0.0.1", "--save", "",
                            "--daemonize", "yes", "--pidfile", str(pidfile)],
                           capture_output=True, text=True, timeout=60,
                           env=harness.sanitizer_env(dict(os.environ)), cwd=str(tmp_path))
    finally:
        holder.close()
    assert p.returncode == 1
    assert ("Could not create server TCP listening socket 127.0.0.1:%d: address already "
            "in use" % port) in p.stderr
    assert not pidfile.exists()


def test_sighup_reopens_the_log_file_logrotate_moved_away(start_daemon, tmp_path):
    logfile = tmp_path / "cellgate.log"
    d = start_daemon("--logfile", str(logfile))
    assert d.raw().command("PING") == b"+PONG\r\n"
    os.rename(logfile, tmp_path / "cellgate.log.1")
    d.proc.send_signal(signal.SIGHUP)
    assert harness.wait_until(lambda: logfile.exists() and "reopened" in logfile.read_text(), 10)
    old = (tmp_path / "cellgate.log.1").read_text()
    assert "Ready to accept connections" in old and "reopened" not in old
    assert d.stop() == []
    new = logfile.read_text()
    assert "Received SIGHUP: reopened the log file %s" % logfile in new
    assert "Received SIGTERM" in new and "Received SIGTERM" not in old

"""Start and stop the real cellgate binary for the integration tests.

Everything here talks to the daemon over 127.0.0.1 (or a unix socket) only.

    d = Daemon(workdir, extra_args=["--timeout", "1"], fakeclock=None)
    d.start()            # free port, waits for PING (bounded)
    r = d.client()       # redis.Redis(decode_responses=False)
    raw = d.raw()        # RawConn: send bytes, read exact counts, see EOF
    d.stop()             # SIGTERM, bounded wait; returns a list of problems

Environment:
    CELLGATE_BIN   the binary under test (default: <repo>/cellgate)
    SANITIZE       1 when CELLGATE_BIN is the ASan+UBSan build, thread
                   when it is the ThreadSanitizer build
    CELLGATE_IO_THREADS
                   N: every cellgate daemon the tests start gets
                   --io-threads N (replicas and daemons started with a
                   config file too), unless the test sets io-threads
                   itself (an argument, or a line of its config file);
                   make test-integration-threads sets it
"""
import collections
import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
# The recorded redis-cell replies and the fake-clock shim, in the repository.
CONFORMANCE = os.path.join(REPO, "tests", "conformance")
PYTHON = "/usr/bin/python3"

BIN = os.path.abspath(os.environ.get("CELLGATE_BIN") or os.path.join(REPO, "cellgate"))
# A sanitizer build (ASan+UBSan, or ThreadSanitizer): slower, so some
# bounds are wider.
SANITIZE = os.environ.get("SANITIZE", "0") in ("1", "thread")
IO_THREADS = os.environ.get("CELLGATE_IO_THREADS", "").strip()
if IO_THREADS and not IO_THREADS.isdigit():
    raise SystemExit("CELLGATE_IO_THREADS=%r: want a number of threads" % IO_THREADS)


def io_thread_args(args=(), config_file=None):
    """["--io-threads", N] under CELLGATE_IO_THREADS=N, for a daemon whose
    own arguments (args) and config file set no io-threads; else []. Every
    place a test starts the binary as a server adds these."""
    if not IO_THREADS:
        return []
    if any(str(a) == "--io-threads" for a in args):
        return []
    if config_file:
        try:
            with open(config_file, "r", errors="replace") as f:
                for line in f:
                    words = line.split()
                    if words and words[0].lower() == "io-threads":
                        return []
        except OSError:
            pass        # the daemon reports a missing file itself
    return ["--io-threads", IO_THREADS]

# Lines that mean a sanitizer found something, wherever they appear in the log.
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer",
                     "WARNING: ThreadSanitizer", "ThreadSanitizer:")
# The ThreadSanitizer build's suppressions (third-party libraries only).
TSAN_SUPP = os.path.join(REPO, "tests", "stress", "tsan.supp")

# Seconds until the daemon must answer PING: loading a journal of long
# strings takes a ThreadSanitizer build over 15 s on a busy 2-core machine.
START_TIMEOUT = 60.0 if SANITIZE else 15.0
STOP_TIMEOUT = 15.0      # seconds after SIGTERM until it must have exited
IO_TIMEOUT = 10.0        # default socket timeout of every client

# A base wall-clock time for fake-clock daemons: 2030-01-01T00:00:00Z, the
# start of the conformance vectors. Whole seconds, so TATs stay ms-aligned.
FAKE_EPOCH_NS = 1893456000 * 1000000000

_live = []               # daemons currently running (for failure reports)
SUMMARY = []             # lines a test wants in the run's final summary
_live_lock = threading.Lock()


def live_daemons():
    with _live_lock:
        return list(_live)


_handed_out = collections.deque(maxlen=256)


def free_port():
    """A port that was free a moment ago (bind port 0, read it, release).
    The kernel may hand the port just released to the next bind of port 0,
    so two calls in a row (a daemon's --port and its --grpc-port) could get
    the same one: a port this process handed out recently is skipped."""
    for _ in range(64):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        finally:
            s.close()
        if port not in _handed_out:
            break
    _handed_out.append(port)
    return port


def sanitizer_env(env):
    """Route ASan/UBSan/LSan/TSan reports to the daemon's stderr and make
    them fail the test (fatal, or a non-zero exit at the end for TSan)."""
    env.setdefault("ASAN_OPTIONS",
                   "detect_leaks=1:abort_on_error=0:exitcode=99:halt_on_error=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    env.setdefault("LSAN_OPTIONS", "exitcode=99")
    env.setdefault("TSAN_OPTIONS", "suppressions=%s:halt_on_error=0:exitcode=66:"
                   "second_deadlock_stack=1" % TSAN_SUPP)
    return env


_fakeclock_lock = threading.Lock()
_fakeclock_so = [None]


def fakeclock_library():
    """Compile tests/conformance/fakeclock.c once into a temp .so."""
    with _fakeclock_lock:
        if _fakeclock_so[0] is None:
            out_dir = tempfile.mkdtemp(prefix="cellgate-fakeclock-")
            so = os.path.join(out_dir, "fakeclock.so")
            src = os.path.join(CONFORMANCE, "fakeclock.c")
            subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-shared", "-fPIC",
                            "-o", so, src, "-ldl"], check=True, timeout=60,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            _fakeclock_so[0] = so
        return _fakeclock_so[0]


class FakeClock:
    """The wall clock a fake-clock daemon sees: a file holding epoch ns.

    The daemon never lets its clock go backwards, so this only moves forward.
    """

    def __init__(self, path, start_ns=FAKE_EPOCH_NS):
        self.path = path
        self.ns = None
        self.set(start_ns)

    def set(self, ns, backwards=False):
        if self.ns is not None and ns < self.ns and not backwards:
            raise ValueError("the fake clock only moves forward (%d < %d)" % (ns, self.ns))
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % ns)
        os.replace(tmp, self.path)
        self.ns = ns

    def advance(self, seconds=0.0, ms=0, ns=0):
        self.set(self.ns + int(round(seconds * 1e9)) + int(ms) * 1000000 + int(ns))
        return self.ns

    def fresh_epoch(self, gap_s=86400 * 10):
        """Jump far ahead to a whole second so no earlier state can matter."""
        target = self.ns + gap_s * 1000000000
        target -= target % 1000000000
        self.set(target)
        return self.ns


class RawConn:
    """A plain socket with exact-byte helpers."""

    def __init__(self, port=None, path=None, timeout=IO_TIMEOUT):
        if path is not None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(path)
        else:
            self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.pending = bytearray()

    def send(self, data):
        self.sock.sendall(data)

    def send_slowly(self, data, chunk=1, delay=0.001):
        for i in range(0, len(data), chunk):
            self.sock.sendall(data[i:i + chunk])
            if delay:
                time.sleep(delay)

    def _fill(self, deadline):
        """Read more bytes into pending. Returns False on EOF or reset."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out; got so far: %r" % bytes(self.pending[:300]))
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(1 << 16)
        except socket.timeout:
            raise TimeoutError("timed out; got so far: %r" % bytes(self.pending[:300]))
        except ConnectionResetError:
            return False
        if not chunk:
            return False
        self.pending += chunk
        return True

    def recv_exact(self, n, timeout=None):
        """Exactly n bytes (fails on EOF or timeout, showing what came)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while len(self.pending) < n:
            if not self._fill(deadline):
                raise EOFError("connection closed after %d of %d bytes: %r"
                               % (len(self.pending), n, bytes(self.pending[:300])))
        out = bytes(self.pending[:n])
        del self.pending[:n]
        return out

    def recv_until(self, marker, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while marker not in self.pending:
            if not self._fill(deadline):
                raise EOFError("connection closed before %r: %r" % (marker, bytes(self.pending[:300])))
        i = self.pending.index(marker) + len(marker)
        out = bytes(self.pending[:i])
        del self.pending[:i]
        return out

    def expect(self, data, timeout=None):
        got = self.recv_exact(len(data), timeout)
        assert got == data
        return got

    def read_to_eof(self, timeout=None):
        """Everything until the peer closes. Returns (bytes, closed)."""
        deadline = time.monotonic() + (timeout or self.timeout)
        closed = False
        try:
            while True:
                if not self._fill(deadline):
                    closed = True
                    break
        except TimeoutError:
            pass
        out = bytes(self.pending)
        self.pending = bytearray()
        return out, closed

    def reply_bytes(self, timeout=None):
        """The raw bytes of exactly one RESP2/RESP3 reply (aggregates whole)."""
        line = self.recv_until(b"\r\n", timeout)
        t = line[:1]
        if t in (b"$", b"=", b"!"):
            n = int(line[1:-2])
            return line if n < 0 else line + self.recv_exact(n + 2, timeout)
        if t in (b"*", b"~", b">", b"%", b"|"):
            n = int(line[1:-2])
            if t in (b"%", b"|"):
                n *= 2
            return line + b"".join(self.reply_bytes(timeout) for _ in range(max(n, 0)))
        return line

    def command(self, *args, timeout=None):
        """Send one multibulk request; the raw bytes of its reply."""
        self.send(resp_command(*args))
        return self.reply_bytes(timeout)

    def call(self, data, reply_len, timeout=None):
        self.send(data)
        return self.recv_exact(reply_len, timeout)

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def resp_command(*args):
    """Encode one RESP2 multibulk request."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode("utf-8")
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def crc16_xmodem(data):
    """CRC16-CCITT (XMODEM), as Redis Cluster hashes keys."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def reference_slot(key):
    """The Redis Cluster hash slot of key (bytes or str), computed here."""
    if isinstance(key, str):
        key = key.encode()
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc16_xmodem(key) % 16384


class DaemonError(Exception):
    pass


class Daemon:
    def __init__(self, workdir, extra_args=(), fakeclock=False, port=None,
                 tcp=True, config_file=None, env=None, name="cellgate"):
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.extra_args = [str(a) for a in extra_args]
        self.use_fakeclock = fakeclock
        self.want_port = port
        self.tcp = tcp
        self.config_file = config_file
        self.extra_env = dict(env or {})
        self.name = name
        self.log_path = os.path.join(workdir, "%s.log" % name)
        self.proc = None
        self.port = None
        self.unixsocket = None
        self.clock = None
        self._clients = []
        self._raws = []
        self.stopped = False
        self.exit_code = None

    # ---- start / stop ----------------------------------------------------

    def _argv(self):
        argv = [BIN]
        if self.config_file:
            argv.append(self.config_file)
        # CELLGATE_IO_THREADS (make test-integration-threads), before the
        # test's own arguments.
        argv += io_thread_args(self.extra_args, self.config_file)
        # Snapshots go to the daemon's own folder, never the test's cwd;
        # without a config file the save rules are off unless the test sets
        # them (a shutdown then writes nothing, as tests expect). The
        # test's own arguments come after these and win.
        argv += ["--dir", self.workdir]
        if not self.config_file:
            argv += ["--save", ""]
        argv += ["--bind", "127.0.0.1"]
        if self.tcp:
            argv += ["--port", str(self.port)]
        else:
            argv += ["--port", "0"]
        return argv + self.extra_args

    def _env(self):
        env = sanitizer_env(dict(os.environ))
        if self.use_fakeclock:
            env["FAKECLOCK_FILE"] = self.clock.path
            env["LD_PRELOAD"] = fakeclock_library()
            # ASan wants its runtime first in the library list; the shim
            # only replaces clock functions, so the order does not matter.
            opts = env.get("ASAN_OPTIONS", "")
            if "verify_asan_link_order" not in opts:
                env["ASAN_OPTIONS"] = (opts + ":" if opts else "") + "verify_asan_link_order=0"
        env.update(self.extra_env)
        return env

    def start(self):
        self.stopped = False    # a daemon started again is stopped again
        if self.use_fakeclock and self.clock is None:
            start_ns = self.use_fakeclock if isinstance(self.use_fakeclock, int) \
                and not isinstance(self.use_fakeclock, bool) else FAKE_EPOCH_NS
            self.clock = FakeClock(os.path.join(self.workdir, "clock"), start_ns)
        if "--unixsocket" in self.extra_args:
            self.unixsocket = self.extra_args[self.extra_args.index("--unixsocket") + 1]
        attempts = 5 if (self.tcp and self.want_port is None) else 1
        last = ""
        for _ in range(attempts):
            self.port = self.want_port or (free_port() if self.tcp else None)
            if self._start_once():
                with _live_lock:
                    _live.append(self)
                return self
            last = self.log()
            # Lost a race for the port: try another one.
            if "listening socket" not in last:
                break
        raise DaemonError("cellgate did not start (argv %s):\n%s" % (self._argv(), last))

    def _start_once(self):
        logf = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(self._argv(), stdin=subprocess.DEVNULL,
                                         stdout=logf, stderr=logf, env=self._env(),
                                         cwd=self.workdir)
        finally:
            logf.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if self._ping_once():
                return True
            time.sleep(0.02)
        self.proc.kill()
        self.proc.wait(5)
        raise DaemonError("cellgate did not answer PING within %.0f s:\n%s"
                          % (START_TIMEOUT, self.log()))

    def _ping_once(self):
        try:
            if self.tcp:
                s = socket.create_connection(("127.0.0.1", self.port), timeout=1.0)
            else:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.settimeout(1.0)
                s.connect(self.unixsocket)
        except OSError:
            return False
        try:
            s.sendall(b"PING\r\n")
            got = b""
            while b"\r\n" not in got:
                chunk = s.recv(256)
                if not chunk:
                    break
                got += chunk
            # With requirepass the server is up when it asks for AUTH.
            up = got == b"+PONG\r\n" or got.startswith(b"-NOAUTH ")
            if up:
                # The probe is gone from the server when start() returns
                # (a test of maxclients counts on it): it closes its side
                # of the socket once it reads this end's EOF.
                s.shutdown(socket.SHUT_WR)
                while s.recv(256):
                    pass
            return up
        except OSError:
            return False
        finally:
            s.close()

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def sanitizer_report(self):
        text = self.log()
        for marker in SANITIZER_MARKERS:
            if marker in text:
                return marker
        return None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self):
        """Problems seen so far (daemon died, sanitizer report), or []."""
        problems = []
        if not self.alive():
            problems.append("cellgate exited unexpectedly with code %r" % self.proc.poll())
        marker = self.sanitizer_report()
        if marker:
            problems.append("sanitizer report in the log (%s)" % marker)
        return problems

    def close_clients(self):
        for c in self._clients:
            try:
                c.close()
            except Exception:
                pass
        self._clients = []
        for r in self._raws:
            r.close()
        self._raws = []

    def stop(self, sig=signal.SIGTERM):
        """SIGTERM, bounded wait, exit code 0 and no sanitizer report.

        Returns a list of problems (empty when all is well)."""
        if self.stopped:
            return []
        self.stopped = True
        problems = []
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
                problems.append("cellgate did not exit within %.0f s of SIGTERM "
                                "(killed)" % STOP_TIMEOUT)
        else:
            problems.append("cellgate had already exited (code %r) before SIGTERM"
                            % self.proc.returncode)
        # Clients still connected at SIGTERM are part of the test: the
        # daemon closes them itself on the way out.
        self.close_clients()
        self.exit_code = self.proc.returncode
        if self.exit_code != 0 and not problems:
            problems.append("cellgate exited with code %r after SIGTERM" % self.exit_code)
        marker = self.sanitizer_report()
        if marker:
            problems.append("sanitizer report in the log (%s)" % marker)
        with _live_lock:
            if self in _live:
                _live.remove(self)
        return problems

    def wait_exit(self, timeout):
        """For a daemon told to exit by a command (SHUTDOWN): wait for it,
        fail on a sanitizer report, return its exit code (None: still up)."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.stopped = True
        self.exit_code = code
        with _live_lock:
            if self in _live:
                _live.remove(self)
        marker = self.sanitizer_report()
        if marker:
            raise AssertionError("sanitizer report in the log (%s):\n%s"
                                 % (marker, log_tail(self.log())))
        return code

    # ---- clients ---------------------------------------------------------

    def client(self, decode_responses=False, **kw):
        kw.setdefault("socket_timeout", IO_TIMEOUT)
        kw.setdefault("socket_connect_timeout", IO_TIMEOUT)
        if self.tcp:
            c = redis.Redis(host="127.0.0.1", port=self.port,
                            decode_responses=decode_responses, **kw)
        else:
            c = redis.Redis(unix_socket_path=self.unixsocket,
                            decode_responses=decode_responses, **kw)
        self._clients.append(c)
        return c

    def raw(self, timeout=IO_TIMEOUT, unix=False):
        r = RawConn(port=None if unix else self.port,
                    path=self.unixsocket if unix else None, timeout=timeout)
        self._raws.append(r)
        return r

    def info(self, section=None):
        c = self.client(decode_responses=True)
        try:
            return c.info(section) if section else c.info()
        finally:
            c.close()
            self._clients.remove(c)

    def ping_fresh(self):
        """A brand-new connection gets PONG: the daemon survived."""
        r = RawConn(port=self.port)
        try:
            r.send(b"*1\r\n$4\r\nPING\r\n")
            return r.recv_exact(7) == b"+PONG\r\n"
        finally:
            r.close()


def wait_until(pred, timeout, interval=0.05):
    """Poll pred() until true or timeout; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


def log_tail(text, lines=150):
    parts = text.splitlines()
    if len(parts) > lines:
        parts = ["... (%d earlier lines)" % (len(parts) - lines)] + parts[-lines:]
    return "\n".join(parts)


if __name__ == "__main__":
    # Manual use: python3 harness.py [args...] starts a daemon and waits.
    d = Daemon(tempfile.mkdtemp(prefix="cellgate-"), extra_args=sys.argv[1:]).start()
    print("cellgate on port", d.port, "log", d.log_path)
    try:
        d.proc.wait()
    except KeyboardInterrupt:
        print(d.stop())


REDIS_SERVER = "/usr/bin/redis-server"   # Debian's 7.0: the reference


class RedisServer:
    """Debian's redis-server on a free loopback port, no persistence: the
    reference a test compares cellgate's answers with."""

    def __init__(self, workdir, extra_args=(), config_file=None):
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.extra_args = [str(a) for a in extra_args]
        self.config_file = config_file     # first, as redis-server takes it
        self.proc = None
        self.port = None
        self._clients = []

    def start(self):
        for _ in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(
                [REDIS_SERVER] + ([self.config_file] if self.config_file else [])
                + ["--bind", "127.0.0.1", "--port", str(self.port),
                 "--save", "", "--appendonly", "no", "--dir", self.workdir]
                + self.extra_args,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if wait_until(self._pong, START_TIMEOUT):
                return self
            self.stop()
        raise DaemonError("redis-server did not start")

    def _pong(self):
        if self.proc.poll() is not None:
            return True     # exited: start() sees it below
        try:
            return redis.Redis(port=self.port, socket_timeout=1).ping()
        except redis.ConnectionError:
            return False

    def client(self):
        c = redis.Redis(port=self.port, socket_timeout=IO_TIMEOUT)
        self._clients.append(c)
        return c

    def stop(self):
        for c in self._clients:
            c.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@contextlib.contextmanager
def small_disk(mnt, size="1m"):
    """A tmpfs of the given size mounted at mnt (created): a disk that
    really fills up. Unmounted on the way out."""
    os.makedirs(mnt, exist_ok=True)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", mnt],
                       capture_output=True, text=True)
    assert p.returncode == 0, "mounting a tmpfs (the tests run as root): " + p.stderr
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", mnt], capture_output=True)


def fill_disk(path):
    """Write zeros to path until its disk is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while os.write(fd, b"\0" * 4096) > 0:
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def npm_installed_matches_lock(folder):
    """Whether folder's node_modules holds every version its committed
    package-lock.json pins (a checkout may have older ones installed, or
    none)."""
    with open(os.path.join(folder, "package-lock.json")) as f:
        lock = json.load(f)["packages"]
    for name, pkg in lock.items():
        if not name.startswith("node_modules/"):
            continue
        if pkg.get("optional") and not os.path.isdir(os.path.join(folder, name)):
            continue    # another platform's build (msgpackr-extract's), not installed here
        try:
            with open(os.path.join(folder, name, "package.json")) as f:
                if json.load(f)["version"] != pkg["version"]:
                    return False
        except (OSError, KeyError, ValueError):
            return False
    return True


def npm_install_locked(folder):
    """npm ci in folder unless node_modules already matches its lock file;
    one install at a time (make test runs the suite in several processes)."""
    assert shutil.which("node") and shutil.which("npm"), \
        "node and npm are needed (make deps installs Debian's nodejs and npm)"
    with open(os.path.join(folder, "node_modules.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not npm_installed_matches_lock(folder):
            out = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"],
                                 cwd=folder, capture_output=True, text=True, timeout=300)
            assert out.returncode == 0, out.stderr[-2000:]
        assert npm_installed_matches_lock(folder)

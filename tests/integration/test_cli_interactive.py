"""redis-cli as a person uses it: an interactive session in a tmux pane.

On a terminal redis-cli asks COMMAND DOCS for its help and the grey argument
hints it shows after a command name, then prints replies in its TTY format
("(integer) 0", "(error) ..."). Everything asserted here is the text of the
pane. The daemon runs on the fake clock, so the replies are exact; every wait
polls the pane against a deadline, and the tmux server (on a socket of the
test's own) is killed in teardown.
"""
import os
import shutil
import subprocess
import time

import pytest

REDIS_CLI = shutil.which("redis-cli")
TMUX = shutil.which("tmux")

pytestmark = pytest.mark.skipif(not (REDIS_CLI and TMUX),
                                reason="needs redis-cli (redis-tools) and tmux")

WAIT = 10.0      # seconds any one screen state may take to appear
POLL = 0.05


class Pane:
    """One tmux session running `redis-cli -p PORT`."""

    def __init__(self, sock, port, *cli_args):
        self.sock = sock
        self.prompt = "127.0.0.1:%d>" % port
        env = dict(os.environ, TERM="xterm")
        self.env = env
        self.tmux("new-session", "-d", "-s", "cli", "-x", "220", "-y", "60",
                  " ".join([REDIS_CLI, "-h", "127.0.0.1", "-p", str(port)] + list(cli_args)))

    def tmux(self, *args):
        p = subprocess.run([TMUX, "-S", self.sock] + list(args), env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=WAIT, text=True)
        assert p.returncode == 0, (args, p.stderr)
        return p.stdout

    def lines(self):
        """The whole pane history, wrapped lines joined, right-trimmed."""
        out = self.tmux("capture-pane", "-p", "-J", "-S", "-", "-E", "-", "-t", "cli")
        return [line.rstrip() for line in out.split("\n")]

    def last_line(self):
        filled = [line for line in self.lines() if line]
        return filled[-1] if filled else ""

    def wait_for(self, what, pred):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            lines = self.lines()
            if pred(lines):
                return lines
            time.sleep(POLL)
        pytest.fail("timed out waiting for %s; pane:\n%s" % (what, "\n".join(self.lines())))

    def type(self, text):
        self.tmux("send-keys", "-t", "cli", "-l", text)

    def clear_line(self):
        self.tmux("send-keys", "-t", "cli", "C-u")
        self.wait_for("an empty prompt", lambda ls: self._last(ls) == self.prompt)

    def _last(self, lines):
        filled = [line for line in lines if line]
        return filled[-1] if filled else ""

    def hint(self, typed):
        """Type `typed` (no Enter); the prompt line redis-cli then shows."""
        self.type(typed)
        start = "%s %s" % (self.prompt, typed.rstrip())
        # The hint is drawn after the typed text; wait until the line has more.
        line = self._last(self.wait_for(
            "the hint after %r" % typed,
            lambda ls: self._last(ls).startswith(start) and len(self._last(ls)) > len(start)))
        self.clear_line()
        return line[len(self.prompt) + 1:]

    def run(self, command):
        """Type a command and Enter; the reply lines redis-cli printed."""
        echo = "%s %s" % (self.prompt, command)
        before = sum(1 for line in self.lines() if line == echo)
        self.type(command)
        self.tmux("send-keys", "-t", "cli", "Enter")

        def done(lines):
            idx = [i for i, line in enumerate(lines) if line == echo]
            return (len(idx) > before and
                    any(line.startswith(self.prompt) for line in lines[idx[-1] + 1:]))
        lines = self.wait_for("the reply to %r" % command, done)
        start = max(i for i, line in enumerate(lines) if line == echo) + 1
        end = next(i for i in range(start, len(lines)) if lines[i].startswith(self.prompt))
        return lines[start:end]


def open_pane(sock, port, *cli_args):
    p = Pane(sock, port, *cli_args)
    lines = p.wait_for("the redis-cli prompt", lambda ls: p._last(ls) == p.prompt)
    # Nothing before it: redis-cli read all of COMMAND DOCS without a
    # complaint (it prints "Unknown type ..." for arguments it cannot draw).
    assert [line for line in lines if line] == [p.prompt]
    return p


def kill_tmux(sock):
    subprocess.run([TMUX, "-S", sock, "kill-server"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=WAIT)


@pytest.fixture
def tmux_sock(tmp_path):
    sock = str(tmp_path / "tmux.sock")
    try:
        yield sock
    finally:
        kill_tmux(sock)


@pytest.fixture
def pane(fserver, tmux_sock):
    return open_pane(tmux_sock, fserver.port)


def ints(*values):
    return ["%d) (integer) %d" % (i + 1, v) for i, v in enumerate(values)]


# The hints redis-cli 7.0 (Debian bookworm) draws from cellgate's COMMAND DOCS.
HINTS = [
    ("CL.THROTTLE ", "CL.THROTTLE key max_burst count period [quantity] [RESERVE max_wait] "
                     "[PEEK] [MS]"),
    ("RL.FIXED ", "RL.FIXED key limit window [COST n] [ALIGN] [PEEK] [MS] "
                  "[CALENDAR zone] [WEEKSTART day]"),
    ("RL.SLIDING ", "RL.SLIDING key limit window [COST n] [PEEK] [MS]"),
    ("RL.LOG ", "RL.LOG key limit window [COST n] [META value] [PEEK] [MS]"),
    ("RL.ENTRIES ", "RL.ENTRIES key [COUNT n]"),
    ("RL.TIERS ", "RL.TIERS key limit1 window1 [limit2 window2 [limit2 window2 ...]] "
                  "[COST n] [PEEK] [MS]"),
    ("RL.CHECK ", "RL.CHECK domain entry [entry ...] [ENTRY key value] [HITS n] "
                  "[NEGATIVE] [LIMIT requests unit] [PEEK] [MS] [STATUS] "
                  "[SHARE member demand interval]"),
    ("RL.TOPDENIED ", "RL.TOPDENIED [COUNT n] [DB index]"),
    ("RL.ALL ", "RL.ALL numparts argc command arg [argc command arg ...] [PEEK]"),
    ("RL.ACQUIRE ", "RL.ACQUIRE key limit lease [HOLDER id] [WAIT timeout] [PEEK] [MS]"),
    ("RL.REFRESH ", "RL.REFRESH key holder lease [MS]"),
    ("RL.RELEASE ", "RL.RELEASE key holder"),
    ("RL.LEASES ", "RL.LEASES key [MS]"),
    # The hint follows what is typed: the arguments given drop out.
    ("RL.FIXED k 10 60 ", "RL.FIXED k 10 60 [COST n] [ALIGN] [PEEK] [MS] "
                          "[CALENDAR zone] [WEEKSTART day]"),
    ("cl.throttle ", "cl.throttle key max_burst count period [quantity] [RESERVE max_wait] "
                     "[PEEK] [MS]"),
    ("CLIENT NO-EVICT ", "CLIENT NO-EVICT ON|OFF"),
    ("COMMAND GETKEYS ", "COMMAND GETKEYS command arg [arg ...]"),
]


def test_hints_for_every_limiter(pane):
    for typed, shown in HINTS:
        assert pane.hint(typed) == shown


# What redis-cli 7.0 draws against redis-server 7.0.15 for the same lines:
# cellgate's docs of these commands are Redis's.
REDIS_HINTS = [
    ("SET ", "SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|"
             "PXAT unix-time-milliseconds|KEEPTTL]"),
    ("GETEX ", "GETEX key [EX seconds|PX milliseconds|EXAT unix-time-seconds|"
               "PXAT unix-time-milliseconds|PERSIST]"),
    ("MSET ", "MSET key value [key value ...]"),
    ("EXPIRE k 10 ", "EXPIRE k 10 [NX|XX|GT|LT]"),
    ("COPY ", "COPY source destination [DB destination-db] [REPLACE]"),
    ("FLUSHALL ", "FLUSHALL [ASYNC|SYNC]"),
    ("SCAN ", "SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]"),
]


def test_hints_for_string_and_keyspace_commands_are_redis_s(pane):
    for typed, shown in REDIS_HINTS:
        assert pane.hint(typed) == shown


def test_resp3_session_hints_and_replies(fserver, tmux_sock):
    """redis-cli -3: HELLO 3 first, so COMMAND DOCS arrives as RESP3 maps."""
    pane = open_pane(tmux_sock, fserver.port, "-3")
    assert pane.hint("RL.TIERS ") == HINTS[5][1]
    assert pane.run("RL.TIERS t 10 1 20 10") == ints(0, 10, 9, -1, 10)
    assert pane.run("RL.ENTRIES nosuchkey") == ["(empty array)"]
    assert pane.run("RL.FIXED k 1 1 BOGUS") == ["(error) ERR syntax error"]
    assert pane.run("CLIENT INFO")[0].split(" resp=")[1].startswith("3 ")


def test_help_group_lists_every_limiter(pane):
    # "help @<group>" lists the group's commands by name, each with its usage.
    lines = pane.run("help @ratelimit")
    usage = [line.strip() for line in lines
             if line and not line.lstrip().startswith(("summary:", "since:"))]
    assert usage == sorted(shown for typed, shown in HINTS[:13])


def test_help_shows_the_docs(pane):
    assert pane.run("help RL.ENTRIES") == [
        "",
        "  RL.ENTRIES key [COUNT n]",
        "  summary: The requests an RL.LOG key holds, newest first.",
        "  since: 0.1.0",
        "  group: ratelimit",
        "",
    ]


def test_limiter_replies_as_rendered(fserver, pane):
    now_ms = fserver.clock.ns // 1000000
    assert pane.run("CL.THROTTLE user123 15 30 60") == ints(0, 16, 15, -1, 2)
    assert pane.run("CL.THROTTLE user123 15 30 60") == ints(0, 16, 14, -1, 4)
    assert pane.run("CL.THROTTLE user123 15 30 60 0 PEEK MS") == ints(0, 16, 14, -1, 4000)
    assert pane.run("RL.FIXED transfers 2000 86400 COST 350") == ints(0, 2000, 1650, -1, 86400)
    assert pane.run("RL.FIXED transfers 2000 86400 COST 2000 PEEK") == ints(
        1, 2000, 1650, 86400, 86400)
    # Sliding windows sit on the epoch grid; the count ages out with the
    # window after the current one.
    grid_ms = 120000 - now_ms % 60000
    assert pane.run("RL.SLIDING s 10 60") == ints(0, 10, 9, -1, -(-grid_ms // 1000))
    assert pane.run("RL.SLIDING s 10 60 COST 3 MS") == ints(0, 10, 6, -1, grid_ms)
    assert pane.run("RL.LOG quota 3 60 META alice") == ints(0, 3, 2, -1, 60)
    assert pane.run("RL.LOG quota 3 60 COST 2 META bob") == ints(0, 3, 0, -1, 60)
    assert pane.run("RL.LOG quota 3 60 PEEK") == ints(1, 3, 0, 60, 60)
    assert pane.run("RL.ENTRIES quota") == [
        "1) 1) (integer) %d" % now_ms,
        "   2) (integer) 2",
        '   3) "bob"',
        "2) 1) (integer) %d" % now_ms,
        "   2) (integer) 1",
        '   3) "alice"',
    ]
    assert pane.run("RL.ENTRIES quota COUNT 1") == [
        "1) 1) (integer) %d" % now_ms, "   2) (integer) 2", '   3) "bob"']
    assert pane.run("RL.ENTRIES nosuchkey") == ["(empty array)"]
    assert pane.run("RL.TIERS t 10 1 20 10") == ints(0, 10, 9, -1, 10)
    assert pane.run("RL.TIERS t 10 1 20 10 COST 9 MS") == ints(0, 10, 0, -1, 10000)
    assert pane.run("RL.TIERS t 10 1 20 10") == ints(1, 10, 0, 1, 10)


def test_errors_as_rendered(pane):
    assert pane.run("RL.FIXED k 1 1 BOGUS") == ["(error) ERR syntax error"]
    assert pane.run("RL.FIXED k 0 1") == ["(error) ERR limit and window must be positive"]
    assert pane.run("RL.SLIDING k ten 60") == [
        "(error) ERR value is not an integer or out of range"]
    assert pane.run("CL.THROTTLE k 1") == [
        "(error) Cell error: Store error: Usage: cl.throttle <key> <max_burst> "
        "<count per period> <period> [<quantity>]"]
    assert pane.run("CL.THROTTLE g 1 0 1") == [
        "(error) Cell error: Store error: Zero rates are not supported"]
    assert pane.run("CL.THROTTLE g 1 1 1") == ints(0, 2, 1, -1, 1)
    assert pane.run("RL.TIERS g 1 1") == [
        "(error) WRONGTYPE Operation against a key holding the wrong kind of value"]
    # (the pane drops the reply's trailing space)
    assert pane.run("RL.NOPE x") == [
        "(error) ERR unknown command 'RL.NOPE', with args beginning with: 'x'"]
    # The session goes on after errors.
    assert pane.run("PING") == ["PONG"]

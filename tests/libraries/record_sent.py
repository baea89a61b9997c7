"""What a library sends: run a command (a drive.mjs scenario, or any program
that takes the port last) against a Redis server while a MONITOR connection
watches, then print each distinct command with how often it came, scripts
by SHA1 (EVAL bodies hashed, SCRIPT LOAD bodies hashed, EVALSHA as sent),
and the commands the scripts ran (MONITOR shows them as from "lua").

    python3 tests/libraries/record_sent.py <port> node tests/libraries/drive.mjs express

Not part of the test suite: the notes on what each library sends
(docs/compat.md) were written from its output against redis-server.
"""
import collections
import hashlib
import re
import socket
import subprocess
import sys
import threading

import redis

LINE = re.compile(rb'^\+[\d.]+ \[\d+ ([^\]]+)\] (.*)$')
ESC = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"a": b"\a", b"b": b"\b",
       b"\\": b"\\", b'"': b'"'}


def args_of(text):
    """The arguments of one MONITOR line, exact bytes (sdscatrepr undone)."""
    out, i = [], 0
    while i < len(text):
        if text[i:i + 1] != b'"':
            i += 1
            continue
        i += 1
        arg = bytearray()
        while text[i:i + 1] != b'"':
            c = text[i:i + 1]
            if c == b"\\":
                n = text[i + 1:i + 2]
                if n == b"x":
                    arg += bytes([int(text[i + 2:i + 4], 16)])
                    i += 4
                    continue
                arg += ESC.get(n, n)
                i += 2
                continue
            arg += c
            i += 1
        out.append(bytes(arg))
        i += 1
    return out


def main():
    port = int(sys.argv[1])
    argv = sys.argv[2:] + [str(port)]
    sock = socket.create_connection(("127.0.0.1", port), timeout=120)
    sock.sendall(b"MONITOR\r\n")
    f = sock.makefile("rb")
    assert f.readline() == b"+OK\r\n"
    lines = []

    def watch():
        for raw in f:
            if b"__record_sent_done__" in raw:
                return
            lines.append(raw.rstrip(b"\r\n"))

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    redis.Redis(port=port).echo("__record_sent_done__")
    t.join(10)
    sock.close()
    sys.stderr.write(out.stderr)
    by_client = collections.Counter()
    from_lua = collections.Counter()
    scripts = {}
    for raw in lines:
        m = LINE.match(raw)
        if not m:
            continue
        lua = m.group(1) == b"lua"
        parts = args_of(m.group(2))
        if not parts:
            continue
        name = parts[0].decode().upper()
        shape = name
        if name in ("SCRIPT", "CLIENT", "CONFIG", "HELLO") and len(parts) > 1:
            shape += " " + parts[1].decode().upper()
        if name in ("EVAL", "EVAL_RO") or shape == "SCRIPT LOAD":
            body = parts[1] if name.startswith("EVAL") else parts[2]
            sha = hashlib.sha1(body).hexdigest()
            scripts.setdefault(sha, body)
            shape += " " + sha
        elif name in ("EVALSHA", "EVALSHA_RO"):
            shape += " " + parts[1].decode()
        (from_lua if lua else by_client)[shape] += 1
    print("sent by the client:")
    for k, n in sorted(by_client.items()):
        print("  %4d  %s" % (n, k))
    print("run by scripts:")
    for k, n in sorted(from_lua.items()):
        print("  %4d  %s" % (n, k))
    print("script bodies:")
    for sha, body in scripts.items():
        print("  %s  %d bytes:" % (sha, len(body)))
        for ln in body.decode(errors="replace").strip().splitlines():
            print("      " + ln)
    print("exit %d; stdout: %s" % (out.returncode, out.stdout.strip()[:300]))


if __name__ == "__main__":
    main()

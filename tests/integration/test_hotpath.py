"""The request hot path's shortcuts, checked by what a client sees: command
names are matched case-insensitively without lower-casing them (only the
letters fold), and reply integers of every digit count are exact."""
from harness import resp_command


def unknown(name, *args):
    shown = "".join("'%s' " % a for a in args)
    return b"-ERR unknown command '%s', with args beginning with: %s\r\n" % (
        name.encode(), shown.encode())


def test_command_names_match_in_any_case(server):
    conn = server.raw()
    for name in ("PING", "ping", "pInG", "Ping"):
        assert conn.command(name) == b"+PONG\r\n"
    for name in ("CL.THROTTLE", "cl.throttle", "cL.ThRoTtLe"):
        assert conn.command(name, "hot:case", "0", "1", "60").startswith(b"*5\r\n")


def test_only_letters_fold_when_names_are_matched(server):
    conn = server.raw()
    # '\x0e' and '.' differ only in the case bit (0x20), as do '@' and '`':
    # only letters may fold, so none of these names is a command.
    for name in ("CL,THROTTLE", "cl\x0ethrottle", "@ING", "p@ng", "PIN",
                 "PINGG", "cl.throttl", "cl.throttlee", "rl.fixed.",
                 "x" * 31, "x" * 32):
        assert conn.command(name, "k") == unknown(name, "k")
    assert conn.command("PING") == b"+PONG\r\n"


def test_reply_integers_of_every_digit_count(server):
    conn = server.raw()
    # The limit (max_burst + 1) is echoed as the second integer.
    for burst in (0, 8, 9, 98, 99, 999, 12344, 99999, 10 ** 9, 10 ** 18 - 1,
                  2 ** 62):
        key = "hot:digits:%d" % burst
        got = conn.command("CL.THROTTLE", key, str(burst), "1", "1", "PEEK")
        want_limit = b":%d\r\n" % (burst + 1)
        assert got.split(b"\r\n")[2] + b"\r\n" == want_limit, got


def test_pipelined_keys_hashed_once_are_found_again(server):
    # 500 keys of one length, each hit four times, in one pipelined send
    # with inline and keyless requests in between: the prefetched hash is
    # reused for the lookup and the add, so every key must exist once and
    # count down exactly.
    conn = server.raw()
    keys = ["hot:pipe:%04d" % i for i in range(500)]
    order = [k for rnd in range(4) for k in keys]
    parts = []
    for i, k in enumerate(order):
        parts.append(resp_command("CL.THROTTLE", k, "15", "30", "60"))
        if i % 97 == 0:
            parts.append(b"PING\r\n")
        if i % 89 == 0:
            parts.append(resp_command("PING"))
    conn.send(b"".join(parts))
    seen = {}
    for i, k in enumerate(order):
        reply = conn.reply_bytes()
        assert reply.startswith(b"*5\r\n:0\r\n:16\r\n"), reply
        remaining = int(reply.split(b"\r\n")[3][1:])
        assert remaining == 15 - seen.get(k, 0), (k, reply)
        seen[k] = seen.get(k, 0) + 1
        if i % 97 == 0:
            assert conn.reply_bytes() == b"+PONG\r\n"
        if i % 89 == 0:
            assert conn.reply_bytes() == b"+PONG\r\n"
    assert conn.command("KEYS", "hot:pipe:*").startswith(b"*500\r\n")

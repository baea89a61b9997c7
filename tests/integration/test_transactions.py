"""MULTI / EXEC / DISCARD / WATCH / UNWATCH with Redis 7's semantics, on
limiter keys (the replies of generic cases are compared with redis-server
byte for byte in test_differential.py)."""
import threading
import time

import pytest
import redis

import harness
from harness import resp_command


def tx(conn, *commands):
    """MULTI, the commands, EXEC on a raw connection: the raw replies."""
    out = [conn.command("MULTI")]
    out += [conn.command(*c) for c in commands]
    out.append(conn.command("EXEC"))
    return out


def test_exec_runs_the_queue_and_answers_in_one_array(server):
    conn = server.raw()
    got = tx(conn, ("CL.THROTTLE", "t", 1, 1, 60), ("CL.THROTTLE", "t", 1, 1, 60),
             ("CL.THROTTLE", "t", 1, 1, 60))
    assert got[:4] == [b"+OK\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n", b"+QUEUED\r\n"]
    assert got[4] == (b"*3\r\n"
                      b"*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:60\r\n"
                      b"*5\r\n:0\r\n:2\r\n:0\r\n:-1\r\n:120\r\n"
                      b"*5\r\n:1\r\n:2\r\n:0\r\n:60\r\n:120\r\n")


def test_keys_written_inside_exec_are_the_keys_later_commands_find(server):
    # Each queued command looks up its own key: a key must not be filed
    # under the hash of the key before it (found by fuzz_cmd: a duplicate
    # key that made the snapshot unloadable).
    conn = server.raw()
    queued = [("CL.THROTTLE", "g%d" % i, 0, 1, 60) for i in range(40)]
    queued += [("RL.LOG", "l", 1, 60), ("RL.FIXED", "f", 1, 60)]
    got = tx(conn, *queued)
    assert got[-1].startswith(b"*42\r\n")
    assert conn.command("DBSIZE") == b":42\r\n"
    allowed_again = [c[1] for c in queued
                     if not conn.command(*c).startswith(b"*5\r\n:1\r\n")]
    assert allowed_again == []
    assert conn.command("DBSIZE") == b":42\r\n"
    keys = server.client().keys("*")
    assert len(keys) == len(set(keys)) == 42


def test_a_refused_command_aborts_the_whole_transaction(server):
    conn = server.raw()
    got = tx(conn, ("CL.THROTTLE", "a", 1, 1, 60), ("RL.FIXED", "a", 1))
    assert got[2] == b"-ERR wrong number of arguments for 'rl.fixed' command\r\n"
    assert got[3] == b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    assert conn.command("EXISTS", "a") == b":0\r\n"      # nothing ran


def test_errors_at_run_time_are_replies_inside_the_array(server):
    conn = server.raw()
    got = tx(conn, ("RL.FIXED", "f", 5, 60), ("GET", "f"), ("RL.FIXED", "f", 5, 60))
    assert got[-1].startswith(b"*3\r\n*5\r\n:0\r\n:5\r\n:4\r\n")
    assert b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n" \
        in got[-1]
    assert got[-1].endswith(b":3\r\n:-1\r\n:60\r\n")


def test_the_whole_exec_runs_at_one_instant(fserver):
    # 1 request per 10 s, burst 1: at one instant the second is denied
    # with exactly the first's wait, whatever time passes between queuing.
    conn = fserver.raw()
    conn.command("MULTI")
    conn.command("CL.THROTTLE", "i", 0, 1, 10, "MS")
    fserver.clock.advance(seconds=3)
    conn.command("CL.THROTTLE", "i", 0, 1, 10, "MS")
    got = conn.command("EXEC")
    assert got == (b"*2\r\n*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:10000\r\n"
                   b"*5\r\n:1\r\n:1\r\n:0\r\n:10000\r\n:10000\r\n")


@pytest.mark.parametrize("proto,null", [(2, b"*-1\r\n"), (3, b"_\r\n")])
def test_a_watched_key_written_by_another_client_makes_exec_answer_null(server, proto,
                                                                        null):
    conn, other = server.raw(), server.raw()
    if proto == 3:
        conn.command("HELLO", "3")
    other.command("CL.THROTTLE", "w", 5, 1, 60)
    assert conn.command("WATCH", "w") == b"+OK\r\n"
    other.command("CL.THROTTLE", "w", 5, 1, 60)
    assert tx(conn, ("CL.THROTTLE", "w", 5, 1, 60))[-1] == null
    # Nothing ran: the key holds the two requests of the other client.
    # (PEEK answers as if it took one: 6 - 2 - 1.)
    assert other.command("CL.THROTTLE", "w", 5, 1, 60, "PEEK")[:15] == \
        b"*5\r\n:0\r\n:6\r\n:3\r"


def test_reads_and_peeks_do_not_touch_a_watched_key(server):
    conn, other = server.raw(), server.raw()
    other.command("RL.LOG", "r", 5, 60)
    conn.command("WATCH", "r")
    other.command("RL.LOG", "r", 5, 60, "PEEK")
    other.command("RL.ENTRIES", "r")
    other.command("PTTL", "r")
    other.command("RL.LOG", "r", 5, 60, "COST", 9)       # denied: writes nothing
    got = tx(conn, ("RL.LOG", "r", 5, 60))
    assert got[-1].startswith(b"*1\r\n*5\r\n:0\r\n:5\r\n:3\r\n")


@pytest.mark.parametrize("change", [
    ("DEL", "c"), ("FLUSHALL",), ("FLUSHDB",), ("RL.FIXED", "c", 5, 60, "COST", -1),
    ("RL.FIXED", "c", 5, 60)])
def test_delete_flush_refund_and_write_all_touch(server, change):
    conn, other = server.raw(), server.raw()
    other.command("RL.FIXED", "c", 5, 60)
    conn.command("WATCH", "c")
    other.command(*change)
    assert tx(conn, ("PING",))[-1] == b"*-1\r\n"


def test_a_missing_watched_key_created_meanwhile_touches(server):
    conn, other = server.raw(), server.raw()
    conn.command("WATCH", "new")
    other.command("CL.THROTTLE", "new", 5, 1, 60)
    assert tx(conn, ("PING",))[-1] == b"*-1\r\n"


def test_a_watched_key_that_expires_before_exec_touches(fserver):
    conn = fserver.raw()
    conn.command("CL.THROTTLE", "e", 0, 1, 1)
    conn.command("WATCH", "e")
    fserver.clock.advance(seconds=2)                     # fresh again: gone
    assert tx(conn, ("PING",))[-1] == b"*-1\r\n"


def test_unwatch_and_exec_forget_the_watch(server):
    conn, other = server.raw(), server.raw()
    conn.command("WATCH", "u")
    assert conn.command("UNWATCH") == b"+OK\r\n"
    other.command("CL.THROTTLE", "u", 5, 1, 60)
    assert tx(conn, ("PING",))[-1] == b"*1\r\n+PONG\r\n"
    conn.command("WATCH", "u")
    assert tx(conn, ("PING",))[-1] == b"*1\r\n+PONG\r\n"
    other.command("CL.THROTTLE", "u", 5, 1, 60)          # after EXEC: no matter
    assert tx(conn, ("PING",))[-1] == b"*1\r\n+PONG\r\n"


def test_a_disconnect_discards_the_queue(server):
    conn = server.raw()
    cid = int(conn.command("CLIENT", "ID")[1:-2])
    conn.command("MULTI")
    conn.command("CL.THROTTLE", "gone", 5, 1, 60)
    conn.close()
    other = server.raw()
    # Once the server has closed it, whatever it did with the queue is done.
    assert harness.wait_until(
        lambda: other.command("CLIENT", "LIST", "ID", cid) == b"$0\r\n\r\n", 10)
    assert other.command("EXISTS", "gone") == b":0\r\n"


def test_the_queue_counts_toward_the_query_buffer_limit(start_daemon):
    d = start_daemon("--client-query-buffer-limit", "1mb", "--proto-max-bulk-len", "1mb")
    conn = d.raw()
    conn.command("MULTI")
    arg = b"x" * (200 * 1024)
    closed = False
    for _ in range(10):
        try:
            conn.send(resp_command("ECHO", arg))
            reply = conn.reply_bytes(timeout=5)
        except (EOFError, ConnectionError):
            closed = True
            break
        if reply.startswith(b"-"):
            assert reply == b"-ERR Protocol error: client query buffer limit reached\r\n"
            closed = True
            break
        assert reply == b"+QUEUED\r\n"
    assert closed
    assert d.info("stats")["client_query_buffer_limit_disconnections"] == 1
    assert d.ping_fresh()


def test_client_list_shows_the_transaction(server):
    conn = server.raw()
    conn.command("CLIENT", "SETNAME", "txer")
    conn.command("MULTI")
    conn.command("PING")
    conn.command("PING")
    listing = server.raw().command("CLIENT", "LIST")
    line = [l for l in listing.split(b"\n") if b"name=txer" in l][0]
    assert b" flags=x " in line and b" multi=2 " in line


def test_optimistic_loops_from_twenty_clients_never_pass_the_limit(server):
    """WATCH, read the quota with PEEK, MULTI, take one, EXEC; retry on a
    null EXEC. 20 clients, limit 10 in the window: exactly 10 allowed."""
    results = []
    lock = threading.Lock()

    def client_loop():
        r = server.client()
        for _ in range(200):                 # bounded retries
            with r.pipeline() as p:
                try:
                    p.watch("quota")
                    peek = p.execute_command("RL.FIXED", "quota", 10, 3600, "PEEK")
                    p.multi()
                    p.execute_command("RL.FIXED", "quota", 10, 3600)
                    got = p.execute()[0]
                except redis.WatchError:
                    continue
            with lock:
                results.append((peek[0], got[0]))
            return
        with lock:
            results.append(("gave up", None))

    threads = [threading.Thread(target=client_loop) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 20 and ("gave up", None) not in results
    allowed = sum(1 for _, got in results if got == 0)
    assert allowed == 10
    assert server.client().execute_command("RL.FIXED", "quota", 10, 3600, "PEEK")[2] == 0


def test_redis_py_default_pipeline_is_a_transaction(server):
    r = server.client()
    p = r.pipeline()                         # transaction=True by default
    for _ in range(3):
        p.execute_command("CL.THROTTLE", "py", 1, 1, 60)
    got = p.execute()
    assert [x[0] for x in got] == [0, 0, 1]


def test_cluster_exec_needs_one_slot(start_daemon):
    d = start_daemon("--cluster-mode", "emulated")
    conn = d.raw()
    got = tx(conn, ("CL.THROTTLE", "{a}x", 5, 1, 60), ("CL.THROTTLE", "{a}y", 5, 1, 60))
    assert got[-1].startswith(b"*2\r\n")

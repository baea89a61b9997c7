"""Replays the recorded redis-cell replies (tests/conformance/
cl_throttle_vectors.jsonl: what redis-cell 0.5.0 in Redis 7.0.15 answered,
under a stepped wall clock) against a fresh daemon on the fake clock.
Every vector must get the same reply, the needs_string_cmds scenarios
included: they plant raw strings with SET (with and without PX) and DEL
them, and CL.THROTTLE then reads the planted value as its TAT."""
import json
import os

from harness import CONFORMANCE, FAKE_EPOCH_NS, SUMMARY, resp_command

VECTORS = os.path.join(CONFORMANCE, "cl_throttle_vectors.jsonl")


def load_vectors():
    with open(VECTORS, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_reply(conn):
    """One RESP2 reply in the vectors' notation: array -> list, integer ->
    int, bulk -> str, nil -> None, error -> {"error": text}, status ->
    {"status": text}."""
    line = conn.recv_until(b"\r\n")
    t, body = line[:1], line[1:-2]
    if t == b":":
        return int(body)
    if t == b"+":
        return {"status": body.decode("utf-8")}
    if t == b"-":
        return {"error": body.decode("utf-8", "replace")}
    if t == b"$":
        n = int(body)
        return None if n < 0 else conn.recv_exact(n + 2)[:-2].decode("utf-8", "replace")
    if t == b"*":
        n = int(body)
        return None if n < 0 else [read_reply(conn) for _ in range(n)]
    raise AssertionError("not a RESP2 reply: %r" % line)


def test_redis_cell_vectors_replay_without_a_difference(start_daemon):
    vectors = load_vectors()
    assert len(vectors) == 5027
    start = min(FAKE_EPOCH_NS, min(v["t_ns"] for v in vectors))
    d = start_daemon(fakeclock=start, name="cellgate-conformance")
    conn = d.raw()
    passed, differences = 0, []
    for v in vectors:
        if v["t_ns"] != d.clock.ns:
            d.clock.set(v["t_ns"])
        conn.send(resp_command(*v["argv"]))
        got = read_reply(conn)
        if got == v["reply"]:
            passed += 1
        else:
            differences.append((v["n"], v["argv"], v["reply"], got))
    SUMMARY.append("conformance replay over the wire (%s): %d passed, %d failed, "
                   "0 skipped" % (os.path.relpath(VECTORS), passed, len(differences)))
    assert differences == [], differences[:20]
    assert passed == 5027
    assert d.ping_fresh()

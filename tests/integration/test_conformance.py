"""Replays the recorded redis-cell replies (shared/conformance, read in place)
against a fresh daemon on the fake clock: every vector outside the
needs_string_cmds scenarios must match."""
import os
import re
import subprocess

import pytest

from harness import CONFORMANCE, FAKE_EPOCH_NS, PYTHON

CHECK = os.path.join(CONFORMANCE, "check_vectors.py")
VECTORS = os.path.join(CONFORMANCE, "cl_throttle_vectors.jsonl")


def _first_vector_time():
    import json
    with open(VECTORS, encoding="utf-8") as f:
        return min(json.loads(line)["t_ns"] for line in f if line.strip())


@pytest.mark.skipif(not os.path.exists(CHECK), reason="shared/conformance not found beside the repo")
def test_redis_cell_vectors_replay_without_a_difference(start_daemon):
    start = min(FAKE_EPOCH_NS, _first_vector_time())
    d = start_daemon(fakeclock=start, name="cellgate-conformance")
    p = subprocess.run([PYTHON, CHECK, "--port", str(d.port), "--clock-file", d.clock.path,
                        "--skip-tags", "needs_string_cmds"],
                       cwd=CONFORMANCE, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=120)
    out = p.stdout.decode("utf-8", "replace")
    lines = out.strip().splitlines()
    assert lines, "check_vectors.py printed nothing"
    m = re.fullmatch(r"(\d+) passed, (\d+) failed, (\d+) skipped", lines[-1])
    assert m, out[-3000:]
    passed, failed, skipped = map(int, m.groups())
    assert (p.returncode, failed) == (0, 0), out[-5000:]
    assert passed > 4000
    assert skipped > 0
    assert passed + skipped == sum(1 for line in open(VECTORS, encoding="utf-8") if line.strip())
    assert d.ping_fresh()

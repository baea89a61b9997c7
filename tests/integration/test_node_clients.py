"""ioredis 6 and node-redis 6, from the npm registry into tests/clients (lock
file committed), run every limiter command against the daemon: each client in
its default (both open with HELLO 3 and speak RESP3) and in the other
protocol, with exact replies and errors (see tests/clients/clients.mjs)."""
import os
import shutil
import subprocess

from harness import REPO, npm_install_locked

CLIENTS = os.path.join(REPO, "tests", "clients")


def ensure_node_modules():
    assert shutil.which("node") and shutil.which("npm"), \
        "node and npm are needed (make deps installs Debian's nodejs and npm)"
    version = subprocess.run(["node", "--version"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    assert int(version.lstrip("v").split(".")[0]) >= 20, \
        "ioredis 6 and node-redis 6 need Node.js 20 or later (their engines field); found " + version
    npm_install_locked(CLIENTS)


def test_ioredis_and_node_redis_run_every_limiter(start_daemon):
    ensure_node_modules()
    d = start_daemon(fakeclock=True)
    minute = 60 * 10**9
    d.clock.set(-(-d.clock.ns // minute) * minute)
    out = subprocess.run(["node", "clients.mjs", str(d.port), str(d.clock.ns // 10**6)],
                         cwd=CLIENTS, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    # 5 client setups x (21 replies + 10 errors + the protocol check,
    # MULTI/EXEC, WATCH and INCREX through the client's own method)
    assert out.stdout.strip().splitlines()[-1] == "175 passed, 0 failed"

"""ioredis and node-redis, from the npm registry into tests/clients (lock
file committed), run every limiter command against the daemon."""
import os
import shutil
import subprocess

from harness import REPO

CLIENTS = os.path.join(REPO, "tests", "clients")


def ensure_node_modules():
    assert shutil.which("node") and shutil.which("npm"), \
        "node and npm are needed (make deps installs Debian's nodejs and npm)"
    if not os.path.isdir(os.path.join(CLIENTS, "node_modules", "ioredis")):
        out = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--silent"],
                             cwd=CLIENTS, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]


def test_ioredis_and_node_redis_run_every_limiter(start_daemon):
    ensure_node_modules()
    d = start_daemon()
    out = subprocess.run(["node", "clients.mjs", str(d.port)], cwd=CLIENTS,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().splitlines()[-1] == "16 passed, 0 failed"

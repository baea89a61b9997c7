"""go-redis v5 from Debian's packages, built offline (no module proxy):
TxPipeline and Watch run limiter commands as MULTI/EXEC transactions (see
tests/clients/go/main.go)."""
import os
import shutil
import subprocess

from harness import REPO

SOURCE = os.path.join(REPO, "tests", "clients", "go", "main.go")


def test_go_redis_tx_pipeline_and_watch(server, tmp_path):
    assert shutil.which("go"), "go is needed (make deps installs Debian's golang-go)"
    assert os.path.isdir("/usr/share/gocode/src/gopkg.in/redis.v5"), \
        "golang-gopkg-redis.v5-dev is needed (make deps installs it)"
    env = dict(os.environ, GO111MODULE="off", GOPATH="/usr/share/gocode",
               GOCACHE=str(tmp_path / "gocache"))
    binary = str(tmp_path / "gotx")
    built = subprocess.run(["go", "build", "-o", binary, SOURCE], env=env,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    out = subprocess.run([binary, str(server.port)], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "4 passed, 0 failed", out.stdout

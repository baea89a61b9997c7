"""Fixtures: the real cellgate binary on a free 127.0.0.1 port.

    server            module-shared daemon, FLUSHALL before each test
    fserver           module-shared daemon on the conformance fake clock;
                      before each test the clock jumps to a fresh whole second
    start_daemon      factory for a daemon of the test's own: start_daemon(
                      "--maxclients", "3", fakeclock=True); stopped after the test

Every daemon is stopped with SIGTERM; a test fails if the daemon does not exit
0 within the time limit or if its log holds a sanitizer report. When a test
fails, the logs of the daemons it used are attached to the report.
"""
import os

import pytest

import harness


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running (skipped under SANITIZE=1 by run.sh)")
    # What the plain build runs besides the threaded subset (make test runs
    # every test on the ASan+UBSan build): a test whose outcome rests on
    # used_memory, which counts the allocator's sizes, and ASan's allocator
    # sizes blocks differently from glibc's.
    config.addinivalue_line("markers", "allocator: rests on used_memory (run on the plain build too)")
    # A test that matters on both builds: the sanitizers watch the daemon,
    # the plain build shows it at full speed (timing bounds of a cluster).
    config.addinivalue_line("markers", "plain_too: run on the plain build as well as under ASan")


# The files that take longest (a minute or more of one worker under ASan),
# run first: pytest-xdist (--dist loadfile) hands files out in collection
# order, and a long file handed out last keeps one worker busy while the
# others have nothing left to run.
LONGEST_FIRST = ("test_write_path.py", "test_difftest.py", "test_journal.py",
                 "test_sentinel.py", "test_collections.py", "test_cluster_grow.py",
                 "test_strings.py", "test_repl_fuzz.py", "test_children.py",
                 "test_cluster_bus.py")


def pytest_collection_modifyitems(session, config, items):
    def rank(item):
        name = os.path.basename(str(item.fspath))
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=rank)        # stable: each file's own order stays


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed or (rep.when == "call" and rep.outcome == "failed"):
        for d in harness.live_daemons():
            rep.sections.append(("cellgate log (%s, port %s, pid %s)"
                                 % (d.name, d.port, d.proc.pid if d.proc else "?"),
                                 harness.log_tail(d.log())))


def _stop_and_report(daemons):
    problems = []
    for d in daemons:
        for p in d.stop():
            problems.append("%s: %s\n--- log %s ---\n%s"
                            % (d.name, p, d.log_path, harness.log_tail(d.log())))
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


def _check_alive(d):
    problems = d.check_alive()
    if problems:
        pytest.fail("%s: %s\n--- log ---\n%s"
                    % (d.name, "; ".join(problems), harness.log_tail(d.log())), pytrace=False)


@pytest.fixture
def start_daemon(tmp_path):
    """Factory: start_daemon(*args, fakeclock=False, **Daemon kwargs)."""
    started = []

    def start(*args, fakeclock=False, name=None, **kw):
        d = harness.Daemon(str(tmp_path / ("d%d" % len(started))), extra_args=args,
                           fakeclock=fakeclock, name=name or "cellgate", **kw)
        started.append(d)
        return d.start()

    yield start
    _stop_and_report(started)


@pytest.fixture(scope="module")
def module_daemon(tmp_path_factory, request):
    d = harness.Daemon(str(tmp_path_factory.mktemp("cellgate")),
                       name="cellgate-" + request.module.__name__)
    d.start()
    yield d
    _stop_and_report([d])


@pytest.fixture
def server(module_daemon):
    _check_alive(module_daemon)
    c = module_daemon.client()
    c.flushall()
    c.close()
    yield module_daemon
    module_daemon.close_clients()
    _check_alive(module_daemon)


@pytest.fixture(scope="module")
def fake_module_daemon(tmp_path_factory, request):
    d = harness.Daemon(str(tmp_path_factory.mktemp("cellgate-fc")), fakeclock=True,
                       name="cellgate-fc-" + request.module.__name__)
    d.start()
    yield d
    _stop_and_report([d])


@pytest.fixture
def fserver(fake_module_daemon):
    d = fake_module_daemon
    _check_alive(d)
    d.clock.fresh_epoch()
    c = d.client()
    c.flushall()
    c.close()
    yield d
    d.close_clients()
    _check_alive(d)


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    """Debian's redis-server beside cellgate, for answers to compare with."""
    ref = harness.RedisServer(str(tmp_path_factory.mktemp("redis")))
    ref.start()
    ref.client().flushall()
    yield ref
    ref.stop()


@pytest.fixture
def r(server):
    """A redis-py client (bytes) on the shared daemon."""
    return server.client()


@pytest.fixture
def fr(fserver):
    """A redis-py client (bytes) on the shared fake-clock daemon."""
    return fserver.client()


def pytest_terminal_summary(terminalreporter):
    """Figures tests report (the conformance replay's counts) at the end of
    every run, so `make test`'s output shows them."""
    for line in harness.SUMMARY:
        terminalreporter.write_line(line)


def pytest_report_header(config):
    return "cellgate binary: %s (SANITIZE=%s)" % (harness.BIN, os.environ.get("SANITIZE", "0"))

"""Connection and server commands as Redis clients see them: redis-py over
RESP2, raw bytes for exact replies and for RESP3."""
import re
import time

import pytest
import redis

import harness
from harness import resp_command


def wire(server, *args):
    return server.raw().command(*args)


# ---- connection commands --------------------------------------------------------

def test_ping(server, r):
    assert r.ping() is True
    conn = server.raw()
    assert conn.command("PING") == b"+PONG\r\n"
    assert conn.command("PING", "hi there") == b"$8\r\nhi there\r\n"
    assert conn.command("PING", "a", "b") == b"-ERR wrong number of arguments for 'ping' command\r\n"


def test_echo(server, r):
    assert r.echo("hello") == b"hello"
    assert r.echo(b"\x00\xff") == b"\x00\xff"
    conn = server.raw()
    assert conn.command("ECHO") == b"-ERR wrong number of arguments for 'echo' command\r\n"
    assert conn.command("ECHO", "a", "b") == b"-ERR wrong number of arguments for 'echo' command\r\n"
    assert conn.command("ECHO", "still open") == b"$10\r\nstill open\r\n"


def test_quit_answers_ok_then_closes(server):
    conn = server.raw()
    conn.send(resp_command("QUIT") + b"PING\r\n")
    assert conn.read_to_eof(5) == (b"+OK\r\n", True)


def test_quit_after_pipelined_requests(server):
    conn = server.raw()
    conn.send(b"PING\r\nECHO x\r\nQUIT\r\nPING\r\n")
    assert conn.read_to_eof(5) == (b"+PONG\r\n$1\r\nx\r\n+OK\r\n", True)


def test_select(server):
    conn = server.raw()
    assert conn.command("SELECT", "0") == b"+OK\r\n"
    assert conn.command("SELECT", "16") == b"-ERR DB index is out of range\r\n"
    assert conn.command("SELECT", "abc") == b"-ERR value is not an integer or out of range\r\n"
    assert conn.command("PING") == b"+PONG\r\n"


def test_auth_without_a_configured_password(server):
    conn = server.raw()
    assert conn.command("AUTH", "secret") == (
        b"-ERR AUTH <password> called without any password configured for the default user. "
        b"Are you sure your configuration is correct?\r\n")
    assert conn.command("AUTH", "default", "anything") == b"+OK\r\n"
    assert conn.command("AUTH", "alice", "pw") == (
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")


def test_readonly_readwrite_are_cluster_commands_as_in_redis(server, start_daemon):
    conn = server.raw()
    err = b"-ERR This instance has cluster support disabled\r\n"
    assert conn.command("READONLY") == err
    assert conn.command("READWRITE") == err
    conn = start_daemon("--cluster-mode", "emulated").raw()
    assert conn.command("READONLY") == b"+OK\r\n"
    assert conn.command("READWRITE") == b"+OK\r\n"


# ---- HELLO and RESP3 ----------------------------------------------------------------

def test_hello_3_returns_a_map_and_switches_to_resp3(server):
    conn = server.raw()
    reply = conn.command("HELLO", "3")
    assert reply.startswith(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n")
    assert b"$5\r\nproto\r\n:3\r\n" in reply
    assert b"$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n" in reply
    assert reply.endswith(b"$7\r\nmodules\r\n*0\r\n")
    # Limiter replies keep their shape under RESP3 ...
    throttle = conn.command("CL.THROTTLE", "h3", "15", "30", "60")
    assert throttle.startswith(b"*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n")
    # ... and RESP3-only types appear where Redis uses them.
    assert conn.command("CLIENT", "GETNAME") == b"_\r\n"
    assert conn.command("GET", "missing") == b"_\r\n"
    assert conn.command("CONFIG", "GET", "maxclients").startswith(b"%1\r\n")
    assert conn.command("CLIENT", "INFO").startswith(b"=")


def test_hello_2_returns_a_flat_array(server):
    conn = server.raw()
    conn.command("HELLO", "3")
    reply = conn.command("HELLO", "2")
    assert reply.startswith(b"*14\r\n$6\r\nserver\r\n")
    assert b"$5\r\nproto\r\n:2\r\n" in reply
    assert conn.command("CLIENT", "GETNAME") == b"$-1\r\n"


def test_hello_without_version_keeps_the_protocol(server):
    conn = server.raw()
    assert conn.command("HELLO").startswith(b"*14\r\n")


def test_hello_id_matches_client_id(server):
    conn = server.raw()
    reply = conn.command("HELLO", "2")
    cid = conn.command("CLIENT", "ID")
    assert cid.startswith(b":")
    assert b"$2\r\nid\r\n" + cid in reply


@pytest.mark.parametrize("args,err", [
    (("4",), b"-NOPROTO unsupported protocol version\r\n"),
    (("1",), b"-NOPROTO unsupported protocol version\r\n"),
    (("abc",), b"-ERR Protocol version is not an integer or out of range\r\n"),
    (("3", "AUTH", "alice", "pw"), b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"),
    (("3", "BOGUS"), b"-ERR Syntax error in HELLO option 'BOGUS'\r\n"),
])
def test_hello_errors_leave_the_protocol_unchanged(server, args, err):
    conn = server.raw()
    assert conn.command("HELLO", *args) == err
    assert conn.command("CLIENT", "GETNAME") == b"$-1\r\n"       # still RESP2


def test_hello_with_auth_and_setname(server):
    conn = server.raw()
    reply = conn.command("HELLO", "3", "AUTH", "default", "pw", "SETNAME", "hi")
    assert reply.startswith(b"%7\r\n")
    assert conn.command("CLIENT", "GETNAME") == b"$2\r\nhi\r\n"


# ---- CLIENT -------------------------------------------------------------------------

def test_client_setname_getname(server, r):
    assert r.client_getname() is None
    assert r.client_setname("worker-1") is True
    assert r.client_getname() == "worker-1"
    conn = server.raw()
    assert conn.command("CLIENT", "SETNAME", "has space") == (
        b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n")
    assert conn.command("CLIENT", "SETNAME", "") == b"+OK\r\n"
    assert conn.command("CLIENT", "GETNAME") == b"$-1\r\n"


def test_client_id_is_unique_and_increasing(server):
    a, b = server.raw(), server.raw()
    ida = int(a.command("CLIENT", "ID")[1:-2])
    idb = int(b.command("CLIENT", "ID")[1:-2])
    assert ida > 0 and idb > ida


def test_client_setinfo_and_list(server, r):
    assert r.client_setname("lister") is True
    assert r.execute_command("CLIENT", "SETINFO", "lib-name", "x") == b"OK"
    assert r.execute_command("CLIENT", "SETINFO", "lib-ver", "1.2") == b"OK"
    text = r.execute_command("CLIENT", "LIST").decode()
    mine = [line for line in text.splitlines() if "name=lister " in line]
    assert len(mine) == 1
    assert " lib-name=x " in mine[0]
    assert " lib-ver=1.2" in mine[0]
    assert "addr=127.0.0.1:" in mine[0]
    assert " cmd=client|list " in mine[0]
    conn = server.raw()
    assert conn.command("CLIENT", "SETINFO", "bogus", "x") == b"-ERR Unrecognized option 'bogus'\r\n"


def test_client_list_shows_every_connection(server, r):
    others = [server.raw() for _ in range(3)]
    ids = [int(o.command("CLIENT", "ID")[1:-2]) for o in others]
    lines = r.execute_command("CLIENT", "LIST").decode().splitlines()
    assert all(line.startswith("id=") and line.endswith("lib-ver=") for line in lines)
    listed = {int(line.split()[0][3:]) for line in lines}
    assert set(ids) <= listed
    only = r.execute_command("CLIENT", "LIST", "ID", str(ids[1])).decode().splitlines()
    assert len(only) == 1 and only[0].startswith("id=%d " % ids[1])


def test_client_unknown_subcommand(server):
    conn = server.raw()
    assert conn.command("CLIENT", "NOPE") == b"-ERR unknown subcommand 'NOPE'. Try CLIENT HELP.\r\n"
    assert conn.command("CLIENT", "HELP").startswith(b"*")


# ---- COMMAND --------------------------------------------------------------------------

def test_command_count_matches_command(server, r):
    table = r.command()                  # redis-py makes a dict of it
    assert r.command_count() == len(table)
    assert len(table) >= 20
    assert {"cl.throttle", "ping", "config", "info", "command"} <= set(table)
    # Every entry of the raw reply has Redis's 10 fields.
    conn = server.raw()
    conn.send(resp_command("COMMAND"))
    header = conn.recv_until(b"\r\n")
    assert header == b"*%d\r\n" % len(table)
    for _ in range(len(table)):
        assert conn.recv_until(b"\r\n") == b"*10\r\n"
        for _ in range(10):
            conn.reply_bytes()


def test_command_info_cl_throttle(r):
    (entry,) = r.execute_command("COMMAND INFO", "cl.throttle")
    assert len(entry) == 10
    name, arity, flags, first, last, step = entry[:6]
    assert name == b"cl.throttle"
    assert arity == -1
    assert b"write" in flags
    assert (first, last, step) == (1, 1, 1)


def test_command_info_unknown_is_nil(r):
    assert r.execute_command("COMMAND INFO", "zz") == [None]


def test_command_docs_cl_throttle_has_arguments(r):
    docs = r.execute_command("COMMAND DOCS", "cl.throttle")
    assert docs[0] == b"cl.throttle"
    fields = docs[1]
    doc = dict(zip(fields[::2], fields[1::2]))
    names = [dict(zip(a[::2], a[1::2]))[b"name"] for a in doc[b"arguments"]]
    assert names[:5] == [b"key", b"max_burst", b"count", b"period", b"quantity"]


def test_command_docs_token_values_and_choices(server):
    """The argument shapes redis-cli builds its hints from: a value after a
    keyword ([COST n]), and a oneof with its nested tokens (redis-cli 7.0
    crashes on a oneof without them), named as Redis names them: a key with
    its key spec's index, a keyword after its token in lower case."""
    conn = server.raw()
    reply = conn.command("COMMAND", "DOCS", "rl.entries")
    assert reply.endswith(
        b"$9\r\narguments\r\n*2\r\n"
        b"*6\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n"
        b"$14\r\nkey_spec_index\r\n:0\r\n"
        b"*8\r\n$4\r\nname\r\n$1\r\nn\r\n$4\r\ntype\r\n$7\r\ninteger\r\n"
        b"$5\r\ntoken\r\n$5\r\nCOUNT\r\n$5\r\nflags\r\n*1\r\n+optional\r\n")
    conn.command("HELLO", "3")
    reply = conn.command("COMMAND", "DOCS", "client|no-evict")
    assert reply.endswith(
        b"$9\r\narguments\r\n*1\r\n"
        b"%3\r\n$4\r\nname\r\n$7\r\nenabled\r\n$4\r\ntype\r\n$5\r\noneof\r\n"
        b"$9\r\narguments\r\n*2\r\n"
        b"%3\r\n$4\r\nname\r\n$2\r\non\r\n$4\r\ntype\r\n$10\r\npure-token\r\n"
        b"$5\r\ntoken\r\n$2\r\nON\r\n"
        b"%3\r\n$4\r\nname\r\n$3\r\noff\r\n$4\r\ntype\r\n$10\r\npure-token\r\n"
        b"$5\r\ntoken\r\n$3\r\nOFF\r\n")


def test_command_list_has_every_command_and_subcommand(r):
    listed = r.command_list()
    assert len(listed) == len(set(listed))
    # As Redis 7: COMMAND COUNT counts top-level commands, LIST adds every
    # subcommand under its full "parent|sub" name.
    entries = r.execute_command("COMMAND INFO")
    top = {e[0] for e in entries}
    subs = {s[0] for e in entries for s in e[9]}
    assert set(listed) == top | subs
    assert len(top) == r.command_count()
    assert {b"cl.throttle", b"rl.tiers", b"command|getkeys",
            b"command|getkeysandflags", b"client|setname"} <= set(listed)


def test_command_list_filterby_pattern(server, r):
    assert sorted(r.command_list(pattern="rl.*")) == [
        b"rl.acquire", b"rl.all", b"rl.check", b"rl.entries", b"rl.fixed", b"rl.leases",
        b"rl.log", b"rl.refresh", b"rl.release", b"rl.sliding", b"rl.tiers", b"rl.topdenied"]
    # Redis's glob, case-insensitive, over the full name of subcommands too.
    assert sorted(r.command_list(pattern="COMMAND|GETKEYS*")) == [
        b"command|getkeys", b"command|getkeysandflags"]
    assert r.command_list(pattern="CL.THROTTL?") == [b"cl.throttle"]
    assert r.command_list(pattern="[bc]l.*") == [b"cl.throttle"]
    assert wire(server, "COMMAND", "LIST", "FILTERBY", "PATTERN", "p[^a-h]ng") == (
        b"*1\r\n$4\r\nping\r\n")
    assert wire(server, "COMMAND", "LIST", "FILTERBY", "pattern", "nomatch*") == b"*0\r\n"


def test_command_list_filterby_aclcat_and_module(server, r):
    # The collections' writes are their own tests' (test_lists.py, ...).
    colls = set()
    for cat in ("list", "hash", "sortedset", "set"):
        colls |= set(r.command_list(category=cat))
    assert sorted(set(r.command_list(category="write")) - colls) == [
        b"append", b"cl.throttle", b"copy", b"decr", b"decrby", b"del", b"expire",
        b"expireat", b"flushall", b"flushdb", b"function|delete", b"function|flush",
        b"function|load", b"function|restore", b"gcra", b"getdel",
        b"getex", b"getset", b"incr", b"incrby", b"incrbyfloat", b"increx", b"migrate", b"move",
        b"mset", b"msetnx", b"persist", b"pexpire", b"pexpireat", b"psetex", b"rename",
        b"renamenx", b"restore", b"restore-asking", b"rl.acquire", b"rl.all", b"rl.check",
        b"rl.fixed", b"rl.log", b"rl.refresh", b"rl.release", b"rl.sliding", b"rl.tiers",
        b"set", b"setex", b"setnx", b"setrange", b"swapdb", b"unlink"]
    assert b"client|kill" in r.command_list(category="DANGEROUS")
    # Unknown categories (and "@write": Redis takes the bare name) match nothing.
    assert r.command_list(category="nosuchcat") == []
    assert r.command_list(category="@write") == []
    # CL.THROTTLE is what the redis-cell module would have registered.
    assert r.command_list(module="redis-cell") == [b"cl.throttle"]
    assert wire(server, "COMMAND", "LIST", "FILTERBY", "MODULE", "Redis-Cell") == (
        b"*1\r\n$11\r\ncl.throttle\r\n")
    assert r.command_list(module="redisbloom") == []


@pytest.mark.parametrize("args", [
    ("FILTERBY",), ("FILTERBY", "pattern"), ("FILTERBY", "kind", "x"),
    ("FILTERBY", "pattern", "x", "y"), ("bogus",), ("FILTERBY", "pattern", "*", "FILTERBY"),
])
def test_command_list_syntax_errors(server, args):
    assert wire(server, "COMMAND", "LIST", *args) == b"-ERR syntax error\r\n"


def test_command_list_is_an_array_in_resp3(server):
    conn = server.raw()
    conn.command("HELLO", "3")
    assert conn.command("COMMAND", "LIST", "FILTERBY", "PATTERN", "rl.f*") == (
        b"*1\r\n$8\r\nrl.fixed\r\n")


# ---- COMMAND GETKEYS / GETKEYSANDFLAGS: the replies redis-server 7.0 gives -------------

def test_command_getkeys_limiters(r):
    # redis-py decodes GETKEYS replies to str.
    assert r.command_getkeys("CL.THROTTLE", "user123", 15, 30, 60) == ["user123"]
    assert r.command_getkeys("cl.throttle", "u", 15, 30, 60, 1, "PEEK") == ["u"]
    assert r.command_getkeys("RL.FIXED", "api:k", 100, 60, "COST", 5) == ["api:k"]
    assert r.command_getkeys("RL.SLIDING", "s", 10, 60) == ["s"]
    assert r.command_getkeys("RL.LOG", "l", 3, 60, "META", "x") == ["l"]
    assert r.command_getkeys("RL.ENTRIES", "l", "COUNT", 2) == ["l"]
    assert r.command_getkeys("RL.TIERS", "t", 10, 1, 20, 10) == ["t"]


def test_command_getkeys_wire(server):
    conn = server.raw()
    assert conn.command("COMMAND", "GETKEYS", "GET", "k") == b"*1\r\n$1\r\nk\r\n"
    assert conn.command("COMMAND", "GETKEYS", "EXISTS", "a", "b\x00c", "") == (
        b"*3\r\n$1\r\na\r\n$3\r\nb\x00c\r\n$0\r\n\r\n")
    assert conn.command("COMMAND", "GETKEYS", "DEL", "x", "y") == (
        b"*2\r\n$1\r\nx\r\n$1\r\ny\r\n")


@pytest.mark.parametrize("args, err", [
    (("foo", "x"), b"-ERR Invalid command specified\r\n"),
    (("client", "nosuch"), b"-ERR Invalid command specified\r\n"),
    (("PING", "x"), b"-ERR The command has no key arguments\r\n"),
    (("client", "setname", "x"), b"-ERR The command has no key arguments\r\n"),
    (("CONFIG", "GET", "maxmemory"), b"-ERR The command has no key arguments\r\n"),
    (("GET", "a", "b"), b"-ERR Invalid number of arguments specified for command\r\n"),
    (("RL.FIXED", "k", "1"), b"-ERR Invalid number of arguments specified for command\r\n"),
    (("TTL", "a", "b"), b"-ERR Invalid number of arguments specified for command\r\n"),
    (("GET",), b"-ERR wrong number of arguments for 'command|getkeys' command\r\n"),
    ((), b"-ERR wrong number of arguments for 'command|getkeys' command\r\n"),
])
def test_command_getkeys_errors(server, args, err):
    conn = server.raw()
    assert conn.command("COMMAND", "GETKEYS", *args) == err
    err2 = err.replace(b"command|getkeys'", b"command|getkeysandflags'")
    assert conn.command("COMMAND", "GETKEYSANDFLAGS", *args) == err2


def test_command_getkeysandflags_wire_resp2_and_resp3(server):
    conn = server.raw()
    assert conn.command("COMMAND", "GETKEYSANDFLAGS", "CL.THROTTLE", "k", "1", "2", "3") == (
        b"*1\r\n*2\r\n$1\r\nk\r\n*3\r\n+RW\r\n+access\r\n+update\r\n")
    assert conn.command("COMMAND", "GETKEYSANDFLAGS", "DEL", "a", "b") == (
        b"*2\r\n*2\r\n$1\r\na\r\n*2\r\n+RM\r\n+delete\r\n"
        b"*2\r\n$1\r\nb\r\n*2\r\n+RM\r\n+delete\r\n")
    conn.command("HELLO", "3")
    assert conn.command("COMMAND", "GETKEYSANDFLAGS", "RL.ENTRIES", "k") == (
        b"*1\r\n*2\r\n$1\r\nk\r\n~2\r\n+RO\r\n+access\r\n")
    assert conn.command("COMMAND", "GETKEYSANDFLAGS", "EXISTS", "k") == (
        b"*1\r\n*2\r\n$1\r\nk\r\n~1\r\n+RO\r\n")


def test_command_getkeysandflags_redis_py(r):
    assert r.command_getkeysandflags("RL.TIERS", "t", 10, 1, 20, 10) == [
        [b"t", [b"RW", b"access", b"update"]]]


def test_command_info_key_spec_flags_as_redis_spells_them(r):
    (entry,) = r.execute_command("COMMAND INFO", "rl.sliding")
    spec = entry[8][0]
    assert spec[:2] == [b"flags", [b"RW", b"access", b"update"]]


def test_command_help_lists_getkeys(server):
    reply = server.raw().command("COMMAND", "HELP")
    assert b"+GETKEYS <full-command>\r\n" in reply
    assert b"+GETKEYSANDFLAGS <full-command>\r\n" in reply


# ---- INFO -----------------------------------------------------------------------------

def test_info_layout(server):
    text = server.raw().command("INFO")
    body = text.split(b"\r\n", 1)[1].decode()
    for header in ("# Server", "# Clients", "# Memory", "# Persistence", "# Stats", "# Keyspace"):
        assert "\r\n%s\r\n" % header in "\r\n" + body, header
    assert "\r\nredis_version:" in body
    assert "\r\ncellgate_version:" in body
    assert "\r\nused_memory:" in body
    assert "\r\ntcp_port:%d\r\n" % server.port in body


def test_info_fields_parse(r):
    info = r.info()
    assert isinstance(info["used_memory"], int) and info["used_memory"] > 0
    assert info["connected_clients"] >= 1
    assert "redis_version" in info and "cellgate_version" in info


def test_info_single_section(r):
    mem = r.info("memory")
    assert "used_memory" in mem
    assert "redis_version" not in mem


def test_info_keyspace_counts_keys(r):
    for i in range(3):
        r.execute_command("CL.THROTTLE", "ks%d" % i, 1, 1, 60)
    assert r.info("keyspace")["db0"]["keys"] == 3


def test_info_everything_has_every_section(server):
    text = server.raw().command("INFO", "everything").decode()
    for header in ("# Server", "# Clients", "# Memory", "# Persistence", "# Stats",
                   "# Commandstats", "# Errorstats", "# Keyspace"):
        assert "%s\r\n" % header in text, header


def test_info_errorstats_counts_error_codes(server, r):
    r.config_resetstat()
    conn = server.raw()
    conn.command("CL.THROTTLE", "k", "x", "1", "1")
    conn.command("CL.THROTTLE", "k", "1", "0", "1")
    conn.command("foo")
    stats = r.info("errorstats")
    assert stats["errorstat_Cell"] in ({"count": 2}, "count=2")
    assert stats["errorstat_ERR"] in ({"count": 1}, "count=1")
    assert r.info("stats")["total_error_replies"] == 3


def test_info_keyspace_expires_counts_only_keys_with_a_ttl(r):
    r.execute_command("CL.THROTTLE", "with-ttl", 5, 1000, 1)
    assert r.execute_command("CL.THROTTLE", "persistent", 5, 1000, 1, -1) == [0, 6, 7, -1, 0]
    assert r.pttl("persistent") == -1
    assert r.info("keyspace")["db0"]["expires"] == 1


def test_info_commandstats_after_a_call(r):
    r.execute_command("CL.THROTTLE", "cs", 1, 1, 60)
    stats = r.info("commandstats")
    assert "cmdstat_cl.throttle" in stats
    assert stats["cmdstat_cl.throttle"]["calls"] >= 1


# ---- CONFIG ---------------------------------------------------------------------------

def test_config_get_probes_of_redis_benchmark(server):
    # save is a real option now (no rules by default), appendonly a probe.
    conn = server.raw()
    assert conn.command("CONFIG", "GET", "save") == b"*2\r\n$4\r\nsave\r\n$0\r\n\r\n"
    assert conn.command("CONFIG", "GET", "appendonly") == b"*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"


def test_config_get(server, r):
    assert r.config_get("port") == {"port": str(server.port)}
    everything = r.config_get("*")
    assert everything["maxclients"] == "10000"
    assert everything["bind"] == "127.0.0.1"
    assert r.config_get("max*") == {"maxclients": "10000", "maxmemory": "0",
                                    "maxmemory-policy": "noeviction",
                                    "maxmemory-clients": "0",
                                    "maxmemory-samples": "5",
                                    "maxmemory-eviction-tenacity": "10"}
    assert r.config_get("nothing-like-this") == {}


def test_config_set_maxclients(r):
    old = r.config_get("maxclients")["maxclients"]
    try:
        assert r.config_set("maxclients", "50") is True
        assert r.config_get("maxclients") == {"maxclients": "50"}
        assert r.info("clients")["maxclients"] == 50
    finally:
        r.config_set("maxclients", old)


def test_config_set_immutable_and_unknown(server):
    conn = server.raw()
    reply = conn.command("CONFIG", "SET", "unixsocket", "/tmp/x.sock")
    assert reply.startswith(b"-ERR ") and b"can't set immutable config" in reply
    reply = conn.command("CONFIG", "SET", "no-such-option", "1")
    assert reply.startswith(b"-ERR Unknown option or number of arguments for CONFIG SET")
    reply = conn.command("CONFIG", "SET", "hz", "0")
    assert reply.startswith(b"-ERR CONFIG SET failed (possibly related to argument 'hz')")
    assert conn.command("CONFIG", "GET", "hz") == b"*2\r\n$2\r\nhz\r\n$2\r\n10\r\n"


def test_config_set_is_all_or_nothing(server):
    conn = server.raw()
    reply = conn.command("CONFIG", "SET", "timeout", "5", "hz", "0")
    assert reply.startswith(b"-ERR ")
    assert conn.command("CONFIG", "GET", "timeout") == b"*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n"


def test_config_resetstat(r):
    r.execute_command("CL.THROTTLE", "rs", 1, 1, 60)
    assert r.config_resetstat() is True
    assert "cmdstat_cl.throttle" not in r.info("commandstats")


# ---- keyspace and server --------------------------------------------------------------

def test_dbsize_flushall_flushdb(r):
    assert r.dbsize() == 0
    for i in range(10):
        r.execute_command("CL.THROTTLE", "f%d" % i, 1, 1, 60)
    assert r.dbsize() == 10
    assert r.flushdb() is True
    assert r.dbsize() == 0
    r.execute_command("CL.THROTTLE", "again", 1, 1, 60)
    assert r.flushall() is True
    assert r.dbsize() == 0
    assert r.execute_command("FLUSHALL", "ASYNC") is True
    assert r.execute_command("FLUSHDB", "SYNC") is True


def test_flushall_syntax_error(server):
    assert wire(server, "FLUSHALL", "NOW") == b"-ERR syntax error\r\n"


def test_type(r):
    assert r.type("missing") == b"none"
    r.execute_command("CL.THROTTLE", "typed", 1, 1, 60)
    assert r.type("typed") not in (b"none", b"")


def test_time_is_now(r):
    sec, usec = r.time()
    assert abs(sec + usec / 1e6 - time.time()) < 5
    assert 0 <= usec < 1000000


def test_time_wire_format(server):
    reply = server.raw().command("TIME")
    parts = reply.split(b"\r\n")
    assert parts[0] == b"*2" and parts[1].startswith(b"$") and parts[3].startswith(b"$")
    assert parts[2].isdigit() and parts[4].isdigit()


# ---- errors -------------------------------------------------------------------------

def test_unknown_command_text(server):
    conn = server.raw()
    assert conn.command("foo", "a", "b") == (
        b"-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n")
    assert conn.command("foo") == b"-ERR unknown command 'foo', with args beginning with: \r\n"
    conn.send(b"NOP x\r\n")
    assert conn.reply_bytes() == b"-ERR unknown command 'NOP', with args beginning with: 'x' \r\n"
    assert conn.command("PING") == b"+PONG\r\n"


def test_unknown_command_text_is_cut_like_redis(server):
    conn = server.raw()
    assert conn.command("foo", "a" * 100, "b" * 100, "c") == (
        b"-ERR unknown command 'foo', with args beginning with: '" + b"a" * 100 + b"' '"
        + b"b" * 25 + b"' \r\n")
    assert conn.command("f" * 200) == (
        b"-ERR unknown command '" + b"f" * 128 + b"', with args beginning with: \r\n")
    # CR and LF inside an error text become spaces, so the reply stays one line.
    assert conn.command("foo", "a\r\nb") == (
        b"-ERR unknown command 'foo', with args beginning with: 'a  b' \r\n")
    assert conn.command("PING") == b"+PONG\r\n"


def test_unknown_command_through_redis_py(r):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("foo", "a", "b")
    assert str(e.value) == "unknown command 'foo', with args beginning with: 'a' 'b' "
    assert r.ping() is True


def test_wrong_arity(server):
    conn = server.raw()
    assert conn.command("ECHO") == b"-ERR wrong number of arguments for 'echo' command\r\n"
    assert conn.command("GET") == b"-ERR wrong number of arguments for 'get' command\r\n"
    assert conn.command("CONFIG", "GET") == (
        b"-ERR wrong number of arguments for 'config|get' command\r\n")
    assert conn.command("DEL") == b"-ERR wrong number of arguments for 'del' command\r\n"
    assert conn.command("PING") == b"+PONG\r\n"


def test_errors_are_counted(server, r):
    conn = server.raw()
    conn.command("foo")
    conn.command("ECHO")
    stats = r.info("stats")
    assert stats["total_error_replies"] >= 2


def test_connection_survives_a_burst_of_errors(server):
    # Names of at most 3 bytes: longer unknown names trip the cmd_lookup
    # overread below, which has a test of its own.
    conn = server.raw()
    conn.send(b"".join(resp_command("q%02d" % i) for i in range(100)) + b"PING\r\n")
    for i in range(100):
        assert conn.reply_bytes() == (
            b"-ERR unknown command 'q%02d', with args beginning with: \r\n" % i)
    assert conn.reply_bytes() == b"+PONG\r\n"


def test_long_unknown_command_names_are_looked_up_safely(start_daemon):
    d = start_daemon()
    conn = d.raw()
    names = ["unknown-command-%04d" % i for i in range(300)]
    try:
        conn.send(b"".join(resp_command(n) for n in names))
        for n in names:
            assert conn.reply_bytes() == (
                b"-ERR unknown command '%s', with args beginning with: \r\n" % n.encode())
        assert d.ping_fresh()
    finally:
        problems = d.stop()
    assert problems == []


# ---- persistence commands -------------------------------------------------------



def test_scan_walks_every_key(r):
    for i in range(25):
        r.execute_command("CL.THROTTLE", "scan:%d" % i, 1, 1, 60)
    assert sorted(r.scan_iter(match="scan:*", count=7)) == sorted(
        b"scan:%d" % i for i in range(25))


def test_keys_matches_a_pattern(r):
    for k in ("user:1", "user:2", "ip:1"):
        r.execute_command("CL.THROTTLE", k, 1, 1, 60)
    assert sorted(r.keys("user:*")) == [b"user:1", b"user:2"]


def test_client_kill_closes_another_connection(server, r):
    victim = server.raw()
    vid = int(victim.command("CLIENT", "ID")[1:-2])
    assert r.execute_command("CLIENT", "KILL", "ID", vid) == 1
    assert victim.read_to_eof(5) == (b"", True)
    assert r.execute_command("CLIENT", "KILL", "ID", vid) == 0
    assert r.ping()


def test_client_kill_old_form_and_errors(server, r):
    victim = server.raw()
    info = victim.command("CLIENT", "INFO").decode()
    victim_addr = info.split("addr=")[1].split()[0]
    assert r.execute_command("CLIENT", "KILL", victim_addr) == b"OK"
    assert victim.read_to_eof(5) == (b"", True)
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("CLIENT", "KILL", "127.0.0.1:1")
    assert str(e.value) == "No such client"
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("CLIENT", "KILL", "ID", 0)
    assert str(e.value) == "client-id should be greater than 0"
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("CLIENT", "KILL", "BOGUS", 1)
    assert str(e.value) == "syntax error"
    assert r.execute_command("CLIENT", "NO-EVICT", "on") == b"OK"


def test_save_and_lastsave(fserver):
    # On the fake clock LASTSAVE is exact: the second of the last SAVE.
    conn = fserver.raw()
    before = int(conn.command("LASTSAVE")[1:-2])
    fserver.clock.advance(seconds=5.7)
    assert conn.command("SAVE") == b"+OK\r\n"
    saved = fserver.clock.ns // 10 ** 9
    assert saved > before
    fserver.clock.advance(seconds=30)
    assert conn.command("LASTSAVE") == b":%d\r\n" % saved


# ---- SHUTDOWN ---------------------------------------------------------------------------

def test_shutdown_closes_clients_and_exits_zero(start_daemon):
    d = start_daemon()
    other = d.raw()
    assert other.command("PING") == b"+PONG\r\n"
    conn = d.raw()
    conn.send(resp_command("SHUTDOWN", "NOSAVE"))
    assert conn.read_to_eof(10) == (b"", True)
    assert other.read_to_eof(10) == (b"", True)
    assert d.wait_exit(15) == 0


# ---- SCAN and KEYS ------------------------------------------------------------------

def test_scan_sees_every_key_that_lives_through_a_growing_table(r):
    for i in range(100):
        r.execute_command("CL.THROTTLE", "old:%d" % i, 1, 1, 60)
    seen = set()
    cursor = 0
    added = 0
    while True:
        cursor, keys = r.scan(cursor=cursor, count=3)
        seen.update(keys)
        if added < 2000:  # grow the table (several rehashes) mid-scan
            for i in range(added, added + 200):
                r.execute_command("CL.THROTTLE", "new:%d" % i, 1, 1, 60)
            added += 200
        if cursor == 0:
            break
    assert {b"old:%d" % i for i in range(100)} <= seen


def test_scan_and_keys_skip_keys_whose_state_is_fresh_again(fserver, fr):
    fr.execute_command("CL.THROTTLE", "short", 0, 1, 1)     # TTL 1 s
    fr.execute_command("CL.THROTTLE", "long", 0, 1, 100)    # TTL 100 s
    fserver.clock.advance(seconds=2)
    assert fr.keys("*") == [b"long"]
    assert sorted(fr.scan_iter()) == [b"long"]


def test_scan_type_filter_and_errors(r):
    r.execute_command("CL.THROTTLE", "t1", 1, 1, 60)    # a string, as redis-cell's
    r.execute_command("GCRA", "g1", 1, 1, 60)
    assert list(r.scan_iter(_type="string")) == [b"t1"]
    assert list(r.scan_iter(_type="STRING")) == [b"t1"]
    assert list(r.scan_iter(_type="gcra")) == [b"g1"]
    assert list(r.scan_iter(_type="hash")) == []
    r.delete("g1")
    # As Redis (strtoul): a signed cursor is read, "-1" being 2^64 - 1: the
    # last bucket, so it ends the scan (with that bucket's keys, if any).
    cursor, keys = r.execute_command("SCAN", "-1")
    assert cursor == 0 and set(keys) <= {b"t1"}
    assert r.execute_command("SCAN", "+0")[0] == 0
    for args, err in ((("abc",), "ERR invalid cursor"),
                      ((" 1",), "ERR invalid cursor"),
                      (("0", "COUNT", "0"), "ERR syntax error"),
                      (("0", "COUNT", "x"), "ERR value is not an integer or out of range"),
                      (("0", "MATCH"), "ERR syntax error"),
                      (("0", "BOGUS", "1"), "ERR syntax error")):
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command("SCAN", *args)
        assert str(e.value) == err[4:]


def test_keys_glob_classes_and_escapes(r):
    for k in ("a1", "b2", "c3", "a*"):
        r.execute_command("CL.THROTTLE", k, 1, 1, 60)
    assert sorted(r.keys("[ab]?")) == [b"a*", b"a1", b"b2"]
    assert sorted(r.keys("[^a]?")) == [b"b2", b"c3"]
    assert r.keys("a\\*") == [b"a*"]


# ---- SLOWLOG ----------------------------------------------------------------------

def test_slowlog_records_commands_over_the_threshold(start_daemon):
    d = start_daemon("--slowlog-log-slower-than", "0", "--slowlog-max-len", "3")
    r = d.client()
    r.client_setname("worker-7")
    r.execute_command("CL.THROTTLE", "a" * 200, 1, 1, 1)
    r.execute_command("DEL", *["k%d" % i for i in range(40)])
    raw = d.raw()
    got = r.execute_command("SLOWLOG", "GET", "2")
    assert len(got) == 2
    newest, older = got
    assert newest[3][0] == b"DEL" and newest[3][-1] == b"... (10 more arguments)"
    assert len(newest[3]) == 32
    assert older[3][:2] == [b"CL.THROTTLE", b"a" * 128 + b"... (72 more bytes)"]
    assert older[5] == b"worker-7" and older[4].startswith(b"127.0.0.1:")
    assert newest[0] > older[0] and newest[2] >= 0
    assert r.execute_command("SLOWLOG", "LEN") == 3          # capped at max-len
    assert r.execute_command("SLOWLOG", "RESET") == b"OK"
    # As Redis 7.0.15: SLOWLOG's own calls are logged, AUTH's arguments
    # as "(redacted)".
    assert r.execute_command("SLOWLOG", "LEN") == 1
    raw.command("AUTH", "default", "secret-password")
    got = r.execute_command("SLOWLOG", "GET", "-1")
    assert [e[3] for e in got] == [[b"AUTH", b"(redacted)", b"(redacted)"],
                                   [b"SLOWLOG", b"LEN"], [b"SLOWLOG", b"RESET"]]
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("SLOWLOG", "GET", "x")
    assert str(e.value) == "count should be greater than or equal to -1"


def test_slowlog_is_off_below_the_threshold(r):
    r.execute_command("SLOWLOG", "RESET")
    r.ping()
    assert r.execute_command("SLOWLOG", "LEN") == 0


def test_container_commands_count_once_in_commandstats(start_daemon):
    d = start_daemon()
    r = d.client(decode_responses=True)
    r.client_setname("x")
    stats = r.info("commandstats")
    assert stats["cmdstat_client|setname"]["calls"] == 1
    assert "cmdstat_client" not in stats


def test_info_limits_counts_allowed_and_denied_per_limiter(start_daemon):
    d = start_daemon()
    r = d.client()
    for _ in range(3):
        r.execute_command("CL.THROTTLE", "k", 1, 1, 60)
    r.execute_command("RL.FIXED", "f", 1, 60)
    r.execute_command("RL.FIXED", "f", 1, 60, "PEEK")
    info = r.info("limits")
    assert info["limits_cl.throttle"] == {"allowed": 2, "denied": 1}
    assert info["limits_rl.fixed"] == {"allowed": 1, "denied": 1}
    assert "limits_rl.log" not in info


def test_config_set_refuses_a_repeated_parameter_and_changes_nothing(server):
    conn = server.raw()
    assert conn.command("CONFIG", "SET", "timeout", "5", "TIMEOUT", "7") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'TIMEOUT') - "
        b"duplicate parameter\r\n")
    assert conn.command("CONFIG", "GET", "timeout") == b"*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n"


def test_commandstats_sum_nanoseconds(server):
    r = server.client()
    r.config_resetstat()
    p = r.pipeline(transaction=False)
    for i in range(2000):
        p.execute_command("CL.THROTTLE", "cs", 100000, 1, 60)
    p.execute()
    stat = r.info("commandstats")["cmdstat_cl.throttle"]
    # Each call takes well under a microsecond of CPU: whole microseconds
    # per call summed to 0; the sum of nanoseconds does not.
    assert stat["calls"] == 2000
    assert stat["usec"] > 0 and 0 < stat["usec_per_call"] < 1000


def test_redis_mode_follows_cluster_mode(server, start_daemon):
    assert server.client().info("server")["redis_mode"] == "standalone"
    d = start_daemon("--cluster-mode", "emulated")
    assert d.client().info("server")["redis_mode"] == "cluster"


def test_role_and_info_replication_answer_as_a_redis_primary(server, redis_server):
    """What Sentinel asks a primary: ROLE, and INFO replication's fields in
    Redis 7.0's order (IDs differ: each server makes its own)."""
    ours, theirs = server.raw(), harness.RawConn(port=redis_server.port)
    try:
        assert ours.command("ROLE") == theirs.command("ROLE") == \
            b"*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"
        fields = lambda raw: [l.split(b":")[0] for l in
                              raw.command("INFO", "replication").split(b"\r\n")[1:]]
        assert fields(ours) == fields(theirs)
        assert re.search(rb"master_replid:[0-9a-f]{40}\r\n",
                         ours.command("INFO", "replication"))
    finally:
        theirs.close()

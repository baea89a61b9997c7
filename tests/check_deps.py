#!/usr/bin/python3
"""make check-deps: the layering of the source tree, checked from what the
code really uses.

A module is a .c file with the header of the same name (store.c +
store.h); a header without a .c is a module of its own. Module A depends
on module B when A includes B's header or when A's object file uses a
symbol that B's object file defines (nm), so a call counts even without
an include.

The rules:
  - folders: lib <- protocol, algorithms, conf <- server. A lower folder
    never depends on a higher one or a sibling (algorithms: lib only).
  - inside server/, the floors, top down:
        main                          (the process)
        conn, iothread, metrics, busy (the connection layer, its I/O
                                       threads, the exporter, the busy
                                       server)
        commands                      (the table: names every handler)
        handlers/: cmd_*.c, info.c    (one command family each)
        handlers/limit_cmd, coll_cmd  (what the limiter handlers share;
                                       what the key types' handlers share)
        script/                       (Lua scripts: they run commands
                                       through the dispatcher)
        cmd                           (dispatch, errors, statistics)
        guard                         (the server's state against a
                                       write, asked by cmd and script/)
        the wings: persist/, repl/, cluster/, envoy/, rdb/
        the core: every other file directly in server/
        store, then wheel             (the table, its timer wheel)
    A module depends only on floors below its own; handlers never on one
    another; the core never on a wing, cmd, conn or main.
  - the wings' own rules (WING_RULES): persist/ and repl/ never depend on
    each other, envoy/ on no other wing but cluster/ (a gRPC call's
    descriptors are decided where the cluster serves their counters),
    rdb/ on no other wing, nothing in handlers/ or script/ on conn.
  - inside repl/, top down (REPL_ORDER): replication (the wing's face),
    replica (the link to a primary), primary (our replicas), stream,
    backlog; a module depends only on those below it.
  - only the keyspace (and the store itself) calls the store's write
    functions (STORE_WRITES), seen in the object files: keyspace.c any,
    keyspace_db.c those that make and free a database's store,
    keyspace_apply.c those that put a restored key in (STORE_WRITERS);
    only the owner
    of background children (server/child) and daemonize's start-up fork
    (server/lifecycle) call fork().
  - no two modules depend on each other, directly or in a loop.
  - nothing is left out: every folder holding sources is one the rules
    place, and every .c file has its object in BUILD_DIR (a file the
    Makefile does not build fails here, not silently).

Usage: tests/check_deps.py BUILD_DIR   (objects of `make` in BUILD_DIR)
Prints "check-deps: ok (...)" or every broken rule with the names that
break it, and exits 1.
"""
import fnmatch
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["lib", "protocol", "algorithms", "conf", "server"]
# What each folder may depend on besides itself.
FOLDER_MAY = {
    "lib": set(),
    "protocol": {"lib"},
    "algorithms": {"lib"},
    "conf": {"lib"},
    "server": {"lib", "protocol", "algorithms", "conf"},
}
# The folders under server/ (its wings); a source folder not named here
# fails the check.
WINGS = ["server/handlers", "server/script", "server/persist", "server/repl",
         "server/cluster", "server/envoy", "server/rdb"]
# Floors inside server/, top down: each with the modules on it, as exact
# names or fnmatch patterns ("server/*" is a file directly in server/).
# A module takes the first floor that names it exactly, else the first
# whose pattern matches.
SERVER_FLOORS = [
    ("main", ["server/main"]),
    ("connections", ["server/conn", "server/iothread", "server/metrics",
                     "server/busy"]),
    ("table", ["server/commands"]),
    ("handlers", ["server/handlers/*"]),
    ("handler support", ["server/handlers/limit_cmd", "server/handlers/coll_cmd"]),
    ("scripts", ["server/script/*"]),
    ("dispatcher", ["server/cmd"]),
    ("guards", ["server/guard"]),
    ("wings", ["server/persist/*", "server/repl/*", "server/cluster/*", "server/envoy/*",
               "server/rdb/*"]),
    ("core", ["server/*"]),
    ("store", ["server/store"]),
    ("wheel", ["server/wheel"]),
]
# Floors whose modules may depend on one another (loops still fail).
SAME_FLOOR_OK = {"connections", "scripts", "wings", "core"}
# (from folder, to folder, why): a module in the first may not depend on
# one in the second.
WING_RULES = [
    ("server/persist", "server/repl", "persist/ and repl/ never depend on each other"),
    ("server/repl", "server/persist", "persist/ and repl/ never depend on each other"),
    ("server/envoy", "server/persist", "envoy/ depends on no other wing"),
    ("server/envoy", "server/repl", "envoy/ depends on no other wing"),
    ("server/rdb", "server/persist", "rdb/ depends on no other wing"),
    ("server/rdb", "server/repl", "rdb/ depends on no other wing"),
    ("server/rdb", "server/cluster", "rdb/ depends on no other wing"),
    ("server/rdb", "server/envoy", "rdb/ depends on no other wing"),
    ("server/handlers", "server/conn", "handlers never reach the connection layer"),
    ("server/script", "server/conn", "scripts never reach the connection layer"),
]
# The modules of repl/, top down: each depends only on those after it.
REPL_ORDER = ["server/repl/replication", "server/repl/replica", "server/repl/primary",
              "server/repl/stream", "server/repl/backlog"]
# The store's write functions, and the modules that may call them: each
# named with the ones it may call. The write path (server/keyspace) and the
# store itself call any. The databases (server/keyspace_db) make, swap and
# free the stores and never a record: the lifecycle functions only, so a
# store they make frees its records through the hook the write path hands
# them (store_set_release), and every record still changes in keyspace.c.
# Keys put back from a snapshot, the journal or a primary
# (server/keyspace_apply) are decoded straight into the store, past the
# write path on purpose (admitted and journaled where first written): the
# record writes they need (add, by the key's hash when it was looked up
# first, set its expiry, remove), no more.
STORE_WRITES = {"store_create", "store_destroy", "store_set_release", "store_add",
                "store_add_hashed", "store_set_expire", "store_remove", "store_flush",
                "store_evict_soonest", "store_expire", "store_slots_enable",
                "store_slots_disable"}
STORE_LIFECYCLE = {"store_create", "store_destroy", "store_set_release",
                   "store_slots_enable", "store_slots_disable"}
STORE_WRITERS = {"server/keyspace": STORE_WRITES, "server/store": STORE_WRITES,
                 "server/keyspace_db": STORE_LIFECYCLE,
                 "server/keyspace_apply": {"store_add", "store_add_hashed",
                                           "store_set_expire", "store_remove"}}
# Who may fork.
FORKERS = {"server/child", "server/lifecycle"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def source_files():
    """Every .c/.h under the source folders, repo-relative, sorted."""
    out = []
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, folder)):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith((".c", ".h")):
                    out.append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    return out


def modules():
    """module name -> list of its files (repo-relative)."""
    mods = {}
    for f in source_files():
        mods.setdefault(f[:-2], []).append(f)
    return mods


def folder_of(mod):
    return os.path.dirname(mod)


def unplaced_folders(mods):
    """Folders holding sources that no rule places."""
    known = set(FOLDERS) | set(WINGS)
    return sorted({folder_of(m) for m in mods} - known)


def server_floor(mod):
    for i, (name, members) in enumerate(SERVER_FLOORS):
        if mod in members:
            return i, name
    for i, (name, members) in enumerate(SERVER_FLOORS):
        if any("*" in p and fnmatch.fnmatch(mod, p) and folder_of(mod) == folder_of(p)
               for p in members):
            return i, name
    return None, None


def include_edges(mods, owner_of_header):
    edges = {}
    for mod, files in mods.items():
        for f in files:
            with open(os.path.join(ROOT, f), encoding="utf-8") as fh:
                for inc in INCLUDE.findall(fh.read()):
                    target = owner_of_header.get(inc)
                    if target is not None and target != mod:
                        edges.setdefault((mod, target), set()).add("#include " + inc)
    return edges


def symbol_edges(mods, build):
    """(edges, the symbols each module uses, the .c files with no object)."""
    defined, used, unbuilt = {}, {}, []
    for mod, files in sorted(mods.items()):
        obj = os.path.join(build, mod + ".o")
        if not os.path.exists(obj):
            if mod + ".c" in files:
                unbuilt.append(mod + ".c")
            continue
        out = subprocess.run(["nm", obj], stdout=subprocess.PIPE, check=True,
                             universal_newlines=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBR":
                defined[parts[2]] = mod
            elif len(parts) == 2 and parts[0] == "U":
                used.setdefault(mod, set()).add(parts[1])
    edges = {}
    for mod, names in used.items():
        for name in names:
            target = defined.get(name)
            if target is not None and target != mod:
                edges.setdefault((mod, target), set()).add(name)
    return edges, used, unbuilt


def check_rule(a, b):
    """Why a -> b breaks the layering, or None."""
    fa, fb = a.split("/")[0], b.split("/")[0]
    if fa != fb:
        return None if fb in FOLDER_MAY[fa] else "%s/ may not depend on %s/" % (fa, fb)
    if fa != "server":
        return None
    for src, dst, why in WING_RULES:
        if folder_of(a) == src and (folder_of(b) == dst or b == dst):
            return why
    if a in REPL_ORDER and b in REPL_ORDER and REPL_ORDER.index(b) < REPL_ORDER.index(a):
        return "inside repl/, %s is above %s (REPL_ORDER)" % (b, a)
    (ia, na), (ib, nb) = server_floor(a), server_floor(b)
    if na == "handlers" and nb == "handlers":
        if b == "server/handlers/handlers":
            return None             # the table's list of handlers
        return "a handler may not depend on another handler"
    if ib < ia or (ib == ia and na not in SAME_FLOOR_OK):
        return "floor %s may not depend on floor %s" % (na, nb)
    return None


def symbol_rules(used):
    """The calls only some modules may make: the store's writes, fork()."""
    problems = []
    for mod, names in sorted(used.items()):
        writes = sorted(names & (STORE_WRITES - STORE_WRITERS.get(mod, set())))
        if writes:
            problems.append("%s calls the store's write functions (%s): only the keyspace "
                            "changes keys" % (mod, ", ".join(writes)))
        if "fork" in names and mod not in FORKERS:
            problems.append("%s calls fork(): background children belong to server/child"
                            % mod)
    return problems


def loops(nodes, edges):
    """Strongly connected components of more than one module (Tarjan)."""
    succ = {}
    for (a, b) in edges:
        succ.setdefault(a, set()).add(b)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(succ.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    mods = modules()
    owner_of_header = {}
    for mod, files in mods.items():
        for f in files:
            if f.endswith(".h"):
                owner_of_header[f] = mod
    edges = include_edges(mods, owner_of_header)
    sym_edges, used, unbuilt = symbol_edges(mods, build)
    for key, names in sym_edges.items():
        edges.setdefault(key, set()).update(names)
    problems = []
    for folder in unplaced_folders(mods):
        problems.append("%s/ holds sources but no rule places it (FOLDERS, WINGS)" % folder)
    for mod in sorted(m for m in mods if folder_of(m) == "server/repl" and m not in REPL_ORDER):
        problems.append("%s is in repl/ but not in REPL_ORDER" % mod)
    for f in unbuilt:
        problems.append("%s has no object in %s: the build leaves it out" % (f, build))
    problems += symbol_rules(used)
    for (a, b), names in sorted(edges.items()):
        why = check_rule(a, b)
        if why:
            problems.append("%s -> %s: %s (%s)" % (a, b, why, ", ".join(sorted(names)[:6])))
    for comp in loops(mods, edges):
        inner = ["%s -> %s (%s)" % (a, b, ", ".join(sorted(n)[:4]))
                 for (a, b), n in sorted(edges.items()) if a in comp and b in comp]
        problems.append("a loop: " + ", ".join(comp) + "\n      " + "\n      ".join(inner))
    if problems:
        print("check-deps: %d problem(s)" % len(problems))
        for p in problems:
            print("  " + p)
        return 1
    print("check-deps: ok (%d modules, %d dependencies, no loops)" % (len(mods), len(edges)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

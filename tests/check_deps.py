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
        conn, metrics                 (the connection layer, the exporter)
        commands                      (the table: names every handler)
        handlers: cmd_*.c, info.c     (one command family each)
        limit_cmd                     (what the limiter handlers share)
        cmd                           (dispatch, errors, statistics)
        the rest: keyspace, snapshot, cluster, slowlog, clock, log, ...
        store, then wheel             (the table, its timer wheel)
    A module depends only on floors below its own; handlers never on one
    another; keyspace and what it stands on never on cmd, conn or main.
  - no two modules depend on each other, directly or in a loop.

Usage: tests/check_deps.py BUILD_DIR   (objects of `make` in BUILD_DIR)
Prints "check-deps: ok (...)" or every broken rule with the names that
break it, and exits 1.
"""
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
# Floors inside server/, top down; a module not named is on the floor
# "base" (between the handlers and store).
SERVER_FLOORS = [
    ("main", {"server/main"}),
    ("connections", {"server/conn", "server/metrics"}),
    ("table", {"server/commands"}),
    ("handlers", None),                  # server/cmd_*.c, server/info.c
    ("handler support", {"server/limit_cmd"}),
    ("dispatcher", {"server/cmd"}),
    ("base", None),                      # everything else
    ("store", {"server/store"}),
    ("wheel", {"server/wheel"}),
]
HANDLERS_FLOOR = 3
BASE_FLOOR = 6
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def modules():
    """module name -> list of its files (repo-relative)."""
    mods = {}
    for folder in FOLDERS:
        d = os.path.join(ROOT, folder)
        if not os.path.isdir(d):
            continue
        for f in sorted(os.listdir(d)):
            if f.endswith((".c", ".h")):
                mods.setdefault("%s/%s" % (folder, f[:-2]), []).append("%s/%s" % (folder, f))
    return mods


def is_handler(mod):
    base = mod.split("/", 1)[1]
    return mod.startswith("server/") and (base.startswith("cmd_") or base in ("info", "handlers"))


def server_floor(mod):
    for i, (name, members) in enumerate(SERVER_FLOORS):
        if members is not None and mod in members:
            return i, name
    if is_handler(mod):
        return HANDLERS_FLOOR, "handlers"
    return BASE_FLOOR, "base"


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
    defined, used = {}, {}
    for mod in mods:
        obj = os.path.join(build, mod + ".o")
        if not os.path.exists(obj):
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
    return edges


def check_rule(a, b):
    """Why a -> b breaks the layering, or None."""
    fa, fb = a.split("/")[0], b.split("/")[0]
    if fa != fb:
        return None if fb in FOLDER_MAY[fa] else "%s/ may not depend on %s/" % (fa, fb)
    if fa != "server":
        return None
    (ia, na), (ib, nb) = server_floor(a), server_floor(b)
    if na == "handlers" and nb == "handlers":
        if b == "server/handlers":
            return None             # the table's list of handlers
        return "a handler may not depend on another handler"
    if ib < ia or (ib == ia and na not in ("base", "connections")):
        return "floor %s may not depend on floor %s" % (na, nb)
    return None


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
    for key, names in symbol_edges(mods, build).items():
        edges.setdefault(key, set()).update(names)
    problems = []
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

#!/usr/bin/python3
"""make check-deps: every error reply the server's code gives from more
than one place is spelled once (server/errors.h, or a file's own #define
when only that file gives it).

Reads the string literals of lib/, protocol/, algorithms/, conf/ and
server/ (comments left out) that start with one of Redis's error codes
and a space ("ERR ...", "WRONGTYPE ...", "-MISCONF ..."), and fails,
naming the places, when one such literal stands in two places.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["lib", "protocol", "algorithms", "conf", "server"]
CODES = ("ERR|WRONGTYPE|OOM|NOAUTH|MISCONF|NOREPLICAS|READONLY|BUSY|NOTBUSY|"
         "NOSCRIPT|UNKILLABLE|EXECABORT|MOVED|ASK|CROSSSLOT|CLUSTERDOWN|"
         "TRYAGAIN|LOADING|MASTERDOWN|NOPROTO|WRONGPASS|NOPERM|BUSYKEY")
LITERAL = re.compile(r'"-?((?:%s) (?:[^"\\]|\\.)+)"' % CODES)
JOINED = re.compile(r'("(?:[^"\\\n]|\\.)*)"\s*"((?:[^"\\\n]|\\.)*)"')
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)


def sources():
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, folder)):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith((".c", ".h")):
                    yield os.path.join(dirpath, f)


def main():
    places = {}
    for path in sources():
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        # Comments become blank lines of the same count, so line numbers hold.
        text = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        # Adjacent literals are one string, as the compiler joins them (the
        # newlines kept at the end, so the line numbers after hold).
        joined = None
        while joined != text:
            joined, text = text, JOINED.sub(
                lambda m: m.group(1) + m.group(2) + '"' +
                "\n" * m.group(0).count("\n"), text)
        for m in LITERAL.finditer(text):
            if not re.search(r"[A-Za-z]{2}", re.sub(r"%[-.0-9]*[a-z]+", "",
                                                   m.group(1).split(" ", 1)[1])):
                continue    # a bare format ("ERR %s") spells nothing
            line = text.count("\n", 0, m.start()) + 1
            rel = os.path.relpath(path, ROOT)
            places.setdefault(m.group(1), []).append("%s:%d" % (rel, line))
    twice = {t: p for t, p in places.items() if len(p) > 1}
    for text, where in sorted(twice.items()):
        print("check-errors: %r spelled %d times: %s"
              % (text, len(where), " ".join(where)))
    if twice:
        return 1
    print("check-errors: ok (%d error texts, each spelled once)" % len(places))
    return 0


if __name__ == "__main__":
    sys.exit(main())

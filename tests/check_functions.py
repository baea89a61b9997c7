#!/usr/bin/python3
"""make check-deps: no function of the server's code is longer than
MAX_LINES lines, its signature to its closing brace.

The code's own layout is what it reads: a definition's body opens with a
"{" at the start of a line and closes with a "}" at the start of a line;
its signature is the lines just above the "{" (return type, name,
parameters), which count too.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["lib", "protocol", "algorithms", "conf", "server"]
MAX_LINES = 80


def functions(path):
    """(first line, line count, signature) of each function in path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    start = None
    for i, line in enumerate(lines):
        if line.startswith("{"):
            start = i
            # Up through the signature: lines that are neither blank, nor a
            # comment's end, nor a statement's or another block's end.
            while start > 0:
                above = lines[start - 1].rstrip()
                if not above or above.endswith((";", "}", "*/")) or \
                        above.startswith("#"):
                    break
                start -= 1
        elif line.startswith("}") and start is not None:
            yield start + 1, i - start + 1, " ".join(
                l.strip() for l in lines[start:start + 2])
            start = None


def main():
    long_ones = []
    count = 0
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, folder)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(".c"):
                    continue
                path = os.path.join(dirpath, name)
                for first, n, sig in functions(path):
                    count += 1
                    if n > MAX_LINES:
                        long_ones.append("%s:%d %s (%d lines)" % (
                            os.path.relpath(path, ROOT), first, sig, n))
    for f in long_ones:
        print("check-functions: over %d lines: %s" % (MAX_LINES, f))
    if long_ones:
        return 1
    print("check-functions: ok (%d functions, none over %d lines)"
          % (count, MAX_LINES))
    return 0


if __name__ == "__main__":
    sys.exit(main())

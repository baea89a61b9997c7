#!/usr/bin/env python3
"""bench/ping_ratio.py: the arithmetic of bench/ping_ratio.sh.

  ping_ratio.py runs RAW.csv
      Server CPU per request of every run, medians with min-max, the
      paired ratio per repetition (cellgate CL.THROTTLE over Redis
      PING_MBULK, same repetition, same -P) and the verdict per -P.

  ping_ratio.py cgdiff SMALL.out LARGE.out N_SMALL N_LARGE [TOP]
      Instructions per request by function: callgrind_annotate of two runs
      of one server with N_SMALL and N_LARGE requests, each function's
      difference divided by the difference in requests (start-up and
      shutdown cancel out, as in bench/callgrind.sh), self cost and
      inclusive cost, the TOP (25) of each.

  ping_ratio.py syscalls FILE...
      perf stat -x, output of a tracepoint count around one run (first
      line of each file: "# requests N"), per request.

Standard library only.
"""
import csv
import re
import statistics
import subprocess
import sys


def median(xs):
    return statistics.median(xs) if xs else float("nan")


LABELS = {"cellgate": "cellgate CL.THROTTLE", "cellgate-b": "cellgate-b CL.THROTTLE",
          "redis": "Redis PING_MBULK"}


def paired(a, b):
    """Per-repetition ratios a/b of two servers' us/req lists."""
    bd = {x[0]: x[1] for x in b}
    return [(rep, us / bd[rep]) for rep, us, _ in a if rep in bd]


def ratio_line(title, a, b, bar):
    pairs = paired(a, b)
    if not pairs:
        return True
    pr = [x[1] for x in pairs]
    rm = median([x[1] for x in a]) / median([x[1] for x in b])
    ok = median(pr) <= 1.0
    print(f"  {title}: paired ratios per repetition "
          + " ".join(f"{r:.2f}" for _, r in sorted(pairs)))
    print(f"    median of paired ratios {median(pr):.3f} (range {min(pr):.2f}-{max(pr):.2f}),"
          f" ratio of medians {rm:.3f}"
          + (f"  -> {'MET' if ok else 'MISSED'} (bar: <= 1.00)" if bar else ""))
    return ok


def runs(path):
    rows = list(csv.DictReader(open(path)))
    by = {}                       # (pipeline, server) -> [(rep, us/req, row)]
    for r in rows:
        n = int(r["requests"])
        us = float(r["server_cpu_s"]) * 1e6 / n
        by.setdefault((int(r["pipeline"]), r["server"]), []).append(
            (int(r["rep"]), us, r))
    pipes = sorted({p for p, _ in by})
    verdict_ok = True
    print("server CPU per request (us): threads' schedstat around each run / requests")
    print()
    for p in pipes:
        servers = [sv for sv in ("cellgate", "cellgate-b", "redis") if (p, sv) in by]
        first = by[(p, servers[0])][0][2]
        counts = " + ".join(str(len(by[(p, sv)])) for sv in servers)
        print(f"-P {p}  (-c {first['clients']}, {counts} runs, {first['requests']} requests each)")
        print(f"  {'run':<30} {'median':>8} {'min':>8} {'max':>8}"
              f" {'median rps':>11} {'srv %':>6} {'cli %':>6}")
        for sv in servers:
            xs = by[(p, sv)]
            us = [x[1] for x in xs]
            rps = [float(x[2]["rps"]) for x in xs]
            srv = [100 * float(x[2]["server_cpu_s"]) / float(x[2]["wall_s"])
                   for x in xs if float(x[2]["wall_s"]) > 0]
            cli = [100 * float(x[2]["client_cpu_s"]) / float(x[2]["wall_s"])
                   for x in xs if float(x[2]["wall_s"]) > 0]
            print(f"  {LABELS[sv]:<30} {median(us):8.3f} {min(us):8.3f} {max(us):8.3f}"
                  f" {median(rps):11,.0f} {median(srv):6.0f} {median(cli):6.0f}")
        rs = by.get((p, "redis"), [])
        verdict_ok &= ratio_line("cellgate / Redis", by.get((p, "cellgate"), []), rs, True)
        if (p, "cellgate-b") in by:
            ratio_line("cellgate-b / Redis", by[(p, "cellgate-b")], rs, True)
            ratio_line("cellgate-b / cellgate", by[(p, "cellgate-b")],
                       by.get((p, "cellgate"), []), False)
        print()
    return 0 if verdict_ok else 3


LINE = re.compile(r"^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*\S)\s*$")


def annotate(path, inclusive):
    out = subprocess.run(
        ["callgrind_annotate", "--threshold=100", "--auto=no",
         "--inclusive=" + ("yes" if inclusive else "no"), path],
        capture_output=True, text=True, check=True).stdout
    costs = {}
    total = None
    for line in out.splitlines():
        m = LINE.match(line)
        if not m or m.group(2).startswith("=>") or " annotated" in m.group(2):
            continue
        ir = int(m.group(1).replace(",", ""))
        name = m.group(2)
        if name == "PROGRAM TOTALS":
            total = ir
            continue
        # "file:function [object]" -> "function", plus the object's name
        # when it is a library. One function can be listed once per source
        # file its code came from (inlined headers): self costs add up,
        # inclusive ones are each the whole function's.
        nm = re.match(r"^(.*?):(.+?)(?: \[(.*)\])?$", name)
        if nm:
            obj = (nm.group(3) or "").rsplit("/", 1)[-1]
            fn = nm.group(2)
            # (Debian's redis-server is a link to redis-check-rdb.)
            main = obj == "" or obj.startswith(("cellgate", "redis-server",
                                                "redis-check-rdb"))
            name = fn if main else f"{fn} [{obj}]"
        if inclusive:
            costs[name] = max(costs.get(name, 0), ir)
        else:
            costs[name] = costs.get(name, 0) + ir
    return total, costs


def cgdiff(small, large, n_small, n_large, top=25):
    dn = n_large - n_small
    ts, self_s = annotate(small, False)
    tl, self_l = annotate(large, False)
    _, inc_s = annotate(small, True)
    _, inc_l = annotate(large, True)
    print(f"  Ir/request {(tl - ts) / dn:,.0f}"
          f"  (({tl:,} - {ts:,}) / ({n_large:,} - {n_small:,}))")
    for title, a, b in (("self", self_s, self_l),
                        ("inclusive (below 97 % of the total)", inc_s, inc_l)):
        d = {k: (b.get(k, 0) - a.get(k, 0)) / dn for k in set(a) | set(b)}
        per_req = (tl - ts) / dn
        if title.startswith("inclusive"):
            # main(), the event loop and the like hold (nearly) everything.
            d = {k: v for k, v in d.items() if v < 0.97 * per_req}
        rows = sorted(d.items(), key=lambda kv: -kv[1])[:top]
        print(f"  top {top} functions by {title} Ir per request:")
        for k, v in rows:
            if v < 1:
                break
            print(f"    {v:9,.1f}  {100 * v * dn / (tl - ts):5.1f} %  {k}")


def syscalls(paths):
    for path in paths:
        lines = open(path).read().splitlines()
        n = int(lines[0].split()[-1])
        label = lines[1][2:] if len(lines) > 1 and lines[1].startswith("# ") else path
        parts = []
        for line in lines:
            if line.startswith("#") or not line.strip():
                continue
            f = line.split(",")
            try:
                count = float(f[0])
            except ValueError:
                continue
            ev = f[2].split(":")[-1].replace("sys_enter_", "")
            if ev == "sys_enter":
                ev = "all"
            if count > 0 or ev == "all":
                parts.append(f"{ev} {count / n:.3f}")
        print(f"  {label:<34} " + ", ".join(parts))


def main(argv):
    if len(argv) >= 3 and argv[1] == "runs":
        return runs(argv[2])
    if len(argv) >= 6 and argv[1] == "cgdiff":
        cgdiff(argv[2], argv[3], int(argv[4]), int(argv[5]),
               int(argv[6]) if len(argv) > 6 else 25)
        return 0
    if len(argv) >= 3 and argv[1] == "syscalls":
        syscalls(argv[2:])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

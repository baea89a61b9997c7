#!/usr/bin/python3
"""Summarize bench/run.sh output: medians, spreads, ratios, and the bar.

Input is the raw CSV that run.sh writes: our columns (rep, pipeline, clients,
requests, server, test) followed by redis-benchmark 7's --csv columns (rps,
avg/min/p50/p95/p99/max latency in ms). Standard library only.

    summarize.py --raw raw.csv [--meta meta.txt] [--failures failures.txt]
                 [--memory memory.csv] [--callgrind callgrind.txt]
                 [--pipeline 16] [--outdir bench/results] [--no-chart]

Prints one table per pipeline setting, the flat-cost runs, memory per key,
instructions per request, and the targets with PASS or how far each is;
writes to --outdir:
  latest.txt             the printed report
  raw-<UTC timestamp>.csv and latest.csv   the raw CSV, unchanged
  latest-memory.csv, latest-callgrind.txt  the other inputs, unchanged
  latest.png             bar charts of throughput and p99 (gnuplot)

Exit status: 0, or 3 when a target fails (run.sh decides whether that
fails the bench), or 2 on unusable input.
"""

import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# (server, test) rows of each table, in print order, with display names.
ROWS = [
    ("cellgate", "PING_INLINE", "cellgate PING_INLINE"),
    ("redis", "PING_INLINE", "Redis    PING_INLINE"),
    ("cellgate", "PING_MBULK", "cellgate PING_MBULK"),
    ("redis", "PING_MBULK", "Redis    PING_MBULK"),
    ("cellgate", "CL.THROTTLE", "cellgate CL.THROTTLE"),
    ("cellgate", "RL.FIXED", "cellgate RL.FIXED"),
    ("cellgate", "RL.SLIDING", "cellgate RL.SLIDING"),
    ("cellgate", "RL.LOG", "cellgate RL.LOG"),
    ("cellgate", "RL.ENTRIES", "cellgate RL.ENTRIES"),
    ("cellgate", "RL.TIERS", "cellgate RL.TIERS"),
    ("redis", "INCR", "Redis    INCR"),
    ("redis", "LUA_GCRA", "Redis    Lua GCRA (EVALSHA)"),
    ("cellgate", "INCR+EXPIRE", "cellgate INCR+EXPIRE"),
    ("redis", "INCR+EXPIRE", "Redis    INCR+EXPIRE"),
    ("cellgate", "SET_NX_EX", "cellgate SET NX EX"),
    ("redis", "SET_NX_EX", "Redis    SET NX EX"),
    ("cellgate", "GET", "cellgate GET"),
    ("redis", "GET", "Redis    GET"),
    ("cellgate", "INCRBY", "cellgate INCRBY"),
    ("redis", "INCRBY", "Redis    INCRBY"),
    ("cellgate", "ZLOG", "cellgate ZADD+ZREMRANGE+ZCARD"),
    ("redis", "ZLOG", "Redis    ZADD+ZREMRANGE+ZCARD"),
    ("cellgate", "LPUSH+LTRIM", "cellgate LPUSH+LTRIM"),
    ("redis", "LPUSH+LTRIM", "Redis    LPUSH+LTRIM"),
    ("cellgate", "HINCRBY", "cellgate HINCRBY"),
    ("redis", "HINCRBY", "Redis    HINCRBY"),
    ("cellgate", "SET3", "cellgate SADD+SISMEMBER+SCARD"),
    ("redis", "SET3", "Redis    SADD+SISMEMBER+SCARD"),
    ("cellgate", "HANDOFF", "cellgate BLPOP/LPUSH hand-off"),
    ("redis", "HANDOFF", "Redis    BLPOP/LPUSH hand-off"),
    ("cellgate", "EVALSHA_FW", "cellgate EVALSHA fixed window"),
    ("redis", "EVALSHA_FW", "Redis    EVALSHA fixed window"),
    ("cellgate", "EVAL_FW", "cellgate EVAL fixed window"),
    ("redis", "EVAL_FW", "Redis    EVAL fixed window"),
    ("cellgate", "RL.FIXED_FW", "cellgate RL.FIXED same limit"),
]

# The string rows: the same commands on both servers. Their bar is the
# server's CPU per command, cellgate's no more than Redis's, pipelined.
STRING_TESTS = [("INCR+EXPIRE", "INCR+EXPIRE"), ("SET_NX_EX", "SET NX EX"),
                ("GET", "GET"), ("INCRBY", "INCRBY")]
# The collection rows (issue 28): the same commands on both servers too;
# no bar yet, their CPU per command is reported beside the string rows'.
COLL_TESTS = [("ZLOG", "ZADD+ZREMRANGE+ZCARD"), ("LPUSH+LTRIM", "LPUSH+LTRIM"),
              ("HINCRBY", "HINCRBY"), ("SET3", "SADD+SISMEMBER+SCARD"),
              ("HANDOFF", "BLPOP/LPUSH hand-off")]
# The issue-37 bar among them, pipelined: server CPU per request no more
# than Redis's; a request is the three set commands (SET3: a run counts
# commands, so the figure per request is 3x the per-command one, the ratio
# the same) or one value handed from an LPUSH to a client blocked in BLPOP.
COLL_BARS = {"SET3": 3, "HANDOFF": 1}
# The script rows (issue 31): the fixed window as a script (INCR, EXPIRE on
# the first hit) through EVALSHA and through EVAL on both servers; their bar
# is the server's CPU per call, cellgate's no more than Redis's, pipelined.
# Beside them RL.FIXED on cellgate, the native command for the same limit.
SCRIPT_TESTS = [("EVALSHA_FW", "EVALSHA fixed window"), ("EVAL_FW", "EVAL fixed window")]

# Ratios of median rps: (numerator, denominator, label).
RATIOS = [
    (("cellgate", "CL.THROTTLE"), ("redis", "INCR"),
     "cellgate CL.THROTTLE / Redis INCR"),
    (("cellgate", "CL.THROTTLE"), ("redis", "PING_MBULK"),
     "cellgate CL.THROTTLE / Redis PING_MBULK"),
    (("cellgate", "CL.THROTTLE"), ("redis", "LUA_GCRA"),
     "cellgate CL.THROTTLE / Redis Lua GCRA"),
    (("cellgate", "RL.FIXED"), ("cellgate", "CL.THROTTLE"),
     "cellgate RL.FIXED   / cellgate CL.THROTTLE"),
    (("cellgate", "RL.SLIDING"), ("cellgate", "CL.THROTTLE"),
     "cellgate RL.SLIDING / cellgate CL.THROTTLE"),
    (("cellgate", "RL.LOG"), ("cellgate", "CL.THROTTLE"),
     "cellgate RL.LOG     / cellgate CL.THROTTLE"),
    (("cellgate", "RL.ENTRIES"), ("cellgate", "CL.THROTTLE"),
     "cellgate RL.ENTRIES / cellgate CL.THROTTLE"),
    (("cellgate", "RL.TIERS"), ("cellgate", "CL.THROTTLE"),
     "cellgate RL.TIERS   / cellgate CL.THROTTLE"),
    (("cellgate", "PING_MBULK"), ("redis", "PING_MBULK"),
     "cellgate PING_MBULK  / Redis PING_MBULK"),
    (("cellgate", "PING_INLINE"), ("redis", "PING_INLINE"),
     "cellgate PING_INLINE / Redis PING_INLINE"),
] + [(("cellgate", t), ("redis", t), f"cellgate {name} / Redis {name}")
     for t, name in STRING_TESTS + COLL_TESTS + SCRIPT_TESTS] + [
    (("cellgate", "RL.FIXED_FW"), ("cellgate", "EVALSHA_FW"),
     "cellgate RL.FIXED / cellgate EVALSHA fixed window"),
    (("cellgate", "RL.FIXED_FW"), ("redis", "EVALSHA_FW"),
     "cellgate RL.FIXED / Redis EVALSHA fixed window"),
]

NUMERIC = ["rps", "avg_latency_ms", "min_latency_ms", "p50_latency_ms",
           "p95_latency_ms", "p99_latency_ms", "max_latency_ms"]


def load(path):
    """Rows of the raw CSV as dicts with numbers converted."""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            try:
                for k in NUMERIC:
                    r[k] = float(r[k])
                # CPU seconds of the server and of the client, and the
                # run's wall time (absent in older files).
                for k in ("server_cpu_s", "client_cpu_s", "wall_s"):
                    v = r.get(k)
                    r[k] = float(v) if v not in (None, "") else None
                r["rep"] = int(r["rep"])
                r["pipeline"] = int(r["pipeline"])
                r["requests"] = int(r["requests"])
            except (KeyError, TypeError, ValueError) as e:
                print(f"summarize: skipping unparsable row {r}: {e}",
                      file=sys.stderr)
                continue
            rows.append(r)
    return rows


def load_meta(path):
    meta = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition("=")
                if sep:
                    meta[k] = v
    return meta


def fmt_rps(x):
    return f"{x:,.0f}"


def fmt_ratio(x):
    return "n/a" if x is None else f"{x:.2f}"


class Series:
    """All repetitions of one (pipeline, server, test)."""

    def __init__(self, rows):
        self.rows = sorted(rows, key=lambda r: r["rep"])
        rps = [r["rps"] for r in self.rows]
        self.n = len(rps)
        self.median = statistics.median(rps)
        self.lo, self.hi = min(rps), max(rps)
        self.p50 = statistics.median(r["p50_latency_ms"] for r in self.rows)
        self.p99 = statistics.median(r["p99_latency_ms"] for r in self.rows)
        self.p99_lo = min(r["p99_latency_ms"] for r in self.rows)
        self.p99_hi = max(r["p99_latency_ms"] for r in self.rows)
        self.requests = sorted({r["requests"] for r in self.rows})
        self.by_rep = {r["rep"]: r["rps"] for r in self.rows}
        # Server CPU microseconds per request: what the server itself spends,
        # whatever the speed of the (single-threaded) client.
        cpu = [1e6 * r["server_cpu_s"] / r["requests"] for r in self.rows
               if r["server_cpu_s"] is not None and r["requests"] > 0]
        self.cpu_us = statistics.median(cpu) if cpu else None
        self.cpu_by_rep = {r["rep"]: 1e6 * r["server_cpu_s"] / r["requests"]
                           for r in self.rows
                           if r["server_cpu_s"] is not None and r["requests"] > 0}
        # How busy each side was (CPU time / wall time): a side near 100 %
        # (one core) is what limited the run.
        self.srv_busy = self._busy("server_cpu_s")
        self.cli_busy = self._busy("client_cpu_s")

    def _busy(self, key):
        v = [100 * r[key] / r["wall_s"] for r in self.rows
             if r[key] is not None and r["wall_s"]]
        return statistics.median(v) if v else None


def group(rows):
    """{pipeline: {(server, test): Series}}"""
    buckets = {}
    for r in rows:
        buckets.setdefault(r["pipeline"], {}).setdefault(
            (r["server"], r["test"]), []).append(r)
    return {p: {k: Series(v) for k, v in d.items()}
            for p, d in buckets.items()}


def ratio(series, num, den):
    """(ratio of medians, min and max of the per-repetition paired ratios).

    Runs of the same repetition ran back to back, so their ratio cancels
    most of the slow drift of a shared machine; its range shows the noise.
    """
    a, b = series.get(num), series.get(den)
    if not a or not b or b.median <= 0:
        return None, None, None
    paired = [a.by_rep[k] / b.by_rep[k] for k in a.by_rep
              if k in b.by_rep and b.by_rep[k] > 0]
    if not paired:
        return a.median / b.median, None, None
    return a.median / b.median, min(paired), max(paired)


def cpu_ratio(series, num, den):
    """ratio() for the server CPU per request (lower is cheaper)."""
    a, b = series.get(num), series.get(den)
    if not a or not b or not a.cpu_us or not b.cpu_us:
        return None, None, None
    paired = [a.cpu_by_rep[k] / b.cpu_by_rep[k] for k in a.cpu_by_rep
              if k in b.cpu_by_rep and b.cpu_by_rep[k] > 0]
    if not paired:
        return a.cpu_us / b.cpu_us, None, None
    return a.cpu_us / b.cpu_us, min(paired), max(paired)


def table(pipeline, series, clients, sparse=False):
    """sparse: leave out the rows and ratios that have no run (a bench of
    some rows only, as BENCH_ONLY_SCRIPTS=1)."""
    out = []
    reps = max((s.n for s in series.values()), default=0)
    out.append(f"-P {pipeline}  (-c {clients}, median of {reps} "
               f"run{'' if reps == 1 else 's'})")
    head = (f"  {'test':<29} {'runs':>4} {'requests':>9} {'median rps':>11} "
            f"{'min - max rps':>21} {'p50 ms':>7} {'p99 ms':>7} "
            f"{'cpu us/req':>10} {'srv %':>5} {'cli %':>5}")
    out.append(head)
    out.append("  " + "-" * (len(head) - 2))
    for server, test, name in ROWS:
        s = series.get((server, test))
        if not s:
            if not sparse:
                out.append(f"  {name:<29} {'-':>4}  (no successful run)")
            continue
        req = "/".join(str(x) for x in s.requests)
        out.append(f"  {name:<29} {s.n:>4} {req:>9} {fmt_rps(s.median):>11} "
                   f"{fmt_rps(s.lo) + ' - ' + fmt_rps(s.hi):>21} "
                   f"{s.p50:>7.3f} {s.p99:>7.3f} "
                   f"{'-' if s.cpu_us is None else format(s.cpu_us, '.2f'):>10} "
                   f"{'-' if s.srv_busy is None else format(s.srv_busy, '.0f'):>5} "
                   f"{'-' if s.cli_busy is None else format(s.cli_busy, '.0f'):>5}")
    out.append("")
    out.append("  ratios of median rps              ratio   per-run paired ratios")
    for num, den, label in RATIOS:
        r, lo, hi = ratio(series, num, den)
        if sparse and r is None:
            continue
        rng = "" if lo is None else f"{lo:.2f} - {hi:.2f}"
        out.append(f"  {label:<41} {fmt_ratio(r):>5}   {rng}")
    both = [(t, n) for t, n in STRING_TESTS + COLL_TESTS + SCRIPT_TESTS
            if not sparse or series.get(("cellgate", t)) or series.get(("redis", t))]
    if any(series.get((srv, t)) for t, _ in both for srv in ("cellgate", "redis")):
        out.append("")
        out.append("  server CPU per request (us)    cellgate     Redis  cg/Redis   "
                   "per-run paired ratios")
        for t, name in both:
            a, b = series.get(("cellgate", t)), series.get(("redis", t))
            r, lo, hi = cpu_ratio(series, ("cellgate", t), ("redis", t))
            rng = "" if lo is None else f"{lo:.2f} - {hi:.2f}"
            fa = "-" if not a or a.cpu_us is None else f"{a.cpu_us:.3f}"
            fb = "-" if not b or b.cpu_us is None else f"{b.cpu_us:.3f}"
            out.append(f"  {name:<29} {fa:>9} {fb:>9} {fmt_ratio(r):>9}   {rng}")
    native = series.get(("cellgate", "RL.FIXED_FW"))
    if native and native.cpu_us:
        out.append("")
        out.append("  server CPU per decision (us)   RL.FIXED  script   RL.FIXED/script  "
                   "per-run paired ratios")
        for srv, t, name in (("cellgate", "EVALSHA_FW", "cellgate EVALSHA"),
                             ("cellgate", "EVAL_FW", "cellgate EVAL"),
                             ("redis", "EVALSHA_FW", "Redis EVALSHA"),
                             ("redis", "EVAL_FW", "Redis EVAL")):
            b = series.get((srv, t))
            if not b or not b.cpu_us:
                continue
            r, lo, hi = cpu_ratio(series, ("cellgate", "RL.FIXED_FW"), (srv, t))
            rng = "" if lo is None else f"{lo:.2f} - {hi:.2f}"
            out.append(f"  RL.FIXED vs {name:<18} {native.cpu_us:>9.3f} {b.cpu_us:>7.3f} "
                       f"{fmt_ratio(r):>17}   {rng}")
    return out


# Bars of the chart: (x, server, test, series) with groups at x = 0, 1, ...
CHART_GROUPS = [
    ("PING_INLINE", [("cellgate", "PING_INLINE", 0), ("redis", "PING_INLINE", 1)]),
    ("PING_MBULK", [("cellgate", "PING_MBULK", 0), ("redis", "PING_MBULK", 1)]),
    ("CL.THROTTLE|INCR|Lua", [("cellgate", "CL.THROTTLE", 0), ("redis", "INCR", 1),
                              ("redis", "LUA_GCRA", 2)]),
    ("RL.FIXED", [("cellgate", "RL.FIXED", 0)]),
    ("RL.SLIDING", [("cellgate", "RL.SLIDING", 0)]),
    ("RL.LOG", [("cellgate", "RL.LOG", 0)]),
    ("RL.ENTRIES", [("cellgate", "RL.ENTRIES", 0)]),
    ("RL.TIERS", [("cellgate", "RL.TIERS", 0)]),
] + [(name, [("cellgate", t, 0), ("redis", t, 1)])
     for t, name in STRING_TESTS + COLL_TESTS + SCRIPT_TESTS] + [
    ("RL.FIXED same limit", [("cellgate", "RL.FIXED_FW", 0)]),
]
SERIES_NAMES = ["cellgate", "Redis", "Redis + Lua GCRA script"]
SERIES_COLORS = ["#1f6fb4", "#d62728", "#f2a33a"]


def chart_data(series, metric):
    """gnuplot data blocks, one per series: x, value, min, max, width."""
    blocks = [[] for _ in SERIES_NAMES]
    for x, (_, bars) in enumerate(CHART_GROUPS):
        width = 0.8 / len(bars)
        for i, (server, test, k) in enumerate(bars):
            s = series.get((server, test))
            if not s:
                continue
            pos = x - 0.4 + width * (i + 0.5)
            if metric == "rps":
                v, lo, hi = s.median / 1000, s.lo / 1000, s.hi / 1000
            else:
                v, lo, hi = s.p99, s.p99_lo, s.p99_hi
            blocks[k].append(f"{pos:.3f} {v:.3f} {lo:.3f} {hi:.3f} {width * 0.95:.3f}")
    return blocks


def chart(groups, pipelines, meta, path):
    """Throughput (top row) and p99 latency (bottom row) per command, one
    column per pipeline setting. Returns an error or None."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        return "gnuplot not found: chart skipped"
    reps = meta.get("reps", "?")
    title = (f"cellgate vs {meta.get('redis', 'Redis').split(',')[0].replace('server v=', '')}, "
             f"redis-benchmark -c {meta.get('clients', '?')}: "
             f"median of {reps} runs, whiskers = min-max")
    xtics = ", ".join(f"'{name}' {x}" for x, (name, _) in enumerate(CHART_GROUPS))
    lines = [
        "set terminal pngcairo size 1600,1000 font 'DejaVu Sans,10' noenhanced",
        f"set output '{path}'",
        f"set multiplot layout 2,{len(pipelines)} title \"{title}\" font ',13'",
        "set style fill solid 0.9 border -1",
        "set grid ytics lc rgb '#dddddd'",
        f"set xrange [-0.6:{len(CHART_GROUPS) - 0.4}]",
        f"set xtics ({xtics}) scale 0 rotate by -20",
        "set key inside top right vertical reverse Left samplen 2 opaque "
        "box lc rgb '#bbbbbb'",
    ]
    first = True
    for metric, ylabel in (("rps", "thousand requests / s"), ("p99", "p99 latency, ms")):
        for p in pipelines:
            series = groups.get(p, {})
            blocks = chart_data(series, metric)
            top = max((float(b.split()[3]) for blk in blocks for b in blk), default=1.0)
            for k, blk in enumerate(blocks):
                lines.append(f"$D{metric}{p}s{k} << EOD")
                lines += blk or ["-10 0 0 0 0.1"]  # an empty series draws nothing
                lines.append("EOD")
            label = "unpipelined (-P 1)" if p == 1 else f"pipelined (-P {p})"
            what = "throughput" if metric == "rps" else "p99 latency"
            lines.append(f"set title '{what}, {label}'")
            lines.append(f"set ylabel '{ylabel}'")
            lines.append(f"set yrange [0:{top * 1.25:.3f}]")
            fmt = "%.0fk" if metric == "rps" else "%.2f"
            parts = []
            for k in range(len(SERIES_NAMES)):
                title_k = f"title '{SERIES_NAMES[k]}'" if first else "notitle"
                parts.append(f"$D{metric}{p}s{k} using 1:2:5 with boxes "
                             f"lc rgb '{SERIES_COLORS[k]}' {title_k}")
            for k in range(len(SERIES_NAMES)):
                parts.append(f"$D{metric}{p}s{k} using 1:3:(0):($4-$3) with vectors "
                             "heads size 0.04,90 lc rgb 'black' lw 1 notitle")
            for k in range(len(SERIES_NAMES)):
                parts.append(f"$D{metric}{p}s{k} using 1:4:(sprintf('{fmt}', $2)) "
                             "with labels offset 0,0.7 font ',8' notitle")
            lines.append("plot " + ", \\\n     ".join(parts))
            if first:
                lines.append("unset key")  # one legend is enough
            first = False
    lines.append("unset multiplot")
    script = "\n".join(lines) + "\n"
    with tempfile.NamedTemporaryFile("w", suffix=".gp", delete=False) as f:
        f.write(script)
        gp = f.name
    try:
        r = subprocess.run([gnuplot, gp], capture_output=True, text=True,
                           timeout=60)
        if r.returncode != 0:
            return f"gnuplot failed ({r.returncode}): {r.stderr.strip()[:500]}"
    except (OSError, subprocess.SubprocessError) as e:
        return f"gnuplot failed: {e}"
    finally:
        os.unlink(gp)
    return None


def load_memory(path):
    """{limiter: {keys: (used_memory, used_memory_rss)}} from run.sh's memory.csv."""
    mem = {}
    if not path or not os.path.exists(path):
        return mem
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            try:
                mem.setdefault(r["limiter"], {})[int(r["keys"])] = (
                    int(r["used_memory"]), int(r["used_memory_rss"]))
            except (KeyError, TypeError, ValueError):
                print(f"summarize: skipping unparsable memory row {r}", file=sys.stderr)
    return mem


def memory_per_key(mem):
    """{(limiter, keys): (used bytes/key, rss bytes/key)} over the empty server."""
    out = {}
    for limiter, points in mem.items():
        if 0 not in points:
            continue
        used0, rss0 = points[0]
        for keys, (used, rss) in sorted(points.items()):
            if keys > 0:
                out[(limiter, keys)] = ((used - used0) / keys, (rss - rss0) / keys)
    return out


def memory_section(per_key):
    if not per_key:
        return []
    out = ["memory per key, 16-byte key names (INFO used_memory and RSS growth / keys)",
           f"  {'limiter':<14} {'keys':>12} {'used B/key':>11} {'rss B/key':>10} {'rss/used':>9}"]
    for (limiter, keys), (used, rss) in sorted(per_key.items()):
        out.append(f"  {limiter:<14} {keys:>12,} {used:>11.1f} {rss:>10.1f} "
                   f"{rss / used if used else 0:>9.2f}")
    return out


def load_callgrind(path):
    """{label: Ir/request} from bench/callgrind.sh's output."""
    ir = {}
    if not path or not os.path.exists(path):
        return ir
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and parts[1].replace(".", "").isdigit():
                ir[parts[0]] = float(parts[1])
    return ir


def callgrind_section(ir):
    if not ir:
        return []
    out = ["instructions per request inside cellgate (callgrind, -c 50 -P 16, random keys)"]
    base = ir.get("PING_MBULK")
    for label, v in ir.items():
        rel = f"  ({v / base:.1f}x PING_MBULK)" if base and label != "PING_MBULK" else ""
        out.append(f"  {label:<14} {v:>8,.0f} Ir/request{rel}")
    return out


def flat_section(series):
    small = series.get(("cellgate", "FLAT_1K"))
    big = series.get(("cellgate-big", "FLAT_BIG"))
    if not small or not big:
        return [], None
    r, lo, hi = ratio(series, ("cellgate-big", "FLAT_BIG"), ("cellgate", "FLAT_1K"))
    rng = "" if lo is None else f" (per-run paired {lo:.2f} - {hi:.2f})"
    out = ["flat cost: CL.THROTTLE k 100000 1 86400 (every key stays live), same binary",
           f"  {'live keys':<22} {'median rps':>11} {'min - max rps':>21} {'p99 ms':>7}"]
    for name, s in (("1,000", small), ("all filled keys", big)):
        out.append(f"  {name:<22} {fmt_rps(s.median):>11} "
                   f"{fmt_rps(s.lo) + ' - ' + fmt_rps(s.hi):>21} {s.p99:>7.3f}")
    out.append(f"  ratio {fmt_ratio(r)}{rng}")
    return out, r


def target(ok, text):
    return ok, f"{'PASS' if ok else 'MISS'}  {text}"


def targets(groups, pipeline, per_key, flat, meta):
    """The issue-6 targets (and the earlier bars) as (ok, line) pairs."""
    res = []
    for p in sorted(groups):
        g = groups[p]
        r, lo, hi = ratio(g, ("cellgate", "CL.THROTTLE"), ("redis", "PING_MBULK"))
        if r is not None:
            res.append(target(r >= 1.0, f"-P {p}: CL.THROTTLE {r:.2f}x Redis PING_MBULK "
                              f"(target >= 1.0; paired runs {lo:.2f} - {hi:.2f})"))
        a, b = g.get(("cellgate", "CL.THROTTLE")), g.get(("redis", "PING_MBULK"))
        if a and b:
            res.append(target(a.p99 <= b.p99, f"-P {p}: CL.THROTTLE p99 {a.p99:.3f} ms vs "
                              f"Redis PING_MBULK p99 {b.p99:.3f} ms (target: no higher)"))
        worst = None
        for test in ("RL.FIXED", "RL.SLIDING", "RL.LOG", "RL.ENTRIES", "RL.TIERS"):
            rr, _, _ = ratio(g, ("cellgate", test), ("cellgate", "CL.THROTTLE"))
            if rr is not None and (worst is None or rr < worst[0]):
                worst = (rr, test)
        if worst:
            res.append(target(worst[0] >= 0.9, f"-P {p}: every RL.* >= 0.9x CL.THROTTLE "
                              f"(lowest: {worst[1]} {worst[0]:.2f}x)"))
        if a and b and a.cpu_us and b.cpu_us:
            res.append((None, f"info  -P {p}: server CPU per request: CL.THROTTLE "
                        f"{a.cpu_us:.2f} us, Redis PING_MBULK {b.cpu_us:.2f} us "
                        f"({a.cpu_us / b.cpu_us:.2f}x)"))
        incr, ilo, ihi = ratio(g, ("cellgate", "CL.THROTTLE"), ("redis", "INCR"))
        if incr is not None and p == pipeline:
            res.append(target(incr >= 1.0, f"-P {p}: CL.THROTTLE {incr:.2f}x Redis INCR "
                              f"(issue 2 bar >= 1.0; paired {ilo:.2f} - {ihi:.2f})"))
        for t, name in STRING_TESTS:
            a, b = g.get(("cellgate", t)), g.get(("redis", t))
            if not b:
                continue
            what = f"-P {p}: {name} server CPU per command"
            if not a:
                if meta.get("strings_cellgate") == "skipped":
                    res.append((None, f"skip  {what}: cellgate not run "
                                f"(BENCH_STRINGS_CELLGATE=0); Redis {b.cpu_us:.3f} us"))
                elif p == pipeline:
                    res.append(target(False, f"{what}: no cellgate run (see FAILED RUNS); "
                                      f"Redis {b.cpu_us:.3f} us"))
                continue
            r, lo, hi = cpu_ratio(g, ("cellgate", t), ("redis", t))
            if r is None:
                continue
            rng = "" if lo is None else f"; paired runs {lo:.2f} - {hi:.2f}"
            text = (f"{what}: cellgate {a.cpu_us:.3f} us, Redis {b.cpu_us:.3f} us "
                    f"({r:.2f}x")
            if p == pipeline:
                res.append(target(r <= 1.0, text + f", target <= 1.00{rng})"))
            else:
                res.append((None, "info  " + text + f"{rng})"))
        for t, name in SCRIPT_TESTS:
            a, b = g.get(("cellgate", t)), g.get(("redis", t))
            what = f"-P {p}: {name} server CPU per call"
            if b and not a:
                if meta.get("scripts_cellgate") == "skipped":
                    res.append((None, f"skip  {what}: cellgate not run "
                                f"(BENCH_SCRIPTS_CELLGATE=0); Redis {b.cpu_us:.3f} us"))
                elif p == pipeline:
                    res.append(target(False, f"{what}: no cellgate run (see FAILED RUNS); "
                                      f"Redis {b.cpu_us:.3f} us"))
                continue
            r, lo, hi = cpu_ratio(g, ("cellgate", t), ("redis", t))
            if r is None:
                continue
            rng = "" if lo is None else f"; paired runs {lo:.2f} - {hi:.2f}"
            text = (f"{what}: cellgate {a.cpu_us:.3f} us, Redis {b.cpu_us:.3f} us "
                    f"({r:.2f}x")
            if p == pipeline and t == "EVALSHA_FW":
                res.append(target(r <= 1.0, text + f", target <= 1.00{rng})"))
            else:
                res.append((None, "info  " + text + f"{rng})"))
        for t, name in COLL_TESTS:
            a, b = g.get(("cellgate", t)), g.get(("redis", t))
            what = f"-P {p}: {name} server CPU per command"
            if b and not a:
                res.append((None, f"skip  {what}: no cellgate run "
                            f"({meta.get('collections_cellgate', '?')}); "
                            f"Redis {b.cpu_us:.3f} us"))
                continue
            r, lo, hi = cpu_ratio(g, ("cellgate", t), ("redis", t))
            if r is None:
                continue
            rng = "" if lo is None else f"; paired runs {lo:.2f} - {hi:.2f}"
            if t in COLL_BARS:
                k = COLL_BARS[t]
                text = (f"-P {p}: {name} server CPU per request: cellgate "
                        f"{k * a.cpu_us:.3f} us, Redis {k * b.cpu_us:.3f} us ({r:.2f}x")
                if p == pipeline:
                    res.append(target(r <= 1.0, text + f", target <= 1.00{rng})"))
                else:
                    res.append((None, "info  " + text + f"{rng})"))
                continue
            res.append((None, f"info  {what}: cellgate {a.cpu_us:.3f} us, Redis "
                        f"{b.cpu_us:.3f} us ({r:.2f}x{rng})"))
    if flat is not None:
        res.append(target(flat >= 0.8, f"flat cost: {meta.get('big_keys', '?')} live keys "
                          f"{flat:.2f}x 1,000 keys (target >= 0.8)"))
    for (limiter, keys), (used, rss) in sorted(per_key.items()):
        res.append(target(used <= 48, f"memory: {limiter} at {keys:,} keys {used:.1f} B/key "
                          "(target <= 48)"))
        if keys == max(k for (l2, k) in per_key if l2 == limiter):
            res.append(target(abs(rss / used - 1) <= 0.2 if used else False,
                              f"memory: {limiter} at {keys:,} keys RSS growth "
                              f"{rss / used if used else 0:.2f}x used_memory growth "
                              "(target within 20 %)"))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--raw", required=True)
    ap.add_argument("--meta")
    ap.add_argument("--failures")
    ap.add_argument("--memory")
    ap.add_argument("--callgrind")
    ap.add_argument("--pipeline", type=int, default=16)
    ap.add_argument("--outdir", default="bench/results")
    ap.add_argument("--no-chart", action="store_true")
    args = ap.parse_args()

    rows = load(args.raw)
    meta = load_meta(args.meta)
    if not rows:
        print("summarize: no benchmark results to summarize", file=sys.stderr)
        return 2
    groups = group(rows)
    pipelines = sorted(p for p in groups
                       if any(srv == "redis" for srv, _ in groups[p]))
    clients = meta.get("clients") or rows[0]["clients"]

    out = ["cellgate benchmark: cellgate vs redis-server, same machine, "
           "same invocation, alternating runs"]
    for k in ("date", "host", "cpu", "cellgate", "redis"):
        if meta.get(k):
            out.append(f"  {k:<9} {meta[k]}")
    if meta.get("loadavg_start"):
        out.append(f"  {'loadavg':<9} {meta['loadavg_start']} at start, "
                   f"{meta.get('loadavg_end', '?')} at end")
    if meta.get("only_scripts") != "1":
        out.append("  CL.THROTTLE key:__rand_int__ 15 30 60 and EVALSHA <gcra.lua> 1 "
                   "key:__rand_int__ 15 30 60 1, INCR, RL.FIXED/RL.SLIDING/RL.LOG "
                   "<prefix>:__rand_int__ 30 60, RL.ENTRIES log:__rand_int__, "
                   "RL.TIERS <prefix>:__rand_int__ 10 1 30 60, all with -r "
                   f"{meta.get('keyspace', '?')}")
    if meta.get("strings", "1") != "0":
        out.append("  string rows, both servers: INCR ctr:K + EXPIRE ctr:K 3600 (bench-seq, "
                   "one K per pair, counted as 2 requests), INCRBY cnt:K 7, GET get:K "
                   f"(filled), -r {meta.get('keyspace', '?')}; SET snx:K abcdefgh NX EX "
                   f"3600 in db 9, flushed before each run, -r {meta.get('nx_keyspace', '?')}"
                   + ("" if meta.get("strings_cellgate", "measured") == "measured"
                      else f" (cellgate: {meta.get('strings_cellgate')})"))
    if meta.get("collections", "0") != "0":
        out.append("  collection rows, both servers, -r "
                   f"{meta.get('coll_keyspace', '?')}: ZADD zl:K I mI + ZREMRANGEBYSCORE "
                   "zl:K -inf (I-W + ZCARD zl:K (bench-seq, pipelined as sent; I the "
                   "iteration, W 9 x the keys: ~10-entry logs), LPUSH lst:K v + LTRIM "
                   "lst:K 0 9 (10-element lists), HINCRBY hc:K count 1 (2-field hashes), "
                   "SADD st:K m(I%16) + SISMEMBER st:K m(I%32) + SCARD st:K (8 to 16 "
                   "members), BLPOP/LPUSH hand-off (bench-handoff: -c clients blocked in "
                   "BLPOP on keys of their own, a producer LPUSHing to them -P at a time; "
                   f"{meta.get('handoff_n', '?')} hand-offs a run at -P 1/-P 16)"
                   + ("" if meta.get("collections_cellgate", "measured") == "measured"
                      else f" (cellgate: {meta.get('collections_cellgate')})"))
    if meta.get("scripts", "0") != "0":
        out.append(f"  script rows, -r {meta.get('keyspace', '?')}: EVALSHA <sha> 1 fws:K "
                   f"{meta.get('fw_window', '?')} (loaded with SCRIPT LOAD on both servers) "
                   f"and EVAL <body> 1 fwe:K {meta.get('fw_window', '?')} on both servers, "
                   f"RL.FIXED fwr:K {meta.get('fw_limit', '?')} {meta.get('fw_window', '?')} "
                   "on cellgate; the body: " + meta.get("fw_body", "?")
                   + ("" if meta.get("scripts_cellgate", "measured") == "measured"
                      else f" (cellgate: {meta.get('scripts_cellgate')})"))
    decision = sorted((k, v) for k, v in meta.items() if k.startswith("decision_"))
    if decision:
        out.append("  decision check before the runs (fresh keys; RL.FIXED with limit 5):")
        out += [f"    {v}" for _, v in decision]
    out.append("  cpu us/req: the server process's CPU time (its threads' schedstat) of the "
               "run / requests; srv %, cli %: CPU time / wall time of the server "
               "and of redis-benchmark (100 = one core busy)")
    out.append("")
    for p in pipelines:
        out += table(p, groups[p], clients, sparse=meta.get("only_scripts") == "1")
        out.append("")

    flat_lines, flat = flat_section(groups.get(args.pipeline, {}))
    per_key = memory_per_key(load_memory(args.memory))
    ir = load_callgrind(args.callgrind)
    for section in (flat_lines, memory_section(per_key), callgrind_section(ir)):
        if section:
            out += section + [""]

    results = targets({p: groups[p] for p in pipelines}, args.pipeline,
                      per_key, flat, meta)
    out.append("TARGETS (PASS, or MISS with the measured figure)")
    out += ["  " + line for _, line in results]
    failed_targets = [line for ok, line in results if ok is False]

    fails = []
    if args.failures and os.path.exists(args.failures):
        with open(args.failures) as f:
            fails = [line.rstrip("\n") for line in f if line.strip()]
    if fails:
        out.append("")
        out.append("FAILED RUNS (their rows, if any, are excluded or partial):")
        out += ["  " + line for line in fails]

    os.makedirs(args.outdir, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    raw_name = f"raw-{stamp}.csv"
    shutil.copyfile(args.raw, os.path.join(args.outdir, raw_name))
    shutil.copyfile(args.raw, os.path.join(args.outdir, "latest.csv"))
    for src, name in ((args.memory, "latest-memory.csv"),
                      (args.callgrind, "latest-callgrind.txt")):
        if src and os.path.exists(src):
            shutil.copyfile(src, os.path.join(args.outdir, name))
    png = os.path.join(args.outdir, "latest.png")
    if args.no_chart:
        note = "chart: skipped (--no-chart)"
    else:
        err = chart(groups, pipelines, meta, os.path.abspath(png))
        note = f"chart: {err}" if err else f"chart: {png}"
    out.append("")
    out.append(f"raw CSV: {os.path.join(args.outdir, raw_name)} (also latest.csv); {note}")

    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(args.outdir, "latest.txt"), "w") as f:
        f.write(text)
    return 3 if failed_targets else 0


if __name__ == "__main__":
    sys.exit(main())

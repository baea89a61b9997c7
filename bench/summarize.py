#!/usr/bin/python3
"""Summarize bench/run.sh output: medians, spreads, ratios, and the bar.

Input is the raw CSV that run.sh writes: our columns (rep, pipeline, clients,
requests, server, test) followed by redis-benchmark 7's --csv columns (rps,
avg/min/p50/p95/p99/max latency in ms). Standard library only.

    summarize.py --raw raw.csv [--meta meta.txt] [--failures failures.txt]
                 [--pipeline 16] [--outdir bench/results] [--no-chart]

Prints one table per pipeline setting and writes to --outdir:
  latest.txt             the printed report
  raw-<UTC timestamp>.csv and latest.csv   the raw CSV, unchanged
  latest.png             grouped bar chart (only if gnuplot is on PATH)

Exit status: 0, or 3 when the bar "CL.THROTTLE at -P <pipeline> >= Redis INCR
at -P <pipeline>" fails (run.sh decides whether that fails the bench), or 2
on unusable input.
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
    ("redis", "INCR", "Redis    INCR"),
    ("redis", "LUA_GCRA", "Redis    Lua GCRA (EVALSHA)"),
]

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
    (("cellgate", "PING_MBULK"), ("redis", "PING_MBULK"),
     "cellgate PING_MBULK  / Redis PING_MBULK"),
    (("cellgate", "PING_INLINE"), ("redis", "PING_INLINE"),
     "cellgate PING_INLINE / Redis PING_INLINE"),
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
        self.requests = sorted({r["requests"] for r in self.rows})
        self.by_rep = {r["rep"]: r["rps"] for r in self.rows}


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


def table(pipeline, series, clients):
    out = []
    reps = max((s.n for s in series.values()), default=0)
    out.append(f"-P {pipeline}  (-c {clients}, median of {reps} "
               f"run{'' if reps == 1 else 's'})")
    head = (f"  {'test':<29} {'runs':>4} {'requests':>9} {'median rps':>11} "
            f"{'min - max rps':>21} {'p50 ms':>7} {'p99 ms':>7}")
    out.append(head)
    out.append("  " + "-" * (len(head) - 2))
    for server, test, name in ROWS:
        s = series.get((server, test))
        if not s:
            out.append(f"  {name:<29} {'-':>4}  (no successful run)")
            continue
        req = "/".join(str(x) for x in s.requests)
        out.append(f"  {name:<29} {s.n:>4} {req:>9} {fmt_rps(s.median):>11} "
                   f"{fmt_rps(s.lo) + ' - ' + fmt_rps(s.hi):>21} "
                   f"{s.p50:>7.3f} {s.p99:>7.3f}")
    out.append("")
    out.append("  ratios of median rps              ratio   per-run paired ratios")
    for num, den, label in RATIOS:
        r, lo, hi = ratio(series, num, den)
        rng = "" if lo is None else f"{lo:.2f} - {hi:.2f}"
        out.append(f"  {label:<41} {fmt_ratio(r):>5}   {rng}")
    return out


def chart(groups, pipelines, meta, path):
    """Grouped bars, one panel per pipeline setting. Returns an error or None."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        return "gnuplot not found: chart skipped"
    # x position, width and series of every bar; groups at x = 0, 1, 2.
    layout = [
        ("cellgate", "PING_INLINE", 0 - 0.19, 0.36, 0),
        ("redis", "PING_INLINE", 0 + 0.19, 0.36, 1),
        ("cellgate", "PING_MBULK", 1 - 0.19, 0.36, 0),
        ("redis", "PING_MBULK", 1 + 0.19, 0.36, 1),
        ("cellgate", "CL.THROTTLE", 2 - 0.29, 0.27, 0),
        ("redis", "INCR", 2 + 0.0, 0.27, 1),
        ("redis", "LUA_GCRA", 2 + 0.29, 0.27, 2),
    ]
    names = ["cellgate", "Redis", "Redis + Lua GCRA script"]
    colors = ["#1f6fb4", "#d62728", "#f2a33a"]
    lines = []
    plots = []
    for p in pipelines:
        series = groups.get(p, {})
        top = max((s.hi for s in series.values()), default=1) / 1000.0
        for k in range(3):
            lines.append(f"$P{p}s{k} << EOD")
            for server, test, x, w, sk in layout:
                s = series.get((server, test))
                if sk == k and s:
                    lines.append(f"{x:.3f} {s.median / 1000:.3f} "
                                 f"{s.lo / 1000:.3f} {s.hi / 1000:.3f} {w:.3f}")
            lines.append("EOD")
        plots.append((p, top))
    reps = meta.get("reps", "?")
    title = (f"cellgate vs {meta.get('redis', 'Redis').split(',')[0].replace('server v=', '')}, "
             f"redis-benchmark -c {meta.get('clients', '?')}: "
             f"median of {reps} runs, whiskers = min-max")
    lines += [
        "set terminal pngcairo size 1400,640 font 'DejaVu Sans,11' noenhanced",
        f"set output '{path}'",
        f"set multiplot layout 1,{len(plots)} title \"{title}\" font ',13'",
        "set style fill solid 0.9 border -1",
        "set grid ytics lc rgb '#dddddd'",
        "set ylabel 'thousand requests / s'",
        "set xrange [-0.6:2.6]",
        "set xtics ('PING_INLINE' 0, 'PING_MBULK' 1, "
        "'CL.THROTTLE | INCR | Lua GCRA' 2) scale 0",
        "set key inside top right vertical reverse Left samplen 2 opaque "
        "box lc rgb '#bbbbbb'",
    ]
    for p, top in plots:
        label = "unpipelined (-P 1)" if p == 1 else f"pipelined (-P {p})"
        lines.append(f"set title '{label}'")
        lines.append(f"set yrange [0:{top * 1.3:.3f}]")
        parts = []
        for k in range(3):
            parts.append(f"$P{p}s{k} using 1:2:5 with boxes "
                         f"lc rgb '{colors[k]}' title '{names[k]}'")
        for k in range(3):
            parts.append(f"$P{p}s{k} using 1:3:(0):($4-$3) with vectors "
                         "heads size 0.05,90 lc rgb 'black' lw 1.2 notitle")
        for k in range(3):
            parts.append(f"$P{p}s{k} using 1:4:(sprintf('%.0fk', $2)) "
                         "with labels offset 0,0.8 font ',10' notitle")
        lines.append("plot " + ", \\\n     ".join(parts))
        lines.append("unset key")  # one legend (the first panel's) is enough
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--raw", required=True)
    ap.add_argument("--meta")
    ap.add_argument("--failures")
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
    pipelines = sorted(groups)
    clients = meta.get("clients") or rows[0]["clients"]

    out = ["cellgate benchmark: cellgate vs redis-server, same machine, "
           "same invocation, alternating runs"]
    for k in ("date", "host", "cpu", "cellgate", "redis"):
        if meta.get(k):
            out.append(f"  {k:<9} {meta[k]}")
    if meta.get("loadavg_start"):
        out.append(f"  {'loadavg':<9} {meta['loadavg_start']} at start, "
                   f"{meta.get('loadavg_end', '?')} at end")
    out.append("  CL.THROTTLE key:__rand_int__ 15 30 60 and EVALSHA <gcra.lua> 1 "
               "key:__rand_int__ 15 30 60 1, INCR, RL.FIXED/RL.SLIDING "
               "<prefix>:__rand_int__ 30 60, all with -r "
               f"{meta.get('keyspace', '?')}")
    out.append("")
    for p in pipelines:
        out += table(p, groups[p], clients)
        out.append("")

    # The bar.
    bar_ok = None
    pipe_series = groups.get(args.pipeline, {})
    r, lo, hi = ratio(pipe_series, ("cellgate", "CL.THROTTLE"), ("redis", "INCR"))
    if r is None:
        out.append(f"BAR  CL.THROTTLE at -P {args.pipeline} >= Redis INCR at "
                   f"-P {args.pipeline}: n/a (missing runs)")
    else:
        bar_ok = r >= 1.0
        rng = "" if lo is None else f"; per-run paired ratios {lo:.2f} - {hi:.2f}"
        out.append(f"BAR  CL.THROTTLE at -P {args.pipeline} >= Redis INCR at "
                   f"-P {args.pipeline}: {'PASS' if bar_ok else 'FAIL'} "
                   f"(ratio {r:.2f}{rng})")

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
    return 3 if bar_ok is False else 0


if __name__ == "__main__":
    sys.exit(main())

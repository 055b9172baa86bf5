#!/usr/bin/env python3
"""Per-kernel GPU times of one `vigil bench` run, from Nsight Compute's CSV
(`ncu --metrics gpu__time_duration.sum --csv --print-units base`): each
kernel runs alone under ncu, so the times are the kernels' own, without the
per-node synchronisation of `vigil bench --profile`.

    ncu --metrics gpu__time_duration.sum --csv --print-units base VIGIL bench ... > run.csv
    python3 tools/device/kernel_times.py run.csv [--runs N] [--top 25]

Prints the kernels grouped by name (templates cut at the first '<' or '('):
count, total and mean µs, per run when --runs says how many runs the CSV
holds.
"""
import argparse
import csv
import io
import re
from collections import defaultdict


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args()
    text = open(a.csv, errors="replace").read()
    start = text.find('"ID"')
    if start < 0:
        raise SystemExit(f"{a.csv}: no ncu CSV header (\"ID\", ...) found")
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    total = defaultdict(float)
    count = defaultdict(int)
    for r in rows:
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = re.sub(r"\(anonymous namespace\)::|<unnamed>::", "", r["Kernel Name"]).removeprefix("void ")
        name = re.split(r"[<(]", name, maxsplit=1)[0].strip()[:70]
        total[name] += float(r["Metric Value"].replace(",", "")) / 1e3  # ns -> µs
        count[name] += 1
    grand = sum(total.values())
    print(f"{len(rows)} kernels, {grand / a.runs:.1f} µs per run")
    print(f"| kernel | launches per run | µs per run | mean µs | % |")
    print("|---|---|---|---|---|")
    for name in sorted(total, key=total.get, reverse=True)[: a.top]:
        print(f"| {name} | {count[name] / a.runs:g} | {total[name] / a.runs:.1f} | {total[name] / count[name]:.2f} | "
              f"{100 * total[name] / grand:.1f} |")


if __name__ == "__main__":
    main()

import re, collections, sys
txt = open(sys.argv[1]).read()
entries = re.split(r'\n(?=[IEW]! )', txt)
rows = []
for e in entries:
    m = re.search(r'Time: \S+T(\d+):(\d+):([\d.]+)', e)
    if m:
        rows.append((float(m.group(1))*3600 + float(m.group(2))*60 + float(m.group(3)), re.sub(r'\s+', ' ', e.split('\n')[0])[:70]))
tot = collections.Counter(); cnt = collections.Counter()
for (t0, f0), (t1, f1) in zip(rows, rows[1:]):
    tot[f0] += t1 - t0; cnt[f0] += 1
for k, v in tot.most_common(6): print(f"  {v*1e3:8.1f} ms {cnt[k]:6d}  {k}")

# reshape: the Python translation of the shared benchmark reshape.js (same
# output). 10,000 rows are grouped by id % 17; each group gets its count,
# sum and mean; the groups are sorted by sum, descending, then by group.
# The input is ignored; the result is the last expression's value.
n = 10000
rows = [{"id": i, "group": i % 17, "v": i * 1.5} for i in range(n)]
by_group = {}
for r in rows:
    key = str(r["group"])
    g = by_group.get(key)
    if g is None:
        g = by_group[key] = {"group": r["group"], "count": 0, "sum": 0}
    g["count"] += 1
    g["sum"] += r["v"]
out = [
    {"group": g["group"], "count": g["count"], "sum": g["sum"], "mean": g["sum"] / g["count"]}
    for g in by_group.values()
]
out.sort(key=lambda x: (-x["sum"], x["group"]))
{"n": len(rows), "groups": len(out), "top": out[0], "result": out}

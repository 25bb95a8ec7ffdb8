// reshape.ts: the shared reshape workload (reshape.js) in TypeScript, with
// the type syntax a model writes: interfaces, a generic helper, annotations.
interface Row {
  id: number;
  group: number;
  v: number;
}

interface Group {
  group: number;
  count: number;
  sum: number;
}

interface Summary extends Group {
  mean: number;
}

function getOrInit<V>(table: Record<string, V>, key: string, init: () => V): V {
  let v = table[key];
  if (v === undefined) {
    v = init();
    table[key] = v;
  }
  return v;
}

(function (): { n: number; groups: number; top: Summary; result: Summary[] } {
  const N: number = 10000;
  const rows: Row[] = [];
  for (let id = 0; id < N; id++) {
    rows.push({ id, group: id % 17, v: id * 1.5 });
  }
  const byGroup: Record<string, Group> = {};
  for (const r of rows) {
    const key = String(r.group);
    const g = getOrInit<Group>(byGroup, key, () => ({ group: r.group, count: 0, sum: 0 }));
    g.count += 1;
    g.sum += r.v;
  }
  const out: Summary[] = Object.keys(byGroup).map((k): Summary => {
    const g = byGroup[k];
    return { group: g.group, count: g.count, sum: g.sum, mean: g.sum / g.count };
  });
  out.sort((x, y) => y.sum - x.sum || x.group - y.group);
  return { n: rows.length, groups: out.length, top: out[0], result: out };
})()

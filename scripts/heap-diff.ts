// What grew in a V8 heap between two snapshots (`.heapsnapshot` files, as `--heapsnapshot-signal` writes them):
// the live objects' self size and count summed by kind (an object's constructor name; strings, code, closures and
// arrays as one kind each), and the kinds that grew most. A snapshot is taken after a full garbage collection, so
// what it holds is retained. Used by the soak (CHAOS_SOAK_HEAP=1, scripts/soak.ts); alone:
// `npx tsx scripts/heap-diff.ts <before.heapsnapshot> <after.heapsnapshot>`.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

export type HeapKinds = Map<string, { count: number; size: number }>;

/** The heap's live objects by kind. Reads the snapshot's `nodes` numbers directly (no JSON.parse of the whole file). */
export function heapKinds(file: string): HeapKinds {
  const buf = fs.readFileSync(file);
  const nodesAt = buf.indexOf('"nodes":[');
  const header = JSON.parse(buf.subarray(0, nodesAt).toString().replace(/,\s*$/, '') + '}') as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  };
  const fields = header.snapshot.meta.node_fields;
  const types = header.snapshot.meta.node_types[0];
  const [TYPE, NAME, SIZE] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const nodes: number[] = [];
  let i = nodesAt + '"nodes":['.length;
  let n = -1;
  for (; ; i++) {
    const c = buf[i];
    if (c >= 48 && c <= 57) n = (n < 0 ? 0 : n * 10) + (c - 48);
    else {
      if (n >= 0) nodes.push(n);
      n = -1;
      if (c === 93) break; // ]
    }
  }
  const stringsAt = buf.indexOf('"strings":[', i);
  const end = buf.lastIndexOf(']');
  const strings = JSON.parse(buf.subarray(stringsAt + '"strings":'.length, end + 1).toString()) as string[];
  const kinds: HeapKinds = new Map();
  for (let k = 0; k < nodes.length; k += fields.length) {
    const type = types[nodes[k + TYPE]];
    const name = strings[nodes[k + NAME]] ?? '?';
    const kind =
      type === 'object' || type === 'native'
        ? name.split(' ')[0] || '(object)'
        : type === 'closure'
          ? '(closure)'
          : type.includes('string')
            ? '(string)'
            : `(${type})`;
    const e = kinds.get(kind) ?? { count: 0, size: 0 };
    e.count++;
    e.size += nodes[k + SIZE];
    kinds.set(kind, e);
  }
  return kinds;
}

/** Lines naming the kinds that grew most between two snapshots, with the totals. */
export function heapGrowth(before: HeapKinds, after: HeapKinds, top = 15): string[] {
  const total = (m: HeapKinds) => [...m.values()].reduce((s, e) => s + e.size, 0);
  const rows = [...new Set([...before.keys(), ...after.keys()])].map((kind) => {
    const b = before.get(kind) ?? { count: 0, size: 0 };
    const a = after.get(kind) ?? { count: 0, size: 0 };
    return { kind, size: a.size - b.size, count: a.count - b.count, now: a.size };
  });
  rows.sort((x, y) => y.size - x.size);
  const mb = (bytes: number) => (bytes / 1048576).toFixed(2);
  return [
    `heap: ${mb(total(before))} MB -> ${mb(total(after))} MB of live objects`,
    ...rows
      .slice(0, top)
      .filter((r) => r.size > 0)
      .map(
        (r) =>
          `  ${r.kind.slice(0, 40).padEnd(40)} ${`+${mb(r.size)}`.padStart(8)} MB  ` +
          `${`${r.count >= 0 ? '+' : ''}${r.count}`.padStart(8)} objects  (${mb(r.now)} MB now)`,
      ),
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [a, b] = process.argv.slice(2);
  for (const line of heapGrowth(heapKinds(a), heapKinds(b))) process.stdout.write(line + '\n');
}

// `npm run import-graph`: the shape of the house from its imports (dependency-cruiser), as figures a change can be
// compared by. Type-only imports count (they couple too). Folders are "rooms"; an "arrow" is a room importing
// another; "both ways" counts pairs of rooms importing each other; "circles" are sets of files that import each
// other round (strongly connected, more than one file), counted over the whole house (scripts and benches too).
// `--json` prints the figures as JSON.
import path from 'node:path';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import { KNOWN_CIRCLES, newCircles, violations, type Import } from './boundaries.js';

/** The code the project writes (not tests, benches or scripts). */
export const SOURCE_ROOTS = [
  'src',
  'workflows',
  'activities',
  'console/src',
  'packages/sdk/src',
  'packages/elements/src',
];
/** The whole house but its tests: where no circle of files may be (test/unit/boundaries.test.ts). */
export const HOUSE_ROOTS = [...SOURCE_ROOTS, 'scripts', 'bench'];

export interface GraphFigures {
  files: number;
  imports: number;
  rooms: number;
  arrows: number;
  bothWays: number;
  circles: number[];
  /** Pairs of rooms importing each other, `a <-> b`. */
  bothWaysPairs: string[];
}

export interface Graph {
  files: string[];
  edges: [string, string][];
  /** The same imports with how they are made: `import type` only, or a dynamic `import()`. */
  imports: Import[];
}

export async function importGraph(roots = SOURCE_ROOTS): Promise<Graph> {
  const result = await cruise(
    roots,
    {
      tsPreCompilationDeps: true,
      doNotFollow: { path: 'node_modules' },
      exclude: { path: '(^|/)(dist|node_modules)/|\\.d\\.ts$' },
      combinedDependencies: false,
    },
    undefined,
    { tsConfig: { fileName: 'tsconfig.json' } },
  );
  const output = result.output as ICruiseResult;
  const inside = (p: string) => roots.some((r) => p.startsWith(`${r}/`));
  const files = output.modules.map((m) => m.source).filter(inside);
  const imports = output.modules
    .filter((m) => inside(m.source))
    .flatMap((m) =>
      m.dependencies
        .filter((d) => inside(d.resolved))
        .map((d) => ({
          from: m.source,
          to: d.resolved,
          typeOnly: d.dependencyTypes.includes('type-only'),
          dynamic: d.dependencyTypes.includes('dynamic-import'),
        })),
    );
  const edges = imports.map((i) => [i.from, i.to] as [string, string]);
  return { files, edges, imports };
}

/** Strongly connected sets of more than one node (Tarjan). */
export function circles(nodes: string[], edges: [string, string][]): string[][] {
  const next = new Map<string, string[]>();
  for (const [a, b] of edges) next.set(a, [...(next.get(a) ?? []), b]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const found: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    on.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const set: string[] = [];
      for (let w = stack.pop()!; ; w = stack.pop()!) {
        on.delete(w);
        set.push(w);
        if (w === v) break;
      }
      if (set.length > 1) found.push(set.sort());
    }
  };
  for (const n of nodes) if (!index.has(n)) visit(n);
  return found.sort((a, b) => b.length - a.length);
}

export function figures(graph: Graph): GraphFigures {
  const room = (f: string) => path.posix.dirname(f);
  const rooms = new Set(graph.files.map(room));
  const arrows = new Set(
    graph.edges.map(([a, b]) => `${room(a)} -> ${room(b)}`).filter((e) => !/^(.+) -> \1$/.test(e)),
  );
  const bothWaysPairs = [...arrows]
    .map((e) => e.split(' -> '))
    .filter(([a, b]) => a < b && arrows.has(`${b} -> ${a}`))
    .map(([a, b]) => `${a} <-> ${b}`)
    .sort();
  return {
    files: graph.files.length,
    imports: graph.edges.length,
    rooms: rooms.size,
    arrows: arrows.size,
    bothWays: bothWaysPairs.length,
    circles: circles(graph.files, graph.edges).map((c) => c.length),
    bothWaysPairs,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // Circles are counted over the whole house (scripts and benches too), the other figures over the product code.
  const house = await importGraph(HOUSE_ROOTS);
  const houseCircles = circles(house.files, house.edges);
  const f = { ...figures(await importGraph()), circles: houseCircles.map((c) => c.length) };
  const unlisted = newCircles(houseCircles);
  const wrongWay = violations(await importGraph(['src', 'workflows', 'activities']));
  if (process.argv.includes('--json'))
    process.stdout.write(`${JSON.stringify({ ...f, unlistedCircles: unlisted, wrongWay }, null, 2)}\n`);
  else {
    const circlesText = f.circles.length ? f.circles.join(', ') : 'none';
    process.stdout.write(
      `files ${f.files}, imports ${f.imports}, rooms ${f.rooms}, arrows between rooms ${f.arrows}, ` +
        `rooms importing each other ${f.bothWays} pairs, circles of files in the house (scripts and benches too): ` +
        `${circlesText} (${KNOWN_CIRCLES.length} listed in scripts/boundaries.ts, ${unlisted.length} not), ` +
        `imports running the wrong way (scripts/boundaries.ts): ${wrongWay.length}\n` +
        houseCircles.map((c) => `  circle of ${c.length} files: ${c.join(', ')}\n`).join('') +
        wrongWay.map((v) => `  ! ${v}\n`).join('') +
        f.bothWaysPairs.map((p) => `  ${p}\n`).join(''),
    );
  }
}

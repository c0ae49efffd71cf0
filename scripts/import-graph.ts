// `npm run import-graph`: the shape of the house from its imports (dependency-cruiser), as figures a change can be
// compared by. Type-only imports count (they couple too). Folders are "rooms"; an "arrow" is a room importing
// another; "both ways" counts pairs of rooms importing each other; "circles" are sets of files that import each
// other round (strongly connected, more than one file), counted over the whole house (scripts and benches too).
// `--json` prints the figures as JSON.
import fs from 'node:fs';
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
/** The Python SDK's source (the `offerkit` package), read by `pythonImportGraph`: dependency-cruiser reads no Python. */
export const PYTHON_ROOT = 'packages/sdk-python/src';

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

/**
 * The imports between the Python SDK's own files: relative ones (`from ._local import ...`, `from . import x`) and
 * `offerkit.` ones, those under `if TYPE_CHECKING:` included (type-only, as `import type` counts in TypeScript).
 */
export function pythonImportGraph(root = PYTHON_ROOT): Graph {
  const walk = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
      const p = path.posix.join(dir, e.name);
      return e.isDirectory() ? walk(p) : p.endsWith('.py') ? [p] : [];
    });
  const files = fs.existsSync(root) ? walk(root) : [];
  const known = new Set(files);
  /** The file of a module path (`a/b`): `a/b.py`, or the package's `a/b/__init__.py`. */
  const fileOf = (m: string) => [`${m}.py`, `${m}/__init__.py`].find((f) => known.has(f));
  const imports: Import[] = [];
  for (const from of files) {
    const text = fs.readFileSync(from, 'utf8');
    const statements: { dir: string; names: string[] }[] = [];
    for (const [, dots, absolute, module, names] of text.matchAll(
      /^\s*from\s+(?:(\.+)|(offerkit)\.?)([\w.]*)\s+import\s+(\([^)]*\)|[^\n]+)/gm,
    )) {
      // `from .x import`: the file's own package; each further dot one package up. `from offerkit.x import`: the root.
      let base = absolute ? path.posix.join(root, 'offerkit') : path.posix.dirname(from);
      for (let up = 1; up < (dots ?? '.').length; up++) base = path.posix.dirname(base);
      const list = names.replace(/[()]/g, '').split(',');
      statements.push({
        dir: path.posix.join(base, ...module.split('.')),
        names: list.map((n) => n.trim().split(/\s+/)[0]),
      });
    }
    for (const [, module] of text.matchAll(/^\s*import\s+offerkit\.?([\w.]*)/gm))
      statements.push({ dir: path.posix.join(root, 'offerkit', ...module.split('.')), names: [] });
    for (const { dir, names } of statements) {
      // A name that is a module of its own reaches that file; any other name, the module it is taken from.
      const modules = names.filter(Boolean).map((n) => fileOf(path.posix.join(dir, n)));
      const targets = modules.every((f) => f !== undefined) && modules.length ? modules : [...modules, fileOf(dir)];
      for (const to of new Set(targets))
        if (to !== undefined && to !== from) imports.push({ from, to, typeOnly: false, dynamic: false });
    }
  }
  return { files, edges: imports.map((i) => [i.from, i.to] as [string, string]), imports };
}

/** The part of a graph inside `roots`: what `importGraph(roots)` gives, without reading the files again. */
export function subgraph(graph: Graph, roots: string[]): Graph {
  const inside = (p: string) => roots.some((r) => p.startsWith(`${r}/`));
  const imports = graph.imports.filter((i) => inside(i.from) && inside(i.to));
  return {
    files: graph.files.filter(inside),
    edges: imports.map((i) => [i.from, i.to] as [string, string]),
    imports,
  };
}

/** The whole house but its tests: the TypeScript roots and the Python SDK, in one graph. */
export async function houseGraph(): Promise<Graph> {
  const ts = await importGraph(HOUSE_ROOTS);
  const py = pythonImportGraph();
  return {
    files: [...ts.files, ...py.files],
    edges: [...ts.edges, ...py.edges],
    imports: [...ts.imports, ...py.imports],
  };
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
  const house = await houseGraph();
  const houseCircles = circles(house.files, house.edges);
  const f = { ...figures(subgraph(house, SOURCE_ROOTS)), circles: houseCircles.map((c) => c.length) };
  const unlisted = newCircles(houseCircles);
  const wrongWay = violations(subgraph(house, ['src', 'workflows', 'activities']));
  if (process.argv.includes('--json'))
    process.stdout.write(`${JSON.stringify({ ...f, unlistedCircles: unlisted, wrongWay }, null, 2)}\n`);
  else {
    const circlesText = f.circles.length ? f.circles.join(', ') : 'none';
    process.stdout.write(
      `files ${f.files}, imports ${f.imports}, rooms ${f.rooms}, arrows between rooms ${f.arrows}, ` +
        `rooms importing each other ${f.bothWays} pairs, circles of files in the house (scripts, benches and the Python SDK too): ` +
        `${circlesText} (${KNOWN_CIRCLES.length} listed in scripts/boundaries.ts, ${unlisted.length} not), ` +
        `imports running the wrong way (scripts/boundaries.ts): ${wrongWay.length}\n` +
        houseCircles.map((c) => `  circle of ${c.length} files: ${c.join(', ')}\n`).join('') +
        wrongWay.map((v) => `  ! ${v}\n`).join('') +
        f.bothWaysPairs.map((p) => `  ${p}\n`).join(''),
    );
  }
}

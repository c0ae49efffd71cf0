// The service's bundle: `src/main.ts`, `src/api.ts` and `src/worker.ts` (and all they import of the project) in
// `dist/service/`, one ES module per entry plus shared chunks, the packages left to node_modules. `npm start`,
// `npm run start:api` and `start:worker` run it, and so do the tests' service processes. A process starts from it
// on about half the CPU it takes under tsx, which resolves and compiles each of some 400 files through its loader
// thread (decision 0577). The workflows are not in it: the worker bundles `workflows/` for Temporal's sandbox
// itself (src/worker-runtime.ts).
//
//   npm run build:service           # build it when the sources changed since the last build
//   tsx scripts/build-service.ts    # the same
import fs from 'node:fs';
import path from 'node:path';
import { hashOfFiles, PROJECT_ROOT as ROOT } from '../src/root.js';

/** Where the bundle is: `node dist/service/main.mjs` is `npm start` without its builds. */
export const SERVICE_DIR = path.join(ROOT, 'dist', 'service');
const ENTRIES = ['main', 'api', 'worker'] as const;
/** The bundle of one entry point. */
export const serviceEntry = (name: (typeof ENTRIES)[number]) => path.join(SERVICE_DIR, `${name}.mjs`);
/**
 * The arguments of `node` that run one entry of the bundle as `npm start` (or `start:api`, `start:worker`) does,
 * source maps on so that stack traces name the sources. Build it first (`buildService`).
 */
export const serviceArgs = (name: (typeof ENTRIES)[number]): string[] => ['--enable-source-maps', serviceEntry(name)];
/** What the bundle is made of, by which its stamp tells whether it is current. */
const INPUTS = ['src', 'activities', 'workflows'];
const STAMP = '.inputs';

/** A hash of every file the bundle may contain, the lockfile (the packages it leaves out) and this script. */
function inputsHash(): string {
  const files = INPUTS.flatMap((dir) =>
    fs.globSync('**/*.ts', { cwd: path.join(ROOT, dir) }).map((f) => path.join(dir, f)),
  ).sort();
  return hashOfFiles([...files, 'package-lock.json', 'tsconfig.json', 'scripts/build-service.ts']);
}

/**
 * Builds the bundle unless it is current. A build goes to a folder of its own and takes the place of the old one
 * at once, so a process starting meanwhile reads either the old bundle or the new one, never half of one; two
 * builds at once (two test processes) both end with a whole bundle. Returns whether it built.
 */
export async function buildService(): Promise<boolean> {
  const hash = inputsHash();
  const stamp = path.join(SERVICE_DIR, STAMP);
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === hash) return false;
  const { build } = await import('esbuild');
  const tmp = `${SERVICE_DIR}.${process.pid}.${Date.now()}`;
  await build({
    entryPoints: Object.fromEntries(ENTRIES.map((e) => [e, path.join(ROOT, 'src', `${e}.ts`)])),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    packages: 'external',
    splitting: true,
    outdir: tmp,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    // Stack traces name the sources when Node runs with --enable-source-maps (the start scripts do).
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
  });
  fs.writeFileSync(path.join(tmp, STAMP), hash);
  const old = `${tmp}.old`;
  try {
    if (fs.existsSync(SERVICE_DIR)) fs.renameSync(SERVICE_DIR, old);
    fs.renameSync(tmp, SERVICE_DIR);
  } catch (err) {
    // Another build took the place first: its bundle is as current as this one.
    if (!fs.existsSync(path.join(SERVICE_DIR, STAMP))) throw err;
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  fs.rmSync(old, { recursive: true, force: true });
  return true;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  const started = Date.now();
  buildService().then(
    (built) => {
      if (built) process.stderr.write(`built the service into dist/service (${Date.now() - started} ms)\n`);
    },
    (err: unknown) => {
      process.stderr.write(`build:service: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}

// Go programs the project builds once per machine into the tools folder (the machine's cache, src/tools.ts), at
// pinned versions, with `go install` from the Go module proxy (as src/temporal/devserver.ts does for the Temporal
// CLI): Helm (the chart's lint and render in `npm test`) and the Temporal server with its SQL schema tool
// (`npm run topology`).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { toolsDir } from '../src/tools.js';

const ROOT = path.resolve(import.meta.dirname, '..');

/** Pinned. Helm 3 (the chart is apiVersion v2, which Helm 4 reads too). */
export const HELM_VERSION = 'v3.22.0';
/**
 * Pinned: the server the Temporal CLI v1.5.1 embeds as its dev server, so `npm run topology` and the dev server
 * differ in topology and persistence only, not in server code (docs/benchmarks.md compares them).
 */
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';

function say(line: string) {
  process.stderr.write(`${line}\n`);
}

/**
 * `go install <pkg>@<version>` into `<dir>/bin` unless `<dir>/bin/<binary>` is there. Each version has a folder of
 * its own, so changing a pin builds the new one. Returns the binary's path.
 */
function goInstall(dir: string, pkg: string, version: string, binary: string): string {
  const bin = path.join(dir, 'bin');
  const out = path.join(bin, binary);
  if (fs.existsSync(out)) return out;
  const found = spawnSync('/bin/sh', ['-c', 'command -v go'], { encoding: 'utf8' });
  if (found.status !== 0)
    throw new Error(`Go is needed once to build ${pkg}@${version} into ${bin} (https://go.dev/dl/, 1.23 or newer)`);
  fs.mkdirSync(bin, { recursive: true });
  const started = Date.now();
  say(`building ${pkg}@${version} once into ${bin} (go install; minutes on a clean machine)`);
  // At the normal priority: `npm test` waits for these before its suite starts, while its static checks run at
  // nice 10 beside them (at nice 10 too, the links of a clean clone took 44 s instead of about 10).
  const r = spawnSync('go', ['install', `${pkg}@${version}`], {
    env: { ...process.env, GOBIN: bin, GOFLAGS: '-mod=mod' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.status !== 0 || !fs.existsSync(out)) throw new Error(`go install ${pkg}@${version} failed (exit ${r.status})`);
  say(`built ${binary} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return out;
}

/** The helm binary: `HELM` when set, else built once into the tools folder's helm-<version>/bin. */
export function ensureHelm(): string {
  if (process.env.HELM) return process.env.HELM;
  return goInstall(path.join(toolsDir(), `helm-${HELM_VERSION}`), 'helm.sh/helm/v3/cmd/helm', HELM_VERSION, 'helm');
}

export interface TemporalServerTools {
  /** The server (`server --config-file … --service frontend start`). */
  server: string;
  /** temporal-sql-tool (`sql --plugin postgres12 … setup-schema / update-schema`). */
  sqlTool: string;
  /** The module's schema folder: postgresql/v12/temporal/versioned and postgresql/v12/visibility/versioned. */
  schemaDir: string;
  version: string;
}

/**
 * The Temporal server and its SQL tool, built once into the tools folder's temporal-server-<version>, with a copy of the
 * module's SQL schema (from the Go module cache, which `go clean -modcache` may empty later).
 */
export function ensureTemporalServer(): TemporalServerTools {
  const dir = path.join(toolsDir(), `temporal-server-${TEMPORAL_SERVER_VERSION}`);
  const server = goInstall(dir, 'go.temporal.io/server/cmd/server', TEMPORAL_SERVER_VERSION, 'server');
  const sqlTool = goInstall(dir, 'go.temporal.io/server/cmd/tools/sql', TEMPORAL_SERVER_VERSION, 'sql');
  const schemaDir = path.join(dir, 'schema');
  if (!fs.existsSync(path.join(schemaDir, 'postgresql', 'v12', 'temporal', 'versioned'))) {
    const modCache = spawnSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).stdout.trim();
    const source = path.join(modCache, `go.temporal.io/server@${TEMPORAL_SERVER_VERSION}`, 'schema');
    if (!fs.existsSync(source)) throw new Error(`the Temporal server's SQL schema is not in ${source}`);
    fs.cpSync(source, schemaDir, { recursive: true });
    // The module cache is read-only; the copy need not be.
    spawnSync('chmod', ['-R', 'u+w', schemaDir]);
  }
  return { server, sqlTool, schemaDir, version: TEMPORAL_SERVER_VERSION };
}

/** Pinned: the newest Temporal UI server that builds with Go 1.26.8 (v2.58 needs 1.26.10); docker-compose.yml's. */
export const TEMPORAL_UI_VERSION = 'v2.42.1';

/**
 * The Temporal UI server (its web assets are embedded in the Go module), built once into the tools folder's temporal-ui-<version>;
 * undefined when it does not build (`npm run topology` then runs without a UI).
 */
export function ensureTemporalUi(): string | undefined {
  try {
    return goInstall(
      path.join(toolsDir(), `temporal-ui-${TEMPORAL_UI_VERSION}`),
      'github.com/temporalio/ui-server/v2/cmd/server',
      TEMPORAL_UI_VERSION,
      'server',
    );
  } catch (err) {
    say(`the Temporal UI server did not build (${(err as Error).message}); going on without it`);
    return undefined;
  }
}

/**
 * `tsx scripts/go-tools.ts temporal-server`: builds the Temporal server and its SQL tool when they are missing.
 * `tsx scripts/go-tools.ts helm-check`: builds helm when it is missing, then `helm lint --strict` and `helm template`
 * the chart; `npm test` runs it as one of its checks, so a first build overlaps the other checks.
 */
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  if (process.argv[2] === 'temporal-server') {
    // `npm test`'s check that builds the Temporal server for test/processes/topology.test.ts beside the other checks.
    const tools = ensureTemporalServer();
    process.stdout.write(`${tools.server}\n`);
    process.exit(0);
  }
  if (process.argv[2] !== 'helm-check') throw new Error('usage: tsx scripts/go-tools.ts helm-check | temporal-server');
  const helm = ensureHelm();
  const chart = path.join(ROOT, 'deploy/helm/offerkit');
  for (const args of [
    ['lint', '--strict', chart],
    ['template', 'offerkit', chart],
  ]) {
    const r = spawnSync(helm, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0) {
      process.stderr.write(`helm ${args.join(' ')} failed (exit ${r.status})\n`);
      process.exit(1);
    }
  }
}

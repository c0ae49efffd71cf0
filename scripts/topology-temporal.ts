// The Temporal side of `npm run topology`: a cluster of its own processes (frontend, two history services, matching,
// worker, and the UI server when it builds) on the run's PostgreSQL, its databases set up by temporal-sql-tool, or the
// Temporal CLI's dev server (`--dev`); the namespace and search attributes registered and checked in use.
import { pingDef } from '../workflows/shared.js';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import pg from 'pg';
import { pino } from 'pino';
import { connectTemporal, ensureSearchAttributes } from '../src/temporal/client.js';
import { ensureTemporalCli, startTemporalDevServer, type DevServerHandle } from '../src/temporal/devserver.js';
import { ensureTemporalServer, ensureTemporalUi } from './go-tools.js';
import { Proc, ROOT } from './procs.js';
import { elapsed, say, sleep } from './topology-settings.js';

const TEMPORAL_DB_USER = 'temporal';
const TEMPORAL_DB_PASSWORD = 'temporal';

/** True when nothing listens on the port (on the loopback address). */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

const taken = new Set<number>();
/**
 * A free port below 32768: Temporal keeps each member's port in its membership table as a PostgreSQL smallint, so
 * the kernel's ephemeral ports (32768 and up) are refused there. Picked at random in 20000-32000, not reused here.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!taken.has(port) && (await portFree(port))) {
      taken.add(port);
      return port;
    }
  }
}

export interface Cluster {
  address: string;
  /** The Temporal processes, by name (none for the dev server). */
  procs: Proc[];
  /** Process ids of everything Temporal runs (for the CPU figures). */
  pids(): number[];
  stop(): Promise<void>;
}

/** Runs temporal-sql-tool against PostgreSQL; throws with its output when it fails. */
function sqlTool(tool: string, pgPort: number, db: string, ...cmd: string[]) {
  const r = spawnSync(
    tool,
    [
      '--plugin',
      'postgres12',
      '--endpoint',
      '127.0.0.1',
      '--port',
      String(pgPort),
      '--user',
      TEMPORAL_DB_USER,
      '--password',
      TEMPORAL_DB_PASSWORD,
      '--database',
      db,
      ...cmd,
    ],
    { encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`temporal-sql-tool ${cmd.join(' ')} on ${db} failed:\n${r.stdout}${r.stderr}`);
}

/**
 * Temporal's databases and schemas on the embedded PostgreSQL, as an operator sets them up for a self-hosted
 * cluster: a role of its own, `create-database`, `setup-schema -v 0.0`, then `update-schema` to the newest version
 * the server module ships.
 */
async function setUpTemporalDatabases(pgUrl: string, pgPort: number, sqlToolPath: string, schemaDir: string) {
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  try {
    const role = await admin.query('select 1 from pg_roles where rolname = $1', [TEMPORAL_DB_USER]);
    if (role.rowCount === 0)
      await admin.query(`create role ${TEMPORAL_DB_USER} login createdb password '${TEMPORAL_DB_PASSWORD}'`);
  } finally {
    await admin.end();
  }
  for (const [db, dir] of [
    ['temporal', 'temporal'],
    ['temporal_visibility', 'visibility'],
  ]) {
    sqlTool(sqlToolPath, pgPort, db, 'create-database');
    sqlTool(sqlToolPath, pgPort, db, 'setup-schema', '--version', '0.0');
    sqlTool(
      sqlToolPath,
      pgPort,
      db,
      'update-schema',
      '--schema-dir',
      path.join(schemaDir, 'postgresql/v12', dir, 'versioned'),
    );
  }
}

/** Waits until the frontend answers, registers the namespace and the search attributes, and checks they are in use. */
async function prepareNamespace(address: string, namespace: string, timeoutMs = 180_000) {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: '2s' });
      try {
        await connection.workflowService.getSystemInfo({});
        try {
          await connection.workflowService.registerNamespace({
            namespace,
            workflowExecutionRetentionPeriod: msToTs('3 days'),
          });
        } catch (err) {
          if ((err as { code?: number }).code !== 6) throw err; // ALREADY_EXISTS
        }
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      last = err;
      if (Date.now() > end)
        throw new Error(`Temporal at ${address} did not get ready: ${String(last)}`, { cause: err });
      await sleep(500);
    }
  }
}

/** The cluster: frontend, history ×2, matching, worker, each a process of its own on the shared PostgreSQL. */
export async function startCluster(dir: string, pgPort: number, pgUrl: string): Promise<Cluster> {
  const t0 = Date.now();
  const tools = ensureTemporalServer();
  say(`temporal server ${tools.version}: ${path.relative(ROOT, tools.server)} (ready in ${elapsed(t0)})`);
  const t1 = Date.now();
  await setUpTemporalDatabases(pgUrl, pgPort, tools.sqlTool, tools.schemaDir);
  say(`temporal-sql-tool: databases temporal and temporal_visibility set up in ${elapsed(t1)}`);
  const frontendPort = await freePort();
  const common: Record<string, string> = {
    TEMPORAL_DB_HOST: '127.0.0.1',
    TEMPORAL_DB_PORT: String(pgPort),
    TEMPORAL_DB_USER,
    TEMPORAL_DB_PASSWORD,
    TEMPORAL_HISTORY_SHARDS: process.env.TOPOLOGY_HISTORY_SHARDS ?? '16',
    TEMPORAL_FRONTEND_ADDRESS: `127.0.0.1:${frontendPort}`,
    TEMPORAL_DYNAMIC_CONFIG: path.join(ROOT, 'deploy/temporal/dynamicconfig/production.yaml'),
    TEMPORAL_LOG_LEVEL: process.env.TOPOLOGY_TEMPORAL_LOG_LEVEL ?? 'warn',
  };
  const service = async (name: string, svc: string, grpc: number) => {
    const upper = svc.toUpperCase();
    const env = {
      ...common,
      [`${upper}_GRPC_PORT`]: String(grpc),
      [`${upper}_MEMBERSHIP_PORT`]: String(await freePort()),
      ...(svc === 'frontend' ? { FRONTEND_HTTP_PORT: String(await freePort()) } : {}),
    };
    const argv = ['--root', ROOT, '--config', 'deploy/temporal/config', '--env', 'production', '--allow-no-auth'];
    return new Proc(name, tools.server, [...argv, 'start', '--service', svc], env, path.join(dir, `${name}.log`), null);
  };
  const procs = [
    await service('history-1', 'history', await freePort()),
    await service('history-2', 'history', await freePort()),
    await service('matching', 'matching', await freePort()),
    await service('frontend', 'frontend', frontendPort),
    await service('temporal-worker', 'worker', await freePort()),
  ];
  const t2 = Date.now();
  // The first process writes the cluster's metadata; several at once on an empty database race to insert it and
  // all but one exit. Start one, wait for the row, then the others.
  await procs[0].start();
  const temporalDb = new pg.Client({
    connectionString: `postgres://${TEMPORAL_DB_USER}:${TEMPORAL_DB_PASSWORD}@127.0.0.1:${pgPort}/temporal`,
  });
  await temporalDb.connect();
  try {
    for (const end = Date.now() + 120_000; ; await sleep(250)) {
      if ((await temporalDb.query('select 1 from cluster_metadata_info limit 1')).rowCount) break;
      if (!procs[0].alive || Date.now() > end)
        throw new Error(`${procs[0].name} did not write the cluster metadata; see its log in ${dir}`);
    }
  } finally {
    await temporalDb.end();
  }
  for (const p of procs.slice(1)) await p.start();
  const address = `127.0.0.1:${frontendPort}`;
  await prepareNamespace(address, 'default');
  say(`temporal cluster: ${procs.map((p) => p.name).join(', ')} on ${address}, namespace default (${elapsed(t2)})`);
  if (process.env.TOPOLOGY_UI !== '0') {
    // The Temporal UI server, when it builds: its config file in the data folder, pointed at the frontend.
    const ui = ensureTemporalUi();
    if (ui) {
      const uiPort = await freePort();
      fs.mkdirSync(path.join(dir, 'ui-config'), { recursive: true });
      fs.writeFileSync(
        path.join(dir, 'ui-config', 'topology.yaml'),
        `temporalGrpcAddress: ${address}\nport: ${uiPort}\nenableUi: true\ndefaultNamespace: default\n` +
          `publicPath:\ncors:\n  cookieInsecure: true\n`,
      );
      const proc = new Proc(
        'temporal-ui',
        ui,
        ['--root', dir, '--config', 'ui-config', '--env', 'topology', 'start'],
        {},
        path.join(dir, 'temporal-ui.log'),
        null,
      );
      await proc.start();
      procs.push(proc);
      say(`temporal ui: http://127.0.0.1:${uiPort} (while the run lasts)`);
    }
  }
  return {
    address,
    procs,
    pids: () =>
      procs
        .filter((p) => p.name !== 'temporal-ui')
        .map((p) => p.child?.pid)
        .filter((x): x is number => !!x),
    stop: async () => void (await Promise.all(procs.map((p) => p.kill('SIGTERM')))),
  };
}

export async function startDevServer(dir: string): Promise<Cluster> {
  const quiet = pino({ level: 'silent' });
  const handle: DevServerHandle = await startTemporalDevServer({
    cli: ensureTemporalCli(process.env.TEMPORAL_CLI, quiet),
    port: await freePort(),
    uiPort: null,
    namespace: 'default',
    // As `npm start` runs it (a SQLite file); TOPOLOGY_DEV_MEMORY=1: in memory, as the test suite runs it.
    dbFile: process.env.TOPOLOGY_DEV_MEMORY === '1' ? undefined : path.join(dir, 'temporal.sqlite'),
    logger: quiet,
  });
  say(
    `temporal dev server (temporal server start-dev, SQLite ${process.env.TOPOLOGY_DEV_MEMORY === '1' ? 'in memory' : 'file'}) ` +
      `on ${handle.address}`,
  );
  return {
    address: handle.address,
    procs: [],
    pids: () => (handle.pid ? [handle.pid] : []),
    stop: () => handle.stop(),
  };
}

/** Search attributes registered once, and in use: a start that sets them is accepted by the frontend. */
export async function registerSearchAttributes(address: string) {
  const handle = await connectTemporal({ address, namespace: 'default', taskQueue: 'topology-probe' });
  try {
    await ensureSearchAttributes(handle, pino({ level: 'warn' }));
    const end = Date.now() + 120_000;
    for (let i = 0; ; i++) {
      try {
        // A start of a known workflow type on a queue no worker polls, terminated at once: only the attributes matter.
        const h = await handle.client.workflow.start(pingDef.name, {
          taskQueue: 'topology-probe',
          workflowId: `topology-probe-${i}`,
          searchAttributes: { AppId: ['probe'] },
        });
        await h.terminate('search attributes are in use');
        return;
      } catch (err) {
        if (Date.now() > end) throw err;
        await sleep(1000);
      }
    }
  } finally {
    await handle.close();
  }
}

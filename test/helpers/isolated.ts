// A whole stack of its own (PostgreSQL, Temporal dev server, worker with the outbox relay, API) for
// tests that stop and restart PostgreSQL or Temporal for real without disturbing the shared servers.
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/db/embedded.js';
import type { Deps } from '../../src/deps.js';
import { openDeps } from '../../src/runtime.js';
import { ensureTemporalCli, startTemporalDevServer, type DevServerHandle } from '../../src/temporal/devserver.js';
import { createWorker, type WorkerHandle } from '../../src/worker-runtime.js';
import { freeze, thaw } from './freeze.js';
import { freePort, tempDir, testEnv } from './servers.js';

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

export interface IsolatedStack {
  config: Config;
  deps: Deps;
  baseUrl: string;
  /** Every log line the stack wrote (JSON, parsed). */
  logs: LogLine[];
  worker: WorkerHandle;
  /** A query on the stack's own database with a fresh connection. */
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  stopPostgres(): Promise<void>;
  startPostgres(): Promise<void>;
  /** Freezes PostgreSQL (SIGSTOP of the server and its backends, test/helpers/freeze.ts); returns what thaws it. */
  freezePostgres(): () => void;
  stopTemporal(): Promise<void>;
  startTemporal(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The servers of an isolated stack: PostgreSQL and a Temporal dev server (on a SQLite file) of their own. A file can
 * share them between its tests: each test's stack (`startIsolatedStack(env, { servers })`) has its own settings, pool,
 * worker and log lines on them, stops and starts them as it needs, and leaves them running when it closes; the file
 * calls `stop()` in its `after`. Their data stays from test to test, so each test works in apps of its own.
 */
export interface IsolatedServers {
  dir: string;
  databaseUrl: string;
  temporalAddress: string;
  taskQueue: string;
  postgresPid(): number | null;
  stopPostgres(): Promise<void>;
  startPostgres(): Promise<void>;
  stopTemporal(): Promise<void>;
  startTemporal(): Promise<void>;
  /** Both running again (a failed test may have left one stopped). */
  ensureUp(): Promise<void>;
  stop(): Promise<void>;
}

export async function startIsolatedServers(): Promise<IsolatedServers> {
  const dir = tempDir('offerkit-isolated-');
  const quiet = pino({ level: 'silent' });
  const pgPort = await freePort();
  const temporalPort = await freePort();
  const startPostgres = () => startEmbeddedPostgres({ dir: path.join(dir, 'pg'), port: pgPort, logger: quiet });
  const startTemporal = () =>
    startTemporalDevServer({
      cli: ensureTemporalCli(process.env.TEMPORAL_CLI, quiet),
      port: temporalPort,
      uiPort: null,
      namespace: 'default',
      dbFile: path.join(dir, 'temporal.sqlite'),
      logger: quiet,
    });
  let postgres: EmbeddedPostgresHandle | null = await startPostgres();
  let temporal: DevServerHandle | null = await startTemporal();
  return {
    dir,
    databaseUrl: postgres.url,
    temporalAddress: temporal.address,
    taskQueue: `offerkit-isolated-${process.pid}-${pgPort}`,
    postgresPid: () => postgres?.pid ?? null,
    async stopPostgres() {
      await postgres?.stop();
      postgres = null;
    },
    async startPostgres() {
      postgres = await startPostgres();
    },
    async stopTemporal() {
      await temporal?.stop();
      temporal = null;
    },
    async startTemporal() {
      temporal = await startTemporal();
    },
    async ensureUp() {
      if (!temporal) temporal = await startTemporal().catch(() => null);
      if (!postgres) postgres = await startPostgres();
    },
    async stop() {
      await temporal?.stop().catch(() => undefined);
      await postgres?.stop().catch(() => undefined);
      temporal = postgres = null;
    },
  };
}

export async function startIsolatedStack(
  env: Record<string, string> = {},
  opts: {
    /** Runs once PostgreSQL and Temporal are up, before the service migrates and starts (an upgrade's old state). */
    beforeStart?: (servers: { databaseUrl: string; temporalAddress: string; taskQueue: string }) => Promise<void>;
    /** Servers shared with the file's other tests (`startIsolatedServers`), left running by `close()`. */
    servers?: IsolatedServers;
  } = {},
): Promise<IsolatedStack> {
  const servers = opts.servers ?? (await startIsolatedServers());
  const { dir, databaseUrl, temporalAddress, taskQueue } = servers;
  const logs: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n'))
        if (line.trim()) {
          try {
            logs.push(JSON.parse(line) as LogLine);
          } catch {
            /* not JSON */
          }
        }
      cb();
    },
  });
  const logger = pino({ level: 'info' }, sink);
  const frozen: number[][] = [];
  await opts.beforeStart?.({ databaseUrl, temporalAddress, taskQueue });
  const shared = testEnv();
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATA_DIR: dir,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_TASK_QUEUE: taskQueue,
    ADMIN_API_KEY: shared.adminKey,
    WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
    PAYPAL_BASE_URL: shared.paypal.baseUrl,
    OUTBOX_POLL_MS: '200',
    WEBHOOK_RETRY_SCHEDULE_MS: '300,300,300,300,300,300',
    ACTIVITY_RETRY_MAX_MS: '200',
    PORT: '0',
    // As on the shared servers: tests send many wrong credentials and registrations from one address.
    AUTH_FAILURE_LIMIT: '0',
    OAUTH_REGISTER_LIMIT: '0',
    SIGN_IN_FAILURE_LIMIT_PER_ADDRESS: '0',
    OAUTH_AUTHORIZE_LIMIT: '0',
    OAUTH_METADATA_FETCH_LIMIT: '0',
    OAUTH_TOKEN_FAILURE_LIMIT: '0',
    NOTIFICATION_FAILURE_LIMIT: '0',
    UPGRADE_SETTLE_INTERVAL_SECONDS: '0',
    ...env,
  });
  const deps = await openDeps(config, logger, shared.adminKey);
  let worker = await createWorker(deps, { workflowBundle: shared.workflowBundle });
  deps.outbox.start();
  const server = http.createServer(createApp(deps).callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as net.AddressInfo;

  return {
    config,
    deps,
    baseUrl: `http://127.0.0.1:${port}`,
    logs,
    get worker() {
      return worker;
    },
    async query<T>(text: string, params: unknown[] = []) {
      const c = new pg.Client({ connectionString: config.databaseUrl });
      await c.connect();
      try {
        return (await c.query(text, params)).rows as T[];
      } finally {
        await c.end();
      }
    },
    stopPostgres: () => servers.stopPostgres(),
    startPostgres: () => servers.startPostgres(),
    freezePostgres() {
      const pid = servers.postgresPid();
      if (!pid) throw new Error('no PostgreSQL process of its own to freeze');
      const pids = freeze(pid);
      frozen.push(pids);
      return () => {
        thaw(pids);
        frozen.splice(frozen.indexOf(pids), 1);
      };
    },
    stopTemporal: () => servers.stopTemporal(),
    startTemporal: () => servers.startTemporal(),
    async close() {
      for (const pids of frozen.splice(0)) thaw(pids); // a failed test must not leave it frozen
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await servers.ensureUp();
      await worker.shutdown().catch(() => undefined);
      // Everything but the Temporal client's connection: the client's own gRPC retry timers for calls made while
      // Temporal was down may still fire, and on a closed channel they throw where nothing can catch it
      // ("Channel has been shut down"). On an open one they fail as UNAVAILABLE, which their callers handle.
      await deps.outbox.stop().catch(() => undefined);
      await deps.credentials.close().catch(() => undefined);
      await deps.orm.close().catch(() => undefined);
      if (!opts.servers) await servers.stop();
      worker = undefined as never;
    },
  };
}

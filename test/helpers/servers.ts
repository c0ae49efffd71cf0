// Starts the real servers once per test run: PostgreSQL (embedded, or DATABASE_URL) in a fresh
// database, a Temporal dev server (or TEMPORAL_ADDRESS), one worker with the bundled workflows, and
// the Koa API on a loopback port. Tests share these servers and isolate themselves by creating
// their own app (tenant).
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { WorkflowBundle } from '@temporalio/worker';
import { createApp } from '../../src/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { startEmbeddedPostgres } from '../../src/db/embedded.js';
import type { Deps } from '../../src/deps.js';
import { createLogger } from '../../src/logger.js';
import { closeDeps, openDeps } from '../../src/runtime.js';
import { ensureTemporalCli, startTemporalDevServer } from '../../src/temporal/devserver.js';
import { bundleWorkflows, createWorker, type WorkerHandle } from '../../src/worker-runtime.js';
import { PayPalStandIn } from '../../src/dev/paypal-standin.js';
import { startMailCatcher, type MailCatcher } from '../../src/dev/mail-catcher.js';

export const PAYPAL_TEST_CREDENTIALS = { 'sandbox-client': 'sandbox-secret' };

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** A temporary folder the `postgres` system user can also enter (PostgreSQL does not run as root). */
export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  return dir;
}

export interface TestEnv {
  config: Config;
  deps: Deps;
  baseUrl: string;
  adminKey: string;
  workflowBundle: WorkflowBundle;
  worker: WorkerHandle;
  /** The local PayPal stand-in every test app's provider connection talks to. */
  paypal: PayPalStandIn;
  /** The mail catcher (MailDev) the service sends its email to over SMTP (SMTP_URL), as `npm start` does. */
  mail: MailCatcher;
  /** Restart the worker (e.g. after simulating a crash). */
  restartWorker(): Promise<void>;
  /** Stop the worker (a crash, as far as Temporal can tell) and start it again later. */
  stopWorker(): Promise<void>;
  startWorker(): Promise<void>;
}

let env: TestEnv | undefined;
const cleanups: (() => Promise<void>)[] = [];

export function testEnv(): TestEnv {
  if (!env) throw new Error('test environment not started (root hooks did not run)');
  return env;
}

export async function startTestEnv(): Promise<TestEnv> {
  const logger = createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
  const workDir = tempDir('offerkit-test-');
  cleanups.push(async () => fs.rmSync(workDir, { recursive: true, force: true }));

  // PostgreSQL: a fresh database per run, on an external server or an embedded one.
  let databaseUrl: string;
  const dbName = `offerkit_test_${process.pid}_${Date.now()}`;
  let baseUrl = process.env.DATABASE_URL;
  if (!baseUrl) {
    const pgHandle = await startEmbeddedPostgres({ dir: path.join(workDir, 'pg'), port: await freePort(), logger });
    cleanups.push(() => pgHandle.stop());
    baseUrl = pgHandle.url;
  }
  {
    const admin = new pg.Client({ connectionString: baseUrl });
    await admin.connect();
    await admin.query(`create database ${dbName}`);
    await admin.end();
    const u = new URL(baseUrl);
    u.pathname = `/${dbName}`;
    databaseUrl = u.toString();
    const dropUrl = baseUrl;
    cleanups.push(async () => {
      const c = new pg.Client({ connectionString: dropUrl });
      await c.connect();
      await c.query(`drop database if exists ${dbName} with (force)`);
      await c.end();
    });
  }

  // Temporal: the CLI dev server in memory, headless, on a free port; or TEMPORAL_ADDRESS.
  let temporalAddress = process.env.TEMPORAL_ADDRESS;
  const taskQueue = `offerkit-test-${process.pid}`;
  if (!temporalAddress) {
    const dev = await startTemporalDevServer({
      cli: ensureTemporalCli(process.env.TEMPORAL_CLI, logger),
      port: await freePort(),
      uiPort: null,
      namespace: 'default',
      logger,
    });
    cleanups.push(() => dev.stop());
    temporalAddress = dev.address;
  }

  // The payment provider: the local PayPal stand-in, reached over HTTP like PayPal.
  const paypal = new PayPalStandIn({ credentials: PAYPAL_TEST_CREDENTIALS, activationDelayMs: 500 });
  await paypal.start();
  cleanups.push(() => paypal.stop());

  // Email: real SMTP to a local catcher, read back through its API (test/helpers/mail.ts).
  const mail = await startMailCatcher({ smtpPort: 0, webPort: 0, directory: path.join(workDir, 'mail'), logger });
  cleanups.push(() => mail.stop());

  const adminKey = `adm_test_${process.pid}`;
  const config = loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATA_DIR: workDir,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_NAMESPACE: process.env.TEMPORAL_NAMESPACE ?? 'default',
    TEMPORAL_TASK_QUEUE: taskQueue,
    ADMIN_API_KEY: adminKey,
    WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
    PAYPAL_BASE_URL: paypal.baseUrl,
    SMTP_URL: mail.smtpUrl,
    OUTBOX_POLL_MS: '200',
    // The shared servers' reconciler runs daily, so it never repairs a row a test left waiting on purpose;
    // test/processes/outages.test.ts runs it on a stack of its own.
    RECONCILE_EVERY_MS: '86400000',
    // Webhook retries every 300 ms instead of 1 min ... 24 h; tests that need longer waits set it on deps.config.
    WEBHOOK_RETRY_SCHEDULE_MS: '300,300,300,300,300,300',
    PORT: '0',
    // Request rates stay at their defaults. The suite sends hundreds of wrong credentials, sign-ins, OAuth
    // registrations, authorizations and grants, and forged notifications from one address on purpose, so those
    // per-address counters are off here; test/api/guards.test.ts, test/api/security.test.ts and
    // test/api/counters.test.ts cover them, at their defaults too.
    AUTH_FAILURE_LIMIT: '0',
    OAUTH_REGISTER_LIMIT: '0',
    SIGN_IN_FAILURE_LIMIT_PER_ADDRESS: '0',
    OAUTH_AUTHORIZE_LIMIT: '0',
    OAUTH_METADATA_FETCH_LIMIT: '0',
    OAUTH_TOKEN_FAILURE_LIMIT: '0',
    NOTIFICATION_FAILURE_LIMIT: '0',
    // A 402 checks the provider each time, so tests that pay and retry need not wait out the interval.
    UPGRADE_SETTLE_INTERVAL_SECONDS: '0',
  });
  const deps = await openDeps(config, logger, adminKey);
  cleanups.push(() => closeDeps(deps));

  const workflowBundle = await bundleWorkflows();
  let worker = await createWorker(deps, { workflowBundle });
  deps.outbox.start();

  const server = http.createServer(createApp(deps).callback());
  // As the service's own server (src/runtime.ts `listen`): with Node's 5 s, a loaded machine let a client reuse a
  // keep-alive socket the server had just closed (fetch failed: ECONNRESET).
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  const { port } = server.address() as net.AddressInfo;

  env = {
    config,
    deps,
    baseUrl: `http://127.0.0.1:${port}`,
    adminKey,
    workflowBundle,
    paypal,
    mail,
    get worker() {
      return worker;
    },
    async restartWorker() {
      await worker.shutdown();
      worker = await createWorker(deps, { workflowBundle });
    },
    async stopWorker() {
      await worker.shutdown();
    },
    async startWorker() {
      worker = await createWorker(deps, { workflowBundle });
    },
  };
  // The worker stops before its dependencies close.
  cleanups.push(() => worker.shutdown());
  return env;
}

export async function stopTestEnv(): Promise<void> {
  while (cleanups.length) {
    const fn = cleanups.pop()!;
    await fn().catch((err) => process.stderr.write(`cleanup failed: ${String(err)}\n`));
  }
  env = undefined;
}

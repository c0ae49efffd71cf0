import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomToken } from './ids.js';
import { createApp } from './app.js';
import type { Config } from './config.js';
import { dbBounds } from './db/bounds.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from './db/embedded.js';
import { DatabaseOutage } from './db/outage.js';
import { setCoalesceInFlight } from './db/coalesce.js';
import { migrate, openOrm } from './db/orm.js';
import type { Deps } from './deps.js';
import { entities } from './entities.js';
import { EventPublisher, publishPending } from './events/publish.js';
import { timelineSubscriber } from './timeline/timeline.service.js';
import { CredentialCache } from './http/credential-cache.js';
import { sql } from './db/sql.js';
import { AccessStream } from './stream/stream.hub.js';
import type { Logger } from './logger.js';
import { connectTemporal, ensureSearchAttributes, temporalAuth } from './temporal/client.js';
import { ensureTemporalCli, startTemporalDevServer, type DevServerHandle } from './temporal/devserver.js';
import { OutboxRelay } from './temporal/relay.js';
import type { WorkerHandle } from './worker-runtime.js';
import { flushCalls } from './mcp/calls.js';
import { webhookFanOut } from './webhooks/fanout.js';
import { systemResolver } from './webhooks/url-policy.js';
import type { MailCatcher } from './dev/mail-catcher.js';
import type { PayPalStandIn } from './dev/paypal-standin.js';
import { cachedAccessTokens } from './oauth/tokens.js';
import { recheckAwaitingProvider } from './payments/recheck.service.js';

/**
 * The admin credential: ADMIN_API_KEY, else (outside production) a key generated once and kept in
 * DATA_DIR/admin-api-key so every later start, and the API and worker scripts, use the same one.
 */
export function resolveAdminKey(config: Config): { key: string; source: 'env' | 'file' | 'generated' } {
  if (config.ADMIN_API_KEY) return { key: config.ADMIN_API_KEY, source: 'env' };
  if (config.NODE_ENV === 'production') throw new Error('ADMIN_API_KEY must be set when NODE_ENV=production');
  const file = path.join(config.dataDir, 'admin-api-key');
  if (fs.existsSync(file)) return { key: fs.readFileSync(file, 'utf8').trim(), source: 'file' };
  fs.mkdirSync(config.dataDir, { recursive: true });
  const key = `adm_${randomToken(40)}`;
  // 'wx' fails if another process wrote it first; then use theirs.
  try {
    fs.writeFileSync(file, key + '\n', { mode: 0o600, flag: 'wx' });
  } catch {
    return { key: fs.readFileSync(file, 'utf8').trim(), source: 'file' };
  }
  return { key, source: 'generated' };
}

export interface Infrastructure {
  postgres: EmbeddedPostgresHandle | null;
  temporal: DevServerHandle | null;
  /** The local PayPal stand-in (development, when PAYPAL_BASE_URL is not set). */
  paypal: PayPalStandIn | null;
  /** The local mail catcher (development, when SMTP_URL is not set and MAIL_CATCHER is not `false`). */
  mail: MailCatcher | null;
  /** Start an embedded piece again after it died (`npm start` supervision); same ports and files. */
  restartPostgres(): Promise<void>;
  restartTemporal(): Promise<void>;
  restartPaypal(): Promise<void>;
  stop(): Promise<void>;
}

/** Credentials the embedded PayPal stand-in accepts (it moves no money). */
export const STANDIN_CREDENTIALS = { client_id: 'local-sandbox', client_secret: 'local-sandbox-secret' };

/** Starts whatever is embedded: PostgreSQL unless DATABASE_URL is set, Temporal unless TEMPORAL_ADDRESS is. */
export async function startInfrastructure(
  config: Config,
  logger: Logger,
  opts: { temporalUi?: boolean; persistTemporal?: boolean } = {},
): Promise<Infrastructure> {
  let postgres: EmbeddedPostgresHandle | null = null;
  let temporal: DevServerHandle | null = null;
  let paypal: PayPalStandIn | null = null;
  let mail: MailCatcher | null = null;
  const stop = async () => {
    await mail?.stop().catch((err) => logger.warn({ err }, 'stopping the mail catcher'));
    await paypal?.stop().catch((err) => logger.warn({ err }, 'stopping the PayPal stand-in'));
    await temporal?.stop().catch((err) => logger.warn({ err }, 'stopping Temporal dev server'));
    await postgres?.stop().catch((err) => logger.warn({ err }, 'stopping PostgreSQL'));
  };
  const startPostgres = () =>
    startEmbeddedPostgres({
      dir: path.join(config.dataDir, 'postgres'),
      port: config.EMBEDDED_POSTGRES_PORT,
      logger,
    });
  const startTemporal = () =>
    startTemporalDevServer({
      cli: ensureTemporalCli(config.TEMPORAL_CLI, logger),
      port: config.TEMPORAL_PORT,
      uiPort: opts.temporalUi === false ? null : config.TEMPORAL_UI_PORT,
      namespace: config.TEMPORAL_NAMESPACE,
      dbFile: opts.persistTemporal === false ? undefined : path.join(config.dataDir, 'temporal', 'temporal.sqlite'),
      logger,
    });
  const startPaypal = async () => {
    // Development only: the stand-in's module is loaded when it is started, never by a production start.
    const { PayPalStandIn } = await import('./dev/paypal-standin.js');
    const standIn = new PayPalStandIn({
      credentials: { [STANDIN_CREDENTIALS.client_id]: STANDIN_CREDENTIALS.client_secret },
      activationDelayMs: 2000,
      statePath: path.join(config.dataDir, 'paypal-standin.json'),
      port: config.PAYPAL_STANDIN_PORT,
      tickMs: config.PAYPAL_STANDIN_TICK_SECONDS * 1000,
    });
    const url = await standIn.start();
    return { standIn, url };
  };
  try {
    const [pg, tmp] = await Promise.all([
      config.embeddedPostgres ? startPostgres() : Promise.resolve(null),
      config.embeddedTemporal ? startTemporal() : Promise.resolve(null),
    ]);
    postgres = pg;
    temporal = tmp;
    if (!config.PAYPAL_BASE_URL && config.NODE_ENV !== 'production') {
      fs.mkdirSync(config.dataDir, { recursive: true });
      const started = await startPaypal();
      paypal = started.standIn;
      config.PAYPAL_BASE_URL = started.url;
    }
    if (!config.SMTP_URL && config.NODE_ENV !== 'production' && !['false', '0'].includes(config.MAIL_CATCHER ?? '')) {
      // Development only, as the stand-in: invitation links arrive by email here, as they would in production.
      const { startMailCatcher } = await import('./dev/mail-catcher.js');
      mail = await startMailCatcher({
        smtpPort: config.MAIL_CATCHER_SMTP_PORT,
        webPort: config.MAIL_CATCHER_PORT,
        directory: path.join(config.dataDir, 'mail'),
        logger,
      });
      config.SMTP_URL = mail.smtpUrl;
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    get postgres() {
      return postgres;
    },
    get temporal() {
      return temporal;
    },
    get paypal() {
      return paypal;
    },
    get mail() {
      return mail;
    },
    async restartPostgres() {
      await postgres?.stop().catch(() => undefined);
      postgres = await startPostgres();
    },
    async restartTemporal() {
      await temporal?.stop().catch(() => undefined);
      temporal = await startTemporal();
    },
    async restartPaypal() {
      await paypal?.stop().catch(() => undefined);
      paypal = (await startPaypal()).standIn;
    },
    stop,
  };
}

/**
 * Connects to Temporal at start-up, trying again for up to a minute: a frontend that has just opened its port (the
 * dev server `npm start` started, a cluster rolling out) can take longer than one attempt's 10 s on a loaded machine,
 * and a process that gives up then has to be started again by hand. Each failed attempt is logged.
 */
export async function connectAtStart<T>(connect: () => Promise<T>, logger: Logger, withinMs = 60_000): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await connect();
    } catch (err) {
      if (Date.now() >= deadline) throw err;
      logger.warn({ err: String(err), attempt }, 'Temporal is not reachable yet; trying again');
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** Database (migrated), Temporal client and outbox: what every piece of the service needs. */
export async function openDeps(config: Config, logger: Logger, adminKey: string): Promise<Deps> {
  const bounds = dbBounds(config);
  const orm = await openOrm(config.databaseUrl, entities, config.DB_POOL_MAX, bounds);
  setCoalesceInFlight(config.DB_COALESCE_IN_FLIGHT);
  try {
    const applied = await migrate(orm, config.databaseUrl, bounds);
    if (applied.length) logger.info({ applied }, 'applied database migrations');
    const temporal = await connectAtStart(
      () =>
        connectTemporal({
          address: config.temporalAddress,
          namespace: config.TEMPORAL_NAMESPACE,
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          auth: temporalAuth(config),
        }),
      logger,
    );
    await ensureSearchAttributes(temporal, logger);
    const outbox = new OutboxRelay(orm, temporal, logger.child({ component: 'outbox' }), config.OUTBOX_POLL_MS);
    // Started by the first request that needs an app, so worker processes never listen.
    const credentials = new CredentialCache({
      databaseUrl: config.databaseUrl,
      ttlMs: config.CREDENTIAL_CACHE_TTL_SECONDS * 1000,
      maxApps: config.CREDENTIAL_CACHE_MAX_APPS,
      confirmMs: config.CREDENTIAL_CACHE_CONFIRM_MS,
      connectMs: bounds.connectMs,
      logger: logger.child({ component: 'credential-cache' }),
    });
    // The event path: a change records its events; publishing hands them to these subscribers in the
    // change's transaction; their outbox rows start the workflows after the commit. The billing events of an
    // account also become lines of its timeline.
    const events = new EventPublisher([webhookFanOut({ config }), timelineSubscriber]);
    const dbOutage = new DatabaseOutage(logger, () => orm.em.fork().getConnection().execute('select 1'));
    const stream = new AccessStream({
      databaseUrl: config.databaseUrl,
      query: (text, params) => sql(orm.em, text, params),
      logger: logger.child({ component: 'stream' }),
      retentionHours: config.STREAM_RETENTION_HOURS,
      maxBufferBytes: config.STREAM_MAX_BUFFER_BYTES,
      heartbeatMs: config.STREAM_HEARTBEAT_SECONDS * 1000,
      usageFlushMs: config.STREAM_USAGE_FLUSH_MS,
      connectMs: bounds.connectMs,
    });
    const deps: Deps = {
      config,
      logger,
      orm,
      dbOutage,
      adminKey,
      temporal,
      outbox,
      events,
      credentials,
      stream,
      resolve: systemResolver,
      // An OAuth access token's check is kept beside its app, as the app's keys are (src/oauth/tokens.ts).
      verifyAccessToken: cachedAccessTokens(credentials),
      // Development only: the demo workspace's receiver may be a loopback URL (src/dev is not loaded otherwise).
      demoReceiver: config.demoWorkspace ? (await import('./dev/demo-receiver.js')).demoReceiver(adminKey) : undefined,
    };
    outbox.addSweep('usage event publishing', () => publishPending(deps));
    // A provider notification refused with a 503 during the outage is not sent again soon (PayPal retries over
    // days): whatever waits on the provider checks again now.
    dbOutage.onRecovered((downForMs) => recheckAwaitingProvider(deps, downForMs));
    return deps;
  } catch (err) {
    await orm.close();
    throw err;
  }
}

export async function closeDeps(deps: Deps): Promise<void> {
  deps.dbOutage.stop();
  await deps.outbox.stop();
  await deps.stream.close();
  await deps.credentials.close();
  await deps.temporal.close().catch(() => undefined);
  await flushCalls(deps.orm);
  await deps.orm.close();
}

export async function listen(deps: Deps): Promise<http.Server> {
  const server = http.createServer(createApp(deps).callback());
  streams.set(server, deps);
  // Usage marks become events even before the first reader of this process (one that resumes later needs them).
  void deps.stream.start().catch((err: unknown) => deps.logger.warn({ err }, 'change stream: not listening yet'));
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: deps.config.PORT, host: deps.config.HOST, reusePort: deps.config.API_REUSE_PORT }, () =>
      resolve(),
    );
  });
  return server;
}

const streams = new WeakMap<http.Server, Deps>();

export function closeServer(server: http.Server): Promise<void> {
  // Open change streams would hold the server open: they end now (their readers resume elsewhere).
  void streams.get(server)?.stream.close();
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    // Connections whose stream just ended are idle only after their response: close those too, a moment later.
    setTimeout(() => server.closeIdleConnections(), 200).unref();
  });
}

/** Runs `shutdown` once on SIGINT/SIGTERM, then exits. A second signal exits at once. */
export function onShutdown(logger: Logger, shutdown: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, 'shutting down');
    shutdown()
      .then(() => process.exit(0))
      .catch((err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}

export type { WorkerHandle };

/**
 * A Temporal worker on `deps` (src/worker-runtime.ts), loaded when one starts: a process that only serves the API
 * (src/api.ts) never loads the worker SDK, its workflow bundler and their dependencies (webpack, memfs, rxjs), which
 * took a good part of its start-up CPU.
 */
export async function createWorker(...args: Parameters<typeof import('./worker-runtime.js').createWorker>) {
  const { createWorker: create } = await import('./worker-runtime.js');
  return create(...args);
}

// `npm run topology` (issue 34): offerkit beyond one machine's dev server, on this machine. Builds once into .tools
// the Temporal server and its SQL tool (scripts/go-tools.ts), then starts:
//   - one PostgreSQL (the embedded binaries) holding offerkit's database and Temporal's two (temporal,
//     temporal_visibility), their schemas set up by temporal-sql-tool from the server module's own schema files;
//   - the Temporal services as separate processes on that PostgreSQL: a frontend, two history services, a
//     matching and a worker service (deploy/temporal/config/base.yaml, the production layout);
//   - two API processes sharing one port (API_REUSE_PORT) and two workers (src/worker.ts), the PayPal stand-in and
//     a webhook receiver;
// then runs a scenario: a burst of account creations (each a webhook delivery, each with an incentive that expires
// on a short timer) and usage adds with idempotency keys, checkouts approved at the stand-in then paused for a
// month that ends when the scenario moves the app's test clock on, while it SIGKILLs one history service, one worker
// and one API process at random points and restarts them. It prints what was acknowledged and applied, delivered
// (with duplicates), fired, stuck, and the time to converge; exit code 1 when a target is missed.
//
//   npm run topology                         # the cluster, with the faults
//   npm run topology -- --no-faults          # the cluster, nothing killed (the throughput figure)
//   npm run topology -- --dev                # the same scenario on the Temporal CLI's dev server (SQLite)
//
// Settings: TOPOLOGY_ACCOUNTS (default 300), TOPOLOGY_USAGE (default 600), TOPOLOGY_CHECKOUTS (default 20),
// TOPOLOGY_CONCURRENCY (requests in flight, default 16), TOPOLOGY_EXPIRY_S (incentives expire this long after the
// burst starts, default 40), TOPOLOGY_SEED (the fault times),
// TOPOLOGY_DEV_MEMORY=1 runs the dev server in memory (as the tests do) instead of on a file (as `npm start` does),
// TOPOLOGY_UI=0 runs without the Temporal UI server (built once too, when it builds), TOPOLOGY_KEEP=1 keeps the
// data folder (.test-data/topology-<pid>) and the processes' logs.
//
// This file starts the servers and runs the parts: scripts/topology-temporal.ts (the cluster or dev server),
// topology-scenario.ts (the client, the app, the faults, the writes), topology-report.ts (convergence, the figures,
// the targets), topology-settings.ts.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../src/db/embedded.js';
import { PayPalStandIn } from '../src/dev/paypal-standin.js';
import { startReceiver } from '../test/helpers/receiver.js';
import { ROOT, serviceProc } from './procs.js';
import { converge, report } from './topology-report.js';
import { apiClient, runScenario, setUpApp, startFaults } from './topology-scenario.js';
import { ADMIN, DEV, FAULTS, PAYPAL, SETTINGS, elapsed, say } from './topology-settings.js';
import { freePort, registerSearchAttributes, startCluster, startDevServer } from './topology-temporal.js';
import { buildService } from './build-service.js';

async function main() {
  await buildService(); // the bundle its API and worker processes run
  const started = Date.now();
  const dir = path.join(ROOT, '.test-data', `topology-${process.pid}`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  fs.chmodSync(path.dirname(dir), 0o755);
  const cleanup: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const f of cleanup.reverse()) await f().catch(() => undefined);
  };
  process.on('SIGINT', () => void stopAll().then(() => process.exit(130)));
  say(
    `offerkit topology: ${DEV ? 'Temporal dev server' : 'Temporal cluster on PostgreSQL'}, ` +
      `${FAULTS ? 'faults on' : 'no faults'}; settings ${JSON.stringify(SETTINGS)}; logs in ${path.relative(ROOT, dir)}`,
  );

  try {
    // ---- the servers ------------------------------------------------------------------------------------
    const pgPort = await freePort();
    const postgres: EmbeddedPostgresHandle = await startEmbeddedPostgres({
      dir: path.join(dir, 'pg'),
      port: pgPort,
      logger: pino({ level: 'warn' }),
    });
    cleanup.push(() => postgres.stop());
    say(`postgresql: embedded, port ${pgPort}`);
    const cluster = DEV ? await startDevServer(dir) : await startCluster(dir, pgPort, postgres.url);
    cleanup.push(() => cluster.stop());
    await registerSearchAttributes(cluster.address);

    const paypal = new PayPalStandIn({
      credentials: { [PAYPAL.client_id]: PAYPAL.client_secret },
      activationDelayMs: 500,
    });
    await paypal.start();
    cleanup.push(() => paypal.stop());
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());

    const apiPort = await freePort();
    const serviceEnv: Record<string, string> = {
      DATABASE_URL: postgres.url,
      TEMPORAL_ADDRESS: cluster.address,
      TEMPORAL_NAMESPACE: 'default',
      ADMIN_API_KEY: ADMIN,
      DATA_DIR: dir,
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: String(apiPort),
      API_REUSE_PORT: 'true',
      WEBHOOKS_ALLOW_PRIVATE_URLS: 'true',
      PAYPAL_BASE_URL: paypal.baseUrl,
      WEBHOOK_RETRY_SCHEDULE_MS: '2000,2000,2000,2000,2000,2000',
      ACTIVITY_RETRY_MAX_MS: '2000',
      OUTBOX_POLL_MS: '500',
      DB_POOL_MAX: '10',
      // A backend's calls: the scenario sends the secret key, which the shipped defaults do not rate limit.
    };
    const apis = [1, 2].map((i) => serviceProc(`api-${i}`, 'api', serviceEnv, dir));
    const workers = [1, 2].map((i) => serviceProc(`worker-${i}`, 'worker', serviceEnv, dir));
    const t3 = Date.now();
    // The first of each starts alone (it applies the migrations), the second beside it.
    await apis[0].start();
    await Promise.all([apis[1].start(), workers[0].start()]);
    await workers[1].start();
    cleanup.push(() => Promise.all([...apis, ...workers].map((p) => p.kill('SIGTERM'))));
    say(`offerkit: 2 API processes on 127.0.0.1:${apiPort} (API_REUSE_PORT), 2 workers (${elapsed(t3)})`);
    say(`ready in ${elapsed(started)}\n`);

    const db = new pg.Pool({ connectionString: postgres.url, max: 4 });
    cleanup.push(() => db.end());

    const client = apiClient(`http://127.0.0.1:${apiPort}`);
    const scenarioApp = await setUpApp(client, receiver.url);
    const run = await runScenario(client, scenarioApp, startFaults(cluster, workers, apis), paypal, db);
    const end = await converge(db, scenarioApp.app.id, receiver);
    const failures = await report(db, scenarioApp.app.id, receiver, run, end, {
      started,
      postgres: postgres.pid,
      cluster,
      apis,
      workers,
    });
    await stopAll();
    if (process.env.TOPOLOGY_KEEP !== '1') fs.rmSync(dir, { recursive: true, force: true });
    process.exit(failures.length ? 1 : 0);
  } catch (err) {
    say(`topology failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    say(`logs kept in ${dir}`);
    await stopAll();
    process.exit(2);
  }
}

await main();
